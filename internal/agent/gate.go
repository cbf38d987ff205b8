package agent

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/engine"
)

// The connection budget. A connection is "pending" from its accept until
// it has authenticated (control) or shown a cookie the running test
// expects (data); the gate bounds how many are pending, in all and per
// source address, and for how long (Server.AuthBudget).
//
// When a source is at its cap (or the agent at its total), the newcomer is
// not refused: the gate closes the pending connection that has waited
// longest for its peer with nothing sent, from the source holding the
// most. A legitimate client sends at once (hello, or its data preamble)
// and its bytes are in the socket by the time anyone looks, so a flood of
// silent connections from the very address the client uses, as in the
// lab, only ever evicts itself. A connection whose bytes are waiting, or
// that the agent is busy with, is never evicted; only when every pending
// connection is such is the newcomer refused.
const (
	// defaultMaxPending bounds pending connections in all: a few
	// thousand goroutines and 4 KiB frame buffers, some 30 MB at most.
	defaultMaxPending = 4096
	// defaultMaxPendingPerSource bounds them per source address: room
	// for a bidirectional test of MaxStreams connecting at once, several
	// times over.
	defaultMaxPendingPerSource = 4*2*engine.MaxStreams + 64
	// defaultAuthBudget is the total time a connection has to
	// authenticate, or to show its cookie: every read and write of the
	// handshake counts against it.
	defaultAuthBudget = 3 * time.Second
)

// gate admits connections into the pending set.
type gate struct {
	max, perSource int

	mu    sync.Mutex
	bySrc map[netip.Addr][]*pending
	n     int
}

// pending is an admitted connection that has not yet proved itself.
type pending struct {
	net.Conn // reads through it mark the connection waiting for its peer

	src netip.Addr
	// waitSince is when the agent began waiting for the peer's next
	// bytes, in Unix nanoseconds; 0 while the agent works on what it read
	// (a MAC, a reply).
	waitSince atomic.Int64
	sent      atomic.Int64 // bytes the peer has sent so far
	evicted   atomic.Bool  // closed by the gate to make room
	done      bool         // left the gate (guarded by gate.mu)
}

func newGate(max, perSource int) *gate {
	return &gate{max: max, perSource: perSource, bySrc: map[netip.Addr][]*pending{}}
}

// Read marks the connection waiting while it blocks on the peer.
func (p *pending) Read(b []byte) (int, error) {
	p.waitSince.Store(time.Now().UnixNano())
	n, err := p.Conn.Read(b)
	p.waitSince.Store(0)
	p.sent.Add(int64(n))
	return n, err
}

// admit takes nc into the pending set, making room if needed. It returns
// nil when there is no room: every pending connection is one the peer is
// using.
func (g *gate) admit(nc net.Conn) *pending {
	src := engine.AddrPort(nc.RemoteAddr()).Addr().Unmap()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.bySrc[src]) >= g.perSource && !g.evictFrom(src) {
		return nil
	}
	if g.n >= g.max && !g.evictFrom(g.largestSource()) {
		return nil
	}
	p := &pending{Conn: nc, src: src}
	p.waitSince.Store(time.Now().UnixNano())
	g.bySrc[src] = append(g.bySrc[src], p)
	g.n++
	return p
}

// leave removes p from the pending set (it authenticated, or is done).
func (g *gate) leave(p *pending) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.remove(p)
}

func (g *gate) remove(p *pending) {
	if p.done {
		return
	}
	p.done = true
	list := g.bySrc[p.src]
	for i, q := range list {
		if q == p {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(g.bySrc, p.src)
	} else {
		g.bySrc[p.src] = list
	}
	g.n--
}

// largestSource is the source holding the most pending connections.
func (g *gate) largestSource() netip.Addr {
	var best netip.Addr
	n := -1
	for src, list := range g.bySrc {
		if len(list) > n {
			best, n = src, len(list)
		}
	}
	return best
}

// evictFrom closes src's pending connection that has waited longest for
// its peer with no bytes waiting to be read, and reports whether there
// was one.
func (g *gate) evictFrom(src netip.Addr) bool {
	var victim *pending
	var since int64
	for _, p := range g.bySrc[src] {
		w := p.waitSince.Load()
		if w == 0 || (victim != nil && w >= since) || unread(p.Conn) != 0 {
			continue
		}
		victim, since = p, w
	}
	if victim == nil {
		return false
	}
	victim.evicted.Store(true)
	g.remove(victim)
	victim.Conn.Close()
	return true
}

// closeAll closes every pending connection (the agent is stopping).
func (g *gate) closeAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, list := range g.bySrc {
		for _, p := range list {
			p.Conn.Close()
		}
	}
}

// unread is how many bytes wait in nc's receive queue; -1 when unknown
// (then the connection is not evicted).
func unread(nc net.Conn) int {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return -1
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	n := -1
	if err := rc.Control(func(fd uintptr) {
		if v, err := unix.IoctlGetInt(int(fd), unix.SIOCINQ); err == nil {
			n = v
		}
	}); err != nil {
		return -1
	}
	return n
}
