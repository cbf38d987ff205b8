package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/latency"
	"github.com/linerate/linerate/internal/telemetry"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/result"
)

func sampleResult() *result.Result {
	return &result.Result{
		Schema: result.Schema, Engine: "native", RunID: 1,
		Start: result.Start{Peer: "198.18.0.2", Port: 5301, Streams: 1, DurationS: 10, IntervalS: 1, Direction: result.Send,
			Placement: result.Placement{Client: []int{6}, Server: []int{6}, Source: "user"},
			Window:    result.Window{Granted: 425984}, Connections: []result.Connection{{ID: 1, Sender: "client", ClientCPU: 6, ServerCPU: 6}}},
		Intervals: []result.Interval{{Start: 0, End: 1, Streams: []result.StreamInterval{{ID: 1, Sender: "client", Bytes: 1245540515, BitsPerSecond: 9.93e9, RTTus: 41, CwndBytes: 3145728}},
			Sum: result.Sum{Bytes: 1245540515, BitsPerSecond: 9.93e9},
			CPU: result.HostCPUs{Client: map[string]result.CPUSample{"6": {Busy: 99, SoftIRQ: 31}, "7": {Busy: 40, SoftIRQ: 38, NICIRQs: 4360}},
				Server: map[string]result.CPUSample{"6": {Busy: 97, SoftIRQ: 60}}}}},
		End: result.End{Seconds: 10, SumSent: result.Sum{Bytes: 12455405150, BitsPerSecond: 9.93e9}, SumReceived: result.Received{Bytes: 12455405150, BitsPerSecond: 9.93e9},
			CPU: result.EndCPU{ClientSeconds: 9.9, ServerSeconds: 9.7}},
	}
}

func TestTextProgress(t *testing.T) {
	var b bytes.Buffer
	r := sampleResult()
	p := TextProgress(&b, true)
	p(result.Event{Event: "start", Data: &r.Start})
	p(result.Event{Event: "interval", Data: &r.Intervals[0]})
	p(result.Event{Event: "end", Data: &r.End})
	out := b.String()
	for _, want := range []string{
		"Connected to 198.18.0.2 port 5301: 1 stream, send, 10 s",
		"Placement (user): client CPU 6, server CPU 6",
		"Window: autotuned, granted 416 KBytes",
		"[SUM]   0.00-1.00   sec  1.16 GBytes  9.93 Gbits/sec     0 retr  client pinned cpu6  99% si 31% (other cpu7 40%)  server pinned cpu6  97% si 60%",
		"[  1]   0.00-1.00   sec  1.16 GBytes  9.93 Gbits/sec     0   cwnd 3.00 MBytes  rtt 41 us",
		"client cpu7   busy  40.0%  irq  0.0%  softirq  38.0%  NET_RX       0  NET_TX       0  NIC IRQs    4360",
		"[SUM]   0.00-10.00  sec  11.6 GBytes  9.93 Gbits/sec     0 retr  sender",
		"CPU time: client 9.90 s, server 9.70 s (0.100 and 0.098 CPU s per Gbit)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestJSONStreamRoundTrip: what --json-stream writes, and the end the lab
// client writes after it (JSONStreamProgress leaves the end to its
// caller), readEvents (the lab runner) turns back into the same result.
func TestJSONStreamRoundTrip(t *testing.T) {
	r := sampleResult()
	r.Start.Timestamp = time.UnixMilli(1).UTC()
	r.RunID = 1
	var b bytes.Buffer
	p := JSONStreamProgress(&b)
	p(result.Event{Event: "start", Data: &r.Start})
	p(result.Event{Event: "interval", Data: &r.Intervals[0]})
	p(result.Event{Event: "end", Data: &r.End})
	if strings.Contains(b.String(), `"event":"end"`) {
		t.Fatalf("JSONStreamProgress wrote the engine's end: %s", b.String())
	}
	writeLabEnd(json.NewEncoder(&b), r, nil)
	var seen []string
	got, err := readEvents(&b, func(e result.Event) { seen = append(seen, e.Event) })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, r)
	}
	if strings.Join(seen, ",") != "start,interval,end" {
		t.Errorf("progress saw %v", seen)
	}
	if _, err := readEvents(strings.NewReader(`{"event":"error","data":"boom"}`+"\n"), nil); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("error event: %v", err)
	}
}

// TestLabClientTest: the test a lab run hands its client in host a (the
// Params document on the client's stdin) reads back to the same test,
// every field of it: what used to be written as flags (-t, -i, -O, -P,
// --bidir, --window, --congestion, --fq-rate, --zerocopy, -A) and a probe.
// A document that is not one is refused in one line.
func TestLabClientTest(t *testing.T) {
	for _, test := range []agent.Test{
		{Params: engine.Params{Streams: 4, Duration: 30 * time.Second, Omit: 2 * time.Second, Interval: time.Second, Direction: result.Bidir,
			Window: 4 << 20, Congestion: "bbr", FQRate: 10e9, ZeroCopy: result.Sendfile}, Pinning: agent.Pinning{Client: []int{0, 2}, Server: []int{1}}},
		{Params: engine.Params{Streams: 1, Duration: 1500 * time.Millisecond, Omit: 400 * time.Millisecond, Interval: 250 * time.Millisecond, Direction: result.Send},
			Pinning: agent.Pinning{Client: []int{3}}, Probe: &agent.ProbeTest{Kind: agent.ProbePingPong, UDP: true, Size: 64, Rate: 1e4}},
	} {
		doc, err := json.Marshal(Params{Test: test})
		if err != nil {
			t.Fatal(err)
		}
		var back Params
		if err := json.Unmarshal(doc, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back.Test, test) {
			t.Errorf("the lab client reads\n%+v\nfrom %s\nwant %+v", back.Test, doc, test)
		}
	}
	err := RunLabClient(context.Background(), "198.18.0.2:5301", strings.NewReader("-P 4"), io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "reading the lab client's test on stdin") {
		t.Errorf("a test that is not a document: %v", err)
	}
}

func TestProbeTextProgressPingPong(t *testing.T) {
	var b bytes.Buffer
	p := ProbeTextProgress(&b, false, &agent.ProbeTest{Kind: agent.ProbePingPong, Size: 32})
	st := result.Start{Peer: "198.18.0.2", Port: 5301, Streams: 1, DurationS: 2, Direction: result.Send,
		Placement: result.Placement{Client: []int{0}, Server: []int{1}, Source: "auto"}}
	p(result.Event{Event: "start", Data: &st})
	p(result.Event{Event: "interval", Data: &result.Interval{Start: 0, End: 0.5, Sum: result.Sum{Bytes: 12345 * 64, Retransmits: 9},
		CPU: result.HostCPUs{Client: map[string]result.CPUSample{"0": {Busy: 97, SoftIRQ: 12}}}}})
	// An interval with its percentiles, and one of too few round trips
	// for a p99.
	p50, p99 := 21.46, 133.04
	p(result.Event{Event: "interval", Data: &result.Interval{Start: 0.5, End: 1, Sum: result.Sum{Bytes: 12000 * 64},
		Latency: &result.IntervalLatency{Samples: 12000, RTTUs: latency.RTT{P50: &p50, P99: &p99}}}})
	p(result.Event{Event: "interval", Data: &result.Interval{Start: 1, End: 1.5, Sum: result.Sum{Bytes: 50 * 64},
		Latency: &result.IntervalLatency{Samples: 50, RTTUs: latency.RTT{P50: &p50}}}})
	out := b.String()
	for _, want := range []string{
		"[ ID] Interval           Round trips   per second   p50 µs   p99 µs\n",
		"[SUM]   0.00-0.50   sec        12345      24690/s        -        -  client pinned cpu0  97% si 12%\n",
		"[SUM]   0.50-1.00   sec        12000      24000/s     21.5    133.0\n",
		"[SUM]   1.00-1.50   sec           50        100/s     21.5        -\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Window:") {
		t.Errorf("ping-pong output shows socket buffers:\n%s", out)
	}
	if strings.Contains(out, "retr") || strings.Contains(out, "Retr") {
		t.Errorf("ping-pong output has a retransmits column:\n%s", out)
	}
}

// TestTextOtherLoad: one run's text output names the busy process and
// says which telemetry is unknown.
func TestTextOtherLoad(t *testing.T) {
	r := busyRun(9, 96)
	r.End.Unread.Server = map[string]string{telemetry.SrcSoftirqs: "open /proc/softirqs: permission denied"}
	var b strings.Builder
	p := TextProgress(&b, false)
	p(result.Event{Event: "start", Data: &r.Start})
	p(result.Event{Event: "end", Data: &r.End})
	for _, want := range []string{
		"Other load: CPU 0 was 96% busy with pid 4123 (stress-ng, 95% of a CPU, pinned to it) and pid 5 (go, 96% of a CPU), not this test; the test kept its threads off it.\n",
		"Note: server telemetry: /proc/softirqs could not be read (open /proc/softirqs: permission denied): what it measures is unknown for this run, not zero\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "sshd") {
		t.Errorf("a process at 2%% of a CPU named:\n%s", b.String())
	}
}

// pingRun is a ping-pong run of one stream from CPU 0 to CPU 1 with the
// given percentiles (µs), counts, protocol and goodput.
func pingRun(p50, p99 float64, p999 *float64, samples, dropped, ooo int64, proto string, gbps float64) *result.Result {
	r := &result.Result{}
	r.Start.Placement = result.Placement{Client: []int{0}, Server: []int{1}}
	r.End.Seconds = 2
	r.End.SumReceived.BitsPerSecond = gbps * 1e9
	r.End.Latency = &result.Latency{Summary: latency.Summary{Samples: samples, Dropped: dropped, OutOfOrder: ooo,
		RTTUs: latency.RTT{P50: &p50, P99: &p99, P999: p999}}, Protocol: proto, Size: 64, RatePerSecond: float64(samples) / 2}
	return r
}

// busyRun is a run whose CPU 0 other work kept pct busy (a pinned
// stress-ng among others) while the test ran on CPU 1 of one machine.
func busyRun(gbps, pct float64) *result.Result {
	r := &result.Result{Schema: result.Schema, Engine: "iperf3"}
	r.Start = result.Start{Streams: 1, DurationS: 10, Direction: result.Send,
		Placement: result.Placement{Client: []int{1}, Server: []int{1}, Source: "auto"},
		Client:    result.HostInfo{BootID: "one"}, Server: result.HostInfo{BootID: "one"}}
	r.End = result.End{Seconds: 10, SumReceived: result.Received{BitsPerSecond: gbps * 1e9}}
	r.End.Foreign = result.HostForeign{
		Client: &result.Foreign{PID: 10, Seconds: 10, Own: map[string]float64{"1": 60}, CPU: map[string]float64{"0": pct, "1": 3},
			Top: []result.Proc{{PID: 5, Name: "go", CPUPct: pct, CPU: 0}, {PID: 4123, Name: "stress-ng", CPUPct: pct - 1, CPU: 0, Pinned: true},
				{PID: 6, Name: "gopls", CPUPct: 3, CPU: 0}, {PID: 77, Name: "sshd", CPUPct: 2, CPU: 1}}},
		Server: &result.Foreign{PID: 11, Seconds: 10, CPU: map[string]float64{"0": pct}},
	}
	return r
}

// TestEndNICLine: the end of a run's text has explain's NIC line for a run
// whose sender's qdisc dropped packets; none when nothing grew.
func TestEndNICLine(t *testing.T) {
	n := &result.NICCounters{
		Client: &result.NICDelta{Interface: "lab0", Deltas: map[string]uint64{"qdisc_drops": 1234, "rx_dropped": 0, "tx_dropped": 2},
			Sources: map[string]map[string]uint64{"qdisc_drops": {"qdisc.drops": 1234}, "tx_dropped": {"link.tx_dropped": 2}}},
		Server: &result.NICDelta{Interface: "lab0", Deltas: map[string]uint64{"rx_dropped": 0}},
	}
	want := "NIC counters grew: client lab0: tx_dropped 2 (link.tx_dropped), qdisc_drops 1234 (qdisc.drops)"
	var b bytes.Buffer
	writeEnd(&b, &result.Start{}, &result.End{NICCounters: n})
	if !strings.Contains(b.String(), want+"\n") {
		t.Errorf("the end's text lacks the line:\n%s", b.String())
	}
	b.Reset()
	writeEnd(&b, &result.Start{}, &result.End{NICCounters: &result.NICCounters{Server: n.Server}})
	if strings.Contains(b.String(), "NIC") {
		t.Errorf("a line though nothing grew:\n%s", b.String())
	}
}

func TestUnits(t *testing.T) {
	tests := map[string]string{
		bytesText(0):                   "0.00 Bytes ",
		bytesText(1245540515):          "1.16 GBytes",
		bytesText(128 << 10):           " 128 KBytes",
		bitsText(9.93e9):               "9.93 Gbits/sec",
		bitsText(25.8e9):               "25.8 Gbits/sec",
		bitsText(440e6):                " 440 Mbits/sec",
		strings.TrimSpace(bitsText(0)): "0.00 bits/sec",
	}
	for got, want := range tests {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

// TestUDPEndArrivalClock: a UDP run whose receiver took arrivals from
// the kernel's receive timestamps says what its jitter is and why
// iperf3's reads higher; one whose clock is unknown (an older agent) or
// the reader's says nothing of the kind.
func TestUDPEndArrivalClock(t *testing.T) {
	note := "kernel receive timestamp"
	for _, c := range []struct {
		clock string
		want  bool
	}{{result.ArrivalKernel, true}, {result.ArrivalRead, false}, {"", false}} {
		e := &result.End{Seconds: 1, UDP: &result.UDPSum{Packets: 10, ReceivedPackets: 10, JitterMS: 0.001, Length: 1200, Method: "sendmmsg", ArrivalClock: c.clock}}
		var b strings.Builder
		writeProbeEnd(&b, &result.Start{Protocol: result.UDP}, e)
		if got := strings.Contains(b.String(), note); got != c.want {
			t.Errorf("arrival clock %q: the note is there: %v, want %v:\n%s", c.clock, got, c.want, b.String())
		}
	}
}

// TestLoadOnlyIntervals: an interval of a tool that reports only at its
// end (netperf's: both hosts' load, no figure of its own) prints as
// unknown with its CPUs, never as 0 round trips/s or 0 Gbit/s; a native
// interval that moved nothing still prints its zero.
func TestLoadOnlyIntervals(t *testing.T) {
	load := result.Interval{Start: 0, End: 1, LoadOnly: true, Streams: []result.StreamInterval{},
		CPU: result.HostCPUs{Client: map[string]result.CPUSample{"0": {Busy: 40}}}}
	idle := result.Interval{Start: 1, End: 2, Streams: []result.StreamInterval{}} // a ping-pong's interval without a round trip
	for _, mode := range []string{"ping-pong", "stream"} {
		var b strings.Builder
		r := NewTextReporter(&b, false)
		if mode == "ping-pong" {
			r = r.ForProbe(&agent.ProbeTest{Kind: agent.ProbePingPong, Size: 64})
		}
		r.Interval(0, load)
		r.Interval(1, idle)
		lines := strings.Split(strings.TrimSpace(b.String()), "\n")
		if len(lines) != 2 || !strings.Contains(lines[0], "figures unknown") || !strings.Contains(lines[0], "client cpu0") ||
			strings.Contains(lines[0], "round trips/s") || strings.Contains(lines[0], "bits/sec") || strings.Contains(lines[1], "figures unknown") {
			t.Errorf("%s:\n%s", mode, b.String())
		}
	}
}

// TestSampledIntervals: a tool that reports only at its end (netperf)
// gets one interval per telemetry sample, each marked load-only and
// carrying its sample's load.
func TestSampledIntervals(t *testing.T) {
	r := &result.Result{}
	samples := []telemetry.Sample{{PerCPU: map[string]result.CPUSample{"0": {Busy: 30}}}, {PerCPU: map[string]result.CPUSample{"0": {Busy: 60}}}}
	sampledIntervals(r, Params{Test: agent.Test{Params: engine.Params{Interval: time.Second}}}, samples, loHosts{})
	if len(r.Intervals) != 2 {
		t.Fatalf("%d intervals, want 2", len(r.Intervals))
	}
	for i, iv := range r.Intervals {
		if !iv.LoadOnly || iv.End-iv.Start != 1 || iv.CPU.Client["0"].Busy != samples[i].PerCPU["0"].Busy {
			t.Errorf("interval %d: %+v", i, iv)
		}
	}
}
