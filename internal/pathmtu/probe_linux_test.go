package pathmtu

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// fast keeps the tests' timeouts short; the namespaces answer in
// microseconds. One test runs with the defaults.
var fast = Options{Timeout: 150 * time.Millisecond, Tries: 2}

var (
	addrA = netip.MustParseAddr("198.18.200.1")
	addrB = netip.MustParseAddr("198.18.200.2")
	addrR = netip.MustParseAddr("198.18.200.254")
	addrC = netip.MustParseAddr("198.18.201.2")
)

// pair builds namespaces a and b joined by veth lrt0 (a, 198.18.200.1,
// mtuA) and lrt1 (b, 198.18.200.2, mtuB).
func pair(t *testing.T, mtuA, mtuB int) (a, b netns.NsHandle) {
	t.Helper()
	a, b = newNS(t), newNS(t)
	veth(t, end{a, "lrt0", "198.18.200.1/24", mtuA}, end{b, "lrt1", "198.18.200.2/24", mtuB})
	return a, b
}

// probeIn runs a probe from a goroutine locked into ns.
func probeIn(t *testing.T, ns netns.NsHandle, dst netip.Addr, mtu int, opts Options, kinds ...sockKind) Result {
	t.Helper()
	if len(kinds) == 0 {
		kinds = []sockKind{kindRaw, kindPing}
	}
	var res Result
	err := inNS(ns, func() error {
		var err error
		res, err = probe(context.Background(), dst, mtu, opts, kinds)
		return err
	})
	if err != nil {
		t.Fatalf("probe %v at %d: %v (result %+v)", dst, mtu, err, res)
	}
	t.Logf("probe %v at %d: %+v", dst, mtu, res)
	return res
}

// check compares the headline fields of a result.
func check(t *testing.T, res Result, ok bool, largest int, reasons ...Reason) {
	t.Helper()
	if res.OK != ok || res.Largest != largest {
		t.Errorf("ok, largest = %v, %d; want %v, %d", res.OK, res.Largest, ok, largest)
	}
	if len(res.Failures) < len(reasons) {
		t.Fatalf("failures = %+v; want at least %v", res.Failures, reasons)
	}
	for i, r := range reasons {
		if res.Failures[i].Reason != r {
			t.Errorf("failure %d = %+v; want reason %s", i, res.Failures[i], r)
		}
	}
	if res.Probes < len(res.Failures) || res.Probes < 1 {
		t.Errorf("probes = %d with %d failures", res.Probes, len(res.Failures))
	}
}

func TestProbeJumboToStandard(t *testing.T) {
	requireRoot(t)
	a, b := pair(t, 9000, 1500)

	// From the jumbo side the 9000-byte request is dropped silently by
	// the 1500-byte end; sizes just above 1500 squeeze through the veth
	// but their replies come back fragmented.
	res := probeIn(t, a, addrB, 9000, fast)
	check(t, res, false, 1500, ReasonTimeout)
	if f := res.Failures[0]; f.Size != 9000 {
		t.Errorf("first failure at %d; want 9000", f.Size)
	}
	if res.Socket != "raw" {
		t.Errorf("socket = %q; want raw", res.Socket)
	}

	check(t, probeIn(t, a, addrB, 1500, fast), true, 1500)

	// From the standard side the kernel refuses locally and says why.
	res = probeIn(t, b, addrA, 9000, fast)
	check(t, res, false, 1500, ReasonLocalMTU)
	if f := res.Failures[0]; f.MTU != 1500 {
		t.Errorf("local failure %+v; want MTU 1500", f)
	}

	// The egress interface and MTU on each side.
	for _, tt := range []struct {
		ns    netns.NsHandle
		dst   netip.Addr
		iface string
		mtu   int
	}{{a, addrB, "lrt0", 9000}, {b, addrA, "lrt1", 1500}} {
		var iface string
		var mtu int
		err := inNS(tt.ns, func() (err error) {
			iface, mtu, err = EgressMTU(tt.dst)
			return err
		})
		if err != nil || iface != tt.iface || mtu != tt.mtu {
			t.Errorf("EgressMTU(%v) = %q, %d, %v; want %q, %d", tt.dst, iface, mtu, err, tt.iface, tt.mtu)
		}
	}
}

func TestProbeDefaults(t *testing.T) {
	requireRoot(t)
	a, _ := pair(t, 9000, 1500)
	start := time.Now()
	res := probeIn(t, a, addrB, 9000, Options{})
	check(t, res, false, 1500, ReasonTimeout)
	// The 9000-byte size waits out its three tries; 1500 passes and
	// 1501's reply returns fragmented, so nothing else waits.
	if got := res.Probes; got != DefaultTries+2 {
		t.Errorf("probes = %d; want %d", got, DefaultTries+2)
	}
	t.Logf("took %v", time.Since(start))
}

func TestProbeMatchingJumbo(t *testing.T) {
	requireRoot(t)
	a, b := pair(t, 9000, 9000)
	for _, p := range []struct {
		ns  netns.NsHandle
		dst netip.Addr
	}{{a, addrB}, {b, addrA}} {
		res := probeIn(t, p.ns, p.dst, 9000, fast)
		check(t, res, true, 9000)
		if len(res.Failures) != 0 || res.Probes != 1 {
			t.Errorf("failures %+v, probes %d; want none and 1", res.Failures, res.Probes)
		}
	}
}

// router builds a ─ r ─ c: a (198.18.200.1, MTU 9000) reaches c
// (198.18.201.2) through r, whose link to c has MTU 1500, so r answers
// oversized packets with ICMP "fragmentation needed".
func router(t *testing.T) (a, r, c netns.NsHandle) {
	t.Helper()
	a, r, c = newNS(t), newNS(t), newNS(t)
	veth(t, end{a, "lrt0", "198.18.200.1/24", 9000}, end{r, "lrt1", "198.18.200.254/24", 9000})
	veth(t, end{r, "lrt2", "198.18.201.254/24", 1500}, end{c, "lrt3", "198.18.201.2/24", 1500})
	route(t, a, "198.18.201.0/24", "198.18.200.254")
	route(t, c, "198.18.200.0/24", "198.18.201.254")
	sysctl(t, r, "net/ipv4/ip_forward", "1")
	return a, r, c
}

func TestProbeFragNeeded(t *testing.T) {
	requireRoot(t)
	for _, kind := range []sockKind{kindRaw, kindPing} {
		t.Run(kind.String(), func(t *testing.T) {
			a, _, _ := router(t)
			if kind == kindPing {
				sysctl(t, a, "net/ipv4/ping_group_range", "0 0")
			}
			res := probeIn(t, a, addrC, 9000, fast, kind)
			check(t, res, false, 1500, ReasonFragNeeded)
			f := res.Failures[0]
			if f.Size != 9000 || f.MTU != 1500 || f.From != addrR.String() {
				t.Errorf("failure %+v; want 9000 from %v with next-hop MTU 1500", f, addrR)
			}
			if res.Socket != kind.String() {
				t.Errorf("socket = %q; want %q", res.Socket, kind)
			}
			// The path MTU is cached now: above 1500 fails locally.
			for _, f := range res.Failures[1:] {
				if f.Reason != ReasonLocalMTU || f.MTU != 1500 {
					t.Errorf("later failure %+v; want local_mtu 1500", f)
				}
			}
			check(t, probeIn(t, a, addrC, 1500, fast, kind), true, 1500)
		})
	}
}

func TestProbeLoopback(t *testing.T) {
	requireRoot(t)
	ns := newNS(t)
	setMTU(t, ns, "lo", 1500)
	dsts := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	if _, err := os.Stat("/proc/sys/net/ipv6"); err == nil {
		dsts = append(dsts, netip.IPv6Loopback())
	}
	for _, dst := range dsts {
		for _, kind := range []sockKind{kindRaw, kindPing} {
			t.Run(dst.String()+"/"+kind.String(), func(t *testing.T) {
				if kind == kindPing {
					sysctl(t, ns, "net/ipv4/ping_group_range", "0 0")
				}
				res := probeIn(t, ns, dst, 9000, fast, kind)
				check(t, res, false, 1500, ReasonLocalMTU)
				if f := res.Failures[0]; f.MTU != 1500 {
					t.Errorf("failure %+v; want the route's MTU 1500", f)
				}
				check(t, probeIn(t, ns, dst, 1500, fast, kind), true, 1500)
			})
		}
	}
}

func TestProbeNoReply(t *testing.T) {
	requireRoot(t)
	a, b := pair(t, 1500, 1500)
	sysctl(t, b, "net/ipv4/icmp_echo_ignore_all", "1")
	res := probeIn(t, a, addrB, 1500, Options{Timeout: 100 * time.Millisecond, Tries: 1})
	// 1500, then the minimum: nothing passes, and the search stops there.
	check(t, res, false, 0, ReasonTimeout, ReasonTimeout)
	if len(res.Failures) != 2 || res.Failures[1].Size != MinIPv4MTU {
		t.Errorf("failures %+v; want 1500 and %d", res.Failures, MinIPv4MTU)
	}
}

func TestProbeCancel(t *testing.T) {
	requireRoot(t)
	a, b := pair(t, 1500, 1500)
	sysctl(t, b, "net/ipv4/icmp_echo_ignore_all", "1")
	// The peer never answers and the probe's own timeout is a minute: only
	// the cancel can end it, and then with the context's error.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(100*time.Millisecond, cancel)
	var err error
	_ = inNS(a, func() error {
		_, err = Probe(ctx, addrB, 1500, Options{Timeout: time.Minute})
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Probe with a cancelled context: %v; want context.Canceled", err)
	}
}

// TestProbeUnprivileged drops root on one locked thread (setresuid on that
// thread alone, not the process) and expects the permission error.
func TestProbeUnprivileged(t *testing.T) {
	requireRoot(t)
	a, _ := pair(t, 1500, 1500) // ping_group_range is "1 0" (nobody) in a new namespace
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: this thread's credentials are changed
		if err := netns.Set(a); err != nil {
			errc <- err
			return
		}
		// Raw syscalls: unix.Setresuid would change every thread.
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, 65534, 65534, 65534); e != 0 {
			errc <- e
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, 65534, 65534, 65534); e != 0 {
			errc <- e
			return
		}
		_, err := Probe(context.Background(), addrB, 1500, fast)
		errc <- err
	}()
	err := <-errc
	if !errors.Is(err, ErrPermission) {
		t.Fatalf("unprivileged Probe: %v; want ErrPermission", err)
	}
	t.Log(err)
}

func TestEgressMTUErrors(t *testing.T) {
	requireRoot(t)
	ns := newNS(t) // loopback only: no route to anything else
	err := inNS(ns, func() error {
		_, _, err := EgressMTU(addrB)
		return err
	})
	if err == nil {
		t.Error("EgressMTU without a route: want an error")
	}
	if _, _, err := EgressMTU(netip.Addr{}); err == nil {
		t.Error("EgressMTU(invalid): want an error")
	}
}
