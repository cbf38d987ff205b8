package doctor

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/nicstats"
	"github.com/linerate/linerate/internal/sff"
	"github.com/linerate/linerate/internal/termui"
)

// richReport is a report whose host and NICs set (or leave out) every
// field the text view words: no hostname or CPU model, two sockets, NUMA
// nodes 2 and 10, no L3 or governor facts, a PCI NIC without model, MTU
// or NUMA node, its module, FEC and queues, a virtual link and notes.
func richReport(t *testing.T) *Report {
	t.Helper()
	inv := healthy()
	inv.Host.Hostname = ""
	inv.CPU.Model, inv.CPU.Sockets = "", 2
	inv.CPU.NUMANodes = map[string][]int{"10": cpulist.MustParse("6-11"), "2": cpulist.MustParse("0-5")}
	inv.CPU.L3Domains, inv.CPU.Governors, inv.CPU.ScalingDriver = nil, nil, "acpi-cpufreq"
	inv.Notes = []string{"hwmon: no sensor"}
	n := &inv.NICs[0]
	n.Model, n.MTU, n.NUMANode, n.TempCritC = "", nil, ip(-1), nil
	n.PCIe.Upstream = nil
	n.RDMA[0].State = "DOWN"
	n.Link = &inventory.Link{SpeedMbps: ip(100000), Duplex: "Full", Lanes: ip(4), Autoneg: bp(false), SupportedMaxMbps: ip(200000),
		Detected: bp(false), ExtState: "Link training failure", ExtSubstate: "FEC is not locked", DownEvents: u32(3)}
	n.FEC = &inventory.FEC{Active: ptrS("RS"), Configured: []string{"RS"}, Auto: true, CorrectedBlocks: ptrU(10), UncorrectableBlocks: ptrU(0)}
	warn, alarm, tw, ta := 0.2, 0.1, 70.0, 75.0
	n.Transceiver = &inventory.Transceiver{Readable: true, Module: &sff.Module{Identifier: "QSFP28", Media: "100G SR4", Connector: "MPO 1x12",
		WavelengthNM: fp(850), Date: "2021-03-04", VendorName: "ACME", VendorPN: "Q100", VendorSN: "S1",
		TemperatureC: fp(70), VoltageV: fp(3.3), State: "ready", Monitors: true,
		Thresholds: &sff.Thresholds{RXPowerLowWarnMW: &warn, RXPowerLowAlarmMW: &alarm, TemperatureHighWarnC: &tw, TemperatureHighAlarmC: &ta},
		Lanes:      []sff.Lane{{Lane: 1, RXPowerMW: fp(0.5), TXPowerMW: fp(0.6), TXBiasMA: fp(7)}, {Lane: 2, RXPowerMW: fp(0.5), TXFault: bp(true)}}}}
	c := counts(false, map[nicstats.Cause]uint64{nicstats.PauseTX: 9})
	n.Counters = &c
	n.Rings = &ethtool.Rings{RX: u32(1024), RXMax: u32(8192), TX: u32(1024)}
	n.Channels = &ethtool.Channels{Combined: u32(12), CombinedMax: u32(63), RX: u32(0)}
	inv.Virtual = []inventory.NIC{{Interface: "veth0", Kind: "veth", Operstate: "up", MTU: ip(1500)}, {Interface: "tun0", Kind: "tun", Operstate: "unknown"}}
	return run(t, inv, Options{Ifaces: []string{"enp1s0f0np0", "veth0"}})
}

// render writes rep as text, coloured or not, unwrapped.
func render(t *testing.T, rep *Report, colour bool) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteText(&b, rep, termui.Style{Colour: colour}, 0); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// hasLines fails for each want line missing from out (whole lines).
func hasLines(t *testing.T, what, out string, want ...string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	for _, w := range want {
		if !slices.Contains(lines, w) {
			t.Errorf("%s: no line %q in:\n%s", what, w, out)
		}
	}
}

// TestTextOneLinkDown: one link-down event is one "event".
func TestTextOneLinkDown(t *testing.T) {
	rep := richReport(t)
	*rep.NICs[0].Link.DownEvents = 1
	hasLines(t, "one down event", render(t, rep, false), "             1 link-down event since the driver loaded")
}

// TestTextHeadWraps: at 40 columns the NIC's head line breaks between
// its fields, never inside "pci 0000:01:00.0" or "numa n/a".
func TestTextHeadWraps(t *testing.T) {
	var b strings.Builder
	if err := WriteText(&b, richReport(t), termui.Style{}, 40); err != nil {
		t.Fatal(err)
	}
	hasLines(t, "40 columns", b.String(), "enp1s0f0np0  NIC [15b3:1017]  mlx5_core", "  pci 0000:01:00.0  numa n/a")
}

// TestTextRich pins the text view's lines for a host and NIC with every
// field set or left out.
func TestTextRich(t *testing.T) {
	out := render(t, richReport(t), false)
	hasLines(t, "rich", out,
		"(unknown host)  Linux 6.8.0",
		"  cpu        12 × CPU model unknown, 2 sockets",
		"  numa       2: 0-5  10: 6-11",
		"  l3         not reported",
		"  governor   not reported (no cpufreq)",
		"enp1s0f0np0  NIC [15b3:1017]  mlx5_core  pci 0000:01:00.0  numa n/a",
		"  link       up  100 Gbit/s  MTU ?  queues 12 rx / 12 tx",
		"  pcie       8.0 GT/s x16 of 8.0 GT/s x16",
		"  irqs       5, routed to CPUs 7-11, served on 7-11",
		"  temp       45.0 °C",
		"  ethtool    100 Gbit/s Full, 4 lanes, autoneg off, supports up to 200 Gbit/s",
		"             no link detected (Link training failure: FEC is not locked)",
		"             3 link-down events since the driver loaded",
		"  fec        active RS, configured auto RS; blocks corrected 10, uncorrectable 0 since the driver loaded",
		"  module     QSFP28 100G SR4, MPO 1x12, 850 nm: ACME Q100 SN S1, made 2021-03-04",
		"             70.0 °C (warn 70, alarm 75), 3.300 V",
		"    1     -3.01 dBm (0.500 mW)  -2.22 dBm (0.600 mW)  7.00 mA",
		"    2     -3.01 dBm (0.500 mW)  -                     -          TX fault   ◀ TX fault",
		"    rx low warning -6.99 dBm, alarm -10.00 dBm",
		"  counters   pause_tx 9 (totals since the driver loaded)",
		"  rings      rx 1024 of 8192, tx 1024 descriptors",
		"  channels   combined 12 of 63, rx 0",
		"  ceiling    line rate 100.00 → PCIe 114.41 → TCP goodput ? Gbit/s  → bottleneck: unknown",
		"veth0  veth",
		"  link       up  no physical speed  MTU 1500  queues 0 rx / 0 tx",
		"  ceiling    line rate ? → TCP goodput ? Gbit/s  → bottleneck: unknown",
		"other interfaces: tun0 (tun)",
		"findings: 1 critical, 3 warning, 1 info",
		"    1. Replace the module: ACME Q100 SN S1 (reseating rarely clears a TX fault)",
		"    2. Pause sent: find why the host falls behind (nic.rx_no_buffer, IRQ placement, ring sizes); pause received: look at the switch port's buffers and its other traffic",
		"not read:",
		"  - hwmon: no sensor",
	)
	if strings.Contains(out, "partner advertises") || strings.Contains(out, "\n  qdisc") {
		t.Errorf("partner or qdisc line without one:\n%s", out)
	}
	veth := out[strings.Index(out, "veth0  veth"):strings.Index(out, "other interfaces")]
	if strings.Contains(veth, "pcie") || strings.Contains(veth, "irqs") {
		t.Errorf("a veth with PCIe or IRQ lines:\n%s", veth)
	}
	st := termui.Style{Colour: true}
	col := render(t, richReport(t), true)
	for _, want := range []string{st.Green("up"), "rocep1s0f0/1 " + st.Yellow("DOWN"), "uncorrectable 0 since", st.Yellow("70.0 °C (warn 70, alarm 75)")} {
		if !strings.Contains(col, want) {
			t.Errorf("coloured view lacks %q", want)
		}
	}
}

// TestTextHealthy pins the lines of the healthy host: model, NUMA node,
// MTU, slot, critical temperature, governor, and no findings.
func TestTextHealthy(t *testing.T) {
	inv := healthy()
	inv.CPU.Model, inv.CPU.ScalingDriver = "AMD EPYC", "acpi-cpufreq"
	inv.NICs[0].Qdisc = &inventory.Qdisc{Kind: "fq"}
	rep := run(t, inv, Options{})
	out := render(t, rep, false)
	hasLines(t, "healthy", out,
		"h  Linux 6.8.0",
		"  cpu        12 × AMD EPYC",
		"  governor   performance on 0-11 (acpi-cpufreq)",
		"  l3         0-5 | 6-11",
		"enp1s0f0np0  ConnectX-5 [15b3:1017]  mlx5_core  pci 0000:01:00.0  numa 0",
		"  link       up  100 Gbit/s  MTU 9000  queues 12 rx / 12 tx",
		"  qdisc      fq",
		"  pcie       8.0 GT/s x16 of 8.0 GT/s x16  (slot 0000:00:01.1: 32.0 GT/s x16)",
		"  temp       45.0 °C (crit 105.0 °C)",
		"no findings: nothing here limits the link",
	)
	for _, no := range []string{"other interfaces", "not read:", "socket"} {
		if strings.Contains(out, no) {
			t.Errorf("healthy view says %q:\n%s", no, out)
		}
	}
	col := render(t, rep, true)
	if strings.Contains(col, termui.Style{Colour: true}.Yellow("ACTIVE")) {
		t.Error("an ACTIVE RDMA port is marked")
	}
	// A NIC whose line rate is unknown makes the "no findings" line say so.
	rep.NICs[0].Limits.LineRate = nil
	hasLines(t, "no line rate", render(t, rep, false), "no findings (some line rates are unknown, so ceilings could not be compared)")
	inv.NICs[0].IRQs, inv.NICs[0].PCIe.MPS = nil, ip(256)
	hasLines(t, "no IRQs, MPS", render(t, run(t, inv, Options{}), false),
		"  irqs       none found", "             126.03 Gbit/s raw, 114.41 effective (MPS 256, MRRS 0)")
}

// TestTextFixes pins how fixes are written: one fix is a dash, several
// are numbered from 1; an action before a command ends in one colon; a
// command without action stands alone; no evidence, no evidence line.
func TestTextFixes(t *testing.T) {
	rep := &Report{Findings: []Finding{
		{ID: "a.one", Severity: Warning, Subject: "x", Summary: "s", Fix: []Fix{do("Do it:", "true")}},
		{ID: "b.two", Severity: Info, Subject: "y", Summary: "s", Evidence: map[string]any{"k": 1.5},
			Fix: []Fix{{Command: []string{"echo", "hi"}}, do("Then this")}},
	}}
	out := render(t, rep, false)
	hasLines(t, "fixes", out,
		"    - Do it:", "        true",
		"  evidence: k=1.5",
		"         echo hi", "    2. Then this",
		"findings: 0 critical, 1 warning, 1 info")
	if strings.Count(out, "evidence:") != 1 || strings.Contains(out, "Do it::") {
		t.Errorf("%s", out)
	}
}

// TestTextHelpers: NUMA node names and the "none yet" of a list.
func TestTextHelpers(t *testing.T) {
	for _, tt := range []struct {
		node *int
		want string
	}{{nil, "n/a"}, {ip(-1), "n/a"}, {ip(0), "0"}, {ip(1), "1"}} {
		if got := numaName(tt.node); got != tt.want {
			t.Errorf("numaName(%v) = %q", tt.node, got)
		}
	}
	if orNone("") != "none yet" || orNone("3") != "3" || deref32(nil) != 0 || deref32(ip(512)) != 512 {
		t.Error("orNone or deref32")
	}
}
