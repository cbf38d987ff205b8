package agent

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Where a relayed test may go. Whoever can ask an agent for a relay makes
// it open a TCP connection and send a hello: without bounds, a connect
// scanner of the agent's networks and a reader of services' first bytes
// ("SSH-", "HTTP"), from every agent of a fleet. So an agent relays only
// to the fleet's agents:
//
//   - on the agent port (Server.RelayPort; by default the port the
//     controller reached this agent on, which a fleet's agents share);
//   - at an address of Server.RelayPeers, the fleet's hosts, which the
//     launcher that resolved them passes (serve --relay-peers); without
//     the list the agent takes no relayed test;
//   - never at a loopback or link-local address (metadata services live
//     there), nor at one of this host's own addresses (its services bound
//     to every address).
//
// The controller learns no more than that: a refused peer gets one text
// whatever the rule (errRelayRefused), and a peer that does not prove it
// is an agent of the fleet, whether it is closed, silent, a web server or
// an agent of another token, gets another (errNotAgent). The agent's log
// has the detail. Relays that fail so are rate-limited (relayFailures).

// errRelayRefused is all a controller hears of a peer the agent does not
// relay to.
var errRelayRefused = errors.New("the agent relays only to the fleet's agents (serve --relay-peers), on the agent port: not to that peer")

// errNotAgent is all a controller hears of a relayed test whose peer did
// not complete the handshake.
var errNotAgent = errors.New("the peer did not answer as a linerate agent of this fleet")

// notAgentError marks an error of Run from before the peer proved it
// holds the key: the connect and the handshake. runRelay tells the
// controller errNotAgent instead.
type notAgentError struct{ err error }

func (e *notAgentError) Error() string { return e.err.Error() }
func (e *notAgentError) Unwrap() error { return e.err }

// ParseRelayPeers reads serve --relay-peers: networks and addresses
// separated by commas ("198.18.0.0/15,10.1.2.3,fd00::/64"). An address
// alone is a network of one host.
func ParseRelayPeers(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		var p netip.Prefix
		if strings.Contains(f, "/") {
			var err error
			if p, err = netip.ParsePrefix(f); err != nil {
				return nil, fmt.Errorf("--relay-peers: %q is not a network (ADDRESS/BITS) or an address", f)
			}
		} else {
			a, err := netip.ParseAddr(f)
			if err != nil || a.Zone() != "" {
				return nil, fmt.Errorf("--relay-peers: %q is not a network (ADDRESS/BITS) or an address", f)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
		}
		out = append(out, p.Masked())
	}
	if len(out) == 0 {
		return nil, errors.New("--relay-peers: no network given")
	}
	return out, nil
}

// RelayPeersArg writes addrs (a fleet's hosts, as its launcher resolved
// them) as the value of serve --relay-peers.
func RelayPeersArg(addrs []netip.Addr) string {
	parts := make([]string, 0, len(addrs))
	for _, a := range addrs {
		a = a.Unmap().WithZone("")
		parts = append(parts, netip.PrefixFrom(a, a.BitLen()).String())
	}
	return strings.Join(parts, ",")
}

// relayPolicy says why the agent does not relay toward peer (nil: it
// does), local being the address the controller reached it on. The
// reason is for the agent's log only.
func (s *Server) relayPolicy(peer, local netip.AddrPort) error {
	a := peer.Addr().Unmap().WithZone("")
	port := s.RelayPort
	if port == 0 {
		port = int(local.Port())
	}
	switch {
	case len(s.RelayPeers) == 0:
		return errors.New("no --relay-peers: this agent takes no relayed test")
	case int(peer.Port()) != port && !s.relayAnyPort:
		return fmt.Errorf("port %d is not the agent port %d", peer.Port(), port)
	case a.IsLoopback() && !s.LoopbackFleet:
		return errors.New("a loopback address")
	case a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast():
		return errors.New("a link-local address (metadata services live there)")
	case !a.IsLoopback() && s.isOwn(a, local.Addr()):
		return errors.New("one of this host's own addresses")
	}
	for _, p := range s.RelayPeers {
		if p.Contains(a) {
			return nil
		}
	}
	return fmt.Errorf("not in --relay-peers %s", prefixesText(s.RelayPeers))
}

// isOwn reports whether a is one of this host's addresses.
func (s *Server) isOwn(a, local netip.Addr) bool {
	if a == local.Unmap().WithZone("") {
		return true
	}
	own := s.ownAddrs
	if own == nil {
		own = interfaceAddrs
	}
	for _, o := range own() {
		if o.Unmap().WithZone("") == a {
			return true
		}
	}
	return false
}

// interfaceAddrs lists this host's addresses (in the agent's network
// namespace); none when the kernel will not say, and then the other rules
// still hold.
func interfaceAddrs() []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, ad := range addrs {
		if p, err := netip.ParsePrefix(ad.String()); err == nil {
			out = append(out, p.Addr())
		}
	}
	return out
}

func prefixesText(ps []netip.Prefix) string {
	const most = 8
	var parts []string
	for i, p := range ps {
		if i == most {
			parts = append(parts, fmt.Sprintf("… (%d in all)", len(ps)))
			break
		}
		parts = append(parts, p.String())
	}
	return strings.Join(parts, ",")
}

// relayFailures rate-limits relayed tests whose peer did not answer as
// an agent: a bucket of burst failures, one more every refill. Once it is
// empty the agent refuses relays until a failure's worth has refilled, so
// even a holder of the token cannot probe addresses faster than that.
type relayFailures struct {
	burst  float64
	refill time.Duration

	mu     sync.Mutex
	tokens float64
	at     time.Time
}

// Defaults of relayFailures: 5 failed relays at once, then one per 20 s.
const (
	relayFailBurst  = 5
	relayFailRefill = 20 * time.Second
)

func newRelayFailures(burst int, refill time.Duration) *relayFailures {
	return &relayFailures{burst: float64(burst), refill: refill, tokens: float64(burst)}
}

func (r *relayFailures) fill(now time.Time) {
	if !r.at.IsZero() {
		r.tokens = min(r.burst, r.tokens+float64(now.Sub(r.at))/float64(r.refill))
	}
	r.at = now
}

// wait is how long until a relay may be tried (0: now).
func (r *relayFailures) wait(now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fill(now)
	if r.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - r.tokens) * float64(r.refill))
}

// failed counts one failed relay.
func (r *relayFailures) failed(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fill(now)
	r.tokens = max(r.tokens-1, 0)
}
