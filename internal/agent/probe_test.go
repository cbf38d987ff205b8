package agent

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/result"
)

// checkLatencyShape fails unless the latency's percentiles are known and
// ordered, the mean lies within [min, max] and nothing was lost.
func checkLatencyShape(t *testing.T, l *result.Latency) {
	t.Helper()
	r := l.RTTUs
	vals := []*float64{r.Min, r.P25, r.P50, r.P90, r.P99, r.Max}
	for i, v := range vals {
		if v == nil {
			t.Fatalf("percentile %d of %+v is null", i, r)
		}
		if i > 0 && *v < *vals[i-1] {
			t.Errorf("percentiles not ordered: field %d %g < %g", i, *v, *vals[i-1])
		}
	}
	if r.Mean == nil || *r.Mean < *r.Min || *r.Mean > *r.Max {
		t.Errorf("mean %v outside [%g, %g]", r.Mean, *r.Min, *r.Max)
	}
}

// TestProbePingPong runs bench --latency's test against an agent on
// loopback, over TCP and UDP: the round trips of the window only, in
// order, at most rate × duration, none dropped; an interval per period
// with both ends' CPUs; the placement of both threads recorded.
func TestProbePingPong(t *testing.T) {
	for _, udp := range []bool{false, true} {
		t.Run(map[bool]string{false: "tcp", true: "udp"}[udp], func(t *testing.T) {
			const rate = 1000
			res := run(t, Config{Test: Test{Params: engine.Params{Omit: 200 * time.Millisecond, Duration: time.Second, Interval: 250 * time.Millisecond}, Probe: &ProbeTest{Kind: ProbePingPong, UDP: udp, Size: 64, Rate: rate}}})
			l := res.End.Latency
			if l == nil {
				t.Fatalf("no end.latency: %+v", res.End)
			}
			// p99 is null below 100 samples (a busy host may not keep the
			// rate), so the log line takes the percentiles as they are.
			t.Logf("%d samples, p50 %s µs, p99 %s µs, rate %.0f/s, errors %q, placement %+v", l.Samples, orNull(l.RTTUs.P50), orNull(l.RTTUs.P99), l.RatePerSecond, res.End.Errors, res.Start.Placement)
			checkLatencyShape(t, l)
			// Over UDP a reply later than the 100 ms timeout (a busy
			// host) counts as out of order, not as a sample: every request
			// is one of the three, give or take the last at the edge.
			if d := l.Sent - l.Samples - l.Dropped - l.OutOfOrder; l.Samples == 0 || l.Samples > rate+1 || d < 0 || d > 1 || !udp && (l.Dropped != 0 || l.OutOfOrder != 0) {
				t.Errorf("%d samples of %d sent at %d/s for 1 s, %d dropped, %d out of order", l.Samples, l.Sent, rate, l.Dropped, l.OutOfOrder)
			}
			if want := map[bool]string{false: "tcp", true: "udp"}[udp]; l.Protocol != want || l.Size != 64 {
				t.Errorf("protocol %q size %d", l.Protocol, l.Size)
			}
			// A busy host may not keep the rate (said in errors); nothing
			// else may go wrong.
			for _, e := range res.End.Errors {
				if !strings.Contains(e, "round trips/s of the") && !strings.Contains(e, "garbage collections") {
					t.Errorf("error %q", e)
				}
			}
			if l.Stalled {
				t.Error("stalled")
			}
			checkProbeStart(t, res)
			checkIntervalLatency(t, res, 64)
		})
	}
}

// checkIntervalLatency: every interval of a ping-pong carries its round
// trips' distribution, cut at the same instant as its count (its bytes
// are two messages per sample), and the measured intervals add up to the
// run's samples.
func checkIntervalLatency(t *testing.T, res *result.Result, size int) {
	t.Helper()
	var measured int64
	for i, iv := range res.Intervals {
		if iv.Latency == nil {
			t.Fatalf("interval %d has no latency", i)
		}
		if n := iv.Latency.Samples; iv.Sum.Bytes != uint64(n*2*int64(size)) || n > 0 && iv.Latency.RTTUs.P50 == nil {
			t.Errorf("interval %d: %d bytes, %d samples, p50 %v", i, iv.Sum.Bytes, n, iv.Latency.RTTUs.P50)
		}
		if !iv.Omitted {
			measured += iv.Latency.Samples
		}
	}
	if measured != res.End.Latency.Samples {
		t.Errorf("measured intervals hold %d round trips, end.latency %d", measured, res.End.Latency.Samples)
	}
}

// checkProbeStart: one connection, both ends' CPUs recorded, intervals
// covering warm-up and window with both hosts' load.
func checkProbeStart(t *testing.T, res *result.Result) {
	t.Helper()
	if len(res.Start.Connections) != 1 || res.Start.Placement.Source == "" {
		t.Errorf("connections %+v, placement %+v", res.Start.Connections, res.Start.Placement)
	}
	if len(res.Intervals) < 4 {
		t.Fatalf("%d intervals, want at least 4 (1.2 s at 250 ms)", len(res.Intervals))
	}
	withServer := 0
	for _, iv := range res.Intervals {
		if iv.CPUTotal.Server != nil {
			withServer++
		}
		if iv.End <= iv.Start || len(iv.CPU.Client) == 0 {
			t.Errorf("interval %+v", iv)
		}
	}
	if withServer == 0 {
		t.Error("no interval has the agent's CPUs")
	}
	if !res.Intervals[0].Omitted || res.Intervals[len(res.Intervals)-1].Omitted {
		t.Errorf("the first interval is warm-up, the last measured: %v, %v", res.Intervals[0].Omitted, res.Intervals[len(res.Intervals)-1].Omitted)
	}
}

// TestProbeUDP runs bench --udp's test at 20 Mbit/s over loopback:
// every datagram sent in the window arrived, nothing lost or out of
// order, the sent rate is the window's bytes over its length.
func TestProbeUDP(t *testing.T) {
	var events []result.Event
	res := run(t, Config{Progress: func(e result.Event) { events = append(events, e) },
		Test: Test{Params: engine.Params{Omit: 200 * time.Millisecond, Duration: time.Second, Interval: 250 * time.Millisecond}, Probe: &ProbeTest{Kind: ProbeUDP, Size: 1200, Rate: 20e6}}})
	checkUDPIntervals(t, res)
	// Every interval is emitted once, in order, the last (held for the
	// receiver's totals) before the end.
	var ivs []*result.Interval
	for i, e := range events {
		if iv, ok := e.Data.(*result.Interval); ok {
			ivs = append(ivs, iv)
		}
		if e.Event == "end" && i != len(events)-1 {
			t.Errorf("the end is event %d of %d", i, len(events))
		}
	}
	if len(ivs) != len(res.Intervals) || len(ivs) == 0 || ivs[len(ivs)-1].Streams[0].UDPInterval == nil ||
		*ivs[len(ivs)-1].Streams[0].UDPInterval != *res.Intervals[len(res.Intervals)-1].Streams[0].UDPInterval {
		t.Errorf("%d interval events for %d intervals; the last event's and the run's last: want the same, with the receiver's totals", len(ivs), len(res.Intervals))
	}
	for _, iv := range res.Intervals {
		if u := iv.Streams[0].UDPInterval; !iv.Omitted && u.ReceivedPackets == 0 {
			t.Errorf("interval %g–%g: the receiver got nothing at 20 Mbit/s", iv.Start, iv.End)
		}
	}
	u := res.End.UDP
	if u == nil {
		t.Fatalf("no end.sum: %+v", res.End)
	}
	t.Logf("%+v, errors %q", *u, res.End.Errors)
	rate := 20e6
	want := uint64(rate / 8 / 1200) // in the 1 s window
	if u.Packets == 0 || u.Packets > want+1 || u.ReceivedPackets != u.Packets || u.LostPackets != 0 || u.LostPercent != 0 || u.OutOfOrder != 0 {
		t.Errorf("sent %d (at most %d), received %d, lost %d (%g%%), out of order %d", u.Packets, want+1, u.ReceivedPackets, u.LostPackets, u.LostPercent, u.OutOfOrder)
	}
	if got := float64(u.Bytes) * 8 / res.End.Seconds; math.Abs(got-u.BitsPerSecond) > 1 || u.Bytes != u.Packets*1200 {
		t.Errorf("bits_per_second %g, bytes %d over %g s", u.BitsPerSecond, u.Bytes, res.End.Seconds)
	}
	if sum := res.End.Sum; sum == nil || sum.Packets != int64(u.Packets) || sum.LostPackets != 0 || sum.BitsPerSecond != u.BitsPerSecond || res.Start.Protocol != result.UDP {
		t.Errorf("end.sum %+v, protocol %q: want iperf3 -u's shape of the same counts", sum, res.Start.Protocol)
	}
	if u.JitterMS < 0 || u.PacketsPerSecond <= 0 || u.Method == "" {
		t.Errorf("jitter %g, pps %g, method %q", u.JitterMS, u.PacketsPerSecond, u.Method)
	}
	// Loopback gives kernel receive timestamps: the jitter says so.
	if u.ArrivalClock != result.ArrivalKernel {
		t.Errorf("arrival clock %q, want %q", u.ArrivalClock, result.ArrivalKernel)
	}
	checkProbeStart(t, res)
}

// checkUDPIntervals fails unless every interval of a UDP run carries its
// receiver's count and the measured ones add up to the end's received,
// lost and out-of-order datagrams, the last one's jitter the end's.
func checkUDPIntervals(t *testing.T, res *result.Result) {
	t.Helper()
	var recv, ooo uint64
	var lost int64
	var last *result.UDPInterval
	for _, iv := range res.Intervals {
		if len(iv.Streams) != 1 || iv.Streams[0].UDPInterval == nil {
			t.Fatalf("interval %g–%g (omitted %v): no receiver's count in %+v", iv.Start, iv.End, iv.Omitted, iv.Streams)
		}
		u := iv.Streams[0].UDPInterval
		t.Logf("interval %5.2f–%5.2f omitted %-5v: sent %d, %+v", iv.Start, iv.End, iv.Omitted, iv.Streams[0].Packets, *u)
		if !iv.Omitted {
			recv, lost, ooo, last = recv+u.ReceivedPackets, lost+u.LostPackets, ooo+u.OutOfOrder, u
		}
	}
	e := res.End.UDP
	if last == nil || recv != e.ReceivedPackets || lost != e.LostPackets || ooo != e.OutOfOrder || last.JitterMS != e.JitterMS {
		t.Errorf("the measured intervals add up to %d received, %d lost, %d out of order; the end says %d, %d, %d (jitter %g, the last interval's %v)",
			recv, lost, ooo, e.ReceivedPackets, e.LostPackets, e.OutOfOrder, e.JitterMS, last)
	}
}

// TestProbePeerDies: an agent killed mid-run ends the run with what was
// measured, said in end.errors; over TCP (the connection closes) and
// UDP (the replies stop: the stall limit ends it).
func TestProbePeerDies(t *testing.T) {
	for _, udp := range []bool{false, true} {
		t.Run(map[bool]string{false: "tcp", true: "udp"}[udp], func(t *testing.T) {
			srv := exec.Command(os.Args[0], "127.0.0.1:0")
			srv.Env = append(os.Environ(), TokenEnv+"="+string(testToken), helperEnv+"=serve")
			out, err := srv.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			defer srv.Wait()
			defer srv.Process.Kill()
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil || !strings.HasPrefix(line, ListeningPrefix) {
				t.Fatalf("agent: %q %v", line, err)
			}
			addr := strings.TrimSpace(strings.TrimPrefix(line, ListeningPrefix))
			time.AfterFunc(800*time.Millisecond, func() { srv.Process.Kill() })
			start := time.Now()
			res, err := Run(context.Background(), Config{Peer: addr, Token: testToken, Test: Test{Params: engine.Params{Duration: 20 * time.Second, Interval: 200 * time.Millisecond}, Probe: &ProbeTest{Kind: ProbePingPong, UDP: udp, Size: 32, Rate: 1000}}})
			took := time.Since(start)
			if err != nil {
				t.Fatalf("after %s: %v (want the result so far)", took, err)
			}
			l := res.End.Latency
			t.Logf("after %s: %d samples over %g s, errors %q", took, l.Samples, res.End.Seconds, res.End.Errors)
			if took > 10*time.Second {
				t.Errorf("took %s to notice the agent died after 0.8 s", took)
			}
			if l.Samples == 0 || res.End.Seconds <= 0 || res.End.Seconds >= 20 || len(res.End.Errors) == 0 {
				t.Errorf("%d samples over %g s, errors %q: want what came before, and why it ended", l.Samples, res.End.Seconds, res.End.Errors)
			}
		})
	}
}

// TestProbeUDPRateBeyondPath: a target far beyond loopback ends on time
// and says what it achieved.
func TestProbeUDPRateBeyondPath(t *testing.T) {
	start := time.Now()
	res := run(t, Config{Test: Test{Params: engine.Params{Duration: 500 * time.Millisecond, Interval: 250 * time.Millisecond}, Probe: &ProbeTest{Kind: ProbeUDP, Size: 1400, Rate: 1e12}}})
	took := time.Since(start)
	u := res.End.UDP
	t.Logf("after %s: %+v, errors %q", took, *u, res.End.Errors)
	checkUDPIntervals(t, res)
	if took > 15*time.Second || u.Packets == 0 || u.BitsPerSecond >= 1e12 {
		t.Errorf("took %s, sent %d at %g bit/s", took, u.Packets, u.BitsPerSecond)
	}
	if !strings.Contains(strings.Join(res.End.Errors, "\n"), "of the 1e+12 asked for") {
		t.Errorf("errors %q: want the achieved rate said", res.End.Errors)
	}
}

// TestProbePingRateBeyondPath: a ping-pong rate no path answers ends on
// time and says the rate it reached.
func TestProbePingRateBeyondPath(t *testing.T) {
	start := time.Now()
	res := run(t, Config{Test: Test{Params: engine.Params{Duration: 500 * time.Millisecond, Interval: 250 * time.Millisecond}, Probe: &ProbeTest{Kind: ProbePingPong, Size: 64, Rate: MaxPingRate}}})
	took := time.Since(start)
	l := res.End.Latency
	t.Logf("after %s: %d samples, %.0f/s, errors %q", took, l.Samples, l.RatePerSecond, res.End.Errors)
	if took > 15*time.Second || l.Samples == 0 || l.RatePerSecond >= MaxPingRate {
		t.Errorf("took %s, %d samples at %.0f/s", took, l.Samples, l.RatePerSecond)
	}
	if !strings.Contains(strings.Join(res.End.Errors, "\n"), "round trips/s of the 1e+07 asked for") {
		t.Errorf("errors %q: want the achieved rate said", res.End.Errors)
	}
}

// TestProbeBounds: every bound of a probe request, one field at a time.
func TestProbeBounds(t *testing.T) {
	good := func() probeMsg {
		return probeMsg{Type: msgProbe, Kind: ProbePingPong, Size: 64, DurationMS: 1000, IntervalMS: 1000, ServerCPU: -1}
	}
	tests := []struct {
		name string
		mod  func(*probeMsg)
		want string
	}{
		{"good", func(*probeMsg) {}, ""},
		{"kind", func(m *probeMsg) { m.Kind = "flood" }, `probe kind "flood"`},
		{"size small", func(m *probeMsg) { m.Size = engine.MinMessage - 1 }, "message size 13"},
		{"size large", func(m *probeMsg) { m.Size = engine.MaxMessage + 1 }, "message size 65508"},
		{"udp length small", func(m *probeMsg) { m.Kind, m.Size = ProbeUDP, 15 }, "datagram length 15"},
		{"udp length max", func(m *probeMsg) { m.Kind, m.Size = ProbeUDP, engine.MaxDatagram }, ""},
		{"rate negative", func(m *probeMsg) { m.Rate = -1 }, "rate -1"},
		{"rate NaN", func(m *probeMsg) { m.Rate = math.NaN() }, "rate NaN"},
		{"ping rate over", func(m *probeMsg) { m.Rate = MaxPingRate + 1 }, "at most 10000000"},
		{"udp rate over", func(m *probeMsg) { m.Kind, m.Size, m.Rate = ProbeUDP, 1000, 2e12 }, "at most 1.6e+12"},
		{"udp rate infinite", func(m *probeMsg) { m.Kind, m.Size, m.Rate = ProbeUDP, 1000, math.Inf(1) }, "at most"},
		{"duration short", func(m *probeMsg) { m.DurationMS = 99 }, "duration 99 ms"},
		{"duration over the agent's", func(m *probeMsg) { m.DurationMS = 2001 }, "over this agent's limit of 2s"},
		{"duration overflowing", func(m *probeMsg) { m.DurationMS = math.MaxInt64 }, "over this agent's limit"},
		{"omit negative", func(m *probeMsg) { m.OmitMS = -1 }, "omit -1 ms"},
		{"omit overflowing", func(m *probeMsg) { m.OmitMS = 9_300_000_000_000 }, "omit 9300000000000 ms"},
		{"cool-down long", func(m *probeMsg) { m.CooldownMS = 10_001 }, "cool-down 10001 ms"},
		{"cool-down negative", func(m *probeMsg) { m.CooldownMS = -1 }, "cool-down -1 ms"},
		{"interval short", func(m *probeMsg) { m.IntervalMS = 99 }, "interval 99 ms"},
		{"interval zero", func(m *probeMsg) { m.IntervalMS = 0 }, "interval 0 ms"},
		{"server CPU", func(m *probeMsg) { m.ServerCPU = maxCPUs }, "server CPU 65536"},
		{"server CPU negative", func(m *probeMsg) { m.ServerCPU = -2 }, "server CPU -2"},
	}
	for _, tt := range tests {
		m := good()
		tt.mod(&m)
		err := m.validate(2 * time.Second)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.want)
		}
	}
	for _, m := range []probeAcceptMsg{{Port: 0, TestID: make([]byte, testIDSize)}, {Port: 1, TestID: []byte{1}}, {Port: 1, TestID: make([]byte, testIDSize), CPU: -2}} {
		if m.check() == nil {
			t.Errorf("accept %+v passed", m)
		}
	}
	if (probeEndMsg{Error: strings.Repeat("x", maxErrorText+1)}).check() == nil || (probeEndMsg{CPUSeconds: -1}).check() == nil ||
		(probeEndMsg{Measured: engine.UDPStats{JitterMS: math.NaN()}}).check() == nil {
		t.Error("a bad probe_end passed")
	}
}

// orNull prints a percentile the way the run document does: a number, or
// null where too few samples make it unknown.
func orNull(v *float64) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprintf("%.1f", *v)
}

// TestRateShortfall: the cause of a paced ping-pong's shortfall follows
// the percentiles against the 1/rate budget. The walkthrough's run — 7460
// of 10000/s, p50 49 µs against a 100 µs budget, p99 1126 µs — is the
// slow tail, not "a round trip takes longer than the rate leaves it".
func TestRateShortfall(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	for _, c := range []struct {
		p50, p99 *float64
		want     string
	}{
		{f(49), f(1126), "the median round trip (49.0 µs) fits the 100.0 µs the rate leaves it, but the slow tail (p99 1126.0 µs) does not"},
		{f(130), f(400), "a round trip (p50 130.0 µs) takes longer than the 100.0 µs the rate leaves it"},
		{f(40), f(90), "the sender fell behind its schedule"},
		{nil, nil, "the cause is unknown"},
	} {
		l := &result.Latency{RatePerSecond: 7460}
		l.RTTUs.P50, l.RTTUs.P99 = c.p50, c.p99
		got := rateShortfall(l, 10000)
		if !strings.HasPrefix(got, "the ping-pong reached 7460 round trips/s of the 10000 asked for: ") || !strings.Contains(got, c.want) {
			t.Errorf("p50 %v p99 %v: %q, want %q", c.p50, c.p99, got, c.want)
		}
	}
}

// TestUDPLast: the last measured interval takes the end's totals less
// the earlier measured intervals' (the warm-up's are not the window's),
// and nothing when no interval has a receiver's count (an agent that
// sends none).
func TestUDPLast(t *testing.T) {
	iv := func(omitted bool, u *result.UDPInterval) result.Interval {
		return result.Interval{Omitted: omitted, Streams: []result.StreamInterval{{ID: 1, UDPInterval: u}}}
	}
	ivs := []result.Interval{iv(true, result.NewUDPInterval(50, 9, 0, 0.1)), iv(false, result.NewUDPInterval(100, 5, 1, 0.2)),
		iv(false, result.NewUDPInterval(90, 3, 0, 0.3)), iv(false, nil)}
	udpLast(ivs, &result.UDPSum{LostPackets: 12}, engine.UDPStats{Packets: 300, OutOfOrder: 2, JitterMS: 0.4})
	if got, want := ivs[3].Streams[0].UDPInterval, result.NewUDPInterval(110, 4, 1, 0.4); got == nil || *got != *want {
		t.Errorf("last interval %+v, want %+v", got, want)
	}
	none := []result.Interval{iv(false, nil), iv(false, nil)}
	udpLast(none, &result.UDPSum{LostPackets: 12}, engine.UDPStats{Packets: 300})
	if u := none[1].Streams[0].UDPInterval; u != nil {
		t.Errorf("no interval counted, the last took %+v", u)
	}
}
