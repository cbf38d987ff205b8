package doctor

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/nicstats"
	"github.com/linerate/linerate/internal/sff"
)

// writeEthtool writes a NIC's live ethtool facts: link modes, FEC, the
// module with its per-lane optics table, counters, rings and channels.
func writeEthtool(t *textWriter, n NICReport) {
	writeLinkModes(t, n.Link)
	writeFEC(t, n.FEC)
	if m := n.Transceiver; m != nil {
		writeModule(t, m)
	}
	writeCounters(t, n.Counters)
	writeQueues(t, n)
}

func writeLinkModes(t *textWriter, l *inventory.Link) {
	st := t.st
	if l == nil {
		return
	}
	var parts []string
	if l.SpeedMbps != nil {
		parts = append(parts, fmt.Sprintf("%s Gbit/s %s", trimFloat(float64(*l.SpeedMbps)/1000), l.Duplex))
	} else {
		parts = append(parts, "speed unknown")
	}
	if l.Lanes != nil {
		parts = append(parts, fmt.Sprintf("%d lanes", *l.Lanes))
	}
	if l.Autoneg != nil {
		parts = append(parts, "autoneg "+map[bool]string{true: "on", false: "off"}[*l.Autoneg])
	}
	if l.SupportedMaxMbps != nil {
		parts = append(parts, fmt.Sprintf("supports up to %s Gbit/s", trimFloat(float64(*l.SupportedMaxMbps)/1000)))
	}
	if len(l.PartnerAdvertised) > 0 {
		parts = append(parts, "partner advertises "+strings.Join(l.PartnerAdvertised, " "))
	}
	t.field("ethtool", strings.Join(parts, ", "))
	if l.Detected != nil && !*l.Detected {
		why := "no link detected"
		if l.ExtState != "" {
			why += " (" + l.ExtState
			if l.ExtSubstate != "" {
				why += ": " + l.ExtSubstate
			}
			why += ")"
		}
		t.field("", st.Yellow(why))
	}
	if l.DownEvents != nil && *l.DownEvents > 0 {
		t.field("", fmt.Sprintf("%d link-down event%s since the driver loaded", *l.DownEvents, plural(int(*l.DownEvents))))
	}
}

func writeFEC(t *textWriter, f *inventory.FEC) {
	st := t.st
	if f == nil {
		return
	}
	active := "not reported (no link)"
	if f.Active != nil {
		active = *f.Active
	}
	conf := strings.Join(f.Configured, "/")
	if f.Auto {
		conf = strings.TrimSpace("auto " + conf)
	}
	line := fmt.Sprintf("active %s, configured %s", active, conf)
	if f.CorrectedBlocks != nil || f.UncorrectableBlocks != nil {
		var c []string
		if f.CorrectedBlocks != nil {
			c = append(c, fmt.Sprintf("corrected %d", *f.CorrectedBlocks))
		}
		if f.UncorrectableBlocks != nil {
			u := fmt.Sprintf("uncorrectable %d", *f.UncorrectableBlocks)
			if *f.UncorrectableBlocks > 0 {
				u = st.Yellow(u)
			}
			c = append(c, u)
		}
		line += "; blocks " + strings.Join(c, ", ") + " since the driver loaded"
	}
	t.field("fec", line)
	if f.PreFECBER != nil {
		b := fmt.Sprintf("pre-FEC BER %s (corrected bits over bits received since the driver loaded)", fmtBER(*f.PreFECBER))
		if f.Lanes != nil && len(f.Lanes.PreFECBER) > 0 {
			var per []string
			for i, v := range f.Lanes.PreFECBER {
				per = append(per, fmt.Sprintf("%d: %s", i, fmtBER(v)))
			}
			b += "; by FEC lane " + strings.Join(per, ", ")
		}
		switch ethtool.BERSeverity(*f.PreFECBER) {
		case "critical":
			b = st.Red(b)
		case "warning":
			b = st.Yellow(b)
		}
		t.field("", b)
	}
	writeFECHist(t, f.Hist)
}

// writeFECHist writes the FEC histogram as a small table: codewords per
// bin of symbol errors, in total and per FEC lane, with a bar of the
// total's order of magnitude (one mark per factor of ten).
func writeFECHist(t *textWriter, hist []ethtool.FECHistBin) {
	if len(hist) == 0 {
		return
	}
	lanes := 0
	for _, b := range hist {
		lanes = max(lanes, len(b.PerLane))
	}
	const pad = "    "
	head := fmt.Sprintf("%-15s %-9s", "symbol errors", "codewords")
	for l := range lanes {
		head += fmt.Sprintf(" %-8s", fmt.Sprintf("lane %d", l))
	}
	t.para(pad, pad, t.st.Dim("FEC histogram (codewords by symbol errors, since the driver loaded)"))
	t.para(pad, pad, t.st.Dim(strings.TrimRight(head, " ")))
	for _, b := range hist {
		bin := strconv.FormatUint(uint64(b.BinLow), 10)
		if b.BinHigh != b.BinLow {
			bin += "-" + strconv.FormatUint(uint64(b.BinHigh), 10)
		}
		row := fmt.Sprintf("%-15s %-9s", bin, countText(b.Val))
		for l := range lanes {
			v := "-"
			if l < len(b.PerLane) {
				v = countText(b.PerLane[l])
			}
			row += fmt.Sprintf(" %-8s", v)
		}
		row = strings.TrimRight(row, " ") + "  " + strings.Repeat("▮", magnitude(b.Val))
		t.para(pad, pad, strings.TrimRight(row, " "))
	}
}

// countText writes a count in at most 7 characters: exact below 10000,
// then with an SI prefix ("8.59G").
func countText(v uint64) string {
	if v < 10000 {
		return strconv.FormatUint(v, 10)
	}
	f := float64(v)
	for _, p := range []string{"k", "M", "G", "T", "P", "E"} {
		f /= 1000
		if f < 1000 {
			return strconv.FormatFloat(f, 'f', 2, 64) + p
		}
	}
	return strconv.FormatUint(v, 10)
}

// magnitude is the number of decimal digits of v: 0 for 0, 1 for 1-9 …
func magnitude(v uint64) int {
	n := 0
	for ; v > 0; v /= 10 {
		n++
	}
	return n
}

// writeModule writes the module the way a person reads `ethtool -m`:
// identity, temperature and voltage, then a row per lane with the bad
// lanes marked.
func writeModule(tw *textWriter, t *inventory.Transceiver) {
	st := tw.st
	if !t.Readable {
		msg := "unreadable"
		if t.Error != nil {
			msg += ": " + *t.Error
		}
		tw.field("module", st.Red(msg))
		return
	}
	id := []string{moduleKind(t)}
	if t.Connector != "" {
		id = append(id, t.Connector)
	}
	if t.WavelengthNM != nil {
		id = append(id, trimFloat(*t.WavelengthNM)+" nm")
	}
	made := ""
	if t.Date != "" {
		made = ", made " + t.Date
	}
	tw.field("module", fmt.Sprintf("%s: %s%s", strings.Join(id, ", "), moduleName(t), made))
	var env []string
	if t.TemperatureC != nil {
		s := fmt.Sprintf("%.1f °C", *t.TemperatureC)
		if th := t.Thresholds; th != nil && th.TemperatureHighWarnC != nil && th.TemperatureHighAlarmC != nil {
			s += fmt.Sprintf(" (warn %.0f, alarm %.0f)", *th.TemperatureHighWarnC, *th.TemperatureHighAlarmC)
			if *t.TemperatureC >= *th.TemperatureHighWarnC {
				s = st.Yellow(s)
			}
		}
		env = append(env, s)
	}
	if t.VoltageV != nil {
		env = append(env, fmt.Sprintf("%.3f V", *t.VoltageV))
	}
	if t.State != "" && t.State != "ready" {
		env = append(env, st.Yellow("state "+t.State))
	}
	if len(env) > 0 {
		tw.field("", strings.Join(env, ", "))
	}
	if t.MediaClass == sff.MediaCopper {
		kind := "copper"
		if t.Cable != "" {
			kind = t.Cable + " copper cable"
		}
		tw.field("", st.Dim(fmt.Sprintf("%s (%s): no light, so no optical lanes to judge", kind, t.MediaBasis)))
		return
	}
	if !t.Monitors {
		tw.field("", st.Dim("no optical monitors (passive cable, or not implemented)"))
		return
	}
	if t.MediaClass == sff.MediaUnknown {
		tw.field("", st.Dim("media not said by the module ("+t.MediaBasis+"): judged on its own values"))
	}
	writeLaneTable(tw, t)
}

// writeLaneTable writes one row per lane: RX power, TX power, bias, flags
// (what does not fit wraps under the power columns).
func writeLaneTable(tw *textWriter, t *inventory.Transceiver) {
	st := tw.st
	const pad = "    "
	hang := pad + strings.Repeat(" ", 6) // under the rx power column
	tw.para(pad, hang, st.Dim(fmt.Sprintf("%-5s %-21s %-21s %-10s %s", "lane", "rx power", "tx power", "bias", "flags")))
	for _, g := range laneGroups(t) {
		if g.head != "" {
			tw.para(pad, hang, st.Bold(g.head))
		}
		for _, l := range g.lanes {
			writeLaneRow(tw, t, l, pad, hang)
		}
	}
	warn, alarm := rxLowThresholds(t)
	th := fmt.Sprintf("rx low warning %s", fmtDBm(&warn))
	if alarm > 0 {
		th += fmt.Sprintf(", alarm %s", fmtDBm(&alarm))
	}
	if t.Thresholds == nil || t.Thresholds.RXPowerLowWarnMW == nil {
		th = fmt.Sprintf("no thresholds from the module; judged against %.0f dBm", defaultLowDBm)
	}
	if t.RXPowerType == "OMA" {
		th += " (RX power is OMA, not average)"
	}
	tw.para(pad, pad, st.Dim(th))
}

// laneGroup is lanes shown together under a heading: a CMIS data path,
// or every lane of a module without data paths (no heading).
type laneGroup struct {
	head  string
	lanes []sff.Lane
}

// laneGroups groups a module's lanes by data path: "data path 2:
// 100GBASE-LR4 from host lanes 5-8 (CAUI-4 C2M), activated". Lanes in no
// data path come last, under their own heading.
func laneGroups(t *inventory.Transceiver) []laneGroup {
	if len(t.DataPaths) == 0 {
		return []laneGroup{{lanes: t.Lanes}}
	}
	var out []laneGroup
	seen := map[int]bool{}
	for _, dp := range t.DataPaths {
		g := laneGroup{head: dataPathHead(dp)}
		for _, l := range t.Lanes {
			if slices.Contains(dp.MediaLanes, l.Lane) && !seen[l.Lane] {
				g.lanes = append(g.lanes, l)
				seen[l.Lane] = true
			}
		}
		out = append(out, g)
	}
	rest := laneGroup{head: "not in a data path"}
	for _, l := range t.Lanes {
		if !seen[l.Lane] {
			rest.lanes = append(rest.lanes, l)
		}
	}
	if len(rest.lanes) > 0 {
		out = append(out, rest)
	}
	return out
}

// dataPathHead words a data path for the lane table.
func dataPathHead(dp sff.DataPath) string {
	s := fmt.Sprintf("data path %d: %s on media %s, from host %s (%s)", dp.Number, dp.Media, laneSpan(dp.MediaLanes), laneSpan(dp.HostLanes), dp.Host)
	if dp.State != "" {
		s += ", " + dp.State
	}
	if !dp.Configured {
		s += ", not configured (the module's default application)"
	}
	return s
}

// writeLaneRow writes one lane: RX power, TX power, bias, flags, and the
// mark of what is wrong with it.
func writeLaneRow(tw *textWriter, t *inventory.Transceiver, l sff.Lane, pad, hang string) {
	st := tw.st
	var flags []string
	if l.RXLOS != nil && *l.RXLOS {
		flags = append(flags, "RX LOS")
	}
	if l.TXFault != nil && *l.TXFault {
		flags = append(flags, "TX fault")
	}
	if l.TXLOS != nil && *l.TXLOS {
		flags = append(flags, "TX LOS")
	}
	if l.TXDisabled != nil && *l.TXDisabled {
		flags = append(flags, "TX off")
	}
	for _, f := range l.Flags {
		flags = append(flags, flagText(f))
	}
	row := fmt.Sprintf("%-5d %-21s %-21s %-10s %s", l.Lane, power(l.RXPowerMW), power(l.TXPowerMW), bias(l.TXBiasMA), strings.Join(flags, ", "))
	row = strings.TrimRight(row, " ")
	switch mark, sev := LaneMark(t, l); sev {
	case Critical:
		row = st.Red(row + "   ◀ " + mark)
	case Warning:
		row = st.Yellow(row + "   ◀ " + mark)
	}
	tw.para(pad, hang, row)
}

// LaneMark says what is wrong with lane l of module t, as doctor's lane
// table marks it ("dark", "TX fault", "below alarm", "laser off", "low")
// with the severity of the finding it feeds; "" for a healthy lane, or
// any lane of a copper cable.
func LaneMark(t *inventory.Transceiver, l sff.Lane) (string, Severity) {
	if !maybeOptical(t) {
		return "", ""
	}
	s := judgeLane(t, l)
	switch {
	case s.dark:
		return "dark", Critical
	case s.txFault:
		return "TX fault", Critical
	case s.lowAlarm:
		return "below alarm", Critical
	case opticalMedia(t) && laserOff(t, l):
		return "laser off", Warning
	case s.low:
		return "low", Warning
	}
	return "", ""
}

// flagText words a module flag as ethtool -m does: "rx_power_low_warn"
// is "rx power low warning".
func flagText(f string) string {
	f = strings.ReplaceAll(f, "_", " ")
	f = strings.Replace(f, " warn", " warning", 1)
	return f
}

// power writes optical power as "−2.01 dBm (0.630 mW)" or "no light".
func power(mw *float64) string {
	if mw == nil {
		return "-"
	}
	if _, ok := sff.DBm(*mw); !ok {
		return "no light"
	}
	return fmt.Sprintf("%s (%.3f mW)", fmtDBm(mw), *mw)
}

func bias(ma *float64) string {
	if ma == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f mA", *ma)
}

func writeCounters(t *textWriter, c *nicstats.Counters) {
	if c == nil || len(c.ByCause) == 0 {
		return
	}
	var parts []string
	for _, cause := range nicstats.Causes {
		if v, ok := c.Get(cause); ok {
			parts = append(parts, fmt.Sprintf("%s %d", cause, v))
		}
	}
	t.field("counters", strings.Join(parts, ", ")+" (totals since the driver loaded)")
}

func writeQueues(t *textWriter, n NICReport) {
	var parts []string
	if r := n.Rings; r != nil {
		if r.RX != nil {
			parts = append(parts, "rx "+ofMax(*r.RX, r.RXMax))
		}
		if r.TX != nil {
			parts = append(parts, "tx "+ofMax(*r.TX, r.TXMax))
		}
	}
	if len(parts) > 0 {
		t.field("rings", strings.Join(parts, ", ")+" descriptors")
	}
	parts = nil
	if c := n.Channels; c != nil {
		for _, k := range []struct {
			name string
			v    *uint32
			lim  *uint32
		}{{"combined", c.Combined, c.CombinedMax}, {"rx", c.RX, c.RXMax}, {"tx", c.TX, c.TXMax}} {
			if k.v != nil {
				parts = append(parts, k.name+" "+ofMax(*k.v, k.lim))
			}
		}
	}
	if len(parts) > 0 {
		t.field("channels", strings.Join(parts, ", "))
	}
}

func ofMax(v uint32, limit *uint32) string {
	s := strconv.FormatUint(uint64(v), 10)
	if limit != nil {
		s += " of " + strconv.FormatUint(uint64(*limit), 10)
	}
	return s
}
