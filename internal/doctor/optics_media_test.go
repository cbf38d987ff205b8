package doctor

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/sff"
	"github.com/linerate/linerate/internal/termui"
)

// opticalIDs are the findings that speak of light.
var opticalIDs = []string{"transceiver.lane_dark", "transceiver.rx_power_low", "transceiver.tx_fault", "transceiver.laser_off"}

// TestNoOpticalFindingOnCopper: over every host tree, a port whose module
// is a copper cable gets no optical finding, named or not, and the
// copper cables of testdata include a passive DAC that reports a
// temperature (the case that cried wolf) and a breakout DAC.
func TestNoOpticalFindingOnCopper(t *testing.T) {
	entries, err := os.ReadDir(hostsDir())
	if err != nil {
		t.Fatal(err)
	}
	copper, warm := 0, 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		for _, named := range []bool{false, true} {
			rep := diagnoseTree(t, e.Name(), Options{})
			var ifaces []string
			for _, n := range rep.NICs {
				ifaces = append(ifaces, n.Interface)
			}
			if named {
				rep = diagnoseTree(t, e.Name(), Options{Ifaces: ifaces})
			}
			for _, n := range rep.NICs {
				tr := n.Transceiver
				if tr == nil || !tr.Readable || tr.MediaClass != sff.MediaCopper {
					continue
				}
				if !named {
					copper++
					if tr.TemperatureC != nil {
						warm++
					}
				}
				for _, f := range rep.Findings {
					if f.Subject == n.Interface && slices.Contains(opticalIDs, f.ID) {
						t.Errorf("%s %s (named %v): %s on a copper cable: %s", e.Name(), n.Interface, named, f.ID, f.Summary)
					}
				}
			}
		}
	}
	if copper < 2 || warm < 2 {
		t.Errorf("testdata has %d copper cables, %d reporting a temperature: want a passive DAC and a breakout DAC, both warm", copper, warm)
	}
}

// TestCopperStillReported: the copper cables' identity and temperature
// are in the report and its text, with why no lane is judged.
func TestCopperStillReported(t *testing.T) {
	rep := diagnoseTree(t, "cx6dx-copper-dac", Options{})
	for _, n := range rep.NICs {
		tr := n.Transceiver
		if tr == nil || !tr.Readable || tr.TemperatureC == nil || tr.VendorPN == "" || tr.Cable != sff.CablePassive ||
			!strings.Contains(tr.MediaBasis, "byte 147") {
			t.Errorf("%s: %+v", n.Interface, tr)
		}
	}
	var b bytes.Buffer
	if err := WriteText(&b, rep, termui.Style{}, 0); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"QSFP+ 40GBASE-CR4, No separable connector: Mellanox MC2210130-003", "31.2 °C",
		"passive copper cable", "no light, so no optical lanes to judge", "MCP7F00-A003R"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q", want)
		}
	}
	if strings.Contains(out, "◀ dark") {
		t.Errorf("a copper lane is marked dark:\n%s", out)
	}
}

// TestEightLaneModule: the eight-lane CMIS module shows its eight media
// lanes in its data path, and its dark lane 7 is critical.
func TestEightLaneModule(t *testing.T) {
	rep := diagnoseTree(t, "cx7-qsfpdd-8lane", Options{})
	var tr *inventory.Transceiver
	for _, n := range rep.NICs {
		if n.Interface == "ens5f0np0" {
			tr = n.Transceiver
		}
	}
	if tr == nil || len(tr.Lanes) != 8 || len(tr.DataPaths) != 1 || !slices.Equal(tr.DataPaths[0].MediaLanes, []int{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("module %+v", tr)
	}
	f := findingOf(t, rep, "transceiver.lane_dark", "ens5f0np0")
	if f.Severity != Critical || !slices.Equal(f.Evidence["dark_lanes"].([]int), []int{7}) ||
		!strings.Contains(f.Summary, "lane 7 of the QSFP-DD 400GBASE-LR8 module") ||
		!strings.Contains(f.Summary, "while 1, 2, 3, 4, 5, 6 and 8 do") ||
		!slices.Equal(f.Evidence["data_paths"].([]string), []string{"1: 400GBASE-LR8 on media lanes 1-8 (host lanes 1-8)"}) {
		t.Errorf("lane dark: %+v", f)
	}
	var b bytes.Buffer
	if err := WriteText(&b, diagnoseTree(t, "cx7-qsfpdd-8lane", Options{Ifaces: []string{"ens5f0np0"}}), termui.Style{}, 0); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	head := strings.Index(out, "data path 1: 400GBASE-LR8 on media lanes 1-8, from host lanes 1-8")
	l1, l8 := strings.Index(out, "\n    1     -2.08 dBm"), strings.Index(out, "\n    8     -2.22 dBm")
	if head < 0 || l1 < head || l8 < l1 || strings.Count(out, "◀ dark") != 1 {
		t.Errorf("text does not group the eight lanes under their data path:\n%s", out)
	}
}

// TestLaserOff: the DR4 of the 8-lane tree has lane 3's laser off; the
// finding names the lane, the module's alarm and why light is expected.
func TestLaserOff(t *testing.T) {
	rep := diagnoseTree(t, "cx7-qsfpdd-8lane", Options{})
	f := findingOf(t, rep, "transceiver.laser_off", "ens5f1np1")
	if f.Severity != Warning || !slices.Equal(f.Evidence["lanes"].([]int), []int{3}) || f.Evidence["tx_bias_low_alarm_ma"] != 20.0 ||
		!strings.Contains(f.Summary, "lane 3 of the QSFP-DD 400GBASE-DR4 module in ens5f1np1 has its laser off") ||
		!hasFix(f, "ethtool --set-module ens5f1np1 power-mode-policy high") {
		t.Errorf("laser off: %+v", f)
	}
}

// laserInv is the healthy host with an optical module: lane 2's laser
// at bias b with the low-bias alarm flag as given, lane 1 transmitting
// at lane1 mA, RX power rx on both.
func laserInv(b float64, alarm bool, lane1, rx float64) *inventory.Inventory {
	inv := healthy()
	low := 10.0
	var flags []string
	if alarm {
		flags = []string{"tx_bias_low_alarm"}
	}
	inv.NICs[0].Transceiver = &inventory.Transceiver{Readable: true, Module: &sff.Module{
		Identifier: "QSFP28", Media: "100G CWDM4", Monitors: true, MediaClass: sff.MediaOptical,
		Thresholds: &sff.Thresholds{TXBiasLowAlarmMA: &low},
		Lanes: []sff.Lane{
			{Lane: 1, TXBiasMA: fp(lane1), RXPowerMW: fp(rx), Flags: []string{}},
			{Lane: 2, TXBiasMA: fp(b), RXPowerMW: fp(rx), Flags: flags},
		}}}
	return inv
}

// TestLaserOffEdges: the laser must be at 0 with the module's own alarm
// (flag or threshold); the port must be one that should carry light; a
// TX fault lane is tx_fault's; copper and unknown media are not judged.
func TestLaserOffEdges(t *testing.T) {
	if f := find(run(t, laserInv(0, true, 38, 0.6), Options{}), "transceiver.laser_off"); len(f) != 1 ||
		f[0].Evidence["why_light_expected"] != "the port is up" {
		t.Errorf("bias 0 with its alarm on an up port: %+v", f)
	}
	if f := find(run(t, laserInv(0, false, 38, 0.6), Options{}), "transceiver.laser_off"); len(f) != 1 {
		t.Errorf("bias 0 under the alarm threshold, no flag: %+v", f)
	}
	if f := find(run(t, laserInv(0.5, true, 38, 0.6), Options{}), "transceiver.laser_off"); len(f) != 0 {
		t.Errorf("a weak but lit laser is not off: %+v", f)
	}
	// A down port nobody named, no lane transmitting, no light arriving:
	// an idle port, lasers off by design.
	inv := laserInv(0, true, 0, 0)
	inv.NICs[0].Operstate = "down"
	if f := find(run(t, inv, Options{}), "transceiver.laser_off"); len(f) != 0 {
		t.Errorf("idle port: %+v", f)
	}
	if f := find(run(t, inv, Options{Ifaces: []string{"enp1s0f0np0"}}), "transceiver.laser_off"); len(f) != 1 {
		t.Errorf("the same port, named: %+v", f)
	}
	inv = laserInv(0, true, 0, 0.6)
	inv.NICs[0].Operstate = "down"
	if f := find(run(t, inv, Options{}), "transceiver.laser_off"); len(f) != 1 || !strings.Contains(f[0].Summary, "the peer's light arrives") {
		t.Errorf("down, peer's light arriving: %+v", f)
	}
	inv = laserInv(0, true, 38, 0.6)
	inv.NICs[0].Transceiver.Lanes[1].TXFault = bptr(true)
	if f := find(run(t, inv, Options{}), "transceiver.laser_off"); len(f) != 0 {
		t.Errorf("a TX fault lane: %+v", f)
	}
	for _, class := range []string{sff.MediaCopper, sff.MediaUnknown} {
		inv = laserInv(0, true, 38, 0.6)
		inv.NICs[0].Transceiver.MediaClass = class
		if f := find(run(t, inv, Options{}), "transceiver.laser_off"); len(f) != 0 {
			t.Errorf("%s media: %+v", class, f)
		}
	}
}

func bptr(v bool) *bool { return &v }

// TestDownPortDarkModule: a port without carrier whose optical module
// receives nothing is flagged, named or not; a copper cable is not; a
// module of unknown media only where the port is named.
func TestDownPortDarkModule(t *testing.T) {
	dark := func(class string) *inventory.Inventory {
		inv := healthy()
		inv.NICs[0].Operstate = "down"
		inv.NICs[0].Transceiver = &inventory.Transceiver{Readable: true, Module: &sff.Module{
			Identifier: "QSFP28", Media: "100G CWDM4", Monitors: true, MediaClass: class,
			Lanes: []sff.Lane{{Lane: 1, RXPowerMW: fp(0)}, {Lane: 2, RXPowerMW: fp(0)}}}}
		return inv
	}
	if f := find(run(t, dark(sff.MediaOptical), Options{}), "transceiver.lane_dark"); len(f) != 1 || f[0].Severity != Critical ||
		!strings.HasPrefix(f[0].Summary, "enp1s0f0np0 has no carrier and every lane") {
		t.Errorf("optical, down, not named: %+v", f)
	}
	if f := find(run(t, dark(sff.MediaCopper), Options{Ifaces: []string{"enp1s0f0np0"}}), "transceiver.lane_dark"); len(f) != 0 {
		t.Errorf("copper, named: %+v", f)
	}
	if f := find(run(t, dark(sff.MediaUnknown), Options{}), "transceiver.lane_dark"); len(f) != 0 {
		t.Errorf("unknown media, down, not named: %+v", f)
	}
	if f := find(run(t, dark(sff.MediaUnknown), Options{Ifaces: []string{"enp1s0f0np0"}}), "transceiver.lane_dark"); len(f) != 1 {
		t.Errorf("unknown media, named: %+v", f)
	}
}

// TestFECMismatchKernelNames: the tree whose link modes carry the
// kernel's FEC names: the partner's RS is read, and the local FEC off
// cannot match it.
func TestFECMismatchKernelNames(t *testing.T) {
	rep := diagnoseTree(t, "cx5-fec-kernel-names", Options{})
	f := findingOf(t, rep, "fec.mismatch", "ens5f0np0")
	if f.Severity != Critical || !strings.Contains(f.Summary, "configured for off while the partner advertises RS") ||
		!hasFix(f, "ethtool --set-fec ens5f0np0 encoding rs") {
		t.Errorf("fec mismatch: %+v", f)
	}
	for _, n := range rep.NICs {
		if n.Interface == "ens5f0np0" && (!slices.Equal(n.Link.PartnerFEC, []string{"RS"}) || slices.Contains(n.Link.PartnerAdvertised, "RS")) {
			t.Errorf("link %+v", n.Link)
		}
	}
	// Without FEC_GET, the FEC the port advertises stands for its own.
	inv := healthy()
	inv.NICs[0].Operstate = "down"
	inv.NICs[0].Link = &inventory.Link{PartnerFEC: []string{"RS"}, AdvertisedFEC: []string{"None"}, Detected: bptr(false)}
	if f := find(run(t, inv, Options{}), "fec.mismatch"); len(f) != 1 || !strings.Contains(f[0].Summary, "configured for off") {
		t.Errorf("advertised None against RS: %+v", f)
	}
	inv.NICs[0].Link.AdvertisedFEC = []string{"None", "RS"}
	if f := find(run(t, inv, Options{}), "fec.mismatch"); len(f) != 0 {
		t.Errorf("advertised RS too: %+v", f)
	}
}

// TestFECBERHigh: the contract's thresholds, the worst FEC lane, and the
// histogram's lower bound where no bit counter exists.
func TestFECBERHigh(t *testing.T) {
	rep := diagnoseTree(t, "cx7-prefec-ber", Options{})
	f := findingOf(t, rep, "fec.ber_high", "ens5f0np0")
	if f.Severity != Warning || f.Evidence["pre_fec_ber"] != "3.1e-05" || !strings.Contains(f.Summary, "3.21e+12 corrected bits of 1.04e+17 received") {
		t.Errorf("warning: %+v", f)
	}
	f = findingOf(t, rep, "fec.ber_high", "ens5f1np1")
	if f.Severity != Critical || !strings.Contains(f.Summary, "FEC lane 1 (of lanes 0-3, as ethtool numbers them) the worst at 5.5e-04") ||
		!slices.Equal(f.Evidence["pre_fec_ber_by_lane"].([]string), []string{"3.0e-05", "5.5e-04", "3.2e-05", "2.8e-05"}) {
		t.Errorf("critical: %+v", f)
	}
	ber := func(corrected, received uint64, lanes ...uint64) *inventory.Inventory {
		inv := healthy()
		b, _ := ethtool.PreFECBER(corrected, received)
		inv.NICs[0].FEC = &inventory.FEC{Active: ptrS("RS"), Configured: []string{"RS"}, CorrectedBits: &corrected, ReceivedBits: &received, PreFECBER: &b}
		if len(lanes) > 0 {
			inv.NICs[0].FEC.Lanes = &inventory.FECLanes{CorrectedBits: lanes}
			for _, c := range lanes {
				lb, _ := ethtool.PreFECBER(c, received/uint64(len(lanes)))
				inv.NICs[0].FEC.Lanes.PreFECBER = append(inv.NICs[0].FEC.Lanes.PreFECBER, lb)
			}
		}
		return inv
	}
	for _, tt := range []struct {
		inv  *inventory.Inventory
		want Severity
	}{
		{ber(999, 100_000_000), ""},                             // 9.99e-6
		{ber(1000, 100_000_000), Warning},                       // 1e-5
		{ber(11_999, 100_000_000), Warning},                     // 1.1999e-4
		{ber(12_000, 100_000_000), Critical},                    // 1.2e-4: within 2x of 2.4e-4
		{ber(800, 100_000_000, 200, 200, 200, 200), ""},         // 8e-6 on every lane
		{ber(800, 100_000_000, 50, 50, 650, 50), Warning},       // one lane at 2.6e-5
		{ber(4000, 100_000_000, 100, 100, 3700, 100), Critical}, // one lane at 1.48e-4
	} {
		got := find(run(t, tt.inv, Options{}), "fec.ber_high")
		switch {
		case tt.want == "" && len(got) != 0:
			t.Errorf("BER %v: %+v", *tt.inv.NICs[0].FEC.PreFECBER, got)
		case tt.want != "" && (len(got) != 1 || got[0].Severity != tt.want):
			t.Errorf("BER %v: %+v, want %s", *tt.inv.NICs[0].FEC.PreFECBER, got, tt.want)
		}
	}
	// No bit counters, but a histogram: 1e9 codewords of a 100 GbE RS
	// link over 4 lanes (25G lanes: RS(528,514), 5280 bits), 9e7 with one
	// errored symbol: at least 9e7 / 5.28e12 = 1.7e-5.
	inv := healthy()
	inv.NICs[0].Link = &inventory.Link{SpeedMbps: ip(100000), Lanes: ip(4)}
	inv.NICs[0].FEC = &inventory.FEC{Active: ptrS("RS"), Configured: []string{"RS"},
		Hist: []ethtool.FECHistBin{{BinLow: 0, BinHigh: 0, Val: 910_000_000}, {BinLow: 1, BinHigh: 1, Val: 90_000_000}}}
	got := find(run(t, inv, Options{}), "fec.ber_high")
	if len(got) != 1 || got[0].Severity != Warning || got[0].Evidence["pre_fec_ber"] != "1.7e-05" || !strings.Contains(got[0].Summary, "lower bound from the FEC histogram") {
		t.Errorf("histogram only: %+v", got)
	}
}

// TestFECHistText: the histogram as doctor's text shows it, bins and
// lanes, and the BER line.
func TestFECHistText(t *testing.T) {
	rep := diagnoseTree(t, "cx7-prefec-ber", Options{Ifaces: []string{"ens5f1np1"}})
	var b bytes.Buffer
	if err := WriteText(&b, rep, termui.Style{}, 0); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"pre-FEC BER 1.6e-04 (corrected bits over bits received since the driver",
		"FEC histogram (codewords by symbol errors, since the driver loaded)",
		"symbol errors   codewords lane 0   lane 1   lane 2   lane 3",
		"\n    15              12        0        12       0        0  ▮▮",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	for v, want := range map[uint64]string{0: "0", 9999: "9999", 10000: "10.00k", 7_981_530_393_719: "7.98T", 1<<63 + 1: "9.22E"} {
		if got := countText(v); got != want {
			t.Errorf("countText(%d) = %q, want %q", v, got, want)
		}
	}
}
