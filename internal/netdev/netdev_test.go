package netdev

import (
	"os"
	"runtime"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("needs root (network namespaces); CI runs as root")
	}
	t.Skip("needs root (network namespaces)")
}

// inNewNetns runs f on a locked thread inside a fresh, unnamed network
// namespace, which disappears with the thread.
func inNewNetns(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		// The thread is never unlocked: it dies with the goroutine, and
		// the namespace with it.
		orig, err := netns.Get()
		if err != nil {
			t.Error(err)
			return
		}
		defer orig.Close()
		ns, err := netns.New()
		if err != nil {
			t.Error(err)
			return
		}
		defer ns.Close()
		f()
	}()
	<-done
}

func TestQueryShapedLink(t *testing.T) {
	needRoot(t)
	inNewNetns(t, func() {
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
