package engine

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/result"
)

// tcpInfo is the part of TCP_INFO a report shows, as one read of it gave
// it. The kernel copies as much of its struct tcp_info as the caller
// asks for and its version has: which fields came is known from the
// length it returns (a field it does not have is absent from the
// report, never zero).
type tcpInfo struct {
	ok           bool   // the read succeeded
	RTT, RTTVar  uint32 // microseconds
	Cwnd         uint64 // bytes: snd_cwnd × snd_mss
	TotalRetrans uint32
	DeliveryRate uint64 // bytes per second

	// The sender's account (Linux 4.19: the chrono stats came in 4.10,
	// reord_seen in 4.19); chrono values are cumulative microseconds.
	hasSender                    bool
	Busy, RwndLimited, SndbufLim uint64
	AppLimited                   bool
	ReordSeen, Lost              uint32
	SndCwnd, SndSsthresh         uint32
	PacingRate                   uint64 // bytes per second

	// The receiver's account.
	RcvRTT, RcvSpace uint32
	RcvOOO, RcvWnd   uint32
	hasOOO, hasWnd   bool // Linux 5.4, 6.2
}

// The end offsets of the fields whose presence depends on the kernel.
var (
	tiSenderEnd = unsafe.Offsetof(unix.TCPInfo{}.Reord_seen) + 4
	tiOOOEnd    = unsafe.Offsetof(unix.TCPInfo{}.Rcv_ooopack) + 4
	tiWndEnd    = unsafe.Offsetof(unix.TCPInfo{}.Rcv_wnd) + 4
)

// appLimitedByte is the offset of the byte holding the bit field
// tcpi_delivery_rate_app_limited: after tcpi_options and the window
// scales, a byte x/sys/unix's struct leaves as padding.
const appLimitedByte = 7

// bigEndian is whether this machine stores the most significant byte
// first: C bit fields are laid out from the other end of the byte there.
var bigEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 0
}()

// getTCPInfo reads fd's TCP_INFO into ti and returns how many bytes the
// kernel gave. unix.GetsockoptTCPInfo drops that length, which says
// which fields this kernel has.
func getTCPInfo(fd int, ti *unix.TCPInfo) (uintptr, error) {
	n := uint32(unsafe.Sizeof(*ti))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.IPPROTO_TCP, unix.TCP_INFO,
		uintptr(unsafe.Pointer(ti)), uintptr(unsafe.Pointer(&n)), 0)
	if e != 0 {
		return 0, e
	}
	return uintptr(n), nil
}

func readTCPInfo(fd int) (tcpInfo, error) {
	var ti unix.TCPInfo
	n, err := getTCPInfo(fd, &ti)
	if err != nil {
		return tcpInfo{}, err
	}
	out := tcpInfo{ok: true,
		RTT: ti.Rtt, RTTVar: ti.Rttvar,
		Cwnd:         uint64(ti.Snd_cwnd) * uint64(ti.Snd_mss),
		TotalRetrans: ti.Total_retrans,
		DeliveryRate: ti.Delivery_rate,
		RcvRTT:       ti.Rcv_rtt, RcvSpace: ti.Rcv_space,
	}
	if n >= tiSenderEnd {
		flags := (*[8]byte)(unsafe.Pointer(&ti))[appLimitedByte]
		if bigEndian {
			flags >>= 7
		}
		out.hasSender = true
		out.Busy, out.RwndLimited, out.SndbufLim = ti.Busy_time, ti.Rwnd_limited, ti.Sndbuf_limited
		out.AppLimited = flags&1 != 0
		out.ReordSeen, out.Lost = ti.Reord_seen, ti.Lost
		out.SndCwnd, out.SndSsthresh = ti.Snd_cwnd, ti.Snd_ssthresh
		out.PacingRate = ti.Pacing_rate
	}
	out.hasOOO, out.hasWnd = n >= tiOOOEnd, n >= tiWndEnd
	out.RcvOOO, out.RcvWnd = ti.Rcv_ooopack, ti.Rcv_wnd
	return out, nil
}

// grew is how much a cumulative counter grew from a to b; 0 if it went
// back (a socket read before and after its peer reset it).
func grew[T uint32 | uint64](a, b T) uint64 {
	if b < a {
		return 0
	}
	return uint64(b - a)
}

// senderStats is a sending socket's account of one interval, from its
// TCP_INFO at the interval's start (prev) and end (cur); nil when either
// read failed or the kernel is older than Linux 4.19.
func senderStats(prev, cur tcpInfo) *result.TCPStats {
	if !prev.ok || !cur.ok || !cur.hasSender {
		return nil
	}
	return &result.TCPStats{
		BusyUs:          grew(prev.Busy, cur.Busy),
		RwndLimitedUs:   grew(prev.RwndLimited, cur.RwndLimited),
		SndbufLimitedUs: grew(prev.SndbufLim, cur.SndbufLim),
		DeliveryRateBps: float64(cur.DeliveryRate) * 8,
		AppLimited:      cur.AppLimited,
		ReordSeen:       grew(prev.ReordSeen, cur.ReordSeen),
		Lost:            uint64(cur.Lost),
		Retrans:         grew(prev.TotalRetrans, cur.TotalRetrans),
		SndCwnd:         cur.SndCwnd,
		SndSsthresh:     cur.SndSsthresh,
		PacingRateBps:   pacingBps(cur.PacingRate),
	}
}

// pacingBps is a pacing rate in bits/s; the kernel's "no rate yet"
// (~0, until the first RTT sample) is 0.
func pacingBps(bytesPerSec uint64) float64 {
	if bytesPerSec == ^uint64(0) || bytesPerSec == 1<<32-1 {
		return 0
	}
	return float64(bytesPerSec) * 8
}

// RcvTCP is a receiving socket's account of one interval: what TCP_INFO
// says of the receiver (result.TCPStats's rcv_* fields). It crosses the
// agent's wire as it is.
type RcvTCP struct {
	RTTUs   *uint32 `json:"rtt_us,omitempty"`
	Space   *uint32 `json:"space,omitempty"`
	Wnd     *uint32 `json:"wnd,omitempty"`
	OOOPack *uint64 `json:"ooopack,omitempty"`
}

// receiverStats is a receiving socket's account of one interval.
func receiverStats(prev, cur tcpInfo) *RcvTCP {
	if !cur.ok {
		return nil
	}
	r := &RcvTCP{RTTUs: ptrTo(cur.RcvRTT), Space: ptrTo(cur.RcvSpace)}
	if cur.hasWnd {
		r.Wnd = ptrTo(cur.RcvWnd)
	}
	if cur.hasOOO && prev.ok {
		r.OOOPack = ptrTo(grew(prev.RcvOOO, cur.RcvOOO))
	}
	return r
}

// Fill puts the receiver's account into t, the sender's.
func (r *RcvTCP) Fill(t *result.TCPStats) {
	if r == nil || t == nil {
		return
	}
	t.RcvRTTUs, t.RcvSpace, t.RcvWnd, t.RcvOOOPack = r.RTTUs, r.Space, r.Wnd, r.OOOPack
}

func ptrTo[T any](v T) *T { return &v }
