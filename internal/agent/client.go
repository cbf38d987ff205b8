package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/nicstats"
	"github.com/linerate/linerate/internal/pathwatch"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/telemetry"
)

// Timeouts of the client's steps.
const (
	dialTimeout  = 5 * time.Second
	setupTimeout = 15 * time.Second // the agent collects its facts and accepts N connections
	endGrace     = 10 * time.Second // after the last interval, for the streams to drain
)

// client is one Run in progress.
type client struct {
	cfg  Config
	cred credentials
	p    engine.Params
	log  *slog.Logger
	fs   *hostfs.FS
	ctrl *conn
	me   result.HostInfo
	peer result.HostInfo
	res  *result.Result
	side *engine.Side
	smp  *telemetry.Sampler
	mine []engine.Sample // this end's samples, one per interval
	keys sessionKeys
	nic  *nicstats.Span    // this end's NIC counters from before the test
	load *telemetry.Looked // this host's CPUs just before the test
	// loadNote says why load is nil: the look failed.
	loadNote string
	// route is the path to the agent as the test started (fault.go); nil
	// when the kernel could not say.
	route *pathwatch.Route
	// testID names the test in a crr connection's proof.
	testID []byte
}

// Run runs one test against the agent at cfg.Peer and returns its result.
// Progress, if set, sees each event as it happens. Cancelling ctx ends the
// test early with ctx's error.
func Run(ctx context.Context, cfg Config) (*result.Result, error) {
	return runWith(ctx, cfg, credentials{token: cfg.Token})
}

// runWith is Run authenticating with cred: a relaying agent's ticket.
func runWith(ctx context.Context, cfg Config, cred credentials) (*result.Result, error) {
	c := &client{cfg: cfg, cred: cred, p: cfg.EngineParams(), log: cfg.Logger, fs: cfg.Host}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.fs == nil {
		c.fs = hostfs.Live()
	}
	if cfg.Probe != nil {
		return runProbe(ctx, cfg)
	}
	if err := newRequest(c.p, cfg.Pinning.Server).validate(24 * time.Hour); err != nil { // the agent applies its own, lower bound
		return nil, err
	}
	if err := clientToken(cfg.Token); err != nil {
		return nil, err
	}
	cc, err := c.dial(ctx)
	if err != nil {
		return nil, &notAgentError{err}
	}
	defer cc.Close()
	unwatch := context.AfterFunc(ctx, func() { cc.Close() })
	defer unwatch()
	res, err := c.run(ctx)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("test interrupted: %w", context.Cause(ctx))
	}
	return res, err
}

func (c *client) dial(ctx context.Context) (net.Conn, error) {
	addr := WithPort(c.cfg.Peer, DefaultPort)
	d := net.Dialer{Timeout: dialTimeout}
	cc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to the agent at %s: %w (is 'linerate serve' running there?)", addr, err)
	}
	c.ctrl = newConn(cc)
	return cc, nil
}

// WithPort adds port to a peer written without one: "h" and "10.0.0.1"
// become "h:port" and "10.0.0.1:port", "fe80::1" and "[fe80::1]" become
// "[fe80::1]:port"; a peer with a port is returned as it is.
func WithPort(peer string, port int) string {
	if _, _, err := net.SplitHostPort(peer); err == nil {
		return peer
	}
	host := strings.TrimSuffix(strings.TrimPrefix(peer, "["), "]")
	return net.JoinHostPort(host, strconv.Itoa(port))
}

func (c *client) run(ctx context.Context) (*result.Result, error) {
	peer, keys, err := clientHandshakeWith(c.ctrl, c.cred)
	if err != nil {
		return nil, &notAgentError{err}
	}
	c.peer, c.keys = *peer, keys
	lk := startLook(ctx, c.fs) // while the agent looks at its own host
	c.route = lookupRoute(c.ctrl.c)
	local := engine.AddrPort(c.ctrl.c.LocalAddr())
	var notes []string
	c.me, notes = engine.HostFacts(c.fs, local.Addr())
	c.load, c.loadNote = lk.wait()
	if c.p.Threads == 0 { // both ends run what this end chooses
		c.p.Threads = c.p.ThreadsFor(len(c.me.CPUs))
		if err := c.p.Check(); err != nil {
			return nil, err
		}
	}
	ch, err := c.placement()
	if err != nil {
		return nil, err
	}
	if err := c.ctrl.send(newRequest(c.p, ch.server), handshakeTimeout); err != nil {
		return nil, fmt.Errorf("sending the test request: %w", err)
	}
	acc, err := expect(c.ctrl, msgAccept, setupTimeout, func(m *acceptMsg) error { return m.check(c.p.Connections()) })
	if err != nil {
		return nil, fmt.Errorf("the agent did not accept the test: %w", err)
	}
	streams, err := c.openStreams(ctx, *acc, engine.AssignThreads(c.p.Connections(), c.p.Threads, ch.client))
	if err != nil {
		return nil, err
	}
	c.testID = acc.TestID
	c.res = c.startResult(*acc, streams, ch, notes)
	ready, err := expect(c.ctrl, msgReady, setupTimeout, (*readyMsg).check)
	if err != nil {
		engine.CloseStreams(streams)
		return nil, fmt.Errorf("waiting for the agent's data connections: %w", err)
	}
	c.finishStart(streams, ready.Window)
	return c.measure(ctx, streams)
}

// choice is where both ends' stream threads go.
type choice struct {
	client, server []int
	source         string // result.Placement.Source
	why            string // how the load before the run changed it, or ""
}

// placement decides the CPUs of both ends' stream threads: of the
// candidates, those free by the look before the test (engine.Free).
func (c *client) placement() (choice, error) {
	for _, cpu := range c.cfg.Pinning.Client {
		if len(c.me.CPUs) > 0 && !cpulist.Contains(c.me.CPUs, cpu) {
			return choice{}, fmt.Errorf("-A: CPU %d is not available to this process (it may use %s)", cpu, cpulist.Format(c.me.CPUs))
		}
	}
	var ch choice
	switch {
	case c.cfg.Pinning.Client != nil && c.cfg.Pinning.Server != nil:
		ch.source = "user"
	case c.cfg.Pinning.Client == nil && c.cfg.Pinning.Server == nil:
		ch.source = "auto"
	default:
		ch.source = "user+auto"
	}
	sameHost := c.me.BootID != "" && c.me.BootID == c.peer.BootID
	if sameHost && c.p.Mode != result.Stream && c.cfg.Pinning.Auto() {
		// Transactions on one machine: both halves of a flow on one CPU
		// (thread k of each end on the same one), so that a transaction
		// never waits for a wake-up on another CPU.
		free := engine.Free(c.me.Candidates, c.load)
		ch.client, ch.server, ch.why = free, free, engine.BusyWhy(c.me.Candidates, free, c.load)
		return ch, nil
	}
	if sameHost {
		if c.cfg.Apart && ch.source == "auto" {
			ch.client, ch.server = engine.Split(nil, nil, c.me.Candidates, c.me.CPUs)
			return ch, nil
		}
		ch.client, ch.server, ch.why = engine.SplitFree(c.cfg.Pinning.Client, c.cfg.Pinning.Server, c.me.Candidates, c.me.CPUs, c.load)
		return ch, nil
	}
	ch.client, ch.server = c.cfg.Pinning.Client, c.cfg.Pinning.Server // nil server: the agent picks its own
	if ch.client == nil {
		ch.client = engine.Free(c.me.Candidates, c.load)
		if why := engine.BusyWhy(c.me.Candidates, ch.client, c.load); why != "" {
			ch.why = "client: " + why
		}
	}
	return ch, nil
}

// openStreams makes the data connections, each announced by its
// preamble (data.go), with the socket options set before connect.
func (c *client) openStreams(ctx context.Context, acc acceptMsg, cpus []int) ([]*engine.Stream, error) {
	remote := engine.AddrPort(c.ctrl.c.RemoteAddr())
	addr := netip.AddrPortFrom(remote.Addr(), uint16(acc.Port)).String()
	var streams []*engine.Stream
	if c.p.Mode == result.CRR { // each transaction makes its own (engine.CRR)
		for i := range c.p.Connections() {
			streams = append(streams, &engine.Stream{ID: i + 1, Send: true, CPU: cpus[i], FD: -1})
		}
		return streams, nil
	}
	for i := range c.p.Connections() {
		d := net.Dialer{Timeout: dialTimeout, Control: c.p.SockOpts(c.p.ClientSends(i)).Control}
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			engine.CloseStreams(streams)
			return nil, fmt.Errorf("data connection %d to %s: %w", i+1, addr, err)
		}
		nc.SetWriteDeadline(time.Now().Add(dialTimeout))
		if _, err := nc.Write(preamble(c.keys.data, acc.TestID, uint32(i))); err != nil {
			nc.Close()
			engine.CloseStreams(streams)
			return nil, fmt.Errorf("data connection %d: %w", i+1, err)
		}
		fd, err := engine.Detach(nc)
		if err != nil {
			engine.CloseStreams(streams)
			return nil, err
		}
		streams = append(streams, &engine.Stream{ID: i + 1, Send: c.p.ClientSends(i), CPU: cpus[i], FD: fd})
	}
	return streams, nil
}

// measure runs the test: both ends' streams, the interval clock, the
// agent's reports, and the end.
func (c *client) measure(ctx context.Context, streams []*engine.Stream) (*result.Result, error) {
	var err error
	c.smp = telemetry.NewSampler(c.fs, c.me.NICIRQs)
	c.side, err = engine.NewSide(c.p, streams, c.smp, "lrc")
	if err != nil {
		return nil, err
	}
	defer c.side.Close()
	if c.p.Mode == result.CRR {
		peer := netip.AddrPortFrom(engine.AddrPort(c.ctrl.c.RemoteAddr()).Addr(), uint16(c.res.Start.Port))
		c.side.SetCRR(engine.CRR{Peer: peer, NewAdmission: newCRRAdmission(c.keys.data, c.testID)})
	}
	// A test of many flows reports them all every interval.
	c.ctrl.limit = max(c.ctrl.limit, intervalFrame(c.p.Connections()))
	c.side.WatchForeign(c.fs)
	c.emit(result.Event{Event: "start", Data: &c.res.Start})
	rd := newReader(c.ctrl, c.p)
	defer rd.close()
	c.nic = nicstats.Begin(c.counterIface())
	c.side.Begin()
	w := newStallWatch(c.route, c.side)
	if err := c.ctrl.send(bareMsg{Type: msgStart}, handshakeTimeout); err != nil {
		c.side.Finish(0)
		return nil, fmt.Errorf("starting the test: %w", err)
	}
	if err := c.intervals(ctx, rd, w); err != nil {
		if ctx.Err() != nil {
			c.side.Shutdown()
			c.side.Finish(0)
			return nil, err
		}
		return c.failed(err)
	}
	return c.end(rd, w)
}

// intervals samples this end at every boundary and merges the agent's
// sample of the same interval into one report.
func (c *client) intervals(ctx context.Context, rd *reader, w *stallWatch) error {
	wait := min(c.p.Interval/2, 500*time.Millisecond)
	tick := time.NewTicker(watchTick)
	defer tick.Stop()
	for !c.side.Done() {
		due, _ := c.side.Due()
		t := time.NewTimer(time.Until(due))
	waiting:
		for {
			select {
			case <-ctx.Done():
				t.Stop()
				return context.Cause(ctx)
			case err := <-rd.errc:
				t.Stop()
				return c.agentGone(err, w)
			case now := <-tick.C:
				if pe := w.check(now); pe != nil {
					t.Stop()
					return pe
				}
			case <-t.C:
				break waiting
			}
		}
		cs := c.side.Sample()
		if c.side.Done() {
			// The agent takes its last sample when told to stop.
			c.side.Halt()
			if err := c.ctrl.send(bareMsg{Type: msgStop}, handshakeTimeout); err != nil {
				return fmt.Errorf("stopping the test: %w", err)
			}
			wait = endGrace
		}
		iv := c.merge(cs, rd.await(cs.Index, wait))
		c.mine = append(c.mine, cs)
		c.res.Intervals = append(c.res.Intervals, iv)
		c.emit(result.Event{Event: "interval", Data: &c.res.Intervals[len(c.res.Intervals)-1]})
	}
	return nil
}

func (c *client) emit(e result.Event) {
	if c.cfg.Progress != nil {
		c.cfg.Progress(e)
	}
}

// end waits for the streams to drain and the agent's totals. A path or
// an agent that goes away meanwhile fails the run, its intervals kept.
func (c *client) end(rd *reader, w *stallWatch) (*result.Result, error) {
	drained := make(chan struct{})
	go func() { c.side.Finish(endGrace); close(drained) }()
	tick := time.NewTicker(watchTick)
	defer tick.Stop()
	timeout := time.NewTimer(2 * endGrace) // the drain's grace, then the totals'
	defer timeout.Stop()
	fail := func(err error) (*result.Result, error) {
		c.side.Shutdown()
		<-drained
		return c.failed(err)
	}
	var em *endMsg
	for em == nil {
		select {
		case em = <-rd.endc:
		case err := <-rd.errc:
			if pe := c.agentGone(err, w); errors.As(pe, new(*PathError)) {
				return fail(pe)
			}
			return fail(fmt.Errorf("waiting for the agent's totals: %w", err))
		case <-tick.C:
			if pe := w.gone(); pe != nil {
				return fail(pe)
			}
		case <-timeout.C:
			return fail(fmt.Errorf("the agent sent no totals within %s of the end", 2*endGrace))
		}
	}
	<-drained
	mine := c.nic.End() // once this end's streams have drained
	c.lateSamples(rd)
	c.res.End = c.totals(em)
	c.res.End.NICCounters = &result.NICCounters{Client: mine, Server: em.NICCounters}
	c.emit(result.Event{Event: "end", Data: &c.res.End})
	return c.res, nil
}

// lateSamples merges the agent's samples that came after the client had
// moved on from their interval (a busy host answers late): the live
// output went without them, the result does not.
func (c *client) lateSamples(rd *reader) {
drain:
	for {
		select {
		case s := <-rd.ivc:
			rd.late[s.Index] = s
		default:
			break drain
		}
	}
	for k, s := range rd.late {
		if k < len(c.res.Intervals) && k < len(c.mine) && c.res.Intervals[k].CPUTotal.Server == nil {
			c.res.Intervals[k] = c.merge(c.mine[k], s)
		}
	}
}

// reader reads the agent's messages during a test.
type reader struct {
	c       *conn
	samples map[int]*engine.Sample // arrived before the client sampled their interval
	late    map[int]*engine.Sample // arrived after
	ivc     chan *engine.Sample
	endc    chan *endMsg
	errc    chan error
	n       int // the test's connections
	// most is how many samples the test can have: its intervals and the
	// shorter last one. An agent that sends more breaks the protocol.
	most int
	quit chan struct{} // closed when the client takes no more samples
	done chan struct{} // closed when loop has returned
}

func newReader(c *conn, p engine.Params) *reader {
	r := &reader{c: c, samples: map[int]*engine.Sample{}, late: map[int]*engine.Sample{}, ivc: make(chan *engine.Sample, 64),
		endc: make(chan *endMsg, 1), errc: make(chan error, 1), n: p.Connections(), most: expectedSamples(p),
		quit: make(chan struct{}), done: make(chan struct{})}
	limit := p.Omit + p.Duration + 2*endGrace + setupTimeout
	go r.loop(time.Now().Add(limit))
	return r
}

// expectedSamples is how many interval samples a test p can have.
func expectedSamples(p engine.Params) int {
	if p.Interval <= 0 {
		return maxIntervals + 2
	}
	return int(min(int64((p.Omit+p.Duration)/p.Interval)+2, maxIntervals+2))
}

// close stops the reader: a sample it holds is dropped, and the goroutine
// ends even if the agent goes on sending (on a relaying agent, one such
// goroutine per relay would otherwise stay blocked forever).
func (r *reader) close() {
	close(r.quit)
}

func (r *reader) loop(deadline time.Time) {
	defer close(r.done)
	got := 0
	for {
		typ, body, err := r.c.recv(time.Until(deadline))
		if err != nil {
			r.errc <- err
			return
		}
		if typ == msgInterval {
			m, err := decode(typ, body, msgInterval, func(m *intervalMsg) error { return m.check(r.n) })
			if err == nil && got >= r.most {
				err = fmt.Errorf("%w: more than the %d interval samples the test can have", errBadMessage, r.most)
			}
			if err != nil {
				r.errc <- err
				return
			}
			got++
			select {
			case r.ivc <- &m.Sample:
			case <-r.quit:
				return
			}
			continue
		}
		m, err := decode(typ, body, msgEnd, func(m *endMsg) error { return m.check(r.n) })
		if err != nil {
			r.errc <- err
			return
		}
		r.endc <- m
		return
	}
}

// await returns the agent's sample of interval k, waiting up to d for it;
// nil if it did not come.
func (r *reader) await(k int, d time.Duration) *engine.Sample {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		if s, ok := r.samples[k]; ok {
			delete(r.samples, k)
			return s
		}
		select {
		case s := <-r.ivc:
			if s.Index >= k {
				r.samples[s.Index] = s
			} else {
				r.late[s.Index] = s
			}
		case <-t.C:
			return nil
		}
	}
}

// isEOF tells a peer that hung up from other failures.
func isEOF(err error) bool { return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) }
