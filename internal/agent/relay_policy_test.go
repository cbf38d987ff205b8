package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/testutil"
)

// TestRelayPolicy: an agent relays only to the fleet's agents: on the
// agent port, in its relay peers, never to a loopback, link-local or own
// address, and to nothing without relay peers.
func TestRelayPolicy(t *testing.T) {
	fleet := []netip.Prefix{netip.MustParsePrefix("198.18.0.0/15"), netip.MustParsePrefix("169.254.0.0/16"),
		netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("2001:db8::/32"), netip.MustParsePrefix("fe80::/10")}
	own := func() []netip.Addr {
		return []netip.Addr{netip.MustParseAddr("198.18.0.5"), netip.MustParseAddr("2001:db8::5"), netip.MustParseAddr("127.0.0.1")}
	}
	local := netip.MustParseAddrPort("198.18.0.1:5301")
	for _, c := range []struct {
		srv  *Server
		peer string
		why  string // "" when taken
	}{
		{&Server{RelayPeers: fleet}, "198.18.0.2:5301", ""},
		{&Server{RelayPeers: fleet}, "[2001:db8::2]:5301", ""},
		{&Server{RelayPeers: fleet}, "[::ffff:198.18.0.2]:5301", ""},
		{&Server{RelayPeers: fleet}, "198.18.0.2:22", "not the agent port 5301"},
		{&Server{RelayPeers: fleet}, "198.18.0.2:9101", "not the agent port 5301"},
		{&Server{RelayPeers: fleet, RelayPort: 6000}, "198.18.0.2:6000", ""},
		{&Server{RelayPeers: fleet, RelayPort: 6000}, "198.18.0.2:5301", "not the agent port 6000"},
		{&Server{RelayPeers: fleet}, "198.18.0.5:5301", "own addresses"},
		{&Server{RelayPeers: fleet}, "198.18.0.1:5301", "own addresses"},
		{&Server{RelayPeers: fleet}, "[2001:db8::5]:5301", "own addresses"},
		{&Server{RelayPeers: fleet}, "127.0.0.1:5301", "loopback"},
		{&Server{RelayPeers: fleet}, "127.0.0.2:5301", "loopback"},
		{&Server{RelayPeers: fleet}, "[::1]:5301", "loopback"},
		{&Server{RelayPeers: fleet}, "[::ffff:127.0.0.1]:5301", "loopback"},
		{&Server{RelayPeers: fleet}, "169.254.169.254:5301", "link-local"},
		{&Server{RelayPeers: fleet}, "[fe80::1%lab0]:5301", "link-local"},
		{&Server{RelayPeers: fleet}, "10.0.0.1:5301", "not in --relay-peers"},
		{&Server{RelayPeers: fleet}, "[2001:db9::1]:5301", "not in --relay-peers"},
		{&Server{}, "198.18.0.2:5301", "no --relay-peers"},
		{&Server{RelayPeers: fleet, LoopbackFleet: true}, "127.0.0.2:5301", ""},
	} {
		c.srv.ownAddrs = own
		peer, err := parsePeer(c.peer)
		if err != nil {
			t.Fatalf("%s: %v", c.peer, err)
		}
		why := c.srv.relayPolicy(peer, local)
		if c.why == "" && why != nil || c.why != "" && (why == nil || !strings.Contains(why.Error(), c.why)) {
			t.Errorf("%s (port %d, loopback fleet %v): %v, want %q", c.peer, c.srv.RelayPort, c.srv.LoopbackFleet, why, c.why)
		}
	}
}

// TestParseRelayPeers: networks and addresses, in both families; an
// address alone is one host; anything else is refused with the flag's
// name.
func TestParseRelayPeers(t *testing.T) {
	got, err := ParseRelayPeers("198.18.0.0/15, 10.1.2.3,fd00::/64,::ffff:10.0.0.0/104,198.18.0.7/24")
	if err != nil {
		t.Fatal(err)
	}
	want := "198.18.0.0/15 10.1.2.3/32 fd00::/64 10.0.0.0/8 198.18.0.0/24"
	var texts []string
	for _, p := range got {
		texts = append(texts, p.String())
	}
	if strings.Join(texts, " ") != want {
		t.Errorf("got %v, want %s", texts, want)
	}
	for _, bad := range []string{"", ",", "host.example", "10.0.0.0/33", "fe80::1%eth0", "10.0.0.1:5301"} {
		if _, err := ParseRelayPeers(bad); err == nil || !strings.Contains(err.Error(), "--relay-peers") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	arg := RelayPeersArg([]netip.Addr{netip.MustParseAddr("198.18.0.2"), netip.MustParseAddr("::ffff:10.0.0.1"), netip.MustParseAddr("fe80::1%lab0")})
	if arg != "198.18.0.2/32,10.0.0.1/32,fe80::1/128" {
		t.Errorf("RelayPeersArg = %q", arg)
	}
	if back, err := ParseRelayPeers(arg); err != nil || len(back) != 3 {
		t.Errorf("RelayPeersArg does not read back: %v, %v", back, err)
	}
}

// sendRelay authenticates to the agent at addr, asks for a relay toward
// peer, and returns the controller's error for it.
func sendRelay(t *testing.T, addr, peer string) error {
	t.Helper()
	_, err := RunRemote(context.Background(), Remote{From: addr, Config: Config{Peer: peer, Token: testToken, Test: Test{Params: engine.Params{Duration: time.Second, Interval: 250 * time.Millisecond}}}})
	return err
}

// TestRelayRefusesNonAgents: a controller that asks an agent for a relay
// toward a non-agent port, a loopback, link-local or own address, or
// outside the fleet gets one refusal, the same whatever the rule, and
// the agent connects to none of them; its log says which rule.
func TestRelayRefusesNonAgents(t *testing.T) {
	// A service the relay must not reach, on loopback beside the agent.
	svc, err := net.Listen("tcp", "127.0.0.31:0")
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	reached := make(chan struct{}, 16)
	go func() {
		for {
			c, err := svc.Accept()
			if err != nil {
				return
			}
			reached <- struct{}{}
			c.Close()
		}
	}()
	strict, slog := agent(t, &Server{RelayPeers: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/15"), netip.MustParsePrefix("169.254.0.0/16")},
		ownAddrs: func() []netip.Addr { return []netip.Addr{netip.MustParseAddr("198.18.0.9")} }})
	loop, llog := agent(t, &Server{RelayPeers: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, LoopbackFleet: true})
	_, port, _ := net.SplitHostPort(strict)
	for _, c := range []struct {
		from, peer, rule string
		log              *testutil.Buffer
	}{
		{loop, svc.Addr().String(), "not the agent port", llog},
		{strict, "127.0.0.31:" + port, "loopback", slog},
		{strict, "169.254.169.254:" + port, "link-local", slog},
		{strict, "198.18.0.9:" + port, "own addresses", slog},
		{strict, "10.9.9.9:" + port, "not in --relay-peers", slog},
	} {
		err := sendRelay(t, c.from, c.peer)
		var pe *PeerError
		if !errors.As(err, &pe) || pe.Reason != errRelayRefused.Error() {
			t.Errorf("relay toward %s: %v, want exactly %q", c.peer, err, errRelayRefused)
		}
		waitLog(t, c.log, "refused relay", "toward="+c.peer, c.rule)
	}
	select {
	case <-reached:
		t.Error("the agent connected to a peer it refused")
	case <-time.After(100 * time.Millisecond):
	}
	// An agent without relay peers takes no relay at all.
	none, nlog := agent(t, &Server{RelayPeers: []netip.Prefix{}})
	if err := sendRelay(t, none, strict); err == nil || !strings.Contains(err.Error(), errRelayRefused.Error()) {
		t.Errorf("an agent without relay peers: %v", err)
	}
	waitLog(t, nlog, "refused relay", "no --relay-peers")
}

// TestRelayTellsNothingOfNonAgents: whatever answers at an allowed
// address — an SSH banner, a web server, a frame that is no JSON, a
// service that hangs up, a closed port — the controller gets the same
// text; the agent's log has what happened. The review's scan told open
// from closed ports and showed each service's first bytes. Failed relays
// are then rate-limited.
func TestRelayTellsNothingOfNonAgents(t *testing.T) {
	first, err := net.Listen("tcp", "127.0.0.41:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(first.Addr().String())
	serve := func(ln net.Listener, banner string) {
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Write([]byte(banner))
				time.Sleep(200 * time.Millisecond)
				c.Close()
			}
		}()
	}
	banners := []string{"SSH-2.0-OpenSSH_9.6\r\n", "HTTP/1.1 400 Bad Request\r\n\r\n", "\x00\x00\x00\x05+OK\r\n", ""}
	serve(first, banners[0])
	defer first.Close()
	peers := []string{first.Addr().String()}
	for i, b := range banners[1:] {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.%d:%s", 42+i, port))
		if err != nil {
			t.Fatalf("port %s of 127.0.0.41 is taken on 127.0.0.%d: %v", port, 42+i, err)
		}
		defer ln.Close()
		serve(ln, b)
		peers = append(peers, ln.Addr().String())
	}
	peers = append(peers, "127.0.0.49:"+port) // nothing listens there
	p, _ := strconv.Atoi(port)
	a, alog := agent(t, &Server{RelayPeers: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, LoopbackFleet: true, RelayPort: p,
		relayFails: newRelayFailures(len(peers), time.Hour)})
	var texts []string
	for _, peer := range peers {
		err := sendRelay(t, a, peer)
		if err == nil {
			t.Fatalf("relay toward %s succeeded", peer)
		}
		texts = append(texts, strings.ReplaceAll(err.Error(), peer, "PEER"))
	}
	for i, s := range texts {
		if s != texts[0] || !strings.Contains(s, errNotAgent.Error()) {
			t.Errorf("toward %s the controller read %q; toward %s %q", peers[i], s, peers[0], texts[0])
		}
		for _, leak := range []string{"SSH", "HTTP", "frame", "connection refused", "reset", "EOF", "JSON", "1397966893"} {
			if strings.Contains(s, leak) {
				t.Errorf("the controller's text %q shows %q", s, leak)
			}
		}
	}
	waitLog(t, alog, "relayed test failed", "frame larger than allowed")
	waitLog(t, alog, "relayed test failed", "connection refused")
	// The failures spent the budget: the next relay is refused without
	// a connection.
	err = sendRelay(t, a, peers[0])
	if err == nil || !strings.Contains(err.Error(), "too many relayed tests") {
		t.Errorf("a relay after %d failures: %v", len(peers), err)
	}
}

// TestRelayFailureBudget: the bucket of failed relays refills at its rate.
func TestRelayFailureBudget(t *testing.T) {
	r := newRelayFailures(2, 10*time.Second)
	t0 := time.Unix(1000, 0)
	for i := range 2 {
		if w := r.wait(t0); w != 0 {
			t.Fatalf("failure %d: wait %v", i, w)
		}
		r.failed(t0)
	}
	if w := r.wait(t0); w != 10*time.Second {
		t.Errorf("empty bucket: wait %v, want 10s", w)
	}
	if w := r.wait(t0.Add(4 * time.Second)); w != 6*time.Second {
		t.Errorf("4 s later: wait %v, want 6s", w)
	}
	if w := r.wait(t0.Add(10 * time.Second)); w != 0 {
		t.Errorf("10 s later: wait %v, want 0", w)
	}
	if w := r.wait(t0.Add(time.Hour)); w != 0 || r.tokens != 2 {
		t.Errorf("an hour later: wait %v, %v tokens; want 0, the burst of 2", w, r.tokens)
	}
}
