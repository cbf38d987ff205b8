package bench

import (
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/telemetry"
)

// attach puts this host's per-CPU samples on a run's intervals, by
// position: the sampler and the tool both start their clocks at the
// tool's start (the tool's first interval begins when its connections are
// up, a few milliseconds later). With both ends on one machine (a lab)
// the same samples describe the server.
func attach(r *result.Result, samples []telemetry.Sample, sameMachine bool) {
	for i := range r.Intervals {
		if i >= len(samples) {
			break
		}
		iv := &r.Intervals[i]
		iv.CPU.Client = samples[i].PerCPU
		iv.CPUTotal.Client = samples[i].Total
		if sameMachine {
			setServer(iv, samples[i])
		}
	}
}

// attachUnread records the telemetry sources this host could not read
// (telemetry.Sampler.Unread): unknown for the run, not zero. With both
// ends on one machine they are the server's too.
func attachUnread(r *result.Result, unread map[string]string, sameMachine bool) {
	r.End.Unread.Client = unread
	if sameMachine {
		r.End.Unread.Server = unread
	}
}

// sampledServer is a tool server that sampled its own host (one the agent
// started on the peer).
type sampledServer interface {
	Samples() []telemetry.Sample
}

// attachServer puts the peer's samples on a run's intervals when its
// server sampled them; the agent's clock starts when it starts the tool,
// a moment before the client's.
func attachServer(r *result.Result, srv ServerProc) {
	ss, ok := srv.(sampledServer)
	if !ok {
		return
	}
	samples := ss.Samples()
	for i := range r.Intervals {
		if i >= len(samples) {
			break
		}
		setServer(&r.Intervals[i], samples[i])
	}
}

func setServer(iv *result.Interval, s telemetry.Sample) {
	iv.CPU.Server = s.PerCPU
	total := s.Total
	iv.CPUTotal.Server = &total
}
