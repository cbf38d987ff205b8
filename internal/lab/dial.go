package lab

import (
	"context"
	"fmt"
	"net"
)

// Dialer returns a function that opens connections from host h of lab
// name (Switch for the controller's seat at SwitchAddr), as
// net.Dialer.DialContext does: each socket is made on a thread that joins
// the host's network namespace and leaves it again, and a socket stays in
// the namespace it was made in. So a process in the machine's own
// namespace can talk to the agents of a lab's hosts, which only the lab
// reaches. The dial itself holds the thread: keep its ctx short.
func Dialer(name string, h Host) (func(ctx context.Context, network, address string) (net.Conn, error), error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if _, err := ParseHost(string(h)); err != nil {
		return nil, err
	}
	if err := requireRoot(); err != nil {
		return nil, err
	}
	ns := Namespace(name, h)
	if st, err := probeNS(nsPath(ns)); err != nil {
		return nil, err
	} else if st != nsPinned {
		return nil, fmt.Errorf("lab %s has no host %s (%s does not exist)", name, h, ns)
	}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		var c net.Conn
		err := inNS(ns, func() error {
			var d net.Dialer
			var err error
			c, err = d.DialContext(ctx, network, address)
			return err
		})
		return c, err
	}, nil
}
