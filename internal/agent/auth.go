package agent

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
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

// clientHandshake authenticates to the agent and checks that the agent
// holds the token too. It returns what the agent said about its host and
// the session's keys; c's frames are MACed from then on.
func clientHandshake(c *conn, token []byte) (*result.HostInfo, sessionKeys, error) {
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
	cn, err := newNonce()
	if err != nil {
		return nil, sessionKeys{}, err
	}
	if err := c.send(authMsg{Type: msgAuth, Nonce: cn, MAC: mac(token, clientLabel, ch.Nonce, cn)}, handshakeTimeout); err != nil {
		return nil, sessionKeys{}, fmt.Errorf("sending auth: %w", err)
	}
	var w welcomeMsg
	c.limit = maxFrame // the agent's facts: hundreds of CPUs and IRQs
	if err := c.expect(msgWelcome, &w, handshakeTimeout); err != nil {
		var pe *PeerError
		if errors.As(err, &pe) && !pe.Busy {
			return nil, sessionKeys{}, fmt.Errorf("%w: the agent says %q: check that both ends use the same token", ErrAuth, pe.Reason)
		}
		return nil, sessionKeys{}, fmt.Errorf("reading welcome: %w", err)
	}
	if !hmac.Equal(w.MAC, mac(token, serverLabel, ch.Nonce, cn, w.Host)) {
		return nil, sessionKeys{}, fmt.Errorf("%w: the agent could not prove it holds the token (a different token, or not a linerate agent)", ErrAuth)
	}
	var host result.HostInfo
	if err := json.Unmarshal(w.Host, &host); err != nil {
		return nil, sessionKeys{}, fmt.Errorf("%w: the agent's host facts: %v", errBadMessage, err)
	}
	keys, err := deriveKeys(token, ch.Nonce, cn)
	if err != nil {
		return nil, sessionKeys{}, err
	}
	c.seal(keys, false)
	return &host, keys, nil
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
	// The challenge names the agent's version even to a client of
	// another: an old client then says which ends to upgrade.
	if err := c.send(challengeMsg{Type: msgChallenge, Version: protoVersion, Nonce: sn}, handshakeTimeout); err != nil {
		return nil, fmt.Errorf("sending the challenge: %w", err)
	}
	if h.Version != protoVersion {
		return nil, fmt.Errorf("%w: the client speaks protocol %d, the agent %d (run the same linerate version on both ends)", errVersion, h.Version, protoVersion)
	}
	var a authMsg
	if err := c.expect(msgAuth, &a, handshakeTimeout); err != nil {
		return nil, fmt.Errorf("reading auth: %w", err)
	}
	// The length first: everything below assumes it.
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
	seen.add(a.Nonce) // only after the MAC: only token holders change what the agent remembers
	keys, err := deriveKeys(token, sn, a.Nonce)
	if err != nil {
		return nil, err
	}
	c.limit = maxFrame
	return &handshake{token: token, sn: sn, cn: a.Nonce, keys: keys}, nil
}

// handshake is an authenticated client's handshake, until the welcome.
type handshake struct {
	token, sn, cn []byte
	keys          sessionKeys
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
