package sff

import (
	"strings"
	"testing"
)

// Media classes as the tests write them: class and cable kind.
const (
	optical   = MediaOptical
	aoc       = MediaOptical + "/" + CableActive
	dac       = MediaCopper + "/" + CablePassive
	acc       = MediaCopper + "/" + CableActive
	copperPHY = MediaCopper
	unknown   = MediaUnknown
)

func classOf(m media) string {
	if m.cable == "" {
		return m.class
	}
	return m.class + "/" + m.cable
}

// upper8636 is an SFF-8636 upper page 00h with the media bytes given.
func upper8636(connector, comp131, tech147, ext192 byte) *reader {
	p := newPage(128).set(130, connector, comp131).set(147, tech147).set(192, ext192)
	return &reader{b: p.b, base: 128, page: Upper(0, 0)}
}

// TestMedia8636Technology: every transmitter technology code of SFF-8636
// byte 147 (Table 6-19), with no compliance code and no connector.
func TestMedia8636Technology(t *testing.T) {
	want := [16]string{
		optical, optical, optical, optical, optical, optical, optical, optical, // VCSELs, FP, DFB, EML
		unknown, optical, // 1000b others/undefined: nothing else names a medium; 1001b 1490 nm DFB
		dac, dac, // 1010b unequalized, 1011b passive equalized copper
		acc, acc, acc, acc, // 1100b-1111b copper with active equalizers
	}
	for nib := range 16 {
		got := media8636(upper8636(0x00, 0x00, byte(nib<<4), 0x00))
		if classOf(got) != want[nib] {
			t.Errorf("byte 147 = 0x%X0: %s (%s), want %s", nib, classOf(got), got.basis, want[nib])
		}
		if !strings.Contains(got.basis, "byte 147") && want[nib] != unknown {
			t.Errorf("byte 147 = 0x%X0: basis %q does not name byte 147", nib, got.basis)
		}
	}
}

// wantExt is the medium every assigned extended compliance code of
// SFF-8024 Table 4-4 names; codes not listed name an optical interface.
var wantExt = map[uint8]string{
	0x00: unknown,                              // unspecified
	0x01: aoc, 0x18: aoc, 0x31: aoc, 0x33: aoc, // active optical cables
	0x08: acc, 0x19: acc, 0x30: acc, 0x32: acc, // active copper cables
	0x50: acc, 0x53: acc, // 64GFC EA, 128GFC EA: electrical active
	0x0B: dac, 0x0C: dac, 0x0D: dac, 0x3F: dac, 0x40: dac, // CR: twinax
	0x0E: copperPHY, 0x16: copperPHY, 0x1C: copperPHY, 0x1D: copperPHY, 0x1E: copperPHY, // BASE-T, single pair
	0x80: unknown, 0x81: unknown, // "64GFC", "128GFC": a speed, no medium
}

// TestMedia8636Compliance: with byte 147 "others/undefined", each
// extended compliance code (byte 192 through byte 131 bit 7) decides, and
// the 10G/40G codes of byte 131 where byte 192 is not used.
func TestMedia8636Compliance(t *testing.T) {
	for code := range extComplianceSpec {
		want, ok := wantExt[code]
		if !ok {
			want = optical
		}
		got := media8636(upper8636(0x00, 0x80, 0x80, code))
		if classOf(got) != want {
			t.Errorf("byte 192 = 0x%02X (%s): %s, want %s", code, extComplianceSpec[code], classOf(got), want)
		}
	}
	for bit, want := range map[uint]string{0: unknown, 1: optical, 2: optical, 3: dac, 4: optical, 5: optical, 6: optical} {
		got := media8636(upper8636(0x00, 1<<bit, 0x80, 0x00))
		if classOf(got) != want {
			t.Errorf("byte 131 bit %d: %s, want %s", bit, classOf(got), want)
		}
	}
	// The connector is the last resort.
	for conn, want := range map[byte]string{0x07: optical, 0x0C: optical, 0x21: dac, 0x22: copperPHY, 0x23: unknown, 0x0B: aoc} {
		got := media8636(upper8636(conn, 0x00, 0x80, 0x00))
		if classOf(got) != want {
			t.Errorf("connector 0x%02X: %s, want %s", conn, classOf(got), want)
		}
	}
}

// TestMedia8636Conflicts: the technology byte decides over compliance
// codes, except a zero byte (850 nm VCSEL, and what an unset byte reads)
// against codes or a connector that say copper; an optical technology
// with an AOC code is an active optical cable.
func TestMedia8636Conflicts(t *testing.T) {
	for _, tt := range []struct {
		name                  string
		conn, comp, tech, ext byte
		want                  string
	}{
		{"a DAC with byte 147 unset and 100GBASE-CR4", 0x23, 0x80, 0x00, 0x0B, dac},
		{"a 40G DAC with byte 147 unset and 40GBASE-CR4", 0x23, 0x08, 0x00, 0x00, dac},
		{"a DAC with byte 147 unset and a copper pigtail", 0x21, 0x00, 0x00, 0x00, dac},
		{"an SR4 module", 0x0C, 0x80, 0x00, 0x02, optical},
		{"copper technology over an optical code", 0x23, 0x80, 0xA0, 0x02, dac},
		{"a 1310 nm laser over a copper code", 0x07, 0x80, 0x40, 0x0B, optical},
		{"an AOC", 0x23, 0x80, 0x00, 0x01, aoc},
		{"a 40G AOC (byte 131 bit 0, XLPPI)", 0x23, 0x01, 0x00, 0x00, aoc},
	} {
		got := media8636(upper8636(tt.conn, tt.comp, tt.tech, tt.ext))
		if classOf(got) != tt.want {
			t.Errorf("%s: %s (%s), want %s", tt.name, classOf(got), got.basis, tt.want)
		}
	}
}

// a08472 is an SFF-8472 A0h page with the given bytes set.
func a08472(set map[int]byte) *reader {
	p := newPage(0)
	for n, v := range set {
		p.set(n, v)
	}
	return &reader{b: p.b, base: 0, page: Lower}
}

// TestMedia8472: the cable technology bits of byte 8, every extended
// compliance code of byte 36, the compliance codes of bytes 3, 6, 8 and
// 9, and the connector, in that order of precedence.
func TestMedia8472(t *testing.T) {
	for code := range extComplianceSpec {
		want, ok := wantExt[code]
		if !ok {
			want = optical
		}
		if got := media8472(a08472(map[int]byte{36: code})); classOf(got) != want {
			t.Errorf("byte 36 = 0x%02X (%s): %s, want %s", code, extComplianceSpec[code], classOf(got), want)
		}
	}
	for _, tt := range []struct {
		name string
		set  map[int]byte
		want string
	}{
		{"byte 8 bit 2: passive cable", map[int]byte{8: 0x04}, dac},
		{"byte 8 bit 3: active cable", map[int]byte{8: 0x08}, acc},
		{"byte 8 bit 3 with 25GAUI AOC", map[int]byte{8: 0x08, 36: 0x18}, aoc},
		{"byte 8 bit 3 with an LC connector", map[int]byte{8: 0x08, 2: 0x07}, aoc},
		{"passive cable over an optical code", map[int]byte{8: 0x04, 3: 0x10}, dac},
		{"10GBASE-SR", map[int]byte{3: 0x10}, optical},
		{"10GBASE-ER", map[int]byte{3: 0x80}, optical},
		{"1000BASE-SX", map[int]byte{6: 0x01}, optical},
		{"1000BASE-LX", map[int]byte{6: 0x02}, optical},
		{"100BASE-FX", map[int]byte{6: 0x20}, optical},
		{"1000BASE-BX10", map[int]byte{6: 0x40}, optical},
		{"1000BASE-T", map[int]byte{6: 0x08}, copperPHY},
		{"1000BASE-CX", map[int]byte{6: 0x04}, dac},
		{"Fibre Channel shortwave laser", map[int]byte{8: 0x40}, optical},
		{"Fibre Channel longwave laser", map[int]byte{8: 0x10}, optical},
		{"Fibre Channel electrical inter-enclosure", map[int]byte{8: 0x80}, dac},
		{"twin-axial pair", map[int]byte{9: 0x80}, dac},
		{"single-mode fibre", map[int]byte{9: 0x01}, optical},
		{"multimode 50 µm", map[int]byte{9: 0x04}, optical},
		{"twisted pair", map[int]byte{9: 0x40}, copperPHY},
		{"an RJ45 module", map[int]byte{2: 0x22}, copperPHY},
		{"an LC module without codes", map[int]byte{2: 0x07}, optical},
		{"nothing set", map[int]byte{}, unknown},
	} {
		if got := media8472(a08472(tt.set)); classOf(got) != tt.want {
			t.Errorf("%s: %s (%s), want %s", tt.name, classOf(got), got.basis, tt.want)
		}
	}
}

// TestMediaCMIS: every module media type of CMIS byte 85, and an active
// cable by every media interface technology of page 00h byte 212.
func TestMediaCMIS(t *testing.T) {
	for mt := range 256 {
		lo := &reader{b: newPage(0).set(85, byte(mt)).b, page: Lower}
		p00 := &reader{b: newPage(128).set(212, 0x08).set(203, 0x23).b, base: 128, page: Upper(0, 0)}
		want := map[int]string{1: optical, 2: optical, 3: dac, 4: MediaUnknown + "/" + CableActive, 5: copperPHY}[mt]
		if want == "" {
			want = unknown // undefined or reserved, byte 212 "others", no connector help
		}
		if got := mediaCMIS(lo, p00); classOf(got) != want {
			t.Errorf("byte 85 = 0x%02X: %s, want %s", mt, classOf(got), want)
		}
	}
	for tech := range 0x20 {
		lo := &reader{b: newPage(0).set(85, 0x04).b, page: Lower}
		p00 := &reader{b: newPage(128).set(212, byte(tech)).b, base: 128, page: Upper(0, 0)}
		var want string
		switch {
		case tech <= 0x07 || tech == 0x09 || tech == 0x10 || tech == 0x11:
			want = aoc
		case tech >= 0x0A && tech <= 0x0F:
			want = acc
		default:
			want = MediaUnknown + "/" + CableActive
		}
		got := mediaCMIS(lo, p00)
		if classOf(got) != want {
			t.Errorf("active cable, byte 212 = 0x%02X: %s, want %s", tech, classOf(got), want)
		}
		// An undefined media type falls back to byte 212 itself.
		lo.b[85] = 0x00
		fb := mediaCMIS(lo, p00)
		if w := strings.TrimSuffix(strings.Replace(want, "/"+CableActive, "", 1), ""); fb.class != strings.Split(w, "/")[0] {
			t.Errorf("media type 00h, byte 212 = 0x%02X: %s, want class %s", tech, classOf(fb), w)
		}
	}
	// An active cable with an LC-less, copper pigtail connector and no
	// technology: copper.
	lo := &reader{b: newPage(0).set(85, 0x04).b, page: Lower}
	p00 := &reader{b: newPage(128).set(212, 0x08).set(203, 0x21).b, base: 128, page: Upper(0, 0)}
	if got := mediaCMIS(lo, p00); classOf(got) != acc {
		t.Errorf("active cable with a copper pigtail: %s", classOf(got))
	}
}

// TestDecodedMedia: the decoders fill the module's media fields, and a
// copper cable keeps its temperature and identity but no lane powers.
func TestDecodedMedia(t *testing.T) {
	// A passive 40G QSFP+ DAC that reports a temperature.
	lo := newPage(0).set(0, 0x0D, 0x07, 0x00).set(22, 0x1E, 0x80).set(26, 0x80, 0xE8)
	up := newPage(128).set(128, 0x0D).set(130, 0x23, 0x08).set(147, 0xA0).
		str(148, 16, "Mellanox").str(168, 16, "MC2210130-003").str(196, 16, "MT1903VS01234").sum(128, 191)
	m, err := Decode(Pages{Lower: lo.b, Upper(0, 0): up.b})
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaClass != MediaCopper || m.Cable != CablePassive || !strings.Contains(m.MediaBasis, "byte 147") {
		t.Errorf("media %s/%s (%s)", m.MediaClass, m.Cable, m.MediaBasis)
	}
	checkF(t, "temperature", m.TemperatureC, 30.5)
	if m.Media != "40GBASE-CR4" || m.VendorPN != "MC2210130-003" || len(m.Lanes) != 4 || !m.Monitors {
		t.Errorf("identity %+v", m)
	}
	for _, l := range m.Lanes {
		if l.RXPowerMW != nil || l.TXPowerMW != nil || l.TXBiasMA != nil {
			t.Errorf("lane %d of a copper cable has power or bias: %+v", l.Lane, l)
		}
	}
	if m.RXPowerType != "" || m.WavelengthNM != nil {
		t.Errorf("a cable has no RX power type or wavelength: %q %v", m.RXPowerType, m.WavelengthNM)
	}

	// The CWDM4 of the other tests is optical, RX power average.
	m, _ = Decode(qsfp28CWDM4())
	if m.MediaClass != MediaOptical || m.Cable != "" || m.Lanes[0].RXPowerMW == nil {
		t.Errorf("CWDM4: %s/%s, lane 1 %+v", m.MediaClass, m.Cable, m.Lanes[0])
	}
	m, _ = Decode(sfp28())
	if m.MediaClass != MediaOptical {
		t.Errorf("SFP28 SR: %s (%s)", m.MediaClass, m.MediaBasis)
	}
	m, _ = Decode(qsfpDD())
	if m.MediaClass != MediaOptical || m.RXPowerType != "OMA" {
		t.Errorf("QSFP-DD DR4: %s, rx power %q", m.MediaClass, m.RXPowerType)
	}
}

// TestCMISRXPowerType: page 01h byte 151 bit 4 says average, else OMA.
func TestCMISRXPowerType(t *testing.T) {
	for _, v := range []byte{0x00, 0x10, 0xEF, 0xFF} {
		p := qsfpDD()
		p[Upper(1, 0)][151-128] = v
		m, err := Decode(p)
		if err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{true: "average", false: "OMA"}[v&0x10 != 0]
		if m.RXPowerType != want {
			t.Errorf("byte 151 = 0x%02X: %q, want %q", v, m.RXPowerType, want)
		}
	}
}
