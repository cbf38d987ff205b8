package agent

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/result"
)

// relay runs a relayed test from agent from toward agent to.
func relay(ctx context.Context, from, to string, cfg Config) (*result.Result, error) {
	cfg.Peer, cfg.Token = to, testToken
	if cfg.Duration == 0 {
		cfg.Duration = time.Second
	}
	if cfg.Interval == 0 {
		cfg.Interval = 250 * time.Millisecond
	}
	return RunRemote(ctx, Remote{From: from, Config: cfg})
}

// TestRelay: a controller asks agent A for a test toward agent B, in each
// direction; the result comes back whole (every interval, both ends'
// CPUs, the totals), its events in order, and both agents logged their
// side of it.
func TestRelay(t *testing.T) {
	a, alog := agent(t, &Server{})
	b, blog := agent(t, &Server{})
	for _, dir := range []result.Direction{result.Send, result.Receive, result.Bidir} {
		t.Run(string(dir), func(t *testing.T) {
			var events []string
			res, err := relay(context.Background(), a, b, Config{Progress: func(e result.Event) { events = append(events, e.Event) }, Test: Test{Params: engine.Params{Streams: 2, Direction: dir, Omit: 250 * time.Millisecond}}})
			if err != nil {
				t.Fatal(err)
			}
			conns := 2
			if dir == result.Bidir {
				conns = 4
			}
			checkIntervals(t, res, conns)
			checkEnd(t, res)
			if res.Schema != result.Schema || res.Engine != "native" || res.RunID != res.Start.Timestamp.UnixMilli() {
				t.Errorf("schema %q, engine %q, run ID %d (start %s)", res.Schema, res.Engine, res.RunID, res.Start.Timestamp)
			}
			host, port, _ := net.SplitHostPort(b)
			if res.Start.Peer != host || res.Start.Port != mustAtoi(t, port) || res.Start.Direction != dir {
				t.Errorf("start: peer %s:%d, direction %s; want %s", res.Start.Peer, res.Start.Port, res.Start.Direction, b)
			}
			if res.Start.Client.Hostname == "" || res.End.CPU.ServerSeconds <= 0 {
				t.Errorf("the relayed result lacks the client's facts or the server's CPU: %+v %+v", res.Start.Client, res.End.CPU)
			}
			want := "start " + strings.Repeat("interval ", len(res.Intervals)) + "end"
			if got := strings.Join(events, " "); got != want {
				t.Errorf("events %q, want %q", got, want)
			}
		})
	}
	waitLog(t, alog, "relayed test done", "toward="+b)
	waitLog(t, blog, "test done")
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	p, err := netip.ParseAddrPort("1.1.1.1:" + s)
	if err != nil {
		t.Fatal(err)
	}
	return int(p.Port())
}

// TestRelayRefuses: the agent refuses a relay whose test is out of its
// bounds or whose peer is not one host's address, before it sends
// anything to anyone, and says why.
func TestRelayRefuses(t *testing.T) {
	a, alog := agent(t, &Server{MaxDuration: 2 * time.Second})
	send := func(m relayMsg) error {
		c, nc, err := dialAgent(context.Background(), nil, a)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if _, _, err := clientHandshake(c, testToken); err != nil {
			t.Fatal(err)
		}
		if err := c.send(m, time.Second); err != nil {
			t.Fatal(err)
		}
		typ, body, err := c.recv(5 * time.Second)
		if err != nil {
			return err
		}
		return decodeAs(typ, body, msgRelayStart, &relayStartMsg{})
	}
	good := relayMsg{Type: msgRelay, Peer: "127.0.0.1:1", testWire: testWire{Params: engine.Params{Streams: 1, Direction: result.Send}, DurationMS: 1000, IntervalMS: 1000}}
	for _, tt := range []struct {
		change func(*relayMsg)
		want   string
	}{
		{func(m *relayMsg) { m.Peer = "localhost:5301" }, "an agent resolves no names"},
		{func(m *relayMsg) { m.Peer = "127.0.0.1" }, "give an IP address and a port"},
		{func(m *relayMsg) { m.Peer = "0.0.0.0:5301" }, "not the address of one host"},
		{func(m *relayMsg) { m.Peer = "[::]:5301" }, "not the address of one host"},
		{func(m *relayMsg) { m.Peer = "224.0.0.1:5301" }, "not the address of one host"},
		{func(m *relayMsg) { m.Peer = "255.255.255.255:5301" }, "not the address of one host"},
		{func(m *relayMsg) { m.Peer = "127.0.0.1:0" }, "port 0"},
		{func(m *relayMsg) { m.Peer = strings.Repeat("1", 100) }, "peer of 100 bytes"},
		{func(m *relayMsg) { m.DurationMS = 5000 }, "over this agent's limit of 2s"},
		{func(m *relayMsg) { m.Streams = 4097 }, "streams 4097"},
		{func(m *relayMsg) { m.IntervalMS = 10 }, "interval 10 ms"},
		{func(m *relayMsg) { m.Direction = "sideways" }, "direction"},
	} {
		m := good
		tt.change(&m)
		err := send(m)
		var pe *PeerError
		if !errors.As(err, &pe) || !strings.Contains(pe.Reason, tt.want) {
			t.Errorf("%+v: %v, want a refusal with %q", m, err, tt.want)
		}
	}
	waitLog(t, alog, "refused test", "resolves no names")
	if strings.Contains(alog.String(), "relayed test started") {
		t.Errorf("a refused relay started a test:\n%s", alog.String())
	}
}

// TestRelayPeerTrouble: a peer that is not there, busy, or holding
// another token fails the relayed test with the reason, within the
// relay's setup, and the agent serves the next relay.
func TestRelayPeerTrouble(t *testing.T) {
	a, alog := agent(t, &Server{})
	b, _ := agent(t, &Server{})
	other, _ := agent(t, &Server{Token: []byte("c0ffee4b1d9e77a3058f62d1e94b0c7a")})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()

	// Not there, or of another fleet: the controller hears that the peer
	// did not answer as an agent; the agent's log says how.
	_, err = relay(context.Background(), a, closed, Config{})
	if err == nil || !strings.Contains(err.Error(), "the test toward "+closed) || !strings.Contains(err.Error(), errNotAgent.Error()) {
		t.Errorf("toward a closed port: %v", err)
	}
	waitLog(t, alog, "relayed test failed", "toward="+closed, "connection refused")
	_, err = relay(context.Background(), a, other, Config{})
	if err == nil || !strings.Contains(err.Error(), errNotAgent.Error()) {
		t.Errorf("toward an agent of another token: %v", err)
	}
	waitLog(t, alog, "relayed test failed", "toward="+other, "authentication failed")

	// b busy with a test of its own.
	started := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		var once bool
		_, err := Run(context.Background(), Config{Peer: b, Token: testToken, Progress: func(e result.Event) {
			if e.Event == "interval" && !once {
				once = true
				close(started)
			}
		}, Test: Test{Params: engine.Params{Duration: 2 * time.Second, Interval: 100 * time.Millisecond}}})
		first <- err
	}()
	<-started
	_, err = relay(context.Background(), a, b, Config{})
	if err == nil || !strings.Contains(err.Error(), "busy") {
		t.Errorf("toward a busy agent: %v", err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if _, err := relay(context.Background(), a, b, Config{}); err != nil {
		t.Errorf("after the troubles: %v", err)
	}
}

// TestRelayBusy: an agent running a relayed test is busy to other
// clients, and a relay to an agent that is busy says so.
func TestRelayBusy(t *testing.T) {
	a, _ := agent(t, &Server{})
	b, _ := agent(t, &Server{})
	started := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		var once bool
		_, err := relay(context.Background(), a, b, Config{Progress: func(e result.Event) {
			if e.Event == "interval" && !once {
				once = true
				close(started)
			}
		}, Test: Test{Params: engine.Params{Duration: 2 * time.Second, Interval: 100 * time.Millisecond}}})
		first <- err
	}()
	<-started
	_, err := Run(context.Background(), Config{Peer: a, Token: testToken, Test: Test{Params: engine.Params{Duration: time.Second}}})
	var pe *PeerError
	if !errors.As(err, &pe) || !pe.Busy {
		t.Errorf("a test to the relaying agent: %v, want busy", err)
	}
	_, err = relay(context.Background(), a, b, Config{})
	if !errors.As(err, &pe) || !pe.Busy {
		t.Errorf("a second relay: %v, want busy", err)
	}
	if host, err := Probe(context.Background(), nil, a, testToken); err != nil || host.Hostname == "" {
		t.Errorf("a busy agent's probe: %+v, %v", host, err)
	}
	if err := <-first; err != nil {
		t.Errorf("the first relay: %v", err)
	}
}

// TestRelayControllerGone: a controller that hangs up mid-test ends the
// relayed test at both agents (not at its length), and both serve the
// next one.
func TestRelayControllerGone(t *testing.T) {
	a, alog := agent(t, &Server{})
	b, blog := agent(t, &Server{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	began := time.Now()
	go func() {
		_, err := relay(ctx, a, b, Config{Progress: func(e result.Event) {
			if e.Event == "interval" {
				cancel()
			}
		}, Test: Test{Params: engine.Params{Duration: 20 * time.Second, Interval: 100 * time.Millisecond}}})
		done <- err
	}()
	if err := <-done; err == nil || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled relay: %v", err)
	}
	waitLog(t, alog, "relayed test failed", "the controller ended the relayed test")
	waitLog(t, blog, "test aborted")
	if _, err := relay(context.Background(), a, b, Config{}); err != nil {
		t.Errorf("the next relay: %v", err)
	}
	// Not a duration assertion on the test: a bound on how the cut-off
	// works (a 20 s test cut at its first interval, then a 1 s test).
	if time.Since(began) > 15*time.Second {
		t.Errorf("the cut-off test ran on: %s", time.Since(began))
	}
}

// TestProbe: a probe authenticates and leaves without the agent counting
// it as a refused test; a wrong token and a closed port fail.
func TestProbe(t *testing.T) {
	a, alog := agent(t, &Server{})
	host, err := Probe(context.Background(), nil, a, testToken)
	if err != nil || host.Hostname == "" || len(host.CPUs) == 0 {
		t.Fatalf("probe: %+v, %v", host, err)
	}
	if _, err := Probe(context.Background(), nil, a, []byte("c0ffee4b1d9e77a3058f62d1e94b0c7a")); !errors.Is(err, ErrAuth) {
		t.Errorf("a probe with another token: %v", err)
	}
	if _, err := relay(context.Background(), a, a, Config{}); err == nil || !strings.Contains(err.Error(), "busy") {
		t.Errorf("a relay toward itself: %v, want busy", err)
	}
	if strings.Contains(alog.String(), "left without asking") {
		t.Errorf("a probe was logged as a refused test:\n%s", alog.String())
	}
}
