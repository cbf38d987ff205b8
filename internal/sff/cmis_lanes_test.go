package sff

import (
	"slices"
	"testing"
)

// cmisApp is one application descriptor: host and media interface
// codes, lane counts, and host and media lane assignment options.
type cmisApp struct {
	host, media            byte
	hostLanes, mediaLanes  int
	hostStarts, mediaStart byte
}

// cmis8 writes an eight-lane CMIS 5.0 module byte by byte: identifier
// id, media type mt, the applications, the active control set of page
// 11h (one byte per host lane, AppSel in bits 7-4 and DataPathID in bits
// 3-1; all zero for a module not configured) with every configured data
// path activated, and RX power per media lane (mW; 0 with RX LOS set).
func cmis8(id, mt byte, apps []cmisApp, control [8]byte, rx [8]float64) Pages {
	lo := newPage(0).set(0, id, 0x50, 0x00, 0x06).set(14, 0x23, 0x00).set(16, 0x81, 0x00).set(85, mt)
	p01 := newPage(128).set(142, 0x00).set(151, 0x10).set(159, 0x03, 0x07)
	for i, a := range apps {
		lo.set(86+4*i, a.host, a.media, byte(a.hostLanes<<4|a.mediaLanes), a.hostStarts)
		p01.set(176+i, a.mediaStart)
	}
	if len(apps) < 8 {
		lo.set(86+4*len(apps), 0xFF)
	}
	p00 := newPage(128).set(128, id).str(129, 16, "ACME OPTICS").str(148, 16, "QDD-2X100G-LR4").
		str(166, 16, "AC24000777").set(203, 0x07).set(212, 0x04).sum(128, 222)
	p11 := newPage(128)
	var los byte
	for i, mw := range rx {
		raw := uint16(mw * 10000)
		p11.set(186+2*i, byte(raw>>8), byte(raw))
		p11.set(154+2*i, 0x27, 0x10) // TX 1 mW
		p11.set(170+2*i, 0x4B, 0x00) // bias 38.4 mA
		if mw == 0 {
			los |= 1 << i
		}
		if control[i] != 0 {
			p11.b[i/2] |= 0x04 << (4 * (i % 2)) // activated
		}
	}
	p11.set(147, los)
	p11.set(206, control[:]...)
	return Pages{Lower: lo.b, Upper(0, 0): p00.b, Upper(1, 0): p01.b, Upper(2, 0): newPage(128).b,
		Upper(0x10, 0): newPage(128).b, Upper(0x11, 0): p11.b}
}

var (
	lit8      = [8]float64{0.81, 0.79, 0.84, 0.80, 0.77, 0.83, 0.78, 0.82}
	dark7     = [8]float64{0.81, 0.79, 0.84, 0.80, 0.77, 0.83, 0, 0.82}
	twoByFour = [8]byte{0x10, 0x10, 0x10, 0x10, 0x18, 0x18, 0x18, 0x18} // AppSel 1, DataPathID 0 and 4
)

// TestCMISEveryLane: an eight-lane module shows its eight media lanes,
// grouped into the data paths its active control set configures, each
// lane with the host lanes that feed it.
func TestCMISEveryLane(t *testing.T) {
	type path struct {
		host, media []int
	}
	for _, tt := range []struct {
		name       string
		id, mt     byte
		apps       []cmisApp
		control    [8]byte
		lanes      int
		media      string
		paths      []path
		configured bool
	}{
		{
			// QSFP-DD 2x100G-LR4: CAUI-4 into 100GBASE-LR4, twice.
			name: "2x100G-LR4", id: 0x18, mt: 0x02,
			apps:    []cmisApp{{0x0B, 0x0D, 4, 4, 0x11, 0x11}},
			control: twoByFour, lanes: 8, media: "100GBASE-LR4",
			paths: []path{{[]int{1, 2, 3, 4}, []int{1, 2, 3, 4}}, {[]int{5, 6, 7, 8}, []int{5, 6, 7, 8}}}, configured: true,
		},
		{
			// OSFP 2x400G-LR4: 400GAUI-4-S into 400GBASE-LR4-6, twice.
			name: "2x400G-LR4", id: 0x19, mt: 0x02,
			apps:    []cmisApp{{0x4F, 0x43, 4, 4, 0x11, 0x11}},
			control: twoByFour, lanes: 8, media: "400GBASE-LR4-6",
			paths: []path{{[]int{1, 2, 3, 4}, []int{1, 2, 3, 4}}, {[]int{5, 6, 7, 8}, []int{5, 6, 7, 8}}}, configured: true,
		},
		{
			// A 400G-DR4 broken out as 4x100G-DR: application 2, four data
			// paths of two host lanes and one media lane each.
			name: "4x100G-DR breakout", id: 0x18, mt: 0x02,
			apps:    []cmisApp{{0x11, 0x1C, 8, 4, 0x01, 0x01}, {0x0D, 0x14, 2, 1, 0x55, 0x0F}},
			control: [8]byte{0x20, 0x20, 0x24, 0x24, 0x28, 0x28, 0x2C, 0x2C}, lanes: 4, media: "400GBASE-DR4",
			paths: []path{{[]int{1, 2}, []int{1}}, {[]int{3, 4}, []int{2}}, {[]int{5, 6}, []int{3}}, {[]int{7, 8}, []int{4}}}, configured: true,
		},
		{
			// The same 2x100G-LR4 in low power: nothing configured, so the
			// default application's two instances, not marked configured.
			name: "2x100G-LR4 unconfigured", id: 0x18, mt: 0x02,
			apps:  []cmisApp{{0x0B, 0x0D, 4, 4, 0x11, 0x11}},
			lanes: 8, media: "100GBASE-LR4",
			paths: []path{{[]int{1, 2, 3, 4}, []int{1, 2, 3, 4}}, {[]int{5, 6, 7, 8}, []int{5, 6, 7, 8}}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Decode(cmis8(tt.id, tt.mt, tt.apps, tt.control, lit8))
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Lanes) != tt.lanes || m.Media != tt.media {
				t.Fatalf("%d lanes of %q, want %d of %q", len(m.Lanes), m.Media, tt.lanes, tt.media)
			}
			if len(m.DataPaths) != len(tt.paths) {
				t.Fatalf("data paths %+v, want %d", m.DataPaths, len(tt.paths))
			}
			for i, dp := range m.DataPaths {
				w := tt.paths[i]
				if dp.Number != i+1 || !slices.Equal(dp.HostLanes, w.host) || !slices.Equal(dp.MediaLanes, w.media) || dp.Configured != tt.configured {
					t.Errorf("data path %d: %+v, want host %v media %v configured %v", i+1, dp, w.host, w.media, tt.configured)
				}
				if tt.configured && dp.State != "activated" {
					t.Errorf("data path %d state %q", i+1, dp.State)
				}
				for _, ml := range w.media {
					l := m.Lanes[ml-1]
					if l.DataPath != i+1 || !slices.Equal(l.HostLanes, w.host) {
						t.Errorf("lane %d: data path %d host lanes %v, want %d %v", ml, l.DataPath, l.HostLanes, i+1, w.host)
					}
				}
			}
			for i, l := range m.Lanes {
				checkF(t, "rx", l.RXPowerMW, lit8[i])
			}
			if m.RXPowerType != "average" || m.MediaClass != MediaOptical {
				t.Errorf("rx power type %q, media %s", m.RXPowerType, m.MediaClass)
			}
		})
	}
}

// TestCMISLaneSevenDark: the dark lane of the second data path is seen,
// with no light and its RX LOS.
func TestCMISLaneSevenDark(t *testing.T) {
	m, err := Decode(cmis8(0x18, 0x02, []cmisApp{{0x0B, 0x0D, 4, 4, 0x11, 0x11}}, twoByFour, dark7))
	if err != nil {
		t.Fatal(err)
	}
	l := m.Lanes[6]
	if l.Lane != 7 || l.RXPowerMW == nil || *l.RXPowerMW != 0 || l.RXLOS == nil || !*l.RXLOS || l.DataPath != 2 {
		t.Errorf("lane 7: %+v", l)
	}
	for i, l := range m.Lanes {
		if i != 6 && (l.RXLOS == nil || *l.RXLOS) {
			t.Errorf("lane %d: RX LOS %v", i+1, l.RXLOS)
		}
	}
}

// TestCMISTXLOSFollowsHostLanes: a host lane that lost its input marks
// the media lanes of its data path, not the media lane of its number.
func TestCMISTXLOSFollowsHostLanes(t *testing.T) {
	p := cmis8(0x18, 0x02, []cmisApp{{0x11, 0x1C, 8, 4, 0x01, 0x01}, {0x0D, 0x14, 2, 1, 0x55, 0x0F}},
		[8]byte{0x20, 0x20, 0x24, 0x24, 0x28, 0x28, 0x2C, 0x2C}, lit8)
	p[Upper(0x11, 0)][136-128] = 0x20 // TX LOS on host lane 6: data path 3, media lane 3
	m, err := Decode(p)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range m.Lanes {
		checkB(t, "tx los", l.TXLOS, i == 2)
	}
}

// TestCMISApplications: the advertisement as decoded, descriptors 9-15
// from page 01h included.
func TestCMISApplications(t *testing.T) {
	p := cmis8(0x18, 0x02, []cmisApp{{0x11, 0x1C, 8, 4, 0x01, 0x01}, {0x0D, 0x14, 2, 1, 0x55, 0x0F}}, [8]byte{}, lit8)
	// Fill descriptors 3-8 with 100GAUI-2 → 100GBASE-DR so that a ninth
	// comes from page 01h byte 223: 400ZR over 400GAUI-8.
	lo := p[Lower]
	for i := 2; i < 8; i++ {
		copy(lo[86+4*i:], []byte{0x0D, 0x14, 0x21, 0x55})
	}
	copy(p[Upper(1, 0)][223-128:], []byte{0x11, 0x3E, 0x81, 0x01, 0xFF})
	m, err := Decode(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Applications) != 9 {
		t.Fatalf("%d applications, want 9", len(m.Applications))
	}
	a := m.Applications[8]
	if a.AppSel != 9 || a.Host != "400GAUI-8 C2M" || a.Media != "400ZR, DWDM, amplified" || a.HostLanes != 8 || a.MediaLanes != 1 {
		t.Errorf("application 9: %+v", a)
	}
	b := m.Applications[1]
	if !slices.Equal(b.HostStarts, []int{1, 3, 5, 7}) || !slices.Equal(b.MediaStarts, []int{1, 2, 3, 4}) {
		t.Errorf("application 2 starts: %+v", b)
	}
	if !slices.Contains(m.Compliance, "400ZR, DWDM, amplified") || m.Media != "400GBASE-DR4" {
		t.Errorf("compliance %v media %q", m.Compliance, m.Media)
	}
}
