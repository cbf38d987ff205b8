package agent

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash"
)

// The mesh's datagrams (docs/architecture.md, "The mesh"). Once a tick
// an agent sends each peer one probe, from the tick's source port to the
// peer's agent port, which is at once its own probe and its answer to the
// peer's last one (as NTP's symmetric mode does): half the datagrams of a
// request and a reply each. Every datagram from A to B is MACed with the
// key of the pair A → B (meshkeys.go). Layout, big-endian:
//
//	0   "LRM1"
//	4   type: 1 probe, 3 view
//	5   flags: 1 the sender's host is contended, 2 it dropped datagrams
//	    for want of socket buffer (its last bucket's record)
//	6   flow: which of the sender's source ports it left from
//	7   0
//	8   the mesh's ID, its first 8 bytes
//	16  src, dst: host indexes in the mesh's host list
//	20  epoch: the sender's run (random at its start)
//	24  seq: the sender's probe number in its run (a view's own)
//	32  tx: the sender's clock at sending, Unix ns (a receiver refuses a
//	    datagram more than a minute off its own clock)
//	40  ack: the latest of dst's probes the sender had received (^0: none)
//	48  ackEpoch: dst's run that ack is of
//	52  count: how many of dst's probes of that run the sender received
//	    (so dst tells its lost probes from lost answers)
//	56  prevSeq: the sender's previous probe to dst (^0: none)
//	64  held: how long that previous probe held its ack: from the ack's
//	    arrival at the sender to the probe's departure, both kernel
//	    timestamps, ns (^0: unknown); dst takes it out of that round trip
//	68  a view's number of entries, else 0
//	70  0
//	72  a view's entries: per host of the list, its state (1 byte) and the
//	    Unix seconds it entered it (4 bytes)
//	…   MAC: HMAC-SHA256(pair key, everything before it), first 16 bytes
//
// A probe is meshProbeLen bytes, a view one entry per host (at most
// MaxMeshHosts): a datagram of an Ethernet frame.

const (
	meshMagic      = "LRM1"
	meshHeaderLen  = 72
	meshTagLen     = 16
	meshProbeLen   = meshHeaderLen + meshTagLen
	meshEntryLen   = 5
	meshMaxViewLen = meshHeaderLen + MaxMeshHosts*meshEntryLen + meshTagLen

	meshProbe byte = 1
	meshView  byte = 3

	meshFlagContended byte = 1
	meshFlagHostDrops byte = 2

	noSeq  = ^uint64(0)
	noHeld = ^uint32(0)
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
	ack              uint64
	ackEpoch         uint32
	count            uint32
	prevSeq          uint64
	held             uint32
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
	binary.BigEndian.PutUint64(b[40:], h.ack)
	binary.BigEndian.PutUint32(b[48:], h.ackEpoch)
	binary.BigEndian.PutUint32(b[52:], h.count)
	binary.BigEndian.PutUint64(b[56:], h.prevSeq)
	binary.BigEndian.PutUint32(b[64:], h.held)
	binary.BigEndian.PutUint16(b[68:], h.entries)
	b[70], b[71] = 0, 0
}

// parseMeshHeader reads a datagram's header and checks its length for its
// type, before any MAC is computed: what an unauthenticated sender can
// make the agent do is this, a lookup and one HMAC.
func parseMeshHeader(b []byte, h *meshHeader) error {
	if len(b) < meshProbeLen || string(b[:4]) != meshMagic || b[7] != 0 || b[70] != 0 || b[71] != 0 {
		return errMeshDatagram
	}
	h.typ, h.flags, h.flow = b[4], b[5], b[6]
	copy(h.id[:], b[8:16])
	h.src = binary.BigEndian.Uint16(b[16:])
	h.dst = binary.BigEndian.Uint16(b[18:])
	h.epoch = binary.BigEndian.Uint32(b[20:])
	h.seq = binary.BigEndian.Uint64(b[24:])
	h.tx = int64(binary.BigEndian.Uint64(b[32:]))
	h.ack = binary.BigEndian.Uint64(b[40:])
	h.ackEpoch = binary.BigEndian.Uint32(b[48:])
	h.count = binary.BigEndian.Uint32(b[52:])
	h.prevSeq = binary.BigEndian.Uint64(b[56:])
	h.held = binary.BigEndian.Uint32(b[64:])
	h.entries = binary.BigEndian.Uint16(b[68:])
	switch h.typ {
	case meshProbe:
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
