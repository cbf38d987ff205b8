package pathmtu

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// The tests build their own unnamed network namespaces joined by veth
// pairs, addressed from 198.18.0.0/15 (RFC 2544's benchmarking range).
// Nothing in them routes anywhere else, and they vanish when the test's
// handles close and the threads that entered them exit.

// requireRoot skips a test that needs root, unless CI=true says it must run.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("needs root to build network namespaces, and CI=true")
	}
	t.Skip("needs root to build network namespaces")
}

// inNS runs fn on an OS thread inside ns. The thread stays locked and so
// ends with its goroutine: no other goroutine ever runs in the namespace.
func inNS(ns netns.NsHandle, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := netns.Set(ns); err != nil {
			errc <- fmt.Errorf("entering namespace: %w", err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// newNS creates an unnamed network namespace with loopback up.
func newNS(t *testing.T) netns.NsHandle {
	t.Helper()
	type made struct {
		ns  netns.NsHandle
		err error
	}
	c := make(chan made, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see inNS
		ns, err := netns.New()
		c <- made{ns, err}
	}()
	m := <-c
	if m.err != nil {
		t.Fatalf("creating network namespace: %v", m.err)
	}
	t.Cleanup(func() { m.ns.Close() })
	h := handle(t, m.ns)
	lo, err := h.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		t.Fatal(err)
	}
	return m.ns
}

// handle opens a netlink handle in ns, closed at the end of the test.
func handle(t *testing.T, ns netns.NsHandle) *netlink.Handle {
	t.Helper()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatalf("netlink handle: %v", err)
	}
	t.Cleanup(h.Close)
	return h
}

// end is one end of a veth pair.
type end struct {
	ns   netns.NsHandle
	name string
	addr string // CIDR
	mtu  int
}

// veth joins two namespaces with a veth pair, addresses both ends and
// brings them up.
func veth(t *testing.T, a, b end) {
	t.Helper()
	ha, hb := handle(t, a.ns), handle(t, b.ns)
	v := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: a.name, MTU: a.mtu},
		PeerName:      b.name,
		PeerMTU:       uint32(b.mtu),
		PeerNamespace: netlink.NsFd(b.ns),
	}
	if err := ha.LinkAdd(v); err != nil {
		t.Fatalf("adding veth %s/%s: %v", a.name, b.name, err)
	}
	for _, e := range []struct {
		h *netlink.Handle
		end
	}{{ha, a}, {hb, b}} {
		l, err := e.h.LinkByName(e.name)
		if err != nil {
			t.Fatal(err)
		}
		if l.Attrs().MTU != e.mtu {
			t.Fatalf("%s has MTU %d; want %d", e.name, l.Attrs().MTU, e.mtu)
		}
		addr, err := netlink.ParseAddr(e.addr)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.h.AddrAdd(l, addr); err != nil {
			t.Fatalf("adding %s to %s: %v", e.addr, e.name, err)
		}
		if err := e.h.LinkSetUp(l); err != nil {
			t.Fatal(err)
		}
	}
	// Until linkwatch marks a new link operationally up (it may wait up to
	// a second), its queue discipline is noop and drops every packet.
	for _, e := range []struct {
		h    *netlink.Handle
		name string
	}{{ha, a.name}, {hb, b.name}} {
		deadline := time.Now().Add(5 * time.Second)
		for {
			l, err := e.h.LinkByName(e.name)
			if err != nil {
				t.Fatal(err)
			}
			if l.Attrs().OperState == netlink.OperUp {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not up after 5s: %v", e.name, l.Attrs().OperState)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// route adds a route in ns to dst (CIDR) via gw.
func route(t *testing.T, ns netns.NsHandle, dst, gw string) {
	t.Helper()
	_, n, err := net.ParseCIDR(dst)
	if err != nil {
		t.Fatal(err)
	}
	if err := handle(t, ns).RouteAdd(&netlink.Route{Dst: n, Gw: net.ParseIP(gw)}); err != nil {
		t.Fatalf("route to %s via %s: %v", dst, gw, err)
	}
}

// sysctl writes a per-namespace sysctl inside ns.
func sysctl(t *testing.T, ns netns.NsHandle, name, value string) {
	t.Helper()
	err := inNS(ns, func() error {
		return os.WriteFile("/proc/sys/"+name, []byte(value), 0o644)
	})
	if err != nil {
		t.Fatalf("sysctl %s=%s: %v", name, value, err)
	}
}

// setMTU sets a link's MTU inside ns.
func setMTU(t *testing.T, ns netns.NsHandle, name string, mtu int) {
	t.Helper()
	h := handle(t, ns)
	l, err := h.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.LinkSetMTU(l, mtu); err != nil {
		t.Fatalf("MTU %d on %s: %v", mtu, name, err)
	}
}
