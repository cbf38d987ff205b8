package mesh

import (
	"time"
)

// Schema names the mesh's status document (docs/schema/mesh-v1.schema.json).
const Schema = "linerate.mesh/v1"

// Doc is `linerate mesh status --json`: the mesh's hosts, every directed
// pair's figures and state, and the hosts and paths suspected.
type Doc struct {
	Schema string `json:"schema"`
	// Name is the mesh's name (its state directory's).
	Name string `json:"name"`
	// Source is how its agents were started: lab, hosts, slurm or k8s.
	Source string `json:"source"`
	// At is when the status was taken; Started when the mesh came up.
	At      time.Time `json:"at"`
	Started time.Time `json:"started"`
	// Settings are the agents' probing settings.
	Settings Settings     `json:"settings"`
	Hosts    []HostStatus `json:"hosts"`
	Pairs    []PairStatus `json:"pairs"`
	Suspects []Suspect    `json:"suspects"`
	// Verdict is one sentence: nothing suspected, or who is.
	Verdict string `json:"verdict"`
}

// Settings are how the agents probe.
type Settings struct {
	// ProbeRate is ping-pongs per second per peer.
	ProbeRate float64 `json:"probe_rate"`
	// Flows is how many source ports (5-tuples) the probes rotate over.
	Flows int `json:"flows"`
	// ThroughputEveryS is how often each pair's throughput is tested, s;
	// 0: never.
	ThroughputEveryS float64 `json:"throughput_every_s"`
	// WindowS is the span the pairs' figures cover, s.
	WindowS float64 `json:"window_s"`
}

// HostStatus is one host of the mesh and its own evidence.
type HostStatus struct {
	Name    string `json:"name"`
	Address string `json:"address"`
	// Up is false when its agent did not answer or is gone; Error says
	// why.
	Up    bool   `json:"up"`
	Error string `json:"error,omitempty"`
	// AgentCPUPct is the share of one CPU its agent used over the last
	// minute; AgentRSSBytes its resident memory.
	AgentCPUPct   *float64 `json:"agent_cpu_pct"`
	AgentRSSBytes *uint64  `json:"agent_rss_bytes"`
	// Evidence is what the host's own record says over the last minute:
	// its NIC's counters, its module, its CPUs.
	Evidence *HostEvidence `json:"evidence"`
}

// RTT is a pair's round trips, µs.
type RTT struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// PairStatus is one directed pair: Src probes Dst.
type PairStatus struct {
	Src string `json:"src"`
	Dst string `json:"dst"`
	// RTTUS, Loss and Probes cover the last WindowS; RTTUS is nil
	// without a reply, Loss without a probe whose fate is known. Loss is
	// Src→Dst's own: probes that never reached Dst, by Dst's count.
	RTTUS  *RTT     `json:"rtt_us"`
	Loss   *float64 `json:"loss"`
	Probes int      `json:"probes"`
	// GoodputGbps is the last conclusive throughput test; nil before one.
	GoodputGbps *float64 `json:"goodput_gbps"`
	State       State    `json:"state"`
	// Since is when the pair entered its state.
	Since time.Time `json:"since"`
	// Why says what degraded it; Inconclusive what would have, and why
	// its own record does not let it count.
	Why          string `json:"why,omitempty"`
	Inconclusive string `json:"inconclusive,omitempty"`
}

// Suspect kinds and sides, as the fleet's outliers name them: a path
// "A-B" of side send is A→B, receive B→A.
const (
	KindHost    = "host"
	KindPath    = "path"
	SideSend    = "send"
	SideReceive = "receive"
	SideBoth    = "both"
)

// Suspect is a host or a path the mesh's pairs point at.
type Suspect struct {
	Kind  string    `json:"kind"`
	Name  string    `json:"name"`
	Side  string    `json:"side"`
	Since time.Time `json:"since"`
	// Hosts are a path's two hosts, in the order of its name.
	Hosts []string `json:"hosts,omitempty"`
	// Evidence says what the pairs show and what the host's own record
	// says, one sentence each.
	Evidence []string `json:"evidence"`
}

// HostEvidence is a host's own record over the last minute.
type HostEvidence struct {
	// Interface carries the mesh's traffic.
	Interface string `json:"interface,omitempty"`
	// NIC is how the interface's counters grew, by cause (rx_no_buffer,
	// qdisc_drops, phy_errors, fec_corrected, …: internal/nicstats); a
	// cause the NIC does not count is absent. NICNotRead says why none
	// were read.
	NIC        map[string]uint64 `json:"nic,omitempty"`
	NICNotRead string            `json:"nic_not_read,omitempty"`
	// Module lists the plugged module's alarm and warning flags that are
	// set ("lane 3: rx_power_low_alarm"); ModuleNotRead why it was not
	// read (no module, a veth).
	Module        []string `json:"module,omitempty"`
	ModuleNotRead string   `json:"module_not_read,omitempty"`
	// UDPBufferDrops counts datagrams the host dropped for want of
	// socket buffer (Udp RcvbufErrors).
	UDPBufferDrops uint64 `json:"udp_buffer_drops"`
	// CPUBusyPct is the mean busy share of the host's CPUs from other
	// work than the agent; nil when unknown.
	CPUBusyPct *float64 `json:"cpu_busy_pct"`
	// Top are the processes that used the most CPU time.
	Top []ProcUse `json:"top,omitempty"`
	// LateMS is the agent's longest wake-up delay: a measure of its CPU's
	// contention.
	LateMS float64 `json:"late_ms"`
	// SpanS is the span the evidence covers, s.
	SpanS float64 `json:"span_s"`
}

// ProcUse is one process's CPU use over the evidence's span.
type ProcUse struct {
	PID    int     `json:"pid"`
	Name   string  `json:"name"`
	CPUPct float64 `json:"cpu_pct"`
}

// Figures are what one agent exports as metrics: its pairs out, and the
// suspects as its view of the whole mesh shows them.
type Figures struct {
	Self     string
	Peers    []PeerFigures
	Suspects []Suspect
}

// PeerFigures are one pair out of the agent, over the last WindowS.
type PeerFigures struct {
	Peer  string
	State State
	// RTTCount round trips came back; RTTSum is their sum, P50 and P99
	// their quantiles, seconds.
	RTTCount      uint64
	RTTSum        float64
	P50, P99      float64
	Loss          *float64
	GoodputBytesS *float64
}
