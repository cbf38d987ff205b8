package agent

import (
	"bytes"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"time"
)

// Per-node keys. With one token shared by every agent of a fleet, one
// compromised node holds the key to all the others. So a fleet has a
// secret that only its controller holds, and each node's agent a key of
// its own, derived from the secret and the node's name:
//
//	node key = HKDF-SHA256(secret: fleet secret, salt: "linerate/2 node keys",
//	                       info: "linerate/2 node key" ‖ 0 ‖ name), 32 bytes
//
// written "node-key NAME HEX" in the agent's token file. The agent says
// its node's name in its challenge; a client that holds the fleet secret
// derives the key from it, one that holds a node key uses it for that node
// only. A node key opens its own agent and nothing else.
//
// A relayed test needs the relaying agent A to authenticate to agent B,
// whose key A does not have. The controller gives A a ticket for that one
// test: B's node, A's node, B's address, an expiry a couple of minutes
// ahead and a random ID, and the ticket's key,
//
//	ticket key = HMAC-SHA256(B's node key, "linerate/2 relay ticket" ‖ ticket),
//
// which B computes from the ticket with its own key. A proves the ticket
// key in B's handshake as a client proves its token; B checks the ticket
// names B and the address it was reached on, has not expired, and was not
// used before. The ticket key travels to A inside A's session, masked with
// a key of that session (sessionKeys.wrap): frames are authenticated, not
// encrypted. A ticket session may run the test it was given for, nothing
// else (no tool server, no doctor report, no relay).
//
// Expiry needs the agents' clocks within ticketSkew of the controller's
// (NTP does that). A controller that holds only a node key can reach that
// node but cannot relay.

// Node keys' derivation labels, and the ticket key's.
const (
	nodeKeySalt    = "linerate/2 node keys"
	nodeKeyInfo    = "linerate/2 node key"
	ticketKeyLabel = "linerate/2 relay ticket"
	keyLabelWrap   = "linerate/2 ticket wrap"
)

// nodeKeyPrefix starts a node key's text.
const nodeKeyPrefix = "node-key "

// maxNodeName bounds a node's name: a Kubernetes node name (a DNS
// subdomain) or a fleet host's.
const maxNodeName = 253

// Tickets' lifetime: issued for ticketLife, accepted within ticketSkew of
// the agent's clock either way.
const (
	ticketLife = 2 * time.Minute
	ticketSkew = time.Minute
)

// checkNodeName accepts names of letters, digits and '-', '.', '_',
// starting with a letter or digit.
func checkNodeName(s string) error {
	if s == "" || len(s) > maxNodeName {
		return fmt.Errorf("node name %q: 1 to %d characters", s, maxNodeName)
	}
	for i, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || i > 0 && (c == '-' || c == '.' || c == '_')
		if !ok {
			return fmt.Errorf("node name %q: use letters, digits and '-', '.', '_', starting with a letter or digit", s)
		}
	}
	return nil
}

// authKey is what an end authenticates with: a token (node ""), which is
// both ends' shared token or a fleet's secret, or one node's key.
type authKey struct {
	node   string
	secret []byte // the HMAC key
}

// parseKey reads a checked token (CheckToken): a node key's text, or a
// token.
func parseKey(tok []byte) (authKey, error) {
	rest, ok := bytes.CutPrefix(tok, []byte(nodeKeyPrefix))
	if !ok {
		return authKey{secret: tok}, nil
	}
	name, hexKey, ok := bytes.Cut(rest, []byte(" "))
	if !ok {
		return authKey{}, fmt.Errorf("%w: a node key is \"node-key NAME HEX\"; make one with 'linerate serve --token-file FLEET-SECRET --node-key NAME --new-token-file FILE'", errWeakToken)
	}
	if err := checkNodeName(string(name)); err != nil {
		return authKey{}, fmt.Errorf("%w: node key: %v", errWeakToken, err)
	}
	if b, err := hex.DecodeString(string(hexKey)); err != nil || len(b) != keySize {
		return authKey{}, fmt.Errorf("%w: node key of %s: not %d hex digits", errWeakToken, name, 2*keySize)
	}
	return authKey{node: string(name), secret: hexKey}, nil
}

// nodeSecret derives node name's key from the fleet's secret.
func nodeSecret(fleet []byte, name string) ([]byte, error) {
	k, err := hkdf.Key(sha256.New, fleet, []byte(nodeKeySalt), nodeKeyInfo+"\x00"+name, keySize)
	if err != nil {
		return nil, fmt.Errorf("deriving the node key of %s: %w", name, err)
	}
	return []byte(hex.EncodeToString(k)), nil
}

// NodeKey returns node name's key, as its agent's token file holds it,
// derived from the fleet's secret (a token).
func NodeKey(fleet []byte, name string) ([]byte, error) {
	k, err := CheckToken(fleet)
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(k, []byte(nodeKeyPrefix)) {
		return nil, errors.New("a node key cannot make other node keys: give the fleet's secret")
	}
	if err := checkNodeName(name); err != nil {
		return nil, err
	}
	s, err := nodeSecret(k, name)
	if err != nil {
		return nil, err
	}
	return []byte(nodeKeyPrefix + name + " " + string(s)), nil
}

// WriteNodeKey writes node name's key, derived from the fleet's secret,
// to a new file at path readable by its owner only; like WriteNewToken it
// never overwrites.
func WriteNodeKey(path string, fleet []byte, name string) error {
	k, err := NodeKey(fleet, name)
	if err != nil {
		return err
	}
	return writeKeyFile(path, k)
}

// keyFor is the key a client uses toward an agent that named node in its
// challenge ("" for an agent of a shared token), from the client's token.
func keyFor(tok []byte, node string) (authKey, error) {
	k, err := parseKey(tok)
	if err != nil {
		return authKey{}, err
	}
	switch {
	case k.node != "" && k.node != node:
		if node == "" {
			return authKey{}, fmt.Errorf("%w: this key is node %s's, and the agent holds a shared token: give that token", ErrAuth, k.node)
		}
		return authKey{}, fmt.Errorf("%w: this key is node %s's, and the agent is node %s: give the fleet's secret or %s's key", ErrAuth, k.node, node, node)
	case k.node != "" || node == "":
		return k, nil
	}
	s, err := nodeSecret(k.secret, node)
	if err != nil {
		return authKey{}, err
	}
	return authKey{node: node, secret: s}, nil
}

// relayTicket lets the agent of node From authenticate to the agent of
// node To at address Peer, once, until Expires (Unix milliseconds).
type relayTicket struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Peer    string `json:"peer"`
	Expires int64  `json:"expires_ms"`
	ID      []byte `json:"id"`
}

const ticketIDSize = 16

// key is the ticket's key under the key of its node To.
func (t *relayTicket) key(to []byte) []byte {
	h := hmac.New(sha256.New, to)
	h.Write([]byte(ticketKeyLabel))
	for _, f := range []string{t.From, t.To, t.Peer, string(t.ID)} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	var e [8]byte
	binary.BigEndian.PutUint64(e[:], uint64(t.Expires))
	h.Write(e[:])
	return h.Sum(nil)
}

// check says why the agent of node self, reached at local, refuses the
// ticket at now (nil: it does not).
func (t *relayTicket) check(self string, local netip.AddrPort, now time.Time) error {
	exp := time.UnixMilli(t.Expires)
	peer, perr := netip.ParseAddrPort(t.Peer)
	switch {
	case len(t.ID) != ticketIDSize || len(t.From) > maxNodeName || len(t.To) > maxNodeName:
		return fmt.Errorf("%w: a relay ticket of the wrong shape", errBadMessage)
	case self == "":
		return fmt.Errorf("%w: a relay ticket, but this agent holds a shared token, not a node key", ErrAuth)
	case t.To != self:
		return fmt.Errorf("%w: a relay ticket for node %.64q, this is node %s", ErrAuth, t.To, self)
	case perr != nil || netip.AddrPortFrom(peer.Addr().Unmap(), peer.Port()) != netip.AddrPortFrom(local.Addr().Unmap(), local.Port()):
		return fmt.Errorf("%w: a relay ticket for %.64q, and this connection reached %s", ErrAuth, t.Peer, local)
	case now.After(exp.Add(ticketSkew)):
		return fmt.Errorf("%w: a relay ticket that expired at %s (is this host's clock within %s of the controller's?)", ErrAuth, exp.UTC().Format(time.RFC3339), ticketSkew)
	case exp.After(now.Add(ticketLife + ticketSkew)):
		return fmt.Errorf("%w: a relay ticket valid until %s, longer than any ticket lives (is this host's clock within %s of the controller's?)", ErrAuth, exp.UTC().Format(time.RFC3339), ticketSkew)
	}
	return nil
}

// mask masks (or unmasks) a ticket key for its trip inside a session:
// XOR with HMAC-SHA256(the session's wrap key, label ‖ ticket ID), a pad
// used once since the ID is random.
func (t *relayTicket) mask(wrap, k []byte) []byte {
	h := hmac.New(sha256.New, wrap)
	h.Write([]byte(keyLabelWrap))
	h.Write(t.ID)
	pad := h.Sum(nil)
	out := make([]byte, len(k))
	for i := range k {
		out[i] = k[i] ^ pad[i%len(pad)]
	}
	return out
}

// newTicket makes a ticket for a test from node from toward node to at
// peer, and its key, from the fleet's secret.
func newTicket(fleet []byte, from, to string, peer netip.AddrPort, now time.Time) (*relayTicket, []byte, error) {
	id, err := randomBytes(ticketIDSize)
	if err != nil {
		return nil, nil, err
	}
	t := &relayTicket{From: from, To: to, Peer: peer.String(), Expires: now.Add(ticketLife).UnixMilli(), ID: id}
	s, err := nodeSecret(fleet, to)
	if err != nil {
		return nil, nil, err
	}
	return t, t.key(s), nil
}

// ticketLog remembers the tickets used, until they expire, so that each
// opens one handshake: a ticket seen on the wire cannot be used again,
// and a relaying agent cannot reuse the one it was given.
type ticketLog struct {
	mu   sync.Mutex
	used map[string]time.Time // ID → expiry
}

// maxTickets bounds the log; only holders of a node's key (or the fleet's
// secret) can add to it, each ticket for at most ticketLife.
const maxTickets = 4096

// use records t's first use at now; false if it was used before, or the
// log is full of live tickets.
func (l *ticketLog) use(t *relayTicket, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.used == nil {
		l.used = map[string]time.Time{}
	}
	if _, seen := l.used[string(t.ID)]; seen {
		return false
	}
	if len(l.used) >= maxTickets {
		for id, exp := range l.used {
			if now.After(exp.Add(ticketSkew)) {
				delete(l.used, id)
			}
		}
		if len(l.used) >= maxTickets {
			return false
		}
	}
	l.used[string(t.ID)] = time.UnixMilli(t.Expires)
	return true
}

// nodeCache remembers, by address, which node each agent this process
// authenticated to said it is (after the agent proved its key): a
// controller relaying toward an agent it has probed needs no second
// handshake to name its node in the ticket.
var nodeCache = struct {
	sync.Mutex
	m map[string]string
}{}

const maxNodeCache = 4096

func rememberNode(addr, node string) {
	nodeCache.Lock()
	defer nodeCache.Unlock()
	if nodeCache.m == nil || len(nodeCache.m) >= maxNodeCache {
		nodeCache.m = map[string]string{}
	}
	nodeCache.m[addr] = node
}

func knownNode(addr string) (string, bool) {
	nodeCache.Lock()
	defer nodeCache.Unlock()
	n, ok := nodeCache.m[addr]
	return n, ok
}

// writeKeyFile writes key to a new file at path, mode 0600, never over
// an existing one.
func writeKeyFile(path string, key []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s exists: linerate does not overwrite a key (an agent may hold it); remove it first or pick another file", path)
		}
		return fmt.Errorf("writing the key: %w", err)
	}
	_, err = f.Write(append(append([]byte{}, key...), '\n'))
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("writing the key to %s: %w", path, err)
	}
	return nil
}
