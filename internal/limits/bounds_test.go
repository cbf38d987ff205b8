package limits

import (
	"math"
	"testing"
	"time"
)

// TestBounds pins every accepted extreme next to its rejected neighbour,
// so that a bound moved by one (a < turned into <=) fails a test.
func TestBounds(t *testing.T) {
	ok := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v; want it accepted", what, err)
		}
	}
	bad := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s accepted; want an error", what)
		}
	}
	_, err := PCIe(PCIeLink{GTs: 8, Width: 32})
	ok("x32", err)
	_, err = PCIe(PCIeLink{GTs: 8, Width: 1})
	ok("x1", err)
	_, err = PCIe(PCIeLink{GTs: 8, Width: 4, MPS: 4096})
	ok("MPS 4096", err)
	_, err = PCIe(PCIeLink{GTs: 8, Width: 4, MPS: 128})
	ok("MPS 128", err)
	// The audit's survivor: MPS 64 is a power of two but below the
	// spec's 128; so is 32.
	_, err = PCIe(PCIeLink{GTs: 8, Width: 4, MPS: 64})
	bad("MPS 64", err)

	_, err = TCPFrame(65535, Stack{})
	ok("MTU 65535", err)
	_, err = TCPFrame(1280, Stack{IPv6: true})
	ok("MTU 1280 IPv6", err)
	_, err = TCPFrame(1500, Stack{VLANTags: 2})
	ok("2 VLAN tags", err)
	_, err = TCPFrame(1500, Stack{VLANTags: 0})
	ok("no VLAN tag", err)
	_, err = PacketRate(100, 65535, Stack{})
	ok("packets of 65535", err)
	_, err = PacketRate(100, 0, Stack{})
	ok("packets of 0", err)

	// A window is the limit times the share, from 1 byte up: a
	// program-set limit of 1 byte is a 1-byte window (doubled, halved).
	var m WindowModel
	if w := m.Window(1, SetReceive); w != 1 {
		t.Errorf("Window(1, SetReceive) = %d; want 1", w)
	}
	if n := m.Need(1, SetReceive); n != 1 {
		t.Errorf("Need(1, SetReceive) = %d; want 1", n)
	}
	if n := m.Need(-5, AutoReceive); n != 0 {
		t.Errorf("Need(-5) = %d; want 0", n)
	}
	// 2^63 bytes in flight do not fit an int64: held at the largest.
	huge := Gbps(math.Ldexp(8, 63) / 1e9)
	if b := BDP(huge, time.Second); b != math.MaxInt64 {
		t.Errorf("BDP at 2^63 bytes = %d; want MaxInt64", b)
	}
	if b := BDP(huge*4, time.Second); b != math.MaxInt64 {
		t.Errorf("BDP above 2^63 bytes = %d; want MaxInt64", b)
	}
	// A kernel "3.0": its minor version is the 0 before the dot, not the
	// end of a number (the default tcp_adv_win_scale there is 2).
	if w := KernelWindow("3.0.101", 0, false); w.Receive != 0.75 {
		t.Errorf("KernelWindow(3.0.101) = %+v; want 3/4", w)
	}
	if w := KernelWindow("6.9-rc1", 2, true); w.Receive != 0.5 {
		t.Errorf("KernelWindow(6.9-rc1) = %+v; want 1/2", w)
	}
	if w := KernelWindow("6.5.0", 1, true); w.Receive != 0.5 || w.Basis != "Linux 6.5 with net.ipv4.tcp_adv_win_scale=1 advertises 1/2 of the buffer" {
		t.Errorf("KernelWindow(6.5.0) = %+v", w)
	}
}
