// Package nicstats sorts a NIC's drop and error counters by cause: frames
// dropped because the host gave the NIC no buffers, frames dropped in the
// NIC's own port buffer, physical-layer errors, pause frames sent and
// received, FEC blocks. Each driver names these its own way (mlx5
// rx_out_of_buffer, i40e port.rx_discards, cxgb4 rx_bg0_frames_dropped);
// the standard netlink groups (eth-mac, eth-phy, pause) name some of them
// the same way for every driver and are preferred where the driver fills
// them.
//
// Totals count since the driver loaded, so alone they cannot say when a
// drop happened. Snapshot before and after a run and Delta says what the
// run cost: that is what bench does around every run.
package nicstats

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/linerate/linerate/internal/ethtool"
)

// Cause is why frames were dropped, or what else a counter means.
type Cause string

// The causes.
const (
	// RXNoBuffer: the NIC had a frame and no host buffer to put it in (the
	// RX ring was empty): ring too small, too few queues, or the CPU
	// serving the queue too slow.
	RXNoBuffer Cause = "rx_no_buffer"
	// RXNICBuffer: the NIC's own port buffer overflowed (the adapter was
	// congested), often with pause frames sent.
	RXNICBuffer Cause = "rx_nic_buffer"
	// PHYErrors: FCS/CRC and symbol errors: cable, optics, connector.
	PHYErrors Cause = "phy_errors"
	// PauseTX: pause frames the NIC sent (it asked the peer to stop).
	PauseTX Cause = "pause_tx"
	// PauseRX: pause frames the NIC received (the network asked it to stop).
	PauseRX Cause = "pause_rx"
	// FECUncorrectable: FEC blocks the decoder could not correct: lost frames.
	FECUncorrectable Cause = "fec_uncorrectable"
	// FECCorrected: FEC blocks corrected: a noisy but working link.
	FECCorrected Cause = "fec_corrected"
	// LinkDown: link-down events.
	LinkDown Cause = "link_down"
	// RXDropped: frames the interface received that the host's stack then
	// discarded (no memory, a full backlog, a protocol nobody handles):
	// the kernel's rx_dropped, which by its definition excludes what the
	// device dropped for lack of buffers (that is rx_missed_errors, here
	// RXNoBuffer).
	RXDropped Cause = "rx_dropped"
	// TXDropped: frames dropped on their way out, e.g. for lack of room
	// in the driver's queue (the kernel's tx_dropped).
	TXDropped Cause = "tx_dropped"
	// QdiscDrops: packets the interface's root queueing discipline
	// dropped because its queue was full (`tc -s qdisc`'s "dropped"): the
	// sending side's own doing, before the NIC sees them.
	QdiscDrops Cause = "qdisc_drops"
)

// Causes lists every cause, in the order reports show them.
var Causes = []Cause{RXNoBuffer, RXNICBuffer, RXDropped, TXDropped, QdiscDrops, PHYErrors, PauseTX, PauseRX, FECUncorrectable, FECCorrected, LinkDown}

// Count is one cause's value and the counters it came from.
type Count struct {
	Value uint64 `json:"value"`
	// Sources are the counters summed, by name: a driver counter by its
	// `ethtool -S` name, a standard one as "eth_mac.FrameCheckSequenceErrors",
	// "pause.tx_frames", "fec.uncorrectable_blocks", "linkstate.link_down_events".
	Sources map[string]uint64 `json:"sources"`
}

// Counters are a NIC's counters by cause. A cause no counter reports is
// absent (unknown), never zero.
type Counters struct {
	Driver  string          `json:"driver,omitempty"`
	ByCause map[Cause]Count `json:"by_cause"`
	// Delta is set on the result of Delta: values are differences.
	Delta bool `json:"delta,omitempty"`
}

// rule maps driver counter names matching re to a cause.
type rule struct {
	cause Cause
	re    *regexp.Regexp
}

func rules(patterns map[Cause]string) []rule {
	var out []rule
	for _, c := range Causes {
		if p, ok := patterns[c]; ok {
			out = append(out, rule{c, regexp.MustCompile("^(?:" + p + ")$")})
		}
	}
	return out
}

// driverRules are the drivers' own counter names, from their ethtool
// string tables and documentation (mlx5 counters.rst; i40e, ice, bnxt_en
// and cxgb4 ethtool.c). i40e renamed port.rx_dropped to port.rx_discards
// in 2023 and added rx_missed_errors; both names count.
var driverRules = map[string][]rule{
	"mlx5_core": rules(map[Cause]string{
		RXNoBuffer:  `rx_out_of_buffer`,
		RXNICBuffer: `rx_discards_phy`,
		PHYErrors:   `rx_crc_errors_phy|rx_symbol_err_phy`,
		PauseTX:     `tx_pause_ctrl_phy`,
		PauseRX:     `rx_pause_ctrl_phy`,
		LinkDown:    `link_down_events_phy`,
	}),
	"i40e": rules(map[Cause]string{
		RXNoBuffer: `port\.rx_dropped|port\.rx_discards|rx_missed_errors`,
		PHYErrors:  `port\.rx_crc_errors|port\.illegal_bytes`,
		PauseTX:    `port\.link_xoff_tx`,
		PauseRX:    `port\.link_xoff_rx`,
	}),
	"ice": rules(map[Cause]string{
		RXNoBuffer: `port\.rx_dropped|rx_missed_errors`,
		PHYErrors:  `port\.rx_crc_errors|port\.illegal_bytes`,
		PauseTX:    `port\.link_xoff_tx`,
		PauseRX:    `port\.link_xoff_rx`,
	}),
	"bnxt_en": rules(map[Cause]string{
		RXNoBuffer:  `rx_total_ring_discards|rx_total_oom_discards`,
		RXNICBuffer: `rx_discard_packets_cos\d`,
		PHYErrors:   `rx_fcs_err_frames`,
		PauseTX:     `tx_pause_frames`,
		PauseRX:     `rx_pause_frames`,
	}),
	"cxgb4": rules(map[Cause]string{
		RXNICBuffer: `rx_bg\d_frames_dropped|rx_bg\d_frames_trunc`,
		PHYErrors:   `rx_fcs_errors|rx_symbol_errors`,
		PauseTX:     `tx_pause_frames`,
		PauseRX:     `rx_pause_frames`,
	}),
}

// genericRules apply to drivers not in driverRules: names many drivers
// share (ixgbe, igb, sfc, …).
var genericRules = rules(map[Cause]string{
	RXNoBuffer: `rx_missed_errors|rx_no_buffer_count|rx_out_of_buffer`,
	PHYErrors:  `rx_crc_errors|rx_fcs_errors|rx_symbol_errors`,
	PauseTX:    `tx_pause|tx_pause_frames|tx_flow_control_xoff`,
	PauseRX:    `rx_pause|rx_pause_frames|rx_flow_control_xoff`,
})

// rulesFor returns the driver's rules.
func rulesFor(driver string) []rule {
	if r, ok := driverRules[driver]; ok {
		return r
	}
	return genericRules
}

// FromFacts sorts an interface's counters by cause. The standard groups
// win where the driver fills them; otherwise the driver's own counters
// are summed by the driver's rules.
func FromFacts(driver string, f *ethtool.Facts) Counters {
	c := Counters{Driver: driver, ByCause: map[Cause]Count{}}
	if f == nil {
		return c
	}
	add := func(cause Cause, src string, v uint64) {
		n := c.ByCause[cause]
		if n.Sources == nil {
			n.Sources = map[string]uint64{}
		}
		n.Value += v
		n.Sources[src] = v
		c.ByCause[cause] = n
	}
	std := map[Cause]bool{}
	if st := f.Stats; st != nil {
		if v, ok := st.EthMAC["FrameCheckSequenceErrors"]; ok {
			add(PHYErrors, "eth_mac.FrameCheckSequenceErrors", v)
			std[PHYErrors] = true
		}
		if v, ok := st.EthPHY["SymbolErrorDuringCarrier"]; ok {
			add(PHYErrors, "eth_phy.SymbolErrorDuringCarrier", v)
			std[PHYErrors] = true
		}
		if p := st.Pause; p != nil {
			if p.TXFrames != nil {
				add(PauseTX, "pause.tx_frames", *p.TXFrames)
				std[PauseTX] = true
			}
			if p.RXFrames != nil {
				add(PauseRX, "pause.rx_frames", *p.RXFrames)
				std[PauseRX] = true
			}
		}
		names := make([]string, 0, len(st.Driver))
		for n := range st.Driver {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			for _, r := range rulesFor(driver) {
				if !std[r.cause] && r.re.MatchString(n) {
					add(r.cause, n, st.Driver[n])
					break
				}
			}
		}
	}
	if fec := f.FEC; fec != nil && fec.Stats != nil {
		if s := fec.Stats.UncorrectableBlocks; len(s) > 0 {
			add(FECUncorrectable, "fec.uncorrectable_blocks", s[0])
		}
		if s := fec.Stats.CorrectedBlocks; len(s) > 0 {
			add(FECCorrected, "fec.corrected_blocks", s[0])
		}
	}
	if _, ok := c.ByCause[LinkDown]; !ok && f.LinkState != nil && f.LinkState.DownEvents != nil {
		add(LinkDown, "linkstate.link_down_events", uint64(*f.LinkState.DownEvents))
	}
	return c
}

// SnapshotWith reads iface's driver and standard counters through an
// open ethtool client: Snapshot without the kernel's own counters.
func SnapshotWith(c *ethtool.Client, iface string) (Counters, error) {
	f := &ethtool.Facts{Stats: &ethtool.Stats{}}
	var errs []string
	drv, err := c.DriverName(iface)
	if err != nil {
		errs = append(errs, err.Error())
	}
	if m, err := c.DriverStats(iface); err == nil {
		f.Stats.Driver = m
	} else {
		errs = append(errs, err.Error())
	}
	if st, err := c.StandardStats(iface); err == nil {
		f.Stats.EthMAC, f.Stats.EthPHY = st.EthMAC, st.EthPHY
	}
	if p, err := c.Pause(iface); err == nil {
		f.Stats.Pause = p
	}
	f.FEC, _ = c.FEC(iface)
	f.LinkState, _ = c.LinkState(iface)
	out := FromFacts(drv, f)
	if f.Stats.Driver == nil && len(out.ByCause) == 0 && len(errs) > 0 {
		return out, fmt.Errorf("reading the counters of %s: %s", iface, strings.Join(errs, "; "))
	}
	return out, nil
}

// Delta returns after − before, cause by cause and counter by counter. A
// counter that went backwards (the driver reloaded, the counters were
// cleared) counts from zero: its delta is its new value. Causes present
// on one side only are left out.
func Delta(before, after Counters) Counters {
	d := Counters{Driver: after.Driver, ByCause: map[Cause]Count{}, Delta: true}
	for cause, a := range after.ByCause {
		b, ok := before.ByCause[cause]
		if !ok {
			continue
		}
		n := Count{Sources: map[string]uint64{}}
		for src, av := range a.Sources {
			bv, ok := b.Sources[src]
			if !ok {
				continue
			}
			v := av - bv
			if av < bv {
				v = av
			}
			n.Sources[src] = v
			n.Value += v
		}
		d.ByCause[cause] = n
	}
	return d
}

// Get returns the value of cause and whether any counter reports it.
func (c Counters) Get(cause Cause) (uint64, bool) {
	n, ok := c.ByCause[cause]
	return n.Value, ok
}

// Describe says which counters made a cause's value, largest first, and
// leaves out those at zero: "rx_out_of_buffer 1234" or
// "rx_bg0_frames_dropped 10, rx_bg1_frames_dropped 2".
func (c Counters) Describe(cause Cause) string {
	n, ok := c.ByCause[cause]
	if !ok {
		return ""
	}
	type kv struct {
		k string
		v uint64
	}
	var s []kv
	for k, v := range n.Sources {
		if v > 0 || n.Value == 0 {
			s = append(s, kv{k, v})
		}
	}
	slices.SortFunc(s, func(a, b kv) int {
		if a.v != b.v {
			if a.v > b.v {
				return -1
			}
			return 1
		}
		return strings.Compare(a.k, b.k)
	})
	parts := make([]string, len(s))
	for i, e := range s {
		parts[i] = fmt.Sprintf("%s %d", e.k, e.v)
	}
	return strings.Join(parts, ", ")
}
