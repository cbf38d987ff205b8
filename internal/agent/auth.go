package agent

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/linerate/linerate/internal/result"
)

// nonceSize is the size of both handshake nonces.
const nonceSize = 32

// Handshake labels keep the two MACs apart: an agent never computes a MAC
// a client could present, so it cannot be used as an oracle against
// itself, nor can a fake agent reflect a client's own MAC back to it.
const (
	clientLabel = "linerate/2 client"
	serverLabel = "linerate/2 server"
)

// handshakeTimeout bounds each handshake read and write; the agent's
// budget for a connection to authenticate (Server.authBudget) bounds
// them all together.
const handshakeTimeout = 5 * time.Second

// Handshake errors.
var (
	// ErrAuth reports a MAC that does not match: a wrong token, or a
	// handshake recorded from another connection.
	ErrAuth = errors.New("authentication failed")
	// errReplay reports a client nonce the agent has seen before.
	errReplay = errors.New("replayed handshake")
	// errVersion reports a peer speaking another protocol version.
	errVersion = errors.New("protocol version mismatch")
)

// mac is a handshake proof: HMAC-SHA256(token, label ‖ agent nonce ‖
// client nonce ‖ extra). The nonces have a fixed length, so the
// concatenation is unambiguous; extra is the agent's host facts in its
// welcome, which the proof covers too.
func mac(token []byte, label string, serverNonce, clientNonce []byte, extra ...[]byte) []byte {
	h := hmac.New(sha256.New, token)
	h.Write([]byte(label))
	h.Write(serverNonce)
	h.Write(clientNonce)
	for _, e := range extra {
		h.Write(e)
	}
	return h.Sum(nil)
}

func newNonce() ([]byte, error) {
	return randomBytes(nonceSize)
}

func randomBytes(n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("reading random bytes: %w", err)
	}
	return b, nil
}

// credentials are what a client authenticates with: its token (a shared
// token, a fleet's secret or a node key), or a relay ticket and its key.
type credentials struct {
	token     []byte
	ticket    *relayTicket
	ticketKey []byte
	// mesh says a session is for mesh control, or a mesh peer's test
	// whose key is meshKey (meshkeys.go).
	mesh    *meshAuth
	meshKey []byte
}

// clientHandshake authenticates to the agent with token and checks that
// the agent holds the key too. It returns what the agent said about its
// host and the session's keys; c's frames are MACed from then on.
func clientHandshake(c *conn, token []byte) (*result.HostInfo, sessionKeys, error) {
	return clientHandshakeWith(c, credentials{token: token})
}

// clientHandshakeWith is clientHandshake with a ticket's credentials as
// well. The session's keys name the agent's node (its key's).
func clientHandshakeWith(c *conn, cred credentials) (*result.HostInfo, sessionKeys, error) {
	if err := c.send(helloMsg{Type: msgHello, Version: protoVersion}, handshakeTimeout); err != nil {
		return nil, sessionKeys{}, fmt.Errorf("sending hello: %w", err)
	}
	var ch challengeMsg
	if err := c.expect(msgChallenge, &ch, handshakeTimeout); err != nil {
		return nil, sessionKeys{}, fmt.Errorf("reading the challenge: %w", err)
	}
	if ch.Version != protoVersion {
		return nil, sessionKeys{}, fmt.Errorf("%w: the agent speaks protocol %d, this client %d: run the same linerate version on both ends", errVersion, ch.Version, protoVersion)
	}
	if len(ch.Nonce) != nonceSize {
		return nil, sessionKeys{}, fmt.Errorf("%w: challenge nonce of %d bytes", errBadMessage, len(ch.Nonce))
	}
	if ch.Node != "" {
		if err := checkNodeName(ch.Node); err != nil {
			return nil, sessionKeys{}, fmt.Errorf("%w: the agent's %v", errBadMessage, err)
		}
	}
	var key []byte
	if cred.ticket != nil {
		if ch.Node != cred.ticket.To {
			return nil, sessionKeys{}, fmt.Errorf("%w: the ticket is for node %s, the peer says it is node %q", ErrAuth, cred.ticket.To, ch.Node)
		}
		key = cred.ticketKey
	} else if cred.mesh != nil && !cred.mesh.Control {
		key = cred.meshKey
	} else {
		k, err := keyFor(cred.token, ch.Node)
		if err != nil {
			return nil, sessionKeys{}, err
		}
		key = k.secret
	}
	cn, err := newNonce()
	if err != nil {
		return nil, sessionKeys{}, err
	}
	if err := c.send(authMsg{Type: msgAuth, Nonce: cn, MAC: mac(key, clientLabel, ch.Nonce, cn), Ticket: cred.ticket, Mesh: cred.mesh}, handshakeTimeout); err != nil {
		return nil, sessionKeys{}, fmt.Errorf("sending auth: %w", err)
	}
	var w welcomeMsg
	c.limit = maxFrame // the agent's facts: hundreds of CPUs and IRQs
	if err := c.expect(msgWelcome, &w, handshakeTimeout); err != nil {
		var pe *PeerError
		if errors.As(err, &pe) && !pe.Busy {
			return nil, sessionKeys{}, fmt.Errorf("%w: the agent says %q: check that both ends use the same token (or the fleet's secret and a node key of it)", ErrAuth, pe.Reason)
		}
		return nil, sessionKeys{}, fmt.Errorf("reading welcome: %w", err)
	}
	if !hmac.Equal(w.MAC, mac(key, serverLabel, ch.Nonce, cn, w.Host)) {
		return nil, sessionKeys{}, fmt.Errorf("%w: the agent could not prove it holds the token (a different token, or not a linerate agent)", ErrAuth)
	}
	var host result.HostInfo
	if err := json.Unmarshal(w.Host, &host); err != nil {
		return nil, sessionKeys{}, fmt.Errorf("%w: the agent's host facts: %v", errBadMessage, err)
	}
	keys, err := deriveKeys(key, ch.Nonce, cn)
	if err != nil {
		return nil, sessionKeys{}, err
	}
	keys.node = ch.Node
	c.seal(keys, false)
	if tc, ok := c.c.(*net.TCPConn); ok && cred.ticket == nil {
		rememberNode(tc.RemoteAddr().String(), ch.Node)
	}
	return &host, keys, nil
}

// agentAuth is what the agent authenticates clients with: its key, and
// what it needs to check a relay ticket.
type agentAuth struct {
	key     authKey
	seen    *nonceLog
	tickets *ticketLog
	local   netip.AddrPort // the address the client reached
	now     time.Time
	// mesh is the key of a mesh peer's test (meshkeys.go).
	mesh func(m *meshAuth) ([]byte, error)
}

// serverHandshake checks a client's proof, up to the agent's own proof
// (welcome), which sendWelcome sends: the agent leaves the connection
// budget in between, and only then reads its host's facts for the
// client. Client nonces of successful handshakes go into seen, so that a
// recorded handshake replayed later is named as such in the log.
func serverHandshake(c *conn, token []byte, seen *nonceLog) (*handshake, error) {
	k, err := parseKey(token)
	if err != nil {
		return nil, err
	}
	return serverHandshakeWith(c, agentAuth{key: k, seen: seen, tickets: &ticketLog{}, now: time.Now()})
}

func serverHandshakeWith(c *conn, a agentAuth) (*handshake, error) {
	var h helloMsg
	if err := c.expect(msgHello, &h, handshakeTimeout); err != nil {
		return nil, fmt.Errorf("reading hello: %w", err)
	}
	sn, err := newNonce()
	if err != nil {
		return nil, err
	}
	// The challenge names the agent's version even to a client of
	// another: an old client then says which ends to upgrade.
	if err := c.send(challengeMsg{Type: msgChallenge, Version: protoVersion, Nonce: sn, Node: a.key.node}, handshakeTimeout); err != nil {
		return nil, fmt.Errorf("sending the challenge: %w", err)
	}
	if h.Version != protoVersion {
		return nil, fmt.Errorf("%w: the client speaks protocol %d, the agent %d (run the same linerate version on both ends)", errVersion, h.Version, protoVersion)
	}
	var am authMsg
	if err := c.expect(msgAuth, &am, handshakeTimeout); err != nil {
		return nil, fmt.Errorf("reading auth: %w", err)
	}
	// The length first: everything below assumes it.
	if len(am.Nonce) != nonceSize {
		return nil, fmt.Errorf("%w: client nonce of %d bytes", errBadMessage, len(am.Nonce))
	}
	// A replay would fail the MAC check below anyway (our nonce is
	// fresh); looking it up first only names the failure.
	if a.seen.has(am.Nonce) {
		return nil, fmt.Errorf("%w: its client nonce was used by an earlier handshake", errReplay)
	}
	key := a.key.secret
	if am.Mesh != nil && am.Ticket != nil {
		return nil, fmt.Errorf("%w: auth with both a relay ticket and a mesh's", errBadMessage)
	}
	if am.Mesh != nil && !am.Mesh.Control {
		if a.mesh == nil {
			return nil, fmt.Errorf("%w: a mesh test, and this agent is in no mesh", ErrAuth)
		}
		k, err := a.mesh(am.Mesh)
		if err != nil {
			return nil, err
		}
		key = k
	}
	if am.Ticket != nil {
		if err := am.Ticket.check(a.key.node, a.local, a.now); err != nil {
			return nil, err
		}
		key = am.Ticket.key(a.key.secret)
	}
	if !hmac.Equal(am.MAC, mac(key, clientLabel, sn, am.Nonce)) {
		return nil, fmt.Errorf("%w: wrong MAC (a wrong token, or a handshake recorded from another connection)", ErrAuth)
	}
	// Only after the MAC: only key holders change what the agent
	// remembers.
	if am.Ticket != nil && !a.tickets.use(am.Ticket, a.now) {
		return nil, fmt.Errorf("%w: the relay ticket was used before", errReplay)
	}
	a.seen.add(am.Nonce)
	keys, err := deriveKeys(key, sn, am.Nonce)
	if err != nil {
		return nil, err
	}
	c.limit = maxFrame
	return &handshake{token: key, sn: sn, cn: am.Nonce, keys: keys, ticket: am.Ticket, mesh: am.Mesh}, nil
}

// handshake is an authenticated client's handshake, until the welcome.
type handshake struct {
	token, sn, cn []byte
	keys          sessionKeys
	// ticket is the relay ticket the client came with, if any: the
	// session may run one test and nothing else.
	ticket *relayTicket
	// mesh is what a mesh session is for: control, or a mesh peer's
	// test (which, as a ticket's, may run one bounded test only).
	mesh *meshAuth
}

// sendWelcome proves the agent holds the token and tells the client its
// host's facts, under the proof; c's frames are MACed from then on.
func (hs *handshake) sendWelcome(c *conn, host result.HostInfo) error {
	facts, err := json.Marshal(host)
	if err != nil {
		return fmt.Errorf("encoding the host facts: %w", err)
	}
	w := welcomeMsg{Type: msgWelcome, MAC: mac(hs.token, serverLabel, hs.sn, hs.cn, facts), Host: facts}
	if err := c.send(w, handshakeTimeout); err != nil {
		return fmt.Errorf("sending welcome: %w", err)
	}
	c.seal(hs.keys, true)
	return nil
}

// nonceLog remembers the client nonces of the last nonceLogSize
// successful handshakes.
type nonceLog struct {
	mu   sync.Mutex
	set  map[[nonceSize]byte]bool
	ring [][nonceSize]byte
	next int
}

const nonceLogSize = 4096

func (l *nonceLog) has(n []byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.set[[nonceSize]byte(n)]
}

func (l *nonceLog) add(n []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.set == nil {
		l.set = map[[nonceSize]byte]bool{}
		l.ring = make([][nonceSize]byte, nonceLogSize)
	}
	k := [nonceSize]byte(n)
	delete(l.set, l.ring[l.next])
	l.ring[l.next] = k
	l.next = (l.next + 1) % nonceLogSize
	l.set[k] = true
}
