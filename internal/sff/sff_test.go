package sff

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// pg is a 128-byte page under construction; base is 0 for a lower half
// and 128 for an upper page, so offsets below are the specs' byte numbers.
type pg struct {
	b    []byte
	base int
}

func newPage(base int) *pg { return &pg{b: make([]byte, PageSize), base: base} }

// set writes bytes starting at spec byte n.
func (p *pg) set(n int, v ...byte) *pg { copy(p.b[n-p.base:], v); return p }

// str writes s padded with spaces to width w at byte n.
func (p *pg) str(n, w int, s string) *pg {
	f := []byte(s + strings.Repeat(" ", w-len(s)))
	return p.set(n, f...)
}

// sum writes at byte at the low 8 bits of the sum of bytes [from, at).
func (p *pg) sum(from, at int) *pg {
	var s byte
	for n := from; n < at; n++ {
		s += p.b[n-p.base]
	}
	return p.set(at, s)
}

func near(got *float64, want float64) bool {
	return got != nil && math.Abs(*got-want) < 1e-9
}

func checkF(t *testing.T, what string, got *float64, want float64) {
	t.Helper()
	if !near(got, want) {
		if got == nil {
			t.Errorf("%s = nil, want %v", what, want)
		} else {
			t.Errorf("%s = %v, want %v", what, *got, want)
		}
	}
}

func checkB(t *testing.T, what string, got *bool, want bool) {
	t.Helper()
	if got == nil || *got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// qsfp28CWDM4 is a QSFP28 100G CWDM4 module written byte by byte from
// SFF-8636 rev 2.10a: lane 3 dark (RX LOS), lane 4 weak.
func qsfp28CWDM4() Pages {
	lo := newPage(0).
		set(0, 0x11, 0x08, 0x00).                                // QSFP28, SFF-8636 rev 2.8-2.10, paged memory
		set(3, 0x04).                                            // LOS: bit 2 = RX lane 3
		set(9, 0x00, 0x01).                                      // RX power flags: lane 4 (low nibble of byte 10, bit 0) low warning
		set(22, 0x23, 0x40).                                     // temperature
		set(26, 0x80, 0xE8).                                     // Vcc
		set(34, 0x18, 0x9C, 0x1F, 0x40, 0x00, 0x00, 0x03, 0xE8). // RX power lanes 1-4
		set(42, 0x4B, 0x00, 0x4B, 0x00, 0x4B, 0x00, 0x4B, 0x00). // TX bias lanes 1-4
		set(50, 0x27, 0x10, 0x27, 0x10, 0x27, 0x10, 0x27, 0x10)  // TX power lanes 1-4
	up := newPage(128).
		set(128, 0x11).
		set(130, 0x07). // LC
		set(131, 0x80). // extended compliance in byte 192
		set(147, 0x40). // 1310 nm DFB: optical
		str(148, 16, "FINISAR CORP.").
		set(165, 0x00, 0x90, 0x65).
		str(168, 16, "FTLC1157RGPL6FB1").
		str(184, 2, "A0").
		set(186, 0x66, 0x6C). // wavelength
		set(192, 0x06).       // 100G CWDM4
		str(196, 16, "X7TA03K").
		str(212, 8, "190312").
		set(220, 0x0C). // RX power is average, TX power measured
		sum(128, 191)
	p3 := newPage(128).
		set(128, 0x4B, 0x00, 0xFB, 0x00, 0x46, 0x00, 0x00, 0x00). // temperature HA, LA, HW, LW
		set(144, 0x8D, 0xCC, 0x74, 0x04, 0x87, 0x5A, 0x7A, 0x76). // Vcc
		set(176, 0x4E, 0x20, 0x01, 0xF4, 0x3D, 0xE9, 0x04, 0xEB). // RX power
		set(184, 0x9C, 0x40, 0x13, 0x88, 0x92, 0x7C, 0x1D, 0x4C). // TX bias
		set(192, 0x7B, 0x87, 0x02, 0x77, 0x62, 0x1F, 0x03, 0xE8)  // TX power
	return Pages{Lower: lo.b, Upper(0, 0): up.b, Upper(3, 0): p3.b}
}

func TestDecodeSFF8636(t *testing.T) {
	m, err := Decode(qsfp28CWDM4())
	if err != nil {
		t.Fatal(err)
	}
	if m.Spec != SpecSFF8636 || m.Identifier != "QSFP28" || m.Media != "100G CWDM4" || m.SpeedMbps != 100000 ||
		m.Connector != "LC" || m.VendorName != "FINISAR CORP." || m.VendorPN != "FTLC1157RGPL6FB1" ||
		m.VendorSN != "X7TA03K" || m.Date != "2019-03-12" || m.VendorOUI != "00:90:65" || m.RXPowerType != "average" {
		t.Errorf("identity: %+v", m)
	}
	if len(m.Notes) != 0 {
		t.Errorf("notes: %q (the checksum was computed: none expected)", m.Notes)
	}
	// 0x666C = 26220; × 0.05 nm = 1311 nm.
	checkF(t, "wavelength", m.WavelengthNM, 1311)
	// 0x2340 = 9024; 9024 / 256 = 35.25 °C.
	checkF(t, "temperature", m.TemperatureC, 35.25)
	// 0x80E8 = 33000; × 100 µV = 3.3 V.
	checkF(t, "Vcc", m.VoltageV, 3.3)
	if len(m.Lanes) != 4 {
		t.Fatalf("%d lanes", len(m.Lanes))
	}
	// RX power, 0.1 µW steps:
	//   lane 1: 0x189C = 6300 → 0.63 mW;  10·log10(0.63) = −2.0066 → −2.01 dBm
	//   lane 2: 0x1F40 = 8000 → 0.8 mW;   10·log10(0.8)  = −0.9691 → −0.97 dBm
	//   lane 3: 0x0000 → 0 mW: no light, no dBm
	//   lane 4: 0x03E8 = 1000 → 0.1 mW;   10·log10(0.1)  = −10 dBm
	wantMW := []float64{0.63, 0.8, 0, 0.1}
	wantDBm := []float64{-2.01, -0.97, 0, -10}
	for i, l := range m.Lanes {
		checkF(t, "rx mW", l.RXPowerMW, wantMW[i])
		if i == 2 {
			if l.RXPowerDBm != nil {
				t.Errorf("lane 3 dBm = %v, want nil (no light)", *l.RXPowerDBm)
			}
		} else {
			checkF(t, "rx dBm", l.RXPowerDBm, wantDBm[i])
		}
		// Bias 0x4B00 = 19200 × 2 µA = 38400 µA = 38.4 mA.
		checkF(t, "bias", l.TXBiasMA, 38.4)
		// TX power 0x2710 = 10000 × 0.1 µW = 1 mW = 0 dBm.
		checkF(t, "tx mW", l.TXPowerMW, 1)
		checkF(t, "tx dBm", l.TXPowerDBm, 0)
		checkB(t, "rx los", l.RXLOS, i == 2)
		checkB(t, "tx fault", l.TXFault, false)
	}
	if !slices.Equal(m.Lanes[3].Flags, []string{"rx_power_low_warn"}) || len(m.Lanes[0].Flags) != 0 {
		t.Errorf("flags: lane 1 %q, lane 4 %q", m.Lanes[0].Flags, m.Lanes[3].Flags)
	}
	th := m.Thresholds
	if th == nil {
		t.Fatal("no thresholds")
	}
	// 0x4B00 = 19200 / 256 = 75 °C; 0xFB00 = −1280 / 256 = −5 °C; 0x4600 = 17920 / 256 = 70 °C.
	checkF(t, "temp HA", th.TemperatureHighAlarmC, 75)
	checkF(t, "temp LA", th.TemperatureLowAlarmC, -5)
	checkF(t, "temp HW", th.TemperatureHighWarnC, 70)
	checkF(t, "temp LW", th.TemperatureLowWarnC, 0)
	// 0x8DCC = 36300 → 3.63 V; 0x7404 = 29700 → 2.97 V.
	checkF(t, "Vcc HA", th.VoltageHighAlarmV, 3.63)
	checkF(t, "Vcc LA", th.VoltageLowAlarmV, 2.97)
	// RX power: 0x01F4 = 500 → 0.05 mW (−13.01 dBm); 0x04EB = 1259 → 0.1259 mW (−9.00 dBm).
	checkF(t, "rx LA", th.RXPowerLowAlarmMW, 0.05)
	checkF(t, "rx LW", th.RXPowerLowWarnMW, 0.1259)
	checkF(t, "rx HA", th.RXPowerHighAlarmMW, 2)
	// Bias: 0x9C40 = 40000 × 2 µA = 80 mA; 0x1388 = 5000 → 10 mA.
	checkF(t, "bias HA", th.TXBiasHighAlarmMA, 80)
	checkF(t, "bias LA", th.TXBiasLowAlarmMA, 10)
	// TX power: 0x03E8 = 1000 → 0.1 mW.
	checkF(t, "tx LW", th.TXPowerLowWarnMW, 0.1)
	if d, ok := DBm(*th.RXPowerLowWarnMW); !ok || d != -9 {
		t.Errorf("low warning in dBm = %v", d)
	}
}

func TestSFF8636FlatAndPassive(t *testing.T) {
	// A passive DAC: flat memory, temperature word 0 (no monitors).
	lo := newPage(0).set(0, 0x11, 0x08, 0x04)
	up := newPage(128).set(128, 0x11).set(130, 0x23).set(131, 0x80).set(147, 0xA0).set(192, 0x0B).
		str(148, 16, "Mellanox").str(168, 16, "MCP1600-C003").sum(128, 191)
	pages := Pages{Lower: lo.b, Upper(0, 0): up.b}
	if next := Next(pages); len(next) != 0 {
		t.Errorf("flat memory: Next = %v, want nothing (no page 03h)", next)
	}
	m, err := Decode(pages)
	if err != nil {
		t.Fatal(err)
	}
	if m.Monitors || m.TemperatureC != nil || m.Lanes[0].RXPowerMW != nil || m.WavelengthNM != nil {
		t.Errorf("a passive cable reports no monitors: %+v %+v", m, m.Lanes[0])
	}
	if m.Media != "100GBASE-CR4" || m.Connector != "No separable connector" || m.MediaClass != MediaCopper || m.Cable != CablePassive || m.Thresholds != nil {
		t.Errorf("media %q connector %q thresholds %v", m.Media, m.Connector, m.Thresholds)
	}
}

// sfp28 is an SFP28 25GBASE-SR module with internally calibrated
// diagnostics (SFF-8472 rev 12.4).
func sfp28() Pages {
	a0 := newPage(0).
		set(0, 0x03, 0x04, 0x07). // SFP, ext id, LC
		set(12, 0xFF).            // nominal rate: see byte 66 (not decoded)
		str(20, 16, "FS").
		set(36, 0x02). // 25GBASE-SR
		set(37, 0x64, 0x9D, 0x99).
		str(40, 16, "SFP28-25GSR-85").
		str(56, 4, "A").
		set(60, 0x03, 0x52). // 850 nm
		sum(0, 63).
		str(68, 16, "F2107050001").
		str(84, 8, "210705").
		set(92, 0x68). // DDM implemented, internally calibrated, RX power average
		set(93, 0x80)  // alarm and warning flags implemented
	a2 := newPage(0).
		set(0, 0x5A, 0x00, 0xEC, 0x00, 0x55, 0x00, 0xF1, 0x00).  // temperature HA 90, LA −20, HW 85, LW −15 °C
		set(8, 0x8D, 0xCC, 0x74, 0x04, 0x87, 0x5A, 0x7A, 0x76).  // Vcc 3.63, 2.97, 3.465, 3.135 V
		set(16, 0x3A, 0x98, 0x03, 0xE8, 0x32, 0xC8, 0x07, 0xD0). // bias 30, 2, 26, 4 mA
		set(24, 0x4E, 0x20, 0x02, 0x77, 0x3D, 0xE9, 0x04, 0xEB). // TX power 2, 0.0631, 1.5849, 0.1259 mW
		set(32, 0x4E, 0x20, 0x00, 0x64, 0x3D, 0xE9, 0x00, 0xC8). // RX power 2, 0.01, 1.5849, 0.02 mW
		set(96, 0x1E, 0x80).                                     // temperature
		set(98, 0x80, 0x98).                                     // Vcc
		set(100, 0x1B, 0x58).                                    // bias
		set(102, 0x1D, 0x4C).                                    // TX power
		set(104, 0x15, 0x7C).                                    // RX power
		set(110, 0x00)
	return Pages{Lower: a0.b, {I2C: AddrA2}: a2.b, {I2C: AddrA2, Offset: 128}: make([]byte, 128), {I2C: AddrA0, Offset: 128}: make([]byte, 128)}
}

func TestDecodeSFF8472Internal(t *testing.T) {
	m, err := Decode(sfp28())
	if err != nil {
		t.Fatal(err)
	}
	if m.Spec != SpecSFF8472 || m.Identifier != "SFP/SFP+/SFP28" || m.Media != "25GBASE-SR" || m.SpeedMbps != 25000 ||
		m.Calibration != "internal" || m.VendorPN != "SFP28-25GSR-85" || m.Date != "2021-07-05" || !m.Monitors {
		t.Errorf("identity: %+v", m)
	}
	checkF(t, "wavelength", m.WavelengthNM, 850)
	// 0x1E80 = 7808 / 256 = 30.5 °C.
	checkF(t, "temperature", m.TemperatureC, 30.5)
	// 0x8098 = 32920 × 100 µV = 3.292 V.
	checkF(t, "Vcc", m.VoltageV, 3.292)
	l := m.Lanes[0]
	// 0x1B58 = 7000 × 2 µA = 14 mA.
	checkF(t, "bias", l.TXBiasMA, 14)
	// TX 0x1D4C = 7500 × 0.1 µW = 0.75 mW; 10·log10(0.75) = −1.2494 → −1.25 dBm.
	checkF(t, "tx mW", l.TXPowerMW, 0.75)
	checkF(t, "tx dBm", l.TXPowerDBm, -1.25)
	// RX 0x157C = 5500 → 0.55 mW; 10·log10(0.55) = −2.5964 → −2.60 dBm.
	checkF(t, "rx mW", l.RXPowerMW, 0.55)
	checkF(t, "rx dBm", l.RXPowerDBm, -2.6)
	checkB(t, "rx los", l.RXLOS, false)
	th := m.Thresholds
	// 0xEC00 = −5120 / 256 = −20 °C; 0x3A98 = 15000 × 2 µA = 30 mA; 0x0064 = 100 → 0.01 mW.
	checkF(t, "temp LA", th.TemperatureLowAlarmC, -20)
	checkF(t, "bias HA", th.TXBiasHighAlarmMA, 30)
	checkF(t, "rx LA", th.RXPowerLowAlarmMW, 0.01)
	checkF(t, "rx LW", th.RXPowerLowWarnMW, 0.02)
	checkF(t, "Vcc LW", th.VoltageLowWarnV, 3.135)
}

func TestDecodeSFF8472External(t *testing.T) {
	pages := sfp28()
	a0 := &pg{b: pages[Lower]}
	a0.set(92, 0x58) // DDM implemented, externally calibrated, average
	a2 := &pg{b: pages[Page{I2C: AddrA2}]}
	a2.set(56, make([]byte, 12)...). // Rx_PWR(4), (3), (2) = 0
						set(68, 0x3F, 0x00, 0x00, 0x00). // Rx_PWR(1) = 0.5 (IEEE 754)
						set(72, 0x41, 0x20, 0x00, 0x00). // Rx_PWR(0) = 10.0
						set(76, 0x02, 0x00, 0x00, 0x64). // Tx_I slope 2.0, offset +100
						set(80, 0x01, 0x80, 0xFF, 0x38). // Tx_PWR slope 1.5, offset −200
						set(84, 0x01, 0x00, 0xFE, 0x00). // T slope 1.0, offset −512 (−2 °C)
						set(88, 0x01, 0x00, 0x00, 0x64). // V slope 1.0, offset +100 (+10 mV)
						set(96, 0x20, 0x00).             // temperature raw 8192
						set(98, 0x80, 0x00).             // Vcc raw 32768
						set(100, 0x0F, 0xA0).            // bias raw 4000
						set(102, 0x13, 0x88).            // TX power raw 5000
						set(104, 0x27, 0x10).            // RX power raw 10000
						set(34, 0x00, 0x64)              // RX power low alarm raw 100
	m, err := Decode(pages)
	if err != nil {
		t.Fatal(err)
	}
	if m.Calibration != "external" {
		t.Fatalf("calibration %q", m.Calibration)
	}
	// Temperature: 1.0 × 8192 − 512 = 7680; / 256 = 30 °C.
	checkF(t, "temperature", m.TemperatureC, 30)
	// Vcc: 1.0 × 32768 + 100 = 32868 × 100 µV = 3.2868 V.
	checkF(t, "Vcc", m.VoltageV, 3.2868)
	l := m.Lanes[0]
	// Bias: 2.0 × 4000 + 100 = 8100 × 2 µA = 16.2 mA.
	checkF(t, "bias", l.TXBiasMA, 16.2)
	// TX power: 1.5 × 5000 − 200 = 7300 × 0.1 µW = 0.73 mW; 10·log10(0.73) = −1.3668 → −1.37 dBm.
	checkF(t, "tx mW", l.TXPowerMW, 0.73)
	checkF(t, "tx dBm", l.TXPowerDBm, -1.37)
	// RX power: 0.5 × 10000 + 10 = 5010 × 0.1 µW = 0.501 mW; 10·log10(0.501) = −3.0016 → −3.00 dBm.
	checkF(t, "rx mW", l.RXPowerMW, 0.501)
	checkF(t, "rx dBm", l.RXPowerDBm, -3)
	// Thresholds are raw too, as ethtool reads them: 0.5 × 100 + 10 = 60 → 0.006 mW.
	checkF(t, "rx LA", m.Thresholds.RXPowerLowAlarmMW, 0.006)
}

// qsfpDD is a QSFP-DD 400GBASE-DR4 module (CMIS 5.0) with a ×2 TX bias
// scale, lane 2 dark with RX LOS set.
func qsfpDD() Pages {
	lo := newPage(0).
		set(0, 0x18, 0x50, 0x00, 0x06). // QSFP-DD, CMIS 5.0, paged, ModuleReady (011b in bits 3-1)
		set(14, 0x2A, 0x00).            // temperature
		set(16, 0x82, 0x13).            // Vcc
		set(85, 0x02, 0x11, 0x1C, 0x44) // SMF; app 1: 400GAUI-4 host, 400GBASE-DR4 media, 4 host / 4 media lanes
	p00 := newPage(128).set(128, 0x18).
		str(129, 16, "ACME OPTICS").set(145, 0x00, 0x11, 0x22).
		str(148, 16, "QDD-400G-DR4").str(164, 2, "01").str(166, 16, "AC2201000123").str(182, 8, "220115").
		set(203, 0x0C).sum(128, 222)
	p01 := newPage(128).
		set(138, 0x66, 0x6C). // 1311 nm
		set(142, 0x00).       // one bank
		set(159, 0x03).       // temperature and Vcc monitored
		set(160, 0x0F)        // bias, TX and RX power monitored; bits 4-3 = 01b: bias ×2
	p02 := newPage(128).
		set(128, 0x4B, 0x00, 0xFB, 0x00, 0x46, 0x00, 0x00, 0x00).
		set(184, 0x4E, 0x20).                                    // bias high alarm raw 20000
		set(192, 0x4E, 0x20, 0x01, 0xF4, 0x3D, 0xE9, 0x04, 0xEB) // RX power HA, LA, HW, LW
	p10 := newPage(128)
	p11 := newPage(128).
		set(147, 0x02).                                           // RX LOS: lane 2
		set(154, 0x1F, 0x40, 0x1F, 0x40, 0x1F, 0x40, 0x1F, 0x40). // TX power lanes 1-4
		set(170, 0x0C, 0xC6, 0x0C, 0xC6, 0x0C, 0xC6, 0x0C, 0xC6). // TX bias lanes 1-4
		set(186, 0x17, 0x70, 0x00, 0x00, 0x0B, 0xB8, 0x13, 0x88)  // RX power lanes 1-4
	return Pages{Lower: lo.b, Upper(0, 0): p00.b, Upper(1, 0): p01.b, Upper(2, 0): p02.b,
		Upper(0x10, 0): p10.b, Upper(0x11, 0): p11.b}
}

func TestDecodeCMIS(t *testing.T) {
	m, err := Decode(qsfpDD())
	if err != nil {
		t.Fatal(err)
	}
	if m.Spec != SpecCMIS || m.Identifier != "QSFP-DD" || m.Revision != "CMIS 5.0" || m.State != "ready" ||
		m.Media != "400GBASE-DR4" || m.SpeedMbps != 400000 || m.Connector != "MPO 1x12" ||
		m.VendorName != "ACME OPTICS" || m.VendorSN != "AC2201000123" || m.Date != "2022-01-15" || len(m.Notes) != 0 {
		t.Errorf("identity: %+v", m)
	}
	// 0x2A00 = 10752 / 256 = 42 °C; 0x8213 = 33299 → 3.3299 V.
	checkF(t, "temperature", m.TemperatureC, 42)
	checkF(t, "Vcc", m.VoltageV, 3.3299)
	checkF(t, "wavelength", m.WavelengthNM, 1311)
	if len(m.Lanes) != 4 {
		t.Fatalf("%d lanes, want 4 (the application descriptor's media lanes)", len(m.Lanes))
	}
	// TX bias: 0x0CC6 = 3270 × 2 µA = 6.54 mA, × 2 (page 01h byte 160 bits 4-3 = 01b) = 13.08 mA.
	// (ethtool's right shift would give 3.27 mA; CMIS 5.2 says multiply.)
	// RX power: 0x1770 = 6000 → 0.6 mW, 10·log10(0.6) = −2.2185 → −2.22 dBm;
	//           lane 2 0 → no light; 0x0BB8 = 3000 → 0.3 mW, −5.2288 → −5.23 dBm;
	//           0x1388 = 5000 → 0.5 mW, −3.0103 → −3.01 dBm.
	// TX power: 0x1F40 = 8000 → 0.8 mW, −0.97 dBm.
	rx := []float64{0.6, 0, 0.3, 0.5}
	rxd := []float64{-2.22, 0, -5.23, -3.01}
	for i, l := range m.Lanes {
		checkF(t, "bias", l.TXBiasMA, 13.08)
		checkF(t, "tx dBm", l.TXPowerDBm, -0.97)
		checkF(t, "rx mW", l.RXPowerMW, rx[i])
		if i != 1 {
			checkF(t, "rx dBm", l.RXPowerDBm, rxd[i])
		} else if l.RXPowerDBm != nil {
			t.Errorf("lane 2 has a dBm value for no light")
		}
		checkB(t, "rx los", l.RXLOS, i == 1)
		checkB(t, "tx disabled", l.TXDisabled, false)
	}
	// Bias threshold scales too: 0x4E20 = 20000 × 2 µA × 2 = 80 mA.
	checkF(t, "bias HA", m.Thresholds.TXBiasHighAlarmMA, 80)
	checkF(t, "rx LW", m.Thresholds.RXPowerLowWarnMW, 0.1259)
}

func TestNextOrder(t *testing.T) {
	// SFF-8636: lower, then 00h, then 03h (paged).
	q := qsfp28CWDM4()
	have := Pages{}
	var order []Page
	for range 5 {
		next := Next(have)
		if len(next) == 0 {
			break
		}
		for _, p := range next {
			order = append(order, p)
			have[p] = q[p]
		}
	}
	want := []Page{Lower, Upper(0, 0), Upper(3, 0)}
	if !slices.Equal(order, want) {
		t.Errorf("SFF-8636 order %v, want %v", order, want)
	}
	// CMIS with two banks: 10h and 11h of both.
	c := qsfpDD()
	c[Upper(1, 0)][142-128] = 0x01
	have = Pages{Lower: c[Lower]}
	got := Next(have)
	if !slices.Equal(got, []Page{Upper(0, 0), Upper(1, 0), Upper(2, 0)}) {
		t.Errorf("CMIS first round %v", got)
	}
	have[Upper(0, 0)], have[Upper(1, 0)], have[Upper(2, 0)] = c[Upper(0, 0)], c[Upper(1, 0)], c[Upper(2, 0)]
	got = Next(have)
	want = []Page{Upper(0x10, 0), Upper(0x11, 0), Upper(0x10, 1), Upper(0x11, 1)}
	if !slices.Equal(got, want) {
		t.Errorf("CMIS banks %v, want %v", got, want)
	}
	// SFF-8472: A2h only with diagnostics implemented.
	s := sfp28()
	got = Next(Pages{Lower: s[Lower]})
	want = []Page{{I2C: AddrA0, Offset: 128}, {I2C: AddrA2}, {I2C: AddrA2, Offset: 128}}
	if !slices.Equal(got, want) {
		t.Errorf("SFF-8472 %v, want %v", got, want)
	}
	s[Lower][92] = 0
	if got := Next(Pages{Lower: s[Lower]}); len(got) != 1 {
		t.Errorf("SFF-8472 without diagnostics: %v", got)
	}
}

func TestDecodeErrors(t *testing.T) {
	ones := make([]byte, 128)
	for i := range ones {
		ones[i] = 0xff
	}
	short := qsfp28CWDM4()
	short[Upper(3, 0)] = short[Upper(3, 0)][:48]
	tests := []struct {
		name  string
		pages Pages
		want  string
		byte  int
	}{
		{"no lower page", Pages{}, "lower page was not read", 0},
		{"short lower page", Pages{Lower: qsfp28CWDM4()[Lower][:40]}, "40 bytes", 40},
		{"all ones", Pages{Lower: ones}, "did not answer", 0},
		{"unknown identifier", Pages{Lower: newPage(0).set(0, 0x06, 1).b}, "0x06 (XFP)", 0},
		{"short page 03h", short, "page 03h, byte 176", 176},
	}
	for _, tt := range tests {
		_, err := Decode(tt.pages)
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(err.Error(), tt.want) || e.Byte != tt.byte {
			t.Errorf("%s: %v (byte %v), want an *Error at byte %d saying %q", tt.name, err, e, tt.byte, tt.want)
		}
	}
}

func TestPageName(t *testing.T) {
	for _, p := range []Page{Lower, Upper(0, 0), Upper(3, 0), Upper(0x11, 2), {I2C: AddrA2}, {I2C: AddrA2, Offset: 128}} {
		back, err := ParsePageName(p.Name())
		if err != nil || back != p {
			t.Errorf("%v → %q → %v, %v", p, p.Name(), back, err)
		}
	}
	if Upper(3, 0).Name() != "50-03-0-128" || (Page{I2C: AddrA2}).Name() != "51-00-0-0" || Upper(0x11, 1).Name() != "50-11-1-128" {
		t.Errorf("names: %s %s", Upper(3, 0).Name(), Upper(0x11, 1).Name())
	}
	for _, bad := range []string{"", "50-3-0-128", "50-00-0-64", "zz-00-0-0", "50-01-0-0", "50-00-0"} {
		if _, err := ParsePageName(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestDBm(t *testing.T) {
	for _, tt := range []struct{ mw, dbm float64 }{{1, 0}, {0.5, -3.01}, {2, 3.01}, {0.001, -30}, {0.0001, -40}} {
		if d, ok := DBm(tt.mw); !ok || d != tt.dbm {
			t.Errorf("DBm(%v) = %v, %v; want %v", tt.mw, d, ok, tt.dbm)
		}
	}
	if _, ok := DBm(0); ok {
		t.Error("0 mW has a dBm value")
	}
}

func TestSpeedOf(t *testing.T) {
	for name, want := range map[string]int{"100G CWDM4": 100000, "25GBASE-SR": 25000, "1000BASE-SX": 1000,
		"4x10GBASE-SR": 40000, "2.5GBASE-T": 2500, "400GBASE-DR4": 400000, "passive copper cable": 0} {
		if got := speedOf(name); got != want {
			t.Errorf("speedOf(%q) = %d, want %d", name, got, want)
		}
	}
}
