package netdev

import (
	"net"
	"os/exec"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/linerate/linerate/internal/testbin"
)

func TestQueryShapedLink(t *testing.T) {
	testbin.NeedRoot(t, "network namespaces")
	testbin.InNewNetns(t, func() {
		d := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "shaped0"}, PeerName: "peer0"}
		if err := netlink.LinkAdd(d); err != nil {
			t.Error(err)
			return
		}
		link, _ := netlink.LinkByName("shaped0")
		peer, _ := netlink.LinkByName("peer0")
		for _, l := range []netlink.Link{link, peer} {
			if err := netlink.LinkSetUp(l); err != nil {
				t.Error(err)
				return
			}
		}
		if err := netlink.LinkSetAlias(link, DeclareLineRate(25e9)); err != nil {
			t.Error(err)
			return
		}
		// A default route through shaped0 (IPv4) and one through peer0
		// (IPv6): both are default routes.
		_, any4, _ := net.ParseCIDR("0.0.0.0/0")
		_, any6, _ := net.ParseCIDR("::/0")
		for _, r := range []*netlink.Route{{LinkIndex: link.Attrs().Index, Dst: any4, Scope: netlink.SCOPE_LINK}, {LinkIndex: peer.Attrs().Index, Dst: any6}} {
			if err := netlink.RouteAdd(r); err != nil {
				t.Errorf("adding %v: %v", r, err)
				return
			}
		}
		rate := uint64(25e9 / 8) // 25 Gbit/s in bytes/s: needs the 64-bit rate attribute
		tbf := &netlink.Tbf{
			QdiscAttrs: netlink.QdiscAttrs{LinkIndex: link.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT},
			Rate:       rate, Limit: 1 << 20, Buffer: netlink.Xmittime(rate, 1<<20),
		}
		if err := netlink.QdiscAdd(tbf); err != nil {
			t.Error(err)
			return
		}
		f, err := Query()
		if err != nil {
			t.Error(err)
			return
		}
		got := f.Links["shaped0"]
		if got.Kind != "veth" || got.Qdisc == nil || got.Qdisc.Kind != "tbf" || got.Qdisc.RateBitsPerSec != 25e9 {
			t.Errorf("shaped0 = %+v qdisc %+v", got, got.Qdisc)
		}
		if lo := f.Links["lo"]; lo.Kind != "device" || lo.DefaultRoute {
			t.Errorf("lo = %+v", lo)
		}
		if bps, ok := DeclaredLineRate(got.Alias); !ok || bps != 25e9 || !got.DefaultRoute || !f.Links["peer0"].DefaultRoute {
			t.Errorf("shaped0 alias %q (%d, %v), default routes %v, %v", got.Alias, bps, ok, got.DefaultRoute, f.Links["peer0"].DefaultRoute)
		}
		if s := got.Shaper(); s == nil || s.Kind != "tbf" || s.RateBitsPerSec != 25e9 {
			t.Errorf("shaped0's shaper: %+v", s)
		}
		b, err := f.Marshal()
		if err != nil {
			t.Error(err)
			return
		}
		back, err := Parse(b)
		if err != nil || back.Links["shaped0"].Qdisc.RateBitsPerSec != 25e9 {
			t.Errorf("round trip: %+v, %v", back, err)
		}
	})
}

// TestQueryHTB reads an htb tree tc built: the qdisc's default class,
// the classes' rates and ceils, a tbf inside the default class.
func TestQueryHTB(t *testing.T) {
	testbin.NeedRoot(t, "network namespaces")
	if _, err := exec.LookPath("tc"); err != nil {
		t.Fatal("tc is not installed: apt-get install -y iproute2")
	}
	testbin.InNewNetns(t, func() {
		for _, c := range [][]string{
			{"ip", "link", "add", "htb0", "type", "veth", "peer", "name", "htb0p"},
			{"ip", "link", "set", "htb0", "up"},
			{"tc", "qdisc", "add", "dev", "htb0", "root", "handle", "1:", "htb", "default", "10"},
			{"tc", "class", "add", "dev", "htb0", "parent", "1:", "classid", "1:1", "htb", "rate", "40gbit", "ceil", "40gbit"},
			{"tc", "class", "add", "dev", "htb0", "parent", "1:1", "classid", "1:10", "htb", "rate", "5gbit", "ceil", "25gbit"},
			{"tc", "qdisc", "add", "dev", "htb0", "parent", "1:10", "handle", "10:", "tbf", "rate", "30gbit", "burst", "1mb", "latency", "5ms"},
		} {
			if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
				t.Errorf("%v: %v\n%s", c, err, out)
				return
			}
		}
		f, err := Query()
		if err != nil {
			t.Error(err)
			return
		}
		l := f.Links["htb0"]
		if len(l.Qdiscs) != 2 || l.Qdiscs[0].Kind != "htb" || l.Qdiscs[0].Parent != "root" || l.Qdiscs[0].DefaultClass != "1:10" ||
			l.Qdiscs[1].Kind != "tbf" || l.Qdiscs[1].Parent != "1:10" || l.Qdiscs[1].RateBitsPerSec != 30e9 {
			t.Errorf("qdiscs %+v", l.Qdiscs)
		}
		ceil := map[string]uint64{}
		for _, c := range l.Classes {
			if c.Kind == "htb" {
				ceil[c.Handle+" under "+c.Parent] = c.CeilBitsPerSec
			}
		}
		if len(ceil) != 2 || ceil["1:1 under root"] != 40e9 || ceil["1:10 under 1:1"] != 25e9 {
			t.Errorf("classes %+v", l.Classes)
		}
		// The default class's ceil (25) binds before the tbf (30) and the
		// root class (40).
		if s := l.Shaper(); s == nil || s.Kind != "htb" || s.Handle != "1:10" || s.RateBitsPerSec != 25e9 {
			t.Errorf("shaper %+v", s)
		}
		if l.Qdisc == nil || l.Qdisc.Kind != "htb" || l.Qdisc.RateBitsPerSec != 25e9 {
			t.Errorf("summary %+v", l.Qdisc)
		}
	})
}

func TestParseBad(t *testing.T) {
	if _, err := Parse([]byte("{not json")); err == nil {
		t.Error("garbage parsed")
	}
	f, err := Parse([]byte(`{"links":null,"future":1}`))
	if err != nil || f.Links == nil {
		t.Errorf("empty facts: %+v, %v", f, err)
	}
}
