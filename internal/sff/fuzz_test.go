package sff

import (
	"errors"
	"math"
	"testing"
)

// flatten writes pages as records: i2c, page, bank, offset, length, bytes.
func flatten(p Pages) []byte {
	var out []byte
	for _, k := range []Page{Lower, Upper(0, 0), Upper(1, 0), Upper(2, 0), Upper(3, 0), Upper(0x10, 0), Upper(0x11, 0),
		{I2C: AddrA2}, {I2C: AddrA2, Offset: 128}} {
		if b, ok := p[k]; ok {
			out = append(out, k.I2C, k.Page, k.Bank, k.Offset, byte(len(b)))
			out = append(out, b...)
		}
	}
	return out
}

// unflatten reads records written by flatten; whatever the bytes, it
// returns some pages (a truncated record becomes a short page).
func unflatten(data []byte) Pages {
	p := Pages{}
	for len(data) >= 5 {
		k := Page{I2C: data[0], Page: data[1], Bank: data[2], Offset: data[3] & 0x80}
		if k.Offset == 0 {
			k.Page, k.Bank = 0, 0
		}
		n := int(data[4])
		data = data[5:]
		n = min(n, len(data))
		p[k] = data[:n]
		data = data[n:]
	}
	return p
}

// fuzzDecode decodes arbitrary pages and checks what a decoder must
// guarantee: an *Error or a module whose numbers are finite and whose
// lane count is bounded.
func fuzzDecode(t *testing.T, pages Pages) {
	for _, n := range Next(pages) {
		if _, err := ParsePageName(n.Name()); err != nil {
			t.Fatalf("Next gave %v, whose name %q does not parse: %v", n, n.Name(), err)
		}
	}
	m, err := Decode(pages)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("error %v is not an *sff.Error", err)
		}
		return
	}
	if m.Spec == "" || len(m.Lanes) > 32 {
		t.Fatalf("module %+v", m)
	}
	for _, l := range m.Lanes {
		for _, v := range []*float64{l.RXPowerMW, l.TXPowerMW, l.TXBiasMA, l.RXPowerDBm, l.TXPowerDBm} {
			if v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0)) {
				t.Fatalf("lane %d has a non-finite value", l.Lane)
			}
		}
		if l.RXPowerMW != nil && *l.RXPowerMW < 0 {
			t.Fatalf("negative power")
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, p := range []Pages{qsfp28CWDM4(), sfp28(), qsfpDD(),
		cmis8(0x18, 0x02, []cmisApp{{0x0B, 0x0D, 4, 4, 0x11, 0x11}}, twoByFour, dark7)} {
		f.Add(flatten(p))
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzDecode(t, unflatten(data)) })
}

// The per-spec targets force the identifier so each decoder sees
// arbitrary pages of its own type.

func fuzzSpec(f *testing.F, id byte, seed Pages) {
	f.Add(flatten(seed))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := unflatten(data)
		if lo, ok := p[Lower]; ok && len(lo) > 0 {
			lo[0] = id
		}
		fuzzDecode(t, p)
	})
}

func FuzzSFF8472(f *testing.F) { fuzzSpec(f, 0x03, sfp28()) }
func FuzzSFF8636(f *testing.F) { fuzzSpec(f, 0x11, qsfp28CWDM4()) }
func FuzzCMIS(f *testing.F) {
	f.Add(flatten(cmis8(0x18, 0x02, []cmisApp{{0x11, 0x1C, 8, 4, 0x01, 0x01}, {0x0D, 0x14, 2, 1, 0x55, 0x0F}},
		[8]byte{0x20, 0x20, 0x24, 0x24, 0x28, 0x28, 0x2C, 0x2C}, lit8)))
	fuzzSpec(f, 0x18, qsfpDD())
}

func FuzzParsePageName(f *testing.F) {
	for _, s := range []string{"50-00-0-0", "50-11-3-128", "51-00-0-128", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePageName(s)
		if err != nil {
			return
		}
		if back, err := ParsePageName(p.Name()); err != nil || back != p {
			t.Fatalf("%q → %v → %q does not round-trip", s, p, p.Name())
		}
	})
}
