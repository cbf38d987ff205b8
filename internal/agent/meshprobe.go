package agent

import (
	"net/netip"
	"time"

	"github.com/linerate/linerate/internal/mesh"
)

// The probes' loop: one goroutine, woken once a tick. It reads the
// departure stamps of its last probes (the error queue of the socket they
// left from), takes the probes that came to the agent's port since (each
// is a peer's probe and its answer to this agent's), and sends the tick's
// probe to every peer in one batch from the tick's flow socket: a handful
// of system calls a tick, whatever the number of peers.
//
// A round trip is kernel to kernel: the arrival of the peer's probe that
// acknowledges this agent's, less this agent's probe's departure, less
// how long the peer held it (from its arrival to the departure of the
// probe that acknowledged it, both the peer's kernel stamps, which the
// peer sends in its next probe). So neither agent's scheduling, nor the
// tick a probe waited for its answer, nor where a datagram sat in its
// batch, is in it.
//
// Nothing here allocates once running (TestMeshLoopsDoNotAllocate): an
// agent runs for months, and every allocation is garbage the collector
// chases.

// meshPeer is one peer as this agent sees it: the keys of both pairs
// with it, what this agent sent it and what it got.
type meshPeer struct {
	idx  int
	name string
	dst  netip.AddrPort // its agent's port
	out  []byte         // pair key this agent → peer
	in   []byte         // pair key peer → this agent

	sendMAC *meshMAC // this agent's probes and views to the peer
	recvMAC *meshMAC // the peer's to this agent

	// This agent's probes to the peer: the probe loop writes, under
	// meshSession.mu for what others read.
	seq                  uint64
	sent                 [64]sentProbe
	sentB, replies       uint32 // this bucket's probes sent, and answers got
	ackEpoch             uint32 // the peer's run, as its answers say
	haveAck              bool
	lastAck, lastCount   uint64
	judgedAll, lostAll   uint64 // probes whose fate is known, and lost, ever
	judgedMark, lostMark uint64 // at the last bucket's close
	flagsSeen            byte   // the peer's flags this bucket
	carriers             [64]carrier
	bucketRTT            []uint32
	nBucket              int
	ring                 []uint32 // the last minute's round trips, ns
	ringN, ringHead      int
	pair                 mesh.Pair
	verdict              mesh.Verdict
	view                 []viewEntry // the peer's pairs, as its last view says
	viewAt               time.Time   // when that view came
	viewTx               int64       // its send time
	tputs, tputsSkipped  int
	lastTputErr          string
	lastTputInconclusive string
	kernelTx, userTx     uint64 // round trips timed from the kernel's departure stamp, or from the agent's clock

	// The peer's probes to this agent, the probe loop's alone.
	rEpoch         uint32
	rHave          bool
	rMax, rWin     uint64 // highest seq seen, and a bitmap of the 64 below it
	rCount         uint32
	rLastTx        int64
	rLastRx        int64 // when the highest seq arrived
	tokens         float64
	tokAt          int64
	rateMax, rateF float64
}

// sentProbe is one probe this agent sent: when it left (the agent's clock,
// the kernel's stamp once read), what it acknowledged and when that
// arrived, and whether its round trip was taken.
type sentProbe struct {
	seq          uint64
	user, kernel int64
	ack          uint64
	ackRx        int64
	timed        bool
}

// carrier is a peer's probe that acknowledged one of this agent's: the
// raw round trip (its arrival less the acknowledged probe's departure)
// until the peer says how long it held the acknowledged probe.
type carrier struct {
	seq, ack uint64
	raw      int64
}

// viewEntry is a peer's pair toward one host, as its view says.
type viewEntry struct {
	state        mesh.State
	since        int64
	inconclusive bool
}

// keyRef ties a datagram's number in its socket (SOF_TIMESTAMPING_OPT_ID)
// to what it was: peer's probe seq; peer -1 for a view.
type keyRef struct {
	key  uint32
	peer int32
	seq  uint64
}

// keyRing is a socket's datagrams sent, by number.
type keyRing struct {
	next uint32
	refs [4 * batchMax]keyRef
}

func (k *keyRing) add(peer int, seq uint64) {
	k.refs[int(k.next)%len(k.refs)] = keyRef{key: k.next, peer: int32(peer), seq: seq}
	k.next++
}

func (k *keyRing) find(id uint32) (keyRef, bool) {
	r := k.refs[int(id)%len(k.refs)]
	return r, r.key == id && r.peer >= 0
}

func newMeshPeer(idx int, h MeshHost, port uint16, out, in []byte, rate float64) *meshPeer {
	p := &meshPeer{idx: idx, name: h.Name, dst: netip.AddrPortFrom(h.Addr.Unmap(), port), out: out, in: in,
		sendMAC: newMeshMAC(out), recvMAC: newMeshMAC(in)}
	// Room for twice the bucket's probes, and the last minute's.
	p.bucketRTT = make([]uint32, int(2*rate*mesh.BucketLen.Seconds())+8)
	p.ring = make([]uint32, int(rate*float64(mesh.ReportBuckets)*mesh.BucketLen.Seconds())+8)
	// A peer may send twice this agent's rate (and a view), in bursts of
	// a second's worth: more is dropped.
	p.rateF = 2*rate + 1
	p.rateMax = 2*rate + 5
	p.tokens = p.rateMax
	return p
}

// probe runs the probe loop: a tick every 1/rate, each agent at its own
// phase of the period (its place in the host list), so that a peer's
// probe arrives between two of this agent's ticks and each is answered
// once, at the next; a bucket closed every mesh.BucketLen; a view sent
// every meshViewEvery.
func (ms *meshSession) probe() {
	period := time.Duration(float64(time.Second) / ms.rate)
	phase := time.Duration(ms.self) * period / time.Duration(len(ms.hosts))
	now := time.Now()
	next := now.Truncate(period).Add(period + phase)
	bucketEnd := now.Truncate(mesh.BucketLen).Add(mesh.BucketLen)
	viewAt := bucketEnd.Add(period / 2)
	t := time.NewTimer(time.Until(next))
	defer t.Stop()
	var tick uint64
	last := 0
	for {
		select {
		case <-ms.ctx.Done():
			return
		case <-t.C:
		}
		now = time.Now()
		ms.host.late(now.Sub(next))
		f := int(tick % uint64(ms.flows))
		ms.departures(last)
		if f != last {
			ms.departures(f) // stamps that came after the socket's last tick
		}
		ms.receive()
		ms.sendProbes(f)
		last = f
		tick++
		if !now.Before(bucketEnd) {
			ms.discardStrays()
			ms.closeBucket(bucketEnd)
			bucketEnd = bucketEnd.Add(mesh.BucketLen)
		}
		if !now.Before(viewAt) {
			ms.sendViews(f)
			viewAt = viewAt.Add(meshViewEvery)
		}
		next = next.Add(period)
		if d := time.Until(next); d < 0 {
			// Ticks missed (the host stalled): skip ahead, no burst.
			next = time.Now().Truncate(period).Add(period + phase)
		}
		t.Reset(time.Until(next))
	}
}

// sendProbes sends the tick's probe to every peer from flow f's socket,
// in batches.
func (ms *meshSession) sendProbes(f int) {
	s, keys := ms.socks[f], &ms.keys[f]
	h := meshHeader{typ: meshProbe, flow: byte(f), id: ms.id8, src: uint16(ms.self), epoch: ms.epoch, flags: byte(ms.flags.Load())}
	for _, p := range ms.peers {
		if p == nil {
			continue
		}
		b := s.next(p.dst, meshProbeLen)
		if b == nil {
			ms.flush(f)
			b = s.next(p.dst, meshProbeLen)
		}
		h.dst = uint16(p.idx)
		h.ack, h.ackEpoch, h.count = noSeq, 0, 0
		if p.rHave {
			h.ack, h.ackEpoch, h.count = p.rMax, p.rEpoch, p.rCount
		}
		// How long the last probe to the peer held its ack.
		h.prevSeq, h.held = noSeq, noHeld
		if p.seq > 0 {
			prev := &p.sent[(p.seq-1)%64]
			h.prevSeq = prev.seq
			out := prev.kernel
			if out == 0 {
				out = prev.user
			}
			if prev.ack != noSeq && out >= prev.ackRx {
				h.held = uint32(min(out-prev.ackRx, int64(noHeld-1)))
			}
		}
		ms.mu.Lock()
		h.seq = p.seq
		p.seq++
		p.sentB++
		ms.mu.Unlock()
		h.tx = time.Now().UnixNano()
		p.sent[h.seq%64] = sentProbe{seq: h.seq, user: h.tx, ack: h.ack, ackRx: p.rLastRx}
		h.put(b)
		p.sendMAC.tag(b, meshHeaderLen)
		keys.add(p.idx, h.seq)
	}
	ms.flush(f)
}

// flush sends flow f's batch. After a datagram the kernel refused, the
// socket's numbering may have lost step with the agent's: the departure
// stamps of the batch are dropped and the numbering starts again.
func (ms *meshSession) flush(f int) {
	s := ms.socks[f]
	if _, err := s.flush(); err != nil {
		for {
			if n, _ := s.read(true); n < batchMax {
				break
			}
		}
		setTimestamping(uintptr(s.fd), 0)
		setTimestamping(uintptr(s.fd), meshTimestamping)
		ms.keys[f] = keyRing{}
	}
}

// departures reads the departure stamps of the probes sent from flow f's
// socket.
func (ms *meshSession) departures(f int) {
	s, keys := ms.socks[f], &ms.keys[f]
	for {
		n, err := s.read(true)
		if err != nil {
			return
		}
		for i := range n {
			ts, id, ok := stamps(s.oob(i))
			if !ok || ts == 0 {
				continue
			}
			if ref, ok := keys.find(id); ok {
				if p := ms.peers[ref.peer]; p != nil {
					p.departed(ref.seq, ts)
				}
			}
		}
		if n < batchMax {
			return
		}
	}
}

// departed takes probe seq's departure stamp: within a second after the
// agent sent it, or it is not this probe's (a numbering out of step).
func (p *meshPeer) departed(seq uint64, ts int64) {
	sp := &p.sent[seq%64]
	if sp.seq == seq && ts >= sp.user-int64(time.Millisecond) && ts <= sp.user+int64(time.Second) {
		sp.kernel = ts
	}
}

// discardStrays reads and drops what came to the flow sockets (no peer
// sends there), so that it cannot crowd out the departure stamps, which
// the kernel charges to the same buffer.
func (ms *meshSession) discardStrays() {
	for _, s := range ms.socks {
		for {
			if n, _ := s.read(false); n < batchMax {
				break
			}
		}
	}
}

// receive takes what came to the agent's port since the last tick.
func (ms *meshSession) receive() {
	s := ms.resp
	for {
		n, err := s.read(false)
		if err != nil {
			return
		}
		for i := range n {
			rx, _, _ := stamps(s.oob(i))
			if rx == 0 {
				rx = time.Now().UnixNano()
			}
			if !s.truncated(i) {
				ms.take(s.data(i), s.from(i), rx)
			}
		}
		if n < batchMax {
			return
		}
	}
}

// take takes one datagram that arrived at rx (Unix ns): a peer's probe,
// or its view.
func (ms *meshSession) take(b []byte, from netip.AddrPort, rx int64) {
	h := &ms.rh
	if parseMeshHeader(b, h) != nil || h.id != ms.id8 || int(h.dst) != ms.self || int(h.src) >= len(ms.peers) {
		ms.refuse(from, "a datagram that is not of this mesh, or not for this agent")
		return
	}
	p := ms.peers[h.src]
	if p == nil || from.Addr().Unmap() != p.dst.Addr() {
		ms.refuse(from, "a mesh datagram from an address that is not its sender's")
		return
	}
	if !p.recvMAC.check(b) {
		ms.refuse(from, "a mesh datagram that failed its MAC (another mesh's key, or forged)")
		return
	}
	if d := rx - h.tx; d > int64(meshSkew) || d < -int64(meshSkew) {
		ms.refuse(from, "a mesh datagram sent more than a minute from this clock (a replay, or a clock off)")
		return
	}
	if h.typ == meshView {
		ms.takeView(p, b, h)
		return
	}
	if !p.allow(rx) || !p.fresh(h.epoch, h.seq, h.tx, rx) {
		return // more than the peer may send, or a replay
	}
	// Its answer to this agent's probes.
	if h.ack == noSeq || h.ackEpoch != ms.epoch || h.ack >= p.seq {
		return
	}
	rtt := int64(-1)
	// Which clock timed the answer, counted with the rest under ms.mu
	// (the status and the tests read the counts).
	kernelStamp, userStamp := false, false
	sp := &p.sent[h.ack%64]
	if sp.seq == h.ack {
		out := sp.user
		if sp.kernel != 0 {
			out = sp.kernel
		}
		c := &p.carriers[h.seq%64]
		*c = carrier{seq: h.seq, ack: h.ack, raw: max(rx-out, 1)}
		kernelStamp, userStamp = sp.kernel != 0, sp.kernel == 0
	}
	// The peer's previous probe: now its acknowledged probe's round trip
	// is known, once per probe.
	if h.prevSeq != noSeq && h.held != noHeld {
		if c := &p.carriers[h.prevSeq%64]; c.seq == h.prevSeq && c.raw > 0 {
			if s := &p.sent[c.ack%64]; s.seq == c.ack && !s.timed {
				rtt = max(c.raw-int64(h.held), 0)
				s.timed = true
			}
			c.raw = 0
		}
	}
	ms.mu.Lock()
	if kernelStamp {
		p.kernelTx++
	}
	if userStamp {
		p.userTx++
	}
	p.record(h.ack, h.epoch, uint64(h.count), rtt, h.flags)
	ms.mu.Unlock()
}

// record counts an answer acknowledging probe ack, which the peer (in its
// run peerEpoch) says was the count-th probe of this agent's run it got,
// and a round trip (-1: none).
func (p *meshPeer) record(ack uint64, peerEpoch uint32, count uint64, rtt int64, flags byte) {
	p.replies++
	p.flagsSeen |= flags
	switch {
	case !p.haveAck || peerEpoch != p.ackEpoch:
		// The first answer, or the peer restarted: count from here.
		p.haveAck, p.ackEpoch = true, peerEpoch
		p.lastAck, p.lastCount = ack, count
		p.judgedAll++
	case ack > p.lastAck:
		ds := ack - p.lastAck
		dc := min(count-min(count, p.lastCount), ds)
		p.judgedAll += ds
		p.lostAll += ds - dc
		p.lastAck, p.lastCount = ack, count
	}
	if rtt < 0 {
		return
	}
	ns := uint32(min(rtt, int64(^uint32(0))))
	if p.nBucket < len(p.bucketRTT) {
		p.bucketRTT[p.nBucket] = ns
		p.nBucket++
	}
	p.ring[p.ringHead] = ns
	p.ringHead = (p.ringHead + 1) % len(p.ring)
	p.ringN = min(p.ringN+1, len(p.ring))
}

// fresh takes the peer's probe seq of its run epoch, sent at tx and
// arrived at rx, once: a replayed probe (within the minute meshSkew lets
// through) finds its seq seen, and a new run of the peer must be newer
// than the last.
func (p *meshPeer) fresh(epoch uint32, seq uint64, tx, rx int64) bool {
	if !p.rHave || epoch != p.rEpoch {
		if p.rHave && tx <= p.rLastTx {
			return false
		}
		p.rHave, p.rEpoch, p.rMax, p.rWin, p.rCount = true, epoch, seq, 1, 1
		p.rLastTx, p.rLastRx = tx, rx
		return true
	}
	switch {
	case seq > p.rMax:
		d := seq - p.rMax
		if d >= 64 {
			p.rWin = 1
		} else {
			p.rWin = p.rWin<<d | 1
		}
		p.rMax, p.rLastRx = seq, rx
	case p.rMax-seq >= 64:
		return false // too old to tell
	default:
		bit := uint64(1) << (p.rMax - seq)
		if p.rWin&bit != 0 {
			return false
		}
		p.rWin |= bit
	}
	p.rCount++
	p.rLastTx = max(p.rLastTx, tx)
	return true
}

// allow takes one token of the peer's bucket at now (ns).
func (p *meshPeer) allow(now int64) bool {
	if p.tokAt != 0 {
		p.tokens = min(p.rateMax, p.tokens+float64(now-p.tokAt)/1e9*p.rateF)
	}
	p.tokAt = now
	if p.tokens < 1 {
		return false
	}
	p.tokens--
	return true
}

// refuse notes a datagram the agent dropped, in the agent's summarised
// refusals log.
func (ms *meshSession) refuse(from netip.AddrPort, why string) {
	ms.node.srv.refused.note(from.Addr().Unmap(), kindMesh, why)
}
