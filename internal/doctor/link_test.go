package doctor

import (
	"strings"
	"testing"
)

// TestLinkDownEdges pins link.down's text and when it is raised: a PCI
// port in operstate unknown is down; a named virtual link is down only
// when it says so (loopback and tun say "unknown" while working).
func TestLinkDownEdges(t *testing.T) {
	inv := healthy()
	n := &inv.NICs[0]
	n.Operstate, n.RDMA = "down", nil
	f := find(run(t, inv, Options{}), "link.down")
	if len(f) != 1 || f[0].Summary != "enp1s0f0np0 (ConnectX-5, mlx5_core) has no link (operstate down)" {
		t.Fatalf("down, no RoCE port: %+v", f)
	}
	if _, ok := f[0].Evidence["rdma_ports"]; ok {
		t.Errorf("rdma_ports without one: %v", f[0].Evidence)
	}
	if last := f[0].Fix[len(f[0].Fix)-1]; !strings.HasPrefix(last.Action, "If the port is unused, name the ports in use with --iface") {
		t.Errorf("no sibling up, last fix: %+v", last)
	}
	n.Model = ""
	if f := find(run(t, inv, Options{}), "link.down"); len(f) != 1 || f[0].Summary != "enp1s0f0np0 has no link (operstate down)" {
		t.Errorf("no model: %+v", f)
	}
	n.Operstate = "unknown"
	if f := find(run(t, inv, Options{}), "link.down"); len(f) != 1 {
		t.Errorf("a PCI port in operstate unknown: %+v", f)
	}
	n.Kind, n.PCI, n.PCIe = "veth", "", nil
	if f := find(run(t, inv, Options{Ifaces: []string{"enp1s0f0np0"}}), "link.down"); len(f) != 0 {
		t.Errorf("a named veth in operstate unknown: %+v", f)
	}
	n.Operstate = "down"
	if f := find(run(t, inv, Options{Ifaces: []string{"enp1s0f0np0"}}), "link.down"); len(f) != 1 {
		t.Errorf("a named veth down: %+v", f)
	}
}

// TestMTUNotJumboText pins mtu.not_jumbo's arithmetic at MTU 1500 on
// 100 Gbit/s: the packet rates and their ratio in the summary, and the
// goodput in the evidence.
func TestMTUNotJumboText(t *testing.T) {
	inv := healthy()
	inv.NICs[0].MTU = ip(1500)
	f := find(run(t, inv, Options{}), "mtu.not_jumbo")
	if len(f) != 1 {
		t.Fatalf("%+v", f)
	}
	ev := f[0].Evidence
	pS, pJ := ev["packets_per_second"].(int64), ev["packets_per_second_at_9000"].(int64)
	// 100 Gbit/s of 1538-byte frames on the wire, against 9038-byte ones.
	if pS != 100_000_000_000/8/1538 || pJ != 100_000_000_000/8/9038 {
		t.Errorf("packet rates %d, %d", pS, pJ)
	}
	if _, ok := ev["goodput_gbps"]; !ok {
		t.Errorf("no goodput: %v", ev)
	}
	want := "MTU 1500 on a 100 Gbit/s link: 5.9× the packets per second of MTU 9000 (8.13 vs 1.38 Mpps at line rate), each costing CPU"
	if f[0].Summary != want {
		t.Errorf("summary\n got %q\nwant %q", f[0].Summary, want)
	}
}

// TestPathMismatchEdges: with no size passed there is no lower-MTU fix;
// the hand probe's payload is the MTU less 28 bytes of headers.
func TestPathMismatchEdges(t *testing.T) {
	p := &PathMTU{Peer: "198.18.0.2", Interface: "enp1s0f0np0", MTU: 9000, Probes: 3, Detail: "timeout"}
	f := find(run(t, healthy(), Options{PathMTU: p}), "mtu.path_mismatch")
	if len(f) != 1 || !strings.HasSuffix(f[0].Summary, "(timeout); no size passed: a hop on the path has a smaller MTU, so full-size segments are dropped") || len(f[0].Fix) != 2 {
		t.Fatalf("none passed: %+v", f)
	}
	last := f[0].Fix[1]
	if Quote(last.Command) != "ping -M do -c 3 -s 8972 198.18.0.2" || !strings.Contains(last.Action, "(8972 bytes of ICMP payload)") {
		t.Errorf("probe fix: %+v", last)
	}
	p.Largest = 1500
	f = find(run(t, healthy(), Options{PathMTU: p}), "mtu.path_mismatch")
	if len(f) != 1 || !strings.Contains(f[0].Summary, "the largest that passed is 1500 bytes") || len(f[0].Fix) != 3 ||
		Quote(f[0].Fix[1].Command) != "ip link set dev enp1s0f0np0 mtu 1500" {
		t.Errorf("1500 passed: %+v", f)
	}
}
