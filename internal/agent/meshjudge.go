package agent

import (
	"encoding/binary"
	"slices"
	"time"

	"github.com/linerate/linerate/internal/mesh"
)

// Judging: every mesh.BucketLen the prober closes a bucket of each of its
// pairs and judges it (internal/mesh); every meshViewEvery it tells each
// peer the states of its pairs (a view), so that every agent holds the
// whole mesh's states and blames as the controller does (Figures, for
// the metrics).

// closeBucket closes the bucket that ended at end, for every pair.
func (ms *meshSession) closeBucket(end time.Time) {
	contended, drops := ms.host.bucket(ms.node.srv.fs())
	var fl uint32
	if contended {
		fl |= uint32(meshFlagContended)
	}
	if drops {
		fl |= uint32(meshFlagHostDrops)
	}
	ms.flags.Store(fl)
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for _, p := range ms.peers {
		if p == nil {
			continue
		}
		b := mesh.Bucket{End: end.Unix(), Sent: p.sentB, Replies: p.replies,
			Judged: uint32(p.judgedAll - p.judgedMark), Lost: uint32(p.lostAll - p.lostMark)}
		p.judgedMark, p.lostMark = p.judgedAll, p.lostAll
		if p.nBucket > 0 {
			s := p.bucketRTT[:p.nBucket]
			slices.Sort(s)
			b.P50, b.P99 = mesh.Quantile(s, 0.5), mesh.Quantile(s, 0.99)
		}
		// The pair's own record: this host contended, or the peer said
		// it was (its replies' flags), and whether the peer's socket
		// buffers dropped this agent's requests.
		b.Contended = contended || p.flagsSeen&meshFlagContended != 0
		b.HostDrops = p.flagsSeen&meshFlagHostDrops != 0
		p.verdict = p.pair.Add(b)
		p.sentB, p.replies, p.nBucket, p.flagsSeen = 0, 0, 0, 0
	}
}

// State codes of a view's entries.
const (
	viewUnknown byte = iota
	viewOK
	viewDegraded
	viewDown
	viewInconclusive // ok, but something its record excuses would have degraded it
)

func viewCode(v mesh.Verdict) byte {
	switch v.State {
	case mesh.OK:
		if v.Inconclusive != "" {
			return viewInconclusive
		}
		return viewOK
	case mesh.Degraded:
		return viewDegraded
	case mesh.Down:
		return viewDown
	}
	return viewUnknown
}

// sendViews tells every peer the states of this agent's pairs, from flow
// f's socket.
func (ms *meshSession) sendViews(f int) {
	n := len(ms.hosts)
	size := meshHeaderLen + n*meshEntryLen + meshTagLen
	s := ms.socks[f]
	h := meshHeader{typ: meshView, id: ms.id8, src: uint16(ms.self), epoch: ms.epoch, entries: uint16(n)}
	for _, p := range ms.peers {
		if p == nil {
			continue
		}
		b := s.next(p.dst, size)
		if b == nil {
			ms.flush(f)
			b = s.next(p.dst, size)
		}
		ms.mu.Lock()
		for i, q := range ms.peers {
			e := b[meshHeaderLen+i*meshEntryLen:]
			e[0] = viewUnknown
			binary.BigEndian.PutUint32(e[1:], 0)
			if q != nil {
				e[0] = viewCode(q.verdict)
				binary.BigEndian.PutUint32(e[1:], uint32(max(q.verdict.Since, 0)))
			}
		}
		ms.mu.Unlock()
		ms.viewSeq++
		h.dst, h.seq, h.tx = uint16(p.idx), ms.viewSeq, time.Now().UnixNano()
		h.put(b)
		p.sendMAC.tag(b, size-meshTagLen)
		ms.keys[f].add(-1, 0)
	}
	ms.flush(f)
}

// takeView keeps a peer's view (checked: its MAC, its sender).
func (ms *meshSession) takeView(p *meshPeer, b []byte, h *meshHeader) {
	if int(h.entries) != len(ms.hosts) {
		return
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if h.tx <= p.viewTx {
		return // an older view, or this one replayed
	}
	if p.view == nil {
		p.view = make([]viewEntry, len(ms.hosts))
	}
	for i := range p.view {
		e := b[meshHeaderLen+i*meshEntryLen:]
		st := mesh.Unknown
		switch e[0] {
		case viewOK, viewInconclusive:
			st = mesh.OK
		case viewDegraded:
			st = mesh.Degraded
		case viewDown:
			st = mesh.Down
		}
		p.view[i] = viewEntry{state: st, since: int64(binary.BigEndian.Uint32(e[1:])), inconclusive: e[0] == viewInconclusive}
	}
	p.viewTx, p.viewAt = h.tx, time.Now()
}

// pairStatus is this agent's pair toward p, with its figures over the
// report window. Call with ms.mu held.
func (ms *meshSession) pairStatus(p *meshPeer) mesh.PairStatus {
	v := p.verdict
	ps := mesh.PairStatus{Src: ms.hosts[ms.self].Name, Dst: p.name, State: v.State, Since: time.Unix(v.Since, 0).UTC(),
		Why: v.Why, Inconclusive: v.Inconclusive, Loss: v.Loss, GoodputGbps: v.Goodput, Probes: v.Probes}
	if v.State == "" {
		ps.State = mesh.Unknown
	}
	if v.Since == 0 {
		ps.Since = ms.started.UTC().Truncate(time.Second)
	}
	if p.ringN > 0 {
		s := slices.Clone(p.ring[:p.ringN])
		slices.Sort(s)
		ps.RTTUS = &mesh.RTT{P50: float64(mesh.Quantile(s, 0.5)) / 1e3, P99: float64(mesh.Quantile(s, 0.99)) / 1e3}
	}
	return ps
}

// matrix is every pair of the mesh as this agent knows it: its own, and
// its peers' as their last views say (unknown when a view is stale).
func (ms *meshSession) matrix(now time.Time) []mesh.PairStatus {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	var out []mesh.PairStatus
	for _, p := range ms.peers {
		if p != nil {
			out = append(out, ms.pairStatus(p))
		}
	}
	for _, p := range ms.peers {
		if p == nil {
			continue
		}
		stale := p.view == nil || now.Sub(p.viewAt) > meshViewStale
		for j, h := range ms.hosts {
			if j == p.idx {
				continue
			}
			ps := mesh.PairStatus{Src: p.name, Dst: h.Name, State: mesh.Unknown}
			if !stale {
				e := p.view[j]
				ps.State, ps.Since = e.state, time.Unix(e.since, 0).UTC()
				if e.inconclusive {
					ps.Inconclusive = "its own record shows contention"
				}
			}
			out = append(out, ps)
		}
	}
	return out
}

// figures are the agent's metrics: its pairs, and the mesh's suspects as
// its views show them.
func (ms *meshSession) figures(now time.Time) *mesh.Figures {
	f := &mesh.Figures{Self: ms.hosts[ms.self].Name}
	ms.mu.Lock()
	for _, p := range ms.peers {
		if p == nil {
			continue
		}
		pf := mesh.PeerFigures{Peer: p.name, State: p.verdict.State, Loss: p.verdict.Loss}
		if pf.State == "" {
			pf.State = mesh.Unknown
		}
		if g := p.verdict.Goodput; g != nil {
			b := *g * 1e9 / 8
			pf.GoodputBytesS = &b
		}
		if p.ringN > 0 {
			s := slices.Clone(p.ring[:p.ringN])
			slices.Sort(s)
			var sum float64
			for _, x := range s {
				sum += float64(x)
			}
			pf.RTTCount, pf.RTTSum = uint64(len(s)), sum/1e9
			pf.P50, pf.P99 = float64(mesh.Quantile(s, 0.5))/1e9, float64(mesh.Quantile(s, 0.99))/1e9
		}
		f.Peers = append(f.Peers, pf)
	}
	ms.mu.Unlock()
	names := make([]string, len(ms.hosts))
	for i, h := range ms.hosts {
		names[i] = h.Name
	}
	f.Suspects = mesh.Blame(names, ms.matrix(now), nil, now)
	return f
}

// MeshFigures returns what the agent's mesh measured, for its metrics;
// nil when it is in no mesh.
func (s *Server) MeshFigures() *mesh.Figures {
	ms := s.meshSession()
	if ms == nil {
		return nil
	}
	return ms.figures(time.Now())
}
