package limits

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestKernelWindow(t *testing.T) {
	tests := []struct {
		release string
		scale   int64
		have    bool
		share   float64
		basis   string
	}{
		// xeon-xl710-gen2-x4: Proxmox 4.15 with the default 1.
		{"4.15.18-30-pve", 1, true, 0.5, "Linux 4.15 with net.ipv4.tcp_adv_win_scale=1 advertises 1/2 of the buffer"},
		{"4.15.18-30-pve", 2, true, 0.75, "tcp_adv_win_scale=2 advertises 3/4"},
		{"5.15.0", 3, true, 0.875, "7/8"},
		{"6.5.13", -2, true, 0.25, "=-2 advertises 1/4"},
		{"6.5.13", 0, true, 1, "=0 advertises all of the buffer"},
		{"6.5.13", 40, true, 1 - math.Ldexp(1, -31), "=31"}, // the kernel's own bound
		{"6.5.13", -40, true, math.Ldexp(1, -31), "=-31"},
		// The default when the sysctl was not read: 1 since 3.11, 2 before.
		{"3.11.0", 0, false, 0.5, "the default tcp_adv_win_scale=1"},
		{"3.10.0-1160.el7.x86_64", 0, false, 0.75, "the default tcp_adv_win_scale=2"},
		{"2.6.32", 0, false, 0.75, "=2"},
		// 6.6 and later measure per socket and ignore the sysctl.
		{"6.6.0", 2, true, 0.5, "Linux 6.6 measures each socket's payload/truesize"},
		{"6.8.0-51-generic", 1, true, 0.5, "Linux 6.8 measures"},
		{"6.18.0", 1, true, 0.5, "Linux 6.18 measures"},
		{"7.1.0-rc2", 3, true, 0.5, "Linux 7.1 measures"},
		{"6.10+deb13-amd64", 2, true, 0.5, "Linux 6.10 measures"},
		// Minor numbers with the digits at both ends of the range.
		{"4.19.0-25-amd64", 1, true, 0.5, "Linux 4.19 with"},
		{"5.9", 1, true, 0.5, "Linux 5.9 with"},
		{"6.0.0", 1, true, 0.5, "Linux 6.0 with"},
		// Unreadable releases are taken as current kernels.
		{"", 2, true, 0.5, "kernel version unknown"},
		{"linux", 2, true, 0.5, "unknown"},
		{"6", 2, true, 0.5, "unknown"},
		{"0.5", 2, true, 0.5, "unknown"},
		{"x.5", 2, true, 0.5, "unknown"},
	}
	for _, tt := range tests {
		m := KernelWindow(tt.release, tt.scale, tt.have)
		if m.Receive != tt.share || !strings.Contains(m.Basis, tt.basis) {
			t.Errorf("KernelWindow(%q, %d, %v) = %v %q; want %v and a basis with %q", tt.release, tt.scale, tt.have, m.Receive, m.Basis, tt.share, tt.basis)
		}
	}
}

// TestWindowWorked pins the worked numbers of the model (buffers.go) on
// the walkthrough's host: Linux 4.15, tcp_adv_win_scale=1, a 40 Gbit/s link
// at 1 ms: BDP = 40e9/8 × 0.001 = 5,000,000 bytes.
func TestWindowWorked(t *testing.T) {
	m := KernelWindow("4.15.18-30-pve", 1, true)
	rtt := time.Millisecond
	bdp := BDP(40, rtt)
	if bdp != 5_000_000 {
		t.Fatalf("BDP = %d", bdp)
	}
	tests := []struct {
		use          BufferUse
		limit        int64
		window       int64
		rate         string // Gbit/s at 1 ms
		need         int64
		shareOfLimit float64
	}{
		// tcp_rmem max 6 MiB: half of it is window, 3 MiB = 25.17 Gbit/s;
		// 5 MB of window needs a 10 MB buffer. The old rule (1 × BDP) let
		// this 6 MiB cap on a 40G link pass.
		{AutoReceive, 6291456, 3145728, "25.17", 10_000_000, 0.5},
		// tcp_wmem max 4 MiB: 2 MiB of window (tcp_sndbuf_expand's 2 ×) =
		// 16.78 Gbit/s.
		{AutoSend, 4194304, 2097152, "16.78", 10_000_000, 0.5},
		// rmem_max 212992: SO_RCVBUF is doubled, then half is window:
		// 212992 bytes = 1.70 Gbit/s; 5 MB of window needs rmem_max 5 MB.
		{SetReceive, 212992, 212992, "1.70", 5_000_000, 1},
		{SetSend, 212992, 212992, "1.70", 5_000_000, 1},
	}
	for _, tt := range tests {
		if s := m.Share(tt.use); s != tt.shareOfLimit {
			t.Errorf("use %d: share %v; want %v", tt.use, s, tt.shareOfLimit)
		}
		if w := m.Window(tt.limit, tt.use); w != tt.window {
			t.Errorf("use %d: Window(%d) = %d; want %d", tt.use, tt.limit, w, tt.window)
		}
		if r := m.Rate(tt.limit, tt.use, rtt).String(); r != tt.rate {
			t.Errorf("use %d: Rate(%d) = %s; want %s", tt.use, tt.limit, r, tt.rate)
		}
		if n := m.Need(bdp, tt.use); n != tt.need {
			t.Errorf("use %d: Need(%d) = %d; want %d", tt.use, bdp, n, tt.need)
		}
	}
	// The recommendation: the largest need (10,000,000) rounded up to a
	// power of two: 16 MiB.
	if b := m.BufferSize(40, rtt); b != 16<<20 {
		t.Errorf("BufferSize(40, 1ms) = %d; want %d", b, 16<<20)
	}
	// A receive share of 3/4 (tcp_adv_win_scale=2) needs 6,666,667 for
	// tcp_rmem, but the send side still needs 10,000,000: 16 MiB again.
	m2 := KernelWindow("4.15.0", 2, true)
	if n := m2.Need(bdp, AutoReceive); n != 6_666_667 {
		t.Errorf("Need at 3/4 = %d; want 6666667", n)
	}
	if b := m2.BufferSize(40, rtt); b != 16<<20 {
		t.Errorf("BufferSize at 3/4 = %d; want %d", b, 16<<20)
	}
}

// TestNeedIsWindowsInverse: Need is the smallest limit whose Window
// reaches the BDP, for every use and share, so the rule's threshold and
// the recommendation can never disagree with the estimate.
func TestNeedIsWindowsInverse(t *testing.T) {
	for _, m := range []WindowModel{{Receive: 0.5}, {Receive: 0.75}, {Receive: 0.25}, {Receive: 1 - math.Ldexp(1, -31)}, {}} {
		for _, bdp := range []int64{1, 2, 3, 1000, 4096, 1_250_000, 5_000_000, 12_500_000, 1_000_000_007} {
			for _, k := range BufferKeys() {
				n := m.Need(bdp, k.Use)
				if m.Window(n, k.Use) < bdp {
					t.Errorf("%+v %s: Window(Need(%d) = %d) = %d < BDP", m, k.Key, bdp, n, m.Window(n, k.Use))
				}
				if n > 1 && m.Window(n-1, k.Use) >= bdp {
					t.Errorf("%+v %s: Need(%d) = %d is not the smallest (Window(%d) = %d)", m, k.Key, bdp, n, n-1, m.Window(n-1, k.Use))
				}
				if b := m.BufferSize(100, time.Millisecond); b < m.Need(BDP(100, time.Millisecond), k.Use) {
					t.Errorf("%+v %s: BufferSize %d below the need", m, k.Key, b)
				}
			}
		}
	}
}

func TestWindowEdges(t *testing.T) {
	var m WindowModel // the zero model shares as 1/2
	for _, k := range BufferKeys() {
		if w := m.Window(0, k.Use); w != 0 {
			t.Errorf("%s: Window(0) = %d", k.Key, w)
		}
		if w := m.Window(-5, k.Use); w != 0 {
			t.Errorf("%s: Window(-5) = %d", k.Key, w)
		}
		if n := m.Need(0, k.Use); n != 0 {
			t.Errorf("%s: Need(0) = %d", k.Key, n)
		}
		if n := m.Need(math.MaxInt64, k.Use); n != math.MaxInt64 {
			t.Errorf("%s: Need(MaxInt64) = %d", k.Key, n)
		}
		if w := m.Window(math.MaxInt64, k.Use); w <= 0 {
			t.Errorf("%s: Window(MaxInt64) = %d", k.Key, w)
		}
		if r := m.Rate(1<<20, k.Use, 0); r != 0 {
			t.Errorf("%s: Rate at RTT 0 = %v", k.Key, r)
		}
	}
	if got := BufferKeys(); len(got) != 4 || got[0].Key != "net.core.rmem_max" || got[3].Use != AutoSend {
		t.Errorf("BufferKeys() = %+v", got)
	}
	// A need above MaxBuffer is held at MaxBuffer.
	if b := m.BufferSize(400, time.Second); b != MaxBuffer {
		t.Errorf("BufferSize(400 Gbit/s, 1 s) = %d; want MaxBuffer", b)
	}
	// 1.25 MB of BDP needs 2.5 MB: the 4 MiB floor holds.
	if b := m.BufferSize(10, time.Millisecond); b != MinBuffer {
		t.Errorf("BufferSize(10, 1ms) = %d; want MinBuffer", b)
	}
	// 2.5 MB of BDP needs 5 MB: 8 MiB, not the floor.
	if b := m.BufferSize(20, time.Millisecond); b != 8<<20 {
		t.Errorf("BufferSize(20, 1ms) = %d; want 8 MiB", b)
	}
}
