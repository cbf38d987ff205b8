package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/nicstats"
	"github.com/linerate/linerate/internal/result"
)

// ListeningPrefix starts the line `linerate serve` prints on stdout once
// it accepts connections ("Listening on 198.18.0.2:5301").
const ListeningPrefix = "Listening on "

// MaxClientsLimit bounds Server.MaxClients: each test may hold
// engine.MaxFlows connections and a thread per CPU.
const MaxClientsLimit = 64

// Server is the peer agent (`linerate serve`): it authenticates clients
// and runs their tests, MaxClients of them at once.
type Server struct {
	// Token is the shared secret clients must prove they hold.
	Token []byte
	// MaxDuration bounds a test's duration and warm-up; 0 means
	// DefaultMaxDuration.
	MaxDuration time.Duration
	// MaxClients is how many clients' tests run at once (serve
	// --max-clients); 0 means 1. A client beyond them is told "busy".
	// Each test has its own session, data connections and result; a
	// test that ran beside another reports its own threads' CPU time
	// rather than the process's (endMsg.Shared).
	MaxClients int
	// Once makes Serve return after the first test that started, however
	// it ended (a refused request does not count), as iperf3 -1 does.
	Once bool
	// Logger receives one line per test and per refusal, with the reason;
	// nil discards. Refusals are summarised: see refusals.
	Logger *slog.Logger
	// Host is where telemetry and placement facts are read; nil is the
	// live host.
	Host *hostfs.FS
	// Tools starts external tool servers (iperf3, iperf, perftest) for
	// clients that ask, so that bench's other drivers need no server
	// started by hand; nil refuses such requests.
	Tools ToolStarter
	// Doctor, if set, answers a client's request for this host's doctor
	// report (bench stores both hosts' reports with every run).
	Doctor DoctorFunc
	// DoctorBudget bounds one Doctor call; 0 means 10 s.
	DoctorBudget time.Duration
	// Annotate, if set, adds to what the agent tells an authenticated
	// client about its host (the tune journal in effect).
	Annotate func(*result.HostInfo)
	// RelayPeers are the networks relayed tests may go to: the fleet's
	// hosts (serve --relay-peers). Empty: the agent takes no relayed test.
	// See relay_policy.go for the other rules.
	RelayPeers []netip.Prefix
	// RelayPort is the one port relayed tests may go to; 0 is the port
	// the controller reached this agent on.
	RelayPort int
	// LoopbackFleet lets relayed tests go to loopback addresses of
	// RelayPeers: a fleet of agents on one machine's loopback, as tests
	// build. serve never sets it.
	LoopbackFleet bool
	// Mesh, if set, makes the agent a member of an always-on mesh
	// (mesh.go): it probes its peers and answers theirs while it serves.
	Mesh *Mesh

	// The connection budget (gate.go); zero values take the defaults.
	authBudget           time.Duration
	maxPending, perSrc   int
	logWindow            time.Duration
	factsBudget          time.Duration
	collect              func(local netip.Addr) (result.HostInfo, []string) // nil: engine.HostFacts
	acceptBackoffCeiling time.Duration
	ownAddrs             func() []netip.Addr // this host's addresses; nil: its interfaces'
	relayAnyPort         bool                // tests: agents on loopback, each on a port of its own
	relayFails           *relayFailures
	now                  func() time.Time // nil: time.Now

	key     authKey   // Token, parsed
	tickets ticketLog // relay tickets used
	mesh    atomic.Pointer[meshNode]

	mu        sync.Mutex
	active    map[*session]bool // the tests running
	nonces    nonceLog
	doctoring atomic.Bool  // a Doctor call is running
	deciding  atomic.Int32 // authenticated clients not yet past their first message
	gate      *gate
	refused   *refusals
	facts     *hostFacts
}

// Serve accepts connections on ln until ctx is done (or, with Once, the
// first test ended), then closes ln and returns once every connection it
// took is finished.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	tok, err := CheckToken(s.Token)
	if err != nil {
		return err
	}
	if s.key, err = parseKey(tok); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.init()
	if s.Mesh != nil {
		n, err := s.startMesh(ctx, ln)
		if err != nil {
			ln.Close()
			return err
		}
		defer n.stopSession()
	}
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		s.gate.closeAll() // handshakes in progress end now, not at their budget
	})
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.refused.run(ctx)
	}()
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			// EMFILE, ENFILE, ENOBUFS, ECONNABORTED: the agent cannot
			// take a connection now, but may in a moment. Wait and try
			// again, as net/http does, rather than exit.
			backoff = min(max(2*backoff, 5*time.Millisecond), s.acceptBackoffCeiling)
			s.refused.note(netip.Addr{}, kindAccept, err.Error(), "retry_in", backoff.String())
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return nil
			}
			continue
		}
		backoff = 0
		p := s.gate.admit(nc)
		if p == nil {
			s.refused.note(engine.AddrPort(nc.RemoteAddr()).Addr().Unmap(), kindFull,
				"too many connections waiting to authenticate, every one of them active")
			nc.Close()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ran := s.handle(ctx, p); ran && s.Once {
				cancel()
			}
		}()
	}
}

// init fills the defaults of the connection budget.
func (s *Server) init() {
	if s.authBudget == 0 {
		s.authBudget = defaultAuthBudget
	}
	if s.maxPending == 0 {
		s.maxPending = defaultMaxPending
	}
	if s.perSrc == 0 {
		s.perSrc = defaultMaxPendingPerSource
	}
	if s.logWindow == 0 {
		s.logWindow = 10 * time.Second
	}
	if s.factsBudget == 0 {
		s.factsBudget = defaultFactsBudget
	}
	if s.acceptBackoffCeiling == 0 {
		s.acceptBackoffCeiling = time.Second
	}
	collect := s.collect
	if collect == nil {
		collect = func(local netip.Addr) (result.HostInfo, []string) {
			h, notes := engine.HostFacts(s.fs(), local)
			if s.Annotate != nil {
				s.Annotate(&h)
			}
			return h, notes
		}
	}
	if s.relayFails == nil {
		s.relayFails = newRelayFailures(relayFailBurst, relayFailRefill)
	}
	s.gate = newGate(s.maxPending, s.perSrc)
	s.refused = newRefusals(s.logger(), s.logWindow)
	s.facts = &hostFacts{collect: collect, budget: s.factsBudget}
}

func (s *Server) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

func (s *Server) fs() *hostfs.FS {
	if s.Host == nil {
		return hostfs.Live()
	}
	return s.Host
}

func (s *Server) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

func (s *Server) maxDuration() time.Duration {
	if s.MaxDuration <= 0 {
		return DefaultMaxDuration
	}
	return s.MaxDuration
}

// handle serves one connection: a data connection for the running test,
// or a control connection. It reports whether a test started on it.
func (s *Server) handle(ctx context.Context, p *pending) (ran bool) {
	nc := p.Conn
	defer func() {
		if v := recover(); v != nil {
			// A bug, not the peer's doing: the agent keeps serving.
			s.logger().Error("internal error serving a connection (please report it)", "peer", nc.RemoteAddr().String(), "panic", fmt.Sprint(v))
			nc.Close()
			ran = false
		}
	}()
	defer s.gate.leave(p)
	cutoff := time.Now().Add(s.authBudget)
	var first [4]byte
	nc.SetReadDeadline(cutoff)
	if _, err := io.ReadFull(p, first[:]); err != nil {
		s.refuse(p, fmt.Errorf("reading the first bytes: %w", err))
		nc.Close()
		return false
	}
	if string(first[:]) == dataMagic[:4] {
		s.handleData(p, first[:])
		return false
	}
	defer nc.Close()
	c := newConn(p)
	c.cutoff = cutoff
	c.r = io.MultiReader(bytes.NewReader(first[:]), p)
	hs, err := serverHandshakeWith(c, agentAuth{key: s.key, seen: &s.nonces, tickets: &s.tickets,
		local: engine.AddrPort(nc.LocalAddr()), now: s.clock(), mesh: s.meshTestAuth})
	if err != nil {
		s.refuse(p, err)
		if errors.Is(err, ErrAuth) || errors.Is(err, errReplay) {
			c.send(errorMsg{Type: msgError, Reason: "authentication failed"}, handshakeTimeout)
		}
		return false
	}
	// Authenticated: out of the budget, onto the raw connection (the
	// first four bytes were read long ago).
	s.gate.leave(p)
	c.c, c.r, c.cutoff = nc, nc, time.Time{}
	log := s.logger().With("peer", nc.RemoteAddr().String())
	host, notes := s.facts.get(engine.AddrPort(nc.LocalAddr()).Addr())
	if err := hs.sendWelcome(c, host); err != nil {
		log.Warn("client left during the handshake", "reason", err.Error())
		return false
	}
	for _, n := range notes {
		log.Info("host fact unavailable", "reason", n)
	}
	if hs.ticket != nil {
		log = log.With("ticket_from", hs.ticket.From)
	}
	if hs.mesh != nil && hs.mesh.Control {
		s.serveMeshControl(c, hs.keys, log) // not a test: no claim on the agent
		return false
	}
	// The first message says what the client wants, and only then does
	// it claim the agent: a client that only checks that the agent
	// answers (serve --check, a readiness probe every 10 s, a
	// controller naming its peer's node) says bye at once and never
	// holds the agent, so the test a controller asks for the moment its
	// check left does not find the agent busy with the check. The look
	// goes on while the client looks at its own host; anything but a
	// native test stops it (a probe must not share its CPU with it).
	lctx, stopLook := context.WithCancel(ctx)
	defer stopLook()
	lk := startLook(lctx, s.fs())
	if s.deciding.Add(1) > maxDeciding {
		s.deciding.Add(-1)
		s.refused.note(p.src, kindBusy, "busy: too many clients connected at once")
		c.send(errorMsg{Type: msgBusy, Reason: "too many clients connected at once"}, handshakeTimeout)
		return false
	}
	var msg firstMsg
	msg.typ, msg.body, msg.err = c.recv(setupTimeout)
	s.deciding.Add(-1)
	if msg.err == nil && msg.typ == msgBye {
		return false
	}
	sess, busy := s.claim(c, hs.keys, host, log)
	if busy != nil {
		s.refused.note(p.src, kindBusy, "busy: "+busy.Error())
		c.send(errorMsg{Type: msgBusy, Reason: busy.Error()}, handshakeTimeout)
		return false
	}
	defer s.release(sess)
	sess.ticket = hs.ticket
	sess.meshPeer = hs.mesh != nil
	return sess.run(ctx, msg, lk, stopLook)
}

// maxDeciding bounds the authenticated clients that have not yet said
// what they want: none holds the agent while it decides, so the bound
// is what keeps a peer with the token from parking connections on it.
const maxDeciding = 32

// firstMsg is an authenticated client's first message, or why none came.
type firstMsg struct {
	typ  string
	body []byte
	err  error
}

// refuse logs why a pending connection was turned away, by kind.
func (s *Server) refuse(p *pending, err error) {
	s.refused.note(p.src, refusalKind(p, err), err.Error())
}

// refusalKind sorts a failed handshake for the log's summaries.
func refusalKind(p *pending, err error) string {
	silent := p.sent.Load() == 0
	switch {
	case p.evicted.Load() || isTimeout(err) || isEOF(err) || errors.Is(err, io.ErrUnexpectedEOF):
		if silent {
			return kindSilent
		}
		if isTimeout(err) || p.evicted.Load() {
			return kindSlow
		}
		return kindGarbage
	case errors.Is(err, ErrAuth), errors.Is(err, errReplay):
		return kindAuth
	case errors.Is(err, errVersion):
		return kindVersion
	}
	return kindGarbage
}

// claim makes c's session one of the running tests, unless MaxClients
// run; a stalled one gives way (giveWay).
func (s *Server) claim(c *conn, keys sessionKeys, host result.HostInfo, log *slog.Logger) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.meshBusy(); err != nil {
		return nil, err
	}
	if s.active == nil {
		s.active = map[*session]bool{}
	}
	if len(s.active) >= max(s.MaxClients, 1) {
		var from []string
		for ss := range s.active {
			if ss.giveWay(log) {
				delete(s.active, ss)
				break
			}
			from = append(from, ss.ctrl.c.RemoteAddr().String())
		}
		if len(s.active) >= max(s.MaxClients, 1) {
			slices.Sort(from)
			if len(from) == 1 {
				return nil, fmt.Errorf("a test from %s is running", from[0])
			}
			return nil, fmt.Errorf("%d tests are running (from %s), as many as serve --max-clients allows", len(from), strings.Join(from, ", "))
		}
	}
	ss := &session{srv: s, ctrl: c, keys: keys, host: host, log: log, yield: newYielding()}
	if len(s.active) > 0 {
		// Each running test, and this one, shares the process with
		// another from now on.
		ss.shared.Store(true)
		for o := range s.active {
			o.shared.Store(true)
		}
	}
	s.active[ss] = true
	return ss, nil
}

// free ends the session's claim on the agent. Sessions call it before
// their last message, so that a client that starts its next test the
// moment it has the last one does not find the agent busy with the
// session that just ended.
func (ss *session) free() { ss.srv.release(ss) }

func (s *Server) release(sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.active, sess)
}

// handleData reads a data connection's preamble and hands it to the test
// it names; anything else is dropped. A connection handed over leaves
// the budget of pending connections: the test's own connections are
// bounded by its request, not by what strangers hold.
func (s *Server) handleData(p *pending, first []byte) {
	nc := p.Conn
	b := make([]byte, dataPreambleLen)
	copy(b, first)
	if _, err := io.ReadFull(p, b[len(first):]); err != nil {
		s.refuse(p, fmt.Errorf("data connection: truncated preamble: %w", err))
		nc.Close()
		return
	}
	h, err := parsePreamble(b)
	if err != nil {
		s.refused.note(p.src, kindGarbage, err.Error())
		nc.Close()
		return
	}
	s.mu.Lock()
	var sess *session
	for ss := range s.active {
		if ss.testID != nil && h.proves(ss.keys.data, ss.testID) {
			sess = ss
			break
		}
	}
	if sess == nil {
		err = errors.New("unknown test or wrong proof (no test expects it)")
	} else {
		s.gate.leave(p)
		nc.SetReadDeadline(time.Time{})
		err = sess.offer(h.index, nc)
	}
	s.mu.Unlock()
	if err != nil {
		s.refused.note(p.src, kindData, "data connection: "+err.Error())
		nc.Close()
	}
}

// session is the running test, seen from the agent.
type session struct {
	srv  *Server
	ctrl *conn
	keys sessionKeys
	host result.HostInfo
	log  *slog.Logger
	p    engine.Params
	// serverCPUs are the CPUs the client asked for this end's threads.
	serverCPUs []int
	// nic is this end's NIC counters from before the test (nic.go).
	nic *nicstats.Span
	// testKey is the test's ID, which a crr connection's proof names;
	// crrLns its listeners until a Side takes them.
	testKey []byte
	crrLns  []int

	// Guarded by srv.mu: the data connections expected and received.
	testID []byte
	got    map[uint32]bool
	data   chan dataConn

	yield yielding // a stalled test gives way to a new client (fault.go)
	// shared is set once another client's test ran at the same time as
	// this one (Server.MaxClients above 1): the process's CPU time is
	// then not this test's alone.
	shared atomic.Bool

	// ticket is the relay ticket the client authenticated with, if any:
	// it allows the one test it was issued for.
	ticket *relayTicket
	// meshPeer: a mesh peer's throughput test, bounded (meshTestLimits).
	meshPeer bool
}

type dataConn struct {
	index int
	nc    net.Conn
}

// offer takes data connection index for the test, once.
func (ss *session) offer(index uint32, nc net.Conn) error {
	switch {
	case uint64(index) >= uint64(ss.p.Connections()):
		return fmt.Errorf("stream index %d: the test has %d connections", index, ss.p.Connections())
	case ss.got[index]:
		return fmt.Errorf("stream index %d: already connected (a preamble replayed?)", index)
	}
	ss.got[index] = true
	ss.data <- dataConn{index: int(index), nc: nc} // buffered for every index
	return nil
}

// expectData opens the test (testID) to its data connections, or closes
// it (nil).
func (ss *session) expectData(testID []byte) {
	ss.srv.mu.Lock()
	defer ss.srv.mu.Unlock()
	ss.testID = testID
	if testID != nil {
		ss.got = map[uint32]bool{}
		ss.data = make(chan dataConn, ss.p.Connections())
		return
	}
	for { // connections that came after a failed setup
		select {
		case dc := <-ss.data:
			dc.nc.Close()
		default:
			return
		}
	}
}
