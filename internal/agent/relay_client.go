package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/linerate/linerate/internal/result"
)

// DialFunc opens a connection, as net.Dialer.DialContext does. A fleet
// controller of a lab dials from the lab's switch with one.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// Remote is a native test that one agent runs toward another, for a
// controller that is neither end (relay.go).
type Remote struct {
	// From is the agent that runs the test's client side: "host",
	// "host:port", "[v6addr]:port".
	From string
	// Dial connects to From; nil is a net.Dialer.
	Dial DialFunc
	// Config is the test: Peer is the agent From tests against, as an
	// IP address and port; Token is the fleet's: the token its agents
	// share, or the secret their node keys come from (then the
	// controller gives From a ticket for Peer, nodekey.go). Each end
	// places its own threads: Pinning must be empty. Host and Logger are
	// not used.
	Config
	// PeerNode is the node of Peer's agent, when its key is a node key;
	// "" means the node this process last authenticated to at Peer, or,
	// failing that, a probe of Peer asks.
	PeerNode string
}

// RunRemote asks the agent at r.From to run r's test toward r.Peer and
// returns the test's result, with the client being From's host.
// Progress, if set, sees the start, each interval and the end as From
// relays them. Cancelling ctx ends the test at both agents.
func RunRemote(ctx context.Context, r Remote) (*result.Result, error) {
	if !r.Pinning.Auto() {
		return nil, errors.New("a relayed test places its threads itself: no CPUs can be given")
	}
	m := relayMsg{Type: msgRelay, Peer: r.Peer, testWire: wireTest(r.EngineParams()), Apart: r.Apart}
	if err := m.request().validate(24 * time.Hour); err != nil { // the agent applies its own, lower bound
		return nil, err
	}
	peer, err := netip.ParseAddrPort(r.Peer)
	if err != nil {
		return nil, fmt.Errorf("peer %q: a relayed test needs the peer's IP address and port", r.Peer)
	}
	peer = netip.AddrPortFrom(peer.Addr().Unmap(), peer.Port())
	if err := clientToken(r.Token); err != nil {
		return nil, err
	}
	c, nc, err := dialAgent(ctx, r.Dial, r.From)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	res, err := runRemote(ctx, c, r, m, peer)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("test interrupted: %w", context.Cause(ctx))
	}
	if err != nil {
		return nil, fmt.Errorf("the agent at %s: %w", WithPort(r.From, DefaultPort), err)
	}
	return res, nil
}

// dialAgent connects to the agent at addr (DefaultPort when it names
// none).
func dialAgent(ctx context.Context, dial DialFunc, addr string) (*conn, net.Conn, error) {
	addr = WithPort(addr, DefaultPort)
	if dial == nil {
		d := net.Dialer{Timeout: dialTimeout}
		dial = d.DialContext
	}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	nc, err := dial(dctx, "tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to the agent at %s: %w (is 'linerate serve' running there?)", addr, err)
	}
	return newConn(nc), nc, nil
}

func runRemote(ctx context.Context, c *conn, r Remote, m relayMsg, peer netip.AddrPort) (*result.Result, error) {
	_, keys, err := clientHandshake(c, r.Token)
	if err != nil {
		return nil, err
	}
	if keys.node != "" { // node keys: From needs a ticket for Peer
		to, err := r.peerNode(ctx)
		if err != nil {
			return nil, err
		}
		fleet, err := parseKey(r.Token)
		if err != nil {
			return nil, err
		}
		if fleet.node != "" {
			return nil, fmt.Errorf("relaying between agents of node keys needs the fleet's secret, not node %s's key", fleet.node)
		}
		t, tk, err := newTicket(fleet.secret, keys.node, to, peer, time.Now())
		if err != nil {
			return nil, err
		}
		m.Ticket, m.TicketKey = t, t.mask(keys.wrap, tk)
	}
	if err := c.send(m, handshakeTimeout); err != nil {
		return nil, fmt.Errorf("sending the relay request: %w", err)
	}
	res := &result.Result{Schema: result.Schema, Engine: "native", Intervals: []result.Interval{}}
	var started bool
	got := map[int]result.Interval{}
	deadline := time.Now().Add(relayLength(m.request().params()))
	for {
		typ, body, err := c.recv(time.Until(deadline))
		if err != nil {
			if isEOF(err) {
				return nil, errors.New("the agent hung up mid-test (did it die?)")
			}
			return nil, err
		}
		switch typ {
		case msgRelayStart:
			s, err := decode(typ, body, msgRelayStart, func(s *relayStartMsg) error { return s.check(m) })
			if err != nil {
				return nil, err
			}
			res.Start, res.RunID = s.Start, s.Start.Timestamp.UnixMilli()
			if !started {
				r.emit(result.Event{Event: "start", Data: &res.Start})
			}
			started = true
		case msgRelayInterval:
			iv, err := decode(typ, body, msgRelayInterval, func(iv *relayIntervalMsg) error { return iv.check(m) })
			if err != nil {
				return nil, err
			}
			_, seen := got[iv.Index]
			got[iv.Index] = iv.Interval
			if !seen {
				r.emit(result.Event{Event: "interval", Data: &iv.Interval})
			}
		default:
			e, err := decode(typ, body, msgRelayEnd, func(e *relayEndMsg) error { return e.check(m) })
			if err != nil {
				return nil, err
			}
			if !started {
				return nil, fmt.Errorf("%w: relay_end before relay_start", errBadMessage)
			}
			for i := range e.Intervals {
				iv, ok := got[i]
				if !ok {
					return nil, fmt.Errorf("%w: relay_end after %d intervals, interval %d never came", errBadMessage, e.Intervals, i)
				}
				res.Intervals = append(res.Intervals, iv)
			}
			if len(got) != e.Intervals {
				return nil, fmt.Errorf("%w: relay_end after %d intervals, %d came", errBadMessage, e.Intervals, len(got))
			}
			res.End = e.End
			r.emit(result.Event{Event: "end", Data: &res.End})
			return res, nil
		}
	}
}

// peerNode is the node of the peer's agent: PeerNode, or what the peer's
// agent said when this process last authenticated to it, or what it says
// to a probe now.
func (r Remote) peerNode(ctx context.Context) (string, error) {
	if r.PeerNode != "" {
		return r.PeerNode, nil
	}
	if n, ok := knownNode(r.Peer); ok && n != "" {
		return n, nil
	}
	c, nc, err := dialAgent(ctx, r.Dial, r.Peer)
	if err != nil {
		return "", fmt.Errorf("naming the peer's node: %w", err)
	}
	defer nc.Close()
	_, keys, err := clientHandshake(c, r.Token)
	if err != nil {
		return "", fmt.Errorf("naming the peer's node: the agent at %s: %w", r.Peer, err)
	}
	c.send(bareMsg{Type: msgBye}, handshakeTimeout)
	if keys.node == "" {
		return "", fmt.Errorf("the agent at %s holds a shared token, not a node key: give the fleet's agents keys of one kind", r.Peer)
	}
	return keys.node, nil
}

func (r Remote) emit(e result.Event) {
	if r.Progress != nil {
		r.Progress(e)
	}
}

// Probe authenticates to the agent at addr and leaves at once (bye): it
// says whether the agent is up, holds the token, and what its host is. An
// agent busy with a test answers too.
func Probe(ctx context.Context, dial DialFunc, addr string, token []byte) (*result.HostInfo, error) {
	if err := clientToken(token); err != nil {
		return nil, err
	}
	c, nc, err := dialAgent(ctx, dial, addr)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	host, _, err := clientHandshake(c, token)
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, fmt.Errorf("the agent at %s: %w", WithPort(addr, DefaultPort), err)
	}
	c.send(bareMsg{Type: msgBye}, handshakeTimeout) // its answer, if any, does not matter
	return host, nil
}

// FetchDoctorVia is FetchDoctor over a connection made with dial (nil: a
// net.Dialer): a fleet controller reaches its agents through one.
func FetchDoctorVia(ctx context.Context, dial DialFunc, peer string, token []byte) (json.RawMessage, *result.HostInfo, error) {
	if err := clientToken(token); err != nil {
		return nil, nil, err
	}
	c, nc, err := dialAgent(ctx, dial, peer)
	if err != nil {
		return nil, nil, err
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	rep, host, err := fetchDoctor(c, token)
	if err != nil && ctx.Err() != nil {
		return nil, nil, fmt.Errorf("asking the agent for its doctor report: %w", context.Cause(ctx))
	}
	return rep, host, err
}
