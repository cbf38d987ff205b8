package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/telemetry"
)

// run serves the test of an authenticated client, from its request to
// its end, and reports whether the test started. Every failure is logged
// with its reason; none outlives the session.
func (ss *session) run(ctx context.Context) bool {
	typ, body, err := ss.ctrl.recv(setupTimeout)
	switch {
	case isEOF(err):
		ss.refuse(errors.New("the client left without asking for a test"))
		return false
	case err != nil:
		ss.refuse(fmt.Errorf("reading the request: %w", err))
		return false
	case typ == msgTool:
		return ss.runTool(ctx, body)
	case typ == msgDoctor:
		ss.serveDoctor()
		return false
	}
	if err := ss.request(typ, body); err != nil {
		ss.refuse(err)
		return false
	}
	streams, err := ss.setup(ctx)
	if err != nil {
		ss.log.Warn("test failed", "reason", err.Error())
		ss.ctrl.send(errorMsg{Type: msgError, Reason: err.Error()}, handshakeTimeout)
		return false
	}
	ss.log.Info("test started", "streams", ss.p.Streams, "direction", string(ss.p.Direction),
		"duration", ss.p.duration().String(), "omit", ss.p.omit().String(), "cpus", cpulist.Format(used(cpusOf(streams))))
	if err := ss.measure(ctx, streams); err != nil {
		ss.log.Warn("test aborted", "reason", err.Error())
	}
	return true
}

// refuse tells the client why its request was refused, and logs it.
func (ss *session) refuse(err error) {
	ss.log.Warn("refused test", "reason", err.Error())
	ss.ctrl.send(errorMsg{Type: msgError, Reason: err.Error()}, handshakeTimeout)
}

// request decodes and checks the test request.
func (ss *session) request(typ string, body []byte) error {
	var req requestMsg
	if err := decodeAs(typ, body, msgRequest, &req); err != nil {
		return fmt.Errorf("reading the request: %w", err)
	}
	if err := req.params.validate(ss.srv.maxDuration()); err != nil {
		return err
	}
	for _, c := range req.ServerCPUs {
		if len(ss.host.CPUs) > 0 && !cpulist.Contains(ss.host.CPUs, c) {
			return fmt.Errorf("server CPU %d is not available to the agent (it may use %s)", c, cpulist.Format(ss.host.CPUs))
		}
	}
	ss.p = req.params
	return nil
}

// setup accepts the test, waits for its data connections and says ready.
func (ss *session) setup(ctx context.Context) ([]*stream, error) {
	cpus := ss.p.ServerCPUs
	if len(cpus) == 0 {
		cpus = ss.host.Candidates
	}
	place := assign(ss.p.connections(), cpus)
	cookie, err := newNonce()
	if err != nil {
		return nil, err
	}
	ss.expectData(cookie)
	defer ss.expectData(nil) // late or extra data connections are refused
	port := addrPort(ss.ctrl.c.LocalAddr()).Port()
	if err := ss.ctrl.send(acceptMsg{Type: msgAccept, Port: int(port), Cookie: cookie, Placement: place}, handshakeTimeout); err != nil {
		return nil, fmt.Errorf("sending accept: %w", err)
	}
	streams, err := ss.collect(ctx, place)
	if err != nil {
		closeStreams(streams)
		return nil, err
	}
	win := sockBufs(ss.srv.fs(), streams[0].fd, ss.p.Window)
	if err := ss.ctrl.send(readyMsg{Type: msgReady, Window: win}, handshakeTimeout); err != nil {
		closeStreams(streams)
		return nil, fmt.Errorf("sending ready: %w", err)
	}
	return streams, nil
}

// collect waits for every data connection and prepares its socket.
func (ss *session) collect(ctx context.Context, place []int) ([]*stream, error) {
	n := ss.p.connections()
	out := make([]*stream, n)
	for i := range out {
		out[i] = &stream{fd: -1}
	}
	t := time.NewTimer(setupTimeout)
	defer t.Stop()
	gone, unwatch := ss.watch()
	defer unwatch()
	opts := sockOpts{window: ss.p.Window, congestion: ss.p.Congestion, pacing: ss.p.FQRate / 8}
	for got := 0; got < n; got++ {
		var dc dataConn
		select {
		case dc = <-ss.data:
		case <-t.C:
			return out, fmt.Errorf("only %d of %d data connections arrived within %s", got, n, setupTimeout)
		case err := <-gone:
			return out, fmt.Errorf("the client left before its data connections were up: %w", err)
		case <-ctx.Done():
			return out, context.Cause(ctx)
		}
		fd, err := detach(dc.nc)
		if err != nil {
			return out, err
		}
		send := !ss.p.clientSends(dc.index)
		o := opts
		o.zerocopy = send && ss.p.ZeroCopy == MsgZeroCopy
		out[dc.index] = &stream{id: dc.index + 1, send: send, cpu: place[dc.index], fd: fd}
		if err := o.apply(fd); err != nil {
			return out, err
		}
	}
	return out, nil
}

// watch reads the control connection while the agent waits for data
// connections: the client sends nothing then, so whatever the read
// returns means it gave up (a failed connect closes its control
// connection) or broke the protocol. stop ends the read and waits for it.
func (ss *session) watch() (gone <-chan error, stop func()) {
	ch := make(chan error, 1)
	done := make(chan struct{})
	var mu sync.Mutex
	stopped := false
	go func() {
		defer close(done)
		mu.Lock()
		if stopped {
			mu.Unlock()
			return
		}
		ss.ctrl.c.SetReadDeadline(time.Now().Add(setupTimeout))
		mu.Unlock()
		typ, _, err := ss.ctrl.read()
		if err == nil {
			err = fmt.Errorf("%w: unexpected %q", errBadMessage, typ)
		}
		ch <- err
	}()
	return ch, func() {
		mu.Lock()
		stopped = true
		ss.ctrl.c.SetReadDeadline(time.Now()) // ends a read in progress
		mu.Unlock()
		<-done
	}
}

func cpusOf(streams []*stream) []int {
	out := make([]int, len(streams))
	for i, s := range streams {
		out[i] = s.cpu
	}
	return out
}

// measure runs the agent's half: streams, a sample per interval sent to
// the client, the totals at the end. The client ends the test with
// "stop"; a client that does not within the test's length and a grace is
// cut off, so nobody holds the agent longer than they asked for.
func (ss *session) measure(ctx context.Context, streams []*stream) error {
	snd, err := newSender(ss.p.ZeroCopy)
	if err != nil {
		closeStreams(streams)
		return err
	}
	sd := newSide(ss.p, streams, snd, telemetry.NewSampler(ss.srv.fs(), ss.host.NICIRQs), "lrs")
	defer sd.closeAll()
	var start bareMsg
	if err := ss.ctrl.expect(msgStart, &start, setupTimeout); err != nil {
		return fmt.Errorf("waiting for start: %w", err)
	}
	sd.begin()
	stopc := ss.awaitStop(sd.t0.Add(ss.p.omit() + ss.p.duration() + endGrace))
	if err := ss.intervals(ctx, sd, stopc); err != nil {
		sd.shutdown()
		sd.finish(0)
		return err
	}
	sd.finish(endGrace)
	zs, zc, zcp := sd.zeroCopy()
	end := endMsg{Type: msgEnd, Streams: sd.totals(), CPUSeconds: sd.measuredCPU(), Errors: sd.errors(),
		ZCSends: zs, ZCCompletions: zc, ZCCopied: zcp}
	ss.free()
	if err := ss.ctrl.send(end, handshakeTimeout); err != nil {
		return fmt.Errorf("sending the totals: %w", err)
	}
	ss.log.Info("test done", "sent", sumOf(end.Streams, true), "received", sumOf(end.Streams, false), "errors", len(end.Errors))
	return nil
}

// intervals sends a sample at every boundary until the client's stop,
// when it takes the last one at once.
func (ss *session) intervals(ctx context.Context, sd *side, stopc <-chan error) error {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		due, ok := sd.due()
		var tc <-chan time.Time
		if ok {
			t.Reset(time.Until(due))
			tc = t.C
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the agent is shutting down: %w", context.Cause(ctx))
		case err := <-stopc:
			if err != nil {
				return err
			}
			sd.halt.Store(true)
			if !sd.done() {
				sd.next = len(sd.bounds) - 1 // the client's last interval ends now
				return ss.send(sd.sample())
			}
			return nil
		case <-tc:
			if err := ss.send(sd.sample()); err != nil {
				return err
			}
		}
	}
}

func (ss *session) send(s sideSample) error {
	if err := ss.ctrl.send(intervalMsg{Type: msgInterval, sideSample: s}, handshakeTimeout); err != nil {
		return fmt.Errorf("sending interval %d: %w", s.Index, err)
	}
	return nil
}

// awaitStop reads the control connection for the client's stop, until
// deadline. It delivers nil for a stop and an error for anything else: a
// client gone (killed mid-test), a late client, a stray message.
func (ss *session) awaitStop(deadline time.Time) <-chan error {
	ch := make(chan error, 1)
	go func() {
		typ, body, err := ss.ctrl.recv(time.Until(deadline))
		switch {
		case isEOF(err):
			ch <- errors.New("the client went away mid-test")
		case isTimeout(err):
			ch <- errors.New("the client did not stop the test within its length and the grace after it")
		case err != nil:
			ch <- fmt.Errorf("reading the control connection: %w", err)
		default:
			var m bareMsg
			ch <- decodeAs(typ, body, msgStop, &m)
		}
	}()
	return ch
}

func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}

func sumOf(ts []streamTotal, sent bool) uint64 {
	var n uint64
	for _, t := range ts {
		if sent {
			n += t.Sent
		} else {
			n += t.Received
		}
	}
	return n
}
