package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/sff"
)

// ethtoolOut is `ethtool -m` text: each label's values in order (a label
// may repeat), labels with their padding collapsed ("Laser bias current
// high alarm (Chan 1)").
type ethtoolOut map[string][]string

var (
	spaces = regexp.MustCompile(`\s+`)
	chanRE = regexp.MustCompile(`(\S)\(Chan`)
)

// parseEthtool reads the "\t<label> : <value>" lines ethtool prints for
// a module.
func parseEthtool(s string) ethtoolOut {
	out := ethtoolOut{}
	for line := range strings.SplitSeq(s, "\n") {
		label, value, ok := strings.Cut(line, " : ")
		if !ok {
			continue
		}
		label = spaces.ReplaceAllString(strings.TrimSpace(label), " ")
		label = chanRE.ReplaceAllString(label, "$1 (Chan")
		out[label] = append(out[label], strings.TrimSpace(value))
	}
	return out
}

func (e ethtoolOut) get(label string) (string, bool) {
	v, ok := e[label]
	if !ok || len(v) == 0 {
		return "", false
	}
	return v[0], true
}

// number reads the first number of a value: "41.30 degrees C / …" is
// 41.30, "0.6460 mW / -1.90 dBm" 0.6460, "0x11 (QSFP28)" 17.
func number(v string) (float64, bool) {
	f := strings.Fields(v)
	if len(f) == 0 {
		return 0, false
	}
	w := strings.TrimRight(f[0], "mAVnW%")
	if strings.HasPrefix(w, "0x") {
		u, err := strconv.ParseUint(w[2:], 16, 16)
		return float64(u), err == nil
	}
	x, err := strconv.ParseFloat(w, 64)
	return x, err == nil
}

// diff is one field on which the decoders disagree; cause names the
// documented ethtool behaviour that explains it, "" when none does.
type diff struct {
	field, ours, theirs, cause string
}

// Causes of explained differences (docs/testing.md, "Differential
// oracle", gives each with the clause of the specification).
const (
	causeBiasScale   = "ethtool divides the CMIS TX bias (and its thresholds) by the page 01h byte 160 scale instead of multiplying"
	causeLaneFlags   = "ethtool 6.1 tests a CMIS lane flag against the lane's index, not its bit"
	causeExtraLanes  = "ethtool prints eight lanes a bank whatever lanes the applications advertise"
	causeMonitorNA   = "ethtool prints a CMIS monitor page 01h byte 159/160 says the module does not have"
	causeCopperPower = "ethtool prints power and bias words of a copper cable as light"
	causeTunable     = "ethtool takes a CMIS tunable laser (media interface technology 10h, 11h) for a copper cable"
	causeFlatMonitor = "ethtool shows no monitor of a flat-memory CMIS module (a cable); linerate shows its temperature and voltage"
	causeCalTrunc    = "ethtool truncates an externally calibrated SFF-8472 value to a whole count at each step (one count, two for RX power); linerate rounds the exact result"
	causeRXPoly      = "ethtool evaluates the SFF-8472 RX power polynomial as linear in every coefficient"
)

// comparison accumulates the fields compared and the differences.
type comparison struct {
	n     int
	diffs []diff
}

func (c *comparison) add(field, ours, theirs, cause string) {
	c.diffs = append(c.diffs, diff{field, ours, theirs, cause})
}

// num compares a number linerate decoded with the one ethtool printed,
// to ethtool's printed precision. explain, when not nil, names the cause
// of a difference it recognises.
func (c *comparison) num(field string, ours *float64, e ethtoolOut, label string, tol float64, explain func(o, t float64) string) {
	v, printed := e.get(label)
	switch {
	case !printed && ours == nil:
		return
	case !printed:
		c.n++
		cause := ""
		if explain != nil {
			cause = explain(*ours, math.NaN())
		}
		c.add(field, fmt.Sprint(*ours), "not printed", cause)
		return
	case ours == nil:
		c.n++
		cause := ""
		if explain != nil {
			cause = explain(math.NaN(), 0)
		}
		c.add(field, "not decoded", v, cause)
		return
	}
	c.n++
	t, ok := number(v)
	if !ok {
		c.add(field, fmt.Sprint(*ours), v, "")
		return
	}
	if math.Abs(*ours-t) <= tol+1e-9*math.Abs(t) {
		return
	}
	cause := ""
	if explain != nil {
		cause = explain(*ours, t)
	}
	c.add(field, strconv.FormatFloat(*ours, 'g', 6, 64), v, cause)
}

// str compares a string field.
func (c *comparison) str(field, ours string, e ethtoolOut, label string) {
	v, ok := e.get(label)
	if !ok {
		return
	}
	c.n++
	if strings.TrimSpace(v) != ours {
		c.add(field, ours, v, "")
	}
}

var dateRE = regexp.MustCompile(`^20(\d\d)-(\d\d)-(\d\d)(?: lot (.*))?$`)

// rawDate turns linerate's date back into the date code's text.
func rawDate(d string) string {
	if m := dateRE.FindStringSubmatch(d); m != nil {
		return m[1] + m[2] + m[3] + m[4]
	}
	return d
}

// flagLabels maps ethtool's flag labels to linerate's flag names.
var (
	flagQuantity = map[string]string{"Laser bias current": "tx_bias", "Laser tx power": "tx_power",
		"Laser output power": "tx_power", "Laser rx power": "rx_power", "Module temperature": "temperature", "Module voltage": "voltage"}
	flagKind = map[string]string{"high alarm": "high_alarm", "low alarm": "low_alarm", "high warning": "high_warn", "low warning": "low_warn"}
)

// compare holds linerate's module m against ethtool's text of the same
// pages, and returns the differences and the number of fields compared.
func compare(m *sff.Module, pages sff.Pages, e ethtoolOut) ([]diff, int) {
	c := &comparison{}
	if v, ok := e.get("Identifier"); ok {
		c.n++
		if t, _ := number(v); uint8(t) != m.IdentifierCode {
			c.add("identifier", fmt.Sprintf("0x%02x", m.IdentifierCode), v, "")
		}
	}
	if v, ok := e.get("Connector"); ok {
		c.n++
		if t, _ := number(v); uint8(t) != m.ConnectorCode {
			c.add("connector", fmt.Sprintf("0x%02x", m.ConnectorCode), v, "")
		}
	}
	c.str("vendor name", m.VendorName, e, "Vendor name")
	c.str("vendor OUI", m.VendorOUI, e, "Vendor OUI")
	c.str("vendor PN", m.VendorPN, e, "Vendor PN")
	c.str("vendor rev", m.VendorRev, e, "Vendor rev")
	c.str("vendor SN", m.VendorSN, e, "Vendor SN")
	c.str("date code", rawDate(m.Date), e, "Date code")

	cmis := m.Spec == sff.SpecCMIS
	copper := m.MediaClass == sff.MediaCopper
	scale := 1.0
	if p01, ok := pages[sff.Upper(1, 0)]; ok && cmis && len(p01) >= 128 {
		scale = map[byte]float64{1: 2, 2: 4}[(p01[160-128]>>3)&3]
		if scale == 0 {
			scale = 1
		}
	}
	biasScale := func(o, t float64) string {
		// ethtool shifts the raw count right (truncating), then prints
		// to 1 µA: within one 2 µA count and the printing of linerate's
		// value divided by the scale twice.
		if cmis && scale != 1 && !math.IsNaN(o) && math.Abs(o/(scale*scale)-t) <= 0.002+0.0005+1e-9*o {
			return causeBiasScale
		}
		return ""
	}
	// monitorNA explains a monitor linerate leaves out because page 01h
	// byte 159 or 160 says the module has none.
	monitorNA := func(byteN int, bit uint) func(o, _ float64) string {
		return func(o, _ float64) string {
			p01, ok := pages[sff.Upper(1, 0)]
			if cmis && math.IsNaN(o) && ok && len(p01) >= 128 && p01[byteN-128]&(1<<bit) == 0 {
				return causeMonitorNA
			}
			return ""
		}
	}
	// flatMonitor explains a temperature or voltage of a flat-memory
	// CMIS module: ethtool shows none, linerate shows what the lower page
	// reads when it is a value (neither 0000h nor FFFFh).
	flatMonitor := func(next func(o, t float64) string) func(o, t float64) string {
		return func(o, t float64) string {
			if lo := pages[sff.Lower]; cmis && len(lo) >= 128 && lo[2]&0x80 != 0 && math.IsNaN(t) {
				return causeFlatMonitor
			}
			return next(o, t)
		}
	}
	// SFF-8472 external calibration (A0h byte 92 bit 4): ethtool stores
	// each calibrated value in an integer count, truncating.
	extCal, higherOrder := false, false
	if lo := pages[sff.Lower]; m.Spec == sff.SpecSFF8472 && len(lo) >= 128 && lo[92]&0x10 != 0 {
		extCal = true
		if a2 := pages[sff.Page{I2C: sff.AddrA2}]; len(a2) >= 128 {
			for _, n := range []int{56, 60, 64} { // Rx_PWR(4), (3), (2)
				if binary.BigEndian.Uint32(a2[n:]) != 0 {
					higherOrder = true
				}
			}
		}
	}
	cal := func(count, printed float64, next func(o, t float64) string) func(o, t float64) string {
		return func(o, t float64) string {
			if extCal && !math.IsNaN(o) && math.Abs(o-t) <= count*1.0001+printed {
				return causeCalTrunc
			}
			if next != nil {
				return next(o, t)
			}
			return ""
		}
	}
	rxCal := func(o, t float64) string {
		if extCal && higherOrder && !math.IsNaN(o) {
			return causeRXPoly
		}
		// ethtool truncates after the offset and again after each term.
		return cal(0.0002, 0.00005, nil)(o, t)
	}
	c.num("temperature", m.TemperatureC, e, "Module temperature", 0.005, cal(1.0/256, 0.005, flatMonitor(monitorNA(159, 0))))
	c.num("voltage", m.VoltageV, e, "Module voltage", 0.00005, cal(0.0001, 0.00005, flatMonitor(monitorNA(159, 1))))
	if tech, ok := e.get("Transmitter technology"); ok {
		if t, ok := number(tech); ok {
			code := uint8(t)
			if !cmis {
				code >>= 4
			}
			want := ""
			switch {
			case code <= 7 || code == 9 || (cmis && (code == 0x10 || code == 0x11)):
				want = sff.MediaOptical
			case code >= 0x0A && code <= 0x0F:
				want = sff.MediaCopper
			}
			if want != "" && strings.Contains(m.MediaBasis, "technology") {
				c.n++
				if m.MediaClass != want {
					c.add("media class", m.MediaClass+" ("+m.MediaBasis+")", tech, "")
				}
			}
		}
	}
	if m.WavelengthNM != nil {
		c.num("wavelength", m.WavelengthNM, e, "Laser wavelength", 0.0005, func(o, t float64) string {
			if p00 := pages[sff.Upper(0, 0)]; cmis && math.IsNaN(t) && len(p00) >= 128 && (p00[212-128] == 0x10 || p00[212-128] == 0x11) {
				return causeTunable
			}
			return ""
		})
	}

	// Lanes.
	for _, l := range m.Lanes {
		var bias, tx, rx string
		if m.Spec == sff.SpecSFF8472 {
			bias, tx = "Laser bias current", "Laser output power"
			rx = "Receiver signal average optical power"
			if _, ok := e.get(rx); !ok {
				rx = "Receiver signal OMA"
			}
		} else {
			bias = fmt.Sprintf("Laser tx bias current (Channel %d)", l.Lane)
			tx = fmt.Sprintf("Transmit avg optical power (Channel %d)", l.Lane)
			rx = fmt.Sprintf("Rcvr signal avg optical power (Channel %d)", l.Lane)
			if _, ok := e.get(rx); !ok {
				rx = fmt.Sprintf("Receiver signal OMA (Channel %d)", l.Lane)
			}
		}
		lane := fmt.Sprintf("lane %d ", l.Lane)
		copperExplain := func(bit uint) func(o, _ float64) string {
			return func(o, _ float64) string {
				if copper && math.IsNaN(o) {
					return causeCopperPower
				}
				return monitorNA(160, bit)(o, 0)
			}
		}
		c.num(lane+"TX bias", l.TXBiasMA, e, bias, 0.0005, cal(0.002, 0.0005, func(o, t float64) string {
			if s := copperExplain(0)(o, t); s != "" {
				return s
			}
			return biasScale(o, t)
		}))
		c.num(lane+"TX power", l.TXPowerMW, e, tx, 0.00005, cal(0.0001, 0.00005, copperExplain(1)))
		c.num(lane+"RX power", l.RXPowerMW, e, rx, 0.00005, func(o, t float64) string {
			if s := rxCal(o, t); s != "" {
				return s
			}
			return copperExplain(2)(o, t)
		})
		if l.RXPowerMW != nil && m.RXPowerType != "" {
			if _, ok := e.get(rx); ok {
				c.n++
				theirs := map[bool]string{true: "OMA", false: "average"}[strings.Contains(rx, "OMA")]
				if theirs != m.RXPowerType {
					c.add(lane+"RX power type", m.RXPowerType, theirs, "")
				}
			}
		}
		compareLaneFlags(c, m, l, e, pages)
	}
	if cmis {
		for ch := len(m.Lanes) + 1; ch <= 32; ch++ {
			if _, ok := e.get(fmt.Sprintf("Laser tx bias current (Channel %d)", ch)); ok {
				c.n++
				c.add(fmt.Sprintf("lane %d", ch), "no such lane", "printed", causeExtraLanes)
			}
		}
	}
	compareModuleFlags(c, m, e)

	// Thresholds.
	if th := m.Thresholds; th != nil {
		for _, q := range []struct {
			name           string
			ha, la, hw, lw *float64
			tol            float64
			explain        func(o, t float64) string
		}{
			{"Laser bias current", th.TXBiasHighAlarmMA, th.TXBiasLowAlarmMA, th.TXBiasHighWarnMA, th.TXBiasLowWarnMA, 0.0005, cal(0.002, 0.0005, biasScale)},
			{"Laser output power", th.TXPowerHighAlarmMW, th.TXPowerLowAlarmMW, th.TXPowerHighWarnMW, th.TXPowerLowWarnMW, 0.00005, cal(0.0001, 0.00005, nil)},
			{"Module temperature", th.TemperatureHighAlarmC, th.TemperatureLowAlarmC, th.TemperatureHighWarnC, th.TemperatureLowWarnC, 0.005, cal(1.0/256, 0.005, nil)},
			{"Module voltage", th.VoltageHighAlarmV, th.VoltageLowAlarmV, th.VoltageHighWarnV, th.VoltageLowWarnV, 0.00005, cal(0.0001, 0.00005, nil)},
			{"Laser rx power", th.RXPowerHighAlarmMW, th.RXPowerLowAlarmMW, th.RXPowerHighWarnMW, th.RXPowerLowWarnMW, 0.00005, rxCal},
		} {
			for _, k := range []struct {
				kind string
				v    *float64
			}{{"high alarm", q.ha}, {"low alarm", q.la}, {"high warning", q.hw}, {"low warning", q.lw}} {
				c.num(q.name+" "+k.kind+" threshold", k.v, e, q.name+" "+k.kind+" threshold", q.tol, q.explain)
			}
		}
	}
	return c.diffs, c.n
}

// cmisFlagByte is the page 11h byte of each lane flag (a bit per lane).
var cmisFlagByte = map[string]int{
	"tx_power_high_alarm": 139, "tx_power_low_alarm": 140, "tx_power_high_warn": 141, "tx_power_low_warn": 142,
	"tx_bias_high_alarm": 143, "tx_bias_low_alarm": 144, "tx_bias_high_warn": 145, "tx_bias_low_warn": 146,
	"rx_power_high_alarm": 149, "rx_power_low_alarm": 150, "rx_power_high_warn": 151, "rx_power_low_warn": 152,
}

// compareLaneFlags holds a lane's alarm and warning flags against
// ethtool's On/Off lines. A CMIS difference is explained only where
// ethtool 6.1's test (the flag byte AND the lane's index from 0) gives
// what it printed.
func compareLaneFlags(c *comparison, m *sff.Module, l sff.Lane, e ethtoolOut, pages sff.Pages) {
	for q, name := range flagQuantity {
		if strings.HasPrefix(q, "Module") {
			continue
		}
		for k, suffix := range flagKind {
			var label string
			switch {
			case m.Spec == sff.SpecSFF8472:
				label = q + " " + k
			case q == "Laser bias current":
				label = fmt.Sprintf("%s %s (Chan %d)", q, k, l.Lane)
			default:
				label = fmt.Sprintf("%s %s (Channel %d)", q, k, l.Lane)
			}
			v, ok := e.get(label)
			if !ok {
				continue
			}
			c.n++
			ours := false
			for _, f := range l.Flags {
				if f == name+"_"+suffix {
					ours = true
				}
			}
			if (v == "On") != ours {
				cause := ""
				p11, ok := pages[sff.Upper(0x11, uint8((l.Lane-1)/8))]
				if n, known := cmisFlagByte[name+"_"+suffix]; m.Spec == sff.SpecCMIS && ok && known && len(p11) >= 128 {
					buggy := p11[n-128]&byte((l.Lane-1)%8) != 0
					right := p11[n-128]&(1<<((l.Lane-1)%8)) != 0
					if buggy == (v == "On") && right == ours {
						cause = causeLaneFlags
					}
				}
				c.add(fmt.Sprintf("lane %d flag %s_%s", l.Lane, name, suffix), strconv.FormatBool(ours), v, cause)
			}
		}
	}
}

// compareModuleFlags holds the module's temperature and voltage flags.
func compareModuleFlags(c *comparison, m *sff.Module, e ethtoolOut) {
	for _, q := range []string{"Module temperature", "Module voltage"} {
		for k, suffix := range flagKind {
			v, ok := e.get(q + " " + k)
			if !ok {
				continue
			}
			c.n++
			name := flagQuantity[q] + "_" + suffix
			ours := false
			for _, a := range m.Alarms {
				if a == name {
					ours = true
				}
			}
			if (v == "On") != ours {
				c.add("module flag "+name, strconv.FormatBool(ours), v, "")
			}
		}
	}
}
