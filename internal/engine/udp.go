package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A UDP stream is iperf3 -u's test: datagrams of Len bytes at a target
// rate, counted at the receiver for loss (sequence numbers), reordering
// and jitter (RFC 3550: transit = arrival − the sender's timestamp,
// J += (|D| − J)/16, as iperf3 computes it). Each datagram starts with a
// 16-byte header:
//
//	sequence number (8 bytes, little-endian; bit 63 set once the warm-up is over)
//	its send time (8 bytes, little-endian, Unix nanoseconds; stamp says which)
//
// The sequence numbers start again from 1 when the measured window
// begins, so the window's loss is counted apart from the warm-up's.

// Bounds of a UDP stream's datagrams.
const (
	// MinDatagram holds the header.
	MinDatagram = 16
	// MaxDatagram is what one IPv4 UDP datagram carries.
	MaxDatagram = 65507
	// measuredBit marks a datagram sent in the measured window.
	measuredBit = 1 << 63
	// udpBatch is the most datagrams one system call sends or receives.
	udpBatch = 64
)

// UDPMethod is how a UDP sender hands datagrams to the kernel.
type UDPMethod string

// UDP send methods (docs/benchmarks.md compares them).
const (
	// UDPWrite makes one write(2) per datagram, as iperf3 does.
	UDPWrite UDPMethod = "write"
	// UDPSendmmsg sends up to 64 datagrams per sendmmsg(2).
	UDPSendmmsg UDPMethod = "sendmmsg"
	// UDPGSO sends up to 64 datagrams as one buffer that the kernel
	// segments (UDP_SEGMENT, Linux 4.18): one pass through the stack.
	UDPGSO UDPMethod = "gso"
)

// UDPConfig is a UDP stream as its sender runs it.
type UDPConfig struct {
	Len int // datagram payload bytes, MinDatagram to MaxDatagram
	// Rate is the target in bits per second of payload (as iperf3 -b
	// counts); 0 sends as fast as the socket takes them.
	Rate           float64
	Omit, Duration time.Duration
	Method         UDPMethod
}

// UDPSender sends a UDP stream at its rate, on its own pinned thread.
type UDPSender struct {
	fd   int
	cpu  int
	cfg  UDPConfig
	halt atomic.Bool
	done <-chan error
	// all counts every datagram sent; measured those of the window.
	all, measured, measuredBytes atomic.Uint64
	window                       atomic.Int64 // ns the window has lasted so far
	method                       UDPMethod    // what was used (GSO may fall back)
}

// NewUDPSender prepares a sender over fd (a blocking UDP socket connected
// to the receiver), pinned to cpu (-1: unpinned).
func NewUDPSender(fd, cpu int, cfg UDPConfig) (*UDPSender, error) {
	switch {
	case cfg.Len < MinDatagram || cfg.Len > MaxDatagram:
		return nil, fmt.Errorf("datagram length %d: must be %d to %d bytes", cfg.Len, MinDatagram, MaxDatagram)
	case cfg.Rate < 0 || math.IsInf(cfg.Rate, 0) || math.IsNaN(cfg.Rate):
		return nil, fmt.Errorf("rate %g: must be positive, or 0 for unlimited", cfg.Rate)
	case cfg.Duration <= 0:
		return nil, errors.New("a UDP stream needs a duration")
	}
	if cfg.Method == "" {
		cfg.Method = UDPGSO
	}
	if cfg.Method == UDPGSO && gsoSegments(cfg.Len) < 2 {
		cfg.Method = UDPSendmmsg // datagrams too large to put two in one GSO buffer
	}
	return &UDPSender{fd: fd, cpu: cpu, cfg: cfg, method: cfg.Method}, nil
}

// gsoSegments is how many datagrams of n bytes one GSO send carries: at
// most 64 (UDP_MAX_SEGMENTS), in at most one IPv4 datagram's payload.
func gsoSegments(n int) int { return min(udpBatch, MaxDatagram/n) }

// Start runs the sender on its thread, named name.
func (s *UDPSender) Start(name string) {
	s.done = onPinnedThread(s.cpu, name, s.loop)
}

// Halt ends the stream at its next send.
func (s *UDPSender) Halt() { s.halt.Store(true) }

// Wait waits for the sender to end and returns what ended it abnormally.
func (s *UDPSender) Wait() error { return <-s.done }

// Sent returns the datagrams sent so far in every phase, and those of the
// measured window with their bytes.
func (s *UDPSender) Sent() (all, measured, measuredBytes uint64) {
	return s.all.Load(), s.measured.Load(), s.measuredBytes.Load()
}

// Window is how long the measured window has lasted so far.
func (s *UDPSender) Window() time.Duration { return time.Duration(s.window.Load()) }

// Method is how the datagrams were sent (GSO falls back to sendmmsg
// where the kernel or the device refuses it).
func (s *UDPSender) Method() UDPMethod { return s.method }

// udpSendLoop is the sender's state.
type udpSendLoop struct {
	s         *UDPSender
	buf       []byte // udpBatch datagrams back to back
	msgs      []unix.Mmsghdr
	iovs      []unix.Iovec
	gsoIov    unix.Iovec
	gsoMsg    unix.Msghdr
	gsoCmsg   []byte
	t0        time.Time
	wall0     int64   // t0 on the wall clock, Unix ns
	prevStamp int64   // when the previous batch was stamped (unpaced), Unix ns
	pkt       float64 // ns per datagram at the rate; 0 unpaced
	k         uint64  // datagrams sent since t0
	seq       uint64  // of the current phase
	measured  bool
	omit      int64
	end       int64
	// kOmit and kEnd are the indexes of the first datagrams due in the
	// window and after it (paced streams).
	kOmit, kEnd uint64
}

func (s *UDPSender) newLoop() *udpSendLoop {
	n := s.cfg.Len
	l := &udpSendLoop{s: s, buf: make([]byte, udpBatch*n), msgs: make([]unix.Mmsghdr, udpBatch), iovs: make([]unix.Iovec, udpBatch)}
	for i := range udpBatch {
		fillPattern(l.buf[i*n+MinDatagram : (i+1)*n])
		l.iovs[i].Base = &l.buf[i*n]
		l.iovs[i].SetLen(n)
		l.msgs[i].Hdr.Iov = &l.iovs[i]
		l.msgs[i].Hdr.SetIovlen(1)
	}
	// The GSO control message: UDP_SEGMENT = n.
	l.gsoCmsg = make([]byte, unix.CmsgSpace(2))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&l.gsoCmsg[0]))
	h.Level, h.Type = unix.IPPROTO_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	binary.NativeEndian.PutUint16(l.gsoCmsg[unix.CmsgLen(0):], uint16(n))
	l.gsoIov.Base = &l.buf[0]
	l.gsoMsg.Iov = &l.gsoIov
	l.gsoMsg.SetIovlen(1)
	l.gsoMsg.Control = &l.gsoCmsg[0]
	l.gsoMsg.SetControllen(len(l.gsoCmsg))
	if s.cfg.Rate > 0 {
		l.pkt = float64(n) * 8 * 1e9 / s.cfg.Rate
	}
	l.omit, l.end = int64(s.cfg.Omit), int64(s.cfg.Omit+s.cfg.Duration)
	if l.pkt > 0 {
		l.kOmit = uint64(math.Ceil(float64(l.omit) / l.pkt))
		l.kEnd = uint64(math.Min(math.Ceil(float64(l.end)/l.pkt), math.MaxInt64))
	}
	l.t0 = time.Now()
	l.wall0 = l.t0.UnixNano()
	return l
}

func (s *UDPSender) loop() error {
	l := s.newLoop()
	for !s.halt.Load() {
		more, err := l.burst()
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	return nil
}

// burst sends the datagrams due now, waiting for the next one first if
// none is; it returns false once the stream is over. Nothing in it
// allocates (TestUDPAllocs).
func (l *udpSendLoop) burst() (bool, error) {
	s := l.s
	now := since(l.t0)
	want := udpBatch
	if l.pkt > 0 {
		due := int64(float64(l.k) * l.pkt)
		if due > now {
			now = spinUntil(l.t0, min(due, l.end))
		}
		want = int(min(float64(now)/l.pkt+1-float64(l.k), udpBatch))
	}
	if now >= l.end || l.pkt > 0 && l.k >= l.kEnd {
		return false, nil
	}
	if !l.measured && (l.pkt > 0 && l.k >= l.kOmit || l.pkt == 0 && now >= l.omit) {
		l.measured, l.seq = true, 0
	}
	if l.pkt > 0 {
		// A late burst catching up must not carry warm-up datagrams into
		// the window, nor the window's past its end: the window holds
		// exactly the datagrams due in it.
		if !l.measured {
			want = min(want, int(l.kOmit-l.k))
		}
		want = min(want, int(l.kEnd-l.k))
	}
	if want < 1 {
		return true, nil
	}
	if s.method == UDPGSO {
		want = min(want, gsoSegments(s.cfg.Len))
	}
	l.stamp(want)
	sent, err := l.send(want)
	if err != nil {
		return false, err
	}
	l.k += uint64(sent)
	l.seq -= uint64(want - sent) // unsent datagrams take their numbers again
	s.all.Add(uint64(sent))
	if l.measured {
		s.measured.Add(uint64(sent))
		s.measuredBytes.Add(uint64(sent * s.cfg.Len))
		s.window.Store(since(l.t0) - l.omit)
	}
	return true, nil
}

// stamp writes the headers of the next n datagrams: each its own
// sequence number and its own send time.
//
// A batch (sendmmsg, or one GSO buffer the kernel cuts up) leaves in one
// system call, so one clock reading for all of it would give its
// datagrams one send time; they also arrive together (a GSO buffer is
// one skb as far as the receiving socket, one receive timestamp), so
// their transit times would be equal and RFC 3550's jitter would be
// pulled toward zero by every batch, however late the batch was. So:
//
//   - A paced datagram carries the time its pacer had it due, t0 + k ×
//     the datagram's time at the rate. That is what a real-time sender's
//     per-packet clock reads (RTP's timestamp is the sampling instant,
//     not the moment the packet got out), so a batch sent late shows its
//     lateness as jitter, as it would for that sender.
//   - An unpaced stream has no schedule: its batch's datagrams are
//     spread evenly over the time since the previous batch was handed
//     over, ending now, which is what a sender writing them one at a
//     time at the same rate would have read.
//
// Both are read from t0's monotonic clock, placed on the wall clock the
// receiver's kernel timestamps use.
func (l *udpSendLoop) stamp(n int) {
	// Offsets are counted from t0 (float64 holds Unix nanoseconds only to
	// some 256 ns).
	now := since(l.t0)
	var first, step float64 // the first datagram's offset, and the next's after it
	if l.pkt > 0 {
		first, step = float64(l.k)*l.pkt, l.pkt
	} else {
		step = float64(now-l.prevStamp) / float64(n)
		first = float64(now) - float64(n-1)*step
		l.prevStamp = now
	}
	for i := range n {
		l.seq++
		seq := l.seq
		if l.measured {
			seq |= measuredBit
		}
		b := l.buf[i*l.s.cfg.Len:]
		binary.LittleEndian.PutUint64(b, seq)
		binary.LittleEndian.PutUint64(b[8:], uint64(l.wall0+int64(first+float64(i)*step)))
	}
}

// send hands n datagrams to the kernel and returns how many it took.
func (l *udpSendLoop) send(n int) (int, error) {
	s := l.s
	for {
		var sent int
		var err error
		switch s.method {
		case UDPGSO:
			l.gsoIov.SetLen(n * s.cfg.Len)
			_, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(s.fd), uintptr(unsafe.Pointer(&l.gsoMsg)), 0)
			sent, err = n, errnoErr(e)
			if err != nil {
				sent = 0 // one buffer: all or nothing
			}
			if err == unix.EIO || err == unix.EINVAL || err == unix.ENOPROTOOPT || err == unix.EOPNOTSUPP {
				s.method = UDPSendmmsg // the device or kernel cannot segment: send them one by one
				continue
			}
		case UDPSendmmsg:
			r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(s.fd), uintptr(unsafe.Pointer(&l.msgs[0])), uintptr(n), 0, 0, 0)
			sent, err = int(r), errnoErr(e)
		default:
			for i := range n {
				if _, err = unix.Write(s.fd, l.buf[i*s.cfg.Len:(i+1)*s.cfg.Len]); err != nil {
					break
				}
				sent++
			}
		}
		switch {
		case err == unix.EINTR || err == unix.ENOBUFS || err == unix.EAGAIN:
			// Interrupted, or a full queue below the socket: what was not
			// taken goes in the next burst (iperf3 does the same).
			return sent, nil
		case err == unix.ECONNREFUSED:
			// An ICMP port unreachable from an earlier datagram: the
			// receiver's socket was not there for a moment. Count on.
			return sent, nil
		case err != nil:
			return 0, fmt.Errorf("sending datagrams: %w", err)
		}
		return sent, nil
	}
}

// errnoErr turns a raw errno into an error without allocating: 0 is nil.
func errnoErr(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// UDPStats is what a receiver counted over a span of a UDP stream.
type UDPStats struct {
	Packets uint64 `json:"packets"` // datagrams received
	Bytes   uint64 `json:"bytes"`
	// Lost counts missing sequence numbers as iperf3 does: a gap adds its
	// size, a datagram arriving late takes one back.
	Lost       int64   `json:"lost"`
	OutOfOrder uint64  `json:"out_of_order"`
	JitterMS   float64 `json:"jitter_ms"` // at the span's end
}

// Sub returns s less an earlier reading e of the same counters (the
// jitter is s's: it is a running estimate, not a count).
func (s UDPStats) Sub(e UDPStats) UDPStats {
	return UDPStats{Packets: s.Packets - e.Packets, Bytes: s.Bytes - e.Bytes, Lost: s.Lost - e.Lost,
		OutOfOrder: s.OutOfOrder - e.OutOfOrder, JitterMS: s.JitterMS}
}

// phaseStats is one phase's counters as the receiver's thread keeps them.
type phaseStats struct {
	packets, bytes, ooo uint64
	lost                int64
	next                uint64 // the sequence number expected next
	jitter, prevTransit float64
	seen                bool
}

// add counts one datagram with sequence number seq and transit time
// transit (arrival − sent, ns, on two clocks whose offset cancels).
func (p *phaseStats) add(seq uint64, n int, transit float64) {
	p.packets++
	p.bytes += uint64(n)
	switch {
	case seq >= p.next:
		if seq > p.next && p.next > 0 {
			p.lost += int64(seq - p.next)
		} else if p.next == 0 && seq > 1 {
			p.lost += int64(seq - 1)
		}
		p.next = seq + 1
	default:
		p.ooo++
		if p.lost > 0 {
			p.lost--
		}
	}
	if p.seen {
		d := math.Abs(transit - p.prevTransit)
		p.jitter += (d - p.jitter) / 16
	}
	p.prevTransit, p.seen = transit, true
}

// published is one phase's counters as other goroutines read them.
type published struct {
	packets, bytes, ooo, jitter atomic.Uint64
	lost                        atomic.Int64
}

func (p *published) store(s *phaseStats) {
	p.packets.Store(s.packets)
	p.bytes.Store(s.bytes)
	p.ooo.Store(s.ooo)
	p.lost.Store(s.lost)
	p.jitter.Store(math.Float64bits(s.jitter))
}

func (p *published) load() UDPStats {
	return UDPStats{Packets: p.packets.Load(), Bytes: p.bytes.Load(), Lost: p.lost.Load(), OutOfOrder: p.ooo.Load(),
		JitterMS: math.Float64frombits(p.jitter.Load()) / 1e6}
}

// UDPReceiver counts a UDP stream on its own pinned thread.
type UDPReceiver struct {
	fd     int
	cpu    int
	size   int
	halt   atomic.Bool
	haltAt atomic.Int64
	done   <-chan error
	warm   published
	meas   published
	// kernelTime says arrivals are the kernel's receive timestamps
	// (SO_TIMESTAMPNS); false: the time the datagrams were read.
	kernelTime bool
}

// recvPoll is how often a waiting receiver looks whether it was halted;
// recvDrain is the longest it reads on after Halt while datagrams keep
// coming.
const (
	recvPoll  = 50 * time.Millisecond
	recvDrain = time.Second
	udpRcvBuf = 8 << 20
)

// NewUDPReceiver prepares a receiver of datagrams of size bytes over fd
// (a blocking UDP socket), pinned to cpu (-1: unpinned). It asks the kernel for receive
// timestamps, so that the arrival a jitter is computed from is when the
// datagram came in, not when a batch of them was read.
func NewUDPReceiver(fd, cpu, size int) (*UDPReceiver, error) {
	if size < MinDatagram || size > MaxDatagram {
		return nil, fmt.Errorf("datagram length %d: must be %d to %d bytes", size, MinDatagram, MaxDatagram)
	}
	tv := unix.NsecToTimeval(recvPoll.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return nil, fmt.Errorf("setting the socket's receive timeout: %w", err)
	}
	// A receiver descheduled for a moment must not drop what a large
	// buffer would have held: ask for udpRcvBuf (the kernel caps it at
	// net.core.rmem_max; SO_RCVBUFFORCE, root only, goes past that).
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, udpRcvBuf) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, udpRcvBuf)
	}
	r := &UDPReceiver{fd: fd, cpu: cpu, size: size}
	r.kernelTime = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) == nil
	return r, nil
}

// Start runs the receiver on its thread, named name.
func (r *UDPReceiver) Start(name string) {
	r.done = onPinnedThread(r.cpu, name, r.loop)
}

// Halt ends the receiver once the socket has been idle for recvPoll (the
// datagrams in flight are counted), or recvDrain after the call at most.
func (r *UDPReceiver) Halt() {
	r.haltAt.Store(time.Now().UnixNano())
	r.halt.Store(true)
}

// Wait waits for the receiver to end and returns what ended it
// abnormally.
func (r *UDPReceiver) Wait() error { return <-r.done }

// Stats returns the counts so far: of the warm-up, and of the measured
// window.
func (r *UDPReceiver) Stats() (warm, measured UDPStats) { return r.warm.load(), r.meas.load() }

// KernelTimestamps says whether arrivals are the kernel's receive
// timestamps.
func (r *UDPReceiver) KernelTimestamps() bool { return r.kernelTime }

// udpRecvLoop is the receiver's state.
type udpRecvLoop struct {
	r          *UDPReceiver
	buf        []byte
	ctl        []byte
	msgs       []unix.Mmsghdr
	iovs       []unix.Iovec
	warm, meas phaseStats
	slot       int // bytes per datagram buffer
	ctlSlot    int
}

func (r *UDPReceiver) newLoop() *udpRecvLoop {
	// One byte more than a datagram of the stream: a larger one is not
	// of it, and shows as such instead of being cut to size.
	l := &udpRecvLoop{r: r, slot: r.size + 1, ctlSlot: unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{})))}
	l.buf = make([]byte, udpBatch*l.slot)
	l.ctl = make([]byte, udpBatch*l.ctlSlot)
	l.msgs = make([]unix.Mmsghdr, udpBatch)
	l.iovs = make([]unix.Iovec, udpBatch)
	for i := range udpBatch {
		l.iovs[i].Base = &l.buf[i*l.slot]
		l.iovs[i].SetLen(l.slot)
		l.msgs[i].Hdr.Iov = &l.iovs[i]
		l.msgs[i].Hdr.SetIovlen(1)
	}
	return l
}

func (r *UDPReceiver) loop() error {
	l := r.newLoop()
	for {
		n, err := l.batch()
		switch {
		case err != nil:
			return err
		case n == 0 && r.halt.Load():
			return nil // idle after Halt: everything in flight is in
		case r.halt.Load() && time.Now().UnixNano()-r.haltAt.Load() > int64(recvDrain):
			return nil // still coming long after Halt: stop counting
		}
	}
}

// batch receives the datagrams waiting (at most udpBatch, waiting up to
// recvPoll for the first) and counts them; it returns how many came.
// Nothing in it allocates (TestUDPAllocs).
func (l *udpRecvLoop) batch() (int, error) {
	for i := range udpBatch {
		l.msgs[i].Hdr.Control = &l.ctl[i*l.ctlSlot]
		l.msgs[i].Hdr.SetControllen(l.ctlSlot)
		l.msgs[i].Hdr.Flags = 0
	}
	r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(l.r.fd), uintptr(unsafe.Pointer(&l.msgs[0])), udpBatch, unix.MSG_WAITFORONE, 0, 0)
	switch err := errnoErr(e); {
	case err == nil:
	case err == unix.EINTR || isTimeout(err) || err == unix.ECONNREFUSED:
		return 0, nil
	default:
		return 0, fmt.Errorf("receiving datagrams: %w", err)
	}
	n := int(r)
	read := time.Now().UnixNano()
	for i := range n {
		size := int(l.msgs[i].Len)
		if size != l.slot-1 {
			continue // not a datagram of this stream (a repeated preamble)
		}
		b := l.buf[i*l.slot:]
		seq := binary.LittleEndian.Uint64(b)
		sent := int64(binary.LittleEndian.Uint64(b[8:]))
		arrival := l.arrival(i, read)
		ph := &l.warm
		if seq&measuredBit != 0 {
			ph, seq = &l.meas, seq&^measuredBit
		}
		ph.add(seq, size, float64(arrival-sent))
	}
	l.r.warm.store(&l.warm)
	l.r.meas.store(&l.meas)
	return n, nil
}

// arrival is datagram i's kernel receive timestamp, or read when it has
// none.
func (l *udpRecvLoop) arrival(i int, read int64) int64 {
	m := &l.msgs[i].Hdr
	if uint64(m.Controllen) < uint64(unix.CmsgLen(0)) {
		return read
	}
	c := l.ctl[i*l.ctlSlot:]
	h := (*unix.Cmsghdr)(unsafe.Pointer(&c[0]))
	if h.Level != unix.SOL_SOCKET || h.Type != unix.SCM_TIMESTAMPNS || uint64(h.Len) < uint64(unix.CmsgLen(16)) {
		return read
	}
	ts := (*unix.Timespec)(unsafe.Pointer(&c[unix.CmsgLen(0)]))
	return ts.Nano()
}
