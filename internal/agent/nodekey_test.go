package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/engine"
)

func nodeKey(t *testing.T, name string) []byte {
	t.Helper()
	k, err := NodeKey(testToken, name)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestNodeKeyForm: a node key is "node-key NAME HEX", derived from the
// fleet's secret and the name alone; it passes the token checks, cannot
// make other keys, and is written to a new private file only.
func TestNodeKeyForm(t *testing.T) {
	a, b := nodeKey(t, "h01"), nodeKey(t, "h02")
	if !bytes.HasPrefix(a, []byte("node-key h01 ")) || len(a) != len("node-key h01 ")+64 {
		t.Fatalf("node key %q", a)
	}
	if bytes.Equal(a[13:], b[13:]) || !bytes.Equal(a, nodeKey(t, "h01")) {
		t.Error("node keys are not one per name, or not stable")
	}
	other, _ := NodeKey(otherToken, "h01")
	if bytes.Equal(a, other) {
		t.Error("two fleets' secrets give one node key")
	}
	if tok, err := CheckToken(append(append([]byte(" "), a...), '\n')); err != nil || !bytes.Equal(tok, a) {
		t.Errorf("CheckToken(node key) = %q, %v", tok, err)
	}
	if _, err := NodeKey(a, "h02"); err == nil {
		t.Error("a node key made another node's key")
	}
	for _, bad := range []string{"node-key h01", "node-key -x " + strings.Repeat("a", 64), "node-key h01 " + strings.Repeat("z", 64),
		"node-key h01 " + strings.Repeat("a", 62), "node-key a/b " + strings.Repeat("a", 64)} {
		if _, err := CheckToken([]byte(bad)); !errors.Is(err, errWeakToken) {
			t.Errorf("CheckToken(%q) = %v", bad, err)
		}
	}
	for _, bad := range []string{"", "-h", "a b", strings.Repeat("x", 254)} {
		if _, err := NodeKey(testToken, bad); err == nil {
			t.Errorf("NodeKey(%q) accepted", bad)
		}
	}
	path := filepath.Join(t.TempDir(), "node.key")
	if err := WriteNodeKey(path, testToken, "h01"); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadTokenFile(path); err != nil || !bytes.Equal(got, a) {
		t.Errorf("read back %q, %v", got, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	if err := WriteNodeKey(path, testToken, "h01"); err == nil || !strings.Contains(err.Error(), "does not overwrite") {
		t.Errorf("overwrote: %v", err)
	}
}

// TestNodeKeysIsolate: one node's key opens its own agent only. The
// fleet's secret opens every agent (the key derived from the name the
// agent gives); node h01's key opens h01 and not h02, nor an agent of
// the shared token; a shared token opens no agent of a node key.
func TestNodeKeysIsolate(t *testing.T) {
	h1, _ := agent(t, &Server{Token: nodeKey(t, "h01")})
	h2, _ := agent(t, &Server{Token: nodeKey(t, "h02")})
	shared, _ := agent(t, &Server{Token: otherToken})
	ctx := context.Background()
	for _, c := range []struct {
		addr string
		key  []byte
		ok   bool
	}{
		{h1, testToken, true},
		{h2, testToken, true},
		{h1, nodeKey(t, "h01"), true},
		{h2, nodeKey(t, "h01"), false},
		{shared, nodeKey(t, "h01"), false},
		{h1, otherToken, false},
		{shared, otherToken, true},
	} {
		_, err := Probe(ctx, nil, c.addr, c.key)
		if c.ok != (err == nil) || err != nil && !errors.Is(err, ErrAuth) {
			t.Errorf("probe of %s with %.20q…: %v, want ok=%v", c.addr, c.key, err, c.ok)
		}
	}
	// A test, not only a probe, with the fleet's secret.
	res, err := Run(ctx, Config{Peer: h2, Token: testToken, Test: Test{Params: engine.Params{Duration: 500 * time.Millisecond, Interval: 250 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	checkEnd(t, res)
	if n, ok := knownNode(h2); !ok || n != "h02" {
		t.Errorf("the controller knows %s as %q", h2, n)
	}
}

// TestRelayWithTicket: agents of node keys relay with the controller's
// ticket, which the peer checks with its own key. The ticket opens the
// peer once, for a test; a controller with a node key cannot relay.
func TestRelayWithTicket(t *testing.T) {
	a, alog := agent(t, &Server{Token: nodeKey(t, "h01")})
	b, blog := agent(t, &Server{Token: nodeKey(t, "h02")})
	res, err := relay(context.Background(), a, b, Config{})
	if err != nil {
		t.Fatal(err)
	}
	checkEnd(t, res)
	waitLog(t, alog, "relayed test done", "toward="+b)
	waitLog(t, blog, "test started", "ticket_from=h01")
	// Without the controller's probe of b on record, the controller
	// names b's node with one itself.
	nodeCache.Lock()
	nodeCache.m = nil
	nodeCache.Unlock()
	if _, err := relay(context.Background(), a, b, Config{}); err != nil {
		t.Errorf("a relay toward an agent the controller never met: %v", err)
	}
	_, err = RunRemote(context.Background(), Remote{From: a, Config: Config{Peer: b, Token: nodeKey(t, "h01"), Test: Test{Params: engine.Params{Duration: time.Second}}}})
	if err == nil || !strings.Contains(err.Error(), "needs the fleet's secret") {
		t.Errorf("a relay by a controller with h01's key: %v", err)
	}
}

// ticketConn authenticates to the agent at addr from source address src
// with a ticket of key k. (Each refusal is logged in full once per source
// and kind: a test of several refusals gives each its own source.)
func ticketConn(t *testing.T, src, addr string, tk *relayTicket, k []byte) (*conn, error) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	c := newConn(nc)
	_, _, err = clientHandshakeWith(c, credentials{ticket: tk, ticketKey: k})
	return c, err
}

// TestTicketMisuse: what a holder of a ticket, or of one node's key,
// cannot do with it. A ticket opens its peer once, at the address it
// names, until it expires, for a test only; a node key made up for a
// ticket's key fails; an agent relays only with a ticket for itself and
// for that peer.
func TestTicketMisuse(t *testing.T) {
	b, blog := agent(t, &Server{Token: nodeKey(t, "h02")})
	bAddr := netip.MustParseAddrPort(b)
	now := time.Now()
	ticket := func(to string, peer netip.AddrPort, at time.Time) (*relayTicket, []byte) {
		tk, k, err := newTicket(testToken, "h01", to, peer, at)
		if err != nil {
			t.Fatal(err)
		}
		return tk, k
	}
	// Once.
	tk, k := ticket("h02", bAddr, now)
	c, err := ticketConn(t, "127.0.0.1", b, tk, k)
	if err != nil {
		t.Fatalf("a good ticket: %v", err)
	}
	c.send(bareMsg{Type: msgBye}, time.Second)
	if _, err := ticketConn(t, "127.0.0.1", b, tk, k); !errors.Is(err, ErrAuth) {
		t.Errorf("a ticket used twice: %v", err)
	}
	waitLog(t, blog, "refused connection", "relay ticket was used before")
	// Elsewhere, for another node, expired, or living too long.
	for i, c := range []struct {
		name string
		at   time.Time
		peer netip.AddrPort
		want string
	}{
		{"another address", now, netip.AddrPortFrom(bAddr.Addr(), bAddr.Port()+1), "this connection reached"},
		{"expired", now.Add(-ticketLife - ticketSkew - time.Second), bAddr, "expired"},
		{"too long", now.Add(ticketSkew + time.Minute), bAddr, "longer than any ticket lives"},
	} {
		tk, k := ticket("h02", c.peer, c.at)
		if _, err := ticketConn(t, fmt.Sprintf("127.0.5.%d", i+1), b, tk, k); !errors.Is(err, ErrAuth) {
			t.Errorf("%s: %v", c.name, err)
		}
		waitLog(t, blog, "refused connection", c.want)
	}
	// A ticket for another node: the client sees it first.
	tk, k = ticket("h03", bAddr, now)
	if _, err := ticketConn(t, "127.0.5.10", b, tk, k); !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "the peer says it is node \"h02\"") {
		t.Errorf("a ticket for node h03 at h02: %v", err)
	}
	// A key that is not the ticket's: h01's own key, say.
	tk, _ = ticket("h02", bAddr, now)
	if _, err := ticketConn(t, "127.0.5.11", b, tk, []byte(nodeKey(t, "h01"))); !errors.Is(err, ErrAuth) {
		t.Errorf("a ticket with the wrong key: %v", err)
	}
	waitLog(t, blog, "refused connection", "wrong MAC")
	// A test only: no tool server, doctor report or relay on a ticket.
	for _, typ := range []string{msgTool, msgDoctor, msgRelay, msgProbe} {
		tk, k := ticket("h02", bAddr, time.Now())
		c, err := ticketConn(t, "127.0.0.1", b, tk, k)
		if err != nil {
			t.Fatal(err)
		}
		c.send(bareMsg{Type: typ}, time.Second)
		typ, body, err := c.recv(5 * time.Second)
		if err == nil {
			err = decodeAs(typ, body, msgAccept, &acceptMsg{})
		}
		var pe *PeerError
		if !errors.As(err, &pe) || !strings.Contains(pe.Reason, "a relay ticket allows the test") {
			t.Errorf("%s on a ticket: %v", typ, err)
		}
	}
}

// TestRelayTicketChecks: an agent of a node key relays only with a ticket
// the controller made for it and for that peer.
func TestRelayTicketChecks(t *testing.T) {
	a, _ := agent(t, &Server{Token: nodeKey(t, "h01")})
	b, _ := agent(t, &Server{Token: nodeKey(t, "h02")})
	bAddr := netip.MustParseAddrPort(b)
	send := func(change func(m *relayMsg, wrap []byte)) error {
		c, nc, err := dialAgent(context.Background(), nil, a)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		_, keys, err := clientHandshake(c, testToken)
		if err != nil {
			t.Fatal(err)
		}
		m := relayMsg{Type: msgRelay, Peer: b, testWire: testWire{Params: engine.Params{Streams: 1, Direction: "send"}, DurationMS: 1000, IntervalMS: 500}}
		change(&m, keys.wrap)
		c.send(m, time.Second)
		typ, body, err := c.recv(10 * time.Second)
		if err == nil {
			err = decodeAs(typ, body, msgRelayStart, &relayStartMsg{})
		}
		return err
	}
	withTicket := func(from, peer string) func(*relayMsg, []byte) {
		return func(m *relayMsg, wrap []byte) {
			tk, k, err := newTicket(testToken, from, "h02", netip.MustParseAddrPort(peer), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			m.Ticket, m.TicketKey = tk, tk.mask(wrap, k)
		}
	}
	other := netip.AddrPortFrom(bAddr.Addr(), bAddr.Port()+1).String()
	for _, c := range []struct {
		name   string
		change func(*relayMsg, []byte)
		want   string
	}{
		{"no ticket", func(*relayMsg, []byte) {}, "a relay needs a ticket"},
		{"another agent's ticket", withTicket("h03", b), "for node \"h03\"'s agent"},
		{"a ticket for another peer", withTicket("h01", other), "the relay ticket is for"},
	} {
		err := send(c.change)
		var pe *PeerError
		if !errors.As(err, &pe) || !strings.Contains(pe.Reason, c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// The key unmasked with another session's wrap key is not the
	// ticket's: the peer does not take it.
	err := send(func(m *relayMsg, wrap []byte) {
		withTicket("h01", b)(m, append([]byte{}, wrap[1:]...))
	})
	if err == nil || !strings.Contains(err.Error(), errNotAgent.Error()) {
		t.Errorf("a ticket key masked with the wrong key: %v", err)
	}
}
