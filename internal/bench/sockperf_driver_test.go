package bench

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/toolserver"
)

// TestSockperfArgs: the client's command line asks for round trips
// (--full-rtt), the protocol, size and rate asked for, and pins both of
// its threads to the client's CPU; what sockperf cannot do is refused.
func TestSockperfArgs(t *testing.T) {
	p := Params{Test: agent.Test{Params: engine.Params{Duration: 5 * time.Second}, Pinning: agent.Pinning{Client: []int{0}, Server: []int{1}}, Probe: &agent.ProbeTest{Kind: agent.ProbePingPong, Size: 64, Rate: 10000}}}
	a, err := sockperfArgs("198.18.0.2", p)
	if err != nil {
		t.Fatal(err)
	}
	// -t 5 asked: sockperf's -t holds its 400 ms warm-up and 50 ms
	// cool-down, and takes whole seconds.
	want := "sockperf ping-pong -i 198.18.0.2 -p 11111 -t 6 -m 64 --full-rtt --tcp --mps 10000 --sender-affinity 0 --receiver-affinity 0"
	if got := strings.Join(a, " "); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	p.Probe = &agent.ProbeTest{Kind: agent.ProbePingPong, UDP: true, Size: 14}
	p.Pinning = agent.Pinning{}
	a, _ = sockperfArgs("198.18.0.2", p)
	if slices.Contains(a, "--tcp") || !strings.Contains(strings.Join(a, " "), "--mps max") || slices.Contains(a, "--sender-affinity") {
		t.Errorf("UDP, unpaced, unpinned: %v", a)
	}
	sec := engine.Params{Duration: time.Second}
	for _, bad := range []Params{{Test: agent.Test{Params: sec}}, {Test: agent.Test{Params: sec, Probe: &agent.ProbeTest{Kind: agent.ProbeUDP, Size: 100}}},
		{Test: agent.Test{Params: sec, Probe: &agent.ProbeTest{Kind: agent.ProbePingPong, Size: 64}, Pinning: agent.Pinning{Client: []int{0, 1}}}}} {
		if _, err := sockperfArgs("h", bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	srv, err := toolserver.ToolServer{Tool: "sockperf", Port: 11111, Bind: "198.18.0.2", TCP: true}.Argv()
	if err != nil || strings.Join(srv, " ") != "sockperf server -p 11111 -i 198.18.0.2 --tcp" {
		t.Errorf("server %v, %v", srv, err)
	}
}

// TestSockperfRun: a captured sockperf report and its log of every
// message become a run as a native ping-pong is: -t seconds after the
// warm-up in intervals of -i, each with its round trips and percentiles,
// adding up to end.latency, whose count and rate are the window's.
// Without the log the run is sockperf's summary, says why, and has no
// interval at all rather than made-up ones.
func TestSockperfRun(t *testing.T) {
	sp, err := ParseSockperf(readTestdata(t, "sockperf-3.7-pp-tcp-mps1000-t4.txt"))
	if err != nil {
		t.Fatal(err)
	}
	p := Params{Test: agent.Test{Params: engine.Params{Duration: 3 * time.Second, Interval: time.Second}, Pinning: agent.Pinning{Client: []int{0}, Server: []int{1}}, Probe: &agent.ProbeTest{Kind: agent.ProbePingPong, Size: 64, Rate: 1000}}}
	lg, err := ParseSockperfLog(bytes.NewReader(readTestdata(t, "sockperf-3.7-pp-tcp-mps1000-t4-full-log.csv")), p.Duration, p.Interval, 64)
	if err != nil {
		t.Fatal(err)
	}
	r := sockperfRun(sp, lg, nil, p)
	l := r.End.Latency
	if l == nil || r.Engine != "sockperf" || r.Tool == nil || r.Tool.Version != "3.7-no.git" || l.Protocol != "tcp" || l.Samples != lg.Latency.Samples || l.Sent != l.Samples || r.End.Seconds != 3 {
		t.Fatalf("%+v", r.End)
	}
	// Paced at 1000/s: the window's count over its 3 s.
	if l.RatePerSecond < 990 || l.RatePerSecond > 1010 || l.RatePerSecond != math.Round(float64(l.Samples)/3*1000)/1000 {
		t.Errorf("rate %g/s from %d round trips in 3 s", l.RatePerSecond, l.Samples)
	}
	if len(r.Intervals) != 3 {
		t.Fatalf("%d intervals for -t 3 -i 1", len(r.Intervals))
	}
	var n int64
	for _, iv := range r.Intervals {
		n += iv.Latency.Samples
		if iv.Latency.RTTUs.P50 == nil || iv.Sum.Bytes != uint64(iv.Latency.Samples)*128 {
			t.Errorf("interval %+v", iv)
		}
	}
	if n != l.Samples || r.End.SumReceived.Bytes != uint64(n)*128 {
		t.Errorf("intervals hold %d round trips, the end %d (%d bytes)", n, l.Samples, r.End.SumReceived.Bytes)
	}
	if c := r.Start.Connections; len(c) != 1 || c[0].ClientCPU != 0 || c[0].ServerCPU != 1 || r.Start.DurationS != 3 {
		t.Errorf("connections %+v, duration %g", c, r.Start.DurationS)
	}
	if notes := strings.Join(r.Start.Notes, "\n"); !strings.Contains(notes, "ran -t 4") || strings.Contains(notes, "unpinned") {
		t.Errorf("pinned run's notes: %s", notes)
	}
	// sockperf reports no CPU time: the run carries both processes'
	// (getrusage), not 0.
	(&Sockperf{}).finish(r, p, measured{clientCPU: 1.53}, nil, 1.48)
	if r.End.CPU.ClientSeconds != 1.53 || r.End.CPU.ServerSeconds != 1.48 {
		t.Errorf("cpu %+v", r.End.CPU)
	}

	// No log, no pinning: sockperf's summary of its 3.549 s, no interval,
	// and the placement the native engine would not have chosen, said.
	p.Pinning = agent.Pinning{}
	r = sockperfRun(sp, nil, errors.New("open full-log.csv: no such file"), p)
	if len(r.Intervals) != 0 || r.End.Seconds != 3.549 || r.End.Latency.Samples != 3550 {
		t.Fatalf("%d intervals, %g s, %d round trips", len(r.Intervals), r.End.Seconds, r.End.Latency.Samples)
	}
	if notes := strings.Join(r.Start.Notes, "\n"); !strings.Contains(notes, "no such file") || !strings.Contains(notes, "no per-interval figures") ||
		!strings.Contains(notes, "sockperf ran unpinned") || !strings.Contains(notes, "native engine's auto placement pins") {
		t.Errorf("notes: %s", notes)
	}
}

// TestNetperfDriver: the TCP_RR command line asks for the latencies the
// parser reads, pinned with -T; what TCP_RR cannot do is refused; a
// missing netperf is one line saying where to get it.
func TestNetperfDriver(t *testing.T) {
	p := Params{Test: agent.Test{Params: engine.Params{Duration: 5 * time.Second}, Pinning: agent.Pinning{Client: []int{0}, Server: []int{1}}, Probe: &agent.ProbeTest{Kind: agent.ProbePingPong, Size: 64}}}
	a, err := netperfArgs("198.18.0.2", p)
	if err != nil {
		t.Fatal(err)
	}
	want := "netperf -H 198.18.0.2 -p 12865 -t TCP_RR -l 5 -P 0 -T 0,1 -- -r 64,64 -o MIN_LATENCY,MEAN_LATENCY,P50_LATENCY,P90_LATENCY,P99_LATENCY,MAX_LATENCY,STDDEV_LATENCY,TRANSACTION_RATE"
	if got := strings.Join(a, " "); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for _, pr := range []*agent.ProbeTest{nil, {Kind: agent.ProbePingPong, UDP: true, Size: 64}, {Kind: agent.ProbePingPong, Size: 64, Rate: 100}} {
		if _, err := netperfArgs("h", Params{Test: agent.Test{Params: engine.Params{Duration: time.Second}, Probe: pr}}); err == nil {
			t.Errorf("%+v accepted", pr)
		}
	}
	t.Setenv("PATH", t.TempDir())
	err = (&Netperf{}).Check()
	var ue *UnavailableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "non-free") {
		t.Errorf("without netperf: %v", err)
	}
	if srv, err := (toolserver.ToolServer{Tool: "netserver", Port: 12865, Bind: "198.18.0.2"}).Argv(); err != nil || strings.Join(srv, " ") != "netserver -D -p 12865 -L 198.18.0.2" {
		t.Errorf("netserver %v %v", srv, err)
	}
}

// TestToolProbeText: a tool's latency run prints where its ends ran in
// words (never "[]"), its notes, the seconds it measured of those asked
// when fewer, CPU time it could not read as "unknown", and no GC line
// (the native engine's collector, which a tool has not).
func TestToolProbeText(t *testing.T) {
	sp, err := ParseSockperf(readTestdata(t, "sockperf-3.7-pp-tcp-mps1000-t4.txt"))
	if err != nil {
		t.Fatal(err)
	}
	probe := &agent.ProbeTest{Kind: agent.ProbePingPong, Size: 64}
	sec := engine.Params{Duration: 4 * time.Second, Interval: time.Second}
	for _, c := range []struct {
		name      string
		pin       agent.Pinning
		cpu       result.EndCPU
		want, not []string
	}{
		{"unpinned, no CPU time", agent.Pinning{}, result.EndCPU{},
			[]string{"sockperf: placement: not pinned (scheduler)\n", "Note: sockperf ran unpinned", "3550 in 3.55 s of the 4 s asked (", "CPU time: client unknown, server unknown\n"},
			[]string{"[]", "0.00 s", "GC:"}},
		{"pinned", agent.Pinning{Client: []int{0}, Server: []int{1}}, result.EndCPU{ClientSeconds: 1.5, ServerSeconds: 0.25},
			[]string{"sockperf: placement: client CPU 0, server CPU 1\n", "CPU time: client 1.50 s, server 0.25 s\n"},
			[]string{"unpinned", "GC:"}},
		{"client pinned only", agent.Pinning{Client: []int{3}}, result.EndCPU{ClientSeconds: 1},
			[]string{"placement: client CPU 3, server CPU any\n", "server unknown"}, nil},
	} {
		p := Params{Test: agent.Test{Params: sec, Pinning: c.pin, Probe: probe}}
		r := sockperfRun(sp, nil, errors.New("no log"), p)
		r.End.CPU = c.cpu
		finishStart(r, p, &LabHosts{})
		var b bytes.Buffer
		WriteToolProbe(&b, r)
		for _, w := range c.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: lacks %q:\n%s", c.name, w, b.String())
			}
		}
		for _, w := range c.not {
			if strings.Contains(b.String(), w) {
				t.Errorf("%s: has %q:\n%s", c.name, w, b.String())
			}
		}
	}
}
