package doctor

import (
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/sff"
)

// lane builds a module lane with RX power mw (nil when mw < 0) and RX LOS.
func lane(n int, mw float64, los *bool) sff.Lane {
	l := sff.Lane{Lane: n, RXLOS: los}
	if mw >= 0 {
		l.RXPowerMW = fp(mw)
	}
	return l
}

// TestJudgeLaneEdges pins a lane's verdict at its thresholds: dark at
// (not only below) 1 µW or on RX LOS; low strictly below the warning;
// alarmed strictly below the alarm; the default −10 dBm where the module
// gives a warning of zero.
func TestJudgeLaneEdges(t *testing.T) {
	warn, alarm := 0.2, 0.1
	mod := &inventory.Transceiver{Readable: true, Module: &sff.Module{Thresholds: &sff.Thresholds{RXPowerLowWarnMW: &warn, RXPowerLowAlarmMW: &alarm}}}
	tests := []struct {
		l    sff.Lane
		want laneState
	}{
		{lane(1, darkMW, nil), laneState{dark: true}},
		{lane(1, 0.0011, nil), laneState{low: true, lowAlarm: true}},
		{lane(1, 0.5, bp(true)), laneState{dark: true}},
		{lane(1, -1, bp(true)), laneState{dark: true}},
		{lane(1, 0.5, bp(false)), laneState{}},
		{lane(1, 0.2, nil), laneState{}},
		{lane(1, 0.1999, nil), laneState{low: true}},
		{lane(1, 0.1, nil), laneState{low: true}},
		{lane(1, 0.0999, nil), laneState{low: true, lowAlarm: true}},
		{sff.Lane{Lane: 1, TXFault: bp(true)}, laneState{txFault: true}},
		{sff.Lane{Lane: 1, TXLOS: bp(true)}, laneState{txFault: true}},
		{sff.Lane{Lane: 1, TXFault: bp(false), TXLOS: bp(false)}, laneState{}},
	}
	for _, tt := range tests {
		if got := judgeLane(mod, tt.l); got != tt.want {
			t.Errorf("lane %+v: %+v; want %+v", tt.l, got, tt.want)
		}
	}
	zero := 0.0
	mod.Thresholds.RXPowerLowWarnMW = &zero
	if w, a := rxLowThresholds(mod); w != mwOf(defaultLowDBm) || a != 0 {
		t.Errorf("a warning of 0: %v, %v; want the −10 dBm default", w, a)
	}
	mod.Thresholds.RXPowerLowWarnMW = &warn
	mod.Thresholds.RXPowerLowAlarmMW = nil
	if w, a := rxLowThresholds(mod); w != 0.2 || a != 0 {
		t.Errorf("no alarm threshold: %v, %v", w, a)
	}
}

// optInv returns a host whose module reports lanes.
func optInv(th *sff.Thresholds, lanes ...sff.Lane) *inventory.Inventory {
	inv := healthy()
	inv.NICs[0].Transceiver = &inventory.Transceiver{Readable: true, Module: &sff.Module{
		Identifier: "QSFP28", Media: "100G CWDM4", Monitors: true, Thresholds: th, Lanes: lanes}}
	return inv
}

// TestLaneDarkEdges: a lane reporting only RX LOS counts; a port that is
// up with every lane dark says so (not "while … do").
func TestLaneDarkEdges(t *testing.T) {
	f := find(run(t, optInv(nil, lane(1, -1, bp(true)), lane(2, 0.5, nil)), Options{}), "transceiver.lane_dark")
	if len(f) != 1 || f[0].Summary != "lane 1 of the QSFP28 100G CWDM4 module in enp1s0f0np0 receives no light while 2 do: the link cannot run on the lanes left" {
		t.Errorf("LOS-only lane: %+v", f)
	}
	f = find(run(t, optInv(nil, lane(1, 0, nil), lane(2, 0.5, nil)), Options{}), "transceiver.lane_dark")
	if len(f) != 1 || !strings.HasPrefix(f[0].Summary, "lane 1 of the QSFP28 100G CWDM4 module in enp1s0f0np0 receives no light while 2 do") {
		t.Errorf("power-only lanes: %+v", f)
	}
	f = find(run(t, optInv(nil, lane(1, 0, nil), lane(2, 0, nil)), Options{}), "transceiver.lane_dark")
	if len(f) != 1 || f[0].Summary != "every lane of the QSFP28 100G CWDM4 module in enp1s0f0np0 is dark (no light received): nothing reaches it from the peer" {
		t.Errorf("all dark, port up: %+v", f)
	}
	inv := optInv(nil, lane(1, 0, nil), lane(2, 0, nil))
	inv.NICs[0].Operstate = "down"
	if f := find(run(t, inv, Options{}), "transceiver.lane_dark"); len(f) != 0 {
		t.Errorf("all dark on a down port nobody named: %+v", f)
	}
}

// TestRXPowerLowEdges: a module alarm threshold of zero is no alarm; the
// verb agrees with the lane count.
func TestRXPowerLowEdges(t *testing.T) {
	warn, zero := 0.2, 0.0
	th := &sff.Thresholds{RXPowerLowWarnMW: &warn, RXPowerLowAlarmMW: &zero}
	f := find(run(t, optInv(th, lane(1, 0.15, nil), lane(2, 0.5, nil)), Options{}), "transceiver.rx_power_low")
	if len(f) != 1 || f[0].Severity != Warning || f[0].Summary != "lane 1 of the QSFP28 100G CWDM4 module in enp1s0f0np0 receives -8.24 dBm, below the module's own low-warning threshold of -6.99 dBm: bit errors and FEC corrections rise as the power falls" {
		t.Errorf("one lane low: %+v", f)
	}
	if _, ok := f[0].Evidence["low_alarm"]; ok {
		t.Errorf("low_alarm of 0: %v", f[0].Evidence)
	}
	f = find(run(t, optInv(nil, lane(1, 0.05, nil), lane(2, 0.06, nil)), Options{}), "transceiver.rx_power_low")
	if len(f) != 1 || !strings.HasPrefix(f[0].Summary, "lanes 1 and 2 of the QSFP28 100G CWDM4 module in enp1s0f0np0 receive -13.01 dBm, -12.22 dBm, below -10 dBm (the module gives no thresholds)") {
		t.Errorf("two lanes low: %+v", f)
	}
}

// TestTXFaultVerb: the verb agrees with the lane count.
func TestTXFaultVerb(t *testing.T) {
	f := find(run(t, optInv(nil, sff.Lane{Lane: 3, TXFault: bp(true)}), Options{}), "transceiver.tx_fault")
	if len(f) != 1 || !strings.HasPrefix(f[0].Summary, "lane 3 of the QSFP28 100G CWDM4 module in enp1s0f0np0 reports a transmitter fault") {
		t.Errorf("one lane: %+v", f)
	}
	f = find(run(t, optInv(nil, sff.Lane{Lane: 1, TXFault: bp(true)}, sff.Lane{Lane: 2, TXLOS: bp(true)}), Options{}), "transceiver.tx_fault")
	if len(f) != 1 || !strings.HasPrefix(f[0].Summary, "lanes 1 and 2 of the QSFP28 100G CWDM4 module in enp1s0f0np0 report a transmitter fault") {
		t.Errorf("two lanes: %+v", f)
	}
}

// TestUnreadableNamesError: the driver's error is quoted in the summary
// and the evidence.
func TestUnreadableNamesError(t *testing.T) {
	inv := healthy()
	msg := "EIO: reading page 0 failed"
	inv.NICs[0].Transceiver = &inventory.Transceiver{Error: &msg}
	f := find(run(t, inv, Options{}), "transceiver.unreadable")
	if len(f) != 1 || f[0].Evidence["error"] != msg || f[0].Evidence["pci"] != "0000:01:00.0" ||
		!strings.Contains(f[0].Summary, "reading its EEPROM failed (EIO: reading page 0 failed)") {
		t.Fatalf("%+v", f)
	}
	// A NIC without a PCI address has none in the evidence.
	inv.NICs[0].PCI, inv.NICs[0].PCIe, inv.NICs[0].TempC = "", nil, nil
	f = find(run(t, inv, Options{}), "transceiver.unreadable")
	if _, ok := f[0].Evidence["pci"]; len(f) != 1 || ok {
		t.Errorf("no PCI address: %+v", f)
	}
}
