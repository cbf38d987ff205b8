package agent

import (
	"net/netip"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/result"
)

// FuzzRelay feeds the agent's relay decoder, bounds and peer policy: what
// passes must be a test within the engine's bounds and this agent's
// duration, toward one host's IP address and a port, and what the policy
// takes an agent of the fleet's network on the agent port, never a
// loopback, link-local or own address.
func FuzzRelay(f *testing.F) {
	for _, s := range []string{
		`{"type":"relay","peer":"198.18.0.2:5301","streams":1,"duration_ms":1000,"interval_ms":1000,"direction":"send"}`,
		`{"type":"relay","peer":"[fe80::1%lab0]:5301","streams":4,"duration_ms":2000,"omit_ms":500,"interval_ms":100,"direction":"bidir","window":4194304,"congestion":"bbr","zerocopy":"sendfile"}`,
		`{"type":"relay","peer":"localhost:5301","streams":1,"duration_ms":1000,"interval_ms":1000,"direction":"send"}`,
		`{"type":"relay","peer":"127.0.0.1:5301","streams":1,"duration_ms":1000,"interval_ms":1000,"direction":"receive"}`,
		`{"type":"relay","peer":"0.0.0.0:0","streams":129,"duration_ms":9223372036854775807,"interval_ms":1,"direction":"x"}`,
		`{"type":"relay","peer":"[::ffff:127.0.0.1]:1","streams":1,"duration_ms":100,"interval_ms":100,"direction":"send"}`,
		`{"type":"relay","peer":"255.255.255.255:5301","streams":1,"duration_ms":1000,"interval_ms":1000,"direction":"send"}`,
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, loopback bool) {
		local := netip.MustParseAddr("198.18.0.1")
		if loopback {
			local = netip.MustParseAddr("127.0.0.1")
		}
		typ, err := messageType(body)
		if err != nil {
			return
		}
		var m relayMsg
		if decodeAs(typ, body, msgRelay, &m) != nil {
			return
		}
		peer, err := m.validate(time.Hour)
		if err != nil {
			return
		}
		p := m.request().params()
		switch {
		case p.Streams < 1 || p.Streams > engine.MaxStreams:
			t.Fatalf("streams %d passed", p.Streams)
		case p.Duration < minDuration || p.Duration > time.Hour || p.Omit < 0 || p.Omit > time.Hour:
			t.Fatalf("duration %s, omit %s passed", p.Duration, p.Omit)
		case p.Interval < MinInterval || p.Interval > MaxInterval:
			t.Fatalf("interval %s passed", p.Interval)
		case relayLength(p) <= p.Duration || relayLength(p) > 3*time.Hour:
			t.Fatalf("relay length %s for %s", relayLength(p), p.Duration)
		}
		a := peer.Addr()
		switch {
		case !a.IsValid() || a.Is4In6() || peer.Port() == 0:
			t.Fatalf("peer %s passed", peer)
		case a.IsUnspecified() || a.IsMulticast() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
			t.Fatalf("peer %s (not one host) passed", peer)
		}
		// Where the agent relays: the fleet's network, the agent port.
		srv := &Server{RelayPeers: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/15")},
			ownAddrs: func() []netip.Addr { return []netip.Addr{netip.MustParseAddr("198.18.0.1")} }}
		if srv.relayPolicy(peer, netip.AddrPortFrom(local, DefaultPort)) == nil {
			switch {
			case peer.Port() != DefaultPort:
				t.Fatalf("peer %s on another port than the agent's passed", peer)
			case a.IsLoopback() || a.IsLinkLocalUnicast() || a == netip.MustParseAddr("198.18.0.1") || a == local:
				t.Fatalf("peer %s (loopback, link-local or own) passed for a controller at %s", peer, local)
			case !netip.MustParsePrefix("198.18.0.0/15").Contains(a):
				t.Fatalf("peer %s outside the relay peers passed", peer)
			}
		}
		if n := maxRelayIntervals(m); n < 1 || n > maxIntervals+2 {
			t.Fatalf("%d intervals allowed", n)
		}
	})
}

// FuzzRelayMessages feeds the decoders of what a controller reads during
// a relayed test (relay_start, relay_interval, relay_end, error, busy):
// none may panic, and what passes its check is within the bounds of the
// test asked for.
func FuzzRelayMessages(f *testing.F) {
	for _, s := range []string{
		`{"type":"relay_start","start":{"peer":"198.18.0.2","port":5301,"streams":2,"direction":"send","connections":[{"id":1},{"id":2}],"client":{"hostname":"h01","cpus":[0,1]},"server":{"hostname":"h02"}}}`,
		`{"type":"relay_start","start":{"streams":2,"direction":"send","connections":[{"id":1}],"notes":["x"]}}`,
		`{"type":"relay_interval","index":0,"interval":{"start":0,"end":1,"streams":[{"id":1,"bytes":100},{"id":2,"bytes":5}],"sum":{"bytes":105,"bits_per_second":840},"cpu":{"client":{"0":{"busy":50}},"server":{}}}}`,
		`{"type":"relay_interval","index":99,"interval":{"start":2,"end":1,"streams":[]}}`,
		`{"type":"relay_interval","index":-1,"interval":{"start":0,"end":1,"streams":[{},{}],"sum":{"bits_per_second":-1}}}`,
		`{"type":"relay_end","intervals":4,"end":{"seconds":1,"sum_sent":{"bytes":10,"bits_per_second":80},"sum_received":{"bytes":10,"bits_per_second":80},"streams":[{"id":1},{"id":2}],"cpu":{"client_seconds":0.1,"server_seconds":0.1}}}`,
		`{"type":"relay_end","intervals":100000,"end":{"seconds":-1,"streams":[{},{},{}],"errors":["a","b","c","d","e"]}}`,
		`{"type":"error","reason":"the test toward 198.18.0.2:5301: connection refused"}`,
		`{"type":"busy","reason":"a test from 198.18.0.254:40000 is running"}`,
	} {
		f.Add([]byte(s), uint8(2))
	}
	f.Fuzz(func(t *testing.T, body []byte, n uint8) {
		r := relayMsg{Type: msgRelay, Peer: "198.18.0.2:5301", testWire: testWire{Params: engine.Params{Streams: int(n%8) + 1,
			Direction: []result.Direction{result.Send, result.Receive, result.Bidir}[n%3]}, DurationMS: 1000, OmitMS: 250, IntervalMS: 250}}
		conns := r.request().params().Connections()
		typ, err := messageType(body)
		if err != nil {
			return
		}
		if m, err := decode(typ, body, msgRelayStart, func(m *relayStartMsg) error { return m.check(r) }); err == nil {
			if m.Start.Streams != r.Streams || len(m.Start.Connections) != conns || len(m.Start.Notes) > maxNotes {
				t.Fatalf("relay_start passed: %+v", m.Start)
			}
		}
		if m, err := decode(typ, body, msgRelayInterval, func(m *relayIntervalMsg) error { return m.check(r) }); err == nil {
			if m.Index < 0 || m.Index >= maxRelayIntervals(r) || len(m.Interval.Streams) != conns || m.Interval.End < m.Interval.Start {
				t.Fatalf("relay_interval passed: %+v", m)
			}
		}
		if m, err := decode(typ, body, msgRelayEnd, func(m *relayEndMsg) error { return m.check(r) }); err == nil {
			if m.Intervals < 0 || m.Intervals > maxRelayIntervals(r) || len(m.End.Streams) > conns || m.End.Seconds < 0 {
				t.Fatalf("relay_end passed: %+v", m)
			}
		}
	})
}
