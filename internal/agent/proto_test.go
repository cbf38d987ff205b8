package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/rdmastats"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/telemetry"
)

// The tests of this file pin every bound of the agent's messages at its
// edge: the largest accepted value, and the first refused one, so that a
// "<" written for a "<=" fails.

// TestRequestEdges: each bound of a request at its edge, with an agent
// allowing two hours so that the report count can be reached.
func TestRequestEdges(t *testing.T) {
	const maxDur = 2 * time.Hour
	tests := []struct {
		name string
		mod  func(*requestMsg)
		want string // "" accepted
	}{
		{"shortest duration", func(r *requestMsg) { r.DurationMS = 100 }, ""},
		{"longest duration", func(r *requestMsg) { r.DurationMS, r.IntervalMS = maxDur.Milliseconds(), 1000 }, ""},
		{"duration a millisecond over", func(r *requestMsg) { r.DurationMS, r.IntervalMS = maxDur.Milliseconds()+1, 1000 }, "duration 2h0m0.001s is over this agent's limit of 2h0m0s"},
		{"omit zero", func(r *requestMsg) { r.OmitMS = 0 }, ""},
		{"longest omit", func(r *requestMsg) { r.OmitMS = maxDur.Milliseconds() }, ""},
		{"omit a millisecond over", func(r *requestMsg) { r.OmitMS = maxDur.Milliseconds() + 1 }, "omit 7200001 ms: must be 0 to 2h0m0s"},
		{"shortest interval", func(r *requestMsg) { r.IntervalMS = 100 }, ""},
		{"longest interval", func(r *requestMsg) { r.IntervalMS = 60000 }, ""},
		{"most reports", func(r *requestMsg) { r.OmitMS, r.DurationMS, r.IntervalMS = 1000, 3_599_000, 100 }, ""},
		{"one report too many", func(r *requestMsg) { r.OmitMS, r.DurationMS, r.IntervalMS = 1000, 3_599_100, 100 },
			"1h0m0.1s at 100ms intervals makes over 36000 reports: use a longer interval"},
		{"largest window", func(r *requestMsg) { r.Window = engine.MaxWindow }, ""},
		{"window a byte over", func(r *requestMsg) { r.Window = engine.MaxWindow + 1 }, "window 2147483648: must be 0 to 2147483647 bytes"},
		{"one CPU a connection", func(r *requestMsg) { r.ServerCPUs = make([]int, engine.MaxFlows) }, ""},
		{"a CPU more than connections", func(r *requestMsg) { r.ServerCPUs = make([]int, engine.MaxFlows+1) },
			"4097 server CPUs: at most one per connection (4096)"},
		{"CPU 0", func(r *requestMsg) { r.ServerCPUs = []int{0} }, ""},
		{"highest CPU", func(r *requestMsg) { r.ServerCPUs = []int{maxCPUs - 1} }, ""},
		{"CPU past the highest", func(r *requestMsg) { r.ServerCPUs = []int{maxCPUs} }, "server CPU 65536: out of range"},
		{"receive", func(r *requestMsg) { r.Direction = result.Receive }, ""},
		{"bidir", func(r *requestMsg) { r.Direction = result.Bidir }, ""},
	}
	for _, tt := range tests {
		r := goodRequest()
		tt.mod(&r)
		err := r.validate(maxDur)
		checkErr(t, tt.name, err, tt.want)
	}
}

// checkErr wants err nil when want is "", else an error containing want.
func checkErr(t *testing.T, name string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: refused: %v", name, err)
	case want != "" && err == nil:
		t.Errorf("%s: accepted, want %q", name, want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("%s: %v, want %q", name, err, want)
	}
}

func TestMsText(t *testing.T) {
	edge := int64(math.MaxInt64 / time.Millisecond) // the largest that fits a Duration
	tests := []struct {
		ms   int64
		want string
	}{
		{0, "0s"},
		{-1, "-1 ms"},
		{1500, "1.5s"},
		{edge, (time.Duration(edge) * time.Millisecond).String()},
		{edge + 1, "9223372036855 ms"},
	}
	for _, tt := range tests {
		if got := msText(tt.ms); got != tt.want {
			t.Errorf("msText(%d) = %q, want %q", tt.ms, got, tt.want)
		}
	}
}

// TestMessageEdges: the agent's and the client's checks of each other's
// messages, at each bound.
func TestMessageEdges(t *testing.T) {
	id := make([]byte, testIDSize)
	long := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name  string
		check func() error
		want  string // "" accepted
	}{
		{"accept: lowest CPU (-1, unpinned)", acceptMsg{Port: 1, TestID: id, Placement: []int{-1}}.check1, ""},
		{"accept: CPU below -1", acceptMsg{Port: 1, TestID: id, Placement: []int{-2}}.check1, "on CPU -2"},
		{"accept: highest CPU", acceptMsg{Port: 65535, TestID: id, Placement: []int{maxCPUs - 1}}.check1, ""},
		{"accept: CPU past the highest", acceptMsg{Port: 1, TestID: id, Placement: []int{maxCPUs}}.check1, "on CPU 65536"},
		{"accept: port 0", acceptMsg{Port: 0, TestID: id, Placement: []int{0}}.check1, "port 0"},
		{"accept: port 65536", acceptMsg{Port: 65536, TestID: id, Placement: []int{0}}.check1, "port 65536"},
		{"accept: longest note, most CPUs loaded", acceptMsg{Port: 1, TestID: id, Placement: []int{0}, Why: long(maxErrorText), Load: cpuMap[float64](maxCPUMap)}.check1, ""},
		{"accept: note too long", acceptMsg{Port: 1, TestID: id, Placement: []int{0}, Why: long(maxErrorText + 1)}.check1, "placement note of 4097 bytes"},
		{"accept: a loaded CPU too many", acceptMsg{Port: 1, TestID: id, Placement: []int{0}, Load: cpuMap[float64](maxCPUMap + 1)}.check1, "accept's load of 8193 CPUs"},
		{"accept: highest CPU fully loaded", acceptMsg{Port: 1, TestID: id, Placement: []int{0}, Load: map[string]float64{"65535": 100, "0": 0}}.check1, ""},
		{"accept: loaded CPU past the highest", acceptMsg{Port: 1, TestID: id, Placement: []int{0}, Load: map[string]float64{"65536": 1}}.check1, "CPU \"65536\""},
		{"accept: loaded CPU -1", acceptMsg{Port: 1, TestID: id, Placement: []int{0}, Load: map[string]float64{"-1": 1}}.check1, "CPU \"-1\""},
		{"accept: load over 100%", acceptMsg{Port: 1, TestID: id, Placement: []int{0}, Load: map[string]float64{"0": 100.001}}.check1, "at 100.001%"},
		{"accept: negative load", acceptMsg{Port: 1, TestID: id, Placement: []int{0}, Load: map[string]float64{"0": -0.001}}.check1, "at -0.001%"},

		{"ready: zero buffers, two caps", readyMsg{Window: result.SockBufs{CappedBy: []string{long(64), "b"}}}.check, ""},
		{"ready: three caps", readyMsg{Window: result.SockBufs{CappedBy: []string{"a", "b", "c"}}}.check, "ready's buffers"},
		{"ready: a cap name of 65 bytes", readyMsg{Window: result.SockBufs{CappedBy: []string{long(65)}}}.check, "a sysctl of 65 bytes"},
		{"ready: negative send buffer", readyMsg{Window: result.SockBufs{Sndbuf: -1}}.check, "ready's buffers"},
		{"ready: negative receive buffer", readyMsg{Window: result.SockBufs{Rcvbuf: -1}}.check, "ready's buffers"},

		{"interval: first", intervalOf(0, 1, 0).check1, ""},
		{"interval: last", intervalOf(maxIntervals, 1, maxCPUMap).check1, ""},
		{"interval: past the last", intervalOf(maxIntervals+1, 1, 0).check1, "interval index 36001"},
		{"interval: negative", intervalOf(-1, 1, 0).check1, "interval index -1"},
		{"interval: a CPU too many", intervalOf(0, 1, maxCPUMap+1).check1, "interval of 8193 CPUs"},
		{"interval: streams missing", intervalOf(0, 0, 0).check1, "interval of 0 streams, the test has 1"},

		{"end: an error a stream, longest", endOf(1, []string{long(maxErrorText)}, 0).check1, ""},
		{"end: an error too long", endOf(1, []string{long(maxErrorText + 1)}, 0).check1, "an error of 4097 bytes"},
		{"end: more errors than streams", endOf(1, []string{"a", "b"}, 0).check1, "2 errors for 1 streams"},
		{"end: negative CPU", endOf(1, nil, -0.001).check1, "-0.001 CPU seconds"},

		{"tool: largest spec, longest run", toolMsg{Server: json.RawMessage(long(maxToolSpec)), DurationMS: 3_600_000, IntervalMS: 60000}.checkHour, ""},
		{"tool: shortest run", toolMsg{Server: json.RawMessage("{}"), DurationMS: 100, IntervalMS: 100}.checkHour, ""},
		{"tool: spec a byte over", toolMsg{Server: json.RawMessage(long(maxToolSpec + 1)), DurationMS: 1000, IntervalMS: 1000}.checkHour, "of 4097 bytes"},
		{"tool: run a millisecond over", toolMsg{Server: json.RawMessage("{}"), DurationMS: 3_600_001, IntervalMS: 1000}.checkHour, "duration 3600001 ms"},
		{"tool: interval too long", toolMsg{Server: json.RawMessage("{}"), DurationMS: 1000, IntervalMS: 60001}.checkHour, "interval 60001 ms"},

		{"tool_started: most arguments, longest", toolStartedMsg{Argv: repeat(long(maxToolArg), maxToolArgs), Auth: bytes.Repeat([]byte("a"), maxToolAuth)}.check, ""},
		{"tool_started: an argument too many", toolStartedMsg{Argv: repeat("a", maxToolArgs+1)}.check, "with 65 arguments"},
		{"tool_started: an argument too long", toolStartedMsg{Argv: []string{long(maxToolArg + 1)}}.check, "an argument of 4097 bytes"},
		{"tool_started: credentials too long", toolStartedMsg{Argv: []string{"a"}, Auth: bytes.Repeat([]byte("a"), maxToolAuth+1)}.check, "16385 bytes of credentials"},

		{"tool_end: longest", toolEndMsg{Output: long(maxToolOutput), Error: long(maxErrorText)}.check, ""},
		{"tool_end: output too long", toolEndMsg{Output: long(maxToolOutput + 1)}.check, "65537 bytes of output"},
		{"tool_end: error too long", toolEndMsg{Error: long(maxErrorText + 1)}.check, "4097 of error"},
		{"tool_end: negative CPU", toolEndMsg{CPUSeconds: -1}.check, "-1 CPU seconds"},

		{"tool interval: first, most CPUs", toolSample{Index: 0, CPU: cpuMap[telemetry.CPUSample](maxCPUMap)}.check, ""},
		{"tool interval: negative", toolSample{Index: -1}.check, "tool interval -1"},
		{"tool interval: a CPU too many", toolSample{CPU: cpuMap[telemetry.CPUSample](maxCPUMap + 1)}.check, "of 8193 CPUs"},
	}
	for _, tt := range tests {
		checkErr(t, tt.name, tt.check(), tt.want)
	}
}

// check1 and friends bind the size of the test (one connection) or the
// agent's limit (an hour), so that the table above reads as a list.
func (m acceptMsg) check1() error { return m.check(1) }

func (m intervalMsg) check1() error { return m.check(1) }

func (m endMsg) check1() error { return m.check(1) }

func (m toolMsg) checkHour() error { return m.check(time.Hour) }

func intervalOf(index, streams, cpus int) intervalMsg {
	m := intervalMsg{}
	m.Index = index
	m.Streams = make([]engine.StreamSample, streams)
	m.CPU = cpuMap[result.CPUSample](cpus)
	return m
}

func endOf(streams int, errs []string, cpu float64) endMsg {
	return endMsg{Streams: make([]engine.StreamTotal, streams), Errors: errs, CPUSeconds: cpu}
}

// cpuMap is a sample of n CPUs.
func cpuMap[V any](n int) map[string]V {
	m := make(map[string]V, n)
	for i := range n {
		m[strconv.Itoa(i)] = *new(V)
	}
	return m
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// TestPeerReasonBound: a peer's refusal is shown up to maxReason bytes;
// beyond, cut with an ellipsis.
func TestPeerReasonBound(t *testing.T) {
	for _, n := range []int{maxReason, maxReason + 1} {
		body, _ := json.Marshal(errorMsg{Type: msgError, Reason: strings.Repeat("r", n)})
		err := decodeAs(msgError, body, msgAccept, &acceptMsg{})
		var pe *PeerError
		if !errors.As(err, &pe) {
			t.Fatalf("reason of %d bytes: %v", n, err)
		}
		want := strings.Repeat("r", min(n, maxReason))
		if n > maxReason {
			want += "…"
		}
		if pe.Reason != want {
			t.Errorf("reason of %d bytes shown as %d bytes, want %d", n, len(pe.Reason), len(want))
		}
	}
}

// TestEndEdges pins the bounds of what an end message added in round 2
// carries (the agent's window, its other load, the sources it could not
// read, its NIC counters) and an interval's RX CPU, each at its edge: the
// largest accepted, the first refused.
func TestEndEdges(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	end := func(edit func(*endMsg)) func() error {
		m := endOf(1, nil, 0)
		edit(&m)
		return m.check1
	}
	proc := func(pid int, name string, pct float64, cpu int) *telemetry.Foreign {
		return &telemetry.Foreign{Top: []telemetry.Proc{{PID: pid, Name: name, CPUPct: pct, CPU: cpu}}}
	}
	// name is the i-th of some names, nameLen bytes long.
	name := func(i, nameLen int) string { return long(nameLen-3) + fmt.Sprintf("%03d", i) }
	causes := func(n, nameLen int) map[string]uint64 {
		m := map[string]uint64{}
		for i := range n {
			m[name(i, nameLen)] = 1
		}
		return m
	}
	// sources names both the causes and their counters in nameLen bytes.
	sources := func(causes, counters, nameLen int) map[string]map[string]uint64 {
		m := map[string]map[string]uint64{}
		for i := range causes {
			c := map[string]uint64{}
			for j := range counters {
				c[name(j, nameLen)] = 1
			}
			m[name(i, nameLen)] = c
		}
		return m
	}
	tests := []struct {
		name  string
		check func() error
		want  string // "" accepted
	}{
		{"window: longest", end(func(m *endMsg) { m.Seconds = maxSeconds }), ""},
		{"window: past the longest", end(func(m *endMsg) { m.Seconds = maxSeconds + 0.001 }), "window of 172800.001 s"},
		{"window: negative", end(func(m *endMsg) { m.Seconds = -0.001 }), "window of -0.001 s"},
		{"note: longest", end(func(m *endMsg) { m.ForeignNote = long(maxErrorText) }), ""},
		{"note: too long", end(func(m *endMsg) { m.ForeignNote = long(maxErrorText + 1) }), "a note of 4097 bytes"},
		{"unread: all three, longest reasons", end(func(m *endMsg) {
			m.Unread = map[string]string{telemetry.SrcStat: long(maxErrorText), telemetry.SrcSoftirqs: "", telemetry.SrcInterrupts: ""}
		}), ""},
		{"unread: a reason too long", end(func(m *endMsg) { m.Unread = map[string]string{telemetry.SrcStat: long(maxErrorText + 1)} }), "unread source"},
		{"unread: an unknown source", end(func(m *endMsg) { m.Unread = map[string]string{"proc/meminfo": ""} }), "unread source"},
		{"unread: four", end(func(m *endMsg) {
			m.Unread = map[string]string{telemetry.SrcStat: "", telemetry.SrcSoftirqs: "", telemetry.SrcInterrupts: "", "x": ""}
		}), "4 unread sources"},

		{"other load: edges", end(func(m *endMsg) {
			m.Foreign = &telemetry.Foreign{PID: 0, Seconds: maxSeconds, Top: make([]telemetry.Proc, telemetry.MaxTop)}
		}), ""},
		{"other load: negative pid", end(func(m *endMsg) { m.Foreign = &telemetry.Foreign{PID: -1} }), "pid -1"},
		{"other load: negative window", end(func(m *endMsg) { m.Foreign = &telemetry.Foreign{Seconds: -0.001} }), "-0.001 s"},
		{"other load: window too long", end(func(m *endMsg) { m.Foreign = &telemetry.Foreign{Seconds: maxSeconds + 0.001} }), "172800.001 s"},
		{"other load: a process too many", end(func(m *endMsg) {
			m.Foreign = &telemetry.Foreign{Top: make([]telemetry.Proc, telemetry.MaxTop+1)}
		}), "6 processes"},
		{"other load: own share over 100%", end(func(m *endMsg) { m.Foreign = &telemetry.Foreign{Own: map[string]float64{"0": 100.001}} }), "end's own load"},
		{"other load: a share over 100%", end(func(m *endMsg) { m.Foreign = &telemetry.Foreign{CPU: map[string]float64{"0": 100.001}} }), "end's other load: CPU"},
		{"process: edges", end(func(m *endMsg) { m.Foreign = proc(0, long(maxProcName), 100*maxCPUMap, maxCPUs-1) }), ""},
		{"process: unpinned, idle", end(func(m *endMsg) { m.Foreign = proc(1, "", 0, -1) }), ""},
		{"process: negative pid", end(func(m *endMsg) { m.Foreign = proc(-1, "", 0, 0) }), "process -1"},
		{"process: name too long", end(func(m *endMsg) { m.Foreign = proc(1, long(maxProcName+1), 0, 0) }), "names process 1"},
		{"process: negative share", end(func(m *endMsg) { m.Foreign = proc(1, "", -0.001, 0) }), "at -0.001%"},
		{"process: share past every CPU", end(func(m *endMsg) { m.Foreign = proc(1, "", 100*maxCPUMap+0.001, 0) }), "at 819200.001%"},
		{"process: CPU below -1", end(func(m *endMsg) { m.Foreign = proc(1, "", 0, -2) }), "on CPU -2"},
		{"process: CPU past the highest", end(func(m *endMsg) { m.Foreign = proc(1, "", 0, maxCPUs) }), "on CPU 65536"},

		{"NIC: longest names, most causes and counters", end(func(m *endMsg) {
			m.NICCounters = &result.NICDelta{Interface: long(maxNICName), Driver: long(maxNICName), NotRead: long(maxErrorText),
				Deltas: causes(maxNICCauses, maxNICName), Sources: sources(maxNICCauses, maxNICSources, maxNICName)}
		}), ""},
		{"NIC: interface name too long", end(func(m *endMsg) { m.NICCounters = &result.NICDelta{Interface: long(maxNICName + 1)} }), "named in 129 and 0 bytes"},
		{"NIC: driver name too long", end(func(m *endMsg) { m.NICCounters = &result.NICDelta{Driver: long(maxNICName + 1)} }), "named in 0 and 129 bytes"},
		{"NIC: reason too long", end(func(m *endMsg) { m.NICCounters = &result.NICDelta{NotRead: long(maxErrorText + 1)} }), "a reason of 4097 bytes"},
		{"NIC: a cause too many", end(func(m *endMsg) { m.NICCounters = &result.NICDelta{Deltas: causes(maxNICCauses+1, 8)} }), "of 33 causes"},
		{"NIC: a source cause too many", end(func(m *endMsg) { m.NICCounters = &result.NICDelta{Sources: sources(maxNICCauses+1, 0, 8)} }), "of 33 causes"},
		{"NIC: cause name too long", end(func(m *endMsg) { m.NICCounters = &result.NICDelta{Deltas: causes(1, maxNICName+1)} }), "a NIC counter cause of 129 bytes"},
		{"NIC: a counter too many", end(func(m *endMsg) { m.NICCounters = &result.NICDelta{Sources: sources(1, maxNICSources+1, 8)} }), "with 65 counters"},
		{"NIC: source cause name too long", end(func(m *endMsg) {
			m.NICCounters = &result.NICDelta{Sources: map[string]map[string]uint64{long(maxNICName + 1): nil}}
		}), "cause of 129 bytes with 0 counters"},
		{"NIC: counter name too long", end(func(m *endMsg) {
			m.NICCounters = &result.NICDelta{Sources: map[string]map[string]uint64{"c": {long(maxNICName + 1): 1}}}
		}), "a NIC counter named in 129 bytes"},

		{"probe_end: NIC counters at their bounds", probeEndMsg{NICCounters: &result.NICDelta{Interface: long(maxNICName),
			Deltas: causes(maxNICCauses, 8)}}.check, ""},
		{"probe_end: NIC interface name too long", probeEndMsg{NICCounters: &result.NICDelta{Interface: long(maxNICName + 1)}}.check,
			"named in 129 and 0 bytes"},
		{"probe_end: a NIC cause too many", probeEndMsg{NICCounters: &result.NICDelta{Deltas: causes(maxNICCauses+1, 8)}}.check, "of 33 causes"},

		{"tool_end: RDMA counters at their bounds", toolEndMsg{RDMA: &result.RDMAEnd{Device: long(maxNICName), Netdev: long(maxNICName), Port: maxRDMAPort,
			NotRead: long(maxErrorText), HWCounters: causes(maxRDMAFiles, maxNICName), Counters: causes(maxRDMAFiles, 8), Priority: priorities(8, rdmastats.PriorityNames)}}.check, ""},
		{"tool_end: an RDMA device name too long", toolEndMsg{RDMA: &result.RDMAEnd{Device: long(maxNICName + 1)}}.check, "a device named in 129 bytes"},
		{"tool_end: an RDMA netdev name too long", toolEndMsg{RDMA: &result.RDMAEnd{Netdev: long(maxNICName + 1)}}.check, "a netdev in 129"},
		{"tool_end: RDMA port 256", toolEndMsg{RDMA: &result.RDMAEnd{Port: maxRDMAPort + 1}}.check, "port 256"},
		{"tool_end: RDMA port -1", toolEndMsg{RDMA: &result.RDMAEnd{Port: -1}}.check, "port -1"},
		{"tool_end: an RDMA reason too long", toolEndMsg{RDMA: &result.RDMAEnd{NotRead: long(maxErrorText + 1)}}.check, "a reason of 4097 bytes"},
		{"tool_end: an hw_counter too many", toolEndMsg{RDMA: &result.RDMAEnd{HWCounters: causes(maxRDMAFiles+1, 8)}}.check, "513 RDMA counters"},
		{"tool_end: a port counter too many", toolEndMsg{RDMA: &result.RDMAEnd{Counters: causes(maxRDMAFiles+1, 8)}}.check, "513 RDMA counters"},
		{"tool_end: an RDMA counter name too long", toolEndMsg{RDMA: &result.RDMAEnd{HWCounters: causes(1, maxNICName+1)}}.check, "an RDMA counter named in 129 bytes"},
		{"tool_end: a ninth priority", toolEndMsg{RDMA: &result.RDMAEnd{Priority: priorities(9, 1)}}.check, "9 priorities"},
		{"tool_end: priority 8", toolEndMsg{RDMA: &result.RDMAEnd{Priority: map[string]map[string]uint64{"8": {"rx_pause": 1}}}}.check, `priority "8"`},
		{"tool_end: priority 33", toolEndMsg{RDMA: &result.RDMAEnd{Priority: map[string]map[string]uint64{"33": nil}}}.check, `priority "33"`},
		{"tool_end: a priority counter too many", toolEndMsg{RDMA: &result.RDMAEnd{Priority: priorities(1, rdmastats.PriorityNames+1)}}.check, "with 7 counters"},
		{"tool_end: a priority counter name too long", toolEndMsg{RDMA: &result.RDMAEnd{Priority: map[string]map[string]uint64{"3": {long(maxNICName + 1): 1}}}}.check,
			"a priority counter named in 129 bytes"},

		{"interval: RX CPU 0 and the highest", rxCPUs(0, maxCPUs-1), ""},
		{"interval: RX CPU -1", rxCPUs(-1), "RX CPU -1"},
		{"interval: RX CPU past the highest", rxCPUs(maxCPUs), "RX CPU 65536"},
	}
	for _, tt := range tests {
		checkErr(t, tt.name, tt.check(), tt.want)
	}
}

// priorities is the per-priority counters of n priorities (0, 1, …),
// each with counters counters.
func priorities(n, counters int) map[string]map[string]uint64 {
	m := map[string]map[string]uint64{}
	for p := range n {
		c := map[string]uint64{}
		for i := range counters {
			c[fmt.Sprintf("rx_%d", i)] = 1
		}
		m[fmt.Sprint(p)] = c
	}
	return m
}

// rxCPUs is the check of an interval whose streams received on cpus.
func rxCPUs(cpus ...int) func() error {
	m := intervalOf(0, len(cpus), 0)
	for i := range cpus {
		m.Streams[i] = engine.StreamSample{ID: i, RxCPU: &cpus[i]}
	}
	return func() error { return m.check(len(cpus)) }
}

// TestTestWireNames: a request and a relay carry the test's fields by the
// names the protocol documents (docs/architecture.md, "A native test"):
// the engine's parameters by their own JSON names, the times in integer
// milliseconds only, and they read back into the same parameters.
func TestTestWireNames(t *testing.T) {
	p := engine.Params{Streams: 3, Duration: 2500 * time.Millisecond, Omit: 250 * time.Millisecond, Interval: 500 * time.Millisecond,
		Direction: result.Bidir, Window: 1 << 20, Congestion: "bbr", FQRate: 1e9, ZeroCopy: result.MsgZeroCopy}
	req, err := json.Marshal(newRequest(p, []int{1, 2}))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(req, &got); err != nil {
		t.Fatal(err)
	}
	want := []string{"congestion", "direction", "duration_ms", "fq_rate", "interval_ms", "omit_ms", "server_cpus", "streams", "type", "window", "zerocopy"}
	if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, want) {
		t.Errorf("request keys %v\nwant %v", keys, want)
	}
	if got["duration_ms"] != 2500.0 || got["omit_ms"] != 250.0 || got["interval_ms"] != 500.0 || got["fq_rate"] != 1e9 {
		t.Errorf("request %s", req)
	}
	var back requestMsg
	if err := json.Unmarshal(req, &back); err != nil || back.params() != p || !slices.Equal(back.ServerCPUs, []int{1, 2}) {
		t.Errorf("read back %+v (%v), want %+v", back.params(), err, p)
	}
	rel, err := json.Marshal(relayMsg{Type: msgRelay, Peer: "198.18.0.2:5301", testWire: wireTest(p)})
	if err != nil {
		t.Fatal(err)
	}
	var r relayMsg
	if err := json.Unmarshal(rel, &r); err != nil || r.request().params() != p || r.Peer != "198.18.0.2:5301" {
		t.Errorf("relay read back %+v (%v), want %+v", r.request().params(), err, p)
	}
}
