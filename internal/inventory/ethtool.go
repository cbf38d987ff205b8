package inventory

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/nicstats"
	"github.com/linerate/linerate/internal/sff"
)

// Link is what ethtool says about a port's link: the speed it runs at,
// the modes the NIC supports and advertises, what the partner advertises,
// and why a link is down.
type Link struct {
	SpeedMbps *int `json:"speed_mbps"`
	// SupportedMaxMbps is the fastest supported link mode, nil when the
	// driver lists none (virtual links).
	SupportedMaxMbps  *int     `json:"supported_max_mbps"`
	Autoneg           *bool    `json:"autoneg"`
	Duplex            string   `json:"duplex"`
	Lanes             *int     `json:"lanes"`
	Supported         []string `json:"supported"`
	Advertised        []string `json:"advertised"`
	PartnerAdvertised []string `json:"partner_advertised"`
	SupportedFEC      []string `json:"supported_fec"`
	AdvertisedFEC     []string `json:"advertised_fec,omitempty"`
	PartnerFEC        []string `json:"partner_fec"`
	Detected          *bool    `json:"link_detected"`
	ExtState          string   `json:"ext_state,omitempty"`
	ExtSubstate       string   `json:"ext_substate,omitempty"`
	DownEvents        *uint32  `json:"link_down_events"`
}

// FEC is the port's forward error correction and its counters (totals
// since the driver loaded), with the per-lane split where the driver
// gives one, the FEC histogram where the kernel gives it, and the
// pre-FEC bit error ratio where the driver counts the bits received.
type FEC struct {
	Active              *string  `json:"active"`
	Configured          []string `json:"configured"`
	Auto                bool     `json:"auto"`
	CorrectedBlocks     *uint64  `json:"corrected_blocks"`
	UncorrectableBlocks *uint64  `json:"uncorrectable_blocks"`
	// CorrectedBits are the bits the FEC decoder corrected: FEC_GET's
	// counter, else the driver's (mlx5 rx_corrected_bits_phy).
	CorrectedBits *uint64 `json:"corrected_bits"`
	// ReceivedBits are the bits the PHY received (mlx5 rx_bits_phy).
	ReceivedBits *uint64 `json:"received_bits"`
	// PreFECBER is CorrectedBits over ReceivedBits since the driver
	// loaded, nil where either is unknown.
	PreFECBER *float64             `json:"pre_fec_ber"`
	Lanes     *FECLanes            `json:"lanes,omitempty"`
	Hist      []ethtool.FECHistBin `json:"hist,omitempty"`
}

// FECLanes are FEC counters per FEC lane (numbered from 0 as ethtool
// prints them), and each lane's pre-FEC BER where the bits received are
// known (the port's bits, shared evenly by its lanes).
type FECLanes struct {
	CorrectedBlocks     []uint64  `json:"corrected_blocks,omitempty"`
	UncorrectableBlocks []uint64  `json:"uncorrectable_blocks,omitempty"`
	CorrectedBits       []uint64  `json:"corrected_bits,omitempty"`
	PreFECBER           []float64 `json:"pre_fec_ber,omitempty"`
}

// Transceiver is the plugged module, decoded from its memory. Readable is
// false when its memory could not be read or decoded; Error then says why
// and the module fields are absent.
type Transceiver struct {
	Readable bool    `json:"readable"`
	Error    *string `json:"error"`
	*sff.Module
}

// ethtoolFacts returns an interface's live ethtool facts: from the
// caller's source when running live, else from the tree, if captured.
func (c *collector) ethtoolFacts(name string) *ethtool.Facts {
	if c.opts.Ethtool != nil {
		return c.opts.Ethtool(name)
	}
	if c.fs.IsLive() {
		return nil
	}
	f, err := ethtool.Load(c.fs, name)
	if err != nil {
		c.note("%s: live ethtool facts unreadable: %v", name, err)
		return nil
	}
	return f
}

// applyEthtool fills link, FEC, transceiver, counters, channels and rings
// from f, and notes what could not be read.
func (c *collector) applyEthtool(n *NIC, f *ethtool.Facts) {
	if f == nil {
		if n.Kind == "pci" && !c.fs.IsLive() {
			c.uncaptured = append(c.uncaptured, n.Interface)
		}
		return
	}
	n.Link = link(f)
	n.FEC = fec(f)
	n.Transceiver = transceiver(f)
	if t := n.Transceiver; t != nil && t.Module != nil {
		for _, note := range t.Notes {
			c.note("%s: module: %s", n.Interface, note)
		}
	}
	n.Channels, n.Rings = f.Channels, f.Rings
	if f.Stats != nil || f.FEC != nil || f.LinkState != nil {
		cnt := nicstats.FromFacts(n.Driver, f)
		n.Counters = &cnt
	}
	c.noteNotRead(n.Interface, f.NotRead)
}

// noteNotRead writes one note per reason: "lab0: FEC, pause, ring sizes:
// not supported by the driver (EOPNOTSUPP)".
func (c *collector) noteNotRead(iface string, notRead map[string]string) {
	byReason := map[string][]string{}
	for key, reason := range notRead {
		byReason[reason] = append(byReason[reason], factName(key))
	}
	for _, reason := range slices.Sorted(mapKeysOf(byReason)) {
		what := byReason[reason]
		slices.Sort(what)
		if strings.HasPrefix(reason, "no module data") || strings.HasPrefix(reason, "module EEPROM") || strings.HasPrefix(reason, "the module EEPROM") {
			c.note("%s: %s", iface, reason)
			continue
		}
		c.note("%s: %s: %s", iface, strings.Join(what, ", "), reason)
	}
}

func mapKeysOf[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// factName words a Facts.NotRead key for a note.
func factName(key string) string {
	switch key {
	case ethtool.FactLinkModes:
		return "link modes"
	case ethtool.FactLinkState:
		return "link state"
	case ethtool.FactFEC:
		return "FEC"
	case ethtool.FactDriverStats:
		return "driver counters (ethtool -S)"
	case ethtool.FactStandardStats:
		return "standard counters (eth-mac, eth-phy, eth-ctrl, rmon)"
	case ethtool.FactPause:
		return "pause"
	case ethtool.FactChannels:
		return "channels"
	case ethtool.FactRings:
		return "ring sizes"
	}
	if p, ok := strings.CutPrefix(key, ethtool.FactModule+" page "); ok {
		return "module page " + p
	}
	return key
}

// modeSpeedRE reads the speed of a link mode name ("100000baseCR4/Full").
var modeSpeedRE = regexp.MustCompile(`^(\d+)base`)

// ModeSpeed returns the speed in Mb/s of a link mode name, or 0.
func ModeSpeed(mode string) int {
	m := modeSpeedRE.FindStringSubmatch(mode)
	if m == nil {
		return 0
	}
	v, _ := strconv.Atoi(m[1])
	return v
}

func link(f *ethtool.Facts) *Link {
	lm, ls := f.LinkModes, f.LinkState
	if lm == nil && ls == nil {
		return nil
	}
	l := &Link{Duplex: "unknown", Supported: []string{}, Advertised: []string{}, PartnerAdvertised: []string{},
		SupportedFEC: []string{}, AdvertisedFEC: []string{}, PartnerFEC: []string{}}
	if lm != nil {
		l.SpeedMbps, l.Duplex, l.Lanes = lm.SpeedMbps, lm.Duplex, lm.Lanes
		l.Autoneg = &lm.Autoneg
		l.Supported, l.Advertised, l.PartnerAdvertised = nonNilS(lm.Supported), nonNilS(lm.Advertised), nonNilS(lm.PartnerAdvertised)
		l.SupportedFEC, l.AdvertisedFEC, l.PartnerFEC = nonNilS(lm.SupportedFEC), nonNilS(lm.AdvertisedFEC), nonNilS(lm.PartnerFEC)
		best := 0
		for _, m := range lm.Supported {
			best = max(best, ModeSpeed(m))
		}
		if best > 0 {
			l.SupportedMaxMbps = &best
		}
	}
	if ls != nil {
		l.Detected, l.ExtState, l.ExtSubstate, l.DownEvents = ls.Link, ls.ExtState, ls.ExtSubstate, ls.DownEvents
	}
	return l
}

func nonNilS(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func fec(f *ethtool.Facts) *FEC {
	if f.FEC == nil {
		return nil
	}
	out := &FEC{Active: f.FEC.Active, Configured: nonNilS(f.FEC.Configured), Auto: f.FEC.Auto, Hist: f.FEC.Hist}
	total := func(v []uint64) *uint64 {
		if len(v) == 0 {
			return nil
		}
		return &v[0]
	}
	lanes := &FECLanes{}
	if s := f.FEC.Stats; s != nil {
		out.CorrectedBlocks, out.UncorrectableBlocks, out.CorrectedBits = total(s.CorrectedBlocks), total(s.UncorrectableBlocks), total(s.CorrectedBits)
		if len(s.CorrectedBlocks) > 1 {
			lanes.CorrectedBlocks = s.CorrectedBlocks[1:]
		}
		if len(s.UncorrectableBlocks) > 1 {
			lanes.UncorrectableBlocks = s.UncorrectableBlocks[1:]
		}
		if len(s.CorrectedBits) > 1 {
			lanes.CorrectedBits = s.CorrectedBits[1:]
		}
	}
	if f.Stats != nil {
		if v, ok := f.Stats.Driver[ethtool.DriverCorrectedBits]; ok && out.CorrectedBits == nil {
			out.CorrectedBits = &v
		}
		if v, ok := f.Stats.Driver[ethtool.DriverReceivedBits]; ok {
			out.ReceivedBits = &v
		}
	}
	// With FEC off (or no link) there is nothing to correct: no ratio.
	if out.CorrectedBits != nil && out.ReceivedBits != nil && out.Active != nil && *out.Active != "off" {
		if ber, ok := ethtool.PreFECBER(*out.CorrectedBits, *out.ReceivedBits); ok {
			out.PreFECBER = &ber
		}
		// The PHY counts the port's bits; its FEC lanes share them evenly.
		if n := len(lanes.CorrectedBits); n > 0 {
			for _, c := range lanes.CorrectedBits {
				ber, _ := ethtool.PreFECBER(c, *out.ReceivedBits/uint64(n))
				lanes.PreFECBER = append(lanes.PreFECBER, ber)
			}
		}
	}
	if lanes.CorrectedBlocks != nil || lanes.UncorrectableBlocks != nil || lanes.CorrectedBits != nil {
		out.Lanes = lanes
	}
	return out
}

// transceiver decodes the module. No module data (the driver has no
// module EEPROM) and a read refused for lack of privileges give nil: the
// note says so. Any other failure is an unreadable module.
func transceiver(f *ethtool.Facts) *Transceiver {
	if e := f.ModuleError; e != "" {
		if strings.HasPrefix(e, "EOPNOTSUPP") || strings.HasPrefix(e, "EPERM") || strings.HasPrefix(e, "EACCES") {
			return nil
		}
		return &Transceiver{Readable: false, Error: &e}
	}
	if len(f.Module) == 0 {
		return nil
	}
	m, err := sff.Decode(f.Module)
	if err != nil {
		e := fmt.Sprintf("the module answered but its memory does not decode: %v", err)
		return &Transceiver{Readable: false, Error: &e}
	}
	return &Transceiver{Readable: true, Module: m}
}
