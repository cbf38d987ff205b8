package doctor

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/sff"

	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/nicstats"
	"github.com/linerate/linerate/internal/termui"
)

// findingSet returns "severity id subject" for every finding, sorted.
func findingSet(rep *Report) []string {
	var out []string
	for _, f := range rep.Findings {
		out = append(out, fmt.Sprintf("%s %s %s", f.Severity, f.ID, f.Subject))
	}
	slices.Sort(out)
	return out
}

// TestOpticsTrees: doctor on each tree with live ethtool facts raises
// exactly the findings its HOST.md lists, no more and no fewer.
func TestOpticsTrees(t *testing.T) {
	tests := []struct {
		host string
		want []string
	}{
		{"t6-cwdm4-healthy", []string{"warning link.down ens5f4d1"}},
		{"t6-cwdm4-unreadable", []string{
			"critical transceiver.unreadable ens5f4", "warning link.down ens5f4", "warning link.down ens5f4d1"}},
		{"t6-cwdm4-dark-lane", []string{
			"critical transceiver.lane_dark ens5f4", "warning link.down ens5f4", "warning link.down ens5f4d1"}},
		{"cx6dx-cwdm4-low-rx", []string{
			"critical fec.mismatch ens5f1np1", "warning fec.uncorrectable ens5f0np0", "warning link.down ens5f1np1",
			"warning nic.phy_errors ens5f0np0", "warning transceiver.rx_power_low ens5f0np0"}},
		{"cx4lx-sfp28-a2h", []string{
			"warning fec.off ens5f1np1", "warning nic.rx_no_buffer ens5f1np1", "warning ring.small ens5f1np1"}},
		{"cx7-qsfpdd-cmis", []string{
			"critical transceiver.tx_fault ens5f1np1", "info nic.pause_frames ens5f0np0", "warning link.down ens5f1np1",
			"warning link.speed_below_max ens5f0np0", "warning transceiver.temperature_high ens5f0np0"}},
		{"cx6dx-copper-dac", []string{"warning link.down ens5f1np1"}},
		{"cx7-qsfpdd-8lane", []string{
			"critical transceiver.lane_dark ens5f0np0", "warning link.down ens5f0np0", "warning link.down ens5f1np1",
			"warning transceiver.laser_off ens5f1np1"}},
		{"cx5-fec-kernel-names", []string{
			"critical fec.mismatch ens5f0np0", "critical transceiver.lane_dark ens5f1np1",
			"warning link.down ens5f0np0", "warning link.down ens5f1np1"}},
		{"cx7-prefec-ber", []string{
			"critical fec.ber_high ens5f1np1", "warning fec.ber_high ens5f0np0", "warning fec.uncorrectable ens5f1np1",
			"warning nic.phy_errors ens5f1np1", "warning pcie.bandwidth_below_line_rate ens5f0np0"}},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			rep := diagnoseTree(t, tt.host, Options{})
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if got := findingSet(rep); !slices.Equal(got, want) {
				t.Errorf("findings:\n  got  %q\n  want %q", got, want)
			}
		})
	}
}

func findingOf(t *testing.T, rep *Report, id, subject string) Finding {
	t.Helper()
	for _, f := range rep.Findings {
		if f.ID == id && f.Subject == subject {
			return f
		}
	}
	t.Fatalf("no %s on %s in %q", id, subject, findingSet(rep))
	return Finding{}
}

// hasFix reports whether a fix of f says sub, in its prose or its
// commands (as a shell line).
func hasFix(f Finding, sub string) bool {
	return strings.Contains(strings.Join(f.FixLines(), "\n"), sub)
}

// TestOpticsEvidence checks that each finding names its lane, its dBm
// against the module's threshold, its counter, and the exact fix.
func TestOpticsEvidence(t *testing.T) {
	rep := diagnoseTree(t, "t6-cwdm4-unreadable", Options{})
	f := findingOf(t, rep, "transceiver.unreadable", "ens5f4")
	if f.Evidence["error"] != "EIO" || !hasFix(f, "Reseat the module in ens5f4") || !strings.Contains(f.Summary, "EIO") {
		t.Errorf("unreadable: %+v", f)
	}

	rep = diagnoseTree(t, "t6-cwdm4-dark-lane", Options{})
	f = findingOf(t, rep, "transceiver.lane_dark", "ens5f4")
	if !slices.Equal(f.Evidence["dark_lanes"].([]int), []int{3}) || !strings.Contains(f.Summary, "lane 3") ||
		f.Evidence["rx_power"].(map[string]string)["3"] != "no light" || f.Evidence["rx_power"].(map[string]string)["1"] != "-1.90 dBm" ||
		!hasFix(f, "replace this module: FINISAR CORP. FTLC1157RGPL6FB1 SN X7TA09Q") || !hasFix(f, "share one fibre") {
		t.Errorf("lane dark: %+v", f)
	}

	rep = diagnoseTree(t, "cx6dx-cwdm4-low-rx", Options{})
	f = findingOf(t, rep, "transceiver.rx_power_low", "ens5f0np0")
	// 0.0692 mW: 10·log10(0.0692) = −11.60 dBm; the module's low warning is
	// −10.5 dBm (0.0891 mW), its alarm −13.5 dBm.
	if f.Severity != Warning || f.Evidence["rx_power"].(map[string]string)["2"] != "-11.60 dBm" ||
		f.Evidence["low_warn"] != "-10.50 dBm" || f.Evidence["low_alarm"] != "-13.50 dBm" || !strings.Contains(f.Summary, "lane 2") {
		t.Errorf("rx power low: %+v", f)
	}
	f = findingOf(t, rep, "fec.mismatch", "ens5f1np1")
	if !hasFix(f, "ethtool --set-fec ens5f1np1 encoding rs") || !strings.Contains(f.Summary, "RS FEC is not locked") {
		t.Errorf("fec mismatch: %+v", f)
	}
	f = findingOf(t, rep, "fec.uncorrectable", "ens5f0np0")
	if f.Evidence["uncorrectable_blocks"] != uint64(17) || !strings.Contains(f.Summary, "since the driver loaded") || !strings.Contains(f.Summary, "FEC lane 1 (of lanes 0-3, as ethtool numbers them)") {
		t.Errorf("fec uncorrectable: %+v", f)
	}
	f = findingOf(t, rep, "nic.phy_errors", "ens5f0np0")
	if f.Evidence["counters"] != "eth_mac.FrameCheckSequenceErrors 17" {
		t.Errorf("phy errors: %+v", f)
	}

	rep = diagnoseTree(t, "cx4lx-sfp28-a2h", Options{})
	f = findingOf(t, rep, "fec.off", "ens5f1np1")
	if !hasFix(f, "ethtool --set-fec ens5f1np1 encoding rs") || f.Evidence["media"] != "25GBASE-SR" {
		t.Errorf("fec off: %+v", f)
	}
	f = findingOf(t, rep, "nic.rx_no_buffer", "ens5f1np1")
	if !strings.Contains(f.Summary, "rx_out_of_buffer 184211") || !hasFix(f, "ethtool -G ens5f1np1 rx 8192") {
		t.Errorf("rx no buffer: %+v", f)
	}
	f = findingOf(t, rep, "ring.small", "ens5f1np1")
	if !hasFix(f, "ethtool -G ens5f1np1 rx 8192") {
		t.Errorf("ring small: %+v", f)
	}

	rep = diagnoseTree(t, "cx7-qsfpdd-cmis", Options{})
	f = findingOf(t, rep, "link.speed_below_max", "ens5f0np0")
	if f.Evidence["max_mbps"] != 400000 || !strings.Contains(f.Summary, "partner advertises at most 200 Gbit/s") {
		t.Errorf("speed below max: %+v", f)
	}
	f = findingOf(t, rep, "transceiver.tx_fault", "ens5f1np1")
	if !slices.Equal(f.Evidence["lanes"].([]int), []int{2}) || !hasFix(f, "ACME OPTICS QDD-400G-DR4 SN AC2201000188") {
		t.Errorf("tx fault: %+v", f)
	}
}

// TestOpticsTable: the text view shows every lane the way ethtool -m
// does, and marks the bad one.
func TestOpticsTable(t *testing.T) {
	rep := diagnoseTree(t, "t6-cwdm4-dark-lane", Options{Ifaces: []string{"ens5f4"}})
	var b bytes.Buffer
	if err := WriteText(&b, rep, termui.Style{}, 0); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"module     QSFP28 100G CWDM4, LC, 1311 nm: FINISAR CORP. FTLC1157RGPL6FB1 SN X7TA09Q, made 2019-03-12",
		"1     -1.90 dBm (0.646 mW)",
		"3     no light",
		"RX LOS",
		"◀ dark",
		"rx low warning -10.50 dBm, alarm -13.50 dBm",
		"ens5f4d1: no module data",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "◀") != 1 {
		t.Errorf("%d lanes marked, want 1 (lane 3)", strings.Count(out, "◀"))
	}
}

// TestCounterDeltas: given a bench's deltas, the counter rules judge the
// growth instead of the totals, and say so.
func TestCounterDeltas(t *testing.T) {
	inv := healthy()
	n := &inv.NICs[0]
	tot := nicstats.Counters{ByCause: map[nicstats.Cause]nicstats.Count{
		nicstats.FECUncorrectable: {Value: 40, Sources: map[string]uint64{"fec.uncorrectable_blocks": 40}},
		nicstats.PauseTX:          {Value: 9, Sources: map[string]uint64{"pause.tx_frames": 9}},
	}}
	n.Counters = &tot
	n.FEC = &inventory.FEC{Active: ptrS("RS"), Configured: []string{"RS"}, UncorrectableBlocks: ptrU(40)}
	rep := run(t, inv, Options{})
	if f := find(rep, "fec.uncorrectable"); len(f) != 1 || f[0].Severity != Warning || !strings.Contains(f[0].Summary, "since the driver loaded") {
		t.Errorf("totals: %+v", f)
	}
	if f := find(rep, "nic.pause_frames"); len(f) != 1 || f[0].Severity != Info {
		t.Errorf("pause totals: %+v", f)
	}
	delta := nicstats.Counters{Delta: true, ByCause: map[nicstats.Cause]nicstats.Count{
		nicstats.FECUncorrectable: {Value: 12, Sources: map[string]uint64{"fec.uncorrectable_blocks": 12}},
		nicstats.PauseTX:          {Value: 3, Sources: map[string]uint64{"pause.tx_frames": 3}},
		nicstats.RXNoBuffer:       {Value: 1_200_000, Sources: map[string]uint64{"rx_out_of_buffer": 1_200_000}},
	}}
	rep = run(t, inv, Options{CounterDeltas: map[string]nicstats.Counters{"enp1s0f0np0": delta}})
	if f := find(rep, "fec.uncorrectable"); len(f) != 1 || f[0].Severity != Critical || !strings.Contains(f[0].Summary, "12 blocks during the bench") {
		t.Errorf("grown during a bench: %+v", f)
	}
	if f := find(rep, "nic.pause_frames"); len(f) != 1 || f[0].Severity != Warning {
		t.Errorf("pause sent during a bench: %+v", f)
	}
	if f := find(rep, "nic.rx_no_buffer"); len(f) != 1 || !strings.Contains(f[0].Summary, "1200000 frames during the bench") ||
		!strings.Contains(f[0].Summary, "rx_out_of_buffer 1200000") {
		t.Errorf("rx no buffer during a bench: %+v", f)
	}
}

func ptrS(s string) *string { return &s }
func ptrU(v uint64) *uint64 { return &v }

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
