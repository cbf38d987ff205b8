package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// upMany is Up for a lab of many hosts (c.Hosts != 0, already validated):
// the same reconciler over the switch, its bridge and ports, and K hosts.
// Hosts beyond K that an earlier up made are removed, so that up with a
// smaller --hosts shrinks the lab.
func upMany(ctx context.Context, c Config) (*UpResult, error) {
	dir, unlock, err := openLabs(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rec, err := readRecord(dir, c.Name)
	if err != nil {
		return nil, err
	}
	if err := notTwoHosts(c.Name, rec); err != nil {
		return nil, err
	}
	res := &UpResult{Name: c.Name, Scenario: c.Scenario, Hosts: c.Hosts, Record: recordPath(dir, c.Name), Changes: []string{}}
	return reconcile(ctx, dir, c, rec, res, &manyHosts{c: c, want: c.manySpec()})
}

// manyHosts plans a lab of many hosts: the switch, its bridge and ports,
// and K hosts.
type manyHosts struct {
	c    Config
	want manySpec
	v    *manyView
}

func (m *manyHosts) look() (bool, error) {
	var err error
	if m.v, err = viewMany(m.c.Name, m.c.Hosts); err != nil {
		return false, err
	}
	return m.v.sw.state != nsPinned, nil
}

func (m *manyHosts) structural() []change { return m.v.structuralPlan(m.want) }

func (m *manyHosts) settings() ([]change, error) { return m.v.settingsPlan(m.want) }

func (m *manyHosts) note(*record) {}

func (m *manyHosts) waitUp(ctx context.Context) error {
	deadline := time.Now().Add(operUpTimeout)
	for i := 1; i <= m.c.Hosts; i++ {
		if err := waitOperUpIn(ctx, Namespace(m.c.Name, HostN(i)), deadline, operUpTimeout); err != nil {
			return err
		}
	}
	return nil
}

// switchView is what the switch namespace looks like now.
type switchView struct {
	ns     string
	state  nsState
	lo     netlink.Link
	bridge netlink.Link
	addrs  []netlink.Addr        // IPv4 addresses of the bridge
	ports  map[int]netlink.Link  // links named h<ii>, by i
	qdiscs map[int]netlink.Qdisc // their root qdiscs
}

// manyView is what a lab of many hosts looks like now: the switch, and
// every host that is asked for or has something pinned, by index.
type manyView struct {
	name  string
	sw    switchView
	hosts map[int]hostView
}

func viewMany(name string, k int) (*manyView, error) {
	v := &manyView{name: name, hosts: map[int]hostView{}}
	var err error
	if v.sw, err = viewSwitch(Namespace(name, Switch)); err != nil {
		return nil, err
	}
	idx, err := foundHosts(name)
	if err != nil {
		return nil, err
	}
	for i := 1; i <= k; i++ {
		idx = append(idx, i)
	}
	for _, i := range idx {
		if _, done := v.hosts[i]; done {
			continue
		}
		if v.hosts[i], err = viewHost(Namespace(name, HostN(i))); err != nil {
			return nil, err
		}
	}
	return v, nil
}

func viewSwitch(ns string) (switchView, error) {
	v := switchView{ns: ns, ports: map[int]netlink.Link{}, qdiscs: map[int]netlink.Qdisc{}}
	var err error
	if v.state, err = probeNS(nsPath(ns)); err != nil || v.state != nsPinned {
		return v, err
	}
	c, err := dial(ns)
	if err != nil {
		return v, err
	}
	defer c.Close()
	links, err := c.links()
	if err != nil {
		return v, err
	}
	for _, l := range links {
		name := l.Attrs().Name
		switch i := Host(name).Index(); {
		case name == "lo":
			v.lo = l
		case name == Bridge:
			v.bridge = l
			if v.addrs, err = c.addrs(l, netlink.FAMILY_V4); err != nil {
				return v, err
			}
		case i > 0:
			v.ports[i] = l
			if v.qdiscs[i], err = c.rootQdisc(l); err != nil {
				return v, err
			}
		}
	}
	return v, nil
}

// nsPlan creates namespace ns when it is absent or a stale file.
func nsPlan(ns string, st nsState) []change {
	switch st {
	case nsStale:
		return []change{
			{"remove stale " + nsPath(ns), func() error { return deleteNS(ns) }},
			{"create namespace " + ns, func() error { return createNS(ns) }}}
	case nsAbsent:
		return []change{{"create namespace " + ns, func() error { return createNS(ns) }}}
	}
	return nil
}

// deleteLink deletes the link called name in ns; a link that is already
// gone (its veth peer was deleted first) is fine.
func deleteLink(ns, name string) error {
	c, err := dial(ns)
	if err != nil {
		return err
	}
	defer c.Close()
	l, err := c.link(name)
	if err != nil || l == nil {
		return err
	}
	if err := c.nl.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("deleting %s in %s: %w", name, ns, err)
	}
	return nil
}

// structuralPlan creates what must exist (namespaces, the bridge, one veth
// per host) and removes hosts beyond want.hosts.
func (v *manyView) structuralPlan(want manySpec) []change {
	sw := v.sw.ns
	plan := nsPlan(sw, v.sw.state)
	if br, ok := v.sw.bridge.(*netlink.Bridge); !ok || br == nil {
		if v.sw.bridge != nil {
			plan = append(plan, change{fmt.Sprintf("delete %s in %s (not a bridge)", Bridge, sw),
				func() error { return deleteLink(sw, Bridge) }})
		}
		plan = append(plan, change{fmt.Sprintf("create bridge %s in %s", Bridge, sw), func() error { return createBridge(sw) }})
	}
	for i := 1; i <= want.hosts; i++ {
		hv := v.hosts[i]
		port := string(HostN(i))
		plan = append(plan, nsPlan(hv.ns, hv.state)...)
		p := v.sw.ports[i]
		if hv.lab0 != nil && p != nil && vethPaired(hv.lab0, p) {
			continue
		}
		// One end alone, or two links that are not one pair: replace them.
		if hv.lab0 != nil {
			ns := hv.ns
			plan = append(plan, change{fmt.Sprintf("delete %s in %s (not the peer of %s in %s)", Iface, ns, port, sw),
				func() error { return deleteLink(ns, Iface) }})
		}
		if p != nil {
			plan = append(plan, change{fmt.Sprintf("delete %s in %s (not the peer of %s in %s)", port, sw, Iface, hv.ns),
				func() error { return deleteLink(sw, port) }})
		}
		ns := hv.ns
		plan = append(plan, change{fmt.Sprintf("create veth %s in %s <-> %s in %s (MTU %d)", port, sw, Iface, ns, want.mtu),
			func() error { return createPort(v.name, sw, port, ns, want.mtu) }})
	}
	var extra []int
	for i := range v.hosts {
		if i > want.hosts && v.hosts[i].state != nsAbsent {
			extra = append(extra, i)
		}
	}
	for i := range v.sw.ports {
		if i > want.hosts && !slices.Contains(extra, i) {
			extra = append(extra, i)
		}
	}
	slices.Sort(extra)
	for _, i := range extra {
		ns, port, st := v.hosts[i].ns, string(HostN(i)), v.hosts[i].state
		plan = append(plan, change{fmt.Sprintf("remove host %s (beyond --hosts %d)", HostN(i), want.hosts), func() error {
			if st == nsPinned {
				if err := deleteVeth(ns); err != nil {
					return err
				}
			}
			if st != nsAbsent {
				if err := deleteNS(ns); err != nil {
					return err
				}
			}
			return deleteLink(sw, port)
		}})
	}
	return plan
}

func createBridge(ns string) error {
	c, err := dial(ns)
	if err != nil {
		return err
	}
	defer c.Close()
	la := netlink.NewLinkAttrs()
	la.Name = Bridge
	// No STP (the kernel's default): a port forwards as soon as it has
	// carrier, with no 15 s listening and learning delay.
	if err := c.nl.LinkAdd(&netlink.Bridge{LinkAttrs: la}); err != nil {
		return fmt.Errorf("creating bridge %s in %s: %w", Bridge, ns, err)
	}
	return nil
}

// createPort creates the veth whose end port is in the switch namespace sw
// and whose peer, lab0, is directly in host namespace ns.
func createPort(name, sw, port, ns string, mtu int) error {
	la := netlink.NewLinkAttrs()
	la.Name = port
	la.MTU = mtu
	return addVeth(name, sw, ns, la, mtu)
}

// settingsPlan brings the bridge, its ports and the hosts to what want
// asks; every structural part must exist.
func (v *manyView) settingsPlan(want manySpec) ([]change, error) {
	sw := v.sw.ns
	if v.sw.state != nsPinned || v.sw.bridge == nil || v.sw.lo == nil {
		return nil, fmt.Errorf("%s has no bridge %s after creating it", sw, Bridge)
	}
	plan := v.switchSettings()
	brIdx := v.sw.bridge.Attrs().Index
	for i := 1; i <= want.hosts; i++ {
		p := v.sw.ports[i]
		if p == nil {
			return nil, fmt.Errorf("%s has no port %s after creating it", sw, HostN(i))
		}
		plan = append(plan, portSettings(sw, p, brIdx, v.sw.qdiscs[i], want.mtu)...)
		hp, err := hostSettings(v.hosts[i], manyAddr(i), want.mtu, want.rate, 0, want.rate, kernelDefaults())
		if err != nil {
			return nil, err
		}
		plan = append(plan, hp...)
	}
	return plan, nil
}

// onLink returns a step that runs f on the link with index idx in ns.
func onLink(ns string, idx int, f func(c *conn, l netlink.Link) error) func() error {
	return func() error {
		c, err := dial(ns)
		if err != nil {
			return err
		}
		defer c.Close()
		l, err := c.nl.LinkByIndex(idx)
		if err != nil {
			return fmt.Errorf("looking up link %d in %s: %w", idx, ns, err)
		}
		return f(c, l)
	}
}

// switchSettings brings lo and the bridge up and gives the bridge its
// address.
func (v *manyView) switchSettings() []change {
	var plan []change
	sw := v.sw.ns
	if !isUp(v.sw.lo) {
		plan = append(plan, change{"bring up lo in " + sw, onLink(sw, v.sw.lo.Attrs().Index,
			func(c *conn, l netlink.Link) error { return c.nl.LinkSetUp(l) })})
	}
	br := v.sw.bridge.Attrs().Index
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(SwitchAddr).To4(), Mask: net.CIDRMask(prefixLen, 32)}}
	if !hasAddr(v.sw.addrs, addr) {
		plan = append(plan, change{fmt.Sprintf("add %s to %s in %s", addr.IPNet, Bridge, sw), onLink(sw, br,
			func(c *conn, l netlink.Link) error { return c.nl.AddrAdd(l, addr) })})
	}
	if !isUp(v.sw.bridge) {
		plan = append(plan, change{fmt.Sprintf("bring up %s in %s", Bridge, sw), onLink(sw, br,
			func(c *conn, l netlink.Link) error { return c.nl.LinkSetUp(l) })})
	}
	return plan
}

// portSettings puts port p on the bridge with MTU mtu, up and unshaped: a
// qdisc on a port shapes its host's ingress, which only PlantFault does,
// and up removes, as it removes every shape it was not asked for.
func portSettings(sw string, p netlink.Link, brIdx int, root netlink.Qdisc, mtu int) []change {
	var plan []change
	name, idx := p.Attrs().Name, p.Attrs().Index
	if p.Attrs().MasterIndex != brIdx {
		plan = append(plan, change{fmt.Sprintf("attach %s to %s in %s", name, Bridge, sw), onLink(sw, idx,
			func(c *conn, l netlink.Link) error { return c.nl.LinkSetMasterByIndex(l, brIdx) })})
	}
	if cur := p.Attrs().MTU; cur != mtu {
		plan = append(plan, change{fmt.Sprintf("set MTU of %s in %s: %d -> %d", name, sw, cur, mtu), onLink(sw, idx,
			func(c *conn, l netlink.Link) error { return c.nl.LinkSetMTU(l, mtu) })})
	}
	if !isUp(p) {
		plan = append(plan, change{fmt.Sprintf("bring up %s in %s", name, sw), onLink(sw, idx,
			func(c *conn, l netlink.Link) error { return c.nl.LinkSetUp(l) })})
	}
	if !isDefaultQdisc(root) {
		plan = append(plan, change{fmt.Sprintf("remove %s from %s in %s", describeQdisc(root), name, sw), onLink(sw, idx,
			func(c *conn, _ netlink.Link) error { return c.nl.QdiscDel(root) })})
	}
	return plan
}
