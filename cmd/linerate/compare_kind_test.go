package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/store"
	"github.com/linerate/linerate/internal/testutil"
)

// capturedRun reads one of the runs captured over loopback (the
// report's testdata/latency) and lets edit change its document.
func capturedRun(t *testing.T, name string, edit func(doc map[string]any)) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "internal", "report", "testdata", "latency", name))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(doc)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// scaleRTT multiplies the ping-pong's round-trip percentiles from p50 up
// by p50 (the median and below) and tail (p90 and above).
func scaleRTT(p50, tail float64) func(map[string]any) {
	return func(doc map[string]any) {
		rtt := doc["end"].(map[string]any)["latency"].(map[string]any)["rtt_us"].(map[string]any)
		for k, v := range rtt {
			f, ok := v.(float64)
			if !ok {
				continue
			}
			switch k {
			case "p90", "p99", "p99_9", "max":
				rtt[k] = f * tail
			default:
				rtt[k] = f * p50
			}
		}
	}
}

// kindsDB stores, from real captured documents: label "lat-a", five
// ping-pongs at 1000/s; "lat-b", the same five with the tail (p90 and
// above) 1.5 times slower and the goodput a little higher; "lat-mixed",
// one ping-pong at 1000/s and one unpaced; "udp", a UDP stream at 20
// Mbit/s; "tcp", two bulk TCP runs; "place", two TCP runs placed 0,0
// and 0,1.
func kindsDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "results.db")
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	add := func(label string, gbps float64, doc json.RawMessage) {
		r := &store.Run{StartedAt: time.Date(2026, 11, 26, 8, 25, 0, 0, time.UTC), Label: label, Engine: "native",
			Peer: "127.0.0.1", Streams: 1, Placement: "0,1", Direction: "send", DurationS: 2, Gbps: gbps, SentGbps: gbps,
			Result: doc}
		if err := db.AddRun(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	jitter := []float64{1, 1.02, 0.98, 1.01, 0.99}
	for _, j := range jitter {
		add("lat-a", 0.001, capturedRun(t, "native-tcp.json", scaleRTT(j, j)))
	}
	for _, j := range jitter {
		add("lat-b", 0.0011, capturedRun(t, "native-tcp.json", scaleRTT(j, 1.5*j)))
	}
	add("lat-mixed", 0.001, capturedRun(t, "native-tcp.json", nil))
	add("lat-mixed", 0.02, capturedRun(t, "native-tcp.json", func(doc map[string]any) {
		doc["end"].(map[string]any)["latency"].(map[string]any)["target_rate_per_s"] = 0
	}))
	add("udp", 0.02, capturedRun(t, "native-udp-20M.json", nil))
	add("tcp", 9.5, resultDoc(9.5))
	add("tcp", 9.6, resultDoc(9.6))
	r := &store.Run{StartedAt: time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC), Label: "place", Engine: "native",
		Peer: "127.0.0.1", Streams: 1, Placement: "0,0", Direction: "send", DurationS: 2, Gbps: 14, SentGbps: 14, Result: resultDoc(14)}
	if err := db.AddRun(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	add("place", 30, resultDoc(30))
	return path
}

// TestCompareLatency: two latency labels are compared by their
// round-trip p50 and p99, not by Gbit/s: a tail 1.5 times slower is a
// regression (exit 1) although B's goodput is higher, while their p50s
// do not differ.
func TestCompareLatency(t *testing.T) {
	db := kindsDB(t)
	out, errOut, code := runCLI(t, "compare", "lat-a", "lat-b", "--db", db, "--json")
	if code != 1 {
		t.Fatalf("lat-a → lat-b: exit %d, want 1\n%s%s", code, out, errOut)
	}
	testutil.Validate(t, testutil.Schema(t, "../../docs/schema/compare-v1.schema.json"), "compare lat-a lat-b --json", []byte(out))
	var doc compareDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Metrics) != 2 || doc.Metrics[0].Name != "rtt_p50_us" || doc.Metrics[1].Name != "rtt_p99_us" {
		t.Fatalf("metrics: %+v", doc.Metrics)
	}
	p50, p99 := doc.Metrics[0], doc.Metrics[1]
	if p50.Significant || p50.Regression || p50.Change != 0 {
		t.Errorf("p50 unchanged, yet %+v", p50)
	}
	if !p99.Significant || !p99.Regression || p99.Change != 0.5 || p99.PValue != 0.0079 || !p99.LowerIsBetter {
		t.Errorf("p99 1.5× slower, yet %+v", p99)
	}
	if !doc.Regression || doc.A.RunKind.Kind != "latency" || doc.A.RunKind.Rate != "1000/s" || len(doc.A.Sample) != 0 {
		t.Errorf("doc: regression %v, kind %+v, goodput sample %v", doc.Regression, doc.A.RunKind, doc.A.Sample)
	}
	out, _, code = runCLI(t, "compare", "lat-a", "lat-b", "--db", db)
	for _, want := range []string{"latency at 1000/s", "median RTT p50 46.2 µs, RTT p99 1.18 ms over 5 runs",
		"change in RTT p99: +50.0%", "RTT p99: regression: B's RTT p99 is 50.0% higher than A's"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if code != 1 || strings.Contains(out, "Gbit/s") || strings.Contains(out, "NaN") {
		t.Errorf("exit %d, or Gbit/s or NaN in a latency comparison:\n%s", code, out)
	}
	// Bulk TCP labels: one goodput metric, the same schema.
	out, _, _ = runCLI(t, "compare", "tcp", "place", "--db", db, "--json", "--unlike")
	testutil.Validate(t, testutil.Schema(t, "../../docs/schema/compare-v1.schema.json"), "compare tcp place --json", []byte(out))
	// The reverse is an improvement: exit 0.
	if out, _, code := runCLI(t, "compare", "lat-b", "lat-a", "--db", db); code != 0 || !strings.Contains(out, "33.3% lower") {
		t.Errorf("lat-b → lat-a: exit %d\n%s", code, out)
	}
}

// TestCompareNeverPoolsKindsOrRates: a label of runs at different rates
// is refused even with --unlike, and so are A and B of different kinds.
func TestCompareNeverPoolsKindsOrRates(t *testing.T) {
	db := kindsDB(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"lat-mixed", "lat-a"}, "rate 1000/s (run 11); rate unpaced (run 12); runs of different kinds or rates are never pooled"},
		{[]string{"lat-mixed", "lat-a", "--unlike"}, "never pooled, whatever --unlike says"},
		{[]string{"lat-a", "tcp"}, "A is a latency run and B a tcp run"},
		{[]string{"udp", "tcp", "--unlike"}, "A is a udp run and B a tcp run"},
		// placements differ: --streams cannot pick one, and is not offered
		{[]string{"place", "tcp"}, "placement 0,0 (run 16); placement 0,1 (run 17); pick a run ID, or pool them with --unlike"},
	} {
		_, errOut, code := runCLI(t, append([]string{"compare", "--db", db}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("compare %v: exit %d, want 2 and %q:\n%s", c.args, code, c.want, errOut)
		}
	}
}

// TestHistoryKinds: history shows each run by its kind's figures — RTT
// for a ping-pong, loss, jitter and packets for UDP — and never a
// ping-pong's Gbit/s.
func TestHistoryKinds(t *testing.T) {
	db := kindsDB(t)
	out, errOut, code := runCLI(t, "history", "--db", db)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(out, "\n")
	for _, c := range []struct {
		run  int
		want []string
	}{
		{1, []string{"latency at 1000/s", "RTT p50 46.2 µs, p99 1.18 ms, 987/s"}},
		{12, []string{"latency ", "RTT p50"}},
		{13, []string{"udp at 20 Mbit/s", "0.02 Gbit/s, loss", "jitter", "pkt/s"}},
		{14, []string{"tcp ", "9.50 Gbit/s, 0 retr"}},
	} {
		line := lines[c.run] // line 0 is the header
		for _, w := range c.want {
			if !strings.Contains(line, w) {
				t.Errorf("run %d lacks %q: %s", c.run, w, line)
			}
		}
		if c.run <= 12 && strings.Contains(line, "Gbit/s") {
			t.Errorf("run %d is a ping-pong shown in Gbit/s: %s", c.run, line)
		}
	}
	out, _, _ = runCLI(t, "history", "--db", db, "--json")
	testutil.Validate(t, testutil.Schema(t, "../../docs/schema/history-v1.schema.json"), "history --json", []byte(out))
	var doc struct {
		Runs []historyRun `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	r1, r13 := doc.Runs[0], doc.Runs[12]
	if r1.Kind != "latency" || r1.Rate != "1000/s" || r1.RTTP50Us == nil || *r1.RTTP50Us != 46.208 || r1.RTTP99Us == nil {
		t.Errorf("run 1 in JSON: %+v", r1)
	}
	if r13.Kind != "udp" || r13.LossPercent == nil || r13.JitterMS == nil || r13.PacketsPerSecond == nil || r13.RTTP50Us != nil {
		t.Errorf("run 13 in JSON: %+v", r13)
	}
}
