package engine

import (
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/latency"
)

// Flows that share a thread are driven with epoll, as neper drives its
// -F flows on -T threads: each thread has its own epoll instance and its
// own flows' non-blocking sockets, and wakes at least every pollWait to
// see whether the test is stopping. Level-triggered: a flow that is still
// readable or writable after its turn is reported again at the next
// wait, so every ready flow gets one system call per round and none
// starves the others.
const (
	pollEvents = 256
	pollWait   = 10 // ms
)

// epoller is one thread's epoll instance. An event's data is the flow's
// index (Fd) and a generation (Pad) that tells a reused slot's events
// from its previous connection's.
type epoller struct {
	ep     int
	events [pollEvents]unix.EpollEvent
	ev     unix.EpollEvent
}

func newEpoller() (*epoller, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("creating an epoll instance: %w", err)
	}
	return &epoller{ep: ep}, nil
}

func (e *epoller) ctl(op, fd int, events uint32, idx, gen int32) error {
	e.ev = unix.EpollEvent{Events: events, Fd: idx, Pad: gen}
	return unix.EpollCtl(e.ep, op, fd, &e.ev)
}

func (e *epoller) add(fd int, events uint32, idx, gen int32) error {
	return e.ctl(unix.EPOLL_CTL_ADD, fd, events, idx, gen)
}

func (e *epoller) mod(fd int, events uint32, idx, gen int32) error {
	return e.ctl(unix.EPOLL_CTL_MOD, fd, events, idx, gen)
}

func (e *epoller) del(fd int) { _ = unix.EpollCtl(e.ep, unix.EPOLL_CTL_DEL, fd, nil) }

// wait returns the ready events, waiting up to pollWait.
func (e *epoller) wait() []unix.EpollEvent {
	n, err := unix.EpollWait(e.ep, e.events[:], pollWait)
	if err != nil || n <= 0 { // EINTR: the next round looks again
		return nil
	}
	return e.events[:n]
}

func (e *epoller) close() { _ = unix.Close(e.ep) }

// worker is one OS thread of a test, as the sampler sees it: its thread
// ID (for its CPU clock), whether it receives, and for a transaction
// client the latency of the interval in progress.
type worker struct {
	cpu  int
	name string
	recv bool
	tid  atomic.Int32
	lat  *recSwap
	// The thread's CPU time (ns) at the warm-up's end and at the last
	// sample that could read it: the sampler's own.
	cpuOmit, cpuLast int64
}

// threadCPU is a thread's CPU time so far (user and system, in ns), read
// from its thread CPU clock: the kernel's per-thread clock ID is made
// from the thread ID (MAKE_THREAD_CPUCLOCK, CPUCLOCK_SCHED), and any
// thread of the process may read it. false once the thread has exited.
func threadCPU(tid int32) (int64, bool) {
	if tid == 0 {
		return 0, false
	}
	id := int32((^tid)<<3 | 6)
	var ts unix.Timespec
	if err := unix.ClockGettime(id, &ts); err != nil {
		return 0, false
	}
	return ts.Nano(), true
}

// recSwap hands a transaction thread's latency of one interval to the
// sampler without a lock or an allocation: the thread records into one
// of two recorders; the sampler asks for a switch (want), the thread
// makes it between two rounds of its loop and says so (have), and the
// sampler reads the recorder left behind, then empties it before the
// next switch hands it back.
type recSwap struct {
	recs [2]latency.Recorder
	want atomic.Uint32
	have atomic.Uint32
	seen uint32 // the thread's: the switch it made last
}

// cur is the recorder the thread records into.
func (r *recSwap) cur() *latency.Recorder { return &r.recs[r.seen&1] }

// poll makes the switch the sampler asked for; the thread calls it
// between rounds.
func (r *recSwap) poll() {
	if w := r.want.Load(); w != r.seen {
		r.seen = w
		r.have.Store(w)
	}
}

// take asks for a switch and returns the recorder left behind, or nil
// when the thread did not switch within wait (the next take returns it,
// holding both intervals). The caller empties it (Reset) when done.
func (r *recSwap) take(wait time.Duration) *latency.Recorder {
	if r.have.Load() == r.want.Load() {
		r.want.Add(1)
	}
	w := r.want.Load()
	deadline := time.Now().Add(wait)
	for r.have.Load() != w {
		if time.Now().After(deadline) {
			return nil
		}
		time.Sleep(100 * time.Microsecond)
	}
	return &r.recs[(w-1)&1]
}
