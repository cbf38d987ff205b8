package doctor

import (
	"bytes"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/sff"
	"github.com/linerate/linerate/internal/termui"
)

// TestTemperatureThresholds pins nic.temperature_high at its boundaries:
// a warning from 70.0 °C (not 70.1, not 73), critical from 10 °C below the
// sensor's crit (95.0 for a crit of 105), and nothing at 69.9.
func TestTemperatureThresholds(t *testing.T) {
	tests := []struct {
		temp, crit float64
		want       Severity // "" for no finding
	}{
		{69.9, 105, ""},
		{70.0, 105, Warning},
		{70.1, 105, Warning},
		{72.9, 105, Warning},
		{94.9, 105, Warning},
		{95.0, 105, Critical},
		{104, 105, Critical},
		// A low crit: 10 °C below it wins over the 70 °C warning.
		{65.0, 75, Critical},
		{64.9, 75, ""},
		// No crit from the sensor: 70 is a warning however hot.
		{120, 0, Warning},
	}
	for _, tt := range tests {
		inv := healthy()
		inv.NICs[0].TempC = fp(tt.temp)
		inv.NICs[0].TempCritC = fp(tt.crit)
		if tt.crit == 0 {
			inv.NICs[0].TempCritC = nil
		}
		got := find(run(t, inv, Options{}), "nic.temperature_high")
		switch {
		case tt.want == "" && len(got) != 0:
			t.Errorf("%.1f °C (crit %v): %s; want none", tt.temp, tt.crit, got[0].Severity)
		case tt.want != "" && (len(got) != 1 || got[0].Severity != tt.want):
			t.Errorf("%.1f °C (crit %v): %+v; want one %s", tt.temp, tt.crit, got, tt.want)
		}
	}
	// The text view marks the same threshold.
	inv := healthy()
	inv.NICs[0].TempC = fp(70)
	var b bytes.Buffer
	if err := WriteText(&b, run(t, inv, Options{}), termui.Style{Colour: true}, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\x1b[33m70.0 °C") {
		t.Errorf("70.0 °C is not marked in the text view:\n%s", b.String())
	}
	inv.NICs[0].TempC = fp(69.9)
	b.Reset()
	WriteText(&b, run(t, inv, Options{}), termui.Style{Colour: true}, 0)
	if strings.Contains(b.String(), "\x1b[33m69.9") {
		t.Error("69.9 °C is marked in the text view")
	}
}

// TestSpeedLimitedSlot: a PCIe 4.0 card in a slot whose port can do only
// 8 GT/s trains at 8 GT/s: the slot is the cause (move the card), not a
// power-saving drop. A slot capable of 16 GT/s makes the same drop a
// speed-only one to re-check under load.
func TestSpeedLimitedSlot(t *testing.T) {
	gen4 := func(slotGTs float64) *Report {
		inv := healthy()
		p := inv.NICs[0].PCIe
		p.MaxGTs, p.CurGTs, p.Downgraded = fp(16), fp(8), true
		p.Upstream.MaxGTs, p.Upstream.MaxWidth = fp(slotGTs), ip(16)
		return run(t, inv, Options{})
	}
	f := find(gen4(8), "pcie.link_downgraded")
	if len(f) != 1 || f[0].Evidence["cause"] != "slot" || f[0].Severity != Warning ||
		!strings.Contains(f[0].Summary, "the slot (port 0000:00:01.1) is capable of only 8.0 GT/s x16") {
		t.Errorf("Gen4 card in a Gen3 slot: %+v", f)
	}
	f = find(gen4(16), "pcie.link_downgraded")
	if len(f) != 1 || f[0].Evidence["cause"] != "speed" || !strings.Contains(f[0].Summary, "power saving") {
		t.Errorf("Gen4 card in a Gen4 slot at Gen3: %+v", f)
	}
	// Width: a x16 card trained x8 in a slot wired x8 is the slot; in a
	// slot wired x16 it is training (reseat).
	x8 := func(slotWidth int) *Report {
		inv := healthy()
		p := inv.NICs[0].PCIe
		p.CurWidth, p.Downgraded, p.EffGbps = ip(8), true, fp(57.21)
		p.Upstream.MaxWidth = ip(slotWidth)
		return run(t, inv, Options{})
	}
	if f := find(x8(8), "pcie.link_downgraded"); len(f) != 1 || f[0].Evidence["cause"] != "slot" || f[0].Severity != Critical {
		t.Errorf("x16 card in a x8 slot: %+v", f)
	}
	if f := find(x8(16), "pcie.link_downgraded"); len(f) != 1 || f[0].Evidence["cause"] != "training" {
		t.Errorf("x16 card trained x8 in a x16 slot: %+v", f)
	}
	// Trained x8 but still above the line rate: a warning, not critical.
	inv := healthy()
	inv.NICs[0].SpeedMbps = ip(40000)
	p := inv.NICs[0].PCIe
	p.CurWidth, p.Downgraded, p.EffGbps = ip(8), true, fp(57.21)
	if f := find(run(t, inv, Options{}), "pcie.link_downgraded"); len(f) != 1 || f[0].Severity != Warning {
		t.Errorf("x8 under a 40G port: %+v", f)
	}
}

// TestRootCauseFirst: within a severity, a finding that causes another
// comes first (the walkthrough's D5): the downgraded link before the
// bandwidth it leaves, a dark lane before the FEC errors.
func TestRootCauseFirst(t *testing.T) {
	f := []Finding{
		{ID: "pcie.bandwidth_below_line_rate", Severity: Critical, Subject: "a"},
		{ID: "irq.spans_l3_domains", Severity: Warning, Subject: "a"},
		{ID: "pcie.link_downgraded", Severity: Critical, Subject: "a"},
		{ID: "fec.uncorrectable", Severity: Warning, Subject: "a"},
		{ID: "cpu.governor_not_performance", Severity: Warning, Subject: "cpu"},
		{ID: "link.down", Severity: Warning, Subject: "b"},
		{ID: "irqbalance.running", Severity: Info, Subject: "irqbalance"},
		{ID: "transceiver.lane_dark", Severity: Critical, Subject: "a"},
	}
	sortFindings(f)
	var got []string
	for _, x := range f {
		got = append(got, x.ID)
	}
	want := []string{"transceiver.lane_dark", "pcie.link_downgraded", "pcie.bandwidth_below_line_rate",
		"fec.uncorrectable", "link.down", "cpu.governor_not_performance", "irq.spans_l3_domains", "irqbalance.running"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("order:\n got %q\nwant %q", got, want)
	}
}

// TestIRQFixNamesFreeCPUs: the IRQ fix says which CPUs it keeps free for
// the application and why (the walkthrough's D2).
func TestIRQFixNamesFreeCPUs(t *testing.T) {
	inv := healthy()
	inv.NICs[0].IRQs[0].Effective, inv.NICs[0].IRQs[0].Affinity, inv.NICs[0].IRQs[0].Counts = []int{2}, []int{2}, map[string]uint64{"2": 1000}
	f := find(run(t, inv, Options{}), "irq.spans_l3_domains")
	if len(f) != 1 {
		t.Fatalf("%+v", f)
	}
	a := f[0].Fix[0].Action
	for _, want := range []string{"to CPUs 7-11", "keeping CPU 6 free for your application", "shares L3 domain 6-11 with them", "taskset -c 6"} {
		if !strings.Contains(a, want) {
			t.Errorf("IRQ fix %q lacks %q", a, want)
		}
	}
	if c := f[0].Fix[0].Command; len(c) != 3 || !strings.Contains(c[2], "do echo 7-11 > /proc/irq/$irq/smp_affinity_list") {
		t.Errorf("command = %q", c)
	}
}

// TestBootInterruptsNotServed: a CPU that took a handful of an IRQ's
// interrupts (left from boot, before the affinity was set) does not count
// as serving it (the walkthrough's D8); 100 or more, at 1% or more, does.
func TestBootInterruptsNotServed(t *testing.T) {
	q := inventory.IRQ{IRQ: 112, Counts: map[string]uint64{"4": 2, "11": 12}, Total: 14}
	if got := ServedOn(q); len(got) != 0 {
		t.Errorf("served on %v; want none (14 interrupts in all)", got)
	}
	q = inventory.IRQ{IRQ: 99, Counts: map[string]uint64{"0": 324, "7": 4360, "3": 99}, Total: 4783}
	if got := ServedOn(q); len(got) != 2 || got[0] != 0 || got[1] != 7 {
		t.Errorf("served on %v; want [0 7]", got)
	}
	// 100 exactly counts; but not when it is under 1% of the total.
	q = inventory.IRQ{Counts: map[string]uint64{"1": 100, "2": 9900}, Total: 10000}
	if got := ServedOn(q); len(got) != 2 {
		t.Errorf("100 of 10000: served on %v; want [1 2]", got)
	}
	q = inventory.IRQ{Counts: map[string]uint64{"1": 100, "2": 19900}, Total: 20000}
	if got := ServedOn(q); len(got) != 1 || got[0] != 2 {
		t.Errorf("100 of 20000: served on %v; want [2]", got)
	}
}

// TestUnusedPortNamed: a down port of a card whose other port is up gets
// one finding (its RoCE port folded in) whose fix names the port in use
// (the walkthrough's D6); an InfiniBand port keeps its own finding.
func TestUnusedPortNamed(t *testing.T) {
	inv := healthy()
	second := inv.NICs[0]
	second.Interface, second.PCI, second.Operstate, second.SpeedMbps, second.IRQs = "enp1s0f1np1", "0000:01:00.1", "down", nil, nil
	second.RDMA = []inventory.RDMAPort{{Device: "rocep1s0f1", Port: 1, State: "DOWN", PhysState: "Disabled", LinkLayer: "Ethernet"}}
	inv.NICs = append(inv.NICs, second)
	rep := run(t, inv, Options{})
	if f := find(rep, "rdma.port_not_active"); len(f) != 0 {
		t.Errorf("a RoCE port down with its netdev raised its own finding: %+v", f)
	}
	f := find(rep, "link.down")
	if len(f) != 1 || !strings.Contains(f[0].Summary, "RoCE port rocep1s0f1/1 is down with it") {
		t.Fatalf("link.down: %+v", f)
	}
	last := f[0].Fix[len(f[0].Fix)-1]
	if Quote(last.Command) != "linerate doctor --iface enp1s0f0np0" {
		t.Errorf("the unused-port fix = %+v", last)
	}
	inv.NICs[1].RDMA[0].LinkLayer = "InfiniBand"
	if f := find(run(t, inv, Options{}), "rdma.port_not_active"); len(f) != 1 || !strings.Contains(strings.Join(f[0].FixLines(), "\n"), "opensm") {
		t.Errorf("InfiniBand port: %+v", f)
	}
}

// TestStackFromHost: the chain's TCP stack follows the host's
// tcp_timestamps and the --peer's address family.
func TestStackFromHost(t *testing.T) {
	inv := healthy()
	inv.Sysctl["net.ipv4.tcp_timestamps"] = int64(0)
	l := run(t, inv, Options{}).NICs[0].Limits
	if got := l.Chain[2].Detail; got != "MTU 9000, IPv4, no timestamps: 8960/9038 of line rate" {
		t.Errorf("no timestamps: %q", got)
	}
	inv.Sysctl["net.ipv4.tcp_timestamps"] = int64(1)
	rep := run(t, inv, Options{PathMTU: &PathMTU{Peer: "fd00::2", Interface: "enp1s0f0np0", MTU: 9000, OK: true}})
	if got := rep.NICs[0].Limits.Chain[2].Detail; got != "MTU 9000, IPv6 + timestamps: 8928/9038 of line rate" {
		t.Errorf("IPv6 peer: %q", got)
	}
	rep = run(t, inv, Options{PathMTU: &PathMTU{Peer: "::ffff:198.18.0.2", MTU: 9000, OK: true}})
	if got := rep.NICs[0].Limits.Chain[2].Detail; !strings.Contains(got, "IPv4 + timestamps") {
		t.Errorf("IPv4-mapped peer: %q", got)
	}
}

// TestSocketBuffersOneModel: the walkthrough's D1 on the XL710 host (Linux
// 4.15, tcp_adv_win_scale=1, 40 Gbit/s at 1 ms): the 6 MiB tcp_rmem max
// is caught (a window of 3 MiB against a BDP of 5 MB), and the threshold,
// the "tops out near" figure and the recommendation agree.
func TestSocketBuffersOneModel(t *testing.T) {
	rep := diagnoseTree(t, "xeon-xl710-gen2-x4", Options{})
	f := find(rep, "sysctl.socket_buffers_small")
	if len(f) != 1 {
		t.Fatalf("%+v", f)
	}
	below := f[0].Evidence["below_need"].(map[string]any)
	if below["net.ipv4.tcp_rmem"] != int64(6291456) || below["net.ipv4.tcp_wmem"] != int64(4194304) {
		t.Errorf("below_need = %v", below)
	}
	needs := f[0].Evidence["needed_bytes"].(map[string]any)
	if needs["net.ipv4.tcp_rmem"] != int64(10_000_000) || needs["net.core.rmem_max"] != int64(5_000_000) {
		t.Errorf("needed_bytes = %v", needs)
	}
	// min(6 MiB × 1/2, 4 MiB × 1/2) = 2 MiB × 8 / 1 ms = 16.8; rmem_max
	// 212992 doubled then halved: 1.7.
	for _, want := range []string{"tops out near 16.8 Gbit/s", "near 1.7 Gbit/s", "net.ipv4.tcp_rmem max 6.0 MiB of the 9.5 MiB it needs", "a buffer holds about twice its window"} {
		if !strings.Contains(f[0].Summary, want) {
			t.Errorf("summary lacks %q: %s", want, f[0].Summary)
		}
	}
	if f[0].Evidence["recommended_bytes"] != int64(16<<20) || Quote(f[0].Fix[0].Command) != "sysctl -w net.core.rmem_max=16777216 net.core.wmem_max=16777216 'net.ipv4.tcp_rmem=4096 87380 16777216' 'net.ipv4.tcp_wmem=4096 16384 16777216'" {
		t.Errorf("fix = %q, recommended %v", Quote(f[0].Fix[0].Command), f[0].Evidence["recommended_bytes"])
	}

	// The same host with tcp_adv_win_scale=2: 3/4 of a receive buffer is
	// window, so tcp_rmem needs 6,666,667 bytes and its 6 MiB is still
	// short; tcp_wmem (1/2) needs 10,000,000.
	inv := healthy()
	inv.Host.Kernel = "4.15.18-30-pve"
	inv.NICs[0].SpeedMbps = ip(40000)
	inv.Sysctl["net.ipv4.tcp_adv_win_scale"] = int64(2)
	inv.Sysctl["net.ipv4.tcp_rmem"] = []int64{4096, 87380, 6291456}
	f = find(run(t, inv, Options{}), "sysctl.socket_buffers_small")
	if len(f) != 1 || !strings.Contains(f[0].Summary, "75% of a receive buffer and 50% of a send buffer is window") ||
		!strings.Contains(f[0].Summary, "net.ipv4.tcp_rmem max 6.0 MiB of the 6.4 MiB it needs") {
		t.Errorf("3/4 share: %+v", f)
	}
	// A 7 MiB tcp_rmem is enough at 3/4 (5.25 MiB of window ≥ 5 MB).
	inv.Sysctl["net.ipv4.tcp_rmem"] = []int64{4096, 87380, 7 << 20}
	if f := find(run(t, inv, Options{}), "sysctl.socket_buffers_small"); len(f) != 0 {
		t.Errorf("7 MiB at 3/4 flagged: %s", f[0].Summary)
	}
	// A limit whose window is past the BDP is not said as a rate above the
	// line: 64 MiB of rmem_max/wmem_max lets a flow that sets its buffer
	// fill 40 Gbit/s at 1 ms, while a 64 KiB tcp_rmem (3/4 of it window) holds an autotuned
	// one near 0.4.
	inv.Sysctl["net.ipv4.tcp_rmem"] = []int64{4096, 65536, 65536}
	inv.Sysctl["net.core.rmem_max"], inv.Sysctl["net.core.wmem_max"] = int64(64<<20), int64(64<<20)
	f = find(run(t, inv, Options{}), "sysctl.socket_buffers_small")
	if len(f) != 1 || !strings.Contains(f[0].Summary, "An autotuned flow tops out near 0.4 Gbit/s, one that sets its buffer (iperf3 -w) can fill it") {
		t.Errorf("explicit buffer past the BDP: %+v", f)
	}
}

// TestModuleTemperatureThresholds pins transceiver.temperature_high at the
// module's own thresholds: a warning at (not above) its high warning,
// critical at its high alarm, and the module's flags where it gives no
// thresholds.
func TestModuleTemperatureThresholds(t *testing.T) {
	warn, alarm := 70.0, 75.0
	tests := []struct {
		temp   float64
		th     bool
		alarms []string
		want   Severity
		basis  string
	}{
		{69.9, true, nil, "", ""},
		{70.0, true, nil, Warning, "at or above its own warning threshold of 70.0 °C"},
		{74.9, true, nil, Warning, "warning threshold"},
		{75.0, true, nil, Critical, "at or above its own alarm threshold of 75.0 °C"},
		{50, false, nil, "", ""},
		{50, false, []string{"temperature_high_warn"}, Warning, "its high-temperature warning flag is set"},
		{50, false, []string{"temperature_high_alarm"}, Critical, "its high-temperature alarm flag is set"},
		{50, true, []string{"temperature_high_alarm"}, Critical, "alarm flag"},
	}
	for _, tt := range tests {
		inv := healthy()
		m := &inventory.Transceiver{Readable: true, Module: &sff.Module{Identifier: "QSFP28", TemperatureC: fp(tt.temp), Alarms: tt.alarms}}
		if tt.th {
			m.Thresholds = &sff.Thresholds{TemperatureHighWarnC: &warn, TemperatureHighAlarmC: &alarm}
		}
		inv.NICs[0].Transceiver = m
		got := find(run(t, inv, Options{}), "transceiver.temperature_high")
		switch {
		case tt.want == "" && len(got) != 0:
			t.Errorf("%.1f °C %v: %s; want none", tt.temp, tt.alarms, got[0].Summary)
		case tt.want != "" && (len(got) != 1 || got[0].Severity != tt.want || !strings.Contains(got[0].Summary, tt.basis)):
			t.Errorf("%.1f °C %v: %+v; want one %s saying %q", tt.temp, tt.alarms, got, tt.want, tt.basis)
		}
	}
}
