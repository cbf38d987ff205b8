package agent

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"hash"

	"github.com/linerate/linerate/internal/engine"
)

// A crr test makes a connection per transaction, to a listening socket
// the agent opens for the test only (its port in the accept), accepting
// the client's address only. Each connection's first bytes, written with
// the request, prove it is the test's:
//
//	"LRCR" ‖ flow (4 bytes, big-endian) ‖ connection (4 bytes, big-endian, from 1 per flow)
//	‖ HMAC-SHA256(session's data key, test ID ‖ flow ‖ connection), first 16 bytes
//
// The agent answers a connection only once its proof holds, and takes
// each connection number of a flow once, in increasing order (a flow's
// connections come one after another): a proof seen on the wire and
// replayed names a connection already made. 16 bytes of tag are 128 bits,
// as much as the token's least.
const (
	crrMagic    = "LRCR"
	crrTagSize  = 16
	crrProofLen = len(crrMagic) + 4 + 4 + crrTagSize
)

// crrAdmission makes and checks the proofs of one thread's connections:
// each thread has its own keyed hash, reset per proof, and scratch room,
// so that neither allocates.
type crrAdmission struct {
	testID []byte
	mac    hash.Hash
	sum    [sha256.Size]byte
	in     [8]byte
}

// newCRRAdmission returns the engine's factory of per-thread admissions
// for the test testID of the session whose data key is dataKey.
func newCRRAdmission(dataKey, testID []byte) func() engine.Admission {
	return func() engine.Admission {
		return &crrAdmission{testID: testID, mac: hmac.New(sha256.New, dataKey)}
	}
}

func (a *crrAdmission) Len() int { return crrProofLen }

// tag computes the tag of connection seq of flow into a.sum.
func (a *crrAdmission) tag(flow, seq uint32) []byte {
	a.mac.Reset()
	a.mac.Write(a.testID)
	binary.BigEndian.PutUint32(a.in[:4], flow)
	binary.BigEndian.PutUint32(a.in[4:], seq)
	a.mac.Write(a.in[:])
	return a.mac.Sum(a.sum[:0])[:crrTagSize]
}

func (a *crrAdmission) Sign(dst []byte, flow int, seq uint32) {
	copy(dst, crrMagic)
	binary.BigEndian.PutUint32(dst[4:], uint32(flow))
	binary.BigEndian.PutUint32(dst[8:], seq)
	copy(dst[12:], a.tag(uint32(flow), seq))
}

func (a *crrAdmission) Verify(b []byte) (int, uint32, bool) {
	if len(b) != crrProofLen || string(b[:4]) != crrMagic {
		return 0, 0, false
	}
	flow, seq := binary.BigEndian.Uint32(b[4:]), binary.BigEndian.Uint32(b[8:])
	if !hmac.Equal(b[12:], a.tag(flow, seq)) || flow > engine.MaxFlows {
		return 0, 0, false
	}
	return int(flow), seq, true
}
