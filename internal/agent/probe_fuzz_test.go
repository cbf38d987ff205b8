package agent

import (
	"math"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/engine"
)

// FuzzProbe feeds the agent's probe decoder and bounds arbitrary bodies:
// what passes validate must be within the engine's bounds, with no
// overflowed duration; the client's readers of probe_accept and
// probe_end must not panic.
func FuzzProbe(f *testing.F) {
	for _, s := range []string{
		`{"type":"probe","kind":"pingpong","size":64,"rate":1000,"duration_ms":1000,"interval_ms":1000,"server_cpu":-1}`,
		`{"type":"probe","kind":"pingpong","udp":true,"size":14,"rate":0,"duration_ms":1000,"omit_ms":500,"cooldown_ms":100,"interval_ms":100,"server_cpu":3}`,
		`{"type":"probe","kind":"udp","size":1472,"rate":1e9,"duration_ms":1000,"interval_ms":1000,"server_cpu":-1}`,
		`{"type":"probe","kind":"udp","size":65508,"rate":1e300,"duration_ms":9223372036854775807,"interval_ms":1,"server_cpu":-7}`,
		`{"type":"probe","kind":"pingpong","size":64,"rate":-1,"duration_ms":1000,"omit_ms":9300000000000,"cooldown_ms":99999999,"interval_ms":100}`,
		`{"type":"probe_accept","port":5301,"test_id":"AAAAAAAAAAAAAAAAAAAAAA==","cpu":-1}`,
		`{"type":"probe_end","echoed":10,"measured":{"packets":1,"bytes":2,"lost":-3,"out_of_order":0,"jitter_ms":0.1},"cpu_seconds":0.5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		typ, err := messageType(body)
		if err != nil {
			return
		}
		decode(typ, body, msgProbeAccept, (*probeAcceptMsg).check)
		decode(typ, body, msgProbeEnd, (*probeEndMsg).check)
		m, err := decode(typ, body, msgProbe, func(m *probeMsg) error { return m.validate(time.Hour) })
		if err != nil {
			return
		}
		switch {
		case m.Kind == ProbePingPong && (m.Size < engine.MinMessage || m.Size > engine.MaxMessage):
			t.Fatalf("message size %d passed", m.Size)
		case m.Kind == ProbeUDP && (m.Size < engine.MinDatagram || m.Size > engine.MaxDatagram):
			t.Fatalf("datagram length %d passed", m.Size)
		case m.Rate < 0 || math.IsNaN(m.Rate) || math.IsInf(m.Rate, 0) || m.Rate > MaxUDPRate:
			t.Fatalf("rate %g passed", m.Rate)
		case m.length() < minDuration || m.length() > 2*time.Hour+maxCooldown:
			t.Fatalf("length %s passed", m.length())
		case m.IntervalMS < MinInterval.Milliseconds() || m.IntervalMS > MaxInterval.Milliseconds():
			t.Fatalf("interval %d ms passed", m.IntervalMS)
		case m.ServerCPU < -1 || m.ServerCPU >= maxCPUs:
			t.Fatalf("server CPU %d passed", m.ServerCPU)
		}
	})
}
