package doctor

import (
	"slices"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/dcb"
	"github.com/linerate/linerate/internal/inventory"
)

// TestRoCETrees: doctor on each RoCE tree raises exactly the findings its
// HOST.md lists; the healthy one raises none at all.
func TestRoCETrees(t *testing.T) {
	const nic, gpu = "enp51s0np0", "0000:34:00.0"
	tests := []struct {
		host string
		want []string
	}{
		{"roce-healthy", nil},
		{"roce-pfc-off", []string{"critical roce.pfc_off " + nic, "warning roce.ecn_off " + nic}},
		{"roce-ecn-off", []string{"warning roce.ecn_off " + nic}},
		{"roce-trust-pcp", []string{"warning roce.trust_mismatch " + nic}},
		{"roce-v1-gid-only", []string{"warning roce.no_v2_gid " + nic}},
		{"roce-mtu-1500", []string{"warning mtu.not_jumbo " + nic, "warning roce.mtu_small " + nic}},
		{"rdma-errors", []string{"warning rdma.errors " + nic}},
		{"pcie-mrrs-512", []string{"info pcie.mrrs_small " + nic}},
		{"gpu-acs-redirect", []string{"warning pcie.acs_redirect " + gpu}},
		{"gpu-nic-far", []string{"warning gpu.nic_far 0000:b1:00.0"}},
		{"iommu-translated", []string{"info iommu.translated " + nic}},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			rep := diagnoseTree(t, tt.host, Options{})
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if got := findingSet(rep); !slices.Equal(got, want) {
				t.Errorf("findings:\n  got  %q\n  want %q", got, want)
			}
			if len(rep.Notes) > 0 {
				t.Errorf("notes on a complete tree: %q", rep.Notes)
			}
		})
	}
}

// TestRoCEEvidence checks each finding's arithmetic and its exact fix.
func TestRoCEEvidence(t *testing.T) {
	const nic = "enp51s0np0"
	f := findingOf(t, diagnoseTree(t, "roce-pfc-off", Options{}), "roce.pfc_off", nic)
	if f.Evidence["roce_priority"] != 3 || f.Evidence["trust"] != "dscp" || f.Evidence["ecn_rp"] != false ||
		!hasFix(f, "dcb pfc set dev enp51s0np0 prio-pfc 3:on") || !hasFix(f, "mlnx_qos -i enp51s0np0 --pfc 0,0,0,1,0,0,0,0") ||
		!hasFix(f, "echo 1 > /sys/class/net/enp51s0np0/ecn/roce_rp/enable/3") || !hasFix(f, "linerate tune --roce --iface enp51s0np0 --apply") {
		t.Errorf("pfc_off: %+v\n%s", f.Evidence, strings.Join(f.FixLines(), "\n"))
	}

	f = findingOf(t, diagnoseTree(t, "roce-ecn-off", Options{}), "roce.ecn_off", nic)
	if f.Evidence["ecn_np"] != true || f.Evidence["ecn_rp"] != false || hasFix(f, "roce_np/enable/3;") ||
		!hasFix(f, "echo 1 > /sys/class/net/enp51s0np0/ecn/roce_rp/enable/3") || !strings.Contains(f.Summary, "reaction point") {
		t.Errorf("ecn_off: %+v %s\n%s", f.Evidence, f.Summary, strings.Join(f.FixLines(), "\n"))
	}

	f = findingOf(t, diagnoseTree(t, "roce-trust-pcp", Options{}), "roce.trust_mismatch", nic)
	if f.Evidence["roce_lands_on"] != 0 || f.Evidence["trust"] != "pcp" || !hasFix(f, "dcb app add dev enp51s0np0 dscp-prio 26:3") ||
		!hasFix(f, "mlnx_qos -i enp51s0np0 --trust dscp") {
		t.Errorf("trust_mismatch: %+v\n%s", f.Evidence, strings.Join(f.FixLines(), "\n"))
	}

	f = findingOf(t, diagnoseTree(t, "roce-v1-gid-only", Options{}), "roce.no_v2_gid", nic)
	if !strings.Contains(f.Summary, "no RoCE v2 GID at all") || !hasFix(f, "cma_roce_mode -d rocep51s0 -p 1 -m 2") {
		t.Errorf("no_v2_gid: %s\n%s", f.Summary, strings.Join(f.FixLines(), "\n"))
	}

	f = findingOf(t, diagnoseTree(t, "roce-mtu-1500", Options{}), "roce.mtu_small", nic)
	// 1500 − 96 = 1404: the largest IB MTU not above it is 1024.
	if f.Evidence["active_mtu"] != 1024 || f.Evidence["netdev_mtu"] != 1500 || f.Evidence["mtu_for_4096"] != 4192 ||
		!strings.Contains(f.Summary, "is 1404") || !hasFix(f, "ip link set dev enp51s0np0 mtu 9000") {
		t.Errorf("mtu_small: %+v %s", f.Evidence, f.Summary)
	}

	f = findingOf(t, diagnoseTree(t, "rdma-errors", Options{}), "rdma.errors", nic)
	if f.Evidence["out_of_sequence"] != uint64(18234) || f.Evidence["packet_seq_err"] != uint64(912) ||
		f.Evidence["local_ack_timeout_err"] != uint64(37) || f.Evidence["rnr_nak_retry_err"] != nil ||
		!strings.Contains(f.Summary, "since the driver loaded") || !hasFix(f, "rdma statistic show link rocep51s0/1") {
		t.Errorf("rdma.errors: %+v %s", f.Evidence, f.Summary)
	}

	f = findingOf(t, diagnoseTree(t, "pcie-mrrs-512", Options{}), "pcie.mrrs_small", nic)
	if f.Evidence["mrrs_bytes"] != 512 || !hasFix(f, "setpci -s 0000:33:00.0 CAP_EXP+08.w=5000:7000") || !hasFix(f, "Caveat") {
		t.Errorf("mrrs_small: %+v\n%s", f.Evidence, strings.Join(f.FixLines(), "\n"))
	}

	f = findingOf(t, diagnoseTree(t, "gpu-acs-redirect", Options{}), "pcie.acs_redirect", "0000:34:00.0")
	if br, _ := f.Evidence["redirecting_bridges"].([]string); !slices.Equal(br, []string{"0000:32:04.0", "0000:32:00.0"}) ||
		f.Evidence["distance"] != "PIX" || !hasFix(f, "setpci -s 0000:32:00.0 ECAP_ACS+0x6.w=0000:000c") ||
		!hasFix(f, "pci=disable_acs_redir=0000:32:04.0;0000:32:00.0") {
		t.Errorf("acs_redirect: %+v\n%s", f.Evidence, strings.Join(f.FixLines(), "\n"))
	}

	f = findingOf(t, diagnoseTree(t, "gpu-nic-far", Options{}), "gpu.nic_far", "0000:b1:00.0")
	if f.Evidence["distance"] != "SYS" || f.Evidence["nic_numa_node"] != 0 || f.Evidence["gpu_numa_node"] != 1 || !hasFix(f, "a slot on NUMA node 0") {
		t.Errorf("gpu.nic_far: %+v\n%s", f.Evidence, strings.Join(f.FixLines(), "\n"))
	}

	f = findingOf(t, diagnoseTree(t, "iommu-translated", Options{}), "iommu.translated", nic)
	if f.Evidence["type"] != "DMA-FQ" || !hasFix(f, "grubby --update-kernel=ALL --args=iommu=pt") || !hasFix(f, "cat /sys/kernel/iommu_groups/3/type") {
		t.Errorf("iommu.translated: %+v\n%s", f.Evidence, strings.Join(f.FixLines(), "\n"))
	}

	// The ConnectX-5 RoCE baseline report's host: MTU 1500 gives RoCE
	// 1024, MRRS 512; no DCB was captured, so no PFC, ECN or trust claim.
	rep := diagnoseTree(t, "ryzen-7950x-cx5-x8-roce", Options{})
	set := findingSet(rep)
	for _, id := range []string{"warning roce.mtu_small enp3s0np0", "info pcie.mrrs_small enp3s0np0"} {
		if !slices.Contains(set, id) {
			t.Errorf("seed host lacks %s: %q", id, set)
		}
	}
	for _, id := range []string{"roce.pfc_off", "roce.ecn_off", "roce.trust_mismatch", "roce.no_v2_gid"} {
		if len(find(rep, id)) > 0 {
			t.Errorf("seed host raises %s without DCB or ECN facts", id)
		}
	}
	if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "DCB (PFC, ETS, APP table) not captured") }) {
		t.Errorf("no note about the DCB facts not captured: %q", rep.Notes)
	}
}

// roceInv is healthy() running RoCE v2 on priority 3 over DSCP trust,
// with PFC and ECN there: no finding.
func roceInv() *inventory.Inventory {
	inv := healthy()
	n := &inv.NICs[0]
	n.RDMA[0].GIDs = []inventory.GID{{Index: 0, Type: "IB/RoCE v1", Address: "198.18.0.1"}, {Index: 1, Type: "RoCE v2", Address: "198.18.0.1"}}
	n.RDMA[0].Netdev, n.RDMA[0].ActiveMTU = n.Interface, ip(4096)
	n.DCB = &dcb.IEEE{PFC: &dcb.PFC{Enabled: []int{3}}, App: []dcb.App{{Selector: "dscp", Protocol: 26, Priority: 3}}}
	n.ECN = &inventory.ECN{}
	for p := range 8 {
		on, on2 := true, true
		n.ECN.NP[p], n.ECN.RP[p] = &on, &on2
	}
	return inv
}

func TestRoCERules(t *testing.T) {
	bp := func(b bool) *bool { return &b }
	tests := []struct {
		name   string
		change func(n *inventory.NIC)
		opts   Options
		want   []string // "severity id"
	}{
		{"healthy", func(*inventory.NIC) {}, Options{}, nil},
		{"no v2 GID: not in use, no PFC judgement", func(n *inventory.NIC) {
			n.RDMA[0].GIDs = n.RDMA[0].GIDs[:1]
			n.DCB.PFC.Enabled = nil
		}, Options{}, []string{"warning roce.no_v2_gid"}},
		{"port down: nothing RoCE", func(n *inventory.NIC) {
			n.RDMA[0].State = "DOWN"
			n.DCB.PFC.Enabled = nil
		}, Options{}, []string{"warning rdma.port_not_active"}},
		{"ECN unknown and PFC off: a warning", func(n *inventory.NIC) {
			n.ECN = nil
			n.DCB.PFC.Enabled = nil
		}, Options{}, []string{"warning roce.pfc_off"}},
		{"ECN on and PFC off: congestion-controlled, no finding", func(n *inventory.NIC) {
			n.DCB.PFC.Enabled = nil
		}, Options{}, nil},
		{"DCB unknown: no PFC or trust claim", func(n *inventory.NIC) { n.DCB = nil }, Options{}, nil},
		{"--roce-priority 4 off PFC and ECN", func(n *inventory.NIC) {
			n.ECN.NP[4] = bp(false)
		}, Options{RoCEPriority: ip(4)}, []string{"warning roce.ecn_off", "critical roce.pfc_off"}},
		{"explicit trust table pcp", func(n *inventory.NIC) { n.DCB.Trust = []string{"pcp"} }, Options{}, []string{"warning roce.trust_mismatch"}},
		{"explicit trust dscp, DSCP 26 to 5", func(n *inventory.NIC) {
			n.DCB.Trust = []string{"dscp"}
			n.DCB.App[0].Priority = 5
		}, Options{}, []string{"warning roce.trust_mismatch"}},
		{"trust dscp without entry 26: default map 26>>3 = 3", func(n *inventory.NIC) {
			n.DCB.Trust = []string{"dscp"}
			n.DCB.App = []dcb.App{{Selector: "dscp", Protocol: 46, Priority: 5}}
		}, Options{}, nil},
		{"trusts nothing", func(n *inventory.NIC) { n.DCB.Trust = []string{} }, Options{}, []string{"warning roce.trust_mismatch"}},
		{"MTU 4191: active 2048", func(n *inventory.NIC) {
			n.MTU = ip(4191)
			n.RDMA[0].ActiveMTU = ip(inventory.RoCEActiveMTU(4191))
		}, Options{}, []string{"warning mtu.not_jumbo", "warning roce.mtu_small"}},
		{"MTU 4192: active 4096", func(n *inventory.NIC) {
			n.MTU = ip(4192)
			n.RDMA[0].ActiveMTU = ip(inventory.RoCEActiveMTU(4192))
		}, Options{}, []string{"warning mtu.not_jumbo"}},
		{"RoCE on a VLAN upper: its MTU is not the NIC's", func(n *inventory.NIC) {
			n.RDMA[0].Netdev, n.RDMA[0].ActiveMTU = "vlan100", ip(1024)
		}, Options{}, nil},
		{"MRRS 512 at 100G", func(n *inventory.NIC) { n.PCIe.MRRS = ip(512) }, Options{}, []string{"info pcie.mrrs_small"}},
		{"MRRS 512 at 25G: no finding", func(n *inventory.NIC) {
			n.PCIe.MRRS, n.SpeedMbps, n.RDMA[0].RateGbps = ip(512), ip(25000), 25
		}, Options{}, nil},
		{"MRRS 512 without RDMA: no finding", func(n *inventory.NIC) { n.PCIe.MRRS, n.RDMA = ip(512), nil }, Options{}, nil},
		{"IOMMU identity", func(n *inventory.NIC) { n.IOMMU = &inventory.IOMMU{Group: 7, Type: "identity"} }, Options{}, nil},
		{"IOMMU DMA", func(n *inventory.NIC) { n.IOMMU = &inventory.IOMMU{Group: 7, Type: "DMA"} }, Options{}, []string{"info iommu.translated"}},
		{"errors grown during a bench", func(n *inventory.NIC) {}, Options{RDMADeltas: map[string]map[string]uint64{"rocep1s0f0/1": {"packet_seq_err": 4}}},
			[]string{"critical rdma.errors"}},
		{"errors since load, none during the bench", func(n *inventory.NIC) {
			n.RDMA[0].HWCounters = map[string]uint64{"out_of_sequence": 9}
		}, Options{RDMADeltas: map[string]map[string]uint64{"rocep1s0f0/1": {"out_of_sequence": 0}}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := roceInv()
			tt.change(&inv.NICs[0])
			rep := run(t, inv, tt.opts)
			var got []string
			for _, f := range rep.Findings {
				got = append(got, string(f.Severity)+" "+f.ID)
			}
			want := slices.Clone(tt.want)
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
	if _, err := Diagnose(roceInv(), Options{RoCEPriority: ip(8)}); err == nil || !strings.Contains(err.Error(), "--roce-priority 8") {
		t.Errorf("--roce-priority 8: %v", err)
	}
}

// TestGPURules: the distance names and the severities of gpu.nic_far, and
// ACS judged only on the bridges a peer-to-peer transfer crosses.
func TestGPURules(t *testing.T) {
	acs := func(redirect bool) *inventory.ACSState {
		return &inventory.ACSState{Control: "0x001d", Redirect: redirect}
	}
	gpu := func(vendor string, nics ...inventory.GPUNIC) inventory.GPU {
		return inventory.GPU{PCI: "0000:41:00.0", Vendor: vendor, NUMANode: ip(1), NICs: nics}
	}
	nic := func(d string, rdma bool, bridges ...inventory.PathBridge) inventory.GPUNIC {
		return inventory.GPUNIC{Interface: "enp1s0f0np0", PCI: "0000:01:00.0", Distance: d, RDMA: rdma, Bridges: bridges}
	}
	tests := []struct {
		name string
		gpu  inventory.GPU
		want []string
	}{
		{"PIX, ACS off", gpu("NVIDIA", nic("PIX", true, inventory.PathBridge{PCI: "0000:40:00.0", PeerToPeer: true, ACS: acs(false)})), nil},
		{"PIX, redirect", gpu("NVIDIA", nic("PIX", true, inventory.PathBridge{PCI: "0000:40:00.0", PeerToPeer: true, ACS: acs(true)})), []string{"warning pcie.acs_redirect"}},
		{"PIX, redirect above the switch only", gpu("NVIDIA", nic("PIX", true, inventory.PathBridge{PCI: "0000:3f:01.0", ACS: acs(true)})), nil},
		{"PXB, redirect, no RDMA", gpu("NVIDIA", nic("PXB", false, inventory.PathBridge{PCI: "0000:40:00.0", PeerToPeer: true, ACS: acs(true)})), nil},
		{"PHB: root complex anyway", gpu("NVIDIA", nic("PHB", true, inventory.PathBridge{PCI: "0000:3f:01.0", ACS: acs(true)})), nil},
		{"NODE", gpu("NVIDIA", nic("NODE", true)), []string{"info gpu.nic_far"}},
		{"SYS", gpu("AMD", nic("SYS", true)), []string{"warning gpu.nic_far"}},
		{"SYS, a display adapter", gpu("ASPEED", nic("SYS", true)), nil},
		{"SYS to a plain NIC", gpu("NVIDIA", nic("SYS", false)), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := healthy()
			inv.GPUs = []inventory.GPU{tt.gpu}
			var got []string
			for _, f := range run(t, inv, Options{}).Findings {
				got = append(got, string(f.Severity)+" "+f.ID)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	// A GPU about another NIC than --iface names is not judged.
	inv := healthy()
	inv.GPUs = []inventory.GPU{gpu("NVIDIA", inventory.GPUNIC{Interface: "eth9", Distance: "SYS", RDMA: true})}
	if got := run(t, inv, Options{}).Findings; len(got) != 0 {
		t.Errorf("a NIC not selected: %+v", got)
	}
}
