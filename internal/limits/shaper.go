package limits

import "fmt"

// SkbOverhead is what tbf, htb and fq count of a packet beyond its IP
// packet: the 14-byte MAC header. They charge each packet its length as
// the qdisc sees it (the kernel's qdisc_pkt_len): the IP packet with the
// MAC header the stack has already pushed, but not the FCS the NIC
// appends, nor the preamble, SFD and inter-frame gap of the wire. A GSO
// super-packet is charged as the segments it will become: the kernel adds
// every further segment's MAC, IP and TCP headers when it enqueues it.
// An 802.1Q tag the NIC inserts (tx-vlan offload) is not counted either.
const SkbOverhead = macHeader

// Shaper is a qdisc that paces an interface's egress at a rate of its own
// (tbf, htb, fq's maxrate, cake): a rate it charges its own way, so it
// carries a different share of TCP payload than a wire of the same rate.
type Shaper struct {
	// Rate is the rate the shaper allows; zero or negative means unknown.
	Rate Gbps
	// Overhead is what the shaper counts of each packet beyond the IP
	// packet: SkbOverhead for tbf, htb and fq; cake's configured overhead
	// when it has one (cake then counts the IP packet plus that overhead).
	Overhead int
	// Detail says what the shaper is ("tbf qdisc shaped to 1 Gbit/s").
	Detail string
}

// Counted returns the bytes the shaper counts for a full-sized segment of
// frame f: its IP packet (the MTU) plus Overhead, never below the IP
// packet.
func (s Shaper) Counted(f Frame) int { return f.MTU + max(s.Overhead, 0) }

// Goodput is the TCP payload rate the shaper lets through with full-sized
// segments: Rate × Payload / Counted. A tbf of 10 Gbit/s at MTU 9000
// (IPv4 + timestamps) carries 10 × 8948/9014 = 9.93 Gbit/s, where a
// 10 Gbit/s wire carries 10 × 8948/9038 = 9.90; at MTU 1500 1448/1514 =
// 9.56 against 1448/1538 = 9.41. An unknown rate gives 0.
func (s Shaper) Goodput(f Frame) Gbps {
	if !s.Rate.known() || f.MTU <= 0 {
		return 0
	}
	return Gbps(float64(s.Rate) * float64(f.Payload) / float64(s.Counted(f)))
}

// share writes how much of what the shaper counts is payload, for a
// chain's detail (short: the report draws it under a bar): "8948/9014 of
// the shaped rate (packet + MAC header)".
func (s Shaper) share(f Frame) string {
	how := fmt.Sprintf("IP packet + %d bytes", max(s.Overhead, 0))
	if s.Overhead == SkbOverhead {
		how = "packet + MAC header"
	}
	return fmt.Sprintf("%d/%d of the shaped rate (%s)", f.Payload, s.Counted(f), how)
}
