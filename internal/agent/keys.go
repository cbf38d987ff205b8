package agent

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
)

// Session keys. After the handshake both ends derive, from the token and
// both nonces, one key per direction for the control frames and one for
// the data connections' preambles (HKDF-SHA256: the nonces are the salt,
// the labels keep the keys apart). Every control frame after the welcome
// carries HMAC-SHA256(direction's key, sequence number ‖ body); the
// sequence numbers count the frames of each direction from 0 and never
// cross the wire, so a frame dropped, replayed, reordered or injected
// fails the check, and so does one of the other direction reflected back.
// Frames are authenticated, not encrypted: nothing the protocol sends is
// secret except keys and tokens, which never travel.
const (
	keyLabelClient = "linerate/2 client to agent"
	keyLabelAgent  = "linerate/2 agent to client"
	keyLabelData   = "linerate/2 data preamble"
	keyLabelTool   = "linerate/2 tool credentials"
	keySize        = 32
	tagSize        = sha256.Size
)

// errBadMAC is a control frame whose MAC does not match: the session ends.
var errBadMAC = errors.New("a control frame failed its MAC check (tampered, injected, replayed or reordered on the way): the session ends")

// sessionKeys are one session's keys. wrap masks relay ticket keys sent
// to the agent (nodekey.go).
type sessionKeys struct {
	clientToAgent, agentToClient, data, tool, wrap []byte
	// node is the agent's node, as its challenge said and its proof
	// confirmed ("" for a shared token); the client side only.
	node string
}

// deriveKeys derives the session keys from the token and the nonces of
// the handshake (agent's first). The tool key is the secret a tool
// server's one-time credentials come from (tool.go).
func deriveKeys(token, serverNonce, clientNonce []byte) (sessionKeys, error) {
	salt := append(append([]byte{}, serverNonce...), clientNonce...)
	prk, err := hkdf.Extract(sha256.New, token, salt)
	if err != nil {
		return sessionKeys{}, fmt.Errorf("deriving the session keys: %w", err)
	}
	var k sessionKeys
	for _, d := range []struct {
		dst   *[]byte
		label string
	}{{&k.clientToAgent, keyLabelClient}, {&k.agentToClient, keyLabelAgent}, {&k.data, keyLabelData}, {&k.tool, keyLabelTool}, {&k.wrap, keyLabelWrap}} {
		if *d.dst, err = hkdf.Expand(sha256.New, prk, d.label, keySize); err != nil {
			return sessionKeys{}, fmt.Errorf("deriving the session keys: %w", err)
		}
	}
	return k, nil
}

// sealing MACs a connection's frames one way.
type sealing struct {
	mu  sync.Mutex
	key []byte
	seq uint64
}

// tag returns the MAC of the next frame's body and counts the frame.
func (s *sealing) tag(body []byte) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := frameTag(s.key, s.seq, body)
	s.seq++
	return t
}

func frameTag(key []byte, seq uint64, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], seq)
	h.Write(n[:])
	h.Write(body)
	return h.Sum(nil)
}

// open checks a sealed frame (body ‖ tag) and returns its body.
func (s *sealing) open(frame []byte) ([]byte, error) {
	if len(frame) <= tagSize {
		return nil, fmt.Errorf("%w (a frame of %d bytes has no room for one)", errBadMAC, len(frame))
	}
	body, t := frame[:len(frame)-tagSize], frame[len(frame)-tagSize:]
	s.mu.Lock()
	defer s.mu.Unlock()
	if !hmac.Equal(t, frameTag(s.key, s.seq, body)) {
		return nil, errBadMAC
	}
	s.seq++
	return body, nil
}

// seal starts MACing c's frames with k: the client sends with the
// client-to-agent key and reads with the other, the agent the reverse.
func (c *conn) seal(k sessionKeys, agent bool) {
	send, recv := k.clientToAgent, k.agentToClient
	if agent {
		send, recv = recv, send
	}
	c.out = &sealing{key: send}
	c.in = &sealing{key: recv}
}

// dataTag is the proof a data connection carries: that it belongs to the
// session whose data key made it, for this test and this stream index.
func dataTag(dataKey, testID []byte, index uint32) []byte {
	h := hmac.New(sha256.New, dataKey)
	h.Write(testID)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], index)
	h.Write(n[:])
	return h.Sum(nil)
}
