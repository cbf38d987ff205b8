package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/store"
)

// resultDoc is a bench/v1 document whose intervals carry gbps.
func resultDoc(gbps ...float64) json.RawMessage {
	var ivs []string
	for i, g := range gbps {
		ivs = append(ivs, fmt.Sprintf(`{"start":%d,"end":%d,"omitted":false,"sum":{"bits_per_second":%g}}`, i, i+1, g*1e9))
	}
	return json.RawMessage(`{"schema":"linerate.bench/v1","intervals":[` + strings.Join(ivs, ",") + `]}`)
}

// historyDB makes a database: label "base" (runs 1-3 at ~10 Gbit/s),
// label "slow" (runs 4-6 at ~8), and run 7 (label "fast", ~10.5).
func historyDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "results.db")
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	add := func(label string, gbps float64, ivs ...float64) {
		r := &store.Run{StartedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), Label: label, Engine: "iperf3",
			Peer: "lab:demo", Streams: 1, Placement: "0,1", Direction: "send", DurationS: 3, Gbps: gbps, SentGbps: gbps,
			Result: resultDoc(ivs...)}
		if err := db.AddRun(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	add("base", 10.0, 9.9, 10.0, 10.1)
	add("base", 10.2, 10.1, 10.2, 10.3)
	add("base", 9.9, 9.8, 9.9, 10.0)
	add("slow", 8.0, 7.9, 8.0, 8.1)
	add("slow", 8.1, 8.0, 8.1, 8.2)
	add("slow", 7.9, 7.8, 7.9, 8.0)
	add("fast", 10.5, 10.4, 10.5, 10.6)
	return path
}

func TestHistory(t *testing.T) {
	db := historyDB(t)
	out, errOut, code := runCLI(t, "history", "--db", db)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if n := strings.Count(out, "iperf3"); n != 7 || !strings.Contains(out, "RUN") || !strings.Contains(out, "10.50") {
		t.Errorf("history:\n%s", out)
	}
	out, _, code = runCLI(t, "history", "--db", db, "--label", "slow", "--json")
	var doc struct {
		Schema string
		Runs   []struct {
			ID        int64   `json:"id"`
			Gbps      float64 `json:"gbps"`
			Placement string  `json:"placement"`
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 {
		t.Fatalf("history --json: %v %d\n%s", err, code, out)
	}
	if doc.Schema != "linerate.history/v1" || len(doc.Runs) != 3 || doc.Runs[0].ID != 4 || doc.Runs[0].Placement != "0,1" {
		t.Errorf("label slow: %+v", doc)
	}
	out, _, _ = runCLI(t, "history", "--db", db, "--label", "none")
	if !strings.Contains(out, `no runs stored`) {
		t.Errorf("empty label: %q", out)
	}
}

func TestCompare(t *testing.T) {
	db := historyDB(t)
	// Labels: base → slow is 20% slower, but 3 runs against 3 cannot
	// show it: the U test's smallest p-value is 2/C(6,3) = 0.1.
	out, errOut, code := runCLI(t, "compare", "base", "slow", "--db", db)
	if code != 0 || !strings.Contains(out, "change: -20.0%") || !strings.Contains(out, "p = 0.1,") ||
		!strings.Contains(out, "no significant difference") || !strings.Contains(out, "cannot show a difference") {
		t.Errorf("base→slow: exit %d\n%s%s", code, out, errOut)
	}
	// Two single runs: whole runs are the samples, never their intervals.
	out, _, code = runCLI(t, "compare", "1", "7", "--db", db, "--json")
	var doc compareDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 {
		t.Fatalf("1→7: %v exit %d\n%s", err, code, out)
	}
	if doc.Basis != "runs" || len(doc.A.Sample) != 1 || doc.A.Median != 10 || doc.B.Median != 10.5 || doc.Change != 0.05 ||
		doc.PValue != 1 || doc.Significant || doc.Regression || doc.StatsNote == "" {
		t.Errorf("1→7: %+v", doc)
	}
	_, errOut, code = runCLI(t, "compare", "base", "nosuch", "--db", db)
	if code != 2 || !strings.Contains(errOut, `"nosuch" is neither a run ID nor a label`) {
		t.Errorf("unknown ref: exit %d %s", code, errOut)
	}
}

// TestCompareSignificance: with 5 runs a side the U test can show a
// difference. Fully separated samples of 5 and 5 give p = 2/C(10,5) =
// 2/252 = 0.0079; a 5.5% slowdown (median 10.05 to 9.5) beyond a 3% threshold is then a
// regression (exit 1), within a 10% threshold it is not; overlapping
// samples are no significant difference at all.
func TestCompareSignificance(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	add := func(label string, gbps ...float64) {
		for _, g := range gbps {
			r := &store.Run{StartedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), Label: label, Engine: "native",
				Peer: "lab:demo", Streams: 1, Direction: "send", DurationS: 3, Gbps: g, SentGbps: g, Result: resultDoc(g)}
			if err := db.AddRun(context.Background(), r); err != nil {
				t.Fatal(err)
			}
		}
	}
	add("before", 10.0, 10.1, 9.9, 10.2, 10.05)
	add("after", 9.55, 9.6, 9.4, 9.5, 9.45)
	add("mixed", 9.8, 10.3, 9.95, 10.15, 9.7)
	db.Close()
	out, errOut, code := runCLI(t, "compare", "before", "after", "--db", path, "--threshold", "3", "--json")
	var doc compareDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 1 {
		t.Fatalf("before→after: %v exit %d\n%s%s", err, code, out, errOut)
	}
	if doc.PValue != 0.0079 || !doc.Significant || !doc.Regression || doc.Change != -0.0547 {
		t.Errorf("before→after: %+v", doc)
	}
	out, _, code = runCLI(t, "compare", "before", "after", "--db", path, "--threshold", "10")
	if code != 0 || !strings.Contains(out, "within the 10.0% threshold") {
		t.Errorf("before→after, 10%%: exit %d\n%s", code, out)
	}
	out, _, code = runCLI(t, "compare", "before", "mixed", "--db", path)
	if code != 0 || !strings.Contains(out, "no significant difference") || strings.Contains(out, "note:") {
		t.Errorf("before→mixed: exit %d\n%s", code, out)
	}
}

// TestReadersDoNotCreate: history, compare and report on a database that
// does not exist say so and exit 2, and leave no database behind.
func TestReadersDoNotCreate(t *testing.T) {
	db := filepath.Join(t.TempDir(), "nope", "results.db")
	for _, args := range [][]string{
		{"history", "--db", db},
		{"compare", "1", "2", "--db", db},
		{"report", "--db", db, "-o", filepath.Join(t.TempDir(), "r.html")},
	} {
		_, stderr, code := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, "no results database at "+db) {
			t.Errorf("%v: exit %d, %q", args, code, stderr)
		}
		if _, err := os.Stat(filepath.Dir(db)); err == nil {
			t.Fatalf("%v created %s", args, filepath.Dir(db))
		}
	}
}

// walkthroughDB holds the walkthrough's compare cases (fixed data, as the
// lab gave them): label "healthy" (lab:ux1, 1 stream), "capped" (lab:ux2,
// 1 stream, MTU 9000 against 1500), "sweep" (1, 2 and 4 streams in one
// label), and run 17, a --bidir run.
func walkthroughDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "results.db")
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	doctorMTU := func(mtu int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"nics":[{"interface":"veth0","mtu":%d}]}`, mtu))
	}
	add := func(label, peer, dir string, streams, mtu int, gbps ...float64) {
		for _, g := range gbps {
			r := &store.Run{StartedAt: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), Label: label, Engine: "native",
				Peer: peer, Streams: streams, Direction: dir, DurationS: 2, Gbps: g, SentGbps: g,
				Result:       json.RawMessage(`{"schema":"linerate.bench/v1","start":{"client":{"iface":"veth0"},"server":{"iface":"veth0"}}}`),
				ClientDoctor: doctorMTU(mtu), ServerDoctor: doctorMTU(mtu)}
			if err := db.AddRun(context.Background(), r); err != nil {
				t.Fatal(err)
			}
		}
	}
	add("healthy", "lab:ux1", "send", 1, 1500, 11.70, 13.42, 9.66)          // runs 1-3, median 11.70
	add("healthy2", "lab:ux1", "send", 1, 1500, 10.20, 8.93, 13.79)         // runs 4-6, median 10.20: -12.8%
	add("capped", "lab:ux2", "send", 1, 9000, 8.75, 8.71, 8.80, 8.69)       // runs 7-10
	add("sweep", "lab:ux1", "send", 1, 1500, 9.66)                          // run 11
	add("sweep", "lab:ux1", "send", 2, 1500, 13.05)                         // run 12
	add("sweep", "lab:ux1", "send", 4, 1500, 11.70)                         // run 13
	add("bidir", "lab:ux1", "bidir", 1, 1500, 14.62)                        // run 14
	add("before", "lab:ux1", "send", 1, 1500, 10.0, 10.1, 9.9, 10.2, 10.05) // runs 15-19
	add("after", "lab:ux1", "send", 1, 1500, 8.0, 8.1, 7.9, 8.2, 8.05)      // runs 20-24
	return path
}

// TestCompareWalkthrough: the walkthrough's cases on fixed data. A -12.8%
// change of the median whose samples overlap is no significant difference
// (exit 0); a label of 1-, 2- and 4-stream runs is refused with its
// groups (exit 2) unless --streams picks one; send against bidir is
// refused unless --unlike; different peers and MTUs are listed; a
// significant 20% slowdown exits 1.
func TestCompareWalkthrough(t *testing.T) {
	db := walkthroughDB(t)
	out, errOut, code := runCLI(t, "compare", "healthy", "healthy2", "--db", db)
	if code != 0 || !strings.Contains(out, "change: -12.8%") || !strings.Contains(out, "no significant difference") ||
		strings.Contains(out, "differ in") {
		t.Errorf("-12.8%% inside its spread: exit %d\n%s%s", code, out, errOut)
	}
	_, errOut, code = runCLI(t, "compare", "sweep", "healthy", "--db", db)
	if code != 2 || !strings.Contains(errOut, `label "sweep" mixes runs that cannot be pooled`) ||
		!strings.Contains(errOut, "streams 2 (run 12)") || !strings.Contains(errOut, "streams 4 (run 13)") ||
		!strings.Contains(errOut, "keep one stream count with --streams N") ||
		strings.Count(errOut, "\n") != 1 {
		t.Errorf("sweep pooled: exit %d %q", code, errOut)
	}
	out, errOut, code = runCLI(t, "compare", "sweep", "healthy", "--db", db, "--streams", "1")
	if code != 0 || !strings.Contains(out, `label "sweep" (1 run), tcp, native, 1 stream, send`) {
		t.Errorf("sweep --streams 1: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runCLI(t, "compare", "sweep", "healthy", "--db", db, "--unlike")
	if code != 0 || !strings.Contains(out, "warning: label \"sweep\" mixes runs") {
		t.Errorf("sweep --unlike: exit %d\n%s%s", code, out, errOut)
	}
	_, errOut, code = runCLI(t, "compare", "1", "14", "--db", db)
	if code != 2 || !strings.Contains(errOut, "A and B measure different things (direction send vs bidir)") {
		t.Errorf("send vs bidir: exit %d %q", code, errOut)
	}
	out, errOut, code = runCLI(t, "compare", "healthy", "capped", "--db", db, "--json")
	var doc compareDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 {
		t.Fatalf("healthy→capped: %v exit %d\n%s%s", err, code, out, errOut)
	}
	want := []string{"peer lab:ux1 vs lab:ux2", "MTU 1500 vs 9000"}
	if fmt.Sprint(doc.Differences) != fmt.Sprint(want) || doc.Regression || doc.A.RunKind.MTU != "1500" {
		t.Errorf("healthy→capped: differences %q (want %q), %+v", doc.Differences, want, doc)
	}
	out, _, code = runCLI(t, "compare", "before", "after", "--db", db)
	if code != 1 || !strings.Contains(out, "regression: B is 19.9% slower than A") {
		t.Errorf("before→after: exit %d\n%s", code, out)
	}
	out, _, _ = runCLI(t, "compare", "--help")
	for _, w := range []string{"0  no significant regression", "1  regression", "2  error"} {
		if !strings.Contains(out, w) {
			t.Errorf("compare --help lacks %q", w)
		}
	}
}
