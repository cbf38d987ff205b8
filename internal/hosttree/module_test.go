package hosttree

import (
	"math"
	"slices"
	"testing"

	"github.com/linerate/linerate/internal/sff"
)

func near(got *float64, want, tol float64) bool {
	return got != nil && math.Abs(*got-want) <= tol
}

// TestOpticRoundTrip: what Optic encodes, package sff decodes back to the
// same values, within one step of each encoding (0.1 µW, 2 µA, 1/256 °C,
// 100 µV; a step or two more where external calibration rounds twice).
func TestOpticRoundTrip(t *testing.T) {
	cwdm4 := finisarCWDM4("X", 0.646, 0.0692, 0, 0.759)
	cwdm4.Lanes[2].RXLOS = true
	tests := []struct {
		name   string
		o      Optic
		pages  sff.Pages
		spec   string
		lanes  int
		tolPow float64
	}{
		{"QSFP28", cwdm4, cwdm4.QSFP28(), sff.SpecSFF8636, 4, 0.0001},
		{"SFP28 internal", acmeSFP28("A", false, 0.55), acmeSFP28("A", false, 0.55).SFP28(), sff.SpecSFF8472, 1, 0.0001},
		{"SFP28 external", acmeSFP28("B", true, 0.49), acmeSFP28("B", true, 0.49).SFP28(), sff.SpecSFF8472, 1, 0.0003},
		{"QSFP-DD", qsfpdd400("C", 72.2), qsfpdd400("C", 72.2).CMIS(0x18), sff.SpecCMIS, 4, 0.0001},
	}
	for _, tt := range tests {
		m, err := sff.Decode(tt.pages)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if m.Spec != tt.spec || len(m.Lanes) != tt.lanes || len(m.Notes) != 0 {
			t.Errorf("%s: spec %s, %d lanes, notes %q", tt.name, m.Spec, len(m.Lanes), m.Notes)
		}
		if !near(m.TemperatureC, tt.o.TempC, 0.01) || !near(m.VoltageV, tt.o.VccV, 0.0002) {
			t.Errorf("%s: %v °C %v V, want %v %v", tt.name, *m.TemperatureC, *m.VoltageV, tt.o.TempC, tt.o.VccV)
		}
		for i, l := range m.Lanes {
			want := tt.o.Lanes[i]
			if !near(l.RXPowerMW, want.RXmW, tt.tolPow) || !near(l.TXPowerMW, want.TXmW, tt.tolPow) || !near(l.TXBiasMA, want.BiasMA, 0.01) {
				t.Errorf("%s lane %d: rx %v tx %v bias %v, want %+v", tt.name, i+1, *l.RXPowerMW, *l.TXPowerMW, *l.TXBiasMA, want)
			}
		}
		th := m.Thresholds
		if th == nil || !near(th.RXPowerLowWarnMW, tt.o.Thresholds.RX.LowWarn, tt.tolPow) || !near(th.TemperatureHighAlarmC, tt.o.Thresholds.Temp.HighAlarm, 0.01) ||
			!near(th.TXBiasHighAlarmMA, tt.o.Thresholds.Bias.HighAlarm, 0.01) {
			t.Errorf("%s: thresholds %+v", tt.name, th)
		}
	}
	// Flags follow the values: lane 2 (0.0692 mW) under the −10.5 dBm warning,
	// lane 3 dark with LOS and under the alarm too.
	m, _ := sff.Decode(cwdm4.QSFP28())
	if !slices.Equal(m.Lanes[1].Flags, []string{"rx_power_low_warn"}) ||
		!slices.Equal(m.Lanes[2].Flags, []string{"rx_power_low_alarm", "rx_power_low_warn"}) || !*m.Lanes[2].RXLOS {
		t.Errorf("flags: %q %q", m.Lanes[1].Flags, m.Lanes[2].Flags)
	}
	// The ×2 bias scale of the QSFP-DD: 61 mA is stored as 30.5 mA.
	p11 := qsfpdd400("C", 40).CMIS(0x18)[sff.Upper(0x11, 0)]
	if raw := int(p11[170-128])<<8 | int(p11[171-128]); raw != 15250 {
		t.Errorf("lane 1 bias raw %d, want 15250 (61 mA / 2 / 2 µA)", raw)
	}
}
