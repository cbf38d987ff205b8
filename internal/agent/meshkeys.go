package agent

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
)

// The mesh's keys. A fleet's agents hold node keys (nodekey.go): one
// node's key opens no other agent. The mesh keeps to that. Each directed
// pair A → B of a mesh has a key of its own, made from B's node key:
//
//	pair key(A → B) = HMAC-SHA256(B's node key, "linerate/2 mesh pair" ‖ mesh ID ‖ A ‖ B)
//
// (names length-prefixed). B derives the keys of every pair into it from
// its own key; A cannot, so the controller, which holds the fleet's
// secret, derives the keys of A's pairs out and gives them to A inside
// A's session (masked with a key of that session, as a relay ticket's
// key travels). A's probes to B, its views to B and B's replies to them
// are MACed with that key; A's throughput test toward B authenticates
// with a key made from it (meshTestKey), as a relay ticket does.
//
// So a node's key, or all that its agent holds, lets it speak for that
// node alone: to make B believe C sent something it needs pair key
// C → B, which only B and the controller can make. The mesh ID is new at
// every 'mesh up', so the keys of a mesh taken down open nothing. Agents
// that share one token (no node keys) derive every node's key from it,
// as a controller does, and need no controller to start.

// Labels of the mesh's keys.
const (
	meshPairLabel = "linerate/2 mesh pair"
	meshTestLabel = "linerate/2 mesh test"
	meshWrapLabel = "linerate/2 mesh wrap"
	meshIDLabel   = "linerate/2 mesh id"
	meshIDSize    = 16
)

// meshPairKey is pair from → to's key in mesh id, from to's node key.
func meshPairKey(toKey, id []byte, from, to string) []byte {
	h := hmac.New(sha256.New, toKey)
	h.Write([]byte(meshPairLabel))
	h.Write(id)
	for _, f := range []string{from, to} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	return h.Sum(nil)
}

// meshTestKey is the handshake key of pair key's throughput tests.
func meshTestKey(pairKey []byte) []byte {
	h := hmac.New(sha256.New, pairKey)
	h.Write([]byte(meshTestLabel))
	return h.Sum(nil)
}

// meshWrap masks (or unmasks) one pair key for its trip inside a
// session: XOR with HMAC-SHA256(the session's wrap key, label ‖ mesh ID
// ‖ peer), a pad used once per session, mesh and peer.
func meshWrap(wrap, id []byte, peer string, k []byte) []byte {
	h := hmac.New(sha256.New, wrap)
	h.Write([]byte(meshWrapLabel))
	h.Write(id)
	h.Write([]byte(peer))
	pad := h.Sum(nil)
	out := make([]byte, len(k))
	for i := range k {
		out[i] = k[i] ^ pad[i%len(pad)]
	}
	return out
}

// meshSharedID is the mesh ID of agents sharing a token and a host list:
// every agent computes the same from the same list.
func meshSharedID(hosts []MeshHost) []byte {
	s := slices.Clone(hosts)
	slices.SortFunc(s, func(a, b MeshHost) int { return cmpStrings(a.Name, b.Name) })
	h := sha256.New()
	h.Write([]byte(meshIDLabel))
	for _, m := range s {
		fmt.Fprintf(h, "%d %s %s\n", len(m.Name), m.Name, m.Addr)
	}
	return h.Sum(nil)[:meshIDSize]
}

func cmpStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// meshAuth, in an auth message, says what the session is for: mesh
// control (the controller's status, configuration and stop), or a mesh
// peer's throughput test (ID, From, To: its MAC is under that pair's test
// key).
type meshAuth struct {
	Control bool   `json:"control,omitempty"`
	ID      []byte `json:"id,omitempty"`
	From    string `json:"from,omitempty"`
	To      string `json:"to,omitempty"`
}

// meshTestAuth is the key a mesh peer's handshake is checked with: the
// peer must be a host of this agent's mesh, testing toward this agent.
// Its address is not checked: the key proves the peer (a host of many
// addresses may reach this one from another), and what the test sends
// goes back only over the connection it opened.
func (s *Server) meshTestAuth(m *meshAuth) ([]byte, error) {
	ms := s.meshSession()
	switch {
	case len(m.ID) != meshIDSize || len(m.From) > maxNodeName || len(m.To) > maxNodeName:
		return nil, fmt.Errorf("%w: a mesh test of the wrong shape", errBadMessage)
	case ms == nil:
		return nil, fmt.Errorf("%w: a mesh test, and this agent is in no mesh", ErrAuth)
	}
	return ms.testKey(m)
}
