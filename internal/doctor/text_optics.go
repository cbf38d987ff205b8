package doctor

import (
	"fmt"
	"strconv"
	"strings"

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
		t.field("", fmt.Sprintf("%d link-down events since the driver loaded", *l.DownEvents))
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
	if !t.Monitors {
		tw.field("", st.Dim("no optical monitors (passive cable, or not implemented)"))
		return
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
	for _, l := range t.Lanes {
		s := judgeLane(t, l)
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
		switch {
		case s.dark:
			row = st.Red(row + "   ◀ dark")
		case s.txFault:
			row = st.Red(row + "   ◀ TX fault")
		case s.lowAlarm:
			row = st.Red(row + "   ◀ below alarm")
		case s.low:
			row = st.Yellow(row + "   ◀ low")
		}
		tw.para(pad, hang, row)
	}
	warn, alarm := rxLowThresholds(t)
	th := fmt.Sprintf("rx low warning %s", fmtDBm(&warn))
	if alarm > 0 {
		th += fmt.Sprintf(", alarm %s", fmtDBm(&alarm))
	}
	if t.Thresholds == nil || t.Thresholds.RXPowerLowWarnMW == nil {
		th = fmt.Sprintf("no thresholds from the module; judged against %.0f dBm", defaultLowDBm)
	}
	tw.para(pad, pad, st.Dim(th))
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
