package agent

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/testutil"
)

// tcpPair returns both ends of a loopback TCP connection, the client's
// from src.
func tcpPair(t *testing.T, ln net.Listener, src string) (client, server net.Conn) {
	t.Helper()
	client = dialFrom(t, src, ln.Addr().String())
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// closedByPeer reports whether the agent closed c (a read sees EOF or a
// reset at once).
func closedByPeer(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// TestGateEvictsSilent: a source at its cap makes room by closing the
// connection that has waited longest with nothing sent; one whose bytes
// are waiting, or that the agent is working on, is never closed; when
// none can go, the newcomer is refused.
func TestGateEvictsSilent(t *testing.T) {
	ln := listen(t)
	g := newGate(100, 3)
	c1, s1 := tcpPair(t, ln, "127.0.0.2")
	c2, s2 := tcpPair(t, ln, "127.0.0.2")
	c3, s3 := tcpPair(t, ln, "127.0.0.2")
	p1, p2 := g.admit(s1), g.admit(s2)
	time.Sleep(5 * time.Millisecond) // p1 and p2 have waited longer than p3
	p3 := g.admit(s3)
	if p1 == nil || p2 == nil || p3 == nil {
		t.Fatal("the gate refused connections under its cap")
	}
	c2.Write([]byte("hello")) // bytes waiting: p2 is in use
	waitUnread(t, s2)
	_, s4 := tcpPair(t, ln, "127.0.0.2")
	if g.admit(s4) == nil {
		t.Fatal("a newcomer was refused although silent connections could go")
	}
	if !p1.evicted.Load() || !closedByPeer(c1) {
		t.Error("the oldest silent connection was not the one closed")
	}
	if p2.evicted.Load() || p3.evicted.Load() || closedByPeer(c2) || closedByPeer(c3) {
		t.Error("a connection with bytes waiting, or a younger one, was closed")
	}
	// The agent is working on p3 (not waiting for its peer): with p2
	// in use too and the fourth connection silent but youngest…
	p3.waitSince.Store(0)
	_, s5 := tcpPair(t, ln, "127.0.0.2")
	if g.admit(s5) == nil {
		t.Fatal("the silent fourth connection could have made room")
	}
	c6, s6 := tcpPair(t, ln, "127.0.0.2")
	c6.Write([]byte("x"))
	waitUnread(t, s6)
	// …now p2 (bytes waiting), p3 (busy), p5 (silent): the silent one goes.
	if g.admit(s6) == nil {
		t.Fatal("refused while a silent connection was pending")
	}
	_, s7 := tcpPair(t, ln, "127.0.0.2")
	if g.admit(s7) != nil {
		t.Error("admitted a connection although every pending one was in use")
	}
	// Another source is not affected by this one's cap.
	_, s8 := tcpPair(t, ln, "127.0.0.3")
	if g.admit(s8) == nil {
		t.Error("another source was refused")
	}
	if g.n != 4 {
		t.Errorf("%d pending, want 4", g.n)
	}
}

// TestGateTotal: at the agent's total, room is made at the source holding
// the most.
func TestGateTotal(t *testing.T) {
	ln := listen(t)
	g := newGate(3, 10)
	var conns []*pending
	for _, src := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.3"} {
		_, s := tcpPair(t, ln, src)
		conns = append(conns, g.admit(s))
	}
	_, s := tcpPair(t, ln, "127.0.0.4")
	if g.admit(s) == nil {
		t.Fatal("refused at the total although silent connections were pending")
	}
	if conns[0].evicted.Load() || !conns[1].evicted.Load() {
		t.Errorf("evicted: %v %v %v; want the oldest of 127.0.0.3, which holds two", conns[0].evicted.Load(), conns[1].evicted.Load(), conns[2].evicted.Load())
	}
}

func waitUnread(t *testing.T, c net.Conn) {
	t.Helper()
	for range 100 {
		if unread(c) > 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("the bytes written never arrived")
}

// TestAuthBudget: the budget to authenticate is one total, not a timeout
// per read: a client trickling its hello one byte at a time loses its
// connection when the budget is spent.
func TestAuthBudget(t *testing.T) {
	srv := &Server{authBudget: 600 * time.Millisecond}
	addr, logs := agent(t, srv)
	c := dialFrom(t, "127.0.0.2", addr)
	defer c.Close()
	start := time.Now()
	hello := frameOf(t, helloMsg{Type: msgHello, Version: protoVersion})
	sent := 0
	for _, b := range hello {
		if _, err := c.Write([]byte{b}); err != nil {
			break
		}
		sent++
		time.Sleep(150 * time.Millisecond)
	}
	// The trickle takes 150 ms a byte: a budget of 600 ms cuts it off long
	// before the hello is whole (the write after the cut fails), where a
	// per-read deadline would wait for every byte.
	if sent == len(hello) {
		t.Fatalf("a trickling client sent its whole %d-byte hello, one byte per 150 ms, over %s", len(hello), time.Since(start))
	}
	waitLog(t, logs, "refused connection", "kind=\"handshake not finished in time\"")
}

func frameOf(t *testing.T, m any) []byte {
	t.Helper()
	var b bytes.Buffer
	c := &conn{c: nopDeadline{&b}}
	if err := c.send(m, time.Second); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// nopDeadline is a net.Conn over a buffer, for encoding frames.
type nopDeadline struct{ *bytes.Buffer }

func (nopDeadline) Close() error                     { return nil }
func (nopDeadline) LocalAddr() net.Addr              { return nil }
func (nopDeadline) RemoteAddr() net.Addr             { return nil }
func (nopDeadline) SetDeadline(time.Time) error      { return nil }
func (nopDeadline) SetReadDeadline(time.Time) error  { return nil }
func (nopDeadline) SetWriteDeadline(time.Time) error { return nil }

// TestSilentFloodSameSource: the client's own address holds its cap of
// silent connections; the client still runs its test, and the silent
// connections make room for it.
func TestSilentFloodSameSource(t *testing.T) {
	srv := &Server{perSrc: 8}
	addr, logs := agent(t, srv)
	var silent []net.Conn
	for range 8 {
		silent = append(silent, dialFrom(t, "127.0.0.1", addr))
	}
	defer func() {
		for _, c := range silent {
			c.Close()
		}
	}()
	time.Sleep(50 * time.Millisecond) // all eight admitted and waiting
	res, err := Run(context.Background(), Config{Peer: addr, Token: testToken, Test: Test{Params: engine.Params{Streams: 2, Duration: 300 * time.Millisecond, Interval: 100 * time.Millisecond}}})
	if err != nil {
		t.Fatalf("the client could not run beside a silent flood from its own address: %v", err)
	}
	if res.End.SumReceived.Bytes == 0 {
		t.Error("nothing moved")
	}
	closed := 0
	for _, c := range silent {
		if closedByPeer(c) {
			closed++
		}
	}
	// At least one made room for the control connection (the data
	// connections may have found room left by it).
	if closed < 1 {
		t.Error("no silent connection was closed: how did the client get in?")
	}
	waitLog(t, logs, "refused connection", "kind=\"nothing sent\"")
}

// TestShutdownClosesPending: stopping the agent ends handshakes in
// progress at once instead of waiting out their budget.
func TestShutdownClosesPending(t *testing.T) {
	ln := listen(t)
	srv := &Server{Token: testToken, authBudget: time.Minute}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	for range 10 {
		c := dialFrom(t, "127.0.0.1", ln.Addr().String())
		defer c.Close()
	}
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve still waits for silent connections 5 s after it was stopped")
	}
}

// flakyListener fails its first accepts as a process out of descriptors
// does.
type flakyListener struct {
	net.Listener
	fails atomic.Int32
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return l.Listener.Accept()
}

// TestAcceptBackoff: an accept error other than a timeout does not end
// the agent; it waits and tries again, and says so once.
func TestAcceptBackoff(t *testing.T) {
	fl := &flakyListener{Listener: listen(t)}
	fl.fails.Store(20)
	logs := &testutil.Buffer{}
	srv := &Server{Token: testToken, Logger: slog.New(slog.NewTextHandler(logs, nil)), acceptBackoffCeiling: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, fl) }()
	_, err := Run(context.Background(), Config{Peer: fl.Addr().String(), Token: testToken, Test: Test{Params: engine.Params{Duration: 200 * time.Millisecond, Interval: 100 * time.Millisecond}}})
	cancel()
	if serr := <-done; serr != nil {
		t.Fatalf("Serve: %v", serr)
	}
	if err != nil {
		t.Fatalf("a client after the accept errors: %v", err)
	}
	n := 0
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "accepting connections failed") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d log lines about 20 accept errors, want 2 (the first, then the summary):\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "refused 20 connections from other addresses") {
		t.Errorf("no summary of the accept errors:\n%s", logs.String())
	}
}

// TestRefusalSummary: a flood from one address makes two lines per kind
// and window: the first refusal in full, then the count.
func TestRefusalSummary(t *testing.T) {
	var b testutil.Buffer
	r := newRefusals(slog.New(slog.NewTextHandler(&b, nil)), 10*time.Second)
	src := netip.MustParseAddr("198.18.0.1")
	for range 3412 {
		r.note(src, kindSilent, "reading the first bytes: i/o timeout")
	}
	r.note(src, kindGarbage, "frame larger than allowed")
	r.note(netip.MustParseAddr("198.18.0.3"), kindSilent, "EOF")
	r.flush()
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4:\n%s", len(lines), b.String())
	}
	if !strings.Contains(lines[3], `msg="refused 3,412 connections from 198.18.0.1 in the last 10 s: nothing sent"`) {
		t.Errorf("summary line: %s", lines[3])
	}
	// Quiet keys are forgotten; a key refused again logs in full again
	// only after a quiet window.
	b.Reset()
	r.note(src, kindSilent, "again")
	r.flush()
	if !strings.Contains(b.String(), `msg="refused 1 connections from 198.18.0.1`) {
		t.Errorf("a refusal in the window after a summary is counted, not shown: %s", b.String())
	}
	r.flush()
	b.Reset()
	r.note(src, kindSilent, "after a quiet window")
	if !strings.Contains(b.String(), "after a quiet window") {
		t.Errorf("after a quiet window the first refusal is shown in full: %q", b.String())
	}
	if got := thousands(1234567); got != "1,234,567" {
		t.Errorf("thousands = %s", got)
	}
}

// TestHostFactsBudget: a host whose facts hang does not hold the agent:
// clients get the CPUs the agent may use within the budget, and no second
// read starts while the first hangs.
func TestHostFactsBudget(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int32
	srv := &Server{factsBudget: 200 * time.Millisecond, collect: func(netip.Addr) (result.HostInfo, []string) {
		calls.Add(1)
		<-release
		return result.HostInfo{Hostname: "slow"}, nil
	}}
	addr, _ := agent(t, srv)
	var once sync.Once
	defer once.Do(func() { close(release) })
	for range 3 {
		// collect hangs until the test ends: a welcome at all is the budget's.
		host := handshakeWith(t, addr)
		cpus, _ := engine.AllowedCPUs()
		if host.Hostname != "" || len(host.CPUs) != len(cpus) {
			t.Errorf("host = %+v, want the allowed CPUs only", host)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d reads of the host started while the first hung, want 1", n)
	}
	once.Do(func() { close(release) })
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if handshakeWith(t, addr).Hostname == "slow" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Error("the facts read after the hang never reached a client")
}

// handshakeWith authenticates to the agent at addr and returns what it
// said of its host.
func handshakeWith(t *testing.T, addr string) result.HostInfo {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	h, _, err := clientHandshake(newConn(nc), testToken)
	if err != nil {
		t.Fatal(err)
	}
	return *h
}
