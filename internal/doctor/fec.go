package doctor

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/ethtool"
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

// partnerFEC maps link-mode FEC names, in any spelling, to ethtool's
// words ("None" is "off").
func partnerFEC(names []string) []string {
	var out []string
	for _, n := range names {
		if k, ok := ethtool.FECModeName(n); ok {
			n = k
		}
		if n == "None" {
			n = "off"
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
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
		// Names are compared in ethtool's words whatever spelling the
		// facts used ("None" and "off", "BaseR" and "BASER"), and shown as
		// the facts gave them.
		partner := l.PartnerFEC
		var local []string
		auto := false
		if v.FEC != nil {
			local, auto = v.FEC.Configured, v.FEC.Auto
		} else {
			// No FEC_GET: what the port advertises is what it offers.
			local = partnerFEC(l.AdvertisedFEC)
		}
		if local == nil {
			local = []string{}
		}
		theirs, ours := partnerFEC(partner), partnerFEC(local)
		mismatch := false
		reason := ""
		if len(theirs) > 0 && len(ours) > 0 && !auto && !slices.ContainsFunc(ours, func(s string) bool { return slices.Contains(theirs, s) }) {
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
		if len(theirs) > 0 && !slices.Contains(theirs, "RS") {
			want = strings.ToLower(theirs[0])
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
			// Lanes numbered from 0, as ethtool -I --show-fec and the
			// metrics' lane label number them.
			hint = fmt.Sprintf("; FEC lane %d (of lanes 0-%d, as ethtool numbers them) carries the most (%d)", worst, len(ln.UncorrectableBlocks)-1, ln.UncorrectableBlocks[worst])
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

// fmtBER writes a bit error ratio as engineers read it: "3.1e-05".
func fmtBER(b float64) string { return fmt.Sprintf("%.1e", b) }

// berOf returns a port's pre-FEC BER and how it was had: corrected over
// received bits (the port's, and each FEC lane's), else a lower bound
// from the FEC histogram. ok is false with neither.
func berOf(v *nicView) (ber float64, lanes []float64, basis string, ok bool) {
	f := v.FEC
	if f == nil {
		return 0, nil, "", false
	}
	if f.PreFECBER != nil {
		basis = fmt.Sprintf("%.3g corrected bits of %.3g received since the driver loaded", float64(*f.CorrectedBits), float64(*f.ReceivedBits))
		if f.Lanes != nil {
			lanes = f.Lanes.PreFECBER
		}
		return *f.PreFECBER, lanes, basis, true
	}
	if len(f.Hist) == 0 || f.Active == nil || v.Link == nil || v.Link.SpeedMbps == nil {
		return 0, nil, "", false
	}
	n := lanesOf(v)
	if n == 0 {
		return 0, nil, "", false
	}
	bits := ethtool.CodewordBits(*f.Active, float64(*v.Link.SpeedMbps)/1000/float64(n))
	ber, ok = ethtool.HistBER(f.Hist, bits)
	if !ok {
		return 0, nil, "", false
	}
	return ber, nil, fmt.Sprintf("a lower bound from the FEC histogram (every errored %d-bit codeword symbol taken as one bit error)", 10), true
}

// fecBERHigh: the pre-FEC bit error ratio at or above 1e-5 (critical
// within a factor of two of the ~2.4e-4 RS-FEC corrects): the link works
// only because the FEC repairs it, and has little margin left.
func fecBERHigh(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		ber, lanes, basis, ok := berOf(v)
		if !ok {
			continue
		}
		worst, worstLane := ber, -1
		for i, b := range lanes {
			if b > worst {
				worst, worstLane = b, i
			}
		}
		sev := ethtool.BERSeverity(worst)
		if sev == "" {
			continue
		}
		ev := map[string]any{"pre_fec_ber": fmtBER(ber), "basis": basis, "warn_at": fmtBER(ethtool.BERWarn), "fec_limit": fmtBER(ethtool.BERLimit)}
		if len(lanes) > 0 {
			var per []string
			for _, b := range lanes {
				per = append(per, fmtBER(b))
			}
			ev["pre_fec_ber_by_lane"] = per
		}
		where := ""
		if worstLane >= 0 {
			where = fmt.Sprintf(", FEC lane %d (of lanes 0-%d, as ethtool numbers them) the worst at %s", worstLane, len(lanes)-1, fmtBER(worst))
		}
		summary := fmt.Sprintf("%s's pre-FEC bit error ratio is %s (%s%s): from %s the link runs on the FEC's margin; RS-FEC corrects up to about %s",
			v.Interface, fmtBER(ber), basis, where, fmtBER(ethtool.BERWarn), fmtBER(ethtool.BERLimit))
		if sev == "critical" {
			summary = fmt.Sprintf("%s's pre-FEC bit error ratio is %s (%s%s), within a factor of two of the about %s RS-FEC can correct: the next degradation (heat, a dirty connector) costs frames",
				v.Interface, fmtBER(ber), basis, where, fmtBER(ethtool.BERLimit))
		}
		fix := []Fix{
			do("Watch the corrected bits grow against the bits received", shell(fmt.Sprintf("watch -n1 'ethtool -S %s | grep -e %s -e %s'", v.Interface, ethtool.DriverCorrectedBits, ethtool.DriverReceivedBits))...),
		}
		if t := v.Transceiver; t != nil && t.Readable && t.Module != nil {
			fix = append(fix, do(fmt.Sprintf("Check the module's RX power per lane against its thresholds; clean both connectors, reseat, and replace %s if a lane stays weak", moduleName(t)), "linerate", "doctor", "--iface", v.Interface))
		} else {
			fix = append(fix, do("Clean and reseat the cable or modules at both ends; replace the cable if the ratio stays high"))
		}
		fix = append(fix, do("Compare the FEC lanes and the histogram of errors per codeword: one bad lane points at one fibre or one laser, all lanes at the cable or the host's SerDes", "ethtool", "-I", "--show-fec", v.Interface))
		out = append(out, Finding{ID: "fec.ber_high", Severity: Severity(sev), Subject: v.Interface, Summary: summary, Evidence: ev, Fix: fix})
	}
	return out
}
