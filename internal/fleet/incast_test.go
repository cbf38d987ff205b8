package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

// incastNet is a Runner over an imagined receiver that takes capGbps in
// all and shares it among the senders by their weights (1 unless given);
// each test's run reads the receiver's counters over its own window
// (drops, by sender) and its sender's retransmits.
type incastNet struct {
	capGbps float64
	weight  map[string]float64
	drops   map[string]uint64
	fail    map[string]error
	down    map[string]bool

	mu      sync.Mutex
	specs   []Spec
	conc    int
	maxConc int
}

func (f *incastNet) Run(ctx context.Context, s Spec) (Measurement, error) {
	f.mu.Lock()
	f.specs = append(f.specs, s)
	f.conc++
	f.maxConc = max(f.maxConc, f.conc)
	f.mu.Unlock()
	// The senders' tests overlap in time, as an incast's do.
	time.Sleep(20 * time.Millisecond)
	f.mu.Lock()
	f.conc--
	f.mu.Unlock()
	if f.down[s.To.Name] || f.down[s.From.Name] {
		return Measurement{}, &HostDownError{Host: s.To.Name, Err: errors.New("connection refused")}
	}
	if err := f.fail[s.From.Name]; err != nil {
		return Measurement{}, err
	}
	w := func(name string) float64 {
		if v, ok := f.weight[name]; ok {
			return v
		}
		return 1
	}
	var total float64
	for _, h := range fleetOf(s.AtOnce + 1) {
		if h.Name != s.To.Name && f.fail[h.Name] == nil {
			total += w(h.Name)
		}
	}
	re := uint64(100 * w(s.From.Name))
	return Measurement{Gbps: f.capGbps * w(s.From.Name) / total, RunID: int64(len(s.From.Name)), Retransmits: &re,
		FromIface: "lab0", ToIface: "lab0",
		ToNIC: &NICReading{Interface: "lab0", Deltas: map[string]uint64{"qdisc_drops": f.drops[s.From.Name], "rx_no_buffer": 0}}}, nil
}

func incastOpts(receiver string) Options {
	o := opts()
	o.Pattern = Pattern{Kind: PatternIncast, Center: receiver}
	o.Duration = 2 * time.Second
	return o
}

func TestJainIndex(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
		ok   bool
	}{
		{[]float64{3, 3, 3, 3}, 1, true},
		{[]float64{4, 0, 0, 0}, 0.25, true},
		{[]float64{1, 3}, 16.0 / 20, true},
		{[]float64{5}, 0, false},
		{[]float64{0, 0}, 0, false},
	} {
		got, ok := JainIndex(c.xs)
		if ok != c.ok || math.Abs(got-c.want) > 1e-12 {
			t.Errorf("JainIndex(%v) = %g, %v; want %g, %v", c.xs, got, ok, c.want, c.ok)
		}
	}
}

// TestIncast: every sender tests the receiver at once, in one leg; the
// figures are each sender's goodput and share, their sum, Jain's index,
// the senders' retransmits added and the receiver's drops read over
// overlapping windows (not added); the sender with half the others'
// weight is named short, with how much less it got.
func TestIncast(t *testing.T) {
	f := &incastNet{capGbps: 9.4, weight: map[string]float64{"h04": 0.5},
		drops: map[string]uint64{"h01": 30, "h02": 41, "h03": 38, "h04": 12}}
	res, err := Run(context.Background(), fleetOf(5), incastOpts("h05"), f)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.specs) != 4 || f.maxConc != 4 {
		t.Fatalf("%d tests, %d at once; want 4 at once", len(f.specs), f.maxConc)
	}
	for _, s := range f.specs {
		if s.To.Name != "h05" || !s.Incast || s.AtOnce != 4 {
			t.Errorf("spec %s→%s incast=%v at once %d", s.From.Name, s.To.Name, s.Incast, s.AtOnce)
		}
	}
	in := res.Incast
	if in == nil || in.Receiver != "h05" || len(in.Senders) != 4 {
		t.Fatalf("incast figures: %+v", in)
	}
	var sum, sumSq float64
	for _, s := range in.Senders {
		if s.Gbps == nil {
			t.Fatalf("sender %s has no result: %s", s.Name, s.Error)
		}
		sum += *s.Gbps
		sumSq += *s.Gbps * *s.Gbps
	}
	if math.Abs(*in.SumGbps-sum) > 0.002 || *in.SumGbps > f.capGbps+0.002 {
		t.Errorf("sum %g: the senders' figures add to %g, the receiver took at most %g", *in.SumGbps, sum, f.capGbps)
	}
	if want := sum * sum / (4 * sumSq); math.Abs(*in.JainIndex-want) > 0.001 || *in.JainIndex >= 1 {
		t.Errorf("Jain's index %g, want %g (below 1: h04 got half)", *in.JainIndex, want)
	}
	for _, s := range in.Senders {
		if s.Short != (s.Name == "h04") {
			t.Errorf("sender %s short=%v at %g%% of the fair share", s.Name, s.Short, *s.FairPct)
		}
	}
	if got := *in.Senders[3].FairPct; math.Abs(got-100*0.5/(3.5/4)) > 0.1 {
		t.Errorf("h04 at %g%% of its fair share", got)
	}
	if *in.Retransmits != 350 {
		t.Errorf("retransmits %d, want the senders' 100+100+100+50", *in.Retransmits)
	}
	if d := in.ReceiverDrops; d.Deltas["qdisc_drops"] != 41 || d.Readings != 4 || d.Interface != "lab0" {
		t.Errorf("receiver drops %+v: want the largest reading (41), not the sum", d)
	}
	if len(res.Outliers) != 0 || res.MedianGbps != nil || res.Legs != 1 || res.Tests != 4 || !res.Parallel {
		t.Errorf("outliers %v median %v legs %d tests %d parallel %v", res.Outliers, res.MedianGbps, res.Legs, res.Tests, res.Parallel)
	}
	for _, want := range []string{"Incast of 4 senders to h05", "h04 got 1.34 Gbit/s, 43% less than its fair share of 2.35", "qdisc_drops 41", "retransmitted 350"} {
		if !strings.Contains(res.Verdict, want) {
			t.Errorf("verdict %q lacks %q", res.Verdict, want)
		}
	}
	var b strings.Builder
	if err := res.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"incast to h05: 4 senders at once", "h04           1.34         57%           50  short", "57%", "short", "sum", "Jain's fairness index", "receiver h05: its counters on lab0 grew: qdisc_drops 41"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	// Each sender is a pair with the receiver, the other way untested.
	for _, p := range res.Pairs {
		if p.B != "h05" || p.AToBGbps == nil || p.BToA.Status != StatusUntested || p.Status != StatusOK {
			t.Errorf("pair %+v", p)
		}
	}
}

// TestIncastFailures: a sender whose test fails is named with its error
// and left out of the fair share; a receiver down fails every test, and
// the run with it.
func TestIncastFailures(t *testing.T) {
	f := &incastNet{capGbps: 9, fail: map[string]error{"h02": errors.New("the agent is busy running another test")}}
	res, err := Run(context.Background(), fleetOf(4), incastOpts("h04"), f)
	if err != nil {
		t.Fatal(err)
	}
	in := res.Incast
	if in.Senders[1].Gbps != nil || !strings.Contains(in.Senders[1].Error, "busy") {
		t.Errorf("h02: %+v", in.Senders[1])
	}
	if *in.FairShareGbps != 4.5 || *in.JainIndex != 1 {
		t.Errorf("fair share %g, Jain %g: want 9 over the 2 senders that worked", *in.FairShareGbps, *in.JainIndex)
	}
	if !strings.Contains(res.Verdict, "1 of 3 senders' tests failed") {
		t.Errorf("verdict %q", res.Verdict)
	}
	o := incastOpts("h04")
	o.Down = map[string]error{"h04": errors.New("its agent did not start")}
	res, err = Run(context.Background(), fleetOf(4), o, &incastNet{capGbps: 9})
	if err == nil || !strings.Contains(err.Error(), "its agent did not start") || res == nil || res.Incast.SumGbps != nil || res.Tests != 0 {
		t.Errorf("receiver down: %v, %+v", err, res)
	}
}

func TestIncastOptions(t *testing.T) {
	for _, c := range []struct {
		n    int
		o    func() Options
		want string
	}{
		{5, func() Options { return incastOpts("h09") }, "no host is called h09"},
		{2, func() Options { return incastOpts("h02") }, "at least 2 senders"},
		{66, func() Options { return incastOpts("h01") }, "65 senders; an agent takes at most 64"},
		{5, func() Options { o := incastOpts("h01"); o.Design = DesignSampled; return o }, "drop --pattern incast:h01"},
	} {
		_, err := Run(context.Background(), fleetOf(c.n), c.o(), &incastNet{capGbps: 1})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d hosts: %v, want %q", c.n, err, c.want)
		}
	}
}

// TestIncastPlan: the plan of an incast is one leg of every sender's test
// to the receiver.
func TestIncastPlan(t *testing.T) {
	p, err := NewPlan(fleetOf(5), incastOpts("h03"), StartCost{PerHostS: 0.5, AtOnce: 8, How: "lab"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Tests != 4 || p.Legs != 1 || p.Rounds != 1 || !p.Parallel || p.Pattern != "incast:h03" || p.ReserveTests != 0 {
		t.Errorf("plan %+v", p)
	}
	if want := math.Round(0.5 + 2 + testOverheadS); p.EstimateS != want {
		t.Errorf("estimate %g s, want %g", p.EstimateS, want)
	}
	var b strings.Builder
	p.WriteText(&b)
	for _, want := range []string{"4 tests in 1 round, 1 leg, every sender at once", "one leg: every sender at once", "h01→h03 h02→h03 h04→h03 h05→h03"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("plan text lacks %q:\n%s", want, b.String())
		}
	}
}

// TestIncastSchema: an incast's document validates against the schema
// and reads back unchanged; one that contradicts itself is refused.
func TestIncastSchema(t *testing.T) {
	sch := fleetSchema(t)
	res, err := Run(context.Background(), fleetOf(4), incastOpts("h01"), &incastNet{capGbps: 9, weight: map[string]float64{"h03": 0.2},
		fail: map[string]error{"h04": errors.New("refused")}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	checkDocument(t, sch, b)
	for name, edit := range map[string]func(string) string{
		"receiver": func(s string) string { return strings.Replace(s, `"receiver":"h01"`, `"receiver":"h09"`, 1) },
		"sender": func(s string) string {
			return strings.Replace(s, `"senders":[{"name":"h02"`, `"senders":[{"name":"h01"`, 1)
		},
		"jain": func(s string) string { return strings.Replace(s, `"jain_index":`, `"jain_index":1`, 1) },
		"sum":  func(s string) string { return strings.Replace(s, `"sum_gbps":`, `"sum_gbps":-`, 1) },
	} {
		bad := edit(string(b))
		if bad == string(b) {
			t.Fatalf("%s: the edit changed nothing", name)
		}
		if _, err := ReadResult(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
