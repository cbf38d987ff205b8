package agent

import (
	"net/netip"
	"testing"
)

// TestGateLeave: a connection that leaves is the one taken out of its
// source's list, once.
func TestGateLeave(t *testing.T) {
	ln := listen(t)
	g := newGate(100, 10)
	var ps []*pending
	for range 3 {
		_, s := tcpPair(t, ln, "127.0.0.2")
		ps = append(ps, g.admit(s))
	}
	g.leave(ps[1])
	src := netip.MustParseAddr("127.0.0.2")
	if l := g.bySrc[src]; len(l) != 2 || l[0] != ps[0] || l[1] != ps[2] || g.n != 2 {
		t.Fatalf("after the second left: %d pending, list %v; want the first and third", g.n, l)
	}
	g.leave(ps[1]) // again: nothing
	g.leave(ps[0])
	g.leave(ps[2])
	if _, ok := g.bySrc[src]; ok || g.n != 0 {
		t.Errorf("all left: %d pending, sources %v", g.n, g.bySrc)
	}
}

// TestGateTotalOneEach: at the total with one silent connection per
// source, room is still made.
func TestGateTotalOneEach(t *testing.T) {
	ln := listen(t)
	g := newGate(2, 10)
	for _, src := range []string{"127.0.0.2", "127.0.0.3"} {
		_, s := tcpPair(t, ln, src)
		if g.admit(s) == nil {
			t.Fatal("refused under the total")
		}
	}
	_, s := tcpPair(t, ln, "127.0.0.4")
	if g.admit(s) == nil || g.n != 2 {
		t.Errorf("at the total with two silent connections: refused or %d pending", g.n)
	}
}
