package result

import "github.com/linerate/linerate/internal/latency"

// Latency is end.latency of a ping-pong run (bench --latency): the
// round-trip distribution (package latency) and what could have
// disturbed it.
type Latency struct {
	latency.Summary
	// Protocol is "tcp" (TCP_NODELAY) or "udp"; Size the message bytes.
	Protocol string `json:"protocol"`
	Size     int    `json:"size"`
	// Sent is the requests sent in the measured window; RatePerSecond the
	// round trips per second achieved (Sent over the window), beside
	// TargetRate, asked for (0: as fast as replies come).
	Sent          int64   `json:"sent"`
	RatePerSecond float64 `json:"rate_per_s"`
	TargetRate    float64 `json:"target_rate_per_s"`
	// Duplicated counts replies that came twice (UDP).
	Duplicated int64 `json:"duplicated,omitempty"`
	// GC*: garbage collections during the run (the engine turns the
	// collector off for it; a collection can still run), their total
	// stop-the-world time, and how many samples one of them overlapped.
	GCCycles  int64   `json:"gc_cycles"`
	GCPauseUs float64 `json:"gc_pause_us"`
	GCTouched int64   `json:"gc_touched_samples"`
	// Stalled says the peer stopped answering and the run ended with
	// what was measured before.
	Stalled bool `json:"stalled,omitempty"`
}

// UDPInterval is what a UDP stream's receiver counted over one
// interval of its own clock, as iperf3 -u's server-side intervals:
// datagrams received, those missing from the sequence (a gap counts its
// size, a datagram arriving late takes one back, so an interval may
// give back one an earlier one counted), out of order, and the RFC 3550
// jitter estimate at the interval's end (a running estimate, as iperf3
// reports it). The measured intervals' counts add up to end.udp's.
type UDPInterval struct {
	ReceivedPackets uint64 `json:"received_packets"`
	LostPackets     int64  `json:"lost_packets"`
	// LostPercent is LostPackets of the datagrams the interval accounts
	// for (received and lost), as iperf3's "Lost/Total".
	LostPercent float64 `json:"lost_percent"`
	OutOfOrder  uint64  `json:"out_of_order"`
	JitterMS    float64 `json:"jitter_ms"`
}

// NewUDPInterval is the interval of received, lost and out-of-order
// datagrams with jitter ms, its LostPercent computed.
func NewUDPInterval(received uint64, lost int64, ooo uint64, jitterMS float64) *UDPInterval {
	u := &UDPInterval{ReceivedPackets: received, LostPackets: lost, OutOfOrder: ooo, JitterMS: jitterMS}
	if total := int64(received) + lost; total > 0 {
		u.LostPercent = 100 * float64(lost) / float64(total)
	}
	return u
}

// UDPSum is end.sum of a UDP run (bench --udp -b RATE), in the shape of
// iperf3 -u's: what the sender sent in the measured window and what of
// it the receiver got.
type UDPSum struct {
	Bytes         uint64  `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"` // sent, as iperf3 -u's sender line
	Packets       uint64  `json:"packets"`         // sent
	LostPackets   int64   `json:"lost_packets"`
	LostPercent   float64 `json:"lost_percent"`
	JitterMS      float64 `json:"jitter_ms"`
	OutOfOrder    uint64  `json:"out_of_order"`
	// PacketsPerSecond is Packets over the window; Received* what the
	// receiver counted.
	PacketsPerSecond      float64 `json:"packets_per_second"`
	ReceivedPackets       uint64  `json:"received_packets"`
	ReceivedBitsPerSecond float64 `json:"received_bits_per_second"`
	// TargetBitsPerSecond is -b (0: unlimited); Length the datagram
	// payload; Method how the sender handed datagrams to the kernel
	// (write, sendmmsg, gso).
	TargetBitsPerSecond float64 `json:"target_bits_per_second"`
	Length              int     `json:"length"`
	Method              string  `json:"method"`
	// ArrivalClock is the clock the receiver's jitter takes arrivals
	// from: ArrivalKernel, each datagram's kernel receive timestamp
	// (SO_TIMESTAMPNS), which leaves the receiving process's scheduling
	// out; ArrivalRead, when the process read it, as iperf3 -u does, which
	// counts it in. Absent when unknown (an older agent).
	ArrivalClock string `json:"arrival_clock,omitempty"`
}

// The receiver's clocks of arrival (UDPSum.ArrivalClock).
const (
	ArrivalKernel = "kernel"
	ArrivalRead   = "read"
)
