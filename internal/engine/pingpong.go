package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/latency"
)

// A ping-pong measures round trips the way sockperf's ping-pong does: one
// message outstanding, sent by the client, echoed by the agent (Echo),
// timed from the write to the end of the read on the client's clock. A
// message is Size bytes; its first 8 are its sequence number
// (little-endian, from 1), the rest a pattern. Messages sent during the
// warm-up and the cool-down are echoed but not counted.
//
// The loop runs on its own OS thread pinned to one CPU, blocking in
// read(2) on a descriptor taken out of Go's poller; it paces by spinning
// on the clock (a Go timer below a millisecond wakes up to a millisecond
// late), records into a latency.Recorder (no allocation per message), and
// runs with the garbage collector off (quietGC), counting the samples a
// collection touched anyway (gcWatch).

// Bounds of a ping-pong message.
const (
	// MinMessage is the smallest message: sockperf's (its header), which
	// holds the sequence number.
	MinMessage = 14
	// MaxMessage is the largest: what one UDP datagram carries over IPv4.
	MaxMessage = 65507
	// seqBytes is the sequence number's size at the start of a message.
	seqBytes = 8
)

// PingPongConfig is a ping-pong as the client runs it.
type PingPongConfig struct {
	UDP  bool // the descriptor is a connected UDP socket; else TCP
	Size int  // message bytes, MinMessage to MaxMessage
	// Rate is messages per second; 0 sends the next as soon as the reply
	// is in.
	Rate float64
	// Warmup and Cooldown bracket the measured window (Duration).
	Warmup, Duration, Cooldown time.Duration
	// Timeout is how long a UDP request waits for its reply before it
	// counts as dropped (a reply later than that counts as out of order).
	Timeout time.Duration
	// Stall ends the run when no reply came for this long: the peer
	// stopped answering.
	Stall time.Duration
	// Bounds are the ends of the intervals the run reports, as times
	// since its start (Schedule's); the loop closes each into a Cut. Nil:
	// no intervals, and Cuts stays empty.
	Bounds []time.Duration
}

// Cut is one interval of a ping-pong, closed by the loop itself so that
// its round trips and its percentiles come from the same instant: the
// round trips sent before Bounds[K] and after the previous bound, in
// every phase (warm-up and cool-down too, as the interval lines show
// them).
type Cut struct {
	K int // the interval: it ends at Bounds[K]
	// Replies is every reply received from the start to the cut, as
	// Replies returned then.
	Replies uint64
	rec     *latency.Recorder
}

// PingPongResult is what a ping-pong measured in its window.
type PingPongResult struct {
	Latency latency.Summary // round trips; Dropped and OutOfOrder filled for UDP
	// Duplicated counts replies that came twice (UDP).
	Duplicated int64
	// Sent is the requests sent in the window; Window its length (shorter
	// than asked when the run ended early).
	Sent   int64
	Window time.Duration
	// GCCycles collections ran during the run (warm-up to cool-down), with
	// GCPause stopped-the-world time in all; GCTouched samples overlapped
	// one of their pauses.
	GCCycles  int64
	GCPause   time.Duration
	GCTouched int64
	// Stalled says the peer stopped answering; the result holds what was
	// measured before.
	Stalled bool
	// Err is what ended the run early otherwise (a write failed, the
	// peer's reply was not the message sent); nil when it ran its course.
	Err error
}

// PingPong is the client's half of a ping-pong in progress.
type PingPong struct {
	fd   int
	cpu  int
	cfg  PingPongConfig
	rec  latency.Recorder
	done <-chan error
	halt atomic.Bool
	// replies counts every reply so far, warm-up and cool-down too: the
	// interval reports' message rate.
	replies atomic.Uint64
	res     PingPongResult
	win     [2]uint64 // the first and last sequence numbers sent in the window
	// iv records the interval in progress. A closed one travels in its
	// Cut to the reader, who summarizes it and hands it back through
	// free: the loop neither allocates nor walks the histogram's buckets
	// (some 30 µs) between two round trips.
	iv   *latency.Recorder
	cuts chan Cut
	free chan *latency.Recorder
}

// spareRecorders is how many interval recorders wait in free: a reader
// that falls that many intervals behind costs the loop an allocation.
const spareRecorders = 2

// NewPingPong prepares a ping-pong over fd (blocking, Detach), whose
// thread will be pinned to cpu (-1: unpinned). It sets the socket's
// receive timeout; the caller keeps the descriptor and closes it after
// Wait.
func NewPingPong(fd, cpu int, cfg PingPongConfig) (*PingPong, error) {
	switch {
	case cfg.Size < MinMessage || cfg.Size > MaxMessage:
		return nil, fmt.Errorf("message size %d: must be %d to %d bytes", cfg.Size, MinMessage, MaxMessage)
	case cfg.Duration <= 0 || cfg.Stall <= 0 || cfg.UDP && cfg.Timeout <= 0:
		return nil, errors.New("a ping-pong needs a duration, a stall limit and, over UDP, a timeout")
	case cfg.Rate < 0:
		return nil, fmt.Errorf("rate %g: must be positive, or 0 for as fast as replies come", cfg.Rate)
	}
	wait := cfg.Stall
	if cfg.UDP {
		wait = min(cfg.Timeout, cfg.Stall)
	}
	tv := unix.NsecToTimeval(wait.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return nil, fmt.Errorf("setting the socket's receive timeout: %w", err)
	}
	if !cfg.UDP {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
			return nil, fmt.Errorf("setting TCP_NODELAY: %w", err)
		}
	}
	p := &PingPong{fd: fd, cpu: cpu, cfg: cfg, iv: latency.NewRecorder(),
		cuts: make(chan Cut, len(cfg.Bounds)), free: make(chan *latency.Recorder, spareRecorders)}
	if len(cfg.Bounds) > 0 {
		for range spareRecorders {
			p.free <- latency.NewRecorder()
		}
	}
	return p, nil
}

// Start runs the ping-pong on its thread, named name.
func (p *PingPong) Start(name string) {
	p.done = onPinnedThread(p.cpu, name, func() error {
		restore := quietGC()
		defer restore()
		p.loop()
		return nil
	})
}

// Halt ends the run at its next message (the control connection failed,
// or the user interrupted).
func (p *PingPong) Halt() { p.halt.Store(true) }

// Replies returns the replies received so far, in every phase.
func (p *PingPong) Replies() uint64 { return p.replies.Load() }

// Cuts returns the run's intervals as the loop closes them, in order; it
// is closed when the run ended. A run that ended early sends its last,
// partial interval (when an earlier one was closed), as the timer-driven
// interval reports of a stream do.
func (p *PingPong) Cuts() <-chan Cut { return p.cuts }

// Summarize returns the distribution of c's round trips and hands its
// recorder back to the loop; call it once per Cut.
func (p *PingPong) Summarize(c Cut) latency.Summary {
	s := c.rec.Summary()
	c.rec.Reset()
	select {
	case p.free <- c.rec:
	default: // the loop allocated one while this reader lagged: let it go
	}
	return s
}

// Wait waits for the run to end and returns what it measured.
func (p *PingPong) Wait() PingPongResult {
	if err := <-p.done; err != nil && p.res.Err == nil {
		p.res.Err = err
	}
	return p.res
}

// answered remembers which of the last 2^16 requests got their reply, to
// tell a late reply (out of order) from a second one (duplicated).
type answered [1 << 10]uint64

func (a *answered) set(seq uint64)      { a[seq>>6&(1<<10-1)] |= 1 << (seq & 63) }
func (a *answered) clear(seq uint64)    { a[seq>>6&(1<<10-1)] &^= 1 << (seq & 63) }
func (a *answered) has(seq uint64) bool { return a[seq>>6&(1<<10-1)]&(1<<(seq&63)) != 0 }
func recent(seq, latest uint64) bool    { return latest-seq < 1<<16 }
func putSeq(b []byte, seq uint64)       { binary.LittleEndian.PutUint64(b, seq) }
func seqOf(b []byte) uint64             { return binary.LittleEndian.Uint64(b) }
func since(t0 time.Time) int64          { return int64(time.Since(t0)) }
func inSpan(t, from, to int64) bool     { return t >= from && t < to }
func isTimeout(err error) bool          { return err == unix.EAGAIN || err == unix.EWOULDBLOCK }

// ppState is the loop's bookkeeping of the measured window.
type ppState struct {
	first, last  uint64 // sequence numbers sent in the window (first 0: none yet)
	sent         int64
	timedOut     int64 // window requests whose reply did not come in time
	late         int64 // of those, replies that came later
	dups         int64
	lastReply    int64 // ns since t0
	lastInWindow int64 // send time of the last window request
	ans          answered
}

func (s *ppState) windowSeq(seq uint64) bool { return s.first != 0 && seq >= s.first && seq <= s.last }

// ppLoop is the hot loop's state.
type ppLoop struct {
	p            *PingPong
	out, in      []byte
	t0           time.Time
	gw           *gcWatch
	st           ppState
	seq          uint64
	period, next float64 // ns: between requests (0: unpaced), and when the next is due
	from, to     int64   // the measured window, ns since t0
	stop, stall  int64
	bounds       []int64 // cfg.Bounds in ns
	k            int     // the interval in progress: bounds[k] ends it
	y            yielder
}

func (p *PingPong) newLoop() *ppLoop {
	cfg := p.cfg
	l := &ppLoop{p: p, out: make([]byte, cfg.Size), in: make([]byte, cfg.Size)}
	fillPattern(l.out[seqBytes:])
	l.from, l.to = int64(cfg.Warmup), int64(cfg.Warmup+cfg.Duration)
	l.stop, l.stall = l.to+int64(cfg.Cooldown), int64(cfg.Stall)
	for _, b := range cfg.Bounds {
		l.bounds = append(l.bounds, int64(b))
	}
	if cfg.Rate > 0 {
		l.period = 1e9 / cfg.Rate
	}
	l.t0 = time.Now()
	l.gw = newGCWatch(l.t0)
	return l
}

// loop runs the ping-pong to its end.
func (p *PingPong) loop() {
	l := p.newLoop()
	for !p.halt.Load() && l.one() {
	}
	if l.k > 0 && l.k < len(l.bounds) {
		p.cut(l.k) // ended early: the partial interval
	}
	close(p.cuts)
	p.finish(l.from, l.to, &l.st, l.gw)
}

// cutPassed closes the intervals that ended by now.
func (l *ppLoop) cutPassed(now int64) {
	for l.k < len(l.bounds) && now >= l.bounds[l.k] {
		l.p.cut(l.k)
		l.k++
	}
}

// cut sends interval k's recorder to the reader and takes a clean one.
func (p *PingPong) cut(k int) {
	p.cuts <- Cut{K: k, Replies: p.replies.Load(), rec: p.iv} // buffered for every interval: never blocks
	select {
	case p.iv = <-p.free:
	default:
		p.iv = latency.NewRecorder()
	}
}

// one makes one round trip, pacing first; it returns false when the run
// is over. Nothing in it allocates (TestPingPongAllocs), unless the
// reader of Cuts lags two intervals behind.
func (l *ppLoop) one() bool {
	p := l.p
	l.y.tick() // between round trips, never inside one
	now := since(l.t0)
	if l.period > 0 {
		now = spinUntil(l.t0, int64(l.next))
		l.next = max(l.next+l.period, float64(now)) // behind: no catch-up burst
	}
	l.cutPassed(now)
	if now >= l.stop {
		return false
	}
	l.seq++
	seq, st := l.seq, &l.st
	putSeq(l.out, seq)
	inWin := inSpan(now, l.from, l.to)
	if inWin {
		if st.first == 0 {
			st.first = seq
		}
		st.last, st.lastInWindow = seq, now
		st.sent++
	}
	st.ans.clear(seq)
	if err := p.send(l.out); err != nil {
		p.res.Err = err
		return false
	}
	done, err := p.await(l.t0, seq, now, inWin, st, l.gw, l.in)
	if err != nil {
		p.res.Err = err
		return false
	}
	if !done && since(l.t0)-st.lastReply >= l.stall {
		p.res.Stalled = true
		return false
	}
	return true
}

// send writes one request.
func (p *PingPong) send(b []byte) error {
	for {
		n, err := unix.Write(p.fd, b)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return fmt.Errorf("sending a request: %w", err)
		case n != len(b):
			return fmt.Errorf("sending a request: wrote %d of %d bytes", n, len(b))
		}
		return nil
	}
}

// await reads until the reply to seq (sent at sent) is in, recording it
// when inWin; it returns false when the wait ran out (UDP: the request
// counts as dropped unless its reply comes later; TCP: the peer stalled).
func (p *PingPong) await(t0 time.Time, seq uint64, sent int64, inWin bool, st *ppState, gw *gcWatch, in []byte) (bool, error) {
	timeout := int64(p.cfg.Timeout)
	for {
		got, err := p.recv(in)
		now := since(t0)
		if isTimeout(err) {
			if p.cfg.UDP && now-sent < timeout && now-st.lastReply < int64(p.cfg.Stall) {
				continue // woken early: keep waiting for this one
			}
			if inWin {
				st.timedOut++
			}
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if !got {
			continue // a datagram of another size: not ours
		}
		r := seqOf(in)
		switch {
		case r == seq:
			st.lastReply = now
			st.ans.set(r)
			p.replies.Add(1)
			p.iv.Record(time.Duration(now - sent))
			if inWin {
				p.rec.Record(time.Duration(now - sent))
				gw.add(sent, now)
			}
			return true, nil
		case r < seq && recent(r, seq) && st.ans.has(r):
			if st.windowSeq(r) {
				st.dups++
			}
		case r < seq && recent(r, seq):
			st.ans.set(r)
			if st.windowSeq(r) {
				st.late++
			}
		case r < seq:
			if st.windowSeq(r) {
				st.late++ // too old to tell from a duplicate: counted late
			}
		case !p.cfg.UDP:
			return false, fmt.Errorf("the peer echoed message %d while %d was outstanding: not a linerate echo", r, seq)
		}
		// anything else: a stray datagram (a sequence number never sent)
	}
}

// recv reads one reply into in: a datagram, or Size bytes of the TCP
// stream. It reports false for a datagram of another size.
func (p *PingPong) recv(in []byte) (bool, error) {
	if p.cfg.UDP {
		for {
			n, err := unix.Read(p.fd, in)
			if err == unix.EINTR {
				continue
			}
			return err == nil && n == len(in), udpErr(err)
		}
	}
	for off := 0; off < len(in); {
		n, err := unix.Read(p.fd, in[off:])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil && off > 0 && isTimeout(err):
			return false, errors.New("the peer stopped in the middle of a reply")
		case err != nil:
			return false, err
		case n == 0:
			return false, errors.New("the peer closed the connection mid-run")
		}
		off += n
	}
	return true, nil
}

// udpErr keeps timeouts as they are and names the rest.
func udpErr(err error) error {
	switch {
	case err == nil || isTimeout(err):
		return err
	case err == unix.ECONNREFUSED:
		return errors.New("the peer's port is closed (ICMP port unreachable): its echo ended")
	}
	return fmt.Errorf("receiving a reply: %w", err)
}

// finish fills the result from the window's bookkeeping.
func (p *PingPong) finish(from, to int64, st *ppState, gw *gcWatch) {
	r := &p.res
	r.Latency = p.rec.Summary()
	r.Sent = st.sent
	p.win = [2]uint64{st.first, st.last}
	end := to
	switch {
	case p.res.Stalled:
		end = min(to, st.lastReply) // the requests after it went unanswered
	case p.res.Err != nil || p.halt.Load():
		end = min(to, max(st.lastReply, st.lastInWindow))
	}
	r.Window = time.Duration(max(0, end-from))
	if p.cfg.UDP {
		r.Latency.Dropped = st.timedOut - st.late
		r.Latency.OutOfOrder = st.late
		r.Duplicated = st.dups
	}
	r.GCCycles, r.GCPause, r.GCTouched = gw.finish()
}

// spinUntil waits until due (ns since t0) and returns the time then. It
// spins on the clock: Go's timers wake up to a millisecond late below a
// millisecond, so it sleeps only when more than 2 ms are left, and then
// only until 1 ms before due.
func spinUntil(t0 time.Time, due int64) int64 {
	for {
		now := since(t0)
		left := due - now
		switch {
		case left <= 0:
			return now
		case left > int64(2*time.Millisecond):
			time.Sleep(time.Duration(left) - time.Millisecond)
		}
	}
}
