package explain

import (
	"bytes"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/latency"
	"github.com/linerate/linerate/internal/result"
)

// txnRun is a finished rr run of flows flows at perS transactions per
// second, with its p50 and each end's CPU per transaction. Its Gbit/s
// is made to rank opposite to its transactions, so that a summary
// ranking by Gbit/s picks the wrong best.
func txnRun(flows int, perS, p50, cpu float64) *result.Result {
	r := &result.Result{}
	r.Start.Placement = result.Placement{Client: []int{0}, Server: []int{1}}
	r.End.Seconds = 2
	r.End.SumReceived.BitsPerSecond = 1e9 / perS
	r.End.Transactions = &result.Transactions{Mode: result.RR, Count: uint64(2 * perS), PerSecond: perS, Flows: flows, Threads: 2,
		Size: 1, RTTUs: latency.RTT{P50: &p50, P99: f64(2 * p50)}, CPUUsPerTransaction: result.HostCPUPer{Client: cpu, Server: cpu / 2}}
	return r
}

// TestSummarizeTransactions: a transaction campaign's points are told in
// transactions per second (median, min, max over the runs that completed
// any), latency and CPU per transaction, and its best point is the one of
// most transactions per second, not of most Gbit/s.
func TestSummarizeTransactions(t *testing.T) {
	d := Design{Driver: "native", Peer: "lab:x", Sweep: true, Points: []Point{
		{Streams: 1, Placement: "auto", Command: "linerate bench lab:x --rr --flows 1"},
		{Streams: 10, Placement: "auto", Command: "linerate bench lab:x --rr --flows 10"},
	}}
	empty := txnRun(10, 0, 0, 0)
	empty.End.Transactions.Count = 0
	outs := []Outcome{
		{Point: 0, ID: 1, Run: txnRun(1, 30000, 30, 9)}, {Point: 1, ID: 2, Run: txnRun(10, 90000, 80, 5)},
		{Point: 0, ID: 3, Run: txnRun(1, 32000, 28, 11)}, {Point: 1, ID: 4, Run: txnRun(10, 110000, 70, 7)},
		{Point: 0, ID: 5, Run: txnRun(1, 31000, 29, 10)}, {Point: 1, ID: 6, Run: empty},
	}
	s := Summarize(d, outs, Topology{}, nil)
	if len(s.Points) != 2 {
		t.Fatalf("%d points", len(s.Points))
	}
	a, b := s.Points[0].Transactions, s.Points[1].Transactions
	if a == nil || b == nil {
		t.Fatalf("points without transactions: %+v", s.Points)
	}
	if a.Runs != 3 || a.MedianPerSecond != 31000 || a.MinPerSecond != 30000 || a.MaxPerSecond != 32000 || *a.MedianP50Us != 29 ||
		*a.CPUUsPerTransaction.Client != 10 || *a.CPUUsPerTransaction.Server != 5 || a.Flows != 1 || a.Mode != result.RR {
		t.Errorf("1 flow: %+v", a)
	}
	if b.Runs != 2 || b.MedianPerSecond != 100000 || *b.MedianP50Us != 75 {
		t.Errorf("10 flows (one run completed nothing): %+v", b)
	}
	if s.Best == nil || s.Best.Streams != 10 || s.Best.MedianPerSecond == nil || *s.Best.MedianPerSecond != 100000 ||
		s.Best.Command != "linerate bench lab:x --rr --flows 10" {
		t.Errorf("best: %+v", s.Best)
	}
	var w bytes.Buffer
	if err := WriteSummary(&w, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"median/s", "rr     10", "100000", "Most transactions per second: 10 flows"} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("summary text lacks %q:\n%s", want, w.String())
		}
	}
	// A throughput campaign has none.
	if tp := SummarizeTransactions([]Outcome{{Run: &result.Result{}}}); tp != nil {
		t.Errorf("a stream run's transactions: %+v", tp)
	}
}
