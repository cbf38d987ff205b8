package engine

import (
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/result"
)

// A transaction test (Params.Mode RR or CRR) runs request/response
// transactions as fast as they go, as neper's tcp_rr and tcp_crr do: F
// flows on T threads, each thread an epoll loop over its flows. The
// client writes Size bytes of request and reads Size bytes of response;
// the agent answers every whole request it reads with Size bytes.
//
//   - rr: each flow is one long-lived connection with Depth requests
//     outstanding (a ring of their send times); a response's last byte
//     completes the oldest request. Its latency is from the request's
//     queueing (the previous response's arrival, or the start) to its
//     response's last byte.
//   - crr: each flow makes one connection per transaction: connect, a
//     proof that the connection is the test's (Admission, sent in the
//     same write as the request), the request, the response, and a
//     close with a reset (SO_LINGER 0, neper's default: neither end
//     keeps the connection in TIME_WAIT, whose 60 s would exhaust the
//     client's ports within seconds at these rates). Its latency is from
//     the connect to the response's last byte. The agent accepts on a
//     listening socket per thread (SO_REUSEPORT spreads the connections
//     over them), from the client's address only, for the test's length
//     only; it closes its end when the client's reset arrives.
//
// Nothing in a round allocates (TestTxnAllocs): counters are atomics,
// latencies go into latency.Recorders handed over by recSwap, buffers
// and iovecs are the thread's or the flow's, and the system calls that
// x/sys/unix would give an address to allocate for are made raw.

// Admission proves that a crr connection comes from the test's client:
// the client writes Len bytes from Sign before the request, the agent
// checks them with Verify. Each thread has its own (NewAdmission): they
// keep state (a keyed hash) and need no lock.
type Admission interface {
	Len() int
	// Sign writes the proof for connection seq (from 1) of flow into
	// dst[:Len()].
	Sign(dst []byte, flow int, seq uint32)
	// Verify reads a proof: the flow and the connection it names, and
	// whether it holds.
	Verify(b []byte) (flow int, seq uint32, ok bool)
}

// CRR is where a crr test's connections go: the client dials Peer, the
// agent accepts on Listeners (ListenCRR), from Client only. NewAdmission
// makes each thread's Admission (nil: connections carry no proof, for
// tests of the engine alone).
type CRR struct {
	Peer         netip.AddrPort
	Listeners    []int
	Client       netip.Addr
	NewAdmission func() Admission
}

// MaxAdmission bounds an Admission's proof.
const MaxAdmission = 64

// txnFlow is one flow of a transaction thread.
type txnFlow struct {
	st    *Stream
	idx   int   // the flow's index in the test (its stream ID - 1)
	ti    int32 // its index in its thread's flows: its events' data
	fd    int
	owe   int // bytes still to write
	rem   int // bytes of the current response (client) or request (agent) read
	sent  uint64
	done  uint64
	ts    []int64 // client: when each outstanding request was queued, ns since t0
	out   bool    // EPOLLOUT asked for
	ended bool
	// crr client: the connection's proof, how much of proof and request
	// is written, when its connect began, and the iovecs of the write.
	hdr   [MaxAdmission]byte
	hoff  int
	start int64
	iov   [2]unix.Iovec
}

// crrConn is a connection the agent's crr thread accepted.
type crrConn struct {
	fd   int
	gen  int32
	flow int // -1 until the proof is read
	hdr  [MaxAdmission]byte
	hoff int
	rem  int
	owe  int
	out  bool
}

// txnThread is one thread of a transaction test.
type txnThread struct {
	w      *worker
	p      Params
	client bool
	flows  []*txnFlow
	all    []*Stream // every flow of the test (the agent's crr threads count by the proof's flow)
	e      *epoller
	buf    []byte // reads land here
	pat    []byte // what requests and responses carry
	t0     time.Time
	halt   *atomic.Bool
	abort  *atomic.Bool
	n      int // flows (client, rr agent) or connections (crr agent) live
	retry  int // crr client: flows whose connect failed, to try again
	y      yielder
	errs   *atomic.Uint64 // crr: connections that failed

	crr    *CRR
	adm    Admission
	admLen int
	sa     unix.Sockaddr // client: the agent's crr address
	family int
	opts   SockOpts
	linger unix.Linger
	ln     int // agent: this thread's listening socket, -1 once closed
	conns  []crrConn
	free   []int32
	rsa    unix.RawSockaddrAny
	rsaLen uint32
}

// listenerIdx marks the listening socket's events.
const listenerIdx = -1

func (t *txnThread) now() int64 { return int64(time.Since(t.t0)) }

// run drives the thread until its flows end: the client's when the test
// stops and its outstanding requests are answered, the agent's when the
// client closes them (rr) or the test stops (crr).
func (t *txnThread) run() error {
	if err := t.prepare(); err != nil {
		return err
	}
	defer t.e.close()
	for t.n > 0 && t.round() {
	}
	return nil
}

// prepare makes the thread's buffers and epoll instance and registers
// its flows (or listener).
func (t *txnThread) prepare() error {
	var err error
	if t.e, err = newEpoller(); err != nil {
		return err
	}
	size := t.p.Size
	t.buf = make([]byte, max(64<<10, min(size, 1<<20)))
	t.pat = make([]byte, min(max(size*t.p.Requests(), 1), 64<<10))
	fillPattern(t.pat)
	if t.crr != nil && t.crr.NewAdmission != nil {
		t.adm = t.crr.NewAdmission()
		t.admLen = t.adm.Len()
	}
	switch {
	case t.client && t.p.Mode == result.CRR:
		err = t.startCRRClient()
	case t.p.Mode == result.CRR:
		err = t.startCRRServer()
	default:
		err = t.startRR()
	}
	if err != nil {
		t.e.close()
	}
	return err
}

// round is one turn of the loop: the ready sockets' events, the switch
// of latency recorders the sampler asked for, the connects to retry. It
// reports false when the test was aborted. Nothing in it allocates.
func (t *txnThread) round() bool {
	if t.abort.Load() {
		t.closeAll()
		return false
	}
	if t.halt.Load() {
		t.stopping()
	}
	evs := t.e.wait()
	if t.w.lat != nil {
		t.w.lat.poll()
	}
	for _, ev := range evs {
		t.event(ev)
	}
	if t.retry > 0 {
		t.reconnect()
	}
	t.y.tick()
	return true
}

// event handles one ready socket.
func (t *txnThread) event(ev unix.EpollEvent) {
	i := int(ev.Fd)
	switch {
	case t.p.Mode == result.CRR && !t.client && i == listenerIdx:
		t.accept()
	case t.p.Mode == result.CRR && !t.client:
		if i >= 0 && i < len(t.conns) && t.conns[i].fd >= 0 && t.conns[i].gen == ev.Pad {
			t.serveConn(i, ev.Events)
		}
	case i >= 0 && i < len(t.flows) && !t.flows[i].ended:
		if t.p.Mode == result.CRR {
			t.crrEvent(t.flows[i], ev.Events)
		} else {
			t.rrEvent(t.flows[i], ev.Events)
		}
	}
}

// stopping ends what has nothing left to do once the test stops.
func (t *txnThread) stopping() {
	switch {
	case t.client:
		for _, f := range t.flows {
			if !f.ended && f.done >= f.sent && (t.p.Mode == result.RR || f.fd < 0) {
				t.finish(f, nil)
			}
		}
	case t.p.Mode == result.CRR && t.ln >= 0:
		t.e.del(t.ln)
		unix.Close(t.ln)
		t.ln = -1
		t.n-- // the listener counted as live
	}
}

// finish ends a flow: a client's rr flow shuts its write side (the agent
// reads the end and shuts its own), an agent's rr flow answers the end
// with its own. The socket stays open for the sampler's TCP_INFO; Side
// closes it.
func (t *txnThread) finish(f *txnFlow, err error) {
	if f.ended {
		return
	}
	f.ended = true
	t.n--
	if f.fd >= 0 {
		t.e.del(f.fd)
		if t.p.Mode == result.CRR {
			unix.Close(f.fd)
			f.fd = -1
		} else {
			_ = unix.Shutdown(f.fd, unix.SHUT_WR)
		}
	}
	if err != nil && f.st.err == nil && !t.halt.Load() {
		f.st.err = err
	}
}

// closeAll closes what an aborted test left open.
func (t *txnThread) closeAll() {
	for _, f := range t.flows {
		if f.fd >= 0 && t.p.Mode == result.CRR {
			unix.Close(f.fd)
			f.fd = -1
		}
	}
	for i := range t.conns {
		if t.conns[i].fd >= 0 {
			unix.Close(t.conns[i].fd)
			t.conns[i].fd = -1
		}
	}
	if t.ln >= 0 {
		unix.Close(t.ln)
		t.ln = -1
	}
}

// startRR registers the rr flows, the client's with their first
// requests queued.
func (t *txnThread) startRR() error {
	now := t.now()
	for i, f := range t.flows {
		if err := unix.SetNonblock(f.fd, true); err != nil {
			return fmt.Errorf("flow %d: making the socket non-blocking: %w", f.st.ID, err)
		}
		if err := t.e.add(f.fd, unix.EPOLLIN|unix.EPOLLRDHUP, int32(i), 0); err != nil {
			return fmt.Errorf("flow %d: adding the socket to epoll: %w", f.st.ID, err)
		}
		t.n++
		if t.client {
			t.queue(f, t.p.Requests(), now)
			t.write(f, int32(i))
		}
	}
	return nil
}

// queue adds k requests to a client flow, sent now.
func (t *txnThread) queue(f *txnFlow, k int, now int64) {
	for range k {
		f.ts[f.sent%uint64(len(f.ts))] = now
		f.sent++
	}
	f.owe += k * t.p.Size
}

// rrEvent reads what flow f has and writes what it owes.
func (t *txnThread) rrEvent(f *txnFlow, events uint32) {
	idx := f.ti
	if events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		n, err := recvFlags(f.fd, t.buf, unix.MSG_DONTWAIT)
		switch {
		case n > 0:
			t.took(f, n)
		case err == nil: // the peer closed
			if !t.client {
				t.finish(f, nil)
				return
			}
			t.finish(f, errors.New("the agent closed the connection mid-run"))
			return
		case err != unix.EAGAIN && err != unix.EINTR:
			t.finish(f, fmt.Errorf("flow %d: receiving: %w", f.st.ID, err))
			return
		}
	}
	if !f.ended {
		t.write(f, idx)
	}
}

// took accounts n bytes read on an rr flow: the client completes the
// requests whose responses are whole and queues as many new ones; the
// agent owes a response for every whole request.
func (t *txnThread) took(f *txnFlow, n int) {
	size := t.p.Size
	f.st.bytes.Add(uint64(n))
	f.rem += n
	k := f.rem / size
	f.rem -= k * size
	if k == 0 {
		return
	}
	if !t.client {
		f.owe += k * size
		f.st.txns.Add(uint64(k))
		return
	}
	// A response the client never asked for (a peer that is not a
	// linerate agent) completes nothing.
	k = min(k, int(f.sent-f.done))
	now := t.now()
	rec := t.w.lat.cur()
	for range k {
		rec.Record(time.Duration(now - f.ts[f.done%uint64(len(f.ts))]))
		f.done++
	}
	f.st.txns.Add(uint64(k))
	if t.halt.Load() {
		if f.done >= f.sent {
			t.finish(f, nil)
		}
		return
	}
	t.queue(f, k, now)
}

// write writes what flow f owes until the socket is full, and asks for
// EPOLLOUT while something is left.
func (t *txnThread) write(f *txnFlow, idx int32) {
	for f.owe > 0 {
		n, err := unix.Write(f.fd, t.pat[:min(f.owe, len(t.pat))])
		if n > 0 {
			f.owe -= n
		}
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN || n <= 0 {
			if err != nil && err != unix.EAGAIN {
				t.finish(f, fmt.Errorf("flow %d: sending: %w", f.st.ID, err))
				return
			}
			break
		}
	}
	if want := f.owe > 0; want != f.out {
		f.out = want
		ev := uint32(unix.EPOLLIN | unix.EPOLLRDHUP)
		if want {
			ev |= unix.EPOLLOUT
		}
		_ = t.e.mod(f.fd, ev, idx, 0)
	}
}

// startCRRClient opens every flow's first connection.
func (t *txnThread) startCRRClient() error {
	ap := t.crr.Peer
	if ap.Addr().Unmap().Is4() {
		t.family = unix.AF_INET
		t.sa = &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().Unmap().As4()}
	} else {
		t.family = unix.AF_INET6
		t.sa = &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	}
	t.linger = unix.Linger{Onoff: 1, Linger: 0}
	t.opts = t.p.SockOpts(true)
	for i, f := range t.flows {
		f.fd = -1
		t.n++
		t.connect(f, int32(i))
	}
	return nil
}

// connect opens flow f's next connection (non-blocking) and queues its
// proof and request; a failure counts and is tried again next round.
func (t *txnThread) connect(f *txnFlow, idx int32) {
	fd, err := unix.Socket(t.family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.finish(f, fmt.Errorf("flow %d: opening a socket: %w", f.st.ID, err))
		return
	}
	_ = unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &t.linger)
	if err := t.opts.Apply(fd); err != nil {
		unix.Close(fd)
		t.finish(f, fmt.Errorf("flow %d: %w", f.st.ID, err))
		return
	}
	f.start = t.now()
	if err := unix.Connect(fd, t.sa); err != nil && err != unix.EINPROGRESS {
		unix.Close(fd)
		t.errs.Add(1)
		t.retry++ // the next round tries again
		return
	}
	f.fd, f.rem, f.hoff = fd, 0, 0
	f.sent++
	f.owe = t.admLen + t.p.Size
	if t.adm != nil {
		t.adm.Sign(f.hdr[:t.admLen], f.idx, uint32(f.sent))
	}
	if err := t.e.add(fd, unix.EPOLLOUT, idx, 0); err != nil {
		unix.Close(fd)
		f.fd = -1
		t.finish(f, fmt.Errorf("flow %d: adding the socket to epoll: %w", f.st.ID, err))
	}
}

// crrEvent moves flow f's connection along: proof and request out, then
// the response in, then the close and the next connection.
func (t *txnThread) crrEvent(f *txnFlow, events uint32) {
	idx := f.ti
	if f.fd < 0 {
		return
	}
	if f.owe > 0 {
		if events&(unix.EPOLLERR|unix.EPOLLHUP) != 0 {
			t.failed(f, idx)
			return
		}
		if !t.sendFirst(f) {
			t.failed(f, idx)
			return
		}
		if f.owe == 0 {
			_ = t.e.mod(f.fd, unix.EPOLLIN|unix.EPOLLRDHUP, idx, 0)
		}
		return
	}
	n, err := recvFlags(f.fd, t.buf, unix.MSG_DONTWAIT)
	switch {
	case n > 0:
		f.rem += n
		f.st.bytes.Add(uint64(n))
	case err == unix.EAGAIN || err == unix.EINTR:
		return
	default: // closed or reset before the whole response: counted, made again
		t.failed(f, idx)
		return
	}
	if f.rem < t.p.Size {
		return
	}
	now := t.now()
	t.w.lat.cur().Record(time.Duration(now - f.start))
	f.done++
	f.st.txns.Add(1)
	unix.Close(f.fd) // with SO_LINGER 0: a reset, no TIME_WAIT
	f.fd = -1
	if t.halt.Load() {
		t.finish(f, nil)
		return
	}
	t.connect(f, idx)
}

// reconnect tries again the connects that failed at once.
func (t *txnThread) reconnect() {
	t.retry = 0
	for _, f := range t.flows {
		if f.fd < 0 && !f.ended {
			if t.halt.Load() {
				t.finish(f, nil)
				continue
			}
			t.connect(f, f.ti)
		}
	}
}

// failed counts a connection that broke before its answer, and makes the
// next one.
func (t *txnThread) failed(f *txnFlow, idx int32) {
	unix.Close(f.fd)
	f.fd = -1
	f.done = f.sent
	if t.halt.Load() { // the agent closes its listener as the test stops
		t.finish(f, nil)
		return
	}
	t.errs.Add(1)
	t.connect(f, idx)
}

// sendFirst writes what is left of the proof and the request in one
// writev(2): one segment for both, as a client writes its request. It
// reports false when the connection failed.
func (t *txnThread) sendFirst(f *txnFlow) bool {
	for f.owe > 0 {
		cnt := 0
		if f.hoff < t.admLen {
			f.iov[0].Base = &f.hdr[f.hoff]
			f.iov[0].SetLen(t.admLen - f.hoff)
			cnt = 1
		}
		left := f.owe - (t.admLen - min(f.hoff, t.admLen))
		if left > 0 {
			f.iov[cnt].Base = &t.pat[0]
			f.iov[cnt].SetLen(min(left, len(t.pat)))
			cnt++
		}
		r, _, e := unix.Syscall(unix.SYS_WRITEV, uintptr(f.fd), uintptr(unsafe.Pointer(&f.iov[0])), uintptr(cnt))
		switch {
		case e == unix.EINTR:
			continue
		case e == unix.EAGAIN:
			return true
		case e != 0:
			return false
		}
		f.owe -= int(r)
		f.hoff += int(r)
	}
	return true
}

// startCRRServer registers the thread's listening socket and its
// connection slots: as many as the test's flows, each of which has at
// most one connection open at a time (a few more for resets in flight).
func (t *txnThread) startCRRServer() error {
	t.conns = make([]crrConn, len(t.all)+64)
	t.free = make([]int32, 0, len(t.conns))
	for i := len(t.conns) - 1; i >= 0; i-- {
		t.conns[i].fd = -1
		t.free = append(t.free, int32(i))
	}
	if err := t.e.add(t.ln, unix.EPOLLIN, listenerIdx, 0); err != nil {
		return fmt.Errorf("adding the crr listener to epoll: %w", err)
	}
	t.n = 1 // the listener, until the test stops
	return nil
}

// accept takes the connections waiting on the listener: the client's
// only, while a slot is free.
func (t *txnThread) accept() {
	for range 64 {
		t.rsaLen = uint32(unsafe.Sizeof(t.rsa))
		r, _, e := unix.Syscall6(unix.SYS_ACCEPT4, uintptr(t.ln), uintptr(unsafe.Pointer(&t.rsa)),
			uintptr(unsafe.Pointer(&t.rsaLen)), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0, 0)
		if e == unix.ECONNABORTED || e == unix.EINTR {
			continue
		}
		if e != 0 {
			return // EAGAIN, or out of descriptors: the next round tries again
		}
		fd := int(r)
		if !t.fromClient() || len(t.free) == 0 {
			unix.Close(fd)
			continue
		}
		i := t.free[len(t.free)-1]
		t.free = t.free[:len(t.free)-1]
		c := &t.conns[i]
		c.fd, c.flow, c.hoff, c.rem, c.owe, c.out = fd, -1, 0, 0, 0, false
		c.gen++
		if err := t.e.add(fd, unix.EPOLLIN|unix.EPOLLRDHUP, i, c.gen); err != nil {
			t.closeConn(i)
			continue
		}
		t.n++
	}
}

// fromClient reports whether the connection just accepted comes from the
// test's client.
func (t *txnThread) fromClient() bool {
	var a netip.Addr
	switch t.rsa.Addr.Family {
	case unix.AF_INET:
		a = netip.AddrFrom4((*unix.RawSockaddrInet4)(unsafe.Pointer(&t.rsa)).Addr)
	case unix.AF_INET6:
		a = netip.AddrFrom16((*unix.RawSockaddrInet6)(unsafe.Pointer(&t.rsa)).Addr)
	default:
		return false
	}
	return a.Unmap() == t.crr.Client.Unmap()
}

func (t *txnThread) closeConn(i int32) {
	c := &t.conns[i]
	if c.fd < 0 {
		return
	}
	unix.Close(c.fd) // closing takes it out of epoll
	c.fd = -1
	t.free = append(t.free, i)
	t.n--
}

// serveConn reads a connection's proof and request and answers it; a
// proof that does not hold, a connection reused past its first request
// by more than the test allows, or the client's reset closes it.
func (t *txnThread) serveConn(i int, events uint32) {
	c := &t.conns[i]
	if events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		n, err := recvFlags(c.fd, t.buf, unix.MSG_DONTWAIT)
		switch {
		case n > 0:
			if !t.request(c, t.buf[:n]) {
				t.closeConn(int32(i))
				return
			}
		case err == unix.EAGAIN || err == unix.EINTR:
		default: // the client's reset, or its close
			t.closeConn(int32(i))
			return
		}
	}
	t.answer(c, int32(i))
}

// request accounts bytes read on an accepted crr connection; false when
// the proof does not hold.
func (t *txnThread) request(c *crrConn, b []byte) bool {
	if c.flow < 0 {
		k := copy(c.hdr[c.hoff:t.admLen], b)
		c.hoff += k
		b = b[k:]
		if c.hoff < t.admLen {
			return true
		}
		flow := 0
		if t.adm != nil {
			f, seq, ok := t.adm.Verify(c.hdr[:t.admLen])
			if !ok || f < 0 || f >= len(t.all) || !t.all[f].admit(seq) {
				return false
			}
			flow = f
		}
		c.flow = flow
	}
	size := t.p.Size
	st := t.all[c.flow]
	st.bytes.Add(uint64(len(b)))
	c.rem += len(b)
	k := c.rem / size
	c.rem -= k * size
	if k > 0 {
		c.owe += k * size
		st.txns.Add(uint64(k))
	}
	return true
}

// answer writes what the connection owes.
func (t *txnThread) answer(c *crrConn, i int32) {
	for c.owe > 0 {
		n, err := unix.Write(c.fd, t.pat[:min(c.owe, len(t.pat))])
		if n > 0 {
			c.owe -= n
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			if err != unix.EAGAIN {
				t.closeConn(i)
				return
			}
			break
		}
	}
	if want := c.owe > 0; want != c.out {
		c.out = want
		ev := uint32(unix.EPOLLIN | unix.EPOLLRDHUP)
		if want {
			ev |= unix.EPOLLOUT
		}
		_ = t.e.mod(c.fd, ev, i, c.gen)
	}
}

// admit takes connection seq of the stream's flow once: a proof seen on
// the wire and replayed on another connection names a connection the
// flow has made already. A flow's connections come one after another.
func (s *Stream) admit(seq uint32) bool {
	for {
		last := s.seq.Load()
		if seq <= last {
			return false
		}
		if s.seq.CompareAndSwap(last, seq) {
			return true
		}
	}
}

// ListenCRR opens the agent's listening sockets for a crr test of threads
// threads: one per thread on one port of addr, joined with SO_REUSEPORT
// so that the kernel spreads the connections over them; non-blocking.
// It returns them and their port.
func ListenCRR(addr netip.Addr, threads int) ([]int, int, error) {
	var fds []int
	fail := func(err error) ([]int, int, error) {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, 0, fmt.Errorf("opening the crr listener on %s: %w", addr, err)
	}
	port := 0
	for range max(1, threads) {
		family := unix.AF_INET6
		var sa unix.Sockaddr = &unix.SockaddrInet6{Port: port, Addr: addr.As16()}
		if addr.Unmap().Is4() {
			family = unix.AF_INET
			sa = &unix.SockaddrInet4{Port: port, Addr: addr.Unmap().As4()}
		}
		fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fail(err)
		}
		fds = append(fds, fd)
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
			return fail(err)
		}
		if err := unix.Bind(fd, sa); err != nil {
			return fail(err)
		}
		if err := unix.Listen(fd, 4096); err != nil {
			return fail(err)
		}
		if port == 0 {
			got, err := unix.Getsockname(fd)
			if err != nil {
				return fail(err)
			}
			switch a := got.(type) {
			case *unix.SockaddrInet4:
				port = a.Port
			case *unix.SockaddrInet6:
				port = a.Port
			}
		}
	}
	return fds, port, nil
}
