package doctor

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/sff"
)

// Optics rules: the plugged module's own diagnostics, judged against its
// own thresholds (SFF-8472 A2h, SFF-8636 page 03h, CMIS page 02h).

// darkMW is the RX power at or below which a lane counts as dark: 1 µW
// (−30 dBm), far below any receiver's sensitivity.
const darkMW = 0.001

// defaultLowDBm is the RX power below which a lane is weak when the
// module gives no threshold: −10 dBm, under the sensitivity of most
// 25G-per-lane short- and long-reach receivers plus margin.
const defaultLowDBm = -10.0

// laneState is what the optics rules and the optics table say of a lane.
type laneState struct {
	dark, low, lowAlarm, txFault bool
}

// judgeLane looks at one lane against the module's thresholds.
func judgeLane(t *inventory.Transceiver, l sff.Lane) laneState {
	var s laneState
	los := l.RXLOS != nil && *l.RXLOS
	if los || (l.RXPowerMW != nil && *l.RXPowerMW <= darkMW) {
		s.dark = true
	}
	if !s.dark && l.RXPowerMW != nil {
		warn, alarm := rxLowThresholds(t)
		s.low = *l.RXPowerMW < warn
		s.lowAlarm = alarm > 0 && *l.RXPowerMW < alarm
	}
	s.txFault = (l.TXFault != nil && *l.TXFault) || (l.TXLOS != nil && *l.TXLOS)
	return s
}

// rxLowThresholds returns the module's RX power low warning and alarm in
// mW, or −10 dBm and no alarm when it gives none.
func rxLowThresholds(t *inventory.Transceiver) (warn, alarm float64) {
	if th := t.Thresholds; th != nil && th.RXPowerLowWarnMW != nil && *th.RXPowerLowWarnMW > 0 {
		warn = *th.RXPowerLowWarnMW
		if th.RXPowerLowAlarmMW != nil {
			alarm = *th.RXPowerLowAlarmMW
		}
		return warn, alarm
	}
	return mwOf(defaultLowDBm), 0
}

func mwOf(dbm float64) float64 { return math.Pow(10, dbm/10) }

// fmtDBm writes a power as a person reads it: "−2.01 dBm", "no light".
func fmtDBm(mw *float64) string {
	if mw == nil {
		return "?"
	}
	d, ok := sff.DBm(*mw)
	if !ok {
		return "no light"
	}
	return fmt.Sprintf("%.2f dBm", d)
}

// moduleName names a module by what identifies it when ordering or
// returning one: vendor, part number, serial number.
func moduleName(t *inventory.Transceiver) string {
	parts := []string{}
	for _, s := range []string{t.VendorName, t.VendorPN} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if t.VendorSN != "" {
		parts = append(parts, "SN "+t.VendorSN)
	}
	if len(parts) == 0 {
		return "the module"
	}
	return strings.Join(parts, " ")
}

func moduleKind(t *inventory.Transceiver) string {
	if t.Media != "" {
		return t.Identifier + " " + t.Media
	}
	return t.Identifier
}

// Media: the module's own media bytes say what carries the signal
// (package sff). RX power, TX bias and the fault flags describe light
// only on optical media: a copper cable's words are not power, and a
// passive DAC that reports a temperature has no receiver at all. A module
// whose media bytes say nothing (unknown) is judged on what its own data
// show: a lane dark beside a lit one, a low but non-zero power and a
// fault flag are light's doing, while an all-zero module is not.

// opticalMedia reports whether t's media bytes say optical.
func opticalMedia(t *inventory.Transceiver) bool {
	return t != nil && t.Readable && t.Module != nil && t.MediaClass == sff.MediaOptical
}

// maybeOptical reports whether t is optical or of unknown media: not a
// copper cable.
func maybeOptical(t *inventory.Transceiver) bool {
	return t != nil && t.Readable && t.Module != nil && t.MediaClass != sff.MediaCopper
}

// transceiverUnreadable: the module's memory cannot be read (or does not
// decode). The Chelsio T6 host with cheap CWDM4 optics: two of ten used
// never linked, and `ethtool -m` could not read them.
func transceiverUnreadable(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		t := v.Transceiver
		if t == nil || t.Readable {
			continue
		}
		msg := ""
		if t.Error != nil {
			msg = *t.Error
		}
		ev := map[string]any{"error": msg, "driver": v.Driver, "operstate": v.Operstate}
		if v.PCI != "" {
			ev["pci"] = v.PCI
		}
		summary := fmt.Sprintf("the module in %s does not answer: reading its EEPROM failed (%s). A module whose memory cannot be read almost never links", v.Interface, msg)
		if strings.HasPrefix(msg, "ENODEV") {
			summary = fmt.Sprintf("no module answers in %s's cage (%s): the cage is empty, or the module in it is dead", v.Interface, msg)
		} else if strings.HasPrefix(msg, "the module answered") {
			summary = fmt.Sprintf("the module in %s answered, but its memory is garbled: %s", v.Interface, strings.TrimPrefix(msg, "the module answered but its memory does not decode: "))
		}
		out = append(out, Finding{
			ID: "transceiver.unreadable", Severity: Critical, Subject: v.Interface,
			Summary:  summary,
			Evidence: ev,
			Fix: []Fix{
				do(fmt.Sprintf("Reseat the module in %s: pull it out, wait 10 s, push it in until it latches", v.Interface)).
					verify("Then read it", "ethtool", "-m", v.Interface),
				do("If it still cannot be read, try it in another port or host: if it fails there too the module is dead (replace it), if it reads there the cage or the NIC is at fault"),
				do("Look for the driver's module errors", shell(fmt.Sprintf("dmesg | grep -i -e %s -e sfp -e qsfp -e module", v.Interface))...),
			},
		})
	}
	return out
}

// isParallel says whether each lane has its own fibre (an MPO module):
// then one dark lane can be one broken fibre. Otherwise (CWDM4, LR4, FR4
// …) all lanes share a fibre pair on separate wavelengths.
func isParallel(t *inventory.Transceiver) bool {
	if strings.HasPrefix(t.Connector, "MPO") || strings.Contains(t.Connector, "MXC") {
		return true
	}
	for _, k := range []string{"SR4", "SR8", "SR10", "PSM4", "DR4", "SR2"} {
		if strings.Contains(t.Media, k) {
			return true
		}
	}
	return false
}

func laneList(lanes []int) string {
	s := make([]string, len(lanes))
	for i, l := range lanes {
		s[i] = strconv.Itoa(l)
	}
	if len(s) == 1 {
		return "lane " + s[0]
	}
	return "lanes " + strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// lanePowers maps lane numbers to RX power as text, for evidence.
func lanePowers(t *inventory.Transceiver) map[string]string {
	m := map[string]string{}
	for _, l := range t.Lanes {
		m[strconv.Itoa(l.Lane)] = fmtDBm(l.RXPowerMW)
	}
	return m
}

// transceiverLaneDark: a lane receives no light while another does, or
// every lane is dark on a port with an optical module plugged in: a
// module is plugged to carry a link, and a port without carrier is where
// to look first, named with --iface or not.
func transceiverLaneDark(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		t := v.Transceiver
		if !maybeOptical(t) || !t.Monitors {
			continue
		}
		var dark, lit []int
		for _, l := range t.Lanes {
			if l.RXPowerMW == nil && l.RXLOS == nil {
				continue
			}
			if judgeLane(t, l).dark {
				dark = append(dark, l.Lane)
			} else if l.RXPowerMW != nil {
				lit = append(lit, l.Lane)
			}
		}
		// Every lane dark: an optical module is plugged to carry a link, so
		// its port should have one, up or not; a module of unknown media
		// is judged so only where the port is up or named.
		if len(dark) == 0 || (len(lit) == 0 && !opticalMedia(t) && v.Operstate != "up" && !v.named) {
			continue
		}
		name := moduleName(t)
		ev := map[string]any{"dark_lanes": dark, "rx_power": lanePowers(t), "module": name, "media": t.Media}
		var summary string
		if len(lit) > 0 {
			summary = fmt.Sprintf("%s of the %s module in %s receives no light while %s do: the link cannot run on the lanes left",
				laneList(dark), moduleKind(t), v.Interface, strings.TrimPrefix(strings.TrimPrefix(laneList(lit), "lanes "), "lane "))
		} else {
			summary = fmt.Sprintf("every lane of the %s module in %s is dark (no light received): nothing reaches it from the peer", moduleKind(t), v.Interface)
			if v.Operstate != "up" {
				summary = fmt.Sprintf("%s has no carrier and every lane of its %s module is dark (no light received): nothing reaches it from the peer", v.Interface, moduleKind(t))
			}
		}
		if len(t.DataPaths) > 0 {
			ev["data_paths"] = darkPaths(t, dark)
		}
		var fix []Fix
		first := strconv.Itoa(dark[0])
		switch {
		case len(lit) == 0:
			fix = append(fix,
				do("Check that the fibre is plugged at both ends and that TX and RX are not swapped (a duplex patch cord crossed twice, or an MPO trunk of the wrong polarity)"),
				do(fmt.Sprintf("Read the peer's module, its TX power and TX fault flags (ethtool -m with the peer's interface); if the peer transmits, clean both connectors and test the fibre, then replace %s", name)))
		case isParallel(t):
			fix = append(fix,
				do(fmt.Sprintf("Each lane of a %s module has its own fibre: clean and inspect the MPO connectors at both ends and check fibre %s of the trunk", t.Media, first)),
				do(fmt.Sprintf("Read the peer's TX power on lane %s (ethtool -m with the peer's interface): if it transmits, replace %s", first, name)))
		default:
			fix = append(fix,
				do(fmt.Sprintf("All lanes of a %s module share one fibre on separate wavelengths, so the fibre is not the cause: lane %s's wavelength dies at the peer's laser or at this module's receiver", t.Media, first)),
				do(fmt.Sprintf("Read the peer's TX power on lane %s: ethtool -m with the peer's interface (Transmit avg optical power, channel %s)", first, first)),
				do(fmt.Sprintf("If the peer's lane %s transmits, replace this module: %s; if it does not, replace the peer's", first, name)))
		}
		fix = append(fix, do("Read this module again after any change", "ethtool", "-m", v.Interface))
		out = append(out, Finding{ID: "transceiver.lane_dark", Severity: Critical, Subject: v.Interface, Summary: summary, Evidence: ev, Fix: fix})
	}
	return out
}

// transceiverRXPowerLow: a lit lane below the module's own low warning
// (critical below its low alarm), or below −10 dBm without thresholds.
func transceiverRXPowerLow(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		t := v.Transceiver
		if !maybeOptical(t) || !t.Monitors {
			continue
		}
		warn, alarm := rxLowThresholds(t)
		var low []int
		sev := Warning
		powers := map[string]string{}
		for _, l := range t.Lanes {
			s := judgeLane(t, l)
			if s.dark || !s.low {
				continue
			}
			low = append(low, l.Lane)
			powers[strconv.Itoa(l.Lane)] = fmtDBm(l.RXPowerMW)
			if s.lowAlarm {
				sev = Critical
			}
		}
		if len(low) == 0 {
			continue
		}
		basis := fmt.Sprintf("the module's own low-warning threshold of %s", fmtDBm(&warn))
		ev := map[string]any{"lanes": low, "rx_power": powers, "low_warn": fmtDBm(&warn), "module": moduleName(t)}
		if alarm > 0 {
			basis += fmt.Sprintf(" (alarm at %s)", fmtDBm(&alarm))
			ev["low_alarm"] = fmtDBm(&alarm)
		} else if t.Thresholds == nil || t.Thresholds.RXPowerLowWarnMW == nil {
			basis = fmt.Sprintf("%.0f dBm (the module gives no thresholds)", defaultLowDBm)
		}
		var ps []string
		for _, l := range low {
			ps = append(ps, powers[strconv.Itoa(l)])
		}
		out = append(out, Finding{
			ID: "transceiver.rx_power_low", Severity: sev, Subject: v.Interface,
			Summary: fmt.Sprintf("%s of the %s module in %s receive%s %s, below %s: bit errors and FEC corrections rise as the power falls",
				laneList(low), moduleKind(t), v.Interface, map[bool]string{true: "s", false: ""}[len(low) == 1], strings.Join(ps, ", "), basis),
			Evidence: ev,
			Fix: []Fix{
				do(fmt.Sprintf("Clean the connectors of %s's module and of the peer's (inspect with a fibre scope, one click-clean per end)", v.Interface)).
					verify("Then read the module again", "ethtool", "-m", v.Interface),
				do("Check the path against the module's power budget: fibre length, patch panels and their connectors, tight bends"),
				do(fmt.Sprintf("Read the peer's TX power on the same lane (ethtool -m with the peer's interface); if it transmits normally, replace %s", moduleName(t))),
			},
		})
	}
	return out
}

// transceiverTXFault: a lane's transmitter reports a fault or loss of its
// input signal.
func transceiverTXFault(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		t := v.Transceiver
		if !maybeOptical(t) {
			continue
		}
		var lanes []int
		for _, l := range t.Lanes {
			if judgeLane(t, l).txFault {
				lanes = append(lanes, l.Lane)
			}
		}
		if len(lanes) == 0 {
			continue
		}
		out = append(out, Finding{
			ID: "transceiver.tx_fault", Severity: Critical, Subject: v.Interface,
			Summary: fmt.Sprintf("%s of the %s module in %s report%s a transmitter fault (TX fault or TX LOS flag): the laser or its driver has failed, or the NIC sends it no signal",
				laneList(lanes), moduleKind(t), v.Interface, map[bool]string{true: "s", false: ""}[len(lanes) == 1]),
			Evidence: map[string]any{"lanes": lanes, "module": moduleName(t)},
			Fix: []Fix{
				do(fmt.Sprintf("Replace the module: %s (reseating rarely clears a TX fault)", moduleName(t))).
					verify("Then read the new one", "ethtool", "-m", v.Interface),
				do("If a new module faults too, the NIC's SerDes is suspect: check the link and the kernel log (dmesg)", "ethtool", v.Interface),
			},
		})
	}
	return out
}

// transceiverTemperatureHigh: the module at or above its own high
// warning (critical at its alarm), or raising the flag itself.
func transceiverTemperatureHigh(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		t := v.Transceiver
		if t == nil || !t.Readable || t.TemperatureC == nil {
			continue
		}
		temp := *t.TemperatureC
		th := t.Thresholds
		if th == nil {
			th = &sff.Thresholds{}
		}
		var sev Severity
		var basis string
		if th.TemperatureHighAlarmC != nil && temp >= *th.TemperatureHighAlarmC {
			sev, basis = Critical, fmt.Sprintf("at or above its own alarm threshold of %.1f °C", *th.TemperatureHighAlarmC)
		} else if slices.Contains(t.Alarms, "temperature_high_alarm") {
			sev, basis = Critical, "its high-temperature alarm flag is set"
		} else if th.TemperatureHighWarnC != nil && temp >= *th.TemperatureHighWarnC {
			sev, basis = Warning, fmt.Sprintf("at or above its own warning threshold of %.1f °C", *th.TemperatureHighWarnC)
		} else if slices.Contains(t.Alarms, "temperature_high_warn") {
			sev, basis = Warning, "its high-temperature warning flag is set"
		} else {
			continue
		}
		out = append(out, Finding{
			ID: "transceiver.temperature_high", Severity: sev, Subject: v.Interface,
			Summary: fmt.Sprintf("the %s module in %s is at %.1f °C, %s: hot lasers lose power and age fast, and modules shut down at their limit",
				moduleKind(t), v.Interface, temp, basis),
			Evidence: map[string]any{"temperature_c": temp, "module": moduleName(t)},
			Fix: []Fix{
				do("Improve airflow over the NIC's cages (fan speed, blanking panels, no cables blocking the vents)").
					verify("Then read its temperature again", "ethtool", "-m", v.Interface),
				do("Check the module's rated case temperature (commercial modules: 0-70 °C) against the chassis; use an extended-temperature module where it runs hot"),
				do(fmt.Sprintf("If it stays hot with good airflow, replace %s", moduleName(t))),
			},
		})
	}
	return out
}

// darkPaths names, for evidence, the CMIS data paths the dark lanes
// belong to: "2: 100GBASE-LR4 on media lanes 5-8 (host lanes 5-8)".
func darkPaths(t *inventory.Transceiver, dark []int) []string {
	var out []string
	for _, dp := range t.DataPaths {
		for _, l := range dark {
			if slices.Contains(dp.MediaLanes, l) {
				out = append(out, fmt.Sprintf("%d: %s on media %s (host %s)", dp.Number, dp.Media, laneSpan(dp.MediaLanes), laneSpan(dp.HostLanes)))
				break
			}
		}
	}
	return out
}

// laneSpan writes lanes as "lanes 5-8", "lane 3" or "lanes 1, 3".
func laneSpan(lanes []int) string {
	switch {
	case len(lanes) == 0:
		return "no lanes"
	case len(lanes) == 1:
		return "lane " + strconv.Itoa(lanes[0])
	}
	contiguous := true
	for i := 1; i < len(lanes); i++ {
		if lanes[i] != lanes[i-1]+1 {
			contiguous = false
		}
	}
	if contiguous {
		return fmt.Sprintf("lanes %d-%d", lanes[0], lanes[len(lanes)-1])
	}
	return laneList(lanes)
}

// laserOffMA is the TX bias at or below which a laser counts as off: one
// step of the monitor (2 µA).
const laserOffMA = 0.002

// laserOff reports whether lane l's laser is off with the module's own
// low bias alarm: its flag, or the bias under its threshold.
func laserOff(t *inventory.Transceiver, l sff.Lane) bool {
	if l.TXBiasMA == nil || *l.TXBiasMA > laserOffMA {
		return false
	}
	if slices.Contains(l.Flags, "tx_bias_low_alarm") {
		return true
	}
	th := t.Thresholds
	return th != nil && th.TXBiasLowAlarmMA != nil && *l.TXBiasMA < *th.TXBiasLowAlarmMA
}

// shouldCarryLight says why a port's module should transmit: the port is
// up or named, another lane of the module transmits, the peer's light
// arrives, or a data path of the module is activated. "" when none holds
// (a port left idle, whose lasers may well be off).
func shouldCarryLight(v *nicView, t *inventory.Transceiver, off []int) string {
	switch {
	case v.Operstate == "up":
		return "the port is up"
	case v.named:
		return "the port was named with --iface"
	}
	for _, l := range t.Lanes {
		if slices.Contains(off, l.Lane) {
			continue
		}
		if l.TXBiasMA != nil && *l.TXBiasMA > laserOffMA {
			return fmt.Sprintf("lane %d's laser is on", l.Lane)
		}
	}
	for _, l := range t.Lanes {
		if l.RXPowerMW != nil && *l.RXPowerMW > darkMW {
			return "the peer's light arrives on lane " + strconv.Itoa(l.Lane)
		}
	}
	for _, dp := range t.DataPaths {
		if dp.State == "activated" {
			return fmt.Sprintf("its data path %d is activated", dp.Number)
		}
	}
	return ""
}

// transceiverLaserOff: a lane's laser bias at 0 with the module's own low
// bias alarm, on a port that should carry light. A lane that flags a TX
// fault is left to transceiver.tx_fault, which says more.
func transceiverLaserOff(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		t := v.Transceiver
		if !opticalMedia(t) || !t.Monitors {
			continue
		}
		var off, disabled []int
		for _, l := range t.Lanes {
			if judgeLane(t, l).txFault || !laserOff(t, l) {
				continue
			}
			off = append(off, l.Lane)
			if l.TXDisabled != nil && *l.TXDisabled {
				disabled = append(disabled, l.Lane)
			}
		}
		if len(off) == 0 {
			continue
		}
		why := shouldCarryLight(v, t, off)
		if why == "" {
			continue
		}
		ev := map[string]any{"lanes": off, "module": moduleName(t), "operstate": v.Operstate, "why_light_expected": why}
		basis := "the module's own low-bias alarm"
		if th := t.Thresholds; th != nil && th.TXBiasLowAlarmMA != nil {
			basis += fmt.Sprintf(" (%.1f mA)", *th.TXBiasLowAlarmMA)
			ev["tx_bias_low_alarm_ma"] = *th.TXBiasLowAlarmMA
		}
		summary := fmt.Sprintf("%s of the %s module in %s %s its laser off: TX bias 0 mA, under %s, while %s; the peer receives nothing there",
			laneList(off), moduleKind(t), v.Interface, map[bool]string{true: "has", false: "have"}[len(off) == 1], basis, why)
		fix := []Fix{}
		if len(disabled) > 0 {
			ev["tx_disabled_lanes"] = disabled
			summary += fmt.Sprintf(" (%s disabled by the host)", laneList(disabled))
			fix = append(fix, do("The host disabled the transmitter: bring the port up, and check that nothing (a power-saving policy, a management agent) keeps the module's TX disabled",
				"ip", "link", "set", "dev", v.Interface, "up").verify("Then read the lane's bias again", "ethtool", "-m", v.Interface))
		}
		fix = append(fix,
			do("Check the module's power mode: a module held in low power keeps its lasers off", "ethtool", "--show-module", v.Interface),
			do("Let the module power up fully", "ethtool", "--set-module", v.Interface, "power-mode-policy", "high").
				verify("Then read the lane's bias again", "ethtool", "-m", v.Interface),
			do(fmt.Sprintf("If the bias stays at 0 with the port up and the module in high power, the laser is dead: replace %s", moduleName(t))))
		out = append(out, Finding{ID: "transceiver.laser_off", Severity: Warning, Subject: v.Interface, Summary: summary, Evidence: ev, Fix: fix})
	}
	return out
}
