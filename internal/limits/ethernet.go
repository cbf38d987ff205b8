package limits

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Ethernet costs per frame, in bytes, beyond the IP packet (the MTU).
const (
	macHeader   = 14 // destination, source, EtherType
	fcs         = 4  // frame check sequence
	preambleSFD = 8  // preamble and start-of-frame delimiter
	minIFG      = 12 // minimum inter-frame gap
	vlanTag     = 4  // per 802.1Q tag
	minFrame    = 64 // smallest frame, MAC header to FCS; shorter ones are padded
	maxMTU      = 65535
)

// Stack is the protocol stack of the TCP segments on a link. The zero value
// is Linux's default: IPv4, TCP timestamps on, untagged frames.
type Stack struct {
	IPv6         bool // 40-byte IPv6 header instead of 20-byte IPv4
	NoTimestamps bool // net.ipv4.tcp_timestamps=0: no 12-byte TCP option
	VLANTags     int  // 802.1Q tags on the wire, 0 to 2
}

// String describes the stack: "IPv4 + timestamps", "IPv6, no timestamps,
// 1 VLAN tag".
func (s Stack) String() string {
	var b strings.Builder
	if s.IPv6 {
		b.WriteString("IPv6")
	} else {
		b.WriteString("IPv4")
	}
	if s.NoTimestamps {
		b.WriteString(", no timestamps")
	} else {
		b.WriteString(" + timestamps")
	}
	switch {
	case s.VLANTags == 1:
		b.WriteString(", 1 VLAN tag")
	case s.VLANTags > 1:
		fmt.Fprintf(&b, ", %d VLAN tags", s.VLANTags)
	}
	return b.String()
}

// headers returns the IP and TCP header bytes of one segment.
func (s Stack) headers() int {
	h := 20 + 20 // IPv4, TCP
	if s.IPv6 {
		h = 40 + 20
	}
	if !s.NoTimestamps {
		h += 12 // timestamp option, padded to 12 bytes
	}
	return h
}

func (s Stack) validate() error {
	if s.VLANTags < 0 || s.VLANTags > 2 {
		return fmt.Errorf("limits: %d VLAN tags; 0 to 2 are possible", s.VLANTags)
	}
	return nil
}

// wire returns the bytes one IP packet of the given size occupies on the
// wire: MAC header, VLAN tags and FCS (padded to the 64-byte minimum
// frame), preamble with SFD, and the inter-frame gap.
func wire(packet int, s Stack) int {
	frame := max(packet+macHeader+vlanTag*s.VLANTags+fcs, minFrame)
	return frame + preambleSFD + minIFG
}

// Frame is the wire cost of one full-sized TCP segment.
type Frame struct {
	MTU     int   // IP packet size
	Payload int   // TCP payload bytes (the MSS as sent, MTU minus headers)
	Wire    int   // bytes the frame occupies on the wire, gap included
	Stack   Stack // the stack the numbers are for
}

// TCPFrame computes the frame of a full-sized TCP segment at an MTU:
//
//	Payload = MTU − IP header (20 or 40) − TCP header (20) − timestamps (12)
//	Wire    = MTU + 14 MAC header + 4 FCS + 8 preamble/SFD + 12 gap [+ 4 per VLAN tag]
//
// 64b/66b coding and RS-FEC sit below the MAC, whose rate is the nominal
// line rate, so they cost nothing here. The MTU must be at least the
// protocol's minimum (68 for IPv4, 1280 for IPv6) and at most 65535, the
// largest IP packet without jumbograms.
func TCPFrame(mtu int, s Stack) (Frame, error) {
	if err := s.validate(); err != nil {
		return Frame{}, err
	}
	lo := 68
	if s.IPv6 {
		lo = 1280
	}
	if mtu < lo || mtu > maxMTU {
		return Frame{}, fmt.Errorf("limits: MTU %d outside %d..%d for %s", mtu, lo, maxMTU, s)
	}
	return Frame{MTU: mtu, Payload: mtu - s.headers(), Wire: wire(mtu, s), Stack: s}, nil
}

// Efficiency is the share of the line rate that is TCP payload:
// Payload/Wire (8948/9038 = 0.990 at MTU 9000, IPv4 + timestamps).
func (f Frame) Efficiency() float64 {
	if f.Wire <= 0 {
		return 0
	}
	return float64(f.Payload) / float64(f.Wire)
}

// Goodput is the TCP payload rate a link of the given line rate carries
// with full-sized segments: line × Payload/Wire. 100GbE gives 99.00 Gbit/s
// at MTU 9000 and 94.15 at 1500; iperf3 reports goodput, so 94.1 at MTU
// 1500 is line rate. An unknown (non-positive) line rate gives 0.
func (f Frame) Goodput(line Gbps) Gbps {
	if !line.known() {
		return 0
	}
	return Gbps(float64(line) * f.Efficiency())
}

// Transfer is what one full-sized segment moves across the NIC's PCIe
// link on receive: the frame as DMA'd (MTU + 14-byte MAC header; the NIC
// strips the FCS, and VLAN tags go into the completion with the default
// rx-fcs off and rxvlan on) and one completion entry.
func (f Frame) Transfer() Transfer {
	return Transfer{Payload: f.Payload, DMA: f.MTU + macHeader, Completions: 1}
}

// PacketRate is the number of packets per second a link carries when every
// IP packet is mtu bytes long: 8.13 Mpps at 100 Gbit/s and MTU 1500, 1.38
// Mpps at 9000, 148.8 Mpps for minimum-size frames (mtu 46 or less). Only
// s.VLANTags matters. An unknown line rate gives 0.
func PacketRate(line Gbps, mtu int, s Stack) (float64, error) {
	if err := s.validate(); err != nil {
		return 0, err
	}
	if mtu < 0 || mtu > maxMTU {
		return 0, fmt.Errorf("limits: packet size %d outside 0..%d", mtu, maxMTU)
	}
	if !line.known() {
		return 0, nil
	}
	return float64(line) * 1e9 / 8 / float64(wire(mtu, s)), nil
}

// BDP is the bandwidth-delay product in bytes, rounded up: the data in
// flight needed to keep a path of the given rate and round-trip time full
// (100 Gbit/s × 1 ms = 12.5 MB). A non-positive rate or RTT gives 0.
func BDP(rate Gbps, rtt time.Duration) int64 {
	if !rate.known() || rtt <= 0 {
		return 0
	}
	b := math.Ceil(float64(rate) * 1e9 / 8 * rtt.Seconds())
	if b >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(b)
}
