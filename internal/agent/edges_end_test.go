package agent

import (
	"fmt"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/telemetry"
)

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

		{"interval: RX CPU 0 and the highest", rxCPUs(0, maxCPUs-1), ""},
		{"interval: RX CPU -1", rxCPUs(-1), "RX CPU -1"},
		{"interval: RX CPU past the highest", rxCPUs(maxCPUs), "RX CPU 65536"},
	}
	for _, tt := range tests {
		checkErr(t, tt.name, tt.check(), tt.want)
	}
}

// rxCPUs is the check of an interval whose streams received on cpus.
func rxCPUs(cpus ...int) func() error {
	m := intervalOf(0, len(cpus), 0)
	for i := range cpus {
		m.Streams[i] = engine.StreamSample{ID: i, RxCPU: &cpus[i]}
	}
	return func() error { return m.check(len(cpus)) }
}
