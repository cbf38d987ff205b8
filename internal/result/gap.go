package result

// Gap is end.gap (and a campaign point's points[].gap): where the
// gigabits between the path's ceiling and the run's goodput went, split
// into named causes (package gap owns the model; docs/architecture.md,
// "The gap").
//
// Shares are of the missing gigabits, 0..1, and sum with
// UnaccountedShare to 1. Where the ceiling is unknown (a lab's veth has
// no line rate) CeilingGbps and MissingGbps are null and the shares are
// of the run's time: what held the sending sockets back, and for how
// long; each share's Gbps is then null too.
type Gap struct {
	CeilingGbps  *float64 `json:"ceiling_gbps"`
	MeasuredGbps float64  `json:"measured_gbps"`
	MissingGbps  *float64 `json:"missing_gbps"`
	// Dominant is the cause of the largest share; "" when nothing was
	// accounted for.
	Dominant string     `json:"dominant"`
	Shares   []GapShare `json:"shares"`
	// UnaccountedShare is what no evidence named, said as it is.
	UnaccountedShare float64 `json:"unaccounted_share"`
	// Fix is the one thing that removes the dominant limit (doctor's
	// finding and tune's plan where one matches); "" when none is known.
	Fix string `json:"fix,omitempty"`
}

// GapShare is one named cause of a gap.
type GapShare struct {
	// Cause is one of sender_buffer, receiver_window, network,
	// path_rate, sender_cpu, receiver_cpu, nic_drops, pacing,
	// app_limited.
	Cause string   `json:"cause"`
	Share float64  `json:"share"`
	Gbps  *float64 `json:"gbps"`
	// Evidence is the figures that decided the cause, each a short
	// sentence.
	Evidence []string `json:"evidence"`
}
