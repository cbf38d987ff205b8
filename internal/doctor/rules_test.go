package doctor

import (
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/inventory"
)

func ip(v int) *int         { return &v }
func fp(v float64) *float64 { return &v }

// healthy returns a host that no rule may flag: 12 CPUs in two L3
// domains, one NUMA node, performance governor, a ConnectX-5 at Gen3 x16,
// 100 Gbit/s, MTU 9000, 12 queues, IRQs on 7-11, 45 °C, big buffers.
func healthy() *inventory.Inventory {
	all := cpulist.MustParse("0-11")
	nic := inventory.NIC{
		Interface: "enp1s0f0np0", Kind: "pci", PCI: "0000:01:00.0", Driver: "mlx5_core",
		VendorID: "0x15b3", DeviceID: "0x1017", Model: "ConnectX-5", NUMANode: ip(0),
		MTU: ip(9000), SpeedMbps: ip(100000), Operstate: "up", Queues: inventory.Queues{RX: 12, TX: 12},
		PCIe: &inventory.PCIe{Reported: true, MaxGTs: fp(8), MaxWidth: ip(16), CurGTs: fp(8), CurWidth: ip(16),
			RawGbps: fp(126.03), EffGbps: fp(114.41), MPSAssumed: true,
			Upstream: &inventory.Upstream{PCI: "0000:00:01.1", MaxGTs: fp(32), MaxWidth: ip(16)}},
		TempC: fp(45), TempCritC: fp(105),
		RDMA:      []inventory.RDMAPort{{Device: "rocep1s0f0", Port: 1, State: "ACTIVE", PhysState: "LinkUp", RateGbps: 100, LinkLayer: "Ethernet"}},
		CardPorts: []string{"enp1s0f0np0"},
	}
	for i, cpu := range []int{7, 8, 9, 10, 11} {
		nic.IRQs = append(nic.IRQs, inventory.IRQ{IRQ: 100 + i, Name: "mlx5_comp", Affinity: []int{cpu}, Effective: []int{cpu},
			Counts: map[string]uint64{itoa(cpu): 1000}, Total: 1000})
	}
	return &inventory.Inventory{
		Host: inventory.Host{Hostname: "h", Kernel: "6.8.0"},
		CPU: inventory.CPU{Count: 12, Online: all, L3Domains: [][]int{cpulist.MustParse("0-5"), cpulist.MustParse("6-11")},
			NUMANodes: map[string][]int{"0": all}, Governors: map[string][]int{"performance": all}},
		NICs: []inventory.NIC{nic},
		Sysctl: map[string]any{
			"net.core.rmem_max": int64(33554432), "net.core.wmem_max": int64(33554432),
			"net.ipv4.tcp_rmem": []int64{4096, 131072, 33554432}, "net.ipv4.tcp_wmem": []int64{4096, 16384, 33554432},
		},
	}
}

func itoa(n int) string { return cpulist.Format([]int{n}) }

func run(t *testing.T, inv *inventory.Inventory, opts Options) *Report {
	t.Helper()
	rep, err := Diagnose(inv, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func find(rep *Report, id string) []Finding {
	var out []Finding
	for _, f := range rep.Findings {
		if f.ID == id {
			out = append(out, f)
		}
	}
	return out
}

func TestHealthyHasNoFindings(t *testing.T) {
	rep := run(t, healthy(), Options{AppCPUs: []int{6}})
	for _, f := range rep.Findings {
		t.Errorf("healthy host flagged: %s %s: %s", f.Severity, f.ID, f.Summary)
	}
	l := rep.NICs[0].Limits
	if l.Bottleneck != "line_rate" || l.TCPGoodput == nil || l.TCPGoodput.String() != "99.00" {
		t.Errorf("limits = %+v", l)
	}
}

// Each case mutates the healthy host and expects one finding of id with
// severity sev, whose text mentions want.
func TestRules(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*inventory.Inventory)
		opts   Options
		id     string
		sev    Severity
		want   []string
	}{
		{"x4 training", func(inv *inventory.Inventory) {
			p := inv.NICs[0].PCIe
			p.CurWidth, p.Downgraded, p.RawGbps, p.EffGbps = ip(4), true, fp(31.51), fp(28.6)
		}, Options{}, "pcie.link_downgraded", Critical, []string{"8.0 GT/s x4", "reseat"}},
		{"x8 slot", func(inv *inventory.Inventory) {
			p := inv.NICs[0].PCIe
			p.CurWidth, p.Downgraded, p.EffGbps = ip(8), true, fp(57.2)
			p.Upstream.MaxWidth = ip(8)
		}, Options{}, "pcie.link_downgraded", Critical, []string{"slot", "0000:00:01.1"}},
		{"speed only", func(inv *inventory.Inventory) {
			p := inv.NICs[0].PCIe
			p.CurGTs, p.Downgraded, p.EffGbps = fp(2.5), true, fp(29.1)
		}, Options{}, "pcie.link_downgraded", Warning, []string{"under load"}},
		{"below line rate", func(inv *inventory.Inventory) {
			p := inv.NICs[0].PCIe
			p.CurWidth, p.Downgraded, p.EffGbps = ip(8), true, fp(57.2)
		}, Options{}, "pcie.bandwidth_below_line_rate", Critical, []string{"57.2", "× 8 lanes × 128b/130b = 63.02", "PCIe 3.0 x16"}},
		{"link down", func(inv *inventory.Inventory) {
			inv.NICs[0].Operstate, inv.NICs[0].SpeedMbps = "down", nil
		}, Options{}, "link.down", Warning, []string{"operstate down"}},
		{"mtu 1500", func(inv *inventory.Inventory) { inv.NICs[0].MTU = ip(1500) }, Options{},
			"mtu.not_jumbo", Warning, []string{"MTU 1500", "ip link set dev enp1s0f0np0 mtu 9000"}},
		{"path mtu", func(*inventory.Inventory) {}, Options{PathMTU: &PathMTU{Peer: "198.18.0.2", Interface: "lab0", MTU: 9000, Largest: 1500, Probes: 12, Detail: "timeout"}},
			"mtu.path_mismatch", Critical, []string{"largest that passed is 1500", "mtu 1500"}},
		{"small buffers", func(inv *inventory.Inventory) {
			inv.Sysctl["net.core.rmem_max"] = int64(212992)
			inv.Sysctl["net.ipv4.tcp_rmem"] = []int64{4096, 131072, 6291456}
		}, Options{}, "sysctl.socket_buffers_small", Warning, []string{"net.core.rmem_max 208 KiB of the 11.9 MiB it needs", "net.ipv4.tcp_rmem max 6.0 MiB of the 23.8 MiB it needs",
			"tops out near 25.2 Gbit/s", "iperf3 -w) tops out near 1.7 Gbit/s", "sysctl -w net.core.rmem_max=33554432 'net.ipv4.tcp_rmem=4096 131072 33554432'"}},
		{"one queue", func(inv *inventory.Inventory) { inv.NICs[0].Queues = inventory.Queues{RX: 1, TX: 1} }, Options{},
			"queues.too_few", Warning, []string{"1 receive queue", "ethtool -L enp1s0f0np0 combined 8"}},
		{"powersave", func(inv *inventory.Inventory) {
			inv.CPU.Governors = map[string][]int{"powersave": cpulist.MustParse("0-11")}
		}, Options{}, "cpu.governor_not_performance", Warning, []string{"powersave on CPUs 0-11", "cpupower -c 0-11"}},
		{"spans L3", func(inv *inventory.Inventory) {
			inv.NICs[0].IRQs[0].Effective, inv.NICs[0].IRQs[0].Counts = []int{2}, map[string]uint64{"2": 1000}
		}, Options{}, "irq.spans_l3_domains", Warning, []string{"2 L3 domains", "0-5"}},
		{"remote numa", func(inv *inventory.Inventory) {
			inv.CPU.NUMANodes = map[string][]int{"0": cpulist.MustParse("0-5"), "1": cpulist.MustParse("6-11")}
			inv.NICs[0].NUMANode = ip(0)
		}, Options{}, "irq.remote_numa", Warning, []string{"NUMA node 0", "numactl --cpunodebind=0"}},
		{"irq on app cpu", func(*inventory.Inventory) {}, Options{AppCPUs: []int{7}},
			"irq.on_app_cpu", Warning, []string{"application's CPU 7:", "to CPUs 6,8-11, keeping CPU 7 free for the application (--app-cpus)", "echo 6,8-11 >"}},
		{"hot", func(inv *inventory.Inventory) { inv.NICs[0].TempC = fp(74) }, Options{},
			"nic.temperature_high", Warning, []string{"74.0 °C"}},
		{"near crit", func(inv *inventory.Inventory) { inv.NICs[0].TempC = fp(96) }, Options{},
			"nic.temperature_high", Critical, []string{"critical at 105.0"}},
		{"rdma down", func(inv *inventory.Inventory) { inv.NICs[0].RDMA[0].State = "DOWN" }, Options{},
			"rdma.port_not_active", Warning, []string{"rocep1s0f0/1", "DOWN"}},
		{"irqbalance", func(inv *inventory.Inventory) {
			inv.Host.IRQBalance = inventory.IRQBalance{Running: true, PIDs: []int{812}}
		}, Options{}, "irqbalance.running", Info, []string{"pid 812", "--banirq=100"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := healthy()
			tt.mutate(inv)
			rep := run(t, inv, tt.opts)
			got := find(rep, tt.id)
			if len(got) != 1 {
				t.Fatalf("%d %s findings, want 1; all: %+v", len(got), tt.id, rep.Findings)
			}
			f := got[0]
			if f.Severity != tt.sev {
				t.Errorf("severity %s, want %s", f.Severity, tt.sev)
			}
			text := f.Summary + "\n" + strings.Join(f.FixLines(), "\n") + "\n" + evidence(f.Evidence)
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("finding does not mention %q:\n%s", w, text)
				}
			}
			if len(f.Fix) == 0 {
				t.Error("finding has no fix")
			}
		})
	}
}

func TestRTTScalesBuffers(t *testing.T) {
	// 32 MiB covers 100 Gbit/s at 1 ms but not at 10 ms.
	if n := len(find(run(t, healthy(), Options{RTT: 10 * time.Millisecond}), "sysctl.socket_buffers_small")); n != 1 {
		t.Errorf("at 10 ms RTT: %d findings, want 1", n)
	}
}

func TestVirtualInterface(t *testing.T) {
	// A lab veth: no PCIe, line rate from its tbf, MTU 9000 vs tiny buffers.
	inv := healthy()
	inv.NICs = nil
	inv.Virtual = []inventory.NIC{{Interface: "lab0", Kind: "veth", MTU: ip(1500), Operstate: "up", Queues: inventory.Queues{RX: 1, TX: 1},
		Qdisc: &inventory.Qdisc{Kind: "tbf", RateGbps: fp(25)}}}
	inv.Sysctl["net.ipv4.tcp_rmem"] = []int64{4096, 131072, 65536}
	rep := run(t, inv, Options{Ifaces: []string{"lab0"}})
	if len(rep.NICs) != 1 || rep.NICs[0].Limits.LineRate == nil || rep.NICs[0].Limits.LineRate.String() != "25.00" {
		t.Fatalf("veth limits = %+v", rep.NICs[0].Limits)
	}
	for _, id := range []string{"sysctl.socket_buffers_small", "mtu.not_jumbo", "queues.too_few"} {
		if len(find(rep, id)) != 1 {
			t.Errorf("lab0 lacks %s: %+v", id, rep.Findings)
		}
	}
	for _, id := range []string{"pcie.link_downgraded", "link.down"} {
		if len(find(rep, id)) != 0 {
			t.Errorf("lab0 flagged %s", id)
		}
	}
}

func TestBadOptions(t *testing.T) {
	if _, err := Diagnose(healthy(), Options{Ifaces: []string{"eth9"}}); err == nil || !strings.Contains(err.Error(), "enp1s0f0np0") {
		t.Errorf("unknown --iface: %v", err)
	}
	if _, err := Diagnose(healthy(), Options{AppCPUs: []int{64}}); err == nil || !strings.Contains(err.Error(), "CPU 64 is not online") {
		t.Errorf("--app-cpus 64: %v", err)
	}
	if _, err := Diagnose(healthy(), Options{AppCPUs: []int{10, 11, 12, 13}}); err == nil || !strings.Contains(err.Error(), "CPUs 12-13 are not online") {
		t.Errorf("--app-cpus 10-13: %v", err)
	}
}

func TestFindingsSorted(t *testing.T) {
	inv := healthy()
	inv.NICs[0].MTU = ip(1500)
	inv.Host.IRQBalance.Running = true
	inv.NICs[0].PCIe.CurWidth, inv.NICs[0].PCIe.Downgraded, inv.NICs[0].PCIe.EffGbps = ip(4), true, fp(28.6)
	rep := run(t, inv, Options{})
	for i := 1; i < len(rep.Findings); i++ {
		if rep.Findings[i-1].Severity.Rank() < rep.Findings[i].Severity.Rank() {
			t.Fatalf("findings not sorted by severity: %v then %v", rep.Findings[i-1].ID, rep.Findings[i].ID)
		}
	}
	if rep.Worst() != Critical {
		t.Errorf("worst = %s", rep.Worst())
	}
}

// TestPCIeBelowSumOfLinkedPorts: a dual-port 100 GbE card at PCIe 3.0 x16
// (114.41 Gbit/s effective) carries one port at line rate but not both:
// one warning for the card, not a critical, and none while the second port
// has no link.
func TestPCIeBelowSumOfLinkedPorts(t *testing.T) {
	dual := func(secondUp bool) *inventory.Inventory {
		inv := healthy()
		second := inv.NICs[0]
		second.Interface, second.PCI = "enp1s0f1np1", "0000:01:00.1"
		pcie := *inv.NICs[0].PCIe
		second.PCIe = &pcie
		second.IRQs = nil
		if !secondUp {
			second.Operstate, second.SpeedMbps = "down", nil
		}
		ports := []string{"enp1s0f0np0", "enp1s0f1np1"}
		inv.NICs[0].CardPorts, second.CardPorts = ports, ports
		inv.NICs = append(inv.NICs, second)
		return inv
	}
	got := find(run(t, dual(true), Options{}), "pcie.bandwidth_below_line_rate")
	if len(got) != 1 {
		t.Fatalf("%d findings for the card, want 1: %+v", len(got), got)
	}
	f := got[0]
	if f.Severity != Warning || f.Subject != "enp1s0f0np0" {
		t.Errorf("severity %s subject %s, want a warning on enp1s0f0np0", f.Severity, f.Subject)
	}
	if f.Evidence["needed_gbps"] != 200.0 || f.Evidence["effective_gbps"] != 114.41 || f.Evidence["share_of_line_rate_pct"] != 57 {
		t.Errorf("evidence = %v", f.Evidence)
	}
	text := f.Summary + "\n" + strings.Join(f.FixLines(), "\n") + "\n" + evidence(f.Evidence)
	for _, w := range []string{"8.0 GT/s x16 carries 114.41 Gbit/s", "enough for one port", "all 2 linked ports together (200 Gbit/s)",
		"at least 200 Gbit/s", "no PCIe link this card supports is enough", "× 16 lanes × 128b/130b = 126.03"} {
		if !strings.Contains(text, w) {
			t.Errorf("warning does not mention %q:\n%s", w, text)
		}
	}
	if n := len(find(run(t, dual(false), Options{}), "pcie.bandwidth_below_line_rate")); n != 0 {
		t.Errorf("second port without link: %d findings, want none", n)
	}
}
