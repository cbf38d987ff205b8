//go:build !linux

package pathmtu

import (
	"context"
	"errors"
	"net/netip"
)

// errUnsupported: the probe needs Linux's IP_MTU_DISCOVER, IP_RECVERR and
// netlink.
var errUnsupported = errors.New("pathmtu: path-MTU probing needs Linux")

// Probe is not available off Linux.
func Probe(ctx context.Context, dst netip.Addr, mtu int, opts Options) (Result, error) {
	res := Result{Dst: dst.Unmap(), Size: mtu, Failures: []Failure{}}
	if err := checkArgs(res.Dst, mtu); err != nil {
		return res, err
	}
	return res, errUnsupported
}

// EgressMTU is not available off Linux.
func EgressMTU(dst netip.Addr) (iface string, mtu int, err error) {
	return "", 0, errUnsupported
}
