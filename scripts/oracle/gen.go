package main

import (
	"encoding/binary"
	"math"
	"math/rand/v2"

	"github.com/linerate/linerate/internal/sff"
)

// The generators write module memory at random within each
// specification's valid ranges: codes from the SFF-8024 tables, ASCII
// identity padded with spaces, monitors and thresholds in their units'
// ranges with thresholds ordered (high alarm ≥ high warning ≥ low
// warning ≥ low alarm), flags and status bits at random, and a medium
// whose bytes agree with one another (a transmitter technology, a
// compliance code and a connector of the same medium), as a module
// answers.

// page is 128 bytes addressed by the specifications' byte numbers.
type page struct {
	b    []byte
	base int
}

func newPage(base int) *page { return &page{b: make([]byte, 128), base: base} }

func (p *page) set(n int, v ...byte) { copy(p.b[n-p.base:], v) }
func (p *page) u16(n int, v uint16)  { binary.BigEndian.PutUint16(p.b[n-p.base:], v) }
func (p *page) f32(n int, v float32) { binary.BigEndian.PutUint32(p.b[n-p.base:], math.Float32bits(v)) }
func (p *page) rnd(r *rand.Rand, n, w int) {
	for i := range w {
		p.b[n-p.base+i] = byte(r.UintN(256))
	}
}

// text writes printable ASCII of random length padded with spaces.
func (p *page) text(r *rand.Rand, n, w int) {
	const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./ abcdefghijklmnopqrstuvwxyz"
	l := 1 + r.IntN(w)
	for i := range w {
		c := byte(' ')
		if i < l {
			c = chars[r.IntN(len(chars))]
		}
		p.b[n-p.base+i] = c
	}
	if p.b[n-p.base] == ' ' {
		p.b[n-p.base] = 'X'
	}
}

// date writes a YYMMDD date code and a lot code.
func (p *page) date(r *rand.Rand, n int) {
	s := []byte{byte('0' + r.IntN(3)), byte('0' + r.IntN(10)), '0', byte('1' + r.IntN(9)), byte('0' + r.IntN(3)), byte('1' + r.IntN(9)), ' ', ' '}
	if r.IntN(2) == 0 {
		s[6], s[7] = byte('A'+r.IntN(26)), byte('0'+r.IntN(10))
	}
	p.set(n, s...)
}

func (p *page) sum(from, at int) {
	var s byte
	for n := from; n < at; n++ {
		s += p.b[n-p.base]
	}
	p.b[at-p.base] = s
}

// quad writes four ordered thresholds in [lo, hi] with enc.
func (p *page) quad(r *rand.Rand, n int, lo, hi float64, enc func(float64) uint16) {
	v := []float64{lo + r.Float64()*(hi-lo), lo + r.Float64()*(hi-lo), lo + r.Float64()*(hi-lo), lo + r.Float64()*(hi-lo)}
	// high alarm ≥ high warning ≥ low warning ≥ low alarm
	for i := range v {
		for j := i + 1; j < len(v); j++ {
			if v[j] > v[i] {
				v[i], v[j] = v[j], v[i]
			}
		}
	}
	for k, x := range []float64{v[0], v[3], v[1], v[2]} {
		p.u16(n+2*k, enc(x))
	}
}

func clamp(v float64) uint16             { return uint16(math.Max(0, math.Min(65535, math.Round(v)))) }
func encTemp(c float64) uint16           { return uint16(int16(math.Round(c * 256))) }
func encVolt(v float64) uint16           { return clamp(v * 10000) }
func encBias(ma float64) uint16          { return clamp(ma * 500) }
func encPow(mw float64) uint16           { return clamp(mw * 10000) }
func pick[T any](r *rand.Rand, v ...T) T { return v[r.IntN(len(v))] }

// Media a generated module is made of.
const (
	genOptical = iota
	genPassive
	genActiveCopper
	genAOC
)

// opticalConnectors and the codes of each medium, from SFF-8024.
var (
	opticalConnectors = []byte{0x01, 0x07, 0x0C, 0x0D, 0x25, 0x26, 0x27, 0x28}
	opticalExt8636    = []byte{0x02, 0x03, 0x04, 0x06, 0x07, 0x17, 0x1A, 0x20, 0x25, 0x26, 0x27, 0x41, 0x42, 0x43, 0x46, 0x47, 0x48}
	opticalExt8472    = []byte{0x02, 0x03, 0x04, 0x26, 0x27, 0x41, 0x42, 0x45}
)

// randomSFF8636 writes a QSFP+/QSFP28 module: lower page, page 00h and,
// paged, page 03h.
func randomSFF8636(r *rand.Rand) sff.Pages {
	medium := pick(r, genOptical, genOptical, genOptical, genPassive, genActiveCopper, genAOC)
	id := pick[byte](r, 0x0D, 0x11, 0x11)
	flat := medium == genPassive && r.IntN(2) == 0
	lo := newPage(0)
	status := byte(0)
	if flat {
		status = 0x04
	}
	lo.set(0, id, pick[byte](r, 0x06, 0x07, 0x08), status)
	lo.rnd(r, 3, 3)                                       // LOS, TX fault, LOL
	lo.set(6, byte(r.UintN(16))<<4, byte(r.UintN(16))<<4) // temperature and Vcc flags
	lo.rnd(r, 9, 6)                                       // lane flags
	lo.u16(22, encTemp(-10+r.Float64()*90))               // temperature
	lo.u16(26, encVolt(3.0+r.Float64()*0.6))              // Vcc
	for i := range 4 {
		lo.u16(34+2*i, encPow(pick(r, 0, r.Float64()*3, r.Float64()*0.1))) // RX power
		lo.u16(42+2*i, encBias(r.Float64()*100))                           // TX bias
		lo.u16(50+2*i, encPow(r.Float64()*3))                              // TX power
	}
	up := newPage(128)
	up.set(128, id, pick[byte](r, 0x00, 0xCC, 0xDC))
	var conn, comp, tech, ext byte
	switch medium {
	case genOptical:
		conn, comp, tech = pick(r, opticalConnectors...), 0x80, byte(pick(r, 0, 1, 2, 3, 4, 5, 6, 7, 9))<<4
		ext = pick(r, opticalExt8636...)
		if r.IntN(4) == 0 { // a 40G optical code of byte 131
			comp, ext = pick[byte](r, 0x02, 0x04, 0x10, 0x20), 0
		}
	case genPassive:
		conn, tech = pick[byte](r, 0x21, 0x23), pick[byte](r, 0xA0, 0xB0)
		comp, ext = pick[byte](r, 0x80, 0x08), pick[byte](r, 0x0B, 0x0C, 0x0D, 0x40)
	case genActiveCopper:
		conn, tech, comp, ext = 0x23, byte(0xC0+0x10*r.IntN(4)), 0x80, pick[byte](r, 0x08, 0x19, 0x32)
	case genAOC:
		conn, tech, comp, ext = 0x23, pick[byte](r, 0x00, 0x10), 0x80, pick[byte](r, 0x01, 0x18, 0x31)
	}
	up.set(130, conn, comp)
	up.set(139, pick[byte](r, 0x05, 0x07, 0x08), byte(r.UintN(256)))
	up.set(147, tech|byte(r.UintN(16)))
	up.text(r, 148, 16)
	up.rnd(r, 165, 3)
	up.text(r, 168, 16)
	up.text(r, 184, 2)
	if tech < 0xA0 {
		up.u16(186, uint16(pick(r, 850, 1271, 1295, 1310, 1311, 1550)*20))
	} else {
		up.set(186, byte(r.IntN(20)), byte(r.IntN(20)))
	}
	up.sum(128, 191)
	up.set(192, ext)
	up.text(r, 196, 16)
	up.date(r, 212)
	up.set(220, byte(r.UintN(2))<<3|0x04, 0x10)
	up.sum(192, 223)
	p := sff.Pages{sff.Lower: lo.b, sff.Upper(0, 0): up.b}
	if !flat {
		p3 := newPage(128)
		p3.quad(r, 128, -20, 100, encTemp)
		p3.quad(r, 144, 2.8, 3.8, encVolt)
		p3.quad(r, 176, 0.001, 5, encPow)
		p3.quad(r, 184, 1, 120, encBias)
		p3.quad(r, 192, 0.001, 5, encPow)
		p[sff.Upper(3, 0)] = p3.b
	}
	return p
}

// randomSFF8472 writes an SFP/SFP+/SFP28: A0h, and A2h when diagnostics
// are implemented, internally or externally calibrated.
func randomSFF8472(r *rand.Rand) sff.Pages {
	medium := pick(r, genOptical, genOptical, genOptical, genPassive, genActiveCopper)
	a0 := newPage(0)
	a0.set(0, 0x03, 0x04)
	switch medium {
	case genOptical:
		a0.set(2, pick(r, opticalConnectors...))
		a0.set(3, pick[byte](r, 0x10, 0x20, 0x40, 0x80, 0x00))
		a0.set(6, pick[byte](r, 0x00, 0x01, 0x02))
		a0.set(36, pick(r, opticalExt8472...))
		a0.u16(60, uint16(pick(r, 850, 1310, 1550)))
	case genPassive:
		a0.set(2, 0x21)
		a0.set(8, 0x04)
		a0.set(36, pick[byte](r, 0x0B, 0x0C, 0x0D, 0x00))
		a0.set(60, 0x01)
	case genActiveCopper:
		a0.set(2, 0x21)
		a0.set(8, 0x08)
		a0.set(36, pick[byte](r, 0x08, 0x19, 0x00))
		a0.set(60, 0x04)
	}
	a0.set(11, pick[byte](r, 0x01, 0x03, 0x06), byte(r.UintN(256)))
	a0.text(r, 20, 16)
	a0.rnd(r, 37, 3)
	a0.text(r, 40, 16)
	a0.text(r, 56, 4)
	a0.sum(0, 63)
	a0.set(64, 0x00, 0x1A)
	a0.text(r, 68, 16)
	a0.date(r, 84)
	ddm := medium == genOptical || r.IntN(3) == 0
	ext := ddm && r.IntN(5) == 0
	diag := byte(r.UintN(2)) << 3 // RX power average or OMA
	switch {
	case ext:
		diag |= 0x50
	case ddm:
		diag |= 0x60
	}
	a0.set(92, diag, byte(r.UintN(2))<<7|0x70, 0x08)
	a0.sum(64, 95)
	p := sff.Pages{sff.Lower: a0.b, {I2C: sff.AddrA0, Offset: 128}: newPage(128).b}
	if !ddm {
		return p
	}
	a2 := newPage(0)
	a2.quad(r, 0, -20, 100, encTemp)
	a2.quad(r, 8, 2.8, 3.8, encVolt)
	a2.quad(r, 16, 1, 120, encBias)
	a2.quad(r, 24, 0.001, 5, encPow)
	a2.quad(r, 32, 0.001, 5, encPow)
	if ext {
		// Slopes are multiples of 1/256 (u16 8.8 fixed point); RX power
		// mostly first order, as modules calibrate it.
		a2.f32(68, float32(0.5+r.Float64()/2)) // Rx_PWR(1)
		a2.f32(72, float32(r.Float64()*20))    // Rx_PWR(0)
		if r.IntN(4) == 0 {
			a2.f32(64, float32(r.Float64()*2e-6)) // Rx_PWR(2)
		}
		// Slopes of 0.5 to 1 and small positive offsets keep every
		// calibrated value inside its 16-bit range, as a module's are.
		for _, n := range []int{76, 80, 84, 88} {
			a2.u16(n, uint16(128+r.IntN(129)))
			a2.u16(n+2, uint16(r.IntN(100)))
		}
	}
	a2.u16(96, encTemp(-10+r.Float64()*90))
	a2.u16(98, encVolt(3.0+r.Float64()*0.6))
	a2.u16(100, encBias(r.Float64()*100))
	a2.u16(102, encPow(r.Float64()*3))
	a2.u16(104, encPow(pick(r, 0, r.Float64()*3)))
	a2.set(110, byte(r.UintN(256))&0x06)
	a2.rnd(r, 112, 2)
	a2.rnd(r, 116, 2)
	p[sff.Page{I2C: sff.AddrA2}] = a2.b
	p[sff.Page{I2C: sff.AddrA2, Offset: 128}] = newPage(128).b
	return p
}

// cmisApps are application descriptors of each medium: host code, media
// code, lane counts, host and media lane options.
var cmisApps = map[int][][6]byte{
	genOptical: {
		{0x11, 0x1C, 0x84, 0x01, 0x01, 0x02}, // 400GAUI-8, 400GBASE-DR4 (SMF)
		{0x11, 0x1D, 0x84, 0x01, 0x01, 0x02}, // 400GAUI-8, 400GBASE-FR4
		{0x11, 0x1B, 0x88, 0x01, 0x01, 0x02}, // 400GAUI-8, 400GBASE-LR8
		{0x0B, 0x0D, 0x44, 0x11, 0x11, 0x02}, // CAUI-4, 100GBASE-LR4, twice
		{0x11, 0x10, 0x88, 0x01, 0x01, 0x01}, // 400GAUI-8, 400GBASE-SR8 (MMF)
		{0x11, 0x3E, 0x81, 0x01, 0x01, 0x02}, // 400GAUI-8, 400ZR
	},
	genPassive:      {{0x1D, 0x01, 0x88, 0x01, 0x01, 0x03}, {0x1A, 0x01, 0x44, 0x11, 0x11, 0x03}},
	genActiveCopper: {{0x11, 0x03, 0x88, 0x01, 0x01, 0x04}},
	genAOC:          {{0x11, 0x02, 0x88, 0x01, 0x01, 0x04}},
}

// randomCMIS writes a QSFP-DD/OSFP module: lower page, pages 00h, 01h,
// 02h, 10h and 11h of bank 0 (a passive cable: flat memory, the lower
// page and page 00h only).
func randomCMIS(r *rand.Rand) sff.Pages {
	medium := pick(r, genOptical, genOptical, genOptical, genPassive, genActiveCopper, genAOC)
	app := pick(r, cmisApps[medium]...)
	id := pick[byte](r, 0x18, 0x19)
	flat := medium == genPassive
	lo := newPage(0)
	lo.set(0, id, pick[byte](r, 0x40, 0x50, 0x52))
	if flat {
		lo.set(2, 0x80)
	}
	lo.set(3, byte(pick(r, 1, 3, 3, 3, 5))<<1)
	lo.set(9, byte(r.UintN(256)))
	lo.u16(14, encTemp(-10+r.Float64()*90))
	lo.u16(16, encVolt(3.0+r.Float64()*0.6))
	lo.set(85, app[5], app[0], app[1], app[2], app[3], 0xFF)
	p00 := newPage(128)
	p00.set(128, id)
	p00.text(r, 129, 16)
	p00.rnd(r, 145, 3)
	p00.text(r, 148, 16)
	p00.text(r, 164, 2)
	p00.text(r, 166, 16)
	p00.date(r, 182)
	p00.set(200, 0xC0, 0x30, 0x00)
	switch medium {
	case genOptical:
		p00.set(203, pick(r, opticalConnectors...), 0, 0, 0, 0, 0, 0, 0, 0, byte(pick(r, 0, 1, 2, 3, 4, 5, 6, 7, 9, 0x10)))
	case genAOC:
		p00.set(203, 0x23, 0, 0, 0, 0, 0, 0, 0, 0, pick[byte](r, 0x00, 0x01))
	default:
		p00.set(203, pick[byte](r, 0x21, 0x23), 0, 0, 0, 0, 0, 0, 0, 0, byte(0x0A+r.IntN(6)))
	}
	p00.sum(128, 222)
	p := sff.Pages{sff.Lower: lo.b, sff.Upper(0, 0): p00.b}
	if flat {
		return p
	}
	p01 := newPage(128)
	p01.u16(138, uint16(pick(r, 850, 1271, 1295.56, 1310, 1311)*20))
	p01.set(142, 0x00)
	p01.set(151, byte(r.UintN(2))<<4)
	p01.set(159, byte(r.UintN(4)), byte(r.UintN(3))<<3|byte(r.UintN(8)))
	p01.set(176, app[4])
	p02 := newPage(128)
	p02.quad(r, 128, -20, 100, encTemp)
	p02.quad(r, 136, 2.8, 3.8, encVolt)
	p02.quad(r, 176, 0.001, 5, encPow)
	p02.quad(r, 184, 1, 120, encBias)
	p02.quad(r, 192, 0.001, 5, encPow)
	p10 := newPage(128)
	p10.set(130, byte(r.UintN(256)))
	p11 := newPage(128)
	p11.rnd(r, 128, 4)
	p11.rnd(r, 135, 18)
	for i := range 8 {
		p11.u16(154+2*i, encPow(r.Float64()*3))
		p11.u16(170+2*i, encBias(r.Float64()*60))
		p11.u16(186+2*i, encPow(pick(r, 0, r.Float64()*3)))
	}
	return sff.Pages{sff.Lower: lo.b, sff.Upper(0, 0): p00.b, sff.Upper(1, 0): p01.b, sff.Upper(2, 0): p02.b,
		sff.Upper(0x10, 0): p10.b, sff.Upper(0x11, 0): p11.b}
}
