package result

import (
	"time"

	"github.com/linerate/linerate/internal/latency"
	"github.com/linerate/linerate/internal/telemetry"
)

// Schema names the JSON document of one run (docs/architecture.md, "JSON
// documents").
const Schema = "linerate.bench/v1"

// Result is one run, in the shape iperf3 users know. Field names follow
// the linerate.bench/v1 contract.
type Result struct {
	Schema    string     `json:"schema"`
	RunID     int64      `json:"run_id"` // Unix milliseconds of the start, until a store numbers runs
	Engine    string     `json:"engine"` // "native"
	Start     Start      `json:"start"`
	Intervals []Interval `json:"intervals"`
	End       End        `json:"end"`
	// Error says why a run ended before its length (its path or its peer
	// went away): its intervals are those measured until then, its End
	// what the client measured. "" for a run that ran to its end. A
	// failed run is shown as failed and never counted in a median.
	Error string `json:"error,omitempty"`

	// Label is the --label the run was made under.
	Label string `json:"label,omitempty"`
	// Tool is the external program that moved the bytes; nil for the
	// native engine.
	Tool *Tool `json:"tool,omitempty"`
	// Perftest is what a perftest tool reported (latencies, message rate)
	// beyond the bandwidth in End.
	Perftest *Perftest `json:"perftest,omitempty"`
	// Fairness is set when the run's streams differed by more than 25%:
	// which streams, and the receive CPUs that explain it.
	Fairness *Fairness `json:"fairness,omitempty"`

	// Raw is an external tool's output as it printed it: kept in the
	// results database beside the document, never in it.
	Raw string `json:"-"`
}

// Start is what the test was and where it ran.
type Start struct {
	Peer        string       `json:"peer"`
	Port        int          `json:"port"`
	Timestamp   time.Time    `json:"started_at"` // start.timestamp is iperf3's {time, timesecs}
	Streams     int          `json:"streams"`
	DurationS   float64      `json:"duration_s"`
	OmitS       float64      `json:"omit_s"`
	IntervalS   float64      `json:"interval_s"`
	Direction   Direction    `json:"direction"`
	Placement   Placement    `json:"placement"`
	Window      Window       `json:"window"`
	Congestion  string       `json:"congestion,omitempty"`
	FQRate      uint64       `json:"fq_rate_bps,omitempty"`
	ZeroCopy    ZeroCopy     `json:"zerocopy,omitempty"`
	Connections []Connection `json:"connections"`
	Client      HostInfo     `json:"client"`
	Server      HostInfo     `json:"server"`
	// Notes are facts that could not be read, and limits the kernel
	// imposed, in plain sentences.
	Notes []string `json:"notes,omitempty"`

	// Protocol is "udp" for a UDP run, "" for TCP, and Bitrate the rate a
	// UDP sender paces to (bits/s, 0 unpaced). BlockSize is the bytes one
	// write sends; MSS the data sockets' TCP_MAXSEG, read on the client's
	// first stream once connected; SenderCongestion and
	// ReceiverCongestion the sending and receiving sockets'
	// TCP_CONGESTION (0 and "" when not known).
	Protocol           string `json:"protocol,omitempty"`
	Bitrate            uint64 `json:"bitrate_bps,omitempty"`
	BlockSize          int    `json:"block_size,omitempty"`
	MSS                int    `json:"tcp_mss,omitempty"`
	SenderCongestion   string `json:"sender_congestion,omitempty"`
	ReceiverCongestion string `json:"receiver_congestion,omitempty"`
	// LoadBefore is each end's per-CPU busy share (%) just before the run
	// (telemetry.LookTime), as automatic placement saw it: all of it
	// other work, the test had not started.
	LoadBefore HostLoads `json:"load_before,omitzero"`

	// Mode is "rr" or "crr" for a transaction run, "" for streams;
	// Threads how many threads each end ran the flows on (0: one per
	// stream); Size a transaction's request and response bytes and
	// Depth the requests a flow keeps outstanding; SkipRxCopy how the
	// receivers were asked to take their data (end.rx_copy says what
	// they did).
	Mode       Mode       `json:"mode,omitempty"`
	Threads    int        `json:"threads,omitempty"`
	Size       int        `json:"size,omitempty"`
	Depth      int        `json:"depth,omitempty"`
	SkipRxCopy SkipRxCopy `json:"skip_rx_copy,omitempty"`
}

// HostLoads is a per-CPU share (%) of each end, keyed by CPU number.
type HostLoads struct {
	Client map[string]float64 `json:"client,omitempty"`
	Server map[string]float64 `json:"server,omitempty"`
}

// Placement is where the stream threads ran: the CPUs of each end, in
// first-use order.
type Placement struct {
	Client []int `json:"client"`
	Server []int `json:"server"`
	// Source says who chose: "user" (-A), "auto", or "user+auto" when -A
	// named one end only.
	Source string `json:"source"`
}

// Window is the socket buffer sizes asked for and granted.
type Window struct {
	Requested int `json:"requested"` // bytes; 0 when autotuning was left on
	// Granted is the smallest buffer on the data path (the senders'
	// SO_SNDBUF, the receivers' SO_RCVBUF) as getsockopt reports it at the
	// start (Linux doubles the value asked for; autotuning grows it later).
	Granted int      `json:"granted"`
	Client  SockBufs `json:"client"`
	Server  SockBufs `json:"server"`
}

// Connection is one stream's data connection.
type Connection struct {
	ID        int    `json:"id"`
	Sender    string `json:"sender"` // "client" or "server"
	ClientCPU int    `json:"client_cpu"`
	ServerCPU int    `json:"server_cpu"`

	// Local and Remote are the client's address and the agent's
	// ("host:port").
	Local  string `json:"local,omitempty"`
	Remote string `json:"remote,omitempty"`
}

// Interval is one report period.
type Interval struct {
	Start   float64 `json:"start"` // seconds; warm-up intervals count from the start, measured ones from the end of the warm-up
	End     float64 `json:"end"`
	Omitted bool    `json:"omitted"`
	// LoadOnly marks an interval of a tool that reports its figures only
	// at its end (netperf): it carries both hosts' load, and its bytes
	// are unknown, not zero.
	LoadOnly bool             `json:"load_only,omitempty"`
	Streams  []StreamInterval `json:"streams"`
	Sum      Sum              `json:"sum"`
	CPU      HostCPUs         `json:"cpu"`
	// CPUTotal is each host's load over all its CPUs.
	CPUTotal HostTotals `json:"cpu_total"`
	// CPUDomains, on a host of many CPUs, totals by L3 domain (or NUMA
	// node) the CPUs whose samples CPU leaves out: those the test did not
	// use and that stayed idle (docs/architecture.md, "Stored telemetry").
	CPUDomains *HostDomains `json:"cpu_domains,omitempty"`
	// Latency is a native ping-pong's round trips over the interval: those
	// sent in it, in every phase.
	Latency *IntervalLatency `json:"latency,omitempty"`
	// Transactions is a transaction run's (rr, crr) interval.
	Transactions *IntervalTransactions `json:"transactions,omitempty"`
}

// IntervalLatency is the round-trip distribution of one interval. Its
// percentiles follow the run's rule (end.latency): one a too small
// sample cannot give is null. The run's drops and reordering are counted
// at its end only.
type IntervalLatency struct {
	Samples int64       `json:"samples"`
	RTTUs   latency.RTT `json:"rtt_us"`
}

// HostDomains is the folded CPUs of each end, by domain.
type HostDomains struct {
	Client []DomainSample `json:"client,omitempty"`
	Server []DomainSample `json:"server,omitempty"`
}

// DomainSample is the load of the folded CPUs of one domain over an
// interval: percentages are their mean, counts their sum.
type DomainSample struct {
	Domain string `json:"domain"` // "l3:1", "numa:0" or "rest"
	CPUs   string `json:"cpus"`   // the folded CPUs, as a CPU list ("8-15,24-31")
	CPUSample
}

// StreamInterval is one stream over one interval. Bytes are those the
// client moved (sent or received); the TCP fields come from the sending
// end's socket (TCP_INFO).
type StreamInterval struct {
	ID            int     `json:"id"`
	Sender        string  `json:"sent_by"` // "client" or "server"
	Bytes         uint64  `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"`
	// PeerBytes is the agent's count of the same stream over its own
	// interval (the receiver's when the client sends), absent when its
	// sample did not arrive or the driver has no agent.
	PeerBytes       *uint64 `json:"peer_bytes,omitempty"`
	RTTus           uint32  `json:"rtt_us"`
	RTTVarUs        uint32  `json:"rttvar_us"`
	CwndBytes       uint64  `json:"cwnd_bytes"`
	Retransmits     uint64  `json:"retransmits"`
	DeliveryRateBps float64 `json:"delivery_rate_bps"`
	// RxCPU is the CPU whose softirq served the stream's receiving socket
	// at the end of the interval (SO_INCOMING_CPU); absent when unknown.
	RxCPU *int `json:"rx_cpu,omitempty"`
	// TCP is TCP's own account of the stream over the interval
	// (TCPStats), from the native engine; absent where TCP_INFO was not
	// read.
	TCP *TCPStats `json:"tcp,omitempty"`
	// Transactions is what the flow completed over the interval in a
	// transaction run (by the client's count).
	Transactions uint64 `json:"transactions,omitempty"`

	Packets uint64 `json:"packets,omitempty"` // UDP datagrams sent
	// UDPInterval, in a UDP run, is what the stream's receiver counted
	// over its own interval, in end.udp's names; absent for TCP, and
	// when the receiver's count did not arrive.
	*UDPInterval
}

// Sum totals the streams of an interval, or of a run.
type Sum struct {
	Bytes         uint64  `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"`
	Retransmits   uint64  `json:"retransmits"`
}

// Received totals what the receivers got, each over its own measured
// window (from its own warm-up mark to its own last sample).
type Received struct {
	Bytes         uint64  `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"`
	// Seconds is the receiver's window (the agent's with --bidir, whose
	// client-side half has the client's window); 0 when the driver
	// reports none. Not "seconds": in iperf3's document that is the
	// client's measured time.
	Seconds float64 `json:"receiver_seconds,omitempty"`
}

// HostCPUs is the per-CPU load of each end, keyed by CPU number.
type HostCPUs struct {
	Client map[string]CPUSample `json:"client"`
	Server map[string]CPUSample `json:"server"`
}

// HostTotals is the whole-host load of each end.
type HostTotals struct {
	Client CPUSample  `json:"client"`
	Server *CPUSample `json:"server"` // nil when the agent's sample did not arrive
}

// End is the measured part of the run.
type End struct {
	Seconds     float64     `json:"seconds"`
	SumSent     Sum         `json:"sum_sent"`
	SumReceived Received    `json:"sum_received"`
	Streams     []StreamEnd `json:"streams"`
	CPU         EndCPU      `json:"cpu"`
	ZeroCopy    *ZCReport   `json:"zerocopy,omitempty"`
	Errors      []string    `json:"errors,omitempty"`
	// Foreign is each end's CPU time on other work than the test over its
	// measured window; an end is absent where it is unknown.
	Foreign HostForeign `json:"foreign,omitzero"`
	// Unread lists, per end, the telemetry sources that could not be read
	// (telemetry.SrcStat, SrcSoftirqs, SrcInterrupts) and why: what they
	// measure is unknown for the run, not zero.
	Unread HostUnread `json:"telemetry_unread,omitzero"`

	Sum *UDPStream `json:"sum,omitempty"` // a UDP run's streams together, as iperf3 -u; nil for TCP
	// Latency is a ping-pong run's (bench --latency); UDP what the native
	// engine adds to a UDP run's Sum (bench --udp): packets per second,
	// what the receiver counted, the target and how datagrams were sent.
	// Nil otherwise.
	Latency *Latency `json:"latency,omitempty"`
	UDP     *UDPSum  `json:"udp,omitempty"`
	// NICCounters is how both ends' NIC counters grew during the run;
	// nil when neither was read.
	NICCounters *NICCounters `json:"nic_counters,omitempty"`
	// Transactions is a transaction run's (rr, crr); nil otherwise.
	Transactions *Transactions `json:"transactions,omitempty"`
	// RxCopy is what the receivers' copy cost, and what they did when
	// asked to skip it; the native engine's stream runs.
	RxCopy *RxCopyReport `json:"rx_copy,omitempty"`
	// RDMA is an RDMA run's (perftest): both ends' RDMA counters and the
	// result against the port and its PCIe link; nil otherwise.
	RDMA *RDMA `json:"rdma,omitempty"`
	// Gap is where the missing gigabits went (Gap); nil where the run
	// has no TCP account (another engine, UDP, a transaction run).
	Gap *Gap `json:"gap,omitempty"`
}

// HostForeign is the other load on each end; Notes say why an end's is
// unknown.
type HostForeign struct {
	Client *Foreign `json:"client,omitempty"`
	Server *Foreign `json:"server,omitempty"`
	Notes  []string `json:"notes,omitempty"`
}

// Foreign is one end's other load over a run, and Proc one other process
// in it (package telemetry measures them; the names are here because they
// are part of the document).
type (
	Foreign = telemetry.Foreign
	Proc    = telemetry.Proc
)

// HostUnread is the unreadable telemetry sources of each end.
type HostUnread struct {
	Client map[string]string `json:"client,omitempty"`
	Server map[string]string `json:"server,omitempty"`
}

// StreamEnd is one stream's bytes after the warm-up: the sender's count
// over the sender's window, the receiver's over the receiver's own window
// (its per-interval counts from its warm-up mark to its last sample, by
// its own clock). Bytes queued in buffers and in flight at either edge
// make the two differ: the receiver's window lags the sender's.
type StreamEnd struct {
	ID            int    `json:"id"`
	Sender        string `json:"sent_by"`
	SentBytes     uint64 `json:"sent_bytes"`
	ReceivedBytes uint64 `json:"received_bytes"`
	Retransmits   uint64 `json:"retransmits"`

	UDP *UDPStream `json:"udp,omitempty"` // what the receiver counted of a UDP stream
}

// EndCPU is the CPU time each end's process used while measuring
// (getrusage: user + system; softirq work done on other threads' time is
// in the per-CPU samples, not here).
type EndCPU struct {
	ClientSeconds float64 `json:"client_seconds"`
	ServerSeconds float64 `json:"server_seconds"`

	// The same split into user and system time (0 when not reported).
	ClientUserSeconds   float64 `json:"client_user_seconds,omitempty"`
	ClientSystemSeconds float64 `json:"client_system_seconds,omitempty"`
	ServerUserSeconds   float64 `json:"server_user_seconds,omitempty"`
	ServerSystemSeconds float64 `json:"server_system_seconds,omitempty"`
}

// ZCReport says what zero copy did: for MSG_ZEROCOPY, how many sends the
// kernel completed and how many of those it copied after all.
type ZCReport struct {
	Method      ZeroCopy `json:"method"`
	Sends       uint64   `json:"sends,omitempty"`
	Completions uint64   `json:"completions,omitempty"`
	Copied      uint64   `json:"copied,omitempty"`
}

// SockBufs are the socket buffer sizes one end's data sockets got, as
// getsockopt reports them (Linux doubles what was asked, for its own
// bookkeeping), and the sysctls that capped them, if any.
type SockBufs struct {
	Sndbuf   int      `json:"sndbuf"`
	Rcvbuf   int      `json:"rcvbuf"`
	CappedBy []string `json:"capped_by,omitempty"` // "net.core.wmem_max=212992"
}

// CPUSample is the load of one CPU, or of a whole host, over an interval
// (package telemetry samples it; the name is here because it is part of
// the document).
type CPUSample = telemetry.CPUSample

// Event is one step of a run as it happens; it marshals to the
// --json-stream line {"event": "start"|"interval"|"end"|"error", "data": …}.
type Event struct {
	Event string `json:"event"`
	Data  any    `json:"data"` // *Start, *Interval, *End, or an error string
}
