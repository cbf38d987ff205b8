package engine

import (
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestTCPInfo reads TCP_INFO of a loopback connection that carried a
// bulk transfer and then a trickle: this kernel gives the sender's
// fields (Linux 4.19) and the receiver's (rcv_wnd: 6.2); the chrono stats
// grew while data was queued; a delivery-rate sample taken while the
// application wrote one byte at a time is app-limited; an interval's
// account is the growth between two reads.
func TestTCPInfo(t *testing.T) {
	tx, rx := tcpPair(t)
	before, err := readTCPInfo(tx)
	if err != nil || !before.ok || !before.hasSender || !before.hasWnd || !before.hasOOO {
		t.Fatalf("TCP_INFO: %+v, %v", before, err)
	}
	done := make(chan struct{})
	go func() { // the receiver drains whatever comes
		defer close(done)
		buf := make([]byte, 1<<20)
		for {
			if n, err := unix.Read(rx, buf); n <= 0 || err != nil {
				return
			}
		}
	}()
	bulk := make([]byte, 4<<20)
	for range 64 {
		if err := writeAll(tx, bulk); err != nil {
			t.Fatal(err)
		}
	}
	mid, _ := readTCPInfo(tx)
	st := senderStats(before, mid)
	if st == nil || st.BusyUs == 0 || st.SndCwnd == 0 || st.DeliveryRateBps <= 0 || st.RwndLimitedUs+st.SndbufLimitedUs > st.BusyUs {
		t.Fatalf("after 256 MiB: %+v", st)
	}
	for range 20 { // one byte at a time, each acknowledged before the next
		writeAll(tx, []byte{1})
		time.Sleep(5 * time.Millisecond)
	}
	after, _ := readTCPInfo(tx)
	if s := senderStats(mid, after); s == nil || s.BusyUs > uint64(time.Second/time.Microsecond) || s.Retrans != 0 {
		t.Errorf("the trickle's interval: %+v", s)
	}
	// The app-limited flag belongs to the rate sample the kernel keeps:
	// the last one not app-limited, or an app-limited one at least as
	// fast (tcp_rate_gen). After the bulk, a trickle's samples are slower
	// and seldom replace the bulk's, so the flag is read on a connection
	// that only ever trickled.
	ttx, trx := tcpPair(t)
	var trickle tcpInfo
	for range 20 {
		writeAll(ttx, []byte{1})
		time.Sleep(5 * time.Millisecond)
		unix.Read(trx, make([]byte, 16))
	}
	if trickle, _ = readTCPInfo(ttx); !trickle.AppLimited {
		t.Errorf("a trickle of single bytes is not app-limited: %+v", trickle)
	}
	r, _ := readTCPInfo(rx)
	rs := receiverStats(before, r)
	if rs == nil || rs.Space == nil || *rs.Space == 0 || rs.Wnd == nil || *rs.Wnd == 0 {
		t.Errorf("receiver's account: %+v", rs)
	}
	unix.Shutdown(tx, unix.SHUT_WR)
	<-done
	if _, err := readTCPInfo(-1); err == nil {
		t.Error("TCP_INFO of no socket succeeded")
	}
}

// TestTCPInfoShort: a kernel whose TCP_INFO ends before the sender's
// fields (older than Linux 4.19) gives no sender account; one that ends
// before rcv_wnd (before 6.2) gives none of it. The lengths are the
// kernel's as getTCPInfo returns them.
func TestTCPInfoShort(t *testing.T) {
	if tiSenderEnd >= tiOOOEnd || tiOOOEnd >= tiWndEnd || tiWndEnd > unsafe.Sizeof(unix.TCPInfo{}) {
		t.Fatalf("offsets %d %d %d", tiSenderEnd, tiOOOEnd, tiWndEnd)
	}
	if s := senderStats(tcpInfo{ok: true}, tcpInfo{ok: true}); s != nil {
		t.Errorf("no sender fields, yet %+v", s)
	}
	r := receiverStats(tcpInfo{ok: true}, tcpInfo{ok: true, RcvWnd: 9, RcvOOO: 3})
	if r == nil || r.Wnd != nil || r.OOOPack != nil || r.Space == nil {
		t.Errorf("receiver fields a kernel did not give: %+v", r)
	}
	if grew(uint32(10), uint32(4)) != 0 || grew(uint64(4), uint64(10)) != 6 {
		t.Error("grew")
	}
	if pacingBps(^uint64(0)) != 0 || pacingBps(1000) != 8000 {
		t.Error("pacingBps")
	}
}

// BenchmarkTCPInfo is what one interval's TCP_INFO read of one stream
// costs (the sampler makes one per stream per interval): with its ns/op,
// a run of S streams at intervals of I seconds spends S × ns/op / I of a
// CPU's time on it (docs/benchmarks.md).
func BenchmarkTCPInfo(b *testing.B) {
	tx, _ := tcpPair(b)
	for b.Loop() {
		if _, err := readTCPInfo(tx); err != nil {
			b.Fatal(err)
		}
	}
}
