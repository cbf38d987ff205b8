package sff

import "fmt"

// CMIS 4.0/5.x (QSFP-DD, OSFP, QSFP112, SFP-DD) memory map. Lower page:
//
//	0 identifier, 1 revision (major.minor nibbles), 2 bit 7 flat memory,
//	3 bits 3-1 module state, 9 module flags (bits 0-3 temperature high alarm,
//	low alarm, high warning, low warning; bits 4-7 the same for Vcc),
//	14-15 temperature, 16-17 Vcc, 85 media type, 86-89 first application
//	descriptor (host interface, media interface, lane counts)
//
// Page 00h: 129-144 vendor, 145-147 OUI, 148-163 PN, 164-165 revision,
// 166-181 SN, 182-189 date, 203 connector, 222 checksum of 128-221.
// Page 01h: 138-139 wavelength (0.05 nm), 142 bits 1-0 banks, 159 module
// monitors supported, 160 lane monitors supported (bit 0 TX bias, 1 TX
// power, 2 RX power; bits 4-3 TX bias scale).
// Page 02h: thresholds (high alarm, low alarm, high warning, low warning):
// temperature 128-135, Vcc 136-143, TX power 176-183, TX bias 184-191,
// RX power 192-199.
// Page 10h (per bank): 130 TX output disabled, a bit per lane.
// Page 11h (per bank of 8 lanes): 135 TX fault, 136 TX LOS, 137 TX CDR
// LOL, 139-142 TX power flags, 143-146 TX bias flags, 147 RX LOS, 148 RX
// CDR LOL, 149-152 RX power flags (each a bit per lane), 154-169 TX power,
// 170-185 TX bias, 186-201 RX power (two bytes per lane).
//
// TX bias scaling (page 01h byte 160 bits 4-3, "TxBiasCurrentScalingFactor"):
// CMIS 5.2 defines 00b ×1, 01b ×2, 10b ×4 as a multiplier of the 2 µA
// step, for the monitor and the thresholds alike. (ethtool 6.x shifts the
// raw value right instead, which divides; the spec text multiplies, and
// so does this decoder.)

// cmisState is lower page byte 3 bits 3-1.
func cmisState(v uint8) string {
	switch v {
	case 1:
		return "low power"
	case 2:
		return "powering up"
	case 3:
		return "ready"
	case 4:
		return "powering down"
	case 5:
		return "fault"
	}
	return fmt.Sprintf("state %d", v)
}

// cmisBiasScale is the multiplier of page 01h byte 160 bits 4-3.
func cmisBiasScale(b uint8) float64 {
	switch (b >> 3) & 0x03 {
	case 1:
		return 2
	case 2:
		return 4
	}
	return 1
}

// defaultLanes is the media lane count of a form factor whose first
// application descriptor does not say.
func defaultLanes(id uint8) int {
	switch id {
	case 0x1E: // QSFP+ with CMIS
		return 4
	case 0x1A, 0x1F: // SFP-DD
		return 2
	case 0x20: // SFP+ with CMIS
		return 1
	}
	return 8
}

func decodeCMIS(pages Pages) (*Module, error) {
	lo, err := pageReader(SpecCMIS, pages, Lower)
	if err != nil {
		return nil, err
	}
	id := lo.u8(0)
	rev := lo.u8(1)
	m := &Module{Spec: SpecCMIS, IdentifierCode: id, Identifier: identifierName(id),
		Revision: fmt.Sprintf("CMIS %d.%d", rev>>4, rev&0x0f), State: cmisState((lo.u8(3) >> 1) & 0x07)}
	flat := lo.bit(2, 7)
	mediaType := lo.u8(85)
	m.Media = cmisMediaName(mediaType, lo.u8(87))
	if lo.u8(86) != 0xff && lo.u8(86) != 0 {
		m.Compliance = append(m.Compliance, m.Media)
	}
	m.SpeedMbps = speedOf(m.Media)
	lanes := int(lo.u8(88) & 0x0f)
	if lanes == 0 || lanes > 8 {
		lanes = defaultLanes(id)
	}
	readers := map[Page]*reader{}
	for _, p := range []Page{Upper(0, 0), Upper(1, 0), Upper(2, 0)} {
		r, err := pageReader(SpecCMIS, pages, p)
		if err != nil {
			return nil, err
		}
		readers[p] = r
	}
	p00, p01, p02 := readers[Upper(0, 0)], readers[Upper(1, 0)], readers[Upper(2, 0)]
	if p00 != nil {
		identityCMIS(m, p00)
	} else {
		m.Notes = append(m.Notes, "page 00h was not read: vendor, part and serial number unknown")
	}
	scale := 1.0
	laneMon := [3]bool{true, true, true} // bias, TX power, RX power
	modMon := [2]bool{true, true}        // temperature, Vcc
	if p01 != nil {
		scale = cmisBiasScale(p01.u8(160))
		for k := range 3 {
			laneMon[k] = p01.bit(160, uint(k))
		}
		modMon = [2]bool{p01.bit(159, 0), p01.bit(159, 1)}
		if wl := p01.u16(138); wl != 0 && mediaType != 0x03 {
			m.WavelengthNM = ptr(float64(wl) * 0.05)
		}
	} else {
		traw := lo.u16(14)
		live := traw != 0 && traw != 0xffff
		modMon = [2]bool{live, live}
		laneMon = [3]bool{false, false, false}
		if flat {
			m.Notes = append(m.Notes, "flat memory (lower page byte 2 bit 7): no lane monitors or thresholds (a passive cable, typically)")
		} else {
			m.Notes = append(m.Notes, "page 01h was not read: which monitors the module supports is unknown, lane values not decoded")
		}
	}
	if modMon[0] {
		m.TemperatureC = ptr(tempC(lo.s16(14)))
	}
	if modMon[1] {
		m.VoltageV = ptr(voltV(lo.u16(16)))
	}
	m.Monitors = modMon[0] || laneMon[0] || laneMon[1] || laneMon[2]
	f := lo.u8(9)
	m.Alarms = append(flagNames("temperature", f&0x01 != 0, f&0x02 != 0, f&0x04 != 0, f&0x08 != 0),
		flagNames("voltage", f&0x10 != 0, f&0x20 != 0, f&0x40 != 0, f&0x80 != 0)...)
	if p02 != nil {
		m.Thresholds = thresholdsCMIS(p02, scale)
	} else if !flat {
		m.Notes = append(m.Notes, "page 02h was not read: the module's alarm and warning thresholds are unknown")
	}
	for i := range lanes {
		l, err := laneCMIS(pages, i, scale, laneMon, flat)
		if err != nil {
			return nil, err
		}
		m.Lanes = append(m.Lanes, l)
	}
	if !flat {
		for b := range (lanes + 7) / 8 {
			if _, ok := pages[Upper(0x11, uint8(b))]; !ok {
				m.Notes = append(m.Notes, fmt.Sprintf("page 11h bank %d was not read: lanes %d-%d have no monitors or flags", b, 8*b+1, min(lanes, 8*b+8)))
			}
		}
	}
	finishLanes(m)
	return m, nil
}

func identityCMIS(m *Module, p00 *reader) {
	m.VendorName = p00.text(129, 144)
	m.VendorOUI = p00.oui(145)
	m.VendorPN = p00.text(148, 163)
	m.VendorRev = p00.text(164, 165)
	m.VendorSN = p00.text(166, 181)
	m.Date = p00.date(182)
	m.Connector = connectorName(p00.u8(203))
	p00.checksum(m, 128, 222, "page 00h checksum")
}

// laneCMIS decodes lane i (0-based) from pages 10h and 11h of its bank.
func laneCMIS(pages Pages, i int, scale float64, mon [3]bool, flat bool) (Lane, error) {
	l := Lane{Lane: i + 1}
	if flat {
		return l, nil
	}
	bank := uint8(i / 8)
	bit := uint(i % 8)
	p11, err := pageReader(SpecCMIS, pages, Upper(0x11, bank))
	if err != nil {
		return l, err
	}
	p10, err := pageReader(SpecCMIS, pages, Upper(0x10, bank))
	if err != nil {
		return l, err
	}
	if p10 != nil {
		l.TXDisabled = ptr(p10.bit(130, bit))
	}
	if p11 == nil {
		return l, nil
	}
	off := 2 * int(bit)
	if mon[1] {
		l.TXPowerMW = ptr(powerMW(p11.u16(154 + off)))
	}
	if mon[0] {
		l.TXBiasMA = ptr(biasMA(p11.u16(170+off)) * scale)
	}
	if mon[2] {
		l.RXPowerMW = ptr(powerMW(p11.u16(186 + off)))
	}
	l.TXFault = ptr(p11.bit(135, bit))
	l.TXLOS = ptr(p11.bit(136, bit))
	l.TXLOL = ptr(p11.bit(137, bit))
	l.RXLOS = ptr(p11.bit(147, bit))
	l.RXLOL = ptr(p11.bit(148, bit))
	flags := func(q string, base int) []string {
		return flagNames(q, p11.bit(base, bit), p11.bit(base+1, bit), p11.bit(base+2, bit), p11.bit(base+3, bit))
	}
	l.Flags = append(l.Flags, flags("tx_power", 139)...)
	l.Flags = append(l.Flags, flags("tx_bias", 143)...)
	l.Flags = append(l.Flags, flags("rx_power", 149)...)
	return l, nil
}

func thresholdsCMIS(p02 *reader, scale float64) *Thresholds {
	t := &Thresholds{}
	four := func(base int, f func(int) float64) (p [4]*float64) {
		for k := range 4 {
			p[k] = ptr(f(base + 2*k))
		}
		return p
	}
	q := four(128, func(n int) float64 { return tempC(p02.s16(n)) })
	t.TemperatureHighAlarmC, t.TemperatureLowAlarmC, t.TemperatureHighWarnC, t.TemperatureLowWarnC = q[0], q[1], q[2], q[3]
	q = four(136, func(n int) float64 { return voltV(p02.u16(n)) })
	t.VoltageHighAlarmV, t.VoltageLowAlarmV, t.VoltageHighWarnV, t.VoltageLowWarnV = q[0], q[1], q[2], q[3]
	q = four(176, func(n int) float64 { return powerMW(p02.u16(n)) })
	t.TXPowerHighAlarmMW, t.TXPowerLowAlarmMW, t.TXPowerHighWarnMW, t.TXPowerLowWarnMW = q[0], q[1], q[2], q[3]
	q = four(184, func(n int) float64 { return biasMA(p02.u16(n)) * scale })
	t.TXBiasHighAlarmMA, t.TXBiasLowAlarmMA, t.TXBiasHighWarnMA, t.TXBiasLowWarnMA = q[0], q[1], q[2], q[3]
	q = four(192, func(n int) float64 { return powerMW(p02.u16(n)) })
	t.RXPowerHighAlarmMW, t.RXPowerLowAlarmMW, t.RXPowerHighWarnMW, t.RXPowerLowWarnMW = q[0], q[1], q[2], q[3]
	return t
}
