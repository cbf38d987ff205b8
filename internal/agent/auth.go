package agent

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/linerate/linerate/internal/result"
)

// nonceSize is the size of both handshake nonces and of the data cookie.
const nonceSize = 32

// Handshake labels keep the two MACs apart: an agent never computes a MAC
// a client could present, so it cannot be used as an oracle against
// itself.
const (
	clientLabel = "linerate/1 client"
	serverLabel = "linerate/1 server"
)

// handshakeTimeout bounds each handshake read: a peer that stalls loses
// its connection, it does not hold the agent.
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

func mac(token []byte, label string, serverNonce, clientNonce []byte) []byte {
	h := hmac.New(sha256.New, token)
	h.Write([]byte(label))
	h.Write(serverNonce)
	h.Write(clientNonce)
	return h.Sum(nil)
}

func newNonce() ([]byte, error) {
	b := make([]byte, nonceSize)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("reading random bytes: %w", err)
	}
	return b, nil
}

// clientHandshake authenticates to the agent and checks that the agent
// holds the token too. It returns what the agent said about its host.
func clientHandshake(c *conn, token []byte) (*result.HostInfo, error) {
	if err := c.send(helloMsg{Type: msgHello, Version: protoVersion}, handshakeTimeout); err != nil {
		return nil, fmt.Errorf("sending hello: %w", err)
	}
	var ch challengeMsg
	if err := c.expect(msgChallenge, &ch, handshakeTimeout); err != nil {
		return nil, fmt.Errorf("reading the challenge: %w", err)
	}
	if ch.Version != protoVersion {
		return nil, fmt.Errorf("the agent speaks protocol %d, this client %d: run the same linerate version on both ends", ch.Version, protoVersion)
	}
	if len(ch.Nonce) != nonceSize {
		return nil, fmt.Errorf("%w: challenge nonce of %d bytes", errBadMessage, len(ch.Nonce))
	}
	cn, err := newNonce()
	if err != nil {
		return nil, err
	}
	if err := c.send(authMsg{Type: msgAuth, Nonce: cn, MAC: mac(token, clientLabel, ch.Nonce, cn)}, handshakeTimeout); err != nil {
		return nil, fmt.Errorf("sending auth: %w", err)
	}
	var w welcomeMsg
	c.limit = maxFrame
	if err := c.expect(msgWelcome, &w, handshakeTimeout); err != nil {
		var pe *PeerError
		if errors.As(err, &pe) && !pe.Busy {
			return nil, fmt.Errorf("%w: the agent says %q: check that both ends use the same token", ErrAuth, pe.Reason)
		}
		return nil, fmt.Errorf("reading welcome: %w", err)
	}
	if !hmac.Equal(w.MAC, mac(token, serverLabel, ch.Nonce, cn)) {
		return nil, fmt.Errorf("%w: the agent could not prove it holds the token (a different token, or not a linerate agent)", ErrAuth)
	}
	return &w.Host, nil
}

// serverHandshake checks a client's proof, up to the agent's own proof
// (welcome), which sendWelcome sends: the agent leaves the connection
// budget in between, and only then reads its host's facts for the
// client. Client nonces of successful handshakes go into seen, so that a
// recorded handshake replayed later is named as such in the log.
func serverHandshake(c *conn, token []byte, seen *nonceLog) (*handshake, error) {
	var h helloMsg
	if err := c.expect(msgHello, &h, handshakeTimeout); err != nil {
		return nil, fmt.Errorf("reading hello: %w", err)
	}
	sn, err := newNonce()
	if err != nil {
		return nil, err
	}
	if err := c.send(challengeMsg{Type: msgChallenge, Version: protoVersion, Nonce: sn}, handshakeTimeout); err != nil {
		return nil, fmt.Errorf("sending the challenge: %w", err)
	}
	if h.Version != protoVersion {
		return nil, fmt.Errorf("%w: the client speaks protocol %d, the agent %d", errVersion, h.Version, protoVersion)
	}
	var a authMsg
	if err := c.expect(msgAuth, &a, handshakeTimeout); err != nil {
		return nil, fmt.Errorf("reading auth: %w", err)
	}
	if len(a.Nonce) != nonceSize {
		return nil, fmt.Errorf("%w: client nonce of %d bytes", errBadMessage, len(a.Nonce))
	}
	// A replay would fail the MAC check below anyway (our nonce is
	// fresh); looking it up first only names the failure.
	if seen.has(a.Nonce) {
		return nil, fmt.Errorf("%w: its client nonce was used by an earlier handshake", errReplay)
	}
	if !hmac.Equal(a.MAC, mac(token, clientLabel, sn, a.Nonce)) {
		return nil, fmt.Errorf("%w: wrong MAC (a wrong token, or a handshake recorded from another connection)", ErrAuth)
	}
	seen.add(a.Nonce) // only token holders change what the agent remembers
	c.limit = maxFrame
	return &handshake{token: token, sn: sn, cn: a.Nonce}, nil
}

// handshake is an authenticated client's handshake, until the welcome.
type handshake struct {
	token, sn, cn []byte
}

// sendWelcome proves the agent holds the token and tells the client its
// host's facts.
func (hs *handshake) sendWelcome(c *conn, host result.HostInfo) error {
	w := welcomeMsg{Type: msgWelcome, MAC: mac(hs.token, serverLabel, hs.sn, hs.cn), Host: host}
	if err := c.send(w, handshakeTimeout); err != nil {
		return fmt.Errorf("sending welcome: %w", err)
	}
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
