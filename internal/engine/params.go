package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/linerate/linerate/internal/result"
)

// Bounds of a test that the engine itself imposes.
const (
	// MaxStreams bounds the streams of a test that runs each on a thread
	// of its own (each way for Bidir), and MaxThreads the threads of one
	// that multiplexes its flows: one pinned OS thread each.
	MaxStreams = 128
	MaxThreads = MaxStreams
	// MaxFlows bounds the connections of a test whose flows share
	// threads (Threads < Streams, or a transaction test): a socket and
	// its buffers each, on both ends.
	MaxFlows = 4096
	// MaxWindow is the largest socket buffer: SO_SNDBUF/SO_RCVBUF take
	// an int.
	MaxWindow = 1<<31 - 1
	// MaxSize bounds a transaction's request and response; MaxDepth the
	// requests a flow keeps outstanding.
	MaxSize  = 1 << 20
	MaxDepth = 64
	// OwnThreadsUpTo is the most streams that run on threads of their
	// own by default (Threads 0): above it, the flows share
	// min(Streams, CPUs) threads (ThreadsFor).
	OwnThreadsUpTo = 16
)

// Params is a test as both of its ends run it.
//
// Its JSON names are those the agent's protocol carries (the request and
// relay messages embed it, and bench's stored parameters too), so a field
// added here with its name travels without a conversion. The durations
// are left out: each document writes them in its own unit (the wire in
// integer milliseconds, checked before any becomes a time.Duration).
type Params struct {
	Streams   int              `json:"streams"`   // parallel streams (each way for Bidir)
	Duration  time.Duration    `json:"-"`         // measured time
	Omit      time.Duration    `json:"-"`         // warm-up before it, not counted
	Interval  time.Duration    `json:"-"`         // report period
	Direction result.Direction `json:"direction"` // which way the payload flows, seen from the client

	Window     int             `json:"window"`               // SO_SNDBUF and SO_RCVBUF on both ends, bytes; 0 leaves autotuning on
	Congestion string          `json:"congestion,omitempty"` // TCP_CONGESTION on every data socket; "" keeps the default
	FQRate     uint64          `json:"fq_rate,omitempty"`    // SO_MAX_PACING_RATE per stream, bits per second (needs the fq qdisc); 0 none
	ZeroCopy   result.ZeroCopy `json:"zerocopy,omitempty"`   // how senders send

	// Mode is what the flows carry: streams (the default), or
	// request/response transactions (RR, CRR) of Size bytes each way,
	// Depth of them outstanding per flow (0 means 1), Streams flows.
	Mode  result.Mode `json:"mode,omitempty"`
	Size  int         `json:"size,omitempty"`
	Depth int         `json:"depth,omitempty"`
	// Threads is how many threads each end runs the flows on: 0 chooses
	// (ThreadsFor), Threads == Streams gives each stream a blocking
	// thread of its own, fewer multiplex the flows with epoll.
	Threads int `json:"threads,omitempty"`
	// SkipRxCopy is how receivers take their data (MSG_TRUNC, TCP
	// receive zerocopy); "" copies it.
	SkipRxCopy result.SkipRxCopy `json:"skip_rx_copy,omitempty"`
	// NoTCPInfo skips reading TCP_INFO at every interval: the run has no
	// tcp blocks, rtt or cwnd. It exists to measure what the reading
	// costs (docs/benchmarks.md).
	NoTCPInfo bool `json:"no_tcp_info,omitempty"`
}

// ThreadsFor resolves Threads 0 on a host with cpus CPUs for the test's
// threads: streams up to OwnThreadsUpTo get a thread each (as iperf3
// 3.16 and later give each -P stream one); more flows, and every
// transaction test, share min(flows, cpus) threads, as neper's -T
// spreads -F flows: a thread per CPU keeps every CPU busy without the
// threads taking turns on one.
func (p Params) ThreadsFor(cpus int) int {
	n := p.Connections()
	if p.Threads > 0 {
		return min(p.Threads, n)
	}
	if p.Mode == result.Stream && n <= OwnThreadsUpTo {
		return n
	}
	return max(1, min(n, cpus))
}

// OwnThreads reports whether each stream runs on a blocking thread of its
// own (Threads == Connections) rather than flows sharing epoll threads.
func (p Params) OwnThreads() bool {
	return p.Mode == result.Stream && p.Threads == p.Connections()
}

// Requests is how many requests a transaction flow keeps outstanding.
func (p Params) Requests() int { return max(1, p.Depth) }

// Connections is how many data connections (flows) the test has.
func (p Params) Connections() int {
	if p.Direction == result.Bidir && p.Mode == result.Stream {
		return 2 * p.Streams
	}
	return p.Streams
}

// ClientSends reports whether the client writes on connection i (0-based):
// with Bidir, the first Streams connections carry client-to-agent data.
// In a transaction test the client sends the requests on every flow.
func (p Params) ClientSends(i int) bool {
	if p.Mode != result.Stream {
		return true
	}
	switch p.Direction {
	case result.Receive:
		return false
	case result.Bidir:
		return i < p.Streams
	}
	return true
}

// SockOpts returns the socket options of the test's data connection i,
// on the end that sends on it when send is true.
func (p Params) SockOpts(send bool) SockOpts {
	return SockOpts{Window: p.Window, Congestion: p.Congestion, Pacing: p.FQRate / 8,
		ZeroCopy: send && p.ZeroCopy == result.MsgZeroCopy,
		// Several requests outstanding must not wait for each other's
		// acknowledgement (Nagle); one outstanding never does.
		NoDelay: p.Mode == result.RR && p.Requests() > 1}
}

// Thread is the thread (0-based) that carries connection i when threads
// threads carry the test's flows: round-robin, as Assign spreads them
// over CPUs, so that connection i's CPU is its thread's.
func Thread(i, threads int) int { return i % max(1, threads) }

// Schedule returns the interval boundaries of a test, relative to its
// start: warm-up intervals ending at omit, then measured ones ending at
// omit+dur; and how many of them are warm-up.
func Schedule(omit, dur, iv time.Duration) ([]time.Duration, int) {
	var b []time.Duration
	for t := iv; t < omit; t += iv {
		b = append(b, t)
	}
	if omit > 0 {
		b = append(b, omit)
	}
	n := len(b)
	for t := omit + iv; t < omit+dur; t += iv {
		b = append(b, t)
	}
	return append(b, omit+dur), n
}

// Check bounds the test's shape, in the engine's own units (the agent
// checks the wire's integers first): what the flows carry, how many and
// on how many threads, and the options each mode takes.
func (p Params) Check() error {
	n := p.Connections()
	switch p.Mode {
	case result.Stream:
		if p.Size != 0 || p.Depth != 0 {
			return errors.New("a request size and depth are for transaction tests (rr, crr)")
		}
	case result.RR, result.CRR:
		if p.Size < 1 || p.Size > MaxSize {
			return fmt.Errorf("transaction size %d: must be 1 to %d bytes", p.Size, MaxSize)
		}
		if p.Depth < 0 || p.Depth > MaxDepth || p.Mode == result.CRR && p.Depth > 1 {
			return fmt.Errorf("depth %d: must be 1 to %d requests outstanding (1 with crr: one per connection)", p.Depth, MaxDepth)
		}
		if p.ZeroCopy != result.NoZeroCopy || p.SkipRxCopy != result.RxCopy {
			return errors.New("zero-copy sends and --skip-rx-copy are for streams, not transactions")
		}
	default:
		return fmt.Errorf("test mode %q: must be stream, rr or crr", p.Mode)
	}
	switch {
	case p.Streams < 1:
		return fmt.Errorf("%d streams: at least 1", p.Streams)
	case p.Threads < 0 || p.Threads > MaxThreads:
		return fmt.Errorf("%d threads: must be 1 to %d", p.Threads, MaxThreads)
	case p.Threads > n:
		return fmt.Errorf("%d threads for %d flows: at most one thread a flow", p.Threads, n)
	case n > MaxFlows:
		return fmt.Errorf("%d connections: at most %d", n, MaxFlows)
	case p.OwnThreads() && n > MaxStreams:
		return fmt.Errorf("%d streams on a thread each: at most %d; give --threads to share threads", n, MaxStreams)
	case p.Threads > 0 && !p.OwnThreads() && p.ZeroCopy == result.MsgZeroCopy:
		return errors.New("msg_zerocopy needs a thread per stream (--threads equal to the streams); sendfile works with shared threads")
	}
	if _, err := result.ParseSkipRxCopy(string(p.SkipRxCopy)); err != nil {
		return err
	}
	return nil
}
