package limits

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Socket buffers and the TCP window.
//
// A socket buffer limit is memory, not window. The kernel charges every
// segment it holds at its skb's truesize (payload, sk_buff, page slack)
// and so advertises or keeps in flight only a share of the buffer:
//
//   - Receive, Linux before 6.6: window = buffer − buffer/2^s for
//     s = net.ipv4.tcp_adv_win_scale > 0, buffer/2^−s for s ≤ 0. The
//     default s is 1 (half the buffer) since 3.11, 2 (three quarters)
//     before.
//   - Receive, Linux 6.6 and later: tcp_adv_win_scale is no longer read;
//     window = buffer × scaling_ratio/256, where the kernel measures
//     scaling_ratio per socket as payload/truesize of the segments it
//     receives, starting at 128 (half). The ratio depends on the driver's
//     buffers (a page per 1500-byte frame gives about a third, GRO'd
//     jumbo frames more), so half — the kernel's own starting point — is
//     the share assumed.
//   - Send, every kernel: the send buffer holds each segment until it is
//     acknowledged, and autotuning (tcp_sndbuf_expand) sizes it at twice
//     the congestion window to leave room for fast recovery (RFC 5681
//     3.2) and an application slow to refill it: half of it is window.
//
// A buffer a program sets itself (SO_RCVBUF, SO_SNDBUF: iperf3 -w) is
// capped at net.core.rmem_max or wmem_max and then doubled by the kernel
// "to allow space for bookkeeping overhead" (socket(7)), so such a limit
// gives twice the window of an autotuned one.
//
// Window is the one function the doctor rule, its estimate and tune's
// recommendation all come from. Worked numbers, Linux 4.15 with
// tcp_adv_win_scale=1 and a 40 Gbit/s link at 1 ms (BDP 5,000,000 bytes):
// tcp_rmem max 6 MiB gives a window of 3 MiB (25.2 Gbit/s) and tcp_wmem
// max 4 MiB one of 2 MiB (16.8 Gbit/s), so an autotuned flow tops out near
// 16.8 Gbit/s; both need 10,000,000 bytes (Need), and the recommendation
// is the next power of two, 16 MiB (BufferSize). rmem_max = 212992 gives
// iperf3 -w a window of 212992 bytes (1.7 Gbit/s) and needs 5,000,000.

// BufferUse says which limit a buffer size is and so how the kernel turns
// it into window.
type BufferUse int

// The four socket buffer limits.
const (
	// AutoReceive is net.ipv4.tcp_rmem's maximum: autotuned receive buffers.
	AutoReceive BufferUse = iota
	// AutoSend is net.ipv4.tcp_wmem's maximum: autotuned send buffers.
	AutoSend
	// SetReceive is net.core.rmem_max: the cap on SO_RCVBUF.
	SetReceive
	// SetSend is net.core.wmem_max: the cap on SO_SNDBUF.
	SetSend
)

// BufferKeys names the sysctl of each use, in the order doctor and tune
// list them.
func BufferKeys() []struct {
	Key string
	Use BufferUse
} {
	return []struct {
		Key string
		Use BufferUse
	}{
		{"net.core.rmem_max", SetReceive},
		{"net.core.wmem_max", SetSend},
		{"net.ipv4.tcp_rmem", AutoReceive},
		{"net.ipv4.tcp_wmem", AutoSend},
	}
}

// sendShare is the share of a send buffer that is window (see above).
const sendShare = 0.5

// WindowModel is how one host's kernel turns socket buffer limits into a
// TCP window.
type WindowModel struct {
	// Receive is the share of a receive buffer advertised as window.
	Receive float64 `json:"receive_share"`
	// Basis says where Receive comes from, for the evidence.
	Basis string `json:"basis"`
}

// KernelWindow returns the window model of a kernel release ("6.8.0-51-
// generic") with its net.ipv4.tcp_adv_win_scale (haveScale false when it
// was not read). An unreadable release is taken as a current kernel.
func KernelWindow(release string, advWinScale int64, haveScale bool) WindowModel {
	major, minor, ok := kernelVersion(release)
	switch {
	case !ok:
		return WindowModel{Receive: 0.5, Basis: "kernel version unknown: the receive window taken as 1/2 of the buffer"}
	case major > 6 || (major == 6 && minor >= 6):
		return WindowModel{Receive: 0.5, Basis: fmt.Sprintf("Linux %d.%d measures each socket's payload/truesize and starts at 1/2 of the buffer", major, minor)}
	}
	s, how := advWinScale, "net.ipv4.tcp_adv_win_scale"
	if !haveScale {
		s, how = 1, "the default tcp_adv_win_scale"
		if major < 3 || (major == 3 && minor < 11) {
			s = 2
		}
	}
	s = max(-31, min(31, s))
	share := 1 - math.Ldexp(1, -int(s))
	if s <= 0 {
		share = math.Ldexp(1, int(s))
	}
	return WindowModel{Receive: share, Basis: fmt.Sprintf("Linux %d.%d with %s=%d advertises %s of the buffer", major, minor, how, s, fraction(share))}
}

// kernelVersion reads the major and minor numbers of a kernel release.
func kernelVersion(release string) (major, minor int, ok bool) {
	f := strings.SplitN(release, ".", 3)
	if len(f) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(f[0])
	minorText := f[1]
	if i := strings.IndexFunc(minorText, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minorText = minorText[:i]
	}
	minor, err2 := strconv.Atoi(minorText)
	return major, minor, err1 == nil && err2 == nil && major > 0
}

// fraction writes a share as the fraction people know: "1/2", "3/4".
func fraction(share float64) string {
	if share >= 1 {
		return "all"
	}
	for _, den := range []int{2, 4, 8, 16, 32} {
		num := share * float64(den)
		if num == math.Trunc(num) {
			return fmt.Sprintf("%d/%d", int(num), den)
		}
	}
	return strconv.FormatFloat(share, 'g', 4, 64)
}

// Share is the part of a limit of use u that becomes window: the model's
// receive share, or the send share, doubled for a limit a program sets
// itself (the kernel doubles SO_RCVBUF and SO_SNDBUF).
func (m WindowModel) Share(u BufferUse) float64 {
	s := m.Receive
	if u == AutoSend || u == SetSend {
		s = sendShare
	}
	if s <= 0 {
		s = 0.5
	}
	if u == SetReceive || u == SetSend {
		s *= 2
	}
	return s
}

// Window is the TCP window, in bytes, that a buffer limit of use u allows
// one flow: the limit × Share(u), rounded down. tcp_rmem max 6291456 at a
// share of 1/2 is a 3145728-byte window.
func (m WindowModel) Window(limit int64, u BufferUse) int64 {
	f := math.Floor(float64(max(limit, 0)) * m.Share(u))
	if f >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(f)
}

// Need is the smallest limit of use u whose Window reaches bdp bytes:
// bdp / Share(u), rounded up. 5,000,000 bytes of BDP need a tcp_rmem max
// of 10,000,000 at a share of 1/2, and an rmem_max of 5,000,000.
func (m WindowModel) Need(bdp int64, u BufferUse) int64 {
	bdp = max(bdp, 0)
	f := math.Ceil(float64(bdp) / m.Share(u))
	if f >= math.MaxInt64 {
		return math.MaxInt64
	}
	n := int64(f)
	for m.Window(n, u) < bdp { // float rounding
		n++
	}
	return n
}

// Rate is the rate one flow reaches when its window, from a limit of use
// u, is all in flight each round trip: Window × 8 / RTT. A non-positive
// RTT gives 0.
func (m WindowModel) Rate(limit int64, u BufferUse, rtt time.Duration) Gbps {
	if rtt <= 0 {
		return 0
	}
	return Gbps(float64(m.Window(limit, u)) * 8 / rtt.Seconds() / 1e9)
}

// Socket buffer bounds for BufferSize.
const (
	// MinBuffer is 4 MiB, Linux's default tcp_wmem maximum: a
	// recommendation never lowers a default.
	MinBuffer = 4 << 20
	// MaxBuffer is 2 GiB − 1, the largest value net.core.rmem_max and
	// wmem_max accept (they are C ints); fasterdata's 100G advice.
	MaxBuffer = 1<<31 - 1
)

// BufferSize is the socket buffer limit tune sets, for all four limits, at
// a rate and RTT: the largest Need over the four uses, rounded up to a
// power of two so that values are tidy and leave headroom, then held
// between MinBuffer and MaxBuffer. 100 Gbit/s × 1 ms at shares of 1/2:
// BDP 12.5 MB, tcp_rmem and tcp_wmem need 25 MB, so 32 MiB.
func (m WindowModel) BufferSize(rate Gbps, rtt time.Duration) int64 {
	bdp := BDP(rate, rtt)
	var need int64
	for _, k := range BufferKeys() {
		need = max(need, m.Need(bdp, k.Use))
	}
	if need > MaxBuffer {
		return MaxBuffer
	}
	size := int64(MinBuffer)
	for size < need {
		size <<= 1
	}
	return min(size, MaxBuffer)
}
