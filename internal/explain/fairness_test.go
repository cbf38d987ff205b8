package explain

import (
	"strconv"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/result"
)

// chelsioT6P8 is the Chelsio T6 host's `iperf -c baltazar -P 8` on a 100 GbE Chelsio
// T6, per stream as iperf2 printed it (Gbit/s over 10.009 s): six
// streams at 14.0-14.1, streams 6 and 7 at 7.00 and 7.09.
var chelsioT6P8 = map[int]float64{1: 14.0, 2: 14.0, 3: 14.1, 4: 14.1, 5: 14.1, 6: 7.00, 7: 7.09, 8: 14.0}

// fairRun builds a 10-second run of streams at the given rates (Gbit/s,
// by stream ID). rx gives each stream's receive CPU per interval (nil:
// unknown); load, when not nil, is the receiver's per-CPU {busy, softirq}
// over ncpu CPUs (the others idle at 1%).
func fairRun(rates map[int]float64, rx map[int]int, load map[int][2]float64, ncpu int) *result.Result {
	r := &result.Result{Schema: result.Schema, Engine: "iperf2"}
	r.Start = result.Start{Streams: len(rates), DurationS: 10, Direction: result.Send}
	var total float64
	for id := 1; id <= len(rates); id++ {
		g := rates[id]
		total += g
		b := uint64(g * 1e9 / 8 * 10)
		r.End.Streams = append(r.End.Streams, result.StreamEnd{ID: id, Sender: "client", SentBytes: b, ReceivedBytes: b})
	}
	r.End.Seconds = 10
	r.End.SumReceived.BitsPerSecond = total * 1e9
	for i := range 10 {
		iv := result.Interval{Start: float64(i), End: float64(i + 1)}
		for id := 1; id <= len(rates); id++ {
			si := result.StreamInterval{ID: id, Bytes: uint64(rates[id] * 1e9 / 8)}
			if c, ok := rx[id]; ok {
				si.RxCPU = &c
			}
			iv.Streams = append(iv.Streams, si)
		}
		if load != nil {
			per := map[string]result.CPUSample{}
			for cpu := range ncpu {
				s := result.CPUSample{Busy: 1}
				if l, ok := load[cpu]; ok {
					s = result.CPUSample{Busy: l[0], SoftIRQ: l[1], NetRX: uint64(l[1] * 1000)}
				}
				per[strconv.Itoa(cpu)] = s
			}
			iv.CPU.Server = per
		}
		r.Intervals = append(r.Intervals, iv)
	}
	return r
}

func TestFairnessChelsioT6RatesOnly(t *testing.T) {
	f := FairnessOf(fairRun(chelsioT6P8, nil, nil, 0))
	if f == nil {
		t.Fatal("no fairness finding for six streams at 14 and two at 7")
	}
	if f.Basis != "rates" || f.Explained {
		t.Errorf("basis %q explained %v, want rates, not explained (nothing confirms the CPUs)", f.Basis, f.Explained)
	}
	want := []string{
		"Streams 6 and 7 got half as much as the other six (7.0 and 7.1 Gbit/s against 14.0-14.1 Gbit/s)",
		"the pattern of 8 flows on 7 receive CPUs of equal capacity (14.1 Gbit/s each), six with a CPU each, streams 6 and 7 sharing one",
		"no per-CPU telemetry of the receiver",
	}
	for _, w := range want {
		if !strings.Contains(f.Explanation, w) {
			t.Errorf("explanation lacks %q:\n%s", w, f.Explanation)
		}
	}
	for _, s := range f.Streams {
		want := 1
		if s.ID == 6 || s.ID == 7 {
			want = 2
		}
		if s.Sharing != want {
			t.Errorf("stream %d: sharing %d, want %d", s.ID, s.Sharing, want)
		}
	}
	if f.Spread < 0.49 || f.Spread > 0.51 {
		t.Errorf("spread %.3f, want about 0.5", f.Spread)
	}
}

func TestFairnessChelsioT6Shares(t *testing.T) {
	// Seven of 16 CPUs served NET_RX at about the same load: confirms it.
	seven := map[int][2]float64{}
	for c := range 7 {
		seven[c] = [2]float64{97, 46 + float64(c%2)}
	}
	f := FairnessOf(fairRun(chelsioT6P8, nil, seven, 16))
	if f.Basis != "softirq_shares" || !f.Explained {
		t.Fatalf("basis %q explained %v, want softirq_shares, explained: %s", f.Basis, f.Explained, f.Explanation)
	}
	if w := "the receiver's softirq ran on exactly 7 CPUs (CPUs 0-6, 46-47% softirq)"; !strings.Contains(f.Explanation, w) {
		t.Errorf("explanation lacks %q:\n%s", w, f.Explanation)
	}
	// Four CPUs: eight flows two to a CPU would all be equal, so the
	// telemetry contradicts the pattern and the explanation says so.
	four := map[int][2]float64{0: {99, 60}, 1: {99, 61}, 2: {99, 59}, 3: {99, 60}}
	f = FairnessOf(fairRun(chelsioT6P8, nil, four, 16))
	if f.Explained || !strings.Contains(f.Explanation, "the receiver's softirq ran on 4 CPUs (CPUs 0-3), not 7") {
		t.Errorf("four softirq CPUs should not confirm seven: explained %v, %s", f.Explained, f.Explanation)
	}
}

func TestFairnessRxCPU(t *testing.T) {
	rates := map[int]float64{1: 4.12, 2: 8.31, 3: 4.05}
	load := map[int][2]float64{0: {99, 52}, 1: {98, 31}}
	f := FairnessOf(fairRun(rates, map[int]int{1: 0, 2: 1, 3: 0}, load, 2))
	if f == nil || f.Basis != "rx_cpu" || !f.Explained {
		t.Fatalf("got %+v, want an explained rx_cpu finding", f)
	}
	want := "Streams 1 and 3 shared CPU 0 (99% busy, 52% softirq) for their receive softirq and got 4.1 and 4.0 Gbit/s, half as much as stream 2, alone on CPU 1 at 8.3 Gbit/s (98% busy, 31% softirq)."
	if f.Explanation != want {
		t.Errorf("explanation\n got %s\nwant %s", f.Explanation, want)
	}
	// Under other load the split is narrower than 1/2, and it says so.
	g := FairnessOf(fairRun(map[int]float64{1: 3.1, 2: 4.2, 3: 3.1}, map[int]int{1: 0, 2: 1, 3: 0}, load, 2))
	if g == nil || !g.Explained || !strings.Contains(g.Explanation, "An even split of equal CPUs would give them half as much, not three quarters") {
		t.Errorf("narrowed split: %+v", g)
	}
	for _, s := range f.Streams {
		if want := map[int]int{1: 2, 2: 1, 3: 2}[s.ID]; s.Sharing != want || s.RxCPU == nil {
			t.Errorf("stream %d: sharing %d rx %v, want %d", s.ID, s.Sharing, s.RxCPU, want)
		}
	}
}

func TestFairnessRxCPUNotExplained(t *testing.T) {
	// Each stream alone on its CPU: the gap is not the CPUs'.
	f := FairnessOf(fairRun(map[int]float64{1: 4.0, 2: 8.0}, map[int]int{1: 0, 2: 1}, nil, 0))
	if f == nil || f.Explained {
		t.Fatalf("got %+v, want an unexplained finding", f)
	}
	if !strings.Contains(f.Explanation, "CPU sharing does not explain the gap") {
		t.Errorf("explanation: %s", f.Explanation)
	}
	// The slow stream on the fast one's CPU: nor is it.
	f = FairnessOf(fairRun(map[int]float64{1: 4.0, 2: 8.0}, map[int]int{1: 1, 2: 1}, nil, 0))
	if f == nil || f.Explained || !strings.Contains(f.Explanation, "shared the fast one's receive CPU") {
		t.Errorf("got %+v", f)
	}
}

func TestFairnessNone(t *testing.T) {
	for name, rates := range map[string]map[int]float64{
		"equal":        {1: 5.0, 2: 5.1, 3: 4.9},
		"within 25%":   {1: 5.0, 2: 6.2},
		"one stream":   {1: 9.0},
		"nothing sent": {1: 0, 2: 0},
	} {
		if f := FairnessOf(fairRun(rates, nil, nil, 0)); f != nil {
			t.Errorf("%s: got a finding: %s", name, f.Explanation)
		}
	}
	if f := FairnessOf(fairRun(map[int]float64{1: 5.0, 2: 6.3}, nil, nil, 0)); f == nil {
		t.Error("26% apart: no finding")
	}
}

func TestFairnessNotFractions(t *testing.T) {
	f := FairnessOf(fairRun(map[int]float64{1: 10, 2: 6.6}, nil, nil, 0))
	if f == nil || !strings.Contains(f.Explanation, "not whole fractions of the fastest") {
		t.Fatalf("got %+v", f)
	}
	for _, s := range f.Streams {
		if s.Sharing != 0 {
			t.Errorf("stream %d: sharing %d, want 0 (unknown)", s.ID, s.Sharing)
		}
	}
}

func TestFairnessInCampaign(t *testing.T) {
	r := fairRun(chelsioT6P8, nil, nil, 0)
	r.Fairness = FairnessOf(r)
	even := fairRun(map[int]float64{1: 5, 2: 5}, nil, nil, 0)
	got := fairnessSentences([]PointSummary{{Streams: 8, Placement: "auto"}}, map[int][]*result.Result{0: {r, even}})
	if len(got) != 1 || !strings.HasPrefix(got[0], "8 streams, placement auto: in 1 of 2 runs the streams differed by more than 25%. Streams 6 and 7 got half") {
		t.Errorf("got %q", got)
	}
}
