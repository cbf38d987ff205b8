package agent

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash"
)

// The mesh's datagrams (docs/architecture.md, "The mesh"). Every one is
// MACed with the key of its pair, src → dst (meshkeys.go): a request and
// a view from src, a reply from dst. Layout, big-endian:
//
//	0   "LRM1"
//	4   type: 1 request, 2 reply, 3 view
//	5   flags (a reply's: 1 the responder's host is contended, 2 it dropped
//	    datagrams for want of socket buffer)
//	6   flow: which of the prober's source ports sent it
//	7   0
//	8   the mesh's ID, its first 8 bytes
//	16  src, dst: host indexes in the mesh's host list
//	20  epoch: the prober's run (random at its start)
//	24  seq: a request's number in its epoch (a view's own)
//	32  tx: the sender's clock at sending, Unix ns
//	40  count: a reply's count of the requests the responder received from
//	    src in this epoch (so the prober tells a lost request from a lost
//	    reply)
//	48  turnaround: a reply's time from the request's arrival (kernel
//	    timestamp) to the reply's sending, ns
//	52  a view's number of entries, else 0
//	56  a view's entries: per host of the list, its state (1 byte) and the
//	    Unix seconds it entered it (4 bytes)
//	…   MAC: HMAC-SHA256(pair key, everything before it), first 16 bytes
//
// Requests and replies are meshProbeLen bytes: a reply is no larger than
// the request it answers, and goes only to the listed address it came
// from. A view has one entry per host, at most MaxMeshHosts.

const (
	meshMagic      = "LRM1"
	meshHeaderLen  = 56
	meshTagLen     = 16
	meshProbeLen   = meshHeaderLen + meshTagLen
	meshEntryLen   = 5
	meshMaxViewLen = meshHeaderLen + MaxMeshHosts*meshEntryLen + meshTagLen

	meshRequest byte = 1
	meshReply   byte = 2
	meshView    byte = 3

	meshFlagContended byte = 1
	meshFlagHostDrops byte = 2
)

// MaxMeshHosts bounds a mesh: a view of every host fits one datagram of
// an Ethernet frame.
const MaxMeshHosts = 256

// meshHeader is a datagram's fixed part.
type meshHeader struct {
	typ, flags, flow byte
	id               [8]byte
	src, dst         uint16
	epoch            uint32
	seq              uint64
	tx               int64
	count            uint64
	turnaround       uint32
	entries          uint16
}

// errMeshDatagram is a datagram that is not one of the mesh's.
var errMeshDatagram = errors.New("not a mesh datagram")

// put writes h into b (at least meshHeaderLen bytes).
func (h *meshHeader) put(b []byte) {
	copy(b, meshMagic)
	b[4], b[5], b[6], b[7] = h.typ, h.flags, h.flow, 0
	copy(b[8:16], h.id[:])
	binary.BigEndian.PutUint16(b[16:], h.src)
	binary.BigEndian.PutUint16(b[18:], h.dst)
	binary.BigEndian.PutUint32(b[20:], h.epoch)
	binary.BigEndian.PutUint64(b[24:], h.seq)
	binary.BigEndian.PutUint64(b[32:], uint64(h.tx))
	binary.BigEndian.PutUint64(b[40:], h.count)
	binary.BigEndian.PutUint32(b[48:], h.turnaround)
	binary.BigEndian.PutUint16(b[52:], h.entries)
	b[54], b[55] = 0, 0
}

// parseMeshHeader reads a datagram's header and checks its length for its
// type, before any MAC is computed: what an unauthenticated sender can
// make the agent do is this, a lookup and one HMAC.
func parseMeshHeader(b []byte, h *meshHeader) error {
	if len(b) < meshProbeLen || string(b[:4]) != meshMagic || b[7] != 0 || b[54] != 0 || b[55] != 0 {
		return errMeshDatagram
	}
	h.typ, h.flags, h.flow = b[4], b[5], b[6]
	copy(h.id[:], b[8:16])
	h.src = binary.BigEndian.Uint16(b[16:])
	h.dst = binary.BigEndian.Uint16(b[18:])
	h.epoch = binary.BigEndian.Uint32(b[20:])
	h.seq = binary.BigEndian.Uint64(b[24:])
	h.tx = int64(binary.BigEndian.Uint64(b[32:]))
	h.count = binary.BigEndian.Uint64(b[40:])
	h.turnaround = binary.BigEndian.Uint32(b[48:])
	h.entries = binary.BigEndian.Uint16(b[52:])
	switch h.typ {
	case meshRequest, meshReply:
		if len(b) != meshProbeLen || h.entries != 0 {
			return errMeshDatagram
		}
	case meshView:
		if h.entries == 0 || h.entries > MaxMeshHosts || len(b) != meshHeaderLen+int(h.entries)*meshEntryLen+meshTagLen {
			return errMeshDatagram
		}
	default:
		return errMeshDatagram
	}
	if h.src == h.dst {
		return errMeshDatagram
	}
	return nil
}

// meshMAC MACs datagrams under one pair key, without allocating: one per
// goroutine and key (hmac's state is not safe for concurrent use).
type meshMAC struct {
	h   hash.Hash
	sum [sha256.Size]byte
}

func newMeshMAC(key []byte) *meshMAC { return &meshMAC{h: hmac.New(sha256.New, key)} }

// tag writes the MAC of b[:n] into b[n:n+meshTagLen].
func (m *meshMAC) tag(b []byte, n int) {
	m.h.Reset()
	m.h.Write(b[:n])
	s := m.h.Sum(m.sum[:0])
	copy(b[n:n+meshTagLen], s)
}

// check says whether b (a whole datagram) carries its MAC.
func (m *meshMAC) check(b []byte) bool {
	n := len(b) - meshTagLen
	m.h.Reset()
	m.h.Write(b[:n])
	s := m.h.Sum(m.sum[:0])
	return hmac.Equal(s[:meshTagLen], b[n:])
}
