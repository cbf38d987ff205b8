package metrics

import (
	"context"
	"database/sql"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/store"
)

// Doctor reports as bench stores them: the client's names the interface
// it was taken for (--iface), the server's has one NIC.
const (
	clientDoc = `{"schema":"linerate.doctor/v1","options":{"ifaces":["lab0"]},"nics":[
		{"interface":"eth9","limits":{"tcp_goodput_gbps":50}},
		{"interface":"lab0","limits":{"tcp_goodput_gbps":9.91}}]}`
	serverDoc = `{"schema":"linerate.doctor/v1","options":{"ifaces":[]},"nics":[
		{"interface":"lab0","limits":{"tcp_goodput_gbps":9.5}}]}`
	latencyResult = `{"schema":"linerate.bench/v1","end":{"latency":{"samples":1000,
		"rtt_us":{"min":20,"p25":25,"p50":30,"p90":40,"p99":50,"p99_9":null,"p99_99":null,"max":80,"mean":31,"stdev":5}}}}`
)

// writeRuns stores runs in a new database at path.
func writeRuns(t *testing.T, path string, runs ...*store.Run) {
	t.Helper()
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, r := range runs {
		if err := st.AddRun(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
}

func run(peer, engine string, streams int, gbps float64, result string) *store.Run {
	return &store.Run{StartedAt: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC), Engine: engine, Peer: peer,
		Streams: streams, Direction: "send", DurationS: 10, Gbps: gbps, SentGbps: gbps, Retransmits: 12,
		Result: json.RawMessage(result)}
}

// TestBenchFromStore: the last run per peer, engine, stream count and
// direction, with goodput in bytes per second, retransmits, the ceiling
// from both ends' stored doctor reports (the lower), and latency
// quantiles in seconds when the run has them; runs of other shapes give
// what they have.
func TestBenchFromStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	old := run("198.18.0.2", "native", 1, 9.0, `{}`)
	newer := run("198.18.0.2", "native", 1, 9.5, `{"schema":"linerate.bench/v1"}`)
	newer.StartedAt = old.StartedAt.Add(time.Minute)
	withDocs := run("198.18.0.2", "iperf3", 4, 8.0, `{"end":{"sum_sent":{}}}`)
	withDocs.ClientDoctor, withDocs.ServerDoctor = json.RawMessage(clientDoc), json.RawMessage(serverDoc)
	lat := run("198.18.0.3", "native", 1, 0.01, latencyResult)
	odd := run("198.18.0.4", "iperf2", 2, 3.0, `{"end":"not an object","start":[1,2]}`)
	writeRuns(t, path, old, newer, withDocs, lat, odd)

	runs, err := ReadBench(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 4 {
		t.Fatalf("%d results, want 4 (the older native run replaced): %+v", len(runs), runs)
	}
	s := NewSnapshot(time.Now())
	s.Bench = runs
	e := expose(t, NewRegistry(NewCollector(func() *Snapshot { return s }, "test")))
	e.lint(t, "bench")
	e.promtoolCheckMetrics(t, "bench")

	native := map[string]string{"peer": "198.18.0.2", "engine": "native", "streams": "1", "direction": "send"}
	if got := e.value(t, "linerate_bench_goodput_bytes_per_second", native); got != 9.5e9/8 {
		t.Errorf("native goodput %g B/s, want the newer run's %g", got, 9.5e9/8)
	}
	if got := e.value(t, "linerate_bench_retransmits", native); got != 12 {
		t.Errorf("retransmits %g, want 12", got)
	}
	if len(e.samples("linerate_bench_ceiling_bytes_per_second", native)) != 0 {
		t.Error("a run without doctor reports has a ceiling")
	}
	ip := map[string]string{"peer": "198.18.0.2", "engine": "iperf3", "streams": "4"}
	if got := e.value(t, "linerate_bench_ceiling_bytes_per_second", ip); got != 9.5e9/8 {
		t.Errorf("iperf3 ceiling %g B/s, want the server's lower %g", got, 9.5e9/8)
	}
	if got := e.value(t, "linerate_bench_goodput_bytes_per_second", map[string]string{"engine": "iperf2"}); got != 3e9/8 {
		t.Errorf("iperf2 run of an odd shape: goodput %g, want %g", got, 3e9/8)
	}

	// The latency run: a summary in seconds, no goodput held against a ceiling.
	latLabels := map[string]string{"peer": "198.18.0.3"}
	if len(e.samples("linerate_bench_goodput_bytes_per_second", latLabels)) != 0 {
		t.Error("a latency run exports goodput")
	}
	sm := e.samples("linerate_bench_rtt_seconds", latLabels)
	if len(sm) != 1 || sm[0].Summary == nil {
		t.Fatalf("latency run: %d rtt summaries", len(sm))
	}
	sum := sm[0].Summary
	if sum.GetSampleCount() != 1000 || math.Abs(sum.GetSampleSum()-0.031) > 1e-12 {
		t.Errorf("rtt count %d sum %g, want 1000 and 0.031 s", sum.GetSampleCount(), sum.GetSampleSum())
	}
	want := map[float64]float64{0: 20e-6, 0.25: 25e-6, 0.5: 30e-6, 0.9: 40e-6, 0.99: 50e-6, 1: 80e-6}
	if len(sum.Quantile) != len(want) {
		t.Errorf("%d quantiles, want %d (nulls left out)", len(sum.Quantile), len(want))
	}
	for _, q := range sum.Quantile {
		if w, ok := want[q.GetQuantile()]; !ok || math.Abs(q.GetValue()-w) > 1e-15 {
			t.Errorf("quantile %g = %g, want %g", q.GetQuantile(), q.GetValue(), w)
		}
	}
}

// TestBenchBounded: however many peers the database holds, one scrape
// exports the most recent maxBenchSeries.
func TestBenchBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	var runs []*store.Run
	for i := range maxBenchSeries + 10 {
		runs = append(runs, run("198.18.0.2", "native", i+1, float64(i+1), `{}`))
	}
	writeRuns(t, path, runs...)
	got, err := ReadBench(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != maxBenchSeries || got[0].Streams != 11 || got[len(got)-1].Streams != maxBenchSeries+10 {
		t.Errorf("%d results from streams %d to %d, want %d from 11 to %d", len(got), got[0].Streams, got[len(got)-1].Streams, maxBenchSeries, maxBenchSeries+10)
	}
}

// TestBenchNoDatabase: no database is no runs, not an error, and
// creates nothing.
func TestBenchNoDatabase(t *testing.T) {
	dir := t.TempDir()
	runs, err := ReadBench(context.Background(), filepath.Join(dir, "results.db"))
	if err != nil || runs != nil {
		t.Errorf("ReadBench of a missing database: %v, %v", runs, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("reading a missing database created %d files", len(ents))
	}
}

// lockDatabase holds an exclusive lock on the database at path (as a
// writer in the middle of a transaction with exclusive locking would)
// until the test ends.
func lockDatabase(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=locking_mode(EXCLUSIVE)")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO c2c_results (measured_at, host, result) VALUES ('t', 'h', '{}')"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.ExecContext(ctx, "ROLLBACK")
		conn.Close()
		db.Close()
	})
}

// FuzzRunDocs: stored documents of any shape give a result or nothing,
// never a panic.
func FuzzRunDocs(f *testing.F) {
	for _, s := range []string{latencyResult, clientDoc, serverDoc, `{}`, `{"end":{"latency":{"rtt_us":{"p50":"x"}}}}`, `null`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if r := runRTT(b); r != nil && len(r.Quantiles) == 0 {
			t.Error("an RTT without quantiles")
		}
		if c := docCeiling(b); c != nil && !(*c > 0) {
			t.Errorf("ceiling %v", *c)
		}
	})
}
