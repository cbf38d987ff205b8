package agent

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/mesh"
)

// The probes' hot loops: the prober's tick, the readers of its replies
// and the responder. None of them allocates once running (tested:
// TestMeshLoopsDoNotAllocate): a mesh agent runs for months at 10 probes
// a second to each of its peers, and every allocation is garbage the
// collector would have to chase.

// meshPeer is one peer as this agent sees it: the keys of both pairs
// with it, the prober's counts of this agent's pair to it, and the
// responder's state of the peer's pair to this agent.
type meshPeer struct {
	idx  int
	name string
	dst  netip.AddrPort // its agent's port
	out  []byte         // pair key this agent → peer
	in   []byte         // pair key peer → this agent

	sendMAC   *meshMAC   // the prober's
	replyMACs []*meshMAC // each flow reader's
	respMAC   *meshMAC   // the responder's

	// The prober's side, under meshSession.mu.
	seq                   uint64
	sent, replies         uint32 // this bucket's
	respEpoch             uint32 // the responder's run, as its replies say
	haveReply             bool
	lastSeq, lastCount    uint64
	judgedAll, lostAll    uint64 // probes whose fate is known, and lost, ever
	judgedMark, lostMark  uint64 // at the last bucket's close
	flagsSeen             byte   // the replies' flags this bucket
	bucketRTT             []uint32
	nBucket               int
	ring                  []uint32 // the last minute's round trips, ns
	ringN, ringHead       int
	pair                  mesh.Pair
	verdict               mesh.Verdict
	view                  []viewEntry // the peer's pairs, as its last view says
	viewAt                time.Time   // when that view came
	viewTx                int64       // its send time
	tputs, tputsSkipped   int
	lastTputErr           string
	lastTputInconclusive  string

	// The responder's side, its goroutine only.
	rEpoch            uint32
	rHave             bool
	rMax, rWin        uint64 // highest seq seen, and a bitmap of the 64 below it
	rCount            uint32
	rLastTx           int64
	tokens            float64
	tokAt             int64
	rateMax, rateFill float64
}

// viewEntry is a peer's pair toward one host, as its view says.
type viewEntry struct {
	state        mesh.State
	since        int64
	inconclusive bool
}

func newMeshPeer(idx int, h MeshHost, port uint16, out, in []byte, rate float64, flows int) *meshPeer {
	p := &meshPeer{idx: idx, name: h.Name, dst: netip.AddrPortFrom(h.Addr.Unmap(), port), out: out, in: in,
		sendMAC: newMeshMAC(out), respMAC: newMeshMAC(in)}
	for range flows {
		p.replyMACs = append(p.replyMACs, newMeshMAC(out))
	}
	// Room for twice the bucket's probes, and the last minute's.
	p.bucketRTT = make([]uint32, int(2*rate*mesh.BucketLen.Seconds())+8)
	p.ring = make([]uint32, int(rate*float64(mesh.ReportBuckets)*mesh.BucketLen.Seconds())+8)
	// A peer may send twice this agent's rate (and a view), in bursts of
	// a second's worth: more is dropped unanswered.
	p.rateFill = 2*rate + 1
	p.rateMax = 2*rate + 5
	p.tokens = p.rateMax
	return p
}

// listenMeshUDP opens a UDP socket at addr with kernel receive
// timestamps.
func listenMeshUDP(addr netip.AddrPort) (*net.UDPConn, error) {
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(addr))
	if err != nil {
		return nil, err
	}
	rc, err := c.SyscallConn()
	if err == nil {
		cerr := rc.Control(func(fd uintptr) {
			err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
		})
		if err == nil {
			err = cerr
		}
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// kernelTime returns the SCM_TIMESTAMPNS receive time in oob, Unix ns, or
// 0. Hand-written: unix.ParseSocketControlMessage allocates a slice per
// call, and this runs for every datagram.
func kernelTime(oob []byte) int64 {
	const hdr = int(unsafe.Sizeof(unix.Cmsghdr{}))
	for len(oob) >= hdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			return 0
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && l >= hdr+16 {
			sec := int64(binary.NativeEndian.Uint64(oob[hdr:]))
			nsec := int64(binary.NativeEndian.Uint64(oob[hdr+8:]))
			return sec*1e9 + nsec
		}
		l = (l + 7) &^ 7
		if l >= len(oob) {
			return 0
		}
		oob = oob[l:]
	}
	return 0
}

// probe sends a request to every peer at each tick, the ticks aligned on
// the clock so that the agents of a mesh probe at the same moments (each
// responder then wakes once for a burst of requests, not once per
// request), and closes a bucket every mesh.BucketLen.
func (ms *meshSession) probe() {
	period := time.Duration(float64(time.Second) / ms.rate)
	now := time.Now()
	next := now.Truncate(period).Add(period)
	bucketEnd := now.Truncate(mesh.BucketLen).Add(mesh.BucketLen)
	viewAt := bucketEnd.Add(period / 2)
	t := time.NewTimer(time.Until(next))
	defer t.Stop()
	var buf [meshProbeLen]byte
	var tick uint64
	for {
		select {
		case <-ms.ctx.Done():
			return
		case <-t.C:
		}
		now = time.Now()
		ms.host.late(now.Sub(next))
		ms.sendRequests(buf[:], int(tick%uint64(ms.flows)))
		tick++
		if !now.Before(bucketEnd) {
			ms.closeBucket(bucketEnd)
			bucketEnd = bucketEnd.Add(mesh.BucketLen)
		}
		if !now.Before(viewAt) {
			ms.sendViews()
			viewAt = viewAt.Add(meshViewEvery)
		}
		next = next.Add(period)
		if d := time.Until(next); d < 0 {
			// A tick missed (the host was stalled): skip ahead rather
			// than burst.
			next = time.Now().Truncate(period).Add(period)
		}
		t.Reset(time.Until(next))
	}
}

// sendRequests sends one request to every peer from flow f's socket.
func (ms *meshSession) sendRequests(buf []byte, f int) {
	h := meshHeader{typ: meshRequest, flow: byte(f), id: ms.id8, src: uint16(ms.self), epoch: ms.epoch}
	c := ms.socks[f]
	for _, p := range ms.peers {
		if p == nil {
			continue
		}
		ms.mu.Lock()
		h.seq = p.seq
		p.seq++
		p.sent++
		ms.mu.Unlock()
		h.dst = uint16(p.idx)
		h.tx = time.Now().UnixNano()
		h.put(buf)
		p.sendMAC.tag(buf, meshHeaderLen)
		c.WriteToUDPAddrPort(buf[:meshProbeLen], p.dst) // a failed send is a lost probe
	}
}

// readReplies reads the replies that come back to flow f's socket.
func (ms *meshSession) readReplies(f int) {
	c := ms.socks[f]
	var buf [meshProbeLen + 1]byte
	var oob [128]byte
	var h meshHeader
	for {
		n, oobn, _, from, err := c.ReadMsgUDPAddrPort(buf[:], oob[:])
		if err != nil {
			if ms.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		rx := kernelTime(oob[:oobn])
		if rx == 0 {
			rx = time.Now().UnixNano()
		}
		ms.reply(buf[:n], from, rx, f, &h)
	}
}

// reply takes one reply to flow f, received at rx (Unix ns).
func (ms *meshSession) reply(b []byte, from netip.AddrPort, rx int64, f int, h *meshHeader) {
	if parseMeshHeader(b, h) != nil || h.typ != meshReply || h.id != ms.id8 || int(h.src) != ms.self || int(h.dst) >= len(ms.peers) {
		return
	}
	p := ms.peers[h.dst]
	if p == nil || from.Addr().Unmap() != p.dst.Addr() || from.Port() != p.dst.Port() || !p.replyMACs[f].check(b) || h.epoch != ms.epoch {
		return
	}
	rtt := max(rx-h.tx-int64(h.turnaround), 0)
	respEpoch, count := uint32(h.count>>32), uint32(h.count)
	ms.mu.Lock()
	p.record(h.seq, respEpoch, uint64(count), rtt, h.flags)
	ms.mu.Unlock()
}

// record counts a reply to request seq, which the responder (in its run
// respEpoch) says was the count-th request of this agent's run it got.
func (p *meshPeer) record(seq uint64, respEpoch uint32, count uint64, rtt int64, flags byte) {
	if seq >= p.seq {
		return // a request not sent: only a peer with the key makes one
	}
	p.replies++
	p.flagsSeen |= flags
	switch {
	case !p.haveReply || respEpoch != p.respEpoch:
		// The first reply, or the responder restarted: count from here.
		p.haveReply, p.respEpoch = true, respEpoch
		p.lastSeq, p.lastCount = seq, count
		p.judgedAll++
	case seq > p.lastSeq:
		ds := seq - p.lastSeq
		dc := min(count-min(count, p.lastCount), ds)
		p.judgedAll += ds
		p.lostAll += ds - dc
		p.lastSeq, p.lastCount = seq, count
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

// respond answers requests and takes views on the agent's port.
func (ms *meshSession) respond() {
	var buf [meshMaxViewLen + 1]byte
	var oob [128]byte
	var h meshHeader
	for {
		n, oobn, _, from, err := ms.resp.ReadMsgUDPAddrPort(buf[:], oob[:])
		if err != nil {
			if ms.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		rx := kernelTime(oob[:oobn])
		if rx == 0 {
			rx = time.Now().UnixNano()
		}
		ms.request(buf[:n], from, rx, &h)
	}
}

// request answers one request (or takes one view) received at rx.
func (ms *meshSession) request(b []byte, from netip.AddrPort, rx int64, h *meshHeader) {
	if parseMeshHeader(b, h) != nil || h.typ == meshReply || h.id != ms.id8 || int(h.dst) != ms.self || int(h.src) >= len(ms.peers) {
		ms.refuse(from, "a datagram that is not of this mesh, or not for this agent")
		return
	}
	p := ms.peers[h.src]
	if p == nil || from.Addr().Unmap() != p.dst.Addr() {
		ms.refuse(from, "a mesh datagram from an address that is not its sender's")
		return
	}
	if !p.respMAC.check(b) {
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
	if !p.fresh(h.epoch, h.seq, h.tx) || !p.allow(rx) {
		return // a replay, or more than the peer may send: unanswered
	}
	p.rCount++
	h.typ = meshReply
	h.flags = byte(ms.flags.Load())
	h.count = uint64(ms.epoch)<<32 | uint64(p.rCount)
	h.turnaround = uint32(min(max(time.Now().UnixNano()-rx, 0), int64(^uint32(0))))
	h.put(b)
	p.respMAC.tag(b, meshHeaderLen)
	ms.resp.WriteToUDPAddrPort(b[:meshProbeLen], from)
}

// fresh takes request seq of the peer's run epoch sent at tx, once: a
// replayed request (within the minute meshSkew lets through) finds its
// seq seen, and a new run of the peer must be newer than the last.
func (p *meshPeer) fresh(epoch uint32, seq uint64, tx int64) bool {
	if !p.rHave || epoch != p.rEpoch {
		if p.rHave && tx <= p.rLastTx {
			return false
		}
		p.rHave, p.rEpoch, p.rMax, p.rWin, p.rCount = true, epoch, seq, 1, 0
		p.rLastTx = tx
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
		p.rMax = seq
	case p.rMax-seq >= 64:
		return false // too old to tell
	default:
		bit := uint64(1) << (p.rMax - seq)
		if p.rWin&bit != 0 {
			return false
		}
		p.rWin |= bit
	}
	p.rLastTx = max(p.rLastTx, tx)
	return true
}

// allow takes one token of the peer's bucket at now (ns).
func (p *meshPeer) allow(now int64) bool {
	if p.tokAt != 0 {
		p.tokens = min(p.rateMax, p.tokens+float64(now-p.tokAt)/1e9*p.rateFill)
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
