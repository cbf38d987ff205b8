package pathmtu

import (
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
)

// EgressMTU returns the interface the kernel would route dst through and
// that interface's MTU, as `ip route get` finds it (RTM_GETROUTE over
// netlink), in the calling thread's network namespace. A cached path MTU
// lower than the interface's does not change the answer: Probe reports
// that one (as local_mtu).
func EgressMTU(dst netip.Addr) (iface string, mtu int, err error) {
	dst = dst.Unmap()
	if !dst.IsValid() {
		return "", 0, fmt.Errorf("pathmtu: egress MTU: invalid destination")
	}
	var routes []netlink.Route
	if z := dst.Zone(); z != "" {
		// A link-local destination is only routable through its zone.
		routes, err = netlink.RouteGetWithOptions(dst.AsSlice(), &netlink.RouteGetOptions{Oif: z})
	} else {
		routes, err = netlink.RouteGet(dst.AsSlice())
	}
	if err != nil {
		return "", 0, fmt.Errorf("pathmtu: route to %v: %w", dst, err)
	}
	if len(routes) == 0 || routes[0].LinkIndex <= 0 {
		return "", 0, fmt.Errorf("pathmtu: route to %v: no outgoing interface", dst)
	}
	link, err := netlink.LinkByIndex(routes[0].LinkIndex)
	if err != nil {
		return "", 0, fmt.Errorf("pathmtu: interface %d of the route to %v: %w", routes[0].LinkIndex, dst, err)
	}
	a := link.Attrs()
	return a.Name, a.MTU, nil
}
