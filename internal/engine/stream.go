package engine

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/result"
)

// What one system call moves: 128 KiB, iperf3's TCP default (-l), so the
// two tools make the same system calls. Larger writes were faster on
// loopback (1.5x at 512 KiB) but up to 2x slower over the lab's veth,
// where a 128 KiB write was best (docs/benchmarks.md); larger reads were
// slower on both.
const (
	sendSize = 128 << 10
	recvSize = 128 << 10
)

// Stream is one TCP connection of a test, seen from one end.
type Stream struct {
	ID   int  // 1-based, as reports number streams
	Send bool // this end writes; otherwise it reads
	CPU  int  // CPU its thread is pinned to; -1 unpinned
	FD   int  // blocking descriptor (Detach), owned by the Side once it has it

	bytes atomic.Uint64 // moved so far; read by the sampler
	txns  atomic.Uint64 // transactions completed (client) or answered (agent)
	seq   atomic.Uint32 // the agent's crr flows: the last connection admitted
	zc    zcStats
	rx    rxStats    // a zerocopy receiver's mapped and copied bytes
	zr    *zcReceive // its mapping, while it receives
	err   error      // set by the stream's goroutine before it is done
}

// zcStats counts MSG_ZEROCOPY sends and what the kernel did with them.
type zcStats struct {
	sends       atomic.Uint64 // sendmsg calls that sent data
	completions atomic.Uint64 // sends the kernel reported done
	copied      atomic.Uint64 // of those, sends it copied after all
}

// sender says how a sending stream moves its bytes.
type sender interface {
	loop(s *Stream, stop *atomic.Bool) error
}

// run starts the stream's thread: locked, pinned and named, moving bytes
// until stop is set (sending) or the peer closes (receiving). The thread
// is never unlocked, so it exits with the goroutine and its affinity and
// name go with it instead of leaking to other goroutines.
func (s *Stream) run(wg *sync.WaitGroup, snd sender, stop *atomic.Bool, name string) {
	s.runAs(wg, snd, result.RxCopy, stop, &worker{cpu: s.CPU, name: name})
}

// runAs is run with the receive method and the worker that records the
// thread for the sampler.
func (s *Stream) runAs(wg *sync.WaitGroup, snd sender, rx result.SkipRxCopy, stop *atomic.Bool, w *worker) {
	wg.Add(1)
	goLocked(func() { s.thread(wg, snd, rx, stop, w) })
}

func (s *Stream) thread(wg *sync.WaitGroup, snd sender, rx result.SkipRxCopy, stop *atomic.Bool, w *worker) {
	defer wg.Done()
	if err := pinThread(s.CPU); err != nil {
		s.err = err
		return
	}
	nameThread(w.name)
	w.tid.Store(int32(unix.Gettid()))
	if s.Send {
		s.err = snd.loop(s, stop)
		// Tell the receiver no more is coming; it reads to EOF.
		_ = unix.Shutdown(s.FD, unix.SHUT_WR)
		return
	}
	s.err = s.recvLoop(rx)
}

// recvLoop reads until the peer closes, copying, discarding (MSG_TRUNC)
// or mapping (TCP_ZEROCOPY_RECEIVE) what comes.
func (s *Stream) recvLoop(rx result.SkipRxCopy) error {
	buf := make([]byte, recvSize)
	read := func() (int, error) { return unix.Read(s.FD, buf) }
	switch rx {
	case result.MsgTrunc:
		read = func() (int, error) { return recvFlags(s.FD, buf, unix.MSG_TRUNC) }
	case result.ZerocopyReceive:
		z, err := newZCReceive(s.FD)
		if err != nil {
			return fmt.Errorf("stream %d: %w", s.ID, err)
		}
		defer z.close()
		read = func() (int, error) { return z.recv(s.FD, &s.rx, true) }
	}
	var y yielder
	for {
		y.tick()
		n, err := read()
		switch {
		case n > 0:
			s.bytes.Add(uint64(n))
		case err == nil:
			return nil // EOF: the sender is done
		case err == unix.EINTR:
		default:
			return fmt.Errorf("stream %d: receiving: %w", s.ID, err)
		}
	}
}

// copySender writes from a buffer: the kernel copies every byte.
type copySender struct{}

func (copySender) loop(s *Stream, stop *atomic.Bool) error {
	buf := make([]byte, sendSize)
	fillPattern(buf)
	var y yielder
	for !stop.Load() {
		y.tick()
		n, err := unix.Write(s.FD, buf)
		if n > 0 {
			s.bytes.Add(uint64(n))
		}
		if err != nil && err != unix.EINTR {
			return sendErr(s, stop, err)
		}
	}
	return nil
}

// sendErr reports a send error, unless the test was stopping anyway and
// the agent shut the socket down.
func sendErr(s *Stream, stop *atomic.Bool, err error) error {
	if stop.Load() && (errors.Is(err, unix.EPIPE) || errors.Is(err, unix.ECONNRESET)) {
		return nil
	}
	return fmt.Errorf("stream %d: sending: %w", s.ID, err)
}

// fillPattern fills b with a non-zero, non-repeating-per-page pattern, so
// nothing along the path can shortcut zero pages.
func fillPattern(b []byte) {
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
}

// reserveProcs makes room in the Go scheduler for n stream threads. Each
// holds a P while in a system call; when no P is left idle, the runtime
// takes them back after 20 µs, so every system call would return through
// the scheduler's slow path (measured: a third less throughput with two
// streams on two CPUs). The threads are pinned and almost always in the
// kernel, so the extra Ps cost nothing. It never lowers GOMAXPROCS: an
// agent's next test, or the other end of an in-process test, may need it.
func reserveProcs(n int) {
	if want := runtime.NumCPU() + n; runtime.GOMAXPROCS(0) < want {
		runtime.GOMAXPROCS(want)
	}
}
