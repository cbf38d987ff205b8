package inventory

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/dcb"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/testutil"
)

func TestRoCEActiveMTU(t *testing.T) {
	for _, tt := range []struct{ mtu, want int }{
		{9000, 4096}, {4192, 4096}, {4191, 2048}, {1500, 1024}, {1120, 1024}, {1119, 512},
		{608, 512}, {607, 256}, {352, 256}, {351, 0}, {0, 0},
	} {
		if got := RoCEActiveMTU(tt.mtu); got != tt.want {
			t.Errorf("RoCEActiveMTU(%d) = %d, want %d", tt.mtu, got, tt.want)
		}
	}
	if RoCEMTUFor(4096) != 4192 || RoCEActiveMTU(RoCEMTUFor(2048)) != 2048 {
		t.Error("RoCEMTUFor is not RoCEActiveMTU's inverse")
	}
}

// TestRoCEHealthyFacts reads the healthy RoCE tree: GIDs with types and
// netdevs, the active MTU, counters, DCB, ECN, per-priority counters, the
// IOMMU group and the GPU one switch away with the switch ports' ACS.
func TestRoCEHealthyFacts(t *testing.T) {
	inv := collect(t, tree("roce-healthy"))
	n := nic(t, inv, "enp51s0np0")
	if len(n.RDMA) != 1 {
		t.Fatalf("RDMA ports %+v", n.RDMA)
	}
	p := n.RDMA[0]
	if p.Device != "rocep51s0" || p.State != "ACTIVE" || p.RateGbps != 100 || p.Firmware != "22.39.1002" || p.HCAType != "MT4125" ||
		p.Netdev != "enp51s0np0" || p.ActiveMTU == nil || *p.ActiveMTU != 4096 || !p.RoCEv2() {
		t.Errorf("port %+v", p)
	}
	wantGIDs := []GID{
		{0, "IB/RoCE v1", "enp51s0np0", "fe80::bace:f6ff:fea1:73c", "fe80:0000:0000:0000:bace:f6ff:fea1:073c"},
		{1, "RoCE v2", "enp51s0np0", "fe80::bace:f6ff:fea1:73c", "fe80:0000:0000:0000:bace:f6ff:fea1:073c"},
		{2, "IB/RoCE v1", "enp51s0np0", "192.168.100.11", "0000:0000:0000:0000:0000:ffff:c0a8:640b"},
		{3, "RoCE v2", "enp51s0np0", "192.168.100.11", "0000:0000:0000:0000:0000:ffff:c0a8:640b"},
	}
	if !slices.Equal(p.GIDs, wantGIDs) {
		t.Errorf("GIDs\n got %+v\nwant %+v", p.GIDs, wantGIDs)
	}
	if p.HWCounters["rp_cnp_handled"] != 3911 || p.HWCounters["out_of_sequence"] != 0 || len(p.HWCounters) != 30 ||
		p.Counters["port_xmit_data"] != 90_118_335_120 || len(p.Counters) != 21 {
		t.Errorf("counters %v\nhw %v", p.Counters, p.HWCounters)
	}
	if n.DCB == nil || !n.DCB.PFC.Has(3) || n.DCB.PFC.Indications[3] != 1822 || len(n.DCB.App) != 64 || n.DCB.Trust != nil || *n.DCB.DCBX != "firmware" {
		t.Errorf("DCB %+v", n.DCB)
	}
	if on, known := n.ECN.On(3); !on || !known {
		t.Errorf("ECN %+v", n.ECN)
	}
	if pc := n.PriorityCounters["3"]; pc["rx_pause"] != 1822 || pc["tx_pause"] != 96 || pc["rx_discards"] != 0 || len(n.PriorityCounters) != 8 {
		t.Errorf("priority counters %v", n.PriorityCounters["3"])
	}
	if n.IOMMU == nil || n.IOMMU.Type != "identity" || n.IOMMU.Group != 3 || n.IOMMU.Translated() {
		t.Errorf("IOMMU %+v", n.IOMMU)
	}
	if len(inv.GPUs) != 1 {
		t.Fatalf("GPUs %+v", inv.GPUs)
	}
	g := inv.GPUs[0]
	if g.PCI != "0000:34:00.0" || g.Vendor != "NVIDIA" || g.Model != "A100 PCIe 40GB" || g.Class != "0x030200" || g.Driver != "nvidia" || *g.NUMANode != 0 {
		t.Errorf("GPU %+v", g)
	}
	if len(g.NICs) != 1 || g.NICs[0].Distance != "PIX" || !g.NICs[0].RDMA {
		t.Fatalf("GPU NICs %+v", g.NICs)
	}
	var route []string
	for _, b := range g.NICs[0].Bridges {
		s := b.PCI
		if b.PeerToPeer {
			s += " p2p"
		}
		if b.ACS != nil {
			s += " acs " + b.ACS.Control
		}
		route = append(route, s)
	}
	if want := []string{"0000:32:04.0 p2p acs 0x0000", "0000:31:00.0", "0000:32:00.0 p2p acs 0x0000"}; !slices.Equal(route, want) {
		t.Errorf("route %q, want %q", route, want)
	}
	if len(inv.Notes) != 0 {
		t.Errorf("notes %q", inv.Notes)
	}

	far := collect(t, tree("gpu-nic-far")).GPUs[0]
	if far.NICs[0].Distance != "SYS" || len(far.NICs[0].Bridges) != 4 || far.NICs[0].Bridges[0].PCI != "0000:b0:02.0" || far.NICs[0].Bridges[0].ACS.Control != "0x001d" {
		t.Errorf("far GPU %+v", far.NICs)
	}
	acs := collect(t, tree("gpu-acs-redirect")).GPUs[0].NICs[0].Bridges[0].ACS
	if !acs.Redirect || !slices.Equal(acs.Enabled, []string{"SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd"}) {
		t.Errorf("ACS %+v", acs)
	}
}

// TestDistance names routes as nvidia-smi topo -m does.
func TestDistance(t *testing.T) {
	node := func(hb string, numa int, chain ...string) pciNode {
		return pciNode{hostBridge: hb, chain: chain, numa: numa}
	}
	tests := []struct {
		name   string
		a, b   pciNode
		nodes  int
		want   string
		bridge []string // PCI, "*" marking peer-to-peer
	}{
		{"one switch", node("pci0000:30", 0, "30:02.0", "31:00.0", "32:04.0", "34:00.0"), node("pci0000:30", 0, "30:02.0", "31:00.0", "32:00.0", "33:00.0"), 2,
			"PIX", []string{"32:04.0*", "31:00.0", "32:00.0*"}},
		{"functions of one card", node("pci0000:30", 0, "30:02.0", "31:00.0", "33:00.0"), node("pci0000:30", 0, "30:02.0", "31:00.0", "33:00.1"), 1,
			"PIX", []string{"31:00.0"}},
		{"two switches", node("pci0000:30", 0, "30:02.0", "31:00.0", "32:04.0", "35:00.0", "36:00.0", "37:00.0"), node("pci0000:30", 0, "30:02.0", "31:00.0", "32:00.0", "33:00.0"), 2,
			"PXB", []string{"36:00.0*", "35:00.0*", "32:04.0*", "31:00.0", "32:00.0*"}},
		{"two root ports", node("pci0000:30", 0, "30:02.0", "31:00.0"), node("pci0000:30", 0, "30:03.0", "33:00.0"), 2,
			"PHB", []string{"30:02.0", "30:03.0"}},
		{"two host bridges, one node", node("pci0000:30", 0, "30:02.0", "31:00.0"), node("pci0000:50", 0, "50:01.0", "51:00.0"), 2,
			"NODE", []string{"30:02.0", "50:01.0"}},
		{"two sockets", node("pci0000:30", 0, "30:02.0", "31:00.0"), node("pci0000:b0", 1, "b0:02.0", "b1:00.0"), 2,
			"SYS", []string{"30:02.0", "b0:02.0"}},
		{"one-node host, nodes unknown", node("pci0000:00", -1, "00:01.1", "01:00.0"), node("pci0000:40", -1, "40:01.1", "41:00.0"), 1,
			"NODE", []string{"00:01.1", "40:01.1"}},
		{"two nodes, one unknown", node("pci0000:00", -1, "00:01.1", "01:00.0"), node("pci0000:40", 1, "40:01.1", "41:00.0"), 2,
			"SYS", []string{"00:01.1", "40:01.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, route := distance(tt.a, tt.b, tt.nodes)
			var got []string
			for _, b := range route {
				s := b.PCI
				if b.PeerToPeer {
					s += "*"
				}
				got = append(got, s)
			}
			if d != tt.want || !slices.Equal(got, tt.bridge) {
				t.Errorf("got %s %q, want %s %q", d, got, tt.want, tt.bridge)
			}
		})
	}
	if _, ok := pciPath("sys/devices/platform/serial8250/tty"); ok {
		t.Error("a platform device placed on PCI")
	}
	if n, ok := pciPath("sys/devices/pci0000:30/0000:30:02.0/0000:31:00.0"); !ok || n.hostBridge != "pci0000:30" || len(n.chain) != 2 {
		t.Errorf("pciPath %+v %v", n, ok)
	}
}

// TestRoCEDamaged: garbage in the RoCE files gives unknown facts and
// notes, never a failed run.
func TestRoCEDamaged(t *testing.T) {
	root := testutil.CopyTree(t, tree("roce-healthy"))
	port := filepath.Join(root, "sys/class/infiniband/rocep51s0/ports/1")
	write := func(p, data string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(port, "hw_counters/out_of_sequence"), "lots\n")
	write(filepath.Join(port, "counters/symbol_error"), "N/A (no PMA)\n")
	write(filepath.Join(port, "gids/2"), "not-a-gid\n")
	write(filepath.Join(port, "rate"), "fast\n")
	write(filepath.Join(root, "sys/class/net/enp51s0np0/ecn/roce_rp/enable/3"), "7\n")
	write(filepath.Join(root, "linerate/dcb/enp51s0np0/ieee.json"), `{"pfc":{"enabled":[9]}}`)
	write(filepath.Join(root, "sys/kernel/iommu_groups/3/type"), "")
	inv := collect(t, root)
	n := nic(t, inv, "enp51s0np0")
	p := n.RDMA[0]
	if _, ok := p.HWCounters["out_of_sequence"]; ok || p.HWCounters["np_cnp_sent"] != 4107 || p.RateGbps != 0 {
		t.Errorf("port %+v", p)
	}
	if len(p.GIDs) != 3 || !p.RoCEv2() {
		t.Errorf("GIDs %+v", p.GIDs)
	}
	if n.DCB != nil || n.ECN.RP[3] != nil || *n.ECN.RP[2] != true {
		t.Errorf("DCB %+v ECN %+v", n.DCB, n.ECN)
	}
	if n.IOMMU == nil || n.IOMMU.Type != "" || n.IOMMU.Translated() {
		t.Errorf("IOMMU %+v", n.IOMMU)
	}
	joined := strings.Join(inv.Notes, "\n")
	for _, want := range []string{"hw_counters/out_of_sequence: \"lots\" is not a count", "counters/symbol_error", "gids/2",
		"rate: \"fast\"", "roce_rp/enable/3 reads 7", "DCB facts unreadable", "not a priority"} {
		if !strings.Contains(joined, want) {
			t.Errorf("notes lack %q:\n%s", want, joined)
		}
	}
}

// TestDCBLive: a live DCB reader's answer is taken as is, and a driver
// without DCB is said only for RDMA NICs.
func TestDCBLive(t *testing.T) {
	fs, err := hostfs.New(tree("roce-healthy"))
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	asked := []string{}
	inv, err := Collect(fs, Options{DCB: func(iface string) *dcb.Reading {
		asked = append(asked, iface)
		return &dcb.Reading{Error: "EOPNOTSUPP: operation not supported"}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(asked, []string{"enp51s0np0"}) || nic(t, inv, "enp51s0np0").DCB != nil {
		t.Errorf("asked %q, DCB %+v", asked, nic(t, inv, "enp51s0np0").DCB)
	}
	if !slices.ContainsFunc(inv.Notes, func(n string) bool { return strings.Contains(n, "DCB: not supported by the driver (EOPNOTSUPP") }) {
		t.Errorf("notes %q", inv.Notes)
	}
}
