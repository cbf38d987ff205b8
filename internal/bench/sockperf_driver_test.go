package bench

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/engine"
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
	want := "sockperf ping-pong -i 198.18.0.2 -p 11111 -t 5 -m 64 --full-rtt --tcp --mps 10000 --sender-affinity 0 --receiver-affinity 0"
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

// TestSockperfRun: a captured sockperf report becomes end.latency with
// the round trips (sockperf's one-way halves doubled), the sent count,
// the achieved rate over sockperf's valid window, and its placement.
func TestSockperfRun(t *testing.T) {
	out, err := os.ReadFile("testdata/sockperf-3.7-pp-tcp-mps1000.txt")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ParseSockperf(out)
	if err != nil {
		t.Fatal(err)
	}
	p := Params{Test: agent.Test{Params: engine.Params{Duration: 2 * time.Second, Interval: time.Second}, Pinning: agent.Pinning{Client: []int{0}, Server: []int{1}}, Probe: &agent.ProbeTest{Kind: agent.ProbePingPong, Size: 64, Rate: 1000}}}
	r := sockperfRun(sp, p)
	l := r.End.Latency
	if l == nil || r.Engine != "sockperf" || l.Protocol != "tcp" || l.Samples != 1549 || l.Sent != 1549 {
		t.Fatalf("%+v", r.End)
	}
	// sockperf printed one-way: p50 51.976 µs, so the round trip is 103.952.
	if *l.RTTUs.P50 != 2*51.976 || *l.RTTUs.Min != 2*23.232 {
		t.Errorf("p50 %g, min %g: want sockperf's halves doubled", *l.RTTUs.P50, *l.RTTUs.Min)
	}
	if l.RatePerSecond < 1000 || l.RatePerSecond > 1001 {
		t.Errorf("rate %g/s: 1549 messages in 1.548 s", l.RatePerSecond)
	}
	if c := r.Start.Connections; len(c) != 1 || c[0].ClientCPU != 0 || c[0].ServerCPU != 1 || r.End.Seconds != 1.548 {
		t.Errorf("connections %+v, seconds %g", c, r.End.Seconds)
	}
	// sockperf reports no CPU time: the run carries both processes'
	// (getrusage), not 0.
	(&Sockperf{}).finish(r, p, measured{clientCPU: 1.53}, nil, 1.48)
	if r.End.CPU.ClientSeconds != 1.53 || r.End.CPU.ServerSeconds != 1.48 {
		t.Errorf("cpu %+v", r.End.CPU)
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
