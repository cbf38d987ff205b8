package lab

import (
	"context"
	"fmt"
)

// Side says which direction of a host's link a fault slows.
type Side string

// The sides of a fault.
const (
	// SendSide shapes the host's lab0 egress: what the host sends.
	SendSide Side = "send"
	// ReceiveSide shapes the egress of the host's bridge port toward it:
	// what the host receives.
	ReceiveSide Side = "receive"
)

// PlantFault shapes one host of a lab of many hosts with tbf at rate on
// one side of its link: a slow NIC, cable or switch port that a fleet run
// must find. The next 'lab up' removes it, as it removes every shape it was
// not asked for; so does PlantFault with rate 0.
func PlantFault(ctx context.Context, name string, h Host, side Side, rate Rate) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if h.Index() == 0 {
		return fmt.Errorf("host %q: a fault goes on a host of a lab of many hosts (h01, h02, …)", h)
	}
	if rate != 0 && (rate < minRate || rate > maxRate) {
		return fmt.Errorf("rate %s is out of range (%s to %s)", rate, minRate, maxRate)
	}
	ns, link := Namespace(name, h), Iface
	switch side {
	case SendSide:
	case ReceiveSide:
		ns, link = Namespace(name, Switch), string(h)
	default:
		return fmt.Errorf("fault side %q: use %q or %q", side, SendSide, ReceiveSide)
	}
	_, unlock, err := openLabs(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if st, err := probeNS(nsPath(ns)); err != nil {
		return err
	} else if st != nsPinned {
		return fmt.Errorf("lab %s has no host %s (%s does not exist)", name, h, ns)
	}
	c, err := dial(ns)
	if err != nil {
		return err
	}
	defer c.Close()
	l, err := c.link(link)
	if err != nil {
		return err
	}
	if l == nil {
		return fmt.Errorf("lab %s has no host %s (%s has no %s)", name, h, ns, link)
	}
	if rate == 0 {
		q, err := c.rootQdisc(l)
		if err != nil || isDefaultQdisc(q) {
			return err
		}
		if err := c.nl.QdiscDel(q); err != nil {
			return fmt.Errorf("removing the fault on %s in %s: %w", link, ns, err)
		}
		return nil
	}
	if err := c.nl.QdiscReplace(tbfFor(l.Attrs().Index, rate)); err != nil {
		return fmt.Errorf("shaping %s in %s to %s: %w", link, ns, rate, err)
	}
	return nil
}
