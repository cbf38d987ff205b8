// Package pathwatch tells whether the network path to a peer still exists:
// the interface a run started on, the local address it used, a route to
// the peer, and the peer's neighbour entry. The client and the agent ask
// it when no byte has moved for a while, so that a run whose link was
// removed, whose address went away or whose peer stopped answering ends
// at once with the cause named, not after its length and a grace of
// silence (docs/architecture.md, "The agent's protocol").
//
// It reads the kernel's tables over rtnetlink (vishvananda/netlink), in
// the calling thread's network namespace, live only.
package pathwatch

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Route is the way from this host to a peer as the kernel chose it when
// a run started.
type Route struct {
	Peer  netip.Addr // the peer's address
	Src   netip.Addr // the local address the run used
	Index int        // the interface's index
	Iface string     // and its name, as it was then
	// Gateway is the next hop when the peer is not on the link itself.
	Gateway netip.Addr
}

// Lookup asks the kernel which interface and next hop reach peer from
// src, as `ip route get PEER from SRC` does.
func Lookup(peer, src netip.Addr) (*Route, error) {
	peer, src = peer.Unmap(), src.Unmap()
	opts := &netlink.RouteGetOptions{}
	if src.IsValid() && !src.IsUnspecified() {
		opts.SrcAddr = src.AsSlice()
	}
	rs, err := netlink.RouteGetWithOptions(peer.AsSlice(), opts)
	if err != nil {
		return nil, fmt.Errorf("looking up the route to %s: %w", peer, err)
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("looking up the route to %s: the kernel returned none", peer)
	}
	r := &Route{Peer: peer, Src: src, Index: rs[0].LinkIndex}
	if gw, ok := netip.AddrFromSlice(rs[0].Gw); ok {
		r.Gateway = gw.Unmap()
	}
	if !r.Src.IsValid() || r.Src.IsUnspecified() {
		if s, ok := netip.AddrFromSlice(rs[0].Src); ok {
			r.Src = s.Unmap()
		}
	}
	if l, err := netlink.LinkByIndex(r.Index); err == nil {
		r.Iface = l.Attrs().Name
	}
	return r, nil
}

// Check says what broke the route since Lookup, in a few words ("lab0 was
// removed", "198.18.0.1 was removed from lab0"), or returns nil while the
// path still holds as far as this host can tell. A nil Route always
// holds. A failure to ask the kernel is not a broken path: Check then
// returns nil too, and the run goes on.
func (r *Route) Check() error {
	if r == nil {
		return nil
	}
	link, err := netlink.LinkByIndex(r.Index)
	var nf netlink.LinkNotFoundError
	switch {
	case errors.As(err, &nf) || errors.Is(err, unix.ENODEV):
		return fmt.Errorf("%s was removed", r.name())
	case err != nil:
		return nil
	}
	a := link.Attrs()
	switch {
	case a.Flags&net.FlagUp == 0:
		return fmt.Errorf("%s was set down", r.name())
	case a.OperState == netlink.OperLowerLayerDown || a.OperState == netlink.OperDown:
		return fmt.Errorf("%s lost its link (the far end went down or was unplugged)", r.name())
	}
	if gone, err := r.srcGone(); err == nil && gone {
		return fmt.Errorf("%s was removed from %s", r.Src, r.name())
	}
	rs, err := netlink.RouteGet(r.Peer.AsSlice())
	if errors.Is(err, unix.ENETUNREACH) || errors.Is(err, unix.EHOSTUNREACH) || err == nil && len(rs) == 0 {
		return fmt.Errorf("no route to %s any more", r.Peer)
	}
	if err == nil && rs[0].LinkIndex != r.Index {
		if l, lerr := netlink.LinkByIndex(rs[0].LinkIndex); lerr == nil {
			return fmt.Errorf("the route to %s now leaves through %s, not %s", r.Peer, l.Attrs().Name, r.name())
		}
	}
	if r.neighbourFailed() {
		return fmt.Errorf("%s does not answer on %s (its neighbour entry failed)", r.nextHop(), r.name())
	}
	return nil
}

// name is the interface's name, or its index when the name was unknown.
func (r *Route) name() string {
	if r.Iface != "" {
		return r.Iface
	}
	return fmt.Sprintf("interface %d", r.Index)
}

// srcGone reports whether the local address is on no interface any more.
func (r *Route) srcGone() (bool, error) {
	if !r.Src.IsValid() || r.Src.IsLoopback() {
		return false, nil
	}
	addrs, err := netlink.AddrList(nil, family(r.Src))
	if err != nil {
		return false, err
	}
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP); ok && ip.Unmap() == r.Src {
			return false, nil
		}
	}
	return true, nil
}

func (r *Route) nextHop() netip.Addr {
	if r.Gateway.IsValid() {
		return r.Gateway
	}
	return r.Peer
}

// neighbourFailed reports whether the next hop's neighbour entry says it
// did not answer ARP or neighbour discovery.
func (r *Route) neighbourFailed() bool {
	hop := r.nextHop()
	ns, err := netlink.NeighList(r.Index, family(hop))
	if err != nil {
		return false
	}
	for _, n := range ns {
		if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == hop {
			return n.State&netlink.NUD_FAILED != 0
		}
	}
	return false
}

func family(a netip.Addr) int {
	if a.Is4() {
		return netlink.FAMILY_V4
	}
	return netlink.FAMILY_V6
}
