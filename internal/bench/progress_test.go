package bench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/latency"
	"github.com/linerate/linerate/internal/result"
)

func TestPingPongIntervalLine(t *testing.T) {
	iv := result.Interval{Start: 1, End: 2, Sum: result.Sum{Bytes: 40_000 * 2 * 64, BitsPerSecond: 40_000 * 2 * 64 * 8, Retransmits: 3},
		CPU: result.HostCPUs{Client: map[string]result.CPUSample{"0": {Busy: 55, SoftIRQ: 20}}, Server: map[string]result.CPUSample{"1": {Busy: 60, SoftIRQ: 30}}}}
	want := "    1.00-2.00   s      40000 round trips/s  (40000)  client cpu0 55% (si 20%)  server cpu1 60% (si 30%)"
	if got := PingPongIntervalLine(iv, 64); got != want {
		t.Errorf("line\n%q\nwant\n%q", got, want)
	}
	p50, p99 := 25.94, 111.86
	iv.Latency = &result.IntervalLatency{Samples: 40_000, RTTUs: latency.RTT{P50: &p50, P99: &p99}}
	want = "    1.00-2.00   s      40000 round trips/s  (40000)  p50 25.9 µs  p99 111.9 µs  client cpu0 55% (si 20%)  server cpu1 60% (si 30%)"
	if got := PingPongIntervalLine(iv, 64); got != want {
		t.Errorf("line with percentiles\n%q\nwant\n%q", got, want)
	}
	iv.Latency = nil
	var b bytes.Buffer
	p := NewTextReporter(&b, false).ForProbe(&agent.ProbeTest{Kind: agent.ProbePingPong, Size: 64})
	iv.Omitted = true
	p.Interval(0, iv)
	p.RunDone(0, 3, 7, pingRun(21.5, 40, nil, 80000, 0, 0, "tcp", 0.1))
	wantOut := "    1.00-2.00   s      40000 round trips/s  (40000) (warm-up)  client cpu0 55% (si 20%)  server cpu1 60% (si 30%)\n" +
		"run 1/3: round trip p50 21.5 µs, p99 40.0 µs, p99.9 - µs; 80000 round trips (40000/s) (stored as run 7)\n"
	if b.String() != wantOut {
		t.Errorf("progress\n%q\nwant\n%q", b.String(), wantOut)
	}
	if strings.Contains(b.String(), "retr") || strings.Contains(b.String(), "Gbit") {
		t.Errorf("ping-pong progress shows retransmits or Gbit/s: %q", b.String())
	}
}

// TestUDPIntervalLines: a UDP run's interval lines, live and in the text
// output, count datagrams and show no retransmits column.
func TestUDPIntervalLines(t *testing.T) {
	iv := result.Interval{Start: 1, End: 2, Sum: result.Sum{Bytes: 85_000 * 1470, BitsPerSecond: 85_000 * 1470 * 8, Retransmits: 4},
		Streams: []result.StreamInterval{{ID: 1, Packets: 60_000}, {ID: 2, Packets: 25_000}},
		CPU:     result.HostCPUs{Client: map[string]result.CPUSample{"0": {Busy: 40, SoftIRQ: 5}}}}
	want := "    1.00-2.00   s     1.00 Gbit/s  85000 datagrams  client cpu0 40% (si 5%)"
	if got := UDPIntervalLine(iv); got != want {
		t.Errorf("line\n%q\nwant\n%q", got, want)
	}
	var live bytes.Buffer
	rep := NewTextReporter(&live, false).ForProbe(&agent.ProbeTest{Kind: agent.ProbeUDP, Size: 1470})
	rep.Interval(0, iv)
	if live.String() != want+"\n" {
		t.Errorf("progress %q, want %q", live.String(), want+"\n")
	}
	// The run's line says what a UDP run measured: loss and jitter, not
	// retransmits.
	live.Reset()
	rep.RunDone(0, 1, 3, &result.Result{End: result.End{Seconds: 1, SumReceived: result.Received{Bytes: 125_000_000, BitsPerSecond: 1e9},
		UDP: &result.UDPSum{Packets: 85_000, LostPackets: 850, LostPercent: 1, JitterMS: 0.0123}}})
	if got := live.String(); got != "run 1/1: 1.00 Gbit/s received, lost 850/85000 (1%), jitter 0.012 ms (stored as run 3)\n" {
		t.Errorf("run line %q", got)
	}

	var b bytes.Buffer
	p := ProbeTextProgress(&b, false, &agent.ProbeTest{Kind: agent.ProbeUDP, Size: 1470})
	st := result.Start{Peer: "198.18.0.2", Port: 5301, Streams: 2, DurationS: 2, Direction: result.Send, Protocol: result.UDP,
		Placement: result.Placement{Client: []int{0}, Server: []int{1}, Source: "auto"}}
	p(result.Event{Event: "start", Data: &st})
	p(result.Event{Event: "interval", Data: &iv})
	// With the receivers' counts: their largest jitter, and Lost/Total
	// of both streams as iperf3 -u's server writes them.
	rx := iv
	rx.Streams = []result.StreamInterval{{ID: 1, Packets: 60_000, UDPInterval: result.NewUDPInterval(59_990, 10, 0, 0.0123)},
		{ID: 2, Packets: 25_000, UDPInterval: result.NewUDPInterval(24_998, 2, 1, 0.0456)}}
	p(result.Event{Event: "interval", Data: &rx})
	wantRx := "    1.00-2.00   s     1.00 Gbit/s  85000 datagrams  0.046 ms  12/85000 (0.014%)  client cpu0 40% (si 5%)"
	if got := UDPIntervalLine(rx); got != wantRx {
		t.Errorf("line with the receivers' counts\n%q\nwant\n%q", got, wantRx)
	}
	out := b.String()
	for _, want := range []string{
		"[ ID] Interval           Transfer     Bitrate         Datagrams        Jitter    Lost/Total\n",
		"[SUM]   1.00-2.00   sec  ",
		"  85000 datagrams  client pinned cpu0  40% si  5%\n",
		"  85000 datagrams  0.046 ms  12/85000 (0.014%)  client pinned cpu0  40% si  5%\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "retr") || strings.Contains(out, "Retr") {
		t.Errorf("UDP output has a retransmits column:\n%s", out)
	}
	p(result.Event{Event: "end", Data: &result.End{Seconds: 2, UDP: &result.UDPSum{Packets: 85_000, Length: 1470, LostPackets: 12},
		NICCounters: &result.NICCounters{Client: &result.NICDelta{Interface: "lab0", Driver: "veth",
			Deltas: map[string]uint64{"qdisc_drops": 12}, Sources: map[string]map[string]uint64{"qdisc_drops": {"qdisc.drops": 12}}}}}})
	out = b.String()
	if !strings.Contains(out, "NIC counters grew: client lab0: qdisc_drops 12 (qdisc.drops)\n") {
		t.Errorf("a UDP run's end does not say what its NIC dropped:\n%s", out)
	}
	if !strings.Contains(out, "Window: autotuned\n") {
		t.Errorf("a window granted nothing recorded should read \"Window: autotuned\":\n%s", out)
	}
}
