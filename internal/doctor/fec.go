package doctor

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/nicstats"
)

// laneSuffixRE reads the lane count at the end of a link mode's medium:
// "CR4" is four lanes, "SR" one, "LR4_ER4" four.
var laneSuffixRE = regexp.MustCompile(`^\d+base[A-Z]+(\d*)`)

// activeMode returns the link mode the port runs: the advertised (or
// supported) mode of the current speed.
func activeMode(l *inventory.Link) string {
	if l == nil || l.SpeedMbps == nil {
		return ""
	}
	for _, list := range [][]string{l.Advertised, l.Supported} {
		for _, m := range list {
			if inventory.ModeSpeed(m) == *l.SpeedMbps {
				return m
			}
		}
	}
	return ""
}

// lanesOf returns how many lanes the link uses: as the driver says, from
// the link mode's name, or from the module.
func lanesOf(v *nicView) int {
	if v.Link != nil && v.Link.Lanes != nil {
		return *v.Link.Lanes
	}
	if m := laneSuffixRE.FindStringSubmatch(activeMode(v.Link)); m != nil {
		if m[1] == "" {
			return 1
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	if t := v.Transceiver; t != nil && t.Readable && len(t.Lanes) > 0 {
		return len(t.Lanes)
	}
	return 0
}

// media names what the link runs over: the module's media, else the
// active link mode.
func media(v *nicView) string {
	if t := v.Transceiver; t != nil && t.Readable && t.Media != "" {
		return t.Media
	}
	return activeMode(v.Link)
}

// needsRS says whether media at laneGbps needs RS-FEC: every 50G-and-up
// PAM4 lane does (IEEE 802.3 clauses 134, 137-140), and so do 25G NRZ
// lanes (25GBASE-SR/CR, 100GBASE-SR4/CR4, CWDM4 and PSM4 by their MSAs)
// except the long-reach ones specified without FEC (100GBASE-LR4/ER4,
// 25GBASE-LR/ER).
func needsRS(m string, laneGbps float64) bool {
	if laneGbps < 25 || m == "" {
		return false
	}
	if laneGbps > 30 {
		return true
	}
	for _, k := range []string{"LR4", "ER4", "25GBASE-LR", "25GBASE-ER", "25000baseLR", "25000baseER"} {
		if strings.Contains(m, k) {
			return false
		}
	}
	return true
}

// fecOff: a 25G-per-lane or faster link runs without FEC where its media
// needs RS-FEC.
func fecOff(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		if v.FEC == nil || v.FEC.Active == nil || *v.FEC.Active != "off" || v.Link == nil || v.Link.SpeedMbps == nil {
			continue
		}
		lanes := lanesOf(v)
		if lanes == 0 {
			continue
		}
		laneGbps := float64(*v.Link.SpeedMbps) / 1000 / float64(lanes)
		m := media(v)
		if !needsRS(m, laneGbps) {
			continue
		}
		out = append(out, Finding{
			ID: "fec.off", Severity: Warning, Subject: v.Interface,
			Summary: fmt.Sprintf("%s runs %s at %s Gbit/s per lane with FEC off: that media is specified with RS-FEC (Reed-Solomon, IEEE 802.3 clause 91), and without it the link carries a bit error ratio the optics were not built for",
				v.Interface, m, trimFloat(laneGbps)),
			Evidence: map[string]any{"active": "off", "configured": v.FEC.Configured, "speed_mbps": *v.Link.SpeedMbps, "lanes": lanes, "media": m},
			Fix: []Fix{
				do("Turn RS-FEC on, and the same on the peer or the switch port: both ends must match", "ethtool", "--set-fec", v.Interface, "encoding", "rs").
					verify("Check it (Active FEC encoding: RS)", "ethtool", "--show-fec", v.Interface),
			},
		})
	}
	return out
}

// partnerFEC maps partner FEC names to ethtool's words (None is off).
func partnerFEC(names []string) []string {
	var out []string
	for _, n := range names {
		if n == "None" {
			n = "off"
		}
		out = append(out, n)
	}
	return out
}

// fecMismatch: the link is down, and the local FEC cannot match what the
// partner advertises (or the driver says the FEC does not lock).
func fecMismatch(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		l := v.Link
		if l == nil || v.Operstate == "up" || (l.Detected != nil && *l.Detected) {
			continue
		}
		partner := partnerFEC(l.PartnerFEC)
		local := []string{}
		auto := false
		if v.FEC != nil {
			local, auto = v.FEC.Configured, v.FEC.Auto
		}
		mismatch := false
		reason := ""
		if len(partner) > 0 && len(local) > 0 && !auto && !slices.ContainsFunc(local, func(s string) bool { return slices.Contains(partner, s) }) {
			mismatch = true
			reason = fmt.Sprintf("it is configured for %s while the partner advertises %s", strings.Join(local, "/"), strings.Join(partner, "/"))
		}
		if s := l.ExtSubstate; strings.Contains(s, "FEC is not locked") || strings.Contains(s, "FEC mismatch") {
			mismatch = true
			if reason == "" {
				reason = "the driver says: " + l.ExtState + ", " + s
			}
		}
		if !mismatch {
			continue
		}
		want := "rs"
		if len(partner) > 0 && !slices.Contains(partner, "RS") {
			want = strings.ToLower(partner[0])
		}
		ev := map[string]any{"configured": local, "partner_advertised": partner, "operstate": v.Operstate}
		if l.ExtState != "" {
			ev["ext_state"] = l.ExtState + ": " + l.ExtSubstate
		}
		out = append(out, Finding{
			ID: "fec.mismatch", Severity: Critical, Subject: v.Interface,
			Summary:  fmt.Sprintf("%s has no link and its FEC cannot match the other end's: %s", v.Interface, reason),
			Evidence: ev,
			Fix: []Fix{
				do("Set the same FEC on both ends (or encoding auto, where the driver supports it)", "ethtool", "--set-fec", v.Interface, "encoding", want).
					verify("Then check the FEC", "ethtool", "--show-fec", v.Interface),
				do("And the link (Link detected: yes)", "ethtool", v.Interface),
			},
		})
	}
	return out
}

// fecUncorrectable: FEC blocks the decoder could not correct (frames
// lost). Alone, doctor sees totals since the driver loaded: a warning.
// Given a bench's deltas, blocks lost during the runs are critical.
func fecUncorrectable(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		if v.FEC == nil || v.FEC.UncorrectableBlocks == nil {
			continue
		}
		total := *v.FEC.UncorrectableBlocks
		delta, hasDelta := d.delta(v.Interface, nicstats.FECUncorrectable)
		if total == 0 && delta == 0 {
			continue
		}
		ev := map[string]any{"uncorrectable_blocks": total}
		if v.FEC.CorrectedBlocks != nil {
			ev["corrected_blocks"] = *v.FEC.CorrectedBlocks
		}
		hint := ""
		if ln := v.FEC.Lanes; ln != nil && len(ln.UncorrectableBlocks) > 0 {
			ev["uncorrectable_by_lane"] = ln.UncorrectableBlocks
			worst := 0
			for i, x := range ln.UncorrectableBlocks {
				if x > ln.UncorrectableBlocks[worst] {
					worst = i
				}
			}
			hint = fmt.Sprintf("; FEC lane %d of %d carries the most (%d)", worst+1, len(ln.UncorrectableBlocks), ln.UncorrectableBlocks[worst])
		}
		sev := Warning
		summary := fmt.Sprintf("%s's FEC could not correct %d blocks since the driver loaded%s: each is lost frames.%s",
			v.Interface, total, hint, totalsNote(false))
		if hasDelta && delta > 0 {
			sev = Critical
			ev["uncorrectable_blocks_during_bench"] = delta
			summary = fmt.Sprintf("%s's FEC failed to correct %d blocks during the bench (%d since the driver loaded)%s: the link loses frames under load", v.Interface, delta, total, hint)
		}
		fix := []Fix{
			do("Watch it grow", "watch", "-n1", "ethtool", "-I", "--show-fec", v.Interface),
		}
		if t := v.Transceiver; t != nil && t.Readable {
			fix = append(fix, do(fmt.Sprintf("Check the module's RX power per lane; clean the connectors, reseat, and if a lane stays weak replace %s", moduleName(t)), "linerate", "doctor", "--iface", v.Interface))
		} else {
			fix = append(fix, do("Clean and reseat the cable or modules at both ends; replace the cable or module if the count keeps growing"))
		}
		out = append(out, Finding{ID: "fec.uncorrectable", Severity: sev, Subject: v.Interface, Summary: summary, Evidence: ev, Fix: fix})
	}
	return out
}

// linkSpeedBelowMax: the link runs slower than the fastest mode both the
// NIC and its module support.
func linkSpeedBelowMax(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		l := v.Link
		if l == nil || l.SpeedMbps == nil || l.SupportedMaxMbps == nil || v.Operstate != "up" {
			continue
		}
		maxMbps := *l.SupportedMaxMbps
		limitBy := "the NIC"
		if t := v.Transceiver; t != nil && t.Readable && t.SpeedMbps > 0 && t.SpeedMbps < maxMbps {
			maxMbps, limitBy = t.SpeedMbps, "the NIC and its "+t.Media+" module"
		}
		if *l.SpeedMbps >= maxMbps {
			continue
		}
		ev := map[string]any{"speed_mbps": *l.SpeedMbps, "max_mbps": maxMbps, "supported": l.Supported}
		partner := ""
		if len(l.PartnerAdvertised) > 0 {
			pmax := 0
			for _, m := range l.PartnerAdvertised {
				pmax = max(pmax, inventory.ModeSpeed(m))
			}
			ev["partner_advertised"] = l.PartnerAdvertised
			if pmax > 0 && pmax < maxMbps {
				partner = fmt.Sprintf("; the partner advertises at most %s Gbit/s, so the peer or switch port holds it back", trimFloat(float64(pmax)/1000))
			}
		}
		speed := strconv.Itoa(maxMbps)
		check := fmt.Sprintf("Re-check (Speed: %dMb/s)", maxMbps)
		var fix []Fix
		if l.Autoneg != nil && !*l.Autoneg {
			fix = append(fix, do("Autonegotiation is off: force the full speed, on both ends", "ethtool", "-s", v.Interface, "speed", speed, "duplex", "full", "autoneg", "off").verify(check, "ethtool", v.Interface))
		} else {
			fix = append(fix, do("Advertise the full speed (or autoneg on with every supported mode advertised)", "ethtool", "-s", v.Interface, "speed", speed, "duplex", "full").verify(check, "ethtool", v.Interface))
		}
		fix = append(fix, do("Check the other end (switch port speed and breakout settings) and that the cable or module is rated for the full speed"))
		out = append(out, Finding{
			ID: "link.speed_below_max", Severity: Warning, Subject: v.Interface,
			Summary: fmt.Sprintf("%s is linked at %s Gbit/s though %s support%s %s Gbit/s%s",
				v.Interface, trimFloat(float64(*l.SpeedMbps)/1000), limitBy, map[bool]string{true: "s", false: ""}[limitBy == "the NIC"], trimFloat(float64(maxMbps)/1000), partner),
			Evidence: ev, Fix: fix,
		})
	}
	return out
}
