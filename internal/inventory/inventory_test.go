package inventory

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/hosttree"
	"github.com/linerate/linerate/internal/netdev"
	"github.com/linerate/linerate/internal/sff"
	"github.com/linerate/linerate/internal/testutil"
)

func tree(name string) string { return filepath.Join("..", "..", "testdata", "hosts", name) }

func collect(t *testing.T, root string) *Inventory {
	t.Helper()
	fs, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	inv, err := Collect(fs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func nic(t *testing.T, inv *Inventory, name string) *NIC {
	t.Helper()
	for i := range inv.NICs {
		if inv.NICs[i].Interface == name {
			return &inv.NICs[i]
		}
	}
	t.Fatalf("no NIC %s in %v", name, inv.NICs)
	return nil
}

func TestRyzenX4(t *testing.T) {
	inv := collect(t, tree("ryzen-9900x-cx5-x4"))
	if inv.Host.Hostname != "crow" || !inv.Host.IRQBalance.Running {
		t.Errorf("host = %+v", inv.Host)
	}
	c := inv.CPU
	if c.Count != 12 || len(c.L3Domains) != 2 || cpulist.Format(c.L3Domains[1]) != "6-11" {
		t.Errorf("cpu = %d CPUs, L3 %v", c.Count, c.L3Domains)
	}
	if got := cpulist.Format(c.Governors["powersave"]); got != "0-11" {
		t.Errorf("powersave on %q", got)
	}
	n := nic(t, inv, "enp1s0f0np0")
	if n.Driver != "mlx5_core" || n.Model != "ConnectX-5" || n.VendorID != "0x15b3" || *n.MTU != 9000 || *n.SpeedMbps != 100000 {
		t.Errorf("nic = %+v", n)
	}
	p := n.PCIe
	if !p.Reported || *p.CurWidth != 4 || *p.MaxWidth != 16 || !p.Downgraded || *p.RawGbps != 31.51 || *p.EffGbps != 28.6 {
		t.Errorf("pcie = %+v", p)
	}
	if p.Upstream == nil || p.Upstream.PCI != "0000:00:01.1" || *p.Upstream.MaxWidth != 16 {
		t.Errorf("upstream = %+v", p.Upstream)
	}
	if p.MPS == nil || *p.MPS != 256 || p.MPSAssumed {
		t.Errorf("MPS from config space = %v (assumed %v)", p.MPS, p.MPSAssumed)
	}
	if len(n.IRQs) != 13 {
		t.Fatalf("%d IRQs, want 13 (98, 99, 109-119)", len(n.IRQs))
	}
	q := n.IRQs[1] // IRQ 99, mlx5_comp0: the owner's /proc/interrupts line
	if q.IRQ != 99 || q.Counts["0"] != 324 || q.Counts["7"] != 4360 || q.Total != 4684 || !slices.Equal(q.Effective, []int{7}) {
		t.Errorf("IRQ 99 = %+v", q)
	}
	if n.TempC == nil || *n.TempC != 74 || *n.TempCritC != 105 {
		t.Errorf("temperature %v crit %v", n.TempC, n.TempCritC)
	}
	if len(n.RDMA) != 1 || n.RDMA[0].State != "ACTIVE" || n.RDMA[0].RateGbps != 100 {
		t.Errorf("rdma = %+v", n.RDMA)
	}
	if !slices.Equal(n.CardPorts, []string{"enp1s0f0np0", "enp1s0f1np1"}) {
		t.Errorf("card ports = %v", n.CardPorts)
	}
	// mlx5 registers hwmon on function 0 only; function 1 reads it there.
	if n1 := nic(t, inv, "enp1s0f1np1"); n1.TempC == nil || *n1.TempC != 74 || n1.SpeedMbps != nil || n1.Operstate != "down" {
		t.Errorf("second port: temp %v speed %v state %s", n1.TempC, n1.SpeedMbps, n1.Operstate)
	}
	if v, ok := inv.SysctlInt("net.ipv4.tcp_rmem"); !ok || v != 6291456 {
		t.Errorf("tcp_rmem max = %d, %v", v, ok)
	}
}

func TestXL710Gen2OldKernel(t *testing.T) {
	// Kernel 4.15 prints "5 GT/s" and "8 GT/s", not "8.0 GT/s PCIe".
	inv := collect(t, tree("xeon-xl710-gen2-x4"))
	n := nic(t, inv, "ens2f0np0")
	p := n.PCIe
	if *p.CurGTs != 5 || *p.MaxGTs != 8 || *p.CurWidth != 4 || *p.RawGbps != 16 {
		t.Errorf("pcie = cur %v x%v max %v raw %v", *p.CurGTs, *p.CurWidth, *p.MaxGTs, *p.RawGbps)
	}
	if *n.NUMANode != 1 || n.Queues.RX != 1 || *n.MTU != 1500 {
		t.Errorf("numa %v queues %+v mtu %v", *n.NUMANode, n.Queues, *n.MTU)
	}
	if len(inv.CPU.NUMANodes) != 2 || cpulist.Format(inv.CPU.NUMANodes["1"]) != "10-19,30-39" || inv.CPU.Sockets != 2 {
		t.Errorf("numa nodes = %v, sockets %d", inv.CPU.NUMANodes, inv.CPU.Sockets)
	}
	names := []string{}
	for _, q := range n.IRQs {
		names = append(names, q.Name)
	}
	if !slices.Contains(names, "i40e-ens2f0np0-TxRx-0") {
		t.Errorf("IRQ names %v", names)
	}
}

func TestChelsioTwoPortsOneFunction(t *testing.T) {
	// cxgb4 puts both ports on PCI function 4; each port keeps the IRQs
	// named after it, and both share the function's others.
	inv := collect(t, tree("xeon-6530-t6-healthy"))
	a, b := nic(t, inv, "ens5f4"), nic(t, inv, "ens5f4d1")
	for _, q := range a.IRQs {
		if strings.Contains(q.Name, "ens5f4d1") {
			t.Errorf("ens5f4 got %s", q.Name)
		}
	}
	for _, q := range b.IRQs {
		if strings.Contains(q.Name, "ens5f4-") {
			t.Errorf("ens5f4d1 got %s", q.Name)
		}
	}
	if len(a.IRQs) == 0 || len(b.IRQs) == 0 {
		t.Errorf("IRQs: %d and %d", len(a.IRQs), len(b.IRQs))
	}
}

// TestLiveHost reads this machine: it must work as any user, and a NIC
// without a PCIe link (a VM's virtio) says "not reported", never guesses.
func TestLiveHost(t *testing.T) {
	fs := hostfs.Live()
	inv, err := Collect(fs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if inv.CPU.Count == 0 || inv.Host.Kernel == "" {
		t.Errorf("live host: %+v", inv.Host)
	}
	for _, n := range inv.NICs {
		if n.PCIe == nil {
			t.Errorf("%s: no PCIe object", n.Interface)
			continue
		}
		if !n.PCIe.Reported && (n.PCIe.RawGbps != nil || n.PCIe.CurGTs != nil) {
			t.Errorf("%s: unreported link has numbers: %+v", n.Interface, n.PCIe)
		}
	}
}

// TestDamagedValues: garbage, empty, missing and oversized files give an
// unknown field and a note, never a panic or a failed run.
func TestDamagedValues(t *testing.T) {
	root := testutil.CopyTree(t, tree("ryzen-9900x-cx5-x4"))
	dev := filepath.Join(root, "sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0")
	write := func(rel, data string) {
		if err := os.WriteFile(filepath.Join(root, rel), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeDev := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dev, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeDev("current_link_speed", "fast\n")
	writeDev("max_link_width", "")
	writeDev("numa_node", strings.Repeat("9", hostfs.MaxFileSize+10))
	writeDev("config", "\x00\x01")
	os.RemoveAll(filepath.Join(dev, "hwmon"))
	write("sys/devices/system/cpu/online", "0-99999999\n")
	write("proc/sys/net/ipv4/tcp_rmem", "lots\n")
	write("proc/interrupts", "not a header\n")
	inv := collect(t, root)
	n := nic(t, inv, "enp1s0f0np0")
	if n.PCIe.CurGTs != nil || n.PCIe.Reported || n.PCIe.MaxWidth != nil {
		t.Errorf("garbage link attributes read as %+v", n.PCIe)
	}
	if n.NUMANode != nil || n.TempC != nil {
		t.Errorf("numa %v temp %v, want unknown", n.NUMANode, n.TempC)
	}
	if _, ok := inv.Sysctl["net.ipv4.tcp_rmem"]; ok {
		t.Error("garbage tcp_rmem was kept")
	}
	if inv.CPU.Count != 12 {
		t.Errorf("CPU count %d: a bad online list should fall back to cpuN directories", inv.CPU.Count)
	}
	joined := strings.Join(inv.Notes, "\n")
	for _, want := range []string{"current_link_speed \"fast\"", "NUMA node", "tcp_rmem", "IRQ counts", "online CPUs"} {
		if !strings.Contains(joined, want) {
			t.Errorf("notes lack %q:\n%s", want, joined)
		}
	}
}

func TestEmptyTree(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "proc"), 0o755)
	fs, _ := hostfs.New(root)
	if _, err := Collect(fs, Options{}); err == nil || !strings.Contains(err.Error(), "no network interfaces") {
		t.Errorf("empty tree: %v", err)
	}
}

func TestContainsToken(t *testing.T) {
	tests := []struct {
		name, tok string
		want      bool
	}{
		{"eth1-rx-0", "eth1", true},
		{"eth10-rx-0", "eth1", false},
		{"i40e-ens2f0np0-TxRx-0", "ens2f0np0", true},
		{"ens5f4d1-Rx0", "ens5f4", false},
		{"mlx5_comp0@pci:0000:01:00.0", "eth0", false},
	}
	for _, tt := range tests {
		if got := containsToken(tt.name, tt.tok); got != tt.want {
			t.Errorf("containsToken(%q, %q) = %v", tt.name, tt.tok, got)
		}
	}
}

// TestConfigSpaceNeedsRoot: an unprivileged read of a PCI function's
// "config" stops at 64 bytes, before the capability list. MPS and MRRS are
// then unknown (null in JSON), the effective rate assumes MPS 256 and says
// so (mps_assumed), and the notes say the facts need root.
func TestConfigSpaceNeedsRoot(t *testing.T) {
	root := testutil.CopyTree(t, tree("ryzen-9900x-cx5-x4"))
	cfg := filepath.Join(root, "sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/config")
	full, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(full) < 256 {
		t.Fatalf("tree's config space is %d bytes: want the full 256+ as root reads it", len(full))
	}
	if err := os.WriteFile(cfg, full[:64], 0o644); err != nil {
		t.Fatal(err)
	}
	inv := collect(t, root)
	p := nic(t, inv, "enp1s0f0np0").PCIe
	if p.MPS != nil || p.MRRS != nil || !p.MPSAssumed {
		t.Errorf("MPS %v MRRS %v assumed %v: want unknown and assumed", p.MPS, p.MRRS, p.MPSAssumed)
	}
	// The effective rate is still computed, at the assumed MPS 256.
	if p.EffGbps == nil || *p.EffGbps != 28.6 {
		t.Errorf("effective = %v, want 28.6 at the assumed MPS 256", p.EffGbps)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"mps_assumed":true`, `"mps_bytes":null`, `"mrrs_bytes":null`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("pcie JSON lacks %s: %s", want, b)
		}
	}
	var note string
	for _, n := range inv.Notes {
		if strings.Contains(n, "0000:01:00.0") && strings.Contains(n, "MPS") {
			note = n
		}
	}
	if !strings.Contains(note, "need root") || !strings.Contains(note, "MRRS") || !strings.Contains(note, "assuming MPS 256") {
		t.Errorf("note for 0000:01:00.0 = %q, want it to say MPS/MRRS need root and MPS 256 is assumed (notes: %q)", note, inv.Notes)
	}
}

// TestEthtoolFromTree: live ethtool facts captured in a tree fill link,
// FEC, transceiver and counters; a tree without them says so.
func TestEthtoolFromTree(t *testing.T) {
	inv := collect(t, tree("t6-cwdm4-healthy"))
	n := nic(t, inv, "ens5f4")
	if n.Link == nil || *n.Link.SpeedMbps != 100000 || *n.Link.SupportedMaxMbps != 100000 || n.Link.Advertised[0] != "100000baseCR4/Full" {
		t.Errorf("link %+v", n.Link)
	}
	if n.FEC == nil || *n.FEC.Active != "RS" || n.FEC.UncorrectableBlocks != nil {
		t.Errorf("fec %+v (cxgb4 keeps no FEC counters)", n.FEC)
	}
	tr := n.Transceiver
	if tr == nil || !tr.Readable || tr.Spec != "SFF-8636" || tr.VendorPN != "FTLC1157RGPL6FB1" || len(tr.Lanes) != 4 || tr.Thresholds == nil {
		t.Fatalf("transceiver %+v", tr)
	}
	if n.Counters == nil || n.Counters.Driver != "cxgb4" {
		t.Errorf("counters %+v", n.Counters)
	}
	if d1 := nic(t, inv, "ens5f4d1"); d1.Transceiver != nil {
		t.Errorf("an empty cage (EOPNOTSUPP) has a transceiver: %+v", d1.Transceiver)
	}
	dead := nic(t, collect(t, tree("t6-cwdm4-unreadable")), "ens5f4")
	if dead.Transceiver == nil || dead.Transceiver.Readable || *dead.Transceiver.Error != "EIO" {
		t.Errorf("dead module %+v", dead.Transceiver)
	}
	old := collect(t, tree("ryzen-9900x-cx5-x4"))
	if !slices.ContainsFunc(old.Notes, func(s string) bool {
		return strings.Contains(s, "enp1s0f0np0, enp1s0f1np1 were not captured")
	}) || nic(t, old, "enp1s0f0np0").Link != nil {
		t.Errorf("a tree without ethtool facts: notes %q", old.Notes)
	}
}

// TestModuleNotes: what the decoder could not read is in the notes.
func TestModuleNotes(t *testing.T) {
	o := hosttree.Optic{Vendor: "V", PN: "P", SN: "S", Compliance: 0x06, TempC: 30, VccV: 3.3,
		Lanes: make([]hosttree.OpticLane, 4), Thresholds: hosttree.LRThresholds()}
	pages := o.QSFP28()
	delete(pages, sff.Upper(3, 0))
	c := &collector{fs: hostfs.Live()}
	n := &NIC{Interface: "eth7", Kind: "pci"}
	c.applyEthtool(n, &ethtool.Facts{Module: pages})
	if n.Transceiver == nil || !n.Transceiver.Readable || n.Transceiver.Thresholds != nil {
		t.Fatalf("transceiver %+v", n.Transceiver)
	}
	if len(c.notes) != 1 || !strings.HasPrefix(c.notes[0], "eth7: module: page 03h was not read") {
		t.Errorf("notes %q", c.notes)
	}
}

// TestBadEthtoolFacts: a garbled facts file in a tree is a note naming
// the file, never a failed doctor.
func TestBadEthtoolFacts(t *testing.T) {
	root := t.TempDir()
	for p, v := range map[string]string{
		"sys/class/net/veth9/mtu":                 "1500\n",
		"sys/class/net/veth9/operstate":           "up\n",
		"linerate/ethtool/veth9/fec.json":         "{not json",
		"linerate/ethtool/veth9/linkmodes.json":   `{"speed_mbps": 10000, "duplex": "full", "autoneg": false, "supported": [], "advertised": [], "partner_advertised": [], "source": "netlink"}`,
		"linerate/ethtool/veth9/module-eeprom/zz": "x",
	} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	inv := collect(t, root)
	if len(inv.Virtual) != 1 || inv.Virtual[0].Link != nil {
		t.Errorf("virtual %+v", inv.Virtual)
	}
	if !slices.ContainsFunc(inv.Notes, func(s string) bool {
		return strings.Contains(s, "veth9: live ethtool facts unreadable") && strings.Contains(s, "/linerate/ethtool/veth9/fec.json")
	}) {
		t.Errorf("notes %q", inv.Notes)
	}
}

// TestQdiscFacts: a tree's live facts (linerate/live.json, as a snapshot
// stores them) give each interface its root qdisc, what caps it and
// whether a default route leaves through it. The shapers are the htb and
// tbf trees tc built in a real namespace (internal/netdev/testdata),
// given the tree's interface names.
func TestQdiscFacts(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "netdev", "testdata", "live-shapers.json"))
	if err != nil {
		t.Fatal(err)
	}
	facts, err := netdev.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	renamed := &netdev.Facts{Links: map[string]netdev.Link{
		"ens5f4": facts.Links["htb0"], "ens5f4d1": facts.Links["tbf0"], "docker0": facts.Links["lab0"], "lo": facts.Links["lo"],
	}}
	out, err := renamed.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	root := testutil.CopyTree(t, tree("t6-cwdm4-healthy"))
	if err := os.MkdirAll(filepath.Join(root, "linerate"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, netdev.Path), out, 0o644); err != nil {
		t.Fatal(err)
	}
	inv := collect(t, root)
	htb := nic(t, inv, "ens5f4").Qdisc
	if htb == nil || htb.Kind != "htb" || htb.RateGbps == nil || *htb.RateGbps != 1 || htb.Shaper == nil ||
		htb.Shaper.Handle != "1:10" || htb.Shaper.Detail != "htb class 1:10 ceil 1gbit (the default class of htb 1:)" || htb.Shaper.DeclaredLineRate {
		t.Errorf("htb: %+v %+v", htb, htb.Shaper)
	}
	tbf := nic(t, inv, "ens5f4d1")
	if tbf.Qdisc == nil || tbf.Qdisc.Shaper == nil || tbf.Qdisc.Shaper.Kind != "tbf" || *tbf.Qdisc.RateGbps != 1 || !tbf.DefaultRoute {
		t.Errorf("tbf: %+v, default route %v", tbf.Qdisc, tbf.DefaultRoute)
	}
	var lab, lo *NIC
	for i := range inv.Virtual {
		switch inv.Virtual[i].Interface {
		case "docker0":
			lab = &inv.Virtual[i]
		case "lo":
			lo = &inv.Virtual[i]
		}
	}
	if lab == nil || lab.Qdisc == nil || lab.Qdisc.Shaper == nil || !lab.Qdisc.Shaper.DeclaredLineRate || *lab.Qdisc.RateGbps != 10 {
		t.Errorf("declared lab link: %+v", lab)
	}
	if lo == nil || lo.Qdisc == nil || lo.Qdisc.Kind != "noqueue" || lo.Qdisc.Shaper != nil || lo.Qdisc.RateGbps != nil || lo.DefaultRoute {
		t.Errorf("lo: %+v", lo)
	}
}

// TestQdiscOf covers what the captured trees do not: a per-flow cap, a
// declaration that no longer matches the shaper, cake's overhead.
func TestQdiscOf(t *testing.T) {
	ov := 38
	for _, tt := range []struct {
		name     string
		link     netdev.Link
		rate     *float64
		perFlow  bool
		declared bool
		overhead *int
	}{
		{"fq maxrate: each flow", netdev.Link{Qdisc: &netdev.Qdisc{Kind: "fq"}, Qdiscs: []netdev.Qdisc{{Kind: "fq", Handle: "1:", Parent: "root", RateBitsPerSec: 2e9}}},
			nil, true, false, nil},
		{"declared and matching", netdev.Link{Alias: netdev.DeclareLineRate(10e9), Qdisc: &netdev.Qdisc{Kind: "tbf"}, Qdiscs: []netdev.Qdisc{{Kind: "tbf", Handle: "1:", Parent: "root", RateBitsPerSec: 10e9}}},
			floatPtr(10), false, true, nil},
		{"declared, then a fault planted", netdev.Link{Alias: netdev.DeclareLineRate(10e9), Qdisc: &netdev.Qdisc{Kind: "tbf"}, Qdiscs: []netdev.Qdisc{{Kind: "tbf", Handle: "1:", Parent: "root", RateBitsPerSec: 1e9}}},
			floatPtr(1), false, false, nil},
		{"declared per flow is no line rate", netdev.Link{Alias: netdev.DeclareLineRate(2e9), Qdisc: &netdev.Qdisc{Kind: "fq"}, Qdiscs: []netdev.Qdisc{{Kind: "fq", Handle: "1:", Parent: "root", RateBitsPerSec: 2e9}}},
			nil, true, false, nil},
		{"cake with overhead", netdev.Link{Qdisc: &netdev.Qdisc{Kind: "cake"}, Qdiscs: []netdev.Qdisc{{Kind: "cake", Handle: "1:", Parent: "root", RateBitsPerSec: 3e9, OverheadBytes: &ov}}},
			floatPtr(3), false, false, &ov},
	} {
		q := qdiscOf(tt.link)
		if q == nil || q.Shaper == nil {
			t.Errorf("%s: %+v", tt.name, q)
			continue
		}
		if (q.RateGbps == nil) != (tt.rate == nil) || q.RateGbps != nil && *q.RateGbps != *tt.rate || q.Shaper.PerFlow != tt.perFlow ||
			q.Shaper.DeclaredLineRate != tt.declared || q.Shaper.OverheadBytes != tt.overhead {
			t.Errorf("%s: %+v shaper %+v", tt.name, q, q.Shaper)
		}
	}
	if q := qdiscOf(netdev.Link{Kind: "veth"}); q != nil {
		t.Errorf("no qdisc: %+v", q)
	}
}

// TestEmptyCage: cxgb4 answers EOPNOTSUPP for the module EEPROM of an
// empty cage; when the same card read its other port's module, the note
// says the cage is most likely empty, not that the driver reads none.
func TestEmptyCage(t *testing.T) {
	inv := collect(t, tree("t6-cwdm4-healthy"))
	want := "ens5f4d1: no module data (EOPNOTSUPP): the cage is most likely empty, as the same card read the module of ens5f4"
	if !slices.Contains(inv.Notes, want) {
		t.Errorf("notes lack %q: %q", want, inv.Notes)
	}
	for _, n := range inv.Notes {
		if strings.Contains(n, "the driver reads no module EEPROM") {
			t.Errorf("note %q: the driver read the other cage", n)
		}
	}
}
