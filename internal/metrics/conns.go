package metrics

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// connGate bounds the metrics listener's connections, in all and per
// source address, without letting idle ones lock scrapes out. A bare cap
// (netutil.LimitListener) stops accepting while the cap is full, so
// sixteen idle keep-alive connections, refreshed by one cheap request a
// minute, kept every scrape waiting in the kernel's backlog. Here, at a
// cap, the connection that has waited longest without a request in
// progress (idle between requests, or new with nothing in its receive
// queue) is closed to make room, as the agent's gate does; only when every
// connection at the cap is serving a request is the newcomer turned away.
// The http.Server reports each connection's state through track
// (http.Server.ConnState).
type connGate struct {
	net.Listener
	max, perSource int

	mu    sync.Mutex
	conns map[net.Conn]*connSlot
}

// connSlot is one open connection, as the gate sees it.
type connSlot struct {
	src   netip.Addr
	state http.ConnState
	since time.Time // when it entered its state
}

func newConnGate(ln net.Listener, max, perSource int) *connGate {
	return &connGate{Listener: ln, max: max, perSource: perSource, conns: map[net.Conn]*connSlot{}}
}

// Accept admits the next connection: at a cap it makes room by closing
// the oldest connection without a request in progress (of the newcomer's
// source at the per-source cap), or closes the newcomer when there is
// none.
func (g *connGate) Accept() (net.Conn, error) {
	for {
		c, err := g.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if g.admit(c) {
			return c, nil
		}
		c.Close()
	}
}

func (g *connGate) admit(c net.Conn) bool {
	src := netip.Addr{}
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		src = ap.Addr().Unmap()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, s := range g.conns {
		if s.src == src {
			n++
		}
	}
	if n >= g.perSource && !g.evict(func(s *connSlot) bool { return s.src == src }) {
		return false
	}
	if len(g.conns) >= g.max && !g.evict(func(*connSlot) bool { return true }) {
		return false
	}
	g.conns[c] = &connSlot{src: src, state: http.StateNew, since: time.Now()}
	return true
}

// evict closes the oldest connection among those of which is taken that
// has no request in progress, and reports whether there was one. The
// caller holds mu.
func (g *connGate) evict(which func(*connSlot) bool) bool {
	var oldest net.Conn
	var at time.Time
	for c, s := range g.conns {
		if !which(s) || !evictable(c, s) {
			continue
		}
		if oldest == nil || s.since.Before(at) {
			oldest, at = c, s.since
		}
	}
	if oldest == nil {
		return false
	}
	oldest.Close()
	delete(g.conns, oldest) // the server reports StateClosed later: ignored
	return true
}

// evictable: idle between requests, or new and silent (nothing waiting
// to be read: a client that connects to scrape sends its request at once).
func evictable(c net.Conn, s *connSlot) bool {
	switch s.state {
	case http.StateIdle:
		return true
	case http.StateNew:
		return unread(c) == 0
	}
	return false
}

// track is the http.Server's ConnState hook.
func (g *connGate) track(c net.Conn, state http.ConnState) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s, ok := g.conns[c]
	if !ok {
		return // evicted already
	}
	switch state {
	case http.StateClosed, http.StateHijacked:
		delete(g.conns, c)
	default:
		s.state, s.since = state, time.Now()
	}
}

// open is how many connections the gate holds, for tests.
func (g *connGate) open() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.conns)
}

// unread is how many bytes wait in c's receive queue; -1 when unknown
// (then the connection is not evicted).
func unread(c net.Conn) int {
	sc, ok := c.(syscall.Conn)
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
