package sff

// SFF-8636 (QSFP+, QSFP28) memory map, rev 2.10a. Lower page:
//
//	0 identifier, 1 revision, 2 status (bit 2 flat memory, bit 0 data not ready)
//	3 LOS (TX4..1 bits 7-4, RX4..1 bits 3-0), 4 TX fault (bits 3-0), 5 CDR LOL (TX 7-4, RX 3-0)
//	6 temperature flags, 7 Vcc flags (bit 7 high alarm, 6 low alarm, 5 high warning, 4 low warning)
//	9-10 RX power flags, 11-12 TX bias flags, 13-14 TX power flags
//	     (two lanes a byte: the odd lane in bits 7-4, the even one in 3-0, each
//	     high alarm, low alarm, high warning, low warning)
//	22-23 temperature, 26-27 Vcc, 34-41 RX power, 42-49 TX bias, 50-57 TX power (lanes 1-4)
//
// Upper page 00h: 130 connector, 131 compliance (bit 7: see 192), 147 device
// technology, 148-163 vendor, 165-167 OUI, 168-183 PN, 184-185 revision,
// 186-187 wavelength (0.05 nm), 191 checksum of 128-190, 192 extended
// compliance, 196-211 SN, 212-219 date, 220 diagnostic type (bit 3 RX power
// is average, bit 2 TX power measured).
//
// Page 03h: thresholds, each high alarm, low alarm, high warning, low
// warning: temperature 128-135, Vcc 144-151, RX power 176-183, TX bias
// 184-191, TX power 192-199, shared by the four lanes.

// sff8636Revision is byte 1 (SFF-8636 Table 6-3).
func sff8636Revision(b uint8) string {
	switch b {
	case 0x01, 0x02:
		return "SFF-8436 rev 4.8 or earlier"
	case 0x03:
		return "SFF-8636 rev 1.3 or earlier"
	case 0x04:
		return "SFF-8636 rev 1.4"
	case 0x05:
		return "SFF-8636 rev 1.5"
	case 0x06:
		return "SFF-8636 rev 2.0"
	case 0x07:
		return "SFF-8636 rev 2.5-2.7"
	case 0x08:
		return "SFF-8636 rev 2.8-2.10"
	}
	return ""
}

// sff8636Compliance is byte 131, bits 6-0.
var sff8636Compliance = [7]string{
	"40G active cable (XLPPI)", "40GBASE-LR4", "40GBASE-SR4", "40GBASE-CR4",
	"10GBASE-SR", "10GBASE-LR", "10GBASE-LRM",
}

func decode8636(pages Pages) (*Module, error) {
	lo, err := pageReader(SpecSFF8636, pages, Lower)
	if err != nil {
		return nil, err
	}
	id := lo.u8(0)
	m := &Module{Spec: SpecSFF8636, IdentifierCode: id, Identifier: identifierName(id), Revision: sff8636Revision(lo.u8(1))}
	flat := lo.bit(2, 2)
	if lo.bit(2, 0) {
		m.Notes = append(m.Notes, "the module says its data is not ready (lower page byte 2 bit 0): values may be stale")
	}
	txPowerMeasured := true
	up, err := pageReader(SpecSFF8636, pages, Upper(0, 0))
	if err != nil {
		return nil, err
	}
	if up != nil {
		identity8636(m, up)
		m.setMedia(media8636(up))
		if m.MediaClass == MediaCopper {
			m.WavelengthNM = nil // bytes 186-187 of a cable are its attenuation
		}
		txPowerMeasured = up.bit(220, 2)
		m.RXPowerType = "OMA"
		if up.bit(220, 3) {
			m.RXPowerType = "average"
		}
	} else {
		m.setMedia(unknownMedia("upper page 00h (media bytes 130-192) was not read"))
		m.Notes = append(m.Notes, "upper page 00h was not read: vendor, part and serial number unknown")
	}
	// ethtool's test for live diagnostics: a temperature word of 0x0000
	// or 0xffff means the module does not monitor (passive copper).
	traw := lo.u16(22)
	m.Monitors = traw != 0 && traw != 0xffff
	if m.Monitors {
		m.TemperatureC = ptr(tempC(lo.s16(22)))
		m.VoltageV = ptr(voltV(lo.u16(26)))
	} else {
		m.Notes = append(m.Notes, "no live diagnostics: the temperature word reads 0x0000 or 0xffff (a passive cable, or monitoring not implemented)")
	}
	m.Alarms = append(flagNames("temperature", lo.bit(6, 7), lo.bit(6, 6), lo.bit(6, 5), lo.bit(6, 4)),
		flagNames("voltage", lo.bit(7, 7), lo.bit(7, 6), lo.bit(7, 5), lo.bit(7, 4))...)
	// A copper cable's power and bias words are not light: a passive DAC
	// that reports its temperature still has no receiver to judge.
	laneMonitors := m.Monitors && m.MediaClass != MediaCopper
	if m.MediaClass == MediaCopper {
		m.RXPowerType = ""
	}
	for i := range 4 {
		m.Lanes = append(m.Lanes, lane8636(lo, i, laneMonitors, txPowerMeasured))
	}
	switch p3, err := pageReader(SpecSFF8636, pages, Upper(3, 0)); {
	case err != nil:
		return nil, err
	case p3 != nil:
		m.Thresholds = thresholds8636(p3)
	case flat:
		m.Notes = append(m.Notes, "flat memory (lower page byte 2 bit 2): the module has no threshold page")
	default:
		m.Notes = append(m.Notes, "page 03h was not read: the module's alarm and warning thresholds are unknown")
	}
	finishLanes(m)
	return m, nil
}

func identity8636(m *Module, up *reader) {
	m.Connector, m.ConnectorCode = connectorName(up.u8(130)), up.u8(130)
	comp := up.u8(131)
	for bit := 6; bit >= 0; bit-- {
		if comp&(1<<bit) != 0 {
			m.Compliance = append(m.Compliance, sff8636Compliance[bit])
		}
	}
	if comp&0x80 != 0 {
		ext := extComplianceName(up.u8(192), true)
		m.Compliance = append([]string{ext}, m.Compliance...)
	}
	if len(m.Compliance) > 0 {
		m.Media = m.Compliance[0]
	}
	m.SpeedMbps = speedOf(m.Media)
	m.VendorName = up.text(148, 163)
	m.VendorOUI = up.oui(165)
	m.VendorPN = up.text(168, 183)
	m.VendorRev = up.text(184, 185)
	m.VendorSN = up.text(196, 211)
	m.Date = up.date(212)
	// Byte 147 bits 7-4 below 1010b are optical transmitters; from 1010b
	// on the module is copper and bytes 186-187 hold cable attenuation.
	if up.u8(147)>>4 < 0x0A {
		if wl := up.u16(186); wl != 0 {
			m.WavelengthNM = ptr(float64(wl) * 0.05)
		}
	}
	up.checksum(m, 128, 191, "CC_BASE")
}

func lane8636(lo *reader, i int, monitors, txPower bool) Lane {
	l := Lane{Lane: i + 1}
	if monitors {
		l.RXPowerMW = ptr(powerMW(lo.u16(34 + 2*i)))
		l.TXBiasMA = ptr(biasMA(lo.u16(42 + 2*i)))
		if txPower {
			l.TXPowerMW = ptr(powerMW(lo.u16(50 + 2*i)))
		}
	}
	b := uint(i)
	l.RXLOS = ptr(lo.bit(3, b))
	l.TXLOS = ptr(lo.bit(3, 4+b))
	l.TXFault = ptr(lo.bit(4, b))
	l.RXLOL = ptr(lo.bit(5, b))
	l.TXLOL = ptr(lo.bit(5, 4+b))
	// Two lanes per flag byte: lane 1 (and 3) in the high nibble.
	shift := uint(4)
	if i%2 == 1 {
		shift = 0
	}
	nib := func(base int) uint8 { return lo.u8(base+i/2) >> shift }
	l.Flags = append(l.Flags, nibbleFlags("rx_power", nib(9))...)
	l.Flags = append(l.Flags, nibbleFlags("tx_bias", nib(11))...)
	l.Flags = append(l.Flags, nibbleFlags("tx_power", nib(13))...)
	return l
}

// nibbleFlags names the flags of a nibble holding, from bit 3 down, high
// alarm, low alarm, high warning and low warning.
func nibbleFlags(q string, v uint8) []string {
	return flagNames(q, v&8 != 0, v&4 != 0, v&2 != 0, v&1 != 0)
}

func thresholds8636(p3 *reader) *Thresholds {
	t := &Thresholds{}
	quad := func(base int, conv func(r *reader, n int) float64) [4]*float64 {
		var q [4]*float64
		for k := range 4 {
			q[k] = ptr(conv(p3, base+2*k))
		}
		return q
	}
	temp := func(r *reader, n int) float64 { return tempC(r.s16(n)) }
	volt := func(r *reader, n int) float64 { return voltV(r.u16(n)) }
	bias := func(r *reader, n int) float64 { return biasMA(r.u16(n)) }
	pow := func(r *reader, n int) float64 { return powerMW(r.u16(n)) }
	q := quad(128, temp)
	t.TemperatureHighAlarmC, t.TemperatureLowAlarmC, t.TemperatureHighWarnC, t.TemperatureLowWarnC = q[0], q[1], q[2], q[3]
	q = quad(144, volt)
	t.VoltageHighAlarmV, t.VoltageLowAlarmV, t.VoltageHighWarnV, t.VoltageLowWarnV = q[0], q[1], q[2], q[3]
	q = quad(176, pow)
	t.RXPowerHighAlarmMW, t.RXPowerLowAlarmMW, t.RXPowerHighWarnMW, t.RXPowerLowWarnMW = q[0], q[1], q[2], q[3]
	q = quad(184, bias)
	t.TXBiasHighAlarmMA, t.TXBiasLowAlarmMA, t.TXBiasHighWarnMA, t.TXBiasLowWarnMA = q[0], q[1], q[2], q[3]
	q = quad(192, pow)
	t.TXPowerHighAlarmMW, t.TXPowerLowAlarmMW, t.TXPowerHighWarnMW, t.TXPowerLowWarnMW = q[0], q[1], q[2], q[3]
	return t
}
