package hosttree

import (
	"encoding/binary"
	"math"

	"github.com/linerate/linerate/internal/sff"
)

// Optic describes a pluggable module's state; its methods encode it into
// module memory pages byte by byte from the specifications (SFF-8636 rev
// 2.10a, SFF-8472 rev 12.4, CMIS 5.x, codes from SFF-8024), as a real
// module would answer MODULE_EEPROM_GET. This is the inverse of package
// sff: what it writes, sff must read back.
type Optic struct {
	Vendor, PN, SN, Rev string
	OUI                 [3]byte
	// Date is the six-digit YYMMDD date code.
	Date string
	// Connector is the SFF-8024 connector code (0x07 LC, 0x0C MPO 1x12).
	Connector byte
	// Compliance is the SFF-8024 extended compliance code (SFF-8636,
	// SFF-8472), e.g. 0x06 100G CWDM4, 0x02 100GBASE-SR4/25GBASE-SR.
	Compliance   byte
	WavelengthNM float64
	TempC, VccV  float64
	Lanes        []OpticLane
	Thresholds   OpticThresholds
	// ExternalCal encodes SFF-8472 diagnostics as raw A/D values with
	// external calibration constants (an older module).
	ExternalCal bool
	// CMIS: module state (3 ready), media type (byte 85: 1 MMF, 2 SMF),
	// host and media interface codes of the first application, and the
	// TX bias multiplier (1, 2 or 4).
	State, MediaType, HostCode, MediaCode byte
	BiasScale                             int
	// SFF-8636: the identifier (0 is 0x11, QSFP28), byte 131's
	// compliance bits (0 is 0x80: the extended code of byte 192), byte
	// 147's transmitter technology (nil is 0x40, 1310 nm DFB) and flat
	// memory (no page 03h, as passive cables have).
	Identifier byte
	Comp131    byte
	Tech       *byte
	FlatMem    bool
	// CMIS: the application advertisement (nil: one application of
	// HostCode into MediaCode over every lane), the data paths the active
	// control set configures (nil: none, as a module in low power), and
	// the media interface technology of page 00h byte 212.
	Apps      []OpticApp
	Paths     []OpticPath
	MediaTech byte
}

// OpticApp is a CMIS application descriptor: host and media interface
// codes (SFF-8024 Tables 4-5 to 4-10), the lanes one instance takes, and
// the lanes where instances may start (bit i: lane i+1).
type OpticApp struct {
	Host, Media             byte
	HostLanes, MediaLanes   int
	HostStarts, MediaStarts byte
}

// OpticPath is a configured CMIS data path: an application (AppSel, from
// 1) on host lanes (from 1), activated.
type OpticPath struct {
	AppSel    int
	HostLanes []int
}

// OpticLane is one lane's monitors and flags.
type OpticLane struct {
	RXmW, TXmW, BiasMA    float64
	RXLOS, TXLOS, TXFault bool
}

// OpticThresholds are the module's alarm and warning limits.
type OpticThresholds struct {
	Temp, Vcc, Bias, TX, RX Limits
}

// Limits are high alarm, low alarm, high warning and low warning.
type Limits struct{ HighAlarm, LowAlarm, HighWarn, LowWarn float64 }

// dbmToMW converts dBm to milliwatts, for thresholds quoted in dBm.
func dbmToMW(dbm float64) float64 { return math.Pow(10, dbm/10) }

// LRThresholds are typical limits of a 100G CWDM4/LR4 module: 0-70 °C
// operating, TX −6.5…+4.5 dBm warning band, RX low warning −10.5 dBm and
// alarm −13.5 dBm.
func LRThresholds() OpticThresholds {
	return OpticThresholds{
		Temp: Limits{75, -5, 70, 0},
		Vcc:  Limits{3.63, 2.97, 3.465, 3.135},
		Bias: Limits{90, 10, 80, 15},
		TX:   Limits{dbmToMW(6.5), dbmToMW(-8.5), dbmToMW(4.5), dbmToMW(-6.5)},
		RX:   Limits{dbmToMW(5.5), dbmToMW(-13.5), dbmToMW(4.5), dbmToMW(-10.5)},
	}
}

// SRThresholds are typical limits of a 25G/100G SR (850 nm multimode)
// module.
func SRThresholds() OpticThresholds {
	return OpticThresholds{
		Temp: Limits{80, -10, 75, -5},
		Vcc:  Limits{3.63, 2.97, 3.465, 3.135},
		Bias: Limits{12, 3, 11, 4},
		TX:   Limits{dbmToMW(4), dbmToMW(-10.4), dbmToMW(3), dbmToMW(-8.4)},
		RX:   Limits{dbmToMW(3.4), dbmToMW(-12.4), dbmToMW(2.4), dbmToMW(-10.3)},
	}
}

// Raw encodings shared by all three specifications.
func rawTemp(c float64) uint16  { return uint16(int16(math.Round(c * 256))) }
func rawVolt(v float64) uint16  { return clamp16(v * 10000) }
func rawBias(ma float64) uint16 { return clamp16(ma * 500) } // 2 µA steps
func rawPow(mw float64) uint16  { return clamp16(mw * 10000) }

func clamp16(v float64) uint16 { return uint16(math.Max(0, math.Min(65535, math.Round(v)))) }

// pg is a 128-byte page with spec byte numbers (base 0 or 128).
type pg struct {
	b    []byte
	base int
}

func newPg(base int) *pg { return &pg{b: make([]byte, sff.PageSize), base: base} }

func (p *pg) set(n int, v ...byte) { copy(p.b[n-p.base:], v) }
func (p *pg) u16(n int, v uint16)  { binary.BigEndian.PutUint16(p.b[n-p.base:], v) }
func (p *pg) str(n, w int, s string) {
	for i := range w {
		c := byte(' ')
		if i < len(s) {
			c = s[i]
		}
		p.b[n-p.base+i] = c
	}
}

// sum writes at byte at the low 8 bits of the sum of bytes [from, at).
func (p *pg) sum(from, at int) {
	var s byte
	for n := from; n < at; n++ {
		s += p.b[n-p.base]
	}
	p.b[at-p.base] = s
}

// quad writes four thresholds (high alarm, low alarm, high warning, low
// warning) at n with enc.
func (p *pg) quad(n int, l Limits, enc func(float64) uint16) {
	for k, v := range []float64{l.HighAlarm, l.LowAlarm, l.HighWarn, l.LowWarn} {
		p.u16(n+2*k, enc(v))
	}
}

// flags returns the high alarm, low alarm, high warning and low warning
// bits a module sets for value v against l; a module without limits (all
// zero: a passive cable) sets none.
func flags(v float64, l Limits) (ha, la, hw, lw bool) {
	if l == (Limits{}) {
		return false, false, false, false
	}
	return v >= l.HighAlarm, v <= l.LowAlarm, v >= l.HighWarn, v <= l.LowWarn
}

// nibble packs flags into bits 3-0 (high alarm first).
func nibble(ha, la, hw, lw bool) byte {
	var b byte
	for i, f := range []bool{ha, la, hw, lw} {
		if f {
			b |= 8 >> i
		}
	}
	return b
}

// identity writes vendor fields at SFF-8636 (and CMIS-like) offsets.
func (o Optic) identity(p *pg, vendor, oui, pn, rev, sn, date int, revWidth int) {
	p.str(vendor, 16, o.Vendor)
	p.set(oui, o.OUI[:]...)
	p.str(pn, 16, o.PN)
	p.str(rev, revWidth, o.Rev)
	p.str(sn, 16, o.SN)
	p.str(date, 8, o.Date)
}

// QSFP28 encodes an SFF-8636 QSFP28 (identifier 0x11): lower page, upper
// page 00h and threshold page 03h.
func (o Optic) QSFP28() sff.Pages {
	id, comp, tech, status := byte(0x11), byte(0x80), byte(0x40), byte(0x00)
	if o.Identifier != 0 {
		id = o.Identifier
	}
	if o.Comp131 != 0 {
		comp = o.Comp131
	}
	if o.Tech != nil {
		tech = *o.Tech
	}
	if o.FlatMem {
		status = 0x04
	}
	lo := newPg(0)
	lo.set(0, id, 0x08, status) // rev 2.8-2.10, paged or flat memory
	var los, fault byte
	var rxf, biasf, txf [2]byte
	t := o.Thresholds
	for i, l := range o.Lanes[:4] {
		if l.RXLOS {
			los |= 1 << i
		}
		if l.TXLOS {
			los |= 1 << (4 + i)
		}
		if l.TXFault {
			fault |= 1 << i
		}
		shift := 4 * (1 - i%2)
		rxf[i/2] |= nibble(flags(l.RXmW, t.RX)) << shift
		biasf[i/2] |= nibble(flags(l.BiasMA, t.Bias)) << shift
		txf[i/2] |= nibble(flags(l.TXmW, t.TX)) << shift
		lo.u16(34+2*i, rawPow(l.RXmW))
		lo.u16(42+2*i, rawBias(l.BiasMA))
		lo.u16(50+2*i, rawPow(l.TXmW))
	}
	lo.set(3, los, fault)
	lo.set(6, nibble(flags(o.TempC, t.Temp))<<4, nibble(flags(o.VccV, t.Vcc))<<4)
	lo.set(9, rxf[0], rxf[1], biasf[0], biasf[1], txf[0], txf[1])
	lo.u16(22, rawTemp(o.TempC))
	lo.u16(26, rawVolt(o.VccV))

	up := newPg(128)
	up.set(128, id, 0xDC, o.Connector, comp) // identifier, power class 4+, connector, compliance
	up.set(139, 0x05, 0xFF)                  // 64B/66B; bit rate in byte 222
	up.set(147, tech)                        // transmitter technology
	o.identity(up, 148, 165, 168, 184, 196, 212, 2)
	up.u16(186, uint16(math.Round(o.WavelengthNM/0.05)))
	up.sum(128, 191)
	up.set(192, o.Compliance)
	up.set(220, 0x0C, 0x10) // RX power is average, TX power measured
	up.set(222, 0x67)       // 103 × 250 MBd = 25.78 GBd
	up.sum(192, 223)

	if o.FlatMem {
		return sff.Pages{sff.Lower: lo.b, sff.Upper(0, 0): up.b}
	}
	p3 := newPg(128)
	p3.quad(128, t.Temp, rawTemp)
	p3.quad(144, t.Vcc, rawVolt)
	p3.quad(176, t.RX, rawPow)
	p3.quad(184, t.Bias, rawBias)
	p3.quad(192, t.TX, rawPow)
	return sff.Pages{sff.Lower: lo.b, sff.Upper(0, 0): up.b, sff.Upper(3, 0): p3.b}
}

// External calibration constants the SFP28 encoder uses: raw = (value −
// offset) / slope, and RX power = 0.5 · raw (a first-order polynomial).
const (
	calBiasSlope, calBiasOff = 1.25, 40.0
	calTXSlope, calTXOff     = 0.75, -100.0
	calTempSlope, calTempOff = 1.0, -256.0 // −1 °C
	calVoltSlope, calVoltOff = 1.0, 50.0
	calRX1                   = 0.5
)

// SFP28 encodes an SFF-8472 SFP28 (identifier 0x03): A0h and A2h, with
// internal or external calibration.
func (o Optic) SFP28() sff.Pages {
	a0 := newPg(0)
	a0.set(0, 0x03, 0x04, o.Connector)
	a0.set(3, 0x10) // 10GBASE-SR bit, as 25G SR modules set it
	a0.set(11, 0x06, 0xFF)
	a0.str(20, 16, o.Vendor)
	a0.set(36, o.Compliance)
	a0.set(37, o.OUI[:]...)
	a0.str(40, 16, o.PN)
	a0.str(56, 4, o.Rev)
	binary.BigEndian.PutUint16(a0.b[60:], uint16(o.WavelengthNM))
	a0.sum(0, 63)
	a0.set(64, 0x00, 0x1A, 0x67, 0x00) // options: TX disable, TX fault, LOS; BR max/min
	a0.str(68, 16, o.SN)
	a0.str(84, 8, o.Date)
	diag := byte(0x68) // DDM, internally calibrated, average RX power
	if o.ExternalCal {
		diag = 0x58 // DDM, externally calibrated, average RX power
	}
	a0.set(92, diag, 0xF0, 0x08)
	a0.sum(64, 95)

	enc := struct{ temp, volt, bias, tx, rx func(float64) uint16 }{rawTemp, rawVolt, rawBias, rawPow, rawPow}
	a2 := newPg(0)
	if o.ExternalCal {
		lin := func(slope, off float64, raw func(float64) uint16) func(float64) uint16 {
			return func(v float64) uint16 { return clamp16((float64(raw(v)) - off) / slope) }
		}
		enc.bias = lin(calBiasSlope, calBiasOff, rawBias)
		enc.tx = lin(calTXSlope, calTXOff, rawPow)
		enc.volt = lin(calVoltSlope, calVoltOff, rawVolt)
		enc.temp = func(c float64) uint16 { return uint16(int16(math.Round((c*256 - calTempOff) / calTempSlope))) }
		enc.rx = func(mw float64) uint16 { return clamp16(float64(rawPow(mw)) / calRX1) }
		binary.BigEndian.PutUint32(a2.b[68:], math.Float32bits(calRX1))
		put := func(n int, slope, off float64) {
			binary.BigEndian.PutUint16(a2.b[n:], uint16(math.Round(slope*256))) // the slopes above are multiples of 1/256
			binary.BigEndian.PutUint16(a2.b[n+2:], uint16(int16(off)))
		}
		put(76, calBiasSlope, calBiasOff)
		put(80, calTXSlope, calTXOff)
		put(84, calTempSlope, calTempOff)
		put(88, calVoltSlope, calVoltOff)
	}
	t := o.Thresholds
	a2.quad(0, t.Temp, enc.temp)
	a2.quad(8, t.Vcc, enc.volt)
	a2.quad(16, t.Bias, enc.bias)
	a2.quad(24, t.TX, enc.tx)
	a2.quad(32, t.RX, enc.rx)
	l := o.Lanes[0]
	a2.u16(96, enc.temp(o.TempC))
	a2.u16(98, enc.volt(o.VccV))
	a2.u16(100, enc.bias(l.BiasMA))
	a2.u16(102, enc.tx(l.TXmW))
	a2.u16(104, enc.rx(l.RXmW))
	var status byte
	if l.TXFault {
		status |= 0x04
	}
	if l.RXLOS {
		status |= 0x02
	}
	a2.set(110, status)
	th, tl, tw, tlw := flags(o.TempC, t.Temp)
	vh, vl, vw, vlw := flags(o.VccV, t.Vcc)
	bh, bl, bw, blw := flags(l.BiasMA, t.Bias)
	xh, xl, xw, xlw := flags(l.TXmW, t.TX)
	rh, rl, rw, rlw := flags(l.RXmW, t.RX)
	bits := func(fl ...bool) byte {
		var b byte
		for i, f := range fl {
			if f {
				b |= 0x80 >> i
			}
		}
		return b
	}
	a2.set(112, bits(th, tl, vh, vl, bh, bl, xh, xl), bits(rh, rl))
	a2.set(116, bits(tw, tlw, vw, vlw, bw, blw, xw, xlw), bits(rw, rlw))
	return sff.Pages{sff.Lower: a0.b, {I2C: sff.AddrA0, Offset: 128}: newPg(128).b,
		{I2C: sff.AddrA2}: a2.b, {I2C: sff.AddrA2, Offset: 128}: newPg(128).b}
}

// CMIS encodes a CMIS module with identifier id (0x18 QSFP-DD, 0x19
// OSFP, 0x1E QSFP112/QSFP+ CMIS): lower page, pages 00h, 01h, 02h, and
// 10h and 11h of bank 0 (up to eight lanes).
func (o Optic) CMIS(id byte) sff.Pages {
	t := o.Thresholds
	scale := o.BiasScale
	if scale == 0 {
		scale = 1
	}
	lo := newPg(0)
	lo.set(0, id, 0x50, 0x00, o.State<<1) // CMIS 5.0, paged
	th, tl, tw, tlw := flags(o.TempC, t.Temp)
	vh, vl, vw, vlw := flags(o.VccV, t.Vcc)
	var mf byte
	for i, f := range []bool{th, tl, tw, tlw, vh, vl, vw, vlw} {
		if f {
			mf |= 1 << i
		}
	}
	lo.set(9, mf)
	lo.u16(14, rawTemp(o.TempC))
	lo.u16(16, rawVolt(o.VccV))
	n := len(o.Lanes)
	apps := o.Apps
	if apps == nil {
		apps = []OpticApp{{o.HostCode, o.MediaCode, n, n, 0x01, 0x01}}
	}
	lo.set(85, o.MediaType)
	p01 := newPg(128)
	for i, a := range apps[:min(len(apps), 8)] {
		lo.set(86+4*i, a.Host, a.Media, byte(a.HostLanes<<4|a.MediaLanes), a.HostStarts)
		p01.set(176+i, a.MediaStarts)
	}
	if len(apps) < 8 {
		lo.set(86+4*len(apps), 0xFF) // the end of the list
	}

	p00 := newPg(128)
	p00.set(128, id)
	o.identity(p00, 129, 145, 148, 164, 166, 182, 2)
	p00.set(200, 0xC0, 0x30, 0x00, o.Connector) // power class 7, 12 W max, cable length, connector
	p00.set(212, o.MediaTech)
	p00.sum(128, 222)

	p01.u16(138, uint16(math.Round(o.WavelengthNM/0.05)))
	p01.set(142, 0x00) // one bank
	p01.set(151, 0x10) // RX power is average
	code := map[int]byte{1: 0, 2: 1, 4: 2}[scale]
	p01.set(159, 0x03, 0x07|code<<3)

	p02 := newPg(128)
	p02.quad(128, t.Temp, rawTemp)
	p02.quad(136, t.Vcc, rawVolt)
	p02.quad(176, t.TX, rawPow)
	p02.quad(184, t.Bias, func(ma float64) uint16 { return rawBias(ma / float64(scale)) })
	p02.quad(192, t.RX, rawPow)

	p10 := newPg(128)
	p11 := newPg(128)
	var f [18]byte // bytes 135-152 of page 11h
	for i, l := range o.Lanes[:min(n, 8)] {
		bit := byte(1) << i
		set := func(n int, on bool) {
			if on {
				f[n-135] |= bit
			}
		}
		set(135, l.TXFault)
		set(136, l.TXLOS)
		set(147, l.RXLOS)
		for k, on := range flags1(l.TXmW, t.TX) {
			set(139+k, on)
		}
		for k, on := range flags1(l.BiasMA, t.Bias) {
			set(143+k, on)
		}
		for k, on := range flags1(l.RXmW, t.RX) {
			set(149+k, on)
		}
		p11.u16(154+2*i, rawPow(l.TXmW))
		p11.u16(170+2*i, rawBias(l.BiasMA/float64(scale)))
		p11.u16(186+2*i, rawPow(l.RXmW))
	}
	p11.set(135, f[:]...)
	// The active control set (bytes 206-213: AppSel, DataPathID = first
	// host lane - 1) and each configured host lane's data path state
	// (bytes 128-131, a nibble a lane: 4 is activated).
	for _, dp := range o.Paths {
		for _, h := range dp.HostLanes {
			p11.set(206+h-1, byte(dp.AppSel)<<4|byte(dp.HostLanes[0]-1)<<1)
			p11.b[(h-1)/2] |= 0x04 << (4 * ((h - 1) % 2))
		}
	}
	return sff.Pages{sff.Lower: lo.b, sff.Upper(0, 0): p00.b, sff.Upper(1, 0): p01.b, sff.Upper(2, 0): p02.b,
		sff.Upper(0x10, 0): p10.b, sff.Upper(0x11, 0): p11.b}
}

// flags1 is flags as an array.
func flags1(v float64, l Limits) [4]bool {
	ha, la, hw, lw := flags(v, l)
	return [4]bool{ha, la, hw, lw}
}
