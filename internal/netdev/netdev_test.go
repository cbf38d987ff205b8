package netdev

import (
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
		if err := netlink.LinkSetUp(link); err != nil {
			t.Error(err)
			return
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
		if lo := f.Links["lo"]; lo.Kind != "device" {
			t.Errorf("lo = %+v", lo)
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

func TestParseBad(t *testing.T) {
	if _, err := Parse([]byte("{not json")); err == nil {
		t.Error("garbage parsed")
	}
	f, err := Parse([]byte(`{"links":null,"future":1}`))
	if err != nil || f.Links == nil {
		t.Errorf("empty facts: %+v, %v", f, err)
	}
}
