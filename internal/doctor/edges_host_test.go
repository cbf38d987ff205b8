package doctor

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/limits"
	"github.com/linerate/linerate/internal/placement"
)

// twoNICs returns the healthy host with a second 100 Gbit/s card.
func twoNICs() *inventory.Inventory {
	inv := healthy()
	second := inv.NICs[0]
	second.Interface, second.PCI, second.CardPorts = "enp2s0f0np0", "0000:02:00.0", []string{"enp2s0f0np0"}
	second.PCIe = nil
	second.IRQs, second.RDMA = nil, nil
	inv.NICs = append(inv.NICs, second)
	return inv
}

// TestSocketBuffersEdges: a limit exactly at its need is enough, one
// byte less is not; the line rate named is the first of equally fast
// NICs; the RTT is in milliseconds.
func TestSocketBuffersEdges(t *testing.T) {
	inv := twoNICs()
	inv.Sysctl["net.ipv4.tcp_rmem"] = []int64{4096, 87380, 4096}
	rep := run(t, inv, Options{RTT: 500 * time.Microsecond})
	f := find(rep, "sysctl.socket_buffers_small")
	if len(f) != 1 || f[0].Evidence["line_rate"] != "enp1s0f0np0 at 100 Gbit/s" || f[0].Evidence["rtt_ms"] != 0.5 {
		t.Fatalf("%+v", f)
	}
	if rep.Options.RTTMs != 0.5 {
		t.Errorf("report RTT %v ms; want 0.5", rep.Options.RTTMs)
	}
	need := f[0].Evidence["needed_bytes"].(map[string]any)["net.ipv4.tcp_rmem"].(int64)
	inv.Sysctl["net.ipv4.tcp_rmem"] = []int64{4096, 87380, need}
	if f := find(run(t, inv, Options{RTT: 500 * time.Microsecond}), "sysctl.socket_buffers_small"); len(f) != 0 {
		t.Errorf("tcp_rmem exactly at its need %d: %s", need, f[0].Summary)
	}
	inv.Sysctl["net.ipv4.tcp_rmem"] = []int64{4096, 87380, need - 1}
	if f := find(run(t, inv, Options{RTT: 500 * time.Microsecond}), "sysctl.socket_buffers_small"); len(f) != 1 {
		t.Errorf("tcp_rmem one byte under its need: %+v", f)
	}
}

// TestFlowCapsZero: a buffer maximum of 0 caps the flow at 0.0 Gbit/s,
// whichever key comes first; no key at all is "?".
func TestFlowCapsZero(t *testing.T) {
	for _, key := range []string{"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"} {
		inv := healthy()
		inv.Sysctl[key] = []int64{0, 0, 0}
		auto, _ := (&diag{inv: inv, opts: Options{RTT: DefaultRTT}}).flowCaps(BufferModel(inv))
		if auto != "0.0" {
			t.Errorf("%s max 0: autotuned cap %q; want 0.0", key, auto)
		}
	}
	inv := healthy()
	inv.Sysctl = map[string]any{}
	if auto, explicit := (&diag{inv: inv, opts: Options{RTT: DefaultRTT}}).flowCaps(BufferModel(inv)); auto != "?" || explicit != "?" {
		t.Errorf("no sysctls: %q, %q", auto, explicit)
	}
}

// TestIRQBalanceNoIRQs: with no NIC IRQs known there is nothing to ban.
func TestIRQBalanceNoIRQs(t *testing.T) {
	inv := healthy()
	inv.NICs[0].IRQs = nil
	inv.Host.IRQBalance.Running, inv.Host.IRQBalance.PIDs = true, []int{812}
	f := find(run(t, inv, Options{}), "irqbalance.running")
	if len(f) != 1 || Quote(f[0].Fix[0].Command) != "systemctl restart irqbalance" {
		t.Errorf("%+v", f)
	}
}

// TestAffinityFixArgs: the tune command names --app-cpus only when given.
func TestAffinityFixArgs(t *testing.T) {
	v := &nicView{NIC: &inventory.NIC{Interface: "eth0", IRQs: []inventory.IRQ{{IRQ: 40}}}}
	pl := placement.Placement{IRQCPUs: []int{7}, AppCPUs: []int{6}}
	fx := affinityFix(v, pl, nil, false)
	if got := Quote(fx[len(fx)-1].Command); got != "linerate tune --iface eth0 --apply" {
		t.Errorf("no app CPUs: %q", got)
	}
	fx = affinityFix(v, pl, []int{6}, false)
	if got := Quote(fx[len(fx)-1].Command); got != "linerate tune --iface eth0 --app-cpus 6 --apply" {
		t.Errorf("app CPU 6: %q", got)
	}
}

// twoNodes returns the healthy host split into NUMA nodes 0 (0-5) and 1
// (6-11), its NIC on node 0.
func twoNodes() *inventory.Inventory {
	inv := healthy()
	inv.CPU.NUMANodes = map[string][]int{"0": cpulist.MustParse("0-5"), "1": cpulist.MustParse("6-11")}
	return inv
}

// TestRemoteNUMACount: only the IRQs routed off the node are counted.
func TestRemoteNUMACount(t *testing.T) {
	inv := twoNodes()
	for i := range inv.NICs[0].IRQs[:4] {
		q := &inv.NICs[0].IRQs[i]
		q.Affinity, q.Effective, q.Counts = []int{i}, []int{i}, map[string]uint64{itoa(i): 1000}
	}
	f := find(run(t, inv, Options{}), "irq.remote_numa")
	if len(f) != 1 || !strings.HasPrefix(f[0].Summary, "1 of 5 IRQs of enp1s0f0np0 (NUMA node 0, CPUs 0-5) are routed to CPU 11") ||
		!slices.Equal(f[0].Evidence["irqs"].([]int), []int{104}) {
		t.Errorf("%+v", f)
	}
}

// TestAppCPUDefaultMask: an IRQ with the default all-CPU mask and no
// effective affinity counts on the application's CPU only if served
// there.
func TestAppCPUDefaultMask(t *testing.T) {
	inv := healthy()
	q := &inv.NICs[0].IRQs[0]
	q.Affinity, q.Effective = cpulist.MustParse("0-11"), nil
	if f := find(run(t, inv, Options{AppCPUs: []int{3}}), "irq.on_app_cpu"); len(f) != 0 {
		t.Errorf("default mask, served on 7: %+v", f)
	}
	q.Counts = map[string]uint64{"3": 1000}
	if f := find(run(t, inv, Options{AppCPUs: []int{3}}), "irq.on_app_cpu"); len(f) != 1 {
		t.Errorf("default mask, served on 3: %+v", f)
	}
}

// TestDiagnoseOptionsEcho: the report repeats the options, never null.
func TestDiagnoseOptionsEcho(t *testing.T) {
	rep := run(t, healthy(), Options{Ifaces: []string{"enp1s0f0np0"}, AppCPUs: []int{6}})
	if !slices.Equal(rep.Options.Ifaces, []string{"enp1s0f0np0"}) || !slices.Equal(rep.Options.AppCPUs, []int{6}) {
		t.Errorf("options %+v", rep.Options)
	}
	rep = run(t, healthy(), Options{})
	if rep.Options.Ifaces == nil || len(rep.Options.Ifaces) != 0 || rep.Options.AppCPUs == nil || len(rep.Options.AppCPUs) != 0 {
		t.Errorf("no options: %+v", rep.Options)
	}
	// A host whose online CPUs are unknown cannot refuse --app-cpus.
	inv := healthy()
	inv.CPU.Online = nil
	if _, err := Diagnose(inv, Options{AppCPUs: []int{3}}); err != nil {
		t.Errorf("unknown online CPUs: %v", err)
	}
}

// TestQdiscShapesLine: a qdisc shapes the line rate only below it.
func TestQdiscShapesLine(t *testing.T) {
	for _, tt := range []struct {
		rate float64
		want string
	}{{100, "100GbE link"}, {200, "100GbE link"}, {40, "tbf qdisc shaped to 40 Gbit/s"}} {
		inv := healthy()
		inv.NICs[0].Qdisc = &inventory.Qdisc{Kind: "tbf", RateGbps: fp(tt.rate)}
		d := &diag{inv: inv, opts: Options{RTT: DefaultRTT}}
		if got := d.view(&inv.NICs[0], false).lineDetail; got != tt.want {
			t.Errorf("qdisc at %v: %q; want %q", tt.rate, got, tt.want)
		}
	}
}

// TestFastPortEdge: a down port of an unknown driver matters from
// 10 Gbit/s.
func TestFastPortEdge(t *testing.T) {
	for _, tt := range []struct {
		speed int
		want  bool
	}{{10000, true}, {9999, false}, {1000, false}} {
		v := &nicView{NIC: &inventory.NIC{Driver: "foo"}, line: 0}
		v.line = limits.Gbps(float64(tt.speed) / 1000)
		if got := v.fast(); got != tt.want {
			t.Errorf("%d Mbit/s: fast %v", tt.speed, got)
		}
	}
}

// TestCauseRankAndCounts: the first root cause sorts first; Count counts.
func TestCauseRankAndCounts(t *testing.T) {
	f := []Finding{{ID: "fec.off", Severity: Warning}, {ID: "transceiver.unreadable", Severity: Warning}}
	sortFindings(f)
	if f[0].ID != "transceiver.unreadable" {
		t.Errorf("order %v", f)
	}
	r := &Report{Findings: []Finding{{Severity: Critical}, {Severity: Warning}, {Severity: Warning}}}
	if r.Count(Warning) != 2 || r.Count(Critical) != 1 || r.Count(Info) != 0 || r.Worst() != Critical {
		t.Errorf("count %d %d %d, worst %s", r.Count(Warning), r.Count(Critical), r.Count(Info), r.Worst())
	}
}

// TestTemperatureNamesModel: the summary names the card's model if known.
func TestTemperatureNamesModel(t *testing.T) {
	inv := healthy()
	inv.NICs[0].TempC = fp(80)
	f := find(run(t, inv, Options{}), "nic.temperature_high")
	if len(f) != 1 || !strings.HasPrefix(f[0].Summary, "enp1s0f0np0 (ConnectX-5) is at 80.0 °C, critical at 105.0 °C:") {
		t.Errorf("%+v", f)
	}
	inv.NICs[0].Model = ""
	f = find(run(t, inv, Options{}), "nic.temperature_high")
	if len(f) != 1 || !strings.HasPrefix(f[0].Summary, "enp1s0f0np0 is at 80.0 °C") {
		t.Errorf("no model: %+v", f)
	}
}

// TestCardOf: a PCI address names its card; a damaged snapshot's address
// without a function (or none at all) is its own card, never a crash.
func TestCardOf(t *testing.T) {
	for in, want := range map[string]string{"0000:01:00.0": "0000:01:00", "0000:01:00.1": "0000:01:00", "": "", "x": "x", "0000:01:00.": "0000:01:00"} {
		if got := cardOf(in); got != want {
			t.Errorf("cardOf(%q) = %q, want %q", in, got, want)
		}
	}
}
