package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/nicstats"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/telemetry"
)

// run serves the test of an authenticated client, from its request to
// its end, and reports whether the test started. Every failure is logged
// with its reason; none outlives the session.
func (ss *session) run(ctx context.Context, first firstMsg, lk *look, stopLook func()) bool {
	typ, body, err := first.typ, first.body, first.err
	if typ != msgRequest {
		stopLook()
	}
	switch {
	case isEOF(err):
		ss.refuse(errors.New("the client left without asking for a test"))
		return false
	case err != nil:
		ss.refuse(fmt.Errorf("reading the request: %w", err))
		return false
	case ss.ticket != nil && typ != msgRequest:
		ss.refuse(fmt.Errorf("a relay ticket allows the test it was issued for, not %q", typ))
		return false
	case ss.meshPeer && typ != msgRequest:
		ss.refuse(fmt.Errorf("a mesh peer's key allows its throughput test, not %q", typ))
		return false
	case typ == msgTool:
		return ss.runTool(ctx, body)
	case typ == msgProbe:
		return ss.runProbe(ctx, body)
	case typ == msgDoctor:
		ss.serveDoctor()
		return false
	case typ == msgRelay:
		return ss.runRelay(ctx, body)
	}
	if err := ss.request(typ, body); err != nil {
		ss.refuse(err)
		return false
	}
	load, _ := lk.wait() // unknown load: the client notes that the accept carries none
	streams, err := ss.setup(ctx, load)
	if err != nil {
		ss.free()
		ss.log.Warn("test failed", "reason", err.Error())
		ss.ctrl.send(errorMsg{Type: msgError, Reason: err.Error()}, handshakeTimeout)
		return false
	}
	ss.log.Info("test started", "streams", ss.p.Streams, "direction", string(ss.p.Direction),
		"duration", ss.p.Duration.String(), "omit", ss.p.Omit.String(), "cpus", cpulist.Format(engine.Used(cpusOf(streams))))
	if err := ss.measure(ctx, streams); err != nil {
		ss.log.Warn("test aborted", "reason", err.Error())
	}
	return true
}

// refuse tells the client why its request was refused, and logs it. The
// agent is free again before the client hears of it, so that the
// client's next request does not find it busy with this one.
func (ss *session) refuse(err error) {
	ss.free()
	ss.log.Warn("refused test", "reason", err.Error())
	ss.ctrl.send(errorMsg{Type: msgError, Reason: err.Error()}, handshakeTimeout)
}

// request decodes and checks the test request.
func (ss *session) request(typ string, body []byte) error {
	var req requestMsg
	if err := decodeAs(typ, body, msgRequest, &req); err != nil {
		return fmt.Errorf("reading the request: %w", err)
	}
	if err := req.validate(ss.srv.maxDuration()); err != nil {
		return err
	}
	if ss.meshPeer {
		if err := meshTestLimits(req); err != nil {
			return err
		}
	}
	if req.Congestion != "" {
		if err := engine.CheckCongestion(req.Congestion); err != nil {
			return err
		}
	}
	for _, c := range req.ServerCPUs {
		if len(ss.host.CPUs) > 0 && !cpulist.Contains(ss.host.CPUs, c) {
			return fmt.Errorf("server CPU %d is not available to the agent (it may use %s)", c, cpulist.Format(ss.host.CPUs))
		}
	}
	ss.p = req.params()
	if ss.p.Threads == 0 { // a client that left it to the agent
		ss.p.Threads = ss.p.ThreadsFor(len(ss.host.CPUs))
		if err := ss.p.Check(); err != nil {
			return err
		}
	}
	ss.serverCPUs = req.ServerCPUs
	return nil
}

// setup accepts the test, waits for its data connections and says ready.
// load is what this host's look saw just before: the threads keep to free
// CPUs (engine.Free) unless the client placed them.
func (ss *session) setup(ctx context.Context, load *telemetry.Looked) ([]*engine.Stream, error) {
	cpus, why := ss.serverCPUs, ""
	if len(cpus) == 0 {
		cpus = engine.Free(ss.host.Candidates, load)
		why = engine.BusyWhy(ss.host.Candidates, cpus, load)
	}
	place := engine.AssignThreads(ss.p.Connections(), ss.p.Threads, cpus)
	testID, err := randomBytes(testIDSize)
	if err != nil {
		return nil, err
	}
	ss.testKey = testID
	ss.expectData(testID)
	defer ss.expectData(nil) // late or extra data connections are refused
	port := int(engine.AddrPort(ss.ctrl.c.LocalAddr()).Port())
	if ss.p.Mode == result.CRR {
		// A listener of the test's own, for its length only: the
		// client's connections come to it, not to the agent's port.
		if ss.crrLns, port, err = engine.ListenCRR(engine.AddrPort(ss.ctrl.c.LocalAddr()).Addr(), ss.p.Threads); err != nil {
			return nil, err
		}
	}
	if err := ss.ctrl.send(acceptMsg{Type: msgAccept, Port: port, TestID: testID, Placement: place, Load: engine.LoadKeys(load), Why: why}, handshakeTimeout); err != nil {
		ss.closeCRR()
		return nil, fmt.Errorf("sending accept: %w", err)
	}
	streams, err := ss.collect(ctx, place)
	if err != nil {
		engine.CloseStreams(streams)
		ss.closeCRR()
		return nil, err
	}
	win := engine.Buffers(ss.srv.fs(), streams[0].FD, ss.p.Window)
	ss.nic = nicstats.Begin(ss.counterIface()) // before any payload moves
	if err := ss.ctrl.send(readyMsg{Type: msgReady, Window: win}, handshakeTimeout); err != nil {
		engine.CloseStreams(streams)
		ss.closeCRR()
		return nil, fmt.Errorf("sending ready: %w", err)
	}
	return streams, nil
}

// closeCRR closes a crr test's listeners that no Side took.
func (ss *session) closeCRR() {
	for _, fd := range ss.crrLns {
		engine.CloseFD(fd)
	}
	ss.crrLns = nil
}

// collect waits for every data connection and prepares its socket.
func (ss *session) collect(ctx context.Context, place []int) ([]*engine.Stream, error) {
	n := ss.p.Connections()
	out := make([]*engine.Stream, n)
	for i := range out {
		out[i] = &engine.Stream{FD: -1}
	}
	if ss.p.Mode == result.CRR { // no data connection lasts: flows, counted
		for i := range out {
			out[i] = &engine.Stream{ID: i + 1, CPU: place[i], FD: -1}
		}
		return out, nil
	}
	t := time.NewTimer(setupTimeout)
	defer t.Stop()
	gone, unwatch := ss.watch()
	defer unwatch()
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
		fd, err := engine.Detach(dc.nc)
		if err != nil {
			return out, err
		}
		send := !ss.p.ClientSends(dc.index)
		out[dc.index] = &engine.Stream{ID: dc.index + 1, Send: send, CPU: place[dc.index], FD: fd}
		if err := ss.p.SockOpts(send).Apply(fd); err != nil {
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

func cpusOf(streams []*engine.Stream) []int {
	out := make([]int, len(streams))
	for i, s := range streams {
		out[i] = s.CPU
	}
	return out
}

// measure runs the agent's half: streams, a sample per interval sent to
// the client, the totals at the end. The client ends the test with
// "stop"; a client that does not within the test's length and a grace is
// cut off, so nobody holds the agent longer than they asked for.
func (ss *session) measure(ctx context.Context, streams []*engine.Stream) error {
	smp := telemetry.NewSampler(ss.srv.fs(), ss.host.NICIRQs)
	sd, err := engine.NewSide(ss.p, streams, smp, "lrs")
	if err != nil {
		ss.closeCRR()
		return err
	}
	defer sd.Close()
	if ss.p.Mode == result.CRR {
		sd.SetCRR(engine.CRR{Listeners: ss.crrLns, Client: engine.AddrPort(ss.ctrl.c.RemoteAddr()).Addr(),
			NewAdmission: newCRRAdmission(ss.keys.data, ss.testKey)})
		ss.crrLns = nil // the Side's now
	}
	sd.WatchForeign(ss.srv.fs())
	var start bareMsg
	if err := ss.ctrl.expect(msgStart, &start, setupTimeout); err != nil {
		return fmt.Errorf("waiting for start: %w", err)
	}
	sd.Begin()
	stopc := ss.awaitStop(time.Now().Add(ss.p.Omit + ss.p.Duration + endGrace))
	w := newStallWatch(lookupRoute(ss.ctrl.c), sd)
	ss.yield.moved(w.lastMove)
	if err := ss.intervals(ctx, sd, stopc, w); err != nil {
		sd.Shutdown()
		sd.Finish(0)
		return err
	}
	sd.Finish(endGrace)
	zs, zc, zcp := sd.ZeroCopy()
	// The CPU time and its split first, read together: the other-load
	// scan and the NIC counters below cost CPU time that is not the test's.
	end := endMsg{Type: msgEnd, CPUSeconds: sd.MeasuredCPU()}
	end.CPUUser, end.CPUSystem = sd.MeasuredCPUSplit()
	end.Streams, end.Errors, end.Seconds, end.Unread = sd.Totals(), sd.Errors(), sd.MeasuredSeconds(), smp.Unread()
	end.ZCSends, end.ZCCompletions, end.ZCCopied = zs, zc, zcp
	end.RxMethod, end.RxNote, end.RxMapped, end.RxCopied, end.RxThreadCPU = sd.RxCopy()
	end.NICCounters = ss.nic.End()
	end.Foreign, end.ForeignNote = foreignOrNote(sd.Foreign())
	if ss.shared.Load() {
		// The process's clock counts the other test too: this test's
		// own threads' clocks are what it cost.
		end.Shared, end.CPUSeconds, end.CPUUser, end.CPUSystem = true, sd.ThreadCPU(), 0, 0
	}
	ss.free()
	if err := ss.ctrl.send(end, handshakeTimeout); err != nil {
		return fmt.Errorf("sending the totals: %w", err)
	}
	ss.log.Info("test done", "sent", sumOf(end.Streams, true), "received", sumOf(end.Streams, false), "errors", len(end.Errors))
	return nil
}

// intervals sends a sample at every boundary until the client's stop,
// when it takes the last one at once.
// A path that goes away ends the test at once (fault.go): the agent is
// free for the next client instead of waiting out the test's length.
func (ss *session) intervals(ctx context.Context, sd *engine.Side, stopc <-chan error, w *stallWatch) error {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	tick := time.NewTicker(watchTick)
	defer tick.Stop()
	for {
		due, ok := sd.Due()
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
			sd.Halt()
			if !sd.Done() {
				sd.EndNow() // the client's last interval ends now
				return ss.send(sd.Sample())
			}
			return nil
		case <-tc:
			if err := ss.send(sd.Sample()); err != nil {
				return sendFailed(err, stopc)
			}
		case now := <-tick.C:
			if pe := w.check(now); pe != nil {
				return pe
			}
			ss.yield.moved(w.lastMove)
		case <-ss.yield.c:
			return fmt.Errorf("a new client came while this test had moved nothing for %.1f s: it gave way", time.Since(w.lastMove).Seconds())
		}
	}
}

// sendFailed explains a failed interval send: a client killed mid-test
// breaks the pipe as it closes the connection, and the reader's "went
// away" (awaitStop) says so better than the write's error, if it comes
// within a moment (a second: on a loaded machine the reader can be that
// late, and the test is over either way).
func sendFailed(err error, stopc <-chan error) error {
	select {
	case why := <-stopc:
		if why != nil {
			return why
		}
	case <-time.After(time.Second):
	}
	return err
}

func (ss *session) send(s engine.Sample) error {
	if err := ss.ctrl.send(intervalMsg{Type: msgInterval, Sample: s}, handshakeTimeout); err != nil {
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
		case isEOF(err) || errors.Is(err, syscall.ECONNRESET):
			// A client killed with data unread in its socket resets
			// the connection instead of closing it.
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

func sumOf(ts []engine.StreamTotal, sent bool) uint64 {
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
