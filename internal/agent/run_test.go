package agent

import (
	"context"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/result"
)

// run runs a short test against a fresh agent on loopback.
func run(t *testing.T, cfg Config) *result.Result {
	t.Helper()
	addr, _ := agent(t, &Server{})
	cfg.Peer, cfg.Token = addr, testToken
	if cfg.Duration == 0 {
		cfg.Duration = time.Second
	}
	if cfg.Interval == 0 {
		cfg.Interval = 250 * time.Millisecond
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestDirections checks the byte accounting of every direction: each
// interval's sum is the sum of its streams, the end's sums are the sums of
// the streams, no receiver got more than its sender sent, and after the
// drain every byte sent after the warm-up arrived.
func TestDirections(t *testing.T) {
	for _, dir := range []result.Direction{result.Send, result.Receive, result.Bidir} {
		t.Run(string(dir), func(t *testing.T) {
			res := run(t, Config{Test: Test{Params: engine.Params{Streams: 2, Direction: dir, Omit: 250 * time.Millisecond}}})
			conns := 2
			if dir == result.Bidir {
				conns = 4
			}
			if len(res.Start.Connections) != conns || len(res.End.Streams) != conns {
				t.Fatalf("%d connections, %d end streams; want %d", len(res.Start.Connections), len(res.End.Streams), conns)
			}
			checkIntervals(t, res, conns)
			checkEnd(t, res)
		})
	}
}

func checkIntervals(t *testing.T, res *result.Result, conns int) {
	t.Helper()
	omitted := 0
	for i, iv := range res.Intervals {
		var sum, retr uint64
		for _, s := range iv.Streams {
			sum += s.Bytes
			retr += s.Retransmits
		}
		if len(iv.Streams) != conns || sum != iv.Sum.Bytes || retr != iv.Sum.Retransmits {
			t.Errorf("interval %d: %d streams summing to %d bytes, %d retransmits; sum says %+v", i, len(iv.Streams), sum, retr, iv.Sum)
		}
		if iv.Omitted {
			omitted++
		}
		if len(iv.CPU.Client) == 0 || len(iv.CPU.Server) == 0 {
			t.Errorf("interval %d: no per-CPU samples: %+v", i, iv.CPU)
		}
	}
	// 250 ms warm-up, 1 s measured at 250 ms intervals.
	if omitted != 1 || len(res.Intervals) != 5 {
		t.Errorf("%d intervals, %d omitted; want 5 and 1", len(res.Intervals), omitted)
	}
}

func checkEnd(t *testing.T, res *result.Result) {
	t.Helper()
	e := res.End
	var sent, rcvd uint64
	for i, s := range e.Streams {
		// The receiver's count is its own: the sum of its measured
		// intervals' counts (the agent's for streams the client sends).
		var own uint64
		complete := true
		for _, iv := range res.Intervals {
			if iv.Omitted || i >= len(iv.Streams) {
				continue
			}
			switch st := iv.Streams[i]; {
			case st.Sender == "server":
				own += st.Bytes
			case st.PeerBytes != nil:
				own += *st.PeerBytes
			default:
				complete = false
			}
		}
		if complete && own != s.ReceivedBytes {
			t.Errorf("stream %d: received %d bytes; its receiver's measured intervals sum to %d", s.ID, s.ReceivedBytes, own)
		}
		// The sender's and the receiver's counts are over windows of their
		// own, whose lengths and edges differ (under -race on a busy
		// machine, by a third: 77.9 MB sent, 41.8 MB received in a 1 s
		// run); they are not compared here. TestReceiverWindow
		// (cmd/linerate) shows them apart on a shaped link.
		if s.SentBytes == 0 || s.ReceivedBytes == 0 {
			t.Errorf("stream %d sent %d, received %d", s.ID, s.SentBytes, s.ReceivedBytes)
		}
		sent += s.SentBytes
		rcvd += s.ReceivedBytes
	}
	if sent != e.SumSent.Bytes || rcvd != e.SumReceived.Bytes {
		t.Errorf("streams sum to %d sent, %d received; sums say %d, %d", sent, rcvd, e.SumSent.Bytes, e.SumReceived.Bytes)
	}
	if e.SumReceived.Seconds <= 0 || e.SumReceived.Seconds > 1.5 {
		t.Errorf("the receiver's window is %.3f s", e.SumReceived.Seconds)
	}
	if len(e.Errors) > 0 {
		t.Errorf("errors: %v", e.Errors)
	}
	checkNICCounters(t, res)
	// The measured window is the span of the measured intervals: from the
	// end of the warm-up to the last sample. (How close it comes to the
	// asked 1 s depends on how late a busy machine wakes the sampler, so
	// only its upper bound is a property of the engine: no interval runs
	// long past its end.)
	if n := len(res.Intervals); n == 0 || e.Seconds != res.Intervals[n-1].End || e.Seconds <= 0 || e.Seconds > 1.5 {
		last := -1.0
		if n > 0 {
			last = res.Intervals[n-1].End
		}
		t.Errorf("measured %.3f s, the last interval ends at %.3f s; want them equal, and at most 1.5 s", e.Seconds, last)
	}
}

// TestPinning checks, from /proc while the test runs, that every stream
// thread is pinned where -A said, and that the agent's per-CPU samples
// show the load on its stream's CPU.
func TestPinning(t *testing.T) {
	cpus, err := engine.AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(cpus) < 2 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: needs two CPUs")
		}
		t.Skip("needs two CPUs")
	}
	c, s := cpus[0], cpus[len(cpus)-1]
	var once sync.Once
	var seen map[string]string
	res := run(t, Config{Progress: func(e result.Event) {
		if e.Event == "interval" {
			once.Do(func() { seen = streamThreads(t) })
		}
	}, Test: Test{Params: engine.Params{Streams: 2, Duration: 2 * time.Second}, Pinning: Pinning{Client: []int{c}, Server: []int{s}}}})
	want := map[string]string{
		"lrc-tx-1": strconv.Itoa(c), "lrc-tx-2": strconv.Itoa(c),
		"lrs-rx-1": strconv.Itoa(s), "lrs-rx-2": strconv.Itoa(s),
	}
	for name, cpu := range want {
		if seen[name] != cpu {
			t.Errorf("thread %s: Cpus_allowed_list %q, want %q (threads: %v)", name, seen[name], cpu, seen)
		}
	}
	if !slices.Equal(res.Start.Placement.Client, []int{c}) || !slices.Equal(res.Start.Placement.Server, []int{s}) || res.Start.Placement.Source != "user" {
		t.Errorf("placement = %+v", res.Start.Placement)
	}
	// The receiving threads copy every byte: their CPU is busy. The
	// median over the measured intervals keeps a burst of other load
	// elsewhere from deciding.
	var busy []float64
	for _, iv := range res.Intervals {
		busy = append(busy, iv.CPU.Server[strconv.Itoa(s)].Busy)
	}
	sort.Float64s(busy)
	if m := busy[len(busy)/2]; m < 30 {
		t.Errorf("agent's CPU %d: median busy %.1f%% over %v; the streams pinned there should load it", s, m, busy)
	}
}

// streamThreads maps the names of this process's stream threads to
// their Cpus_allowed_list.
func streamThreads(t *testing.T) map[string]string {
	fs := hostfs.Live()
	tids, err := fs.ReadDir("proc/self/task")
	if err != nil {
		t.Error(err)
		return nil
	}
	out := map[string]string{}
	for _, tid := range tids {
		comm, err := fs.ReadString("proc/self/task/" + tid + "/comm")
		if err != nil || !strings.HasPrefix(comm, "lr") {
			continue
		}
		status, err := fs.ReadString("proc/self/task/" + tid + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(status, "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				out[comm] = strings.TrimSpace(v)
			}
		}
	}
	return out
}

// TestAutoPlacement: without -A, both ends on one machine run apart.
func TestAutoPlacement(t *testing.T) {
	cpus, err := engine.AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(cpus) < 2 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: needs two CPUs")
		}
		t.Skip("needs two CPUs")
	}
	res := run(t, Config{})
	p := res.Start.Placement
	if p.Source != "auto" || len(p.Client) == 0 || len(p.Server) == 0 {
		t.Fatalf("placement = %+v", p)
	}
	for _, c := range p.Client {
		// Only the look before the run may make them share: when one CPU
		// alone was free on this shared machine, and the run says so.
		if slices.Contains(p.Server, c) && !slices.ContainsFunc(res.Start.Notes, func(n string) bool {
			return strings.Contains(n, "both ends share CPU "+strconv.Itoa(c)+", the one free")
		}) {
			t.Errorf("client and agent share CPU %d on one machine, and no note says why: %+v %q", c, p, res.Start.Notes)
		}
	}
}

// TestOptions runs the socket options and zero-copy methods for real.
func TestOptions(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		test func(*testing.T, *result.Result)
	}{
		{"window", Config{Test: Test{Params: engine.Params{Window: 1 << 20}}}, func(t *testing.T, r *result.Result) {
			w := r.Start.Window
			if w.Requested != 1<<20 || w.Client.Sndbuf == 0 || w.Server.Rcvbuf == 0 || w.Granted == 0 {
				t.Errorf("window = %+v", w)
			}
		}},
		{"window capped", Config{Test: Test{Params: engine.Params{Window: engine.MaxWindow}}}, func(t *testing.T, r *result.Result) {
			w := r.Start.Window
			if len(w.Client.CappedBy) == 0 || !strings.HasPrefix(w.Client.CappedBy[0], "net.core.wmem_max=") {
				t.Errorf("a 2 GiB window was not reported capped: %+v", w)
			}
			if len(r.Start.Notes) == 0 {
				t.Error("no note about the capped window")
			}
		}},
		{"congestion", Config{Test: Test{Params: engine.Params{Congestion: "cubic"}}}, nil},
		{"fq-rate", Config{Test: Test{Params: engine.Params{FQRate: 200e6}}}, func(t *testing.T, r *result.Result) {
			if bps := r.End.SumReceived.BitsPerSecond; bps > 260e6 {
				t.Errorf("paced at 200 Mbit/s, got %.0f bit/s", bps)
			}
		}},
		{"sendfile", Config{Test: Test{Params: engine.Params{ZeroCopy: result.Sendfile}}}, nil},
		{"sendfile reverse", Config{Test: Test{Params: engine.Params{ZeroCopy: result.Sendfile, Direction: result.Receive}}}, nil},
		{"msg_zerocopy", Config{Test: Test{Params: engine.Params{ZeroCopy: result.MsgZeroCopy}}}, func(t *testing.T, r *result.Result) {
			z := r.End.ZeroCopy
			if z == nil || z.Sends == 0 || z.Completions == 0 {
				t.Fatalf("zerocopy = %+v", z)
			}
			// Loopback delivers locally: the kernel copies every send.
			if z.Copied == 0 {
				t.Errorf("loopback MSG_ZEROCOPY not reported copied: %+v", z)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, tt.cfg)
			checkEnd(t, r)
			if tt.test != nil {
				tt.test(t, r)
			}
		})
	}
}

// TestLateAgentSamples: an agent sample that arrives after the client
// moved on from its interval still lands in the result.
func TestLateAgentSamples(t *testing.T) {
	c := &client{p: engine.Params{Streams: 1, Direction: result.Send}, res: &result.Result{}}
	mine := engine.Sample{Index: 0, Start: 0, End: 1, Streams: []engine.StreamSample{{ID: 1, Bytes: 100}}}
	c.mine = []engine.Sample{mine}
	c.res.Intervals = []result.Interval{c.merge(mine, nil)}
	rd := &reader{late: map[int]*engine.Sample{}, ivc: make(chan *engine.Sample, 4)}
	rd.ivc <- &engine.Sample{Index: 0, CPU: map[string]result.CPUSample{"3": {Busy: 50}}, Total: result.CPUSample{Busy: 25},
		Streams: []engine.StreamSample{{ID: 1, Bytes: 99}}}
	c.lateSamples(rd)
	iv := c.res.Intervals[0]
	if iv.CPUTotal.Server == nil || iv.CPU.Server["3"].Busy != 50 || iv.Streams[0].Bytes != 100 {
		t.Errorf("the late sample was not merged: %+v", iv)
	}
}

// checkNICCounters: both ends read the counters of the interface the test ran
// over, and the causes every interface has (the kernel's own) are there.
func checkNICCounters(t *testing.T, res *result.Result) {
	t.Helper()
	nc := res.End.NICCounters
	if nc == nil || nc.Client == nil || nc.Server == nil {
		t.Fatalf("NIC counters of both ends missing: %+v", nc)
	}
	for _, e := range []struct {
		role  string
		d     *result.NICDelta
		iface string
	}{{"client", nc.Client, res.Start.Client.Iface}, {"server", nc.Server, res.Start.Server.Iface}} {
		if e.d.NotRead != "" || e.d.Interface != e.iface || !hasCauses(e.d, "rx_dropped", "tx_dropped", "qdisc_drops") {
			t.Errorf("%s's NIC counters: %+v (its interface is %q)", e.role, e.d, e.iface)
		}
	}
}

// hasCauses reports whether d read every one of causes.
func hasCauses(d *result.NICDelta, causes ...string) bool {
	for _, c := range causes {
		if _, ok := d.Deltas[c]; !ok {
			return false
		}
	}
	return true
}
