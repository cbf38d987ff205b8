package main

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/pathmtu"
)

// probePathMTU runs the don't-fragment probe toward peer at the egress
// interface's MTU. Failures to probe at all (no root, no route) land in
// the result's Error, not in a command error: the rest of doctor holds.
func probePathMTU(ctx context.Context, peer string) (*doctor.PathMTU, error) {
	addr, err := netip.ParseAddr(peer)
	if err != nil {
		return nil, fmt.Errorf("--peer %q: not an IP address (give the peer's address on the fast link, e.g. 198.18.0.2)", peer)
	}
	out := &doctor.PathMTU{Peer: addr.String()}
	iface, mtu, err := pathmtu.EgressMTU(addr)
	if err != nil {
		out.Error = err.Error()
		return out, nil
	}
	// Loopback's MTU (65536) exceeds the largest IPv4 packet.
	out.Interface, out.MTU = iface, min(mtu, 65535)
	res, err := pathmtu.Probe(ctx, addr, out.MTU, pathmtu.Options{})
	if err != nil {
		out.Error = err.Error()
		return out, nil
	}
	out.OK, out.Largest, out.Probes = res.OK, res.Largest, res.Probes
	if len(res.Failures) > 0 {
		out.Detail = res.Failures[0].Detail
	}
	return out, nil
}
