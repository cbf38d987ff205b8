package agent

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/result"
)

// A relay lets a controller run a native test between two agents without
// being either end: it asks agent A to run the client side of a test
// toward agent B, and A streams the test back as it goes. So a fleet run
// needs nothing on the hosts but their agents, however they were started
// (ssh, srun, a Kubernetes DaemonSet, by hand), and no way to run a
// command there (docs/architecture.md, "The agent's protocol"):
//
//	controller → relay{peer, streams, duration_ms, omit_ms, interval_ms, direction, window, congestion, fq_rate, zerocopy, apart}
//	agent      → relay_start{start} | busy | error
//	agent      → relay_interval{index, interval} every interval
//	agent      → relay_end{intervals, end} | error
//
// A's test toward B is an ordinary one: A authenticates to B with its own
// token (the fleet's), and B bounds it as it bounds every test. A
// relay_interval of an index sent before replaces it (an agent's sample
// that reached A late is merged into its interval after the fact, and the
// corrected interval is sent again before relay_end). Anything the
// controller sends during the test, or its hanging up, ends it.
//
// The peer is an IP address and port, never a name: the agent resolves
// nothing. It is not unspecified, multicast or broadcast, and it must be
// an agent of the fleet: on the agent port, in serve --relay-peers, not a
// loopback, link-local or own address (relay_policy.go). Whatever the
// peer, A sends it only a hello unless it proves it holds the token: test
// traffic goes only to another agent of the fleet. The controller hears
// one text for a refused peer and one for a peer that did not answer as
// an agent; the agent's log says why.
//
//	controller → bye
//
// bye, right after the welcome, asks for nothing: the controller only
// wanted the handshake (is the agent up, what is its host called).

// The relay's messages (proto.go lists them with the others).
const (
	msgRelay         = "relay"
	msgRelayStart    = "relay_start"
	msgRelayInterval = "relay_interval"
	msgRelayEnd      = "relay_end"
	msgBye           = "bye"
)

// Bounds of the relay's messages.
const (
	maxPeerText  = 64        // "[v6 address%zone]:port"
	maxNotes     = 64        // notes in a relayed start
	maxNoteText  = 1 << 10   // bytes of one note
	maxHostList  = maxCPUMap // CPUs, candidates, IRQs in a relayed host's facts
	relayMargin  = 2 * setupTimeout
	relayTextCap = 4 * maxReason
)

// relayMsg asks the agent to run a native test's client side toward the
// agent at Peer. It carries a request's test fields, without CPUs: each
// end places its own threads.
type relayMsg struct {
	Type string `json:"type"`
	Peer string `json:"peer"`
	testWire
	// Ticket lets an agent of a node key authenticate to the peer, and
	// TicketKey is its key, masked (nodekey.go).
	Ticket    *relayTicket `json:"ticket,omitempty"`
	TicketKey []byte       `json:"ticket_key,omitempty"`
	// Apart is Config.Apart: the ends on disjoint CPUs by one rule.
	Apart bool `json:"apart,omitempty"`
}

// request is the test as a request to the peer.
func (m relayMsg) request() requestMsg {
	return requestMsg{Type: msgRequest, testWire: m.testWire}
}

// validate checks the relay against the agent's bounds: the test as a
// request would be (maxDuration is the agent's), and the peer's form
// (parsePeer); where the peer may be is the agent's relayPolicy.
func (m relayMsg) validate(maxDuration time.Duration) (netip.AddrPort, error) {
	if err := m.request().validate(maxDuration); err != nil {
		return netip.AddrPort{}, err
	}
	return parsePeer(m.Peer)
}

// parsePeer reads a relay's peer: an IP address and a port, of one host.
func parsePeer(s string) (netip.AddrPort, error) {
	if len(s) > maxPeerText {
		return netip.AddrPort{}, fmt.Errorf("peer of %d bytes: give ADDRESS:PORT", len(s))
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("peer %q: give an IP address and a port (ADDRESS:PORT, [V6]:PORT); an agent resolves no names", s)
	}
	a := ap.Addr().Unmap()
	switch {
	case ap.Port() == 0:
		return netip.AddrPort{}, fmt.Errorf("peer %s: port 0", s)
	case a.IsUnspecified() || a.IsMulticast() || a.IsInterfaceLocalMulticast() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return netip.AddrPort{}, fmt.Errorf("peer %s: not the address of one host", s)
	}
	return netip.AddrPortFrom(a, ap.Port()), nil
}

// relayStartMsg is the relayed test's start: what both ends are, the
// placement, the connections.
type relayStartMsg struct {
	Type  string       `json:"type"`
	Start result.Start `json:"start"`
}

// check bounds a relayed start of the test r asked for.
func (m relayStartMsg) check(r relayMsg) error {
	st := m.Start
	switch {
	case st.Streams != r.Streams || st.Direction != r.Direction:
		return fmt.Errorf("%w: relay_start of %d streams %s, asked %d %s", errBadMessage, st.Streams, st.Direction, r.Streams, r.Direction)
	case len(st.Connections) != r.request().params().Connections():
		return fmt.Errorf("%w: relay_start with %d connections", errBadMessage, len(st.Connections))
	case len(st.Notes) > maxNotes:
		return fmt.Errorf("%w: relay_start with %d notes", errBadMessage, len(st.Notes))
	case len(st.Peer) > maxPeerText:
		return fmt.Errorf("%w: relay_start names a peer of %d bytes", errBadMessage, len(st.Peer))
	}
	for _, n := range st.Notes {
		if len(n) > maxNoteText {
			return fmt.Errorf("%w: relay_start with a note of %d bytes", errBadMessage, len(n))
		}
	}
	for _, h := range []result.HostInfo{st.Client, st.Server} {
		if len(h.CPUs) > maxHostList || len(h.Candidates) > maxHostList || len(h.NICIRQs) > maxHostList || len(h.IRQCPUs) > maxHostList {
			return fmt.Errorf("%w: relay_start with a host of %d CPUs", errBadMessage, len(h.CPUs))
		}
	}
	return nil
}

// relayIntervalMsg is one interval of the relayed test, as the agent
// running its client merged it.
type relayIntervalMsg struct {
	Type     string          `json:"type"`
	Index    int             `json:"index"`
	Interval result.Interval `json:"interval"`
}

// maxRelayIntervals is how many intervals a relayed test r can have: its
// warm-up and measured time in intervals, and the shorter last one.
func maxRelayIntervals(r relayMsg) int {
	if r.IntervalMS <= 0 {
		return 0
	}
	return int(min((r.OmitMS+r.DurationMS)/r.IntervalMS+2, maxIntervals+2))
}

// check bounds a relayed interval of the test r asked for.
func (m relayIntervalMsg) check(r relayMsg) error {
	iv := m.Interval
	switch {
	case m.Index < 0 || m.Index >= maxRelayIntervals(r):
		return fmt.Errorf("%w: relay_interval index %d", errBadMessage, m.Index)
	case len(iv.Streams) != r.request().params().Connections():
		return fmt.Errorf("%w: relay_interval of %d streams", errBadMessage, len(iv.Streams))
	case len(iv.CPU.Client) > maxCPUMap || len(iv.CPU.Server) > maxCPUMap:
		return fmt.Errorf("%w: relay_interval of %d+%d CPUs", errBadMessage, len(iv.CPU.Client), len(iv.CPU.Server))
	case !finite(iv.Start, iv.End, iv.Sum.BitsPerSecond) || iv.End < iv.Start || iv.Sum.BitsPerSecond < 0:
		return fmt.Errorf("%w: relay_interval %d from %g to %g s at %g bit/s", errBadMessage, m.Index, iv.Start, iv.End, iv.Sum.BitsPerSecond)
	}
	return nil
}

// relayEndMsg ends a relayed test: how many intervals it had (every index
// below was sent) and its totals.
type relayEndMsg struct {
	Type      string     `json:"type"`
	Intervals int        `json:"intervals"`
	End       result.End `json:"end"`
}

// check bounds a relayed end of the test r asked for.
func (m relayEndMsg) check(r relayMsg) error {
	e := m.End
	n := r.request().params().Connections()
	switch {
	case m.Intervals < 0 || m.Intervals > maxRelayIntervals(r):
		return fmt.Errorf("%w: relay_end after %d intervals", errBadMessage, m.Intervals)
	case len(e.Streams) > n || len(e.Errors) > 2*n:
		return fmt.Errorf("%w: relay_end of %d streams, %d errors", errBadMessage, len(e.Streams), len(e.Errors))
	case !finite(e.Seconds, e.SumSent.BitsPerSecond, e.SumReceived.BitsPerSecond, e.CPU.ClientSeconds, e.CPU.ServerSeconds) ||
		e.Seconds < 0 || e.SumSent.BitsPerSecond < 0 || e.SumReceived.BitsPerSecond < 0:
		return fmt.Errorf("%w: relay_end with %g s, %g bit/s", errBadMessage, e.Seconds, e.SumReceived.BitsPerSecond)
	}
	for _, s := range e.Errors {
		if len(s) > maxErrorText {
			return fmt.Errorf("%w: relay_end with an error of %d bytes", errBadMessage, len(s))
		}
	}
	return nil
}

func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// relayLength bounds a relayed test from its request to its end: the
// test's own length, its setup and end at both agents, and a margin.
func relayLength(p engine.Params) time.Duration {
	return p.Omit + p.Duration + 2*setupTimeout + 2*endGrace + relayMargin
}

// errRelayStopped: the controller sent something, or hung up, mid-test.
var errRelayStopped = errors.New("the controller ended the relayed test")

// runRelay serves a relay: the test toward the peer, streamed back. It
// reports whether the test started.
func (ss *session) runRelay(ctx context.Context, body []byte) bool {
	var m relayMsg
	if err := decodeAs(msgRelay, body, msgRelay, &m); err != nil {
		ss.refuse(err)
		return false
	}
	peer, err := m.validate(ss.srv.maxDuration())
	if err != nil {
		ss.refuse(err)
		return false
	}
	if why := ss.srv.relayPolicy(peer, engine.AddrPort(ss.ctrl.c.LocalAddr())); why != nil {
		ss.log.Warn("refused relay", "toward", peer.String(), "reason", why.Error())
		ss.free()
		ss.ctrl.send(errorMsg{Type: msgError, Reason: errRelayRefused.Error()}, handshakeTimeout)
		return false
	}
	if wait := ss.srv.relayFails.wait(ss.srv.clock()); wait > 0 {
		ss.refuse(fmt.Errorf("too many relayed tests toward peers that did not answer as agents lately: try again in %s", wait.Round(time.Second)))
		return false
	}
	cred, err := ss.relayCredentials(m, peer)
	if err != nil {
		ss.refuse(err)
		return false
	}
	p := m.request().params()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ctx, cancelT := context.WithTimeout(ctx, relayLength(p))
	defer cancelT()
	unwatch := ss.watchController(cancel, time.Now().Add(relayLength(p)))
	out := newRelayOut(ss, maxRelayIntervals(m))
	cfg := Config{Peer: peer.String(), Token: ss.srv.Token, Test: Test{Params: p}, Apart: m.Apart, Progress: out.progress, Logger: ss.log, Host: ss.srv.Host}
	ss.log.Info("relayed test started", "toward", peer.String(), "streams", p.Streams, "direction", string(p.Direction),
		"duration", p.Duration.String())
	res, err := runWith(ctx, cfg, cred)
	stopped := unwatch()
	if serr := out.close(); err == nil && serr != nil {
		err = serr
	}
	if err != nil {
		ss.free()
		if stopped {
			err = errRelayStopped
		}
		ss.log.Warn("relayed test failed", "toward", peer.String(), "reason", err.Error())
		tell := err
		if na := (*notAgentError)(nil); !stopped && errors.As(err, &na) {
			ss.srv.relayFails.failed(ss.srv.clock())
			tell = errNotAgent // closed, silent, another service or another fleet: all alike
		}
		ss.ctrl.send(errorMsg{Type: msgError, Reason: truncate(fmt.Sprintf("the test toward %s: %v", peer, tell), relayTextCap)}, handshakeTimeout)
		return true
	}
	if err := out.finish(res); err != nil {
		ss.free()
		ss.log.Warn("relayed test: sending the result", "reason", err.Error())
		return true
	}
	ss.free()
	if err := ss.ctrl.send(relayEndMsg{Type: msgRelayEnd, Intervals: len(res.Intervals), End: res.End}, handshakeTimeout); err != nil {
		ss.log.Warn("relayed test: sending the end", "reason", err.Error())
		return true
	}
	ss.log.Info("relayed test done", "toward", peer.String(), "gbps", res.End.SumReceived.BitsPerSecond/1e9)
	return true
}

// relayCredentials is what the agent authenticates to the peer with: its
// own token when the fleet shares one; with a node key, the controller's
// ticket for this test, which must name this node and the peer.
func (ss *session) relayCredentials(m relayMsg, peer netip.AddrPort) (credentials, error) {
	self := ss.srv.key.node
	if self == "" {
		return credentials{token: ss.srv.Token}, nil
	}
	t := m.Ticket
	switch {
	case t == nil:
		return credentials{}, fmt.Errorf("this agent holds node %s's key: a relay needs a ticket from the fleet's controller (which holds the fleet's secret)", self)
	case t.From != self:
		return credentials{}, fmt.Errorf("%w: the relay ticket is for node %.64q's agent, this is node %s", errBadMessage, t.From, self)
	case t.Peer != peer.String():
		return credentials{}, fmt.Errorf("%w: the relay ticket is for %.64q, the relay toward %s", errBadMessage, t.Peer, peer)
	case len(m.TicketKey) != sha256.Size || len(t.ID) != ticketIDSize:
		return credentials{}, fmt.Errorf("%w: a relay ticket of the wrong shape", errBadMessage)
	}
	return credentials{token: ss.srv.Token, ticket: t, ticketKey: t.mask(ss.keys.wrap, m.TicketKey)}, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// watchController reads the control connection while a relayed test
// runs: the controller sends nothing then, so whatever the read returns
// (a message, its hanging up, the deadline) ends the test. unwatch stops
// the read and reports whether it had ended the test.
func (ss *session) watchController(cancel context.CancelCauseFunc, deadline time.Time) (unwatch func() bool) {
	done := make(chan bool, 1)
	quit := make(chan struct{})
	ss.ctrl.c.SetReadDeadline(deadline)
	go func() {
		_, _, err := ss.ctrl.read()
		select {
		case <-quit: // unwatch ended the read
			done <- false
		default:
			cancel(fmt.Errorf("%w (%v)", errRelayStopped, err))
			done <- true
		}
	}()
	return func() bool {
		close(quit)
		ss.ctrl.c.SetReadDeadline(time.Now())
		return <-done
	}
}

// relayOut sends a relayed test's events to the controller in order, from
// a goroutine of its own: the test's progress callback must not wait for
// the controller's connection.
type relayOut struct {
	ss   *session
	q    chan any
	sent []json.RawMessage // each interval as sent, by index
	// start is the start as sent.
	start json.RawMessage
	err   chan error
}

func newRelayOut(ss *session, intervals int) *relayOut {
	o := &relayOut{ss: ss, q: make(chan any, intervals+2), err: make(chan error, 1)}
	go func() {
		var err error
		for m := range o.q {
			if err == nil {
				err = ss.ctrl.send(m, handshakeTimeout)
			}
		}
		o.err <- err
	}()
	return o
}

// progress takes the test's events on its control goroutine: each is
// encoded at once (the test goes on changing its result) and queued.
func (o *relayOut) progress(e result.Event) {
	switch d := e.Data.(type) {
	case *result.Start:
		b, err := json.Marshal(d)
		if err != nil {
			return
		}
		o.start = b
		o.push(relayRaw{Type: msgRelayStart, Start: b})
	case *result.Interval:
		b, err := json.Marshal(d)
		if err != nil {
			return
		}
		i := len(o.sent)
		o.sent = append(o.sent, b)
		o.push(relayRaw{Type: msgRelayInterval, Index: &i, Interval: b})
	}
}

// relayRaw is a relay_start or relay_interval encoded in advance.
type relayRaw struct {
	Type     string          `json:"type"`
	Start    json.RawMessage `json:"start,omitempty"`
	Index    *int            `json:"index,omitempty"`
	Interval json.RawMessage `json:"interval,omitempty"`
}

// push queues m; a full queue (a controller that does not read) drops it,
// and finish sends what was dropped again.
func (o *relayOut) push(m relayRaw) {
	select {
	case o.q <- m:
	default:
		if m.Index != nil {
			o.sent[*m.Index] = nil
		} else {
			o.start = nil
		}
	}
}

// close waits until everything queued is sent and returns the first send
// error.
func (o *relayOut) close() error {
	close(o.q)
	return <-o.err
}

// finish sends again what changed after it was sent (or was never sent):
// the start, and the intervals into which a late sample of the peer was
// merged.
func (o *relayOut) finish(res *result.Result) error {
	b, err := json.Marshal(res.Start)
	if err != nil {
		return err
	}
	if string(b) != string(o.start) {
		if err := o.ss.ctrl.send(relayRaw{Type: msgRelayStart, Start: b}, handshakeTimeout); err != nil {
			return err
		}
	}
	for i := range res.Intervals {
		b, err := json.Marshal(res.Intervals[i])
		if err != nil {
			return err
		}
		if i < len(o.sent) && string(b) == string(o.sent[i]) {
			continue
		}
		if err := o.ss.ctrl.send(relayRaw{Type: msgRelayInterval, Index: &i, Interval: b}, handshakeTimeout); err != nil {
			return err
		}
	}
	return nil
}
