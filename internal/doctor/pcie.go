package doctor

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/limits"
)

// card is the selected ports of one PCIe card: they share one link.
type card struct {
	ports []*nicView
}

// first is the port a card's findings are filed under.
func (c card) first() *nicView { return c.ports[0] }

// cards groups the selected PCI NICs whose link is reported by card
// (bus:device), so a dual-port card's link is judged once.
func (d *diag) cards() []card {
	var out []card
	index := map[string]int{}
	for _, v := range d.nics {
		if v.PCIe == nil || !v.PCIe.Reported {
			continue
		}
		key := cardOf(v.PCI)
		if i, ok := index[key]; ok {
			out[i].ports = append(out[i].ports, v)
			continue
		}
		index[key] = len(out)
		out = append(out, card{ports: []*nicView{v}})
	}
	return out
}

// cardOf is the card (domain:bus:device) of a PCI function's address
// (domain:bus:device.function); an address without a function, which only
// a damaged or hand-made snapshot has, is its own card.
func cardOf(pci string) string {
	if i := strings.LastIndexByte(pci, '.'); i >= 0 {
		return pci[:i]
	}
	return pci
}

// lineRates returns the card's fastest port's line rate and the sum over
// its ports that have link.
func (c card) lineRates() (port limits.Gbps, linked []limits.Gbps) {
	for _, v := range c.ports {
		port = max(port, v.line)
		if v.Operstate == "up" && v.line > 0 {
			linked = append(linked, v.line)
		}
	}
	return port, linked
}

func link(gts *float64, width *int) string {
	s, w := "?", "?"
	if gts != nil {
		s = fmtGTs(*gts)
	}
	if width != nil {
		w = fmt.Sprint(*width)
	}
	return fmt.Sprintf("%s GT/s x%s", s, w)
}

// pcieDowngraded: the link trained below the device's maximum. The cause
// decides the fix: a slot that cannot do better (the upstream port's own
// capability) wants another slot; a link below both wants reseating.
func pcieDowngraded(d *diag) []Finding {
	var out []Finding
	for _, c := range d.cards() {
		v := c.first()
		p := v.PCIe
		if !p.Downgraded {
			continue
		}
		port, _ := c.lineRates()
		widthDown := p.MaxWidth != nil && *p.CurWidth < *p.MaxWidth
		eff := limits.Gbps(deref(p.EffGbps))
		sev := Warning
		if widthDown && port > 0 && eff < port {
			sev = Critical
		}
		ev := map[string]any{
			"pci": v.PCI, "capable": link(p.MaxGTs, p.MaxWidth), "trained": link(p.CurGTs, p.CurWidth),
			"raw_gbps": deref(p.RawGbps), "effective_gbps": deref(p.EffGbps),
		}
		if port > 0 {
			ev["line_rate_gbps"] = float64(port)
		}
		slotLimited := false
		if up := p.Upstream; up != nil {
			ev["slot_port"] = up.PCI
			ev["slot_capable"] = link(up.MaxGTs, up.MaxWidth)
			slotLimited = (up.MaxWidth != nil && *up.MaxWidth <= *p.CurWidth && widthDown) ||
				(up.MaxGTs != nil && *up.MaxGTs <= *p.CurGTs && !widthDown)
		}
		f := Finding{ID: "pcie.link_downgraded", Severity: sev, Subject: v.Interface, Evidence: ev}
		what := fmt.Sprintf("PCIe link of %s trained at %s, the card is capable of %s",
			v.PCI, link(p.CurGTs, p.CurWidth), link(p.MaxGTs, p.MaxWidth))
		dev := "/sys/bus/pci/devices/" + v.PCI + "/"
		check := []string{"grep", ".", dev + "current_link_speed", dev + "current_link_width", dev + "max_link_speed", dev + "max_link_width"}
		const checkWhat = "Then compare the link with the card's maximum (lspci -vv shows the same as LnkSta and LnkCap, the latter only as root)"
		switch {
		case slotLimited:
			f.Summary = what + fmt.Sprintf(": the slot (port %s) is capable of only %s", p.Upstream.PCI, link(p.Upstream.MaxGTs, p.Upstream.MaxWidth))
			ev["cause"] = "slot"
			f.Fix = []Fix{
				do(fmt.Sprintf("Move the card to a slot wired for %s: this slot's port %s is %s, and shared-lane slots drop to x8 or x4 when a neighbour is populated (see the board manual)",
					link(p.MaxGTs, p.MaxWidth), p.Upstream.PCI, link(p.Upstream.MaxGTs, p.Upstream.MaxWidth))).
					verify(checkWhat, check...),
			}
		case !widthDown:
			f.Summary = what + ": a speed-only drop can be power saving on an idle link; re-check under load (linerate bench) before replacing anything"
			ev["cause"] = "speed"
			f.Fix = []Fix{
				do("Re-check under load: run traffic (linerate bench), and meanwhile read the link speed", "cat", dev+"current_link_speed"),
				do("If it stays low under load: disable ASPM for the slot in the BIOS (or boot with pcie_aspm=off), then reseat the card").
					verify(checkWhat, check...),
			}
		default:
			f.Summary = what + ": the link trained narrower than both card and slot allow"
			ev["cause"] = "training"
			f.Fix = []Fix{
				do("Power off and reseat the card: a partly seated x16 card trains at x4 or x8 (pressing one home has turned x4 and 25 Gbit/s into x16 and 100 Gbit/s)").
					verify(checkWhat, check...),
				do("If it stays narrow: check the BIOS setting for this slot (link width or bifurcation: x16, not x8x8 or x4x4x4x4) and any riser"),
			}
		}
		out = append(out, f)
	}
	return out
}

// pcieBelowLineRate: the link's effective bandwidth is below a port's
// line rate (critical) or below the linked ports' sum (warning), with the
// arithmetic and the smallest link that would do.
func pcieBelowLineRate(d *diag) []Finding {
	var out []Finding
	for _, c := range d.cards() {
		v := c.first()
		p := v.PCIe
		if p.EffGbps == nil {
			continue
		}
		eff := limits.Gbps(*p.EffGbps)
		port, linked := c.lineRates()
		var sev Severity
		switch limits.PCIeShortfall(eff, port, linked) {
		case limits.ShortfallPort:
			sev = Critical
		case limits.ShortfallCard:
			sev = Warning
		default:
			continue
		}
		need := port
		if sev == Warning {
			need = 0
			for _, r := range linked {
				need += r
			}
		}
		mps := limits.DefaultMPS
		if p.MPS != nil {
			mps = *p.MPS
		}
		bw, _ := limits.PCIe(limits.PCIeLink{GTs: *p.CurGTs, Width: *p.CurWidth, MPS: mps})
		arith := fmt.Sprintf("%s GT/s × %d lanes × %s = %s Gbit/s raw; × %d/(%d+26) for TLP and DLLP overhead at MPS %d = %s Gbit/s",
			fmtGTs(*p.CurGTs), *p.CurWidth, bw.Encoding, bw.Raw.Round(), mps, mps, mps, bw.Effective.Round())
		ev := map[string]any{
			"pci": v.PCI, "link": link(p.CurGTs, p.CurWidth), "effective_gbps": float64(eff.Round()),
			"needed_gbps": float64(need), "arithmetic": arith,
			"share_of_line_rate_pct": pct(float64(eff), float64(need)),
		}
		if p.MPSAssumed {
			ev["mps"] = "256 (assumed: config space unreadable)"
		}
		f := Finding{ID: "pcie.bandwidth_below_line_rate", Severity: sev, Subject: v.Interface, Evidence: ev}
		if sev == Critical {
			f.Summary = fmt.Sprintf("PCIe %s carries at most %s Gbit/s, below the %s Gbit/s line rate: the bus, not the network, caps throughput at %d%%",
				link(p.CurGTs, p.CurWidth), eff.Round(), trimFloat(float64(port)), pct(float64(eff), float64(port)))
		} else {
			f.Summary = fmt.Sprintf("PCIe %s carries %s Gbit/s: enough for one port, not for all %d linked ports together (%s Gbit/s)",
				link(p.CurGTs, p.CurWidth), eff.Round(), len(linked), trimFloat(float64(need)))
		}
		f.Fix = []Fix{}
		if p.Downgraded {
			f.Fix = append(f.Fix, do("First restore the card's full link (see pcie.link_downgraded, above)"))
		}
		f.Fix = append(f.Fix, do(fmt.Sprintf("The card needs a link carrying at least %s Gbit/s: %s", trimFloat(float64(need)), enoughLinks(need, p.MaxGTs, mps))))
		out = append(out, f)
	}
	return out
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

func pct(a, b float64) int {
	if b <= 0 {
		return 0
	}
	return int(a/b*100 + 0.5)
}

// enoughLinks names, for each generation up to the card's, the narrowest
// standard width whose effective bandwidth reaches need.
func enoughLinks(need limits.Gbps, maxGTs *float64, mps int) string {
	var opts []string
	for _, gts := range []float64{2.5, 5, 8, 16, 32, 64} {
		if maxGTs != nil && gts > *maxGTs {
			break
		}
		for _, w := range []int{1, 2, 4, 8, 16} {
			bw, err := limits.PCIe(limits.PCIeLink{GTs: gts, Width: w, MPS: mps})
			if err == nil && bw.Effective >= need {
				opts = append(opts, fmt.Sprintf("PCIe %s x%d (%s Gbit/s)", bw.Generation, w, bw.Effective.Round()))
				break
			}
		}
	}
	if len(opts) == 0 {
		return "no PCIe link this card supports is enough: a card with a faster interface (e.g. PCIe 4.0 or 5.0) is needed"
	}
	return strings.Join(opts, " or ")
}

// fmtGTs writes a transfer rate as lspci and the kernel do: "2.5", "8.0".
func fmtGTs(g float64) string { return strconv.FormatFloat(g, 'f', 1, 64) }
