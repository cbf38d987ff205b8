package sff

import (
	"encoding/binary"
	"math"
)

// SFF-8472 (SFP, SFP+, SFP28) memory map, rev 12.4. Address A0h (0x50):
//
//	0 identifier, 2 connector, 3 10G Ethernet compliance (bits 7-4: ER, LRM, LR, SR),
//	6 1G compliance (bits 3-0: 1000BASE-T, CX, LX, SX), 8 cable technology
//	(bit 3 active, bit 2 passive), 20-35 vendor, 36 extended compliance,
//	37-39 OUI, 40-55 PN, 56-59 revision, 60-61 wavelength (nm), 63 checksum
//	of 0-62, 68-83 SN, 84-91 date, 92 diagnostic type (bit 6 implemented,
//	5 internally calibrated, 4 externally calibrated, 3 RX power is average,
//	2 address change required), 93 bit 7 alarm/warning flags implemented
//
// Address A2h (0x51):
//
//	0-39 thresholds (high alarm, low alarm, high warning, low warning of
//	     temperature 0-7, Vcc 8-15, TX bias 16-23, TX power 24-31, RX power 32-39)
//	56-75 RX power calibration, five big-endian IEEE floats Rx_PWR(4)…Rx_PWR(0)
//	76-91 slope (u16, 1/256) and offset (s16) of TX bias, TX power, temperature, Vcc
//	96-97 temperature, 98-99 Vcc, 100-101 TX bias, 102-103 TX power, 104-105 RX power
//	110 status (bit 2 TX fault, bit 1 RX LOS), 112-113 alarm flags, 116-117 warning flags
//
// With external calibration the A/D values (and, as ethtool reads them,
// the thresholds) are raw and must be converted with the constants above.

// sff8472Ten is byte 3 bits 7-4; sff8472One is byte 6 bits 3-0.
var (
	sff8472Ten = map[uint]string{7: "10GBASE-ER", 6: "10GBASE-LRM", 5: "10GBASE-LR", 4: "10GBASE-SR"}
	sff8472One = map[uint]string{3: "1000BASE-T", 2: "1000BASE-CX", 1: "1000BASE-LX", 0: "1000BASE-SX"}
)

// calibration holds SFF-8472 external calibration constants.
type calibration struct {
	rx                   [5]float64 // Rx_PWR(0)…Rx_PWR(4): coefficients of raw^0…raw^4
	biasSlope, biasOff   float64
	txSlope, txOff       float64
	tempSlope, tempOff   float64
	voltSlope, voltOffst float64
}

func readCalibration(a2 *reader) *calibration {
	c := &calibration{}
	for k := range 5 {
		// Rx_PWR(4) comes first, at 56.
		c.rx[4-k] = float64(math.Float32frombits(binary.BigEndian.Uint32(a2.b[56+4*k:])))
	}
	lin := func(n int) (float64, float64) { return float64(a2.u16(n)) / 256, float64(a2.s16(n + 2)) }
	c.biasSlope, c.biasOff = lin(76)
	c.txSlope, c.txOff = lin(80)
	c.tempSlope, c.tempOff = lin(84)
	c.voltSlope, c.voltOffst = lin(88)
	return c
}

// linear applies slope and offset to an unsigned raw value, clamped to
// the 16-bit range the result is defined in.
func linear(raw uint16, slope, off float64) uint16 {
	v := slope*float64(raw) + off
	return uint16(math.Max(0, math.Min(65535, math.Round(v))))
}

// rxPower evaluates the fourth-order RX power polynomial.
func (c *calibration) rxPower(raw uint16) uint16 {
	x := float64(raw)
	v := c.rx[0] + c.rx[1]*x + c.rx[2]*x*x + c.rx[3]*x*x*x + c.rx[4]*x*x*x*x
	if math.IsNaN(v) {
		return 0
	}
	return uint16(math.Max(0, math.Min(65535, math.Round(v))))
}

// temp applies the temperature slope and offset (both in 1/256 °C).
func (c *calibration) temp(raw int16) float64 {
	return math.Round(c.tempSlope*float64(raw)+c.tempOff) / 256
}

// a2 converts raw A2h values, calibrated or not.
type a2 struct {
	r   *reader
	cal *calibration // nil: internally calibrated
}

func (a a2) temp(n int) float64 {
	if a.cal != nil {
		return a.cal.temp(a.r.s16(n))
	}
	return tempC(a.r.s16(n))
}

func (a a2) volt(n int) float64 {
	if a.cal != nil {
		return voltV(linear(a.r.u16(n), a.cal.voltSlope, a.cal.voltOffst))
	}
	return voltV(a.r.u16(n))
}

func (a a2) bias(n int) float64 {
	if a.cal != nil {
		return biasMA(linear(a.r.u16(n), a.cal.biasSlope, a.cal.biasOff))
	}
	return biasMA(a.r.u16(n))
}

func (a a2) tx(n int) float64 {
	if a.cal != nil {
		return powerMW(linear(a.r.u16(n), a.cal.txSlope, a.cal.txOff))
	}
	return powerMW(a.r.u16(n))
}

func (a a2) rx(n int) float64 {
	if a.cal != nil {
		return powerMW(a.cal.rxPower(a.r.u16(n)))
	}
	return powerMW(a.r.u16(n))
}

func decode8472(pages Pages) (*Module, error) {
	lo, err := pageReader(SpecSFF8472, pages, Lower)
	if err != nil {
		return nil, err
	}
	id := lo.u8(0)
	m := &Module{Spec: SpecSFF8472, IdentifierCode: id, Identifier: identifierName(id)}
	identity8472(m, lo)
	m.setMedia(media8472(lo))
	diag := lo.u8(92)
	implemented, addrChange := diag&0x40 != 0, diag&0x04 != 0
	m.RXPowerType = "OMA"
	if diag&0x08 != 0 {
		m.RXPowerType = "average"
	}
	l := Lane{Lane: 1}
	switch r, err := pageReader(SpecSFF8472, pages, Page{I2C: AddrA2}); {
	case err != nil:
		return nil, err
	case !implemented:
		m.Notes = append(m.Notes, "no diagnostics: A0h byte 92 bit 6 says digital diagnostic monitoring is not implemented")
	case addrChange && r == nil:
		m.Notes = append(m.Notes, "diagnostics need an address change (A0h byte 92 bit 2), which the kernel does not do: not read")
	case r == nil:
		m.Notes = append(m.Notes, "A2h (diagnostics) was not read: temperature, power and thresholds unknown")
	default:
		a := a2{r: r}
		m.Calibration = "internal"
		if diag&0x10 != 0 {
			m.Calibration = "external"
			a.cal = readCalibration(r)
		}
		m.Monitors = true
		diagnostics8472(m, &l, a, lo.bit(93, 7))
		if m.MediaClass == MediaCopper {
			// An active cable with diagnostics: its power words are not light.
			l.TXBiasMA, l.TXPowerMW, l.RXPowerMW = nil, nil, nil
			m.RXPowerType = ""
		}
	}
	m.Lanes = []Lane{l}
	finishLanes(m)
	return m, nil
}

func identity8472(m *Module, lo *reader) {
	m.Connector, m.ConnectorCode = connectorName(lo.u8(2)), lo.u8(2)
	if ext := lo.u8(36); ext != 0 {
		m.Compliance = append(m.Compliance, extComplianceName(ext, false))
	}
	for bit := uint(7); bit >= 4; bit-- {
		if lo.bit(3, bit) {
			m.Compliance = append(m.Compliance, sff8472Ten[bit])
		}
	}
	for bit := 3; bit >= 0; bit-- {
		if lo.bit(6, uint(bit)) {
			m.Compliance = append(m.Compliance, sff8472One[uint(bit)])
		}
	}
	cable := ""
	switch {
	case lo.bit(8, 2):
		cable = "passive copper cable"
	case lo.bit(8, 3):
		cable = "active cable"
	}
	if cable != "" {
		m.Compliance = append(m.Compliance, cable)
	}
	if len(m.Compliance) > 0 {
		m.Media = m.Compliance[0]
	}
	m.SpeedMbps = speedOf(m.Media)
	m.VendorName = lo.text(20, 35)
	m.VendorOUI = lo.oui(37)
	m.VendorPN = lo.text(40, 55)
	m.VendorRev = lo.text(56, 59)
	if cable == "" {
		if wl := lo.u16(60); wl != 0 {
			m.WavelengthNM = ptr(float64(wl))
		}
	}
	m.VendorSN = lo.text(68, 83)
	m.Date = lo.date(84)
	lo.checksum(m, 0, 63, "CC_BASE")
}

func diagnostics8472(m *Module, l *Lane, a a2, flags bool) {
	r := a.r
	m.TemperatureC = ptr(a.temp(96))
	m.VoltageV = ptr(a.volt(98))
	l.TXBiasMA = ptr(a.bias(100))
	l.TXPowerMW = ptr(a.tx(102))
	l.RXPowerMW = ptr(a.rx(104))
	l.TXFault = ptr(r.bit(110, 2))
	l.RXLOS = ptr(r.bit(110, 1))
	if r.bit(110, 0) {
		m.Notes = append(m.Notes, "the module says its data is not ready (A2h byte 110 bit 0): values may be stale")
	}
	if flags {
		// Alarms at 112-113, warnings at 116-117, bit for bit.
		al := func(n int, bit uint) bool { return r.bit(112+n, bit) }
		wa := func(n int, bit uint) bool { return r.bit(116+n, bit) }
		m.Alarms = append(m.Alarms, flagNames("temperature", al(0, 7), al(0, 6), wa(0, 7), wa(0, 6))...)
		m.Alarms = append(m.Alarms, flagNames("voltage", al(0, 5), al(0, 4), wa(0, 5), wa(0, 4))...)
		l.Flags = append(l.Flags, flagNames("tx_bias", al(0, 3), al(0, 2), wa(0, 3), wa(0, 2))...)
		l.Flags = append(l.Flags, flagNames("tx_power", al(0, 1), al(0, 0), wa(0, 1), wa(0, 0))...)
		l.Flags = append(l.Flags, flagNames("rx_power", al(1, 7), al(1, 6), wa(1, 7), wa(1, 6))...)
	}
	if !flags {
		// Byte 93 bit 7 clear: the module implements no alarm and warning
		// flags, and its threshold bytes mean nothing (ethtool prints none
		// either).
		m.Notes = append(m.Notes, "no alarm or warning thresholds: A0h byte 93 bit 7 says the module implements none")
		return
	}
	t := &Thresholds{}
	four := func(base int, f func(int) float64) (p [4]*float64) {
		for k := range 4 {
			p[k] = ptr(f(base + 2*k))
		}
		return p
	}
	q := four(0, a.temp)
	t.TemperatureHighAlarmC, t.TemperatureLowAlarmC, t.TemperatureHighWarnC, t.TemperatureLowWarnC = q[0], q[1], q[2], q[3]
	q = four(8, a.volt)
	t.VoltageHighAlarmV, t.VoltageLowAlarmV, t.VoltageHighWarnV, t.VoltageLowWarnV = q[0], q[1], q[2], q[3]
	q = four(16, a.bias)
	t.TXBiasHighAlarmMA, t.TXBiasLowAlarmMA, t.TXBiasHighWarnMA, t.TXBiasLowWarnMA = q[0], q[1], q[2], q[3]
	q = four(24, a.tx)
	t.TXPowerHighAlarmMW, t.TXPowerLowAlarmMW, t.TXPowerHighWarnMW, t.TXPowerLowWarnMW = q[0], q[1], q[2], q[3]
	q = four(32, a.rx)
	t.RXPowerHighAlarmMW, t.RXPowerLowAlarmMW, t.RXPowerHighWarnMW, t.RXPowerLowWarnMW = q[0], q[1], q[2], q[3]
	m.Thresholds = t
}
