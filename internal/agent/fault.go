package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/pathwatch"
	"github.com/linerate/linerate/internal/result"
)

// How a running test notices a path that went away: every watchTick it
// looks whether a byte moved; once none has for stallAfter, it asks the
// kernel whether the path still exists. A path that does ends nothing: a
// stalled path that still exists is the network's business, bounded by
// the test's length and its grace as before.
const (
	watchTick  = 500 * time.Millisecond
	stallAfter = time.Second
	// yieldAfter is how long a running test must have moved nothing
	// before a new client may take the agent from it: its client is gone
	// where the agent cannot see it (an address removed on the client's
	// host, a cable pulled beyond the next switch).
	yieldAfter = 3 * time.Second
)

// PathError ends a test whose path, or whose other end, went away while
// it ran. The test's intervals up to then are kept (Result.Error says why
// the run is incomplete).
type PathError struct {
	// Peer is the other end's address.
	Peer string
	// Agent is true when the other end went away rather than the path to it.
	Agent bool
	// After is when, from the start of the run, bytes last moved.
	After time.Duration
	// Cause says what went away, in a few words: "lab0 was removed".
	Cause string
}

func (e *PathError) Error() string {
	what := "the path to " + e.Peer
	if e.Agent {
		what = "the agent at " + e.Peer
	}
	return fmt.Sprintf("%s went away %.1f s into the run: %s", what, e.After.Seconds(), e.Cause)
}

// stallWatch tells a path that went away from one that is merely slow.
type stallWatch struct {
	route    *pathwatch.Route // nil: the route could not be looked up; nothing is checked
	side     *engine.Side
	t0       time.Time
	moved    uint64
	lastMove time.Time
}

func newStallWatch(route *pathwatch.Route, side *engine.Side) *stallWatch {
	now := time.Now()
	return &stallWatch{route: route, side: side, t0: now, lastMove: now}
}

// check returns why the path went away, once no byte has moved for
// stallAfter and the kernel says the path is gone; nil otherwise.
func (w *stallWatch) check(now time.Time) *PathError {
	if m := w.side.Moved(); m != w.moved {
		w.moved, w.lastMove = m, now
		return nil
	}
	if now.Sub(w.lastMove) < stallAfter {
		return nil
	}
	return w.gone()
}

// gone asks the kernel about the path at once, moving or not.
func (w *stallWatch) gone() *PathError {
	if err := w.route.Check(); err != nil {
		return &PathError{Peer: w.route.Peer.String(), After: w.lastMove.Sub(w.t0), Cause: err.Error()}
	}
	return nil
}

// lookupRoute finds the route a control connection took, nil when the
// kernel could not say (the run then goes unwatched).
func lookupRoute(c net.Conn) *pathwatch.Route {
	r, err := pathwatch.Lookup(engine.AddrPort(c.RemoteAddr()).Addr(), engine.AddrPort(c.LocalAddr()).Addr())
	if err != nil {
		return nil
	}
	return r
}

// agentGone turns a failed read of the control connection during a test
// into a PathError when the agent hung up or reset it (it was stopped or
// killed); other failures are returned as they are.
func (c *client) agentGone(err error, w *stallWatch) error {
	if pe := w.gone(); pe != nil {
		return pe // the path went first; the connection's end follows from it
	}
	if !isEOF(err) && !errors.Is(err, syscall.ECONNRESET) {
		return fmt.Errorf("the agent's control connection: %w", err)
	}
	return &PathError{Peer: engine.AddrPort(c.ctrl.c.RemoteAddr()).Addr().Unmap().String(), Agent: true,
		After: time.Since(w.t0), Cause: "it closed the control connection (was it stopped or killed?)"}
}

// failed ends a test that started and then failed: the streams are cut,
// and the intervals measured so far are kept in the result, with what
// this end measured in End and the reason in Error.
func (c *client) failed(cause error) (*result.Result, error) {
	c.side.Shutdown()
	c.side.Finish(0)
	c.res.Error = cause.Error()
	c.res.End = c.partialEnd()
	return c.res, cause
}

// partialEnd sums the measured intervals this end took: without the
// agent's totals, each stream's bytes are this end's, sent or received.
func (c *client) partialEnd() result.End {
	e := result.End{Seconds: c.side.MeasuredSeconds(), Errors: []string{c.res.Error}}
	at := map[int]int{} // stream ID → index in e.Streams
	for _, iv := range c.res.Intervals {
		if iv.Omitted {
			continue
		}
		for _, s := range iv.Streams {
			i, ok := at[s.ID]
			if !ok {
				i = len(e.Streams)
				at[s.ID] = i
				e.Streams = append(e.Streams, result.StreamEnd{ID: s.ID, Sender: s.Sender})
			}
			se := &e.Streams[i]
			if s.Sender == "client" {
				se.SentBytes += s.Bytes
			} else {
				se.ReceivedBytes += s.Bytes
			}
			se.Retransmits += s.Retransmits
		}
	}
	for _, s := range e.Streams {
		e.SumSent.Bytes += s.SentBytes
		e.SumSent.Retransmits += s.Retransmits
		e.SumReceived.Bytes += s.ReceivedBytes
	}
	e.SumSent.BitsPerSecond = bps(e.SumSent.Bytes, e.Seconds)
	e.SumReceived.BitsPerSecond = bps(e.SumReceived.Bytes, e.Seconds)
	e.CPU.ClientSeconds = c.side.MeasuredCPU()
	return e
}

// yielding lets a test that has moved nothing for yieldAfter give way to
// the next client, so that a client gone where the agent cannot see it
// holds the agent no longer than that (the claim in server.go asks).
type yielding struct {
	lastMove atomic.Int64 // Unix nanoseconds; 0 while the test is not running
	once     *sync.Once
	c        chan struct{} // closed to tell the test to end; nil: never
}

func newYielding() yielding { return yielding{once: new(sync.Once), c: make(chan struct{})} }

// moved records when the running test last moved a byte.
func (y *yielding) moved(at time.Time) { y.lastMove.Store(at.UnixNano()) }

// giveWay ends the session's test for a new client if it has moved
// nothing for yieldAfter, and reports whether it did. The caller holds
// srv.mu.
func (ss *session) giveWay(log *slog.Logger) bool {
	y := &ss.yield
	last := y.lastMove.Load()
	if y.c == nil || last == 0 || time.Since(time.Unix(0, last)) < yieldAfter {
		return false
	}
	y.once.Do(func() { close(y.c) })
	log.Warn("took over from a stalled test", "stalled_from", ss.ctrl.c.RemoteAddr().String(),
		"quiet", time.Since(time.Unix(0, last)).Round(100*time.Millisecond).String())
	return true
}
