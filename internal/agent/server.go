package agent

import (
	"bytes"
	"context"
	"crypto/hmac"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/result"
)

// maxPending bounds connections the agent holds before they authenticate
// (or, for data connections, before their cookie is read): enough for a
// bidirectional test of MaxStreams connecting at once, with room to spare.
const maxPending = 4*engine.MaxStreams + 64

// ListeningPrefix starts the line `linerate serve` prints on stdout once
// it accepts connections ("Listening on 198.18.0.2:5301").
const ListeningPrefix = "Listening on "

// Server is the peer agent (`linerate serve`): it authenticates clients
// and runs their tests, one at a time.
type Server struct {
	// Token is the shared secret clients must prove they hold.
	Token []byte
	// MaxDuration bounds a test's duration and warm-up; 0 means
	// DefaultMaxDuration.
	MaxDuration time.Duration
	// Once makes Serve return after the first test that started, however
	// it ended (a refused request does not count), as iperf3 -1 does.
	Once bool
	// Logger receives one line per test and per refusal, with the reason;
	// nil discards.
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

	mu        sync.Mutex
	active    *session // the test running, if any
	nonces    nonceLog
	doctoring atomic.Bool // a Doctor call is running
}

// Serve accepts connections on ln until ctx is done (or, with Once, the
// first test ended), then closes ln and returns once every connection it
// took is finished.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if len(s.Token) < MinTokenLen {
		return fmt.Errorf("%w: the agent needs a token of at least %d characters", errWeakToken, MinTokenLen)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := make(chan struct{}, maxPending)
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("accepting connections: %w", err)
		}
		select {
		case sem <- struct{}{}:
		default:
			s.logger().Warn("refused connection", "peer", nc.RemoteAddr().String(), "reason", "too many connections waiting to authenticate")
			nc.Close()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ran := s.handle(ctx, nc, sem); ran && s.Once {
				cancel()
			}
		}()
	}
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

func (s *Server) maxDuration() time.Duration {
	if s.MaxDuration <= 0 {
		return DefaultMaxDuration
	}
	return s.MaxDuration
}

// handle serves one connection: a data connection for the running test,
// or a control connection. It reports whether a test started on it.
func (s *Server) handle(ctx context.Context, nc net.Conn, sem chan struct{}) bool {
	released := false
	release := func() {
		if !released {
			released = true
			<-sem
		}
	}
	defer release()
	log := s.logger().With("peer", nc.RemoteAddr().String())
	var first [4]byte
	nc.SetReadDeadline(time.Now().Add(handshakeTimeout))
	if _, err := io.ReadFull(nc, first[:]); err != nil {
		log.Warn("refused connection", "reason", "nothing sent: "+err.Error())
		nc.Close()
		return false
	}
	if string(first[:]) == dataMagic[:4] {
		s.handleData(nc, log)
		return false
	}
	defer nc.Close()
	c := newConn(nc)
	c.r = io.MultiReader(bytes.NewReader(first[:]), nc)
	local := engine.AddrPort(nc.LocalAddr()).Addr()
	var notes []string
	var host result.HostInfo
	err := serverHandshake(c, s.Token, &s.nonces, func() result.HostInfo {
		host, notes = engine.HostFacts(s.fs(), local)
		if s.Annotate != nil {
			s.Annotate(&host)
		}
		return host
	})
	release()
	if err != nil {
		log.Warn("refused client", "reason", err.Error())
		if errors.Is(err, ErrAuth) || errors.Is(err, errReplay) {
			c.send(errorMsg{Type: msgError, Reason: "authentication failed"}, handshakeTimeout)
		}
		return false
	}
	for _, n := range notes {
		log.Info("host fact unavailable", "reason", n)
	}
	sess, busy := s.claim(c, host, log)
	if busy != nil {
		log.Warn("refused client", "reason", "busy: "+busy.Error())
		c.send(errorMsg{Type: msgBusy, Reason: busy.Error()}, handshakeTimeout)
		return false
	}
	defer s.release(sess)
	return sess.run(ctx)
}

// claim makes c's session the running test, unless one runs.
func (s *Server) claim(c *conn, host result.HostInfo, log *slog.Logger) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active != nil {
		return nil, fmt.Errorf("a test from %s is running", s.active.ctrl.c.RemoteAddr())
	}
	s.active = &session{srv: s, ctrl: c, host: host, log: log}
	return s.active, nil
}

// free ends the session's claim on the agent. Sessions call it before
// their last message, so that a client that starts its next test the
// moment it has the last one does not find the agent busy with the
// session that just ended.
func (ss *session) free() { ss.srv.release(ss) }

func (s *Server) release(sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active == sess {
		s.active = nil
	}
}

// handleData reads a data connection's preamble and hands it to the test
// it names; anything else is dropped.
func (s *Server) handleData(nc net.Conn, log *slog.Logger) {
	var rest [dataPreambleLen - 4]byte
	if _, err := io.ReadFull(nc, rest[:]); err != nil {
		log.Warn("refused data connection", "reason", "truncated preamble: "+err.Error())
		nc.Close()
		return
	}
	if string(rest[:4]) != dataMagic[4:] {
		log.Warn("refused data connection", "reason", "bad magic")
		nc.Close()
		return
	}
	cookie := rest[4 : 4+nonceSize]
	index := int(binary.BigEndian.Uint32(rest[4+nonceSize:]))
	s.mu.Lock()
	sess := s.active
	var err error
	if sess == nil || !sess.matches(cookie) {
		err = errors.New("unknown cookie (no test expects it)")
	} else {
		err = sess.offer(index, nc)
	}
	s.mu.Unlock()
	if err != nil {
		log.Warn("refused data connection", "reason", err.Error())
		nc.Close()
	}
}

// session is the running test, seen from the agent.
type session struct {
	srv  *Server
	ctrl *conn
	host result.HostInfo
	log  *slog.Logger
	p    engine.Params
	// serverCPUs are the CPUs the client asked for this end's threads.
	serverCPUs []int

	// Guarded by srv.mu: the data connections expected and received.
	cookie []byte
	got    map[int]bool
	data   chan dataConn
}

type dataConn struct {
	index int
	nc    net.Conn
}

func (ss *session) matches(cookie []byte) bool {
	return ss.cookie != nil && hmac.Equal(cookie, ss.cookie)
}

// offer takes data connection index for the test.
func (ss *session) offer(index int, nc net.Conn) error {
	switch {
	case index >= ss.p.Connections():
		return fmt.Errorf("stream index %d: the test has %d connections", index, ss.p.Connections())
	case ss.got[index]:
		return fmt.Errorf("stream index %d: already connected", index)
	}
	ss.got[index] = true
	ss.data <- dataConn{index: index, nc: nc} // buffered for every index
	return nil
}

// expectData opens the test to its data connections, or closes it.
func (ss *session) expectData(cookie []byte) {
	ss.srv.mu.Lock()
	defer ss.srv.mu.Unlock()
	ss.cookie = cookie
	if cookie != nil {
		ss.got = map[int]bool{}
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
