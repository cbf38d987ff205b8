package sff

import (
	"strings"
	"testing"
)

// TestSFF8472NoAlarmsNoThresholds: a module whose A0h byte 93 bit 7 says
// it implements no alarm and warning flags has no thresholds either (the
// bytes mean nothing; ethtool prints none), and says so.
func TestSFF8472NoAlarmsNoThresholds(t *testing.T) {
	p := sfp28()
	p[Lower][93] &^= 0x80
	m, err := Decode(p)
	if err != nil {
		t.Fatal(err)
	}
	if m.Thresholds != nil || len(m.Lanes[0].Flags) != 0 || len(m.Alarms) != 0 {
		t.Errorf("thresholds %+v, flags %q, alarms %q", m.Thresholds, m.Lanes[0].Flags, m.Alarms)
	}
	if m.TemperatureC == nil || m.Lanes[0].RXPowerMW == nil {
		t.Error("the monitors themselves are still read")
	}
	if !strings.Contains(strings.Join(m.Notes, " "), "byte 93 bit 7") {
		t.Errorf("notes %q", m.Notes)
	}
	m, _ = Decode(sfp28())
	if m.Thresholds == nil {
		t.Error("with the flags implemented, thresholds are read")
	}
}
