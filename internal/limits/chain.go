package limits

import (
	"fmt"
	"strconv"
)

// Bottleneck names the stage that sets a NIC's TCP goodput ceiling.
type Bottleneck string

// The bottlenecks Chain reports.
//
// There is no "mtu" bottleneck: goodput at an MTU is the line rate times
// Payload/Wire, a cost levied on the line-rate stage rather than a ceiling
// of its own, so when it binds the bottleneck is the line rate and the TCP
// goodput stage's detail shows the MTU's share. A small MTU is reported by
// doctor's mtu.not_jumbo finding, not here.
const (
	// BottleneckLineRate: the wire, at the current MTU, binds.
	BottleneckLineRate Bottleneck = "line_rate"
	// BottleneckPCIe: the PCIe link carries less than the wire's goodput.
	BottleneckPCIe Bottleneck = "pcie"
	// BottleneckUnknown: the line rate or MTU is not known, so no ceiling is.
	BottleneckUnknown Bottleneck = "unknown"
)

// Port is what Chain needs to know about one NIC port.
type Port struct {
	// LineRate is the link's rate (speed_mbps / 1000); zero or negative
	// means unknown. Its goodput is the wire's (TCPFrame).
	LineRate Gbps
	// LineDetail describes the line rate ("100GbE link"); empty gives
	// "100GbE" from LineRate.
	LineDetail string
	// Shaper is a qdisc that paces the port's egress at a rate of its
	// own, counted its own way; nil when none does. Below LineRate (or
	// with LineRate unknown, as on a veth) it stands as the line-rate
	// stage.
	Shaper *Shaper
	// PCIe is the current link's bandwidth; nil when the kernel reports no
	// PCIe link (virtual NICs, most VMs).
	PCIe *PCIeBandwidth
	// MTU is the interface's MTU.
	MTU int
	// Stack is the protocol stack; the zero value is IPv4 + timestamps.
	// Doctor builds it from the host (net.ipv4.tcp_timestamps) and the
	// address family of the path.
	Stack Stack
}

// Stage is one link of the bottleneck chain.
type Stage struct {
	Stage  string `json:"stage"`  // "line rate", "PCIe" or "TCP goodput"
	Gbps   *Gbps  `json:"gbps"`   // null when unknown
	Detail string `json:"detail"` // how the number was reached
}

// Limits is a NIC's ceilings, in doctor JSON's "limits" object. Unknown
// rates are null, never guessed.
type Limits struct {
	LineRate *Gbps `json:"line_rate_gbps"`
	PCIe     *Gbps `json:"pcie_gbps"` // effective, after TLP overhead
	// TCPGoodput is the lower of the line rate's goodput at the MTU and
	// what PCIe carries of full-sized segments (Chain).
	TCPGoodput *Gbps `json:"tcp_goodput_gbps"`
	// LineGoodput is the line-rate stage's TCP goodput at the MTU, before
	// PCIe, counted as the stage counts (the wire's framing, or a
	// shaper's); LineGoodputDetail says how. Null when unknown.
	LineGoodput       *Gbps      `json:"line_goodput_gbps"`
	LineGoodputDetail string     `json:"line_goodput_detail,omitempty"`
	Bottleneck        Bottleneck `json:"bottleneck"`
	Chain             []Stage    `json:"chain"`
}

// Chain computes a port's ceilings: the line rate; the PCIe link's
// effective bandwidth; and TCP goodput, the lower of the line rate ×
// Payload/Wire at the MTU and what PCIe carries of full-sized segments
// (PCIeBandwidth.Goodput: the frame and its completion entry cross the bus
// with the payload), naming the stage that binds. A tie goes to the line
// rate.
//
// The PCIe stage shows effective bandwidth (TLP overhead only), the
// figure people compare with the line rate; a PCIe-bound port's TCP
// goodput is below it. A ConnectX-5 trained at x4 (the 100 GbE home lab): effective 28.60, TCP goodput at
// MTU 9000 28.08 (31.51 raw × 8948/10040).
//
// A shaper below the line rate (or on a link without one, a veth) stands
// as the line-rate stage, and the line's goodput is the lower of the
// wire's at the line rate and the shaper's (Shaper.Goodput: it counts the
// packet and its MAC header, not preamble, gap and FCS): a 1 Gbit/s tbf on
// a 25GbE port at MTU 9000 carries 1 × 8948/9014 = 0.9927 Gbit/s of TCP,
// where a 1 Gbit/s wire carries 1 × 8948/9038 = 0.9900.
//
// With the PCIe link not reported, the line rate binds as far as is known
// and the PCIe stage says "not reported". With the line rate or a valid MTU
// unknown, TCP goodput is unknown and so is the bottleneck: the PCIe
// number alone would claim a ceiling the wire may be far below.
func Chain(p Port) Limits {
	l := Limits{Bottleneck: BottleneckUnknown}

	line := Stage{Stage: "line rate", Detail: "not reported"}
	wire := p.LineRate.known()
	shaper := p.Shaper
	if shaper != nil && !shaper.Rate.known() {
		shaper = nil
	}
	switch {
	case shaper != nil && (!wire || shaper.Rate < p.LineRate):
		l.LineRate = shaper.Rate.ptr()
		line.Gbps = l.LineRate
		line.Detail = shaper.Detail
		if line.Detail == "" {
			line.Detail = "shaped to " + strconv.FormatFloat(float64(shaper.Rate), 'f', -1, 64) + " Gbit/s"
		}
	case wire:
		l.LineRate = p.LineRate.ptr()
		line.Gbps = l.LineRate
		line.Detail = p.LineDetail
		if line.Detail == "" {
			line.Detail = strconv.FormatFloat(float64(p.LineRate), 'f', -1, 64) + "GbE"
		}
	}

	pcie := Stage{Stage: "PCIe", Detail: "not reported"}
	if p.PCIe != nil && p.PCIe.Effective.known() {
		l.PCIe = p.PCIe.Effective.ptr()
		pcie.Gbps = l.PCIe
		pcie.Detail = p.PCIe.Detail()
	}

	tcp := Stage{Stage: "TCP goodput"}
	frame, err := TCPFrame(p.MTU, p.Stack)
	switch {
	case err != nil:
		tcp.Detail = fmt.Sprintf("MTU %d: not a usable MTU for %s", p.MTU, p.Stack)
	case l.LineRate == nil:
		tcp.Detail = fmt.Sprintf("MTU %d, %s: line rate not reported", frame.MTU, frame.Stack)
	default:
		var g Gbps
		var share string
		if wire {
			share = fmt.Sprintf("MTU %d, %s: %d/%d of line rate", frame.MTU, frame.Stack, frame.Payload, frame.Wire)
			g = frame.Goodput(p.LineRate)
		}
		if shaper != nil {
			if sg := shaper.Goodput(frame); !wire || sg < g {
				share = fmt.Sprintf("MTU %d, %s: %s", frame.MTU, frame.Stack, shaper.share(frame))
				g = sg
			}
		}
		l.LineGoodput, l.LineGoodputDetail = g.ptr(), share
		l.Bottleneck = BottleneckLineRate
		tcp.Detail = share
		if l.PCIe != nil {
			t := frame.Transfer()
			if pg := p.PCIe.Goodput(t); pg < g {
				tcp.Detail = fmt.Sprintf("%s = %s, capped by PCIe: %s raw × %d/%.0f bus bytes a segment = %s",
					share, g, p.PCIe.Raw, t.Payload, p.PCIe.BusBytes(t), pg)
				g = pg
				l.Bottleneck = BottleneckPCIe
			}
		}
		l.TCPGoodput = g.ptr()
		tcp.Gbps = l.TCPGoodput
	}

	l.Chain = []Stage{line, pcie, tcp}
	return l
}

// Shortfall is how a card's PCIe bandwidth compares with its ports.
type Shortfall int

// The shortfalls PCIeShortfall reports; doctor maps them to the severity
// of pcie.bandwidth_below_line_rate.
const (
	// ShortfallNone: PCIe carries every linked port at line rate.
	ShortfallNone Shortfall = iota
	// ShortfallCard: PCIe carries each port alone but not all linked ports
	// at once (a warning: it binds only when they are busy together).
	ShortfallCard
	// ShortfallPort: PCIe is below this one port's line rate (critical).
	ShortfallPort
)

// String returns "none", "card" or "port".
func (s Shortfall) String() string {
	switch s {
	case ShortfallNone:
		return "none"
	case ShortfallCard:
		return "card"
	case ShortfallPort:
		return "port"
	}
	return "Shortfall(" + strconv.Itoa(int(s)) + ")"
}

// PCIeShortfall compares a card's effective PCIe bandwidth with the line
// rate of one of its ports and with the line rates of the card's ports that
// have link (the functions of a multi-port card share one PCIe link; include
// port itself in linked when it has link). Unknown rates (zero or negative)
// are skipped; an unknown PCIe bandwidth is never a shortfall.
func PCIeShortfall(pcie, port Gbps, linked []Gbps) Shortfall {
	if !pcie.known() {
		return ShortfallNone
	}
	if port.known() && pcie < port {
		return ShortfallPort
	}
	var sum Gbps
	for _, r := range linked {
		if r.known() {
			sum += r
		}
	}
	if pcie < sum {
		return ShortfallCard
	}
	return ShortfallNone
}
