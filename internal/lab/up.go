package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/netdev"
)

// UpResult says what Up did.
type UpResult struct {
	Name     string   `json:"name"`
	Scenario Scenario `json:"scenario"`
	// Hosts is the number of hosts of a lab of many hosts, 0 for a and b.
	Hosts int `json:"hosts,omitempty"`
	// Created is true when the lab did not exist (or was incomplete) and
	// Up built it, false when it reshaped or left an existing lab.
	Created bool `json:"created"`
	// Changes lists what Up changed, in order; empty means unchanged.
	Changes []string `json:"changes"`
	// Record is the path of the lab's state file.
	Record string `json:"record"`
}

// Unchanged reports whether Up found the lab already as asked.
func (r *UpResult) Unchanged() bool { return len(r.Changes) == 0 }

// Up brings lab c.Name up shaped as c asks, or reshapes it in place if it
// exists: it changes only what differs (MTUs, qdiscs, sysctls, a missing
// address or link) and never recreates namespaces that are there.
//
// If ctx is cancelled or a step fails while Up is creating the lab, it
// removes everything it made before returning. If the lab existed before,
// it leaves it as far as it got and says so.
func Up(ctx context.Context, c Config) (*UpResult, error) {
	c, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	if c.Hosts != 0 {
		return upMany(ctx, c)
	}
	dir, unlock, err := openLabs(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()

	rec, err := readRecord(dir, c.Name)
	if err != nil {
		return nil, err
	}
	if err := notManyHosts(c.Name, rec); err != nil {
		return nil, err
	}
	res := &UpResult{Name: c.Name, Scenario: c.Scenario, Record: recordPath(dir, c.Name), Changes: []string{}}
	return reconcile(ctx, dir, c, rec, res, &twoHosts{names: labNamespaces(c.Name), name: c.Name, want: c.spec()})
}

// A planner is what reconcile needs of one kind of lab (two hosts, or many
// on a bridge): a look at what exists now, the plans that bring it to what
// was asked, and the wait for its links.
type planner interface {
	// look reads what exists now, and reports whether the lab is being
	// created (not all of it is there).
	look() (creating bool, err error)
	// structural plans namespaces and links, against the last look.
	structural() []change
	// settings plans MTUs, addresses, qdiscs and sysctls, against the
	// last look.
	settings() ([]change, error)
	// waitUp waits for every link to have carrier.
	waitUp(ctx context.Context) error
	// note adds to r what the planner keeps of the lab beyond what
	// was asked (the busy loop it runs).
	note(r *record)
}

// reconcile brings a lab to what c asks, one plan at a time, behind an
// intent record: shared by both kinds of lab.
func reconcile(ctx context.Context, dir string, c Config, rec *record, res *UpResult, p planner) (*UpResult, error) {
	creating, err := p.look()
	if err != nil {
		return nil, err
	}
	res.Created = creating
	structural := p.structural()
	var settings []change
	if len(structural) == 0 {
		if settings, err = p.settings(); err != nil {
			return nil, err
		}
		kept := &record{}
		p.note(kept)
		if len(settings) == 0 && rec.sameAsk(c) && rec.Phase == phaseUp && sameLoop(rec.BusyLoop, kept.BusyLoop) {
			return res, nil
		}
	}

	// The record goes down before anything is created: if this process
	// dies from here on, down still knows there is a lab to remove.
	phase, created := phaseCreating, time.Time{}
	if !res.Created {
		phase = phaseReshaping
		if rec != nil {
			created = rec.Created
		}
	}
	intent := newRecord(c, phase, created)
	if rec != nil {
		// Until the plan says otherwise, what ran keeps running.
		intent.BusyLoop = rec.BusyLoop
	}
	if err := writeRecord(dir, intent); err != nil {
		return nil, err
	}

	a := &applier{ctx: ctx, hook: c.afterStep}
	err = a.apply(structural)
	if err == nil && len(structural) > 0 {
		// Plan the settings against what now exists: a new namespace
		// starts with copies of the host's sysctls, not the defaults.
		if _, err = p.look(); err == nil {
			settings, err = p.settings()
		}
	}
	if err == nil {
		err = a.apply(settings)
	}
	if err == nil {
		err = p.waitUp(ctx)
	}
	res.Changes = a.done
	if err != nil {
		if res.Created {
			// Nothing of a half-built lab is worth keeping: remove it all,
			// even though ctx may be cancelled.
			if _, derr := teardown(dir, c.Name); derr != nil {
				return nil, fmt.Errorf("bringing up lab %s: %w; cleaning up also failed: %v (run 'linerate lab down --name %s')", c.Name, err, derr, c.Name)
			}
			return nil, fmt.Errorf("bringing up lab %s: %w (removed what it had created)", c.Name, err)
		}
		return nil, fmt.Errorf("reshaping lab %s: %w (it is partly reshaped: run 'linerate lab up' again, or 'linerate lab down --name %s')", c.Name, err, c.Name)
	}
	if len(res.Changes) == 0 {
		res.Changes = append(res.Changes, "update the lab record")
	}
	final := newRecord(c, phaseUp, intent.Created)
	p.note(final)
	if err := writeRecord(dir, final); err != nil {
		return nil, err
	}
	return res, nil
}

// twoHosts plans the two-host lab: a and b joined by one veth.
type twoHosts struct {
	names [2]string
	name  string
	want  spec
	views [2]hostView
	loop  *busyLoop // host b's busy loop, kept or started; nil: none
}

func (t *twoHosts) look() (bool, error) {
	var err error
	if t.views, err = viewHosts(t.names); err != nil {
		return false, err
	}
	return t.views[0].state != nsPinned || t.views[1].state != nsPinned, nil
}

func (t *twoHosts) structural() []change { return structuralPlan(t.name, t.views, t.want) }

func (t *twoHosts) settings() ([]change, error) {
	plan, err := settingsPlan(t.views, t.want)
	if err != nil {
		return nil, err
	}
	busy, found := busyPlan(t.names[1], t.want.BusyCPU, func(l *busyLoop) { t.loop = l })
	t.loop = found
	return append(plan, busy...), nil
}

func (t *twoHosts) note(r *record) { r.BusyLoop = t.loop }

func (t *twoHosts) waitUp(ctx context.Context) error {
	return waitOperUp(ctx, t.names, operUpTimeout)
}

func labNamespaces(name string) [2]string {
	return [2]string{Namespace(name, A), Namespace(name, B)}
}

// operUpTimeout bounds how long Up waits for both ends of the veth to be
// operationally up. The kernel may defer a link's operstate change by up
// to a second (linkwatch batches events of devices whose peer has the same
// ifindex, as the two lab0 of fresh namespaces do).
const operUpTimeout = 2 * time.Second

// waitOperUp waits until lab0 in each namespace has carrier (IFF_LOWER_UP)
// and oper state up, so that what runs right after Up — doctor reading
// /sys/class/net/lab0/operstate, iperf3 — finds a working link.
func waitOperUp(ctx context.Context, names [2]string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, ns := range names {
		if err := waitOperUpIn(ctx, ns, deadline, timeout); err != nil {
			return err
		}
	}
	return nil
}

func waitOperUpIn(ctx context.Context, ns string, deadline time.Time, timeout time.Duration) error {
	c, err := dial(ns)
	if err != nil {
		return err
	}
	defer c.Close()
	for {
		l, err := c.link(Iface)
		if err != nil {
			return err
		}
		if l == nil {
			return fmt.Errorf("%s in %s vanished while waiting for it to come up", Iface, ns)
		}
		st, lower := l.Attrs().OperState, l.Attrs().RawFlags&unix.IFF_LOWER_UP != 0
		if st == netlink.OperUp && lower {
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("%s in %s is not operationally up %v after it was brought up (oper state %s, carrier %v)", Iface, ns, timeout, st, lower)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("interrupted while waiting for %s in %s to come up: %w", Iface, ns, context.Cause(ctx))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// hostView is what one lab host looks like now.
type hostView struct {
	ns     string
	state  nsState
	lab0   netlink.Link
	lo     netlink.Link
	addrs  []netlink.Addr // IPv4 addresses of lab0
	root   netlink.Qdisc  // root qdisc of lab0
	sysctl map[string]string
}

func viewHosts(names [2]string) ([2]hostView, error) {
	var vs [2]hostView
	for i, ns := range names {
		v, err := viewHost(ns)
		if err != nil {
			return vs, err
		}
		vs[i] = v
	}
	return vs, nil
}

func viewHost(ns string) (hostView, error) {
	v := hostView{ns: ns}
	var err error
	if v.state, err = probeNS(nsPath(ns)); err != nil || v.state != nsPinned {
		return v, err
	}
	c, err := dial(ns)
	if err != nil {
		return v, err
	}
	defer c.Close()
	if v.lo, err = c.link("lo"); err != nil {
		return v, err
	}
	if v.lab0, err = c.link(Iface); err != nil {
		return v, err
	}
	if v.lab0 != nil {
		if v.addrs, err = c.addrs(v.lab0, netlink.FAMILY_V4); err != nil {
			return v, err
		}
		if v.root, err = c.rootQdisc(v.lab0); err != nil {
			return v, err
		}
	}
	v.sysctl, err = readSysctls(ns, managedSysctls())
	return v, err
}

func managedSysctls() []string { return []string{sysctlRmem, sysctlWmem} }

// vethPaired reports whether lab0 in a and lab0 in b are the two ends of one
// veth pair: each one's link index (IFLA_LINK) is the other's ifindex.
func vethPaired(a, b netlink.Link) bool {
	va, ok1 := a.(*netlink.Veth)
	vb, ok2 := b.(*netlink.Veth)
	return ok1 && ok2 && va.Attrs().ParentIndex == vb.Attrs().Index && vb.Attrs().ParentIndex == va.Attrs().Index
}

// change is one step of a plan.
type change struct {
	desc string
	do   func() error
}

// structuralPlan creates what must exist: namespaces and the veth pair.
func structuralPlan(name string, v [2]hostView, want spec) []change {
	var plan []change
	for i := range v {
		ns := v[i].ns
		switch v[i].state {
		case nsStale:
			plan = append(plan,
				change{"remove stale " + nsPath(ns), func() error { return deleteNS(ns) }},
				change{"create namespace " + ns, func() error { return createNS(ns) }})
		case nsAbsent:
			plan = append(plan, change{"create namespace " + ns, func() error { return createNS(ns) }})
		}
	}
	if v[0].lab0 != nil && v[1].lab0 != nil && vethPaired(v[0].lab0, v[1].lab0) &&
		queuesFit(v[0].lab0, want.Queues) && queuesFit(v[1].lab0, want.Queues) {
		return plan
	}
	// One end alone, two links that are not one pair (someone changed
	// the lab by hand), or a pair with other queue counts (fixed when a
	// link is created): replace them.
	for i := range v {
		if v[i].lab0 == nil {
			continue
		}
		ns := v[i].ns
		plan = append(plan, change{fmt.Sprintf("delete %s in %s (not half of the lab's veth pair)", Iface, ns), func() error {
			c, err := dial(ns)
			if err != nil {
				return err
			}
			defer c.Close()
			l, err := c.link(Iface)
			if err != nil || l == nil {
				return err
			}
			return c.nl.LinkDel(l)
		}})
	}
	plan = append(plan, change{
		fmt.Sprintf("create veth %s in %s <-> %s in %s (MTU %d/%d%s)", Iface, v[0].ns, Iface, v[1].ns, want.MTU[0], want.MTU[1], queuesPhrase(want.Queues)),
		func() error { return createVeth(name, v[0].ns, v[1].ns, want) },
	})
	return plan
}

// createVeth creates the pair in a with its peer directly in b.
func createVeth(name, nsA, nsB string, want spec) error {
	la := netlink.NewLinkAttrs()
	la.Name = Iface
	la.MTU = want.MTU[0]
	if want.Queues > 1 { // the peer gets the same counts (the library copies them)
		la.NumTxQueues, la.NumRxQueues = want.Queues, want.Queues
	}
	return addVeth(name, nsA, nsB, la, want.MTU[1])
}

// addVeth creates a veth whose end la is in namespace from and whose peer,
// lab0 of MTU peerMTU, is directly in namespace to, so that no end ever
// shows up in the host's namespace: the two-host lab's pair and each port
// of a lab of many hosts.
func addVeth(lab, from, to string, la netlink.LinkAttrs, peerMTU int) error {
	cf, err := dial(from)
	if err != nil {
		return err
	}
	defer cf.Close()
	ct, err := dial(to)
	if err != nil {
		return err
	}
	defer ct.Close()
	veth := &netlink.Veth{
		LinkAttrs:     la,
		PeerName:      Iface,
		PeerNamespace: netlink.NsFd(int(ct.fd)),
		PeerMTU:       uint32(peerMTU),
		PeerTxQLen:    -1, // the kernel's default, not 0
	}
	if err := cf.nl.LinkAdd(veth); err != nil {
		hint := ""
		if errors.Is(err, unix.EEXIST) {
			hint = fmt.Sprintf(" (run 'linerate lab down --name %s')", lab)
		}
		return fmt.Errorf("creating veth %s in %s: %w%s", la.Name, from, err, hint)
	}
	return nil
}

// settingsPlan brings existing links to the wanted MTUs, addresses, state,
// qdiscs and sysctls. v must show both namespaces and the veth pair.
func settingsPlan(v [2]hostView, want spec) ([]change, error) {
	var plan []change
	for i, h := range hosts() {
		p, err := hostSettings(v[i], h.Addr(), want.MTU[i], want.Rate[i], want.Pace[i], want.lineRate(), want.Sysctl[i])
		if err != nil {
			return nil, err
		}
		plan = append(plan, p...)
		plan = append(plan, steeringPlan(v[i], want.Queues)...)
	}
	return plan, nil
}

// hostSettings brings one host's lab0 to MTU mtu, address addr, up, shaped
// at rate (0: not shaped) or each flow paced to pace by fq (0: no fq;
// rate wins if both are given), and its managed sysctls to sysctls.
func hostSettings(hv hostView, addrText string, mtu int, rate, pace, line Rate, sysctls map[string]string) ([]change, error) {
	var plan []change
	ns := hv.ns
	if hv.state != nsPinned || hv.lab0 == nil || hv.lo == nil {
		return nil, fmt.Errorf("%s has no %s after creating it", ns, Iface)
	}
	idx := hv.lab0.Attrs().Index
	onLab0 := func(f func(c *conn, l netlink.Link) error) func() error {
		return func() error {
			c, err := dial(ns)
			if err != nil {
				return err
			}
			defer c.Close()
			l, err := c.nl.LinkByIndex(idx)
			if err != nil {
				return fmt.Errorf("looking up %s in %s: %w", Iface, ns, err)
			}
			return f(c, l)
		}
	}
	if cur := hv.lab0.Attrs().MTU; cur != mtu {
		plan = append(plan, change{fmt.Sprintf("set MTU of %s in %s: %d -> %d", Iface, ns, cur, mtu),
			onLab0(func(c *conn, l netlink.Link) error { return c.nl.LinkSetMTU(l, mtu) })})
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(addrText).To4(), Mask: net.CIDRMask(prefixLen, 32)}}
	if !hasAddr(hv.addrs, addr) {
		plan = append(plan, change{fmt.Sprintf("add %s to %s in %s", addr.IPNet, Iface, ns),
			onLab0(func(c *conn, l netlink.Link) error { return c.nl.AddrAdd(l, addr) })})
	}
	if !isUp(hv.lo) {
		plan = append(plan, change{"bring up lo in " + ns, func() error {
			c, err := dial(ns)
			if err != nil {
				return err
			}
			defer c.Close()
			l, err := c.nl.LinkByName("lo")
			if err != nil {
				return err
			}
			return c.nl.LinkSetUp(l)
		}})
	}
	if !isUp(hv.lab0) {
		plan = append(plan, change{fmt.Sprintf("bring up %s in %s", Iface, ns),
			onLab0(func(c *conn, l netlink.Link) error { return c.nl.LinkSetUp(l) })})
	}
	// The alias says the tbf stands in for a NIC's line rate (doctor
	// then takes it as the line rate); an unshaped link has none, and
	// neither has a link shaped as a fault (the shaped scenario's one
	// end): that tbf is the limit a run should find, not its ceiling.
	alias := ""
	if rate != 0 && rate == line {
		alias = netdev.DeclareLineRate(uint64(rate))
	}
	if cur := hv.lab0.Attrs().Alias; cur != alias {
		desc := fmt.Sprintf("declare %s in %s a %s line rate (alias %q)", Iface, ns, rate, alias)
		if alias == "" {
			desc = fmt.Sprintf("clear the alias of %s in %s (%q)", Iface, ns, cur)
		}
		plan = append(plan, change{desc, onLab0(func(c *conn, l netlink.Link) error { return c.nl.LinkSetAlias(l, alias) })})
	}
	switch {
	case rate == 0 && pace != 0 && (hv.root == nil || !sameFq(hv.root, fqFor(idx, pace))):
		q := fqFor(idx, pace)
		plan = append(plan, change{fmt.Sprintf("pace each flow leaving %s in %s: %s", Iface, ns, describeQdisc(q)),
			onLab0(func(c *conn, _ netlink.Link) error {
				err := c.nl.QdiscReplace(q)
				if errors.Is(err, unix.ENOENT) { // the kernel knows no qdisc of that kind
					return ErrNoFq
				}
				return err
			})})
	case rate == 0 && pace == 0 && !isDefaultQdisc(hv.root):
		old := hv.root
		plan = append(plan, change{fmt.Sprintf("remove %s from %s in %s", describeQdisc(old), Iface, ns),
			onLab0(func(c *conn, _ netlink.Link) error { return c.nl.QdiscDel(old) })})
	case rate != 0 && (hv.root == nil || !sameTbf(hv.root, tbfFor(idx, rate))):
		t := tbfFor(idx, rate)
		plan = append(plan, change{fmt.Sprintf("shape %s in %s: %s", Iface, ns, describeQdisc(t)),
			onLab0(func(c *conn, _ netlink.Link) error { return c.nl.QdiscReplace(t) })})
	}
	for _, p := range managedSysctls() {
		cur, val := hv.sysctl[p], sysctls[p]
		if cur == val {
			continue
		}
		plan = append(plan, change{fmt.Sprintf("set %s in %s: %q -> %q", sysctlName(p), ns, cur, val),
			func() error { return writeSysctl(ns, p, val) }})
	}
	return plan, nil
}

func hasAddr(as []netlink.Addr, want *netlink.Addr) bool {
	for _, a := range as {
		if a.IPNet != nil && a.IPNet.String() == want.IPNet.String() {
			return true
		}
	}
	return false
}

// applier runs plans, stopping at the first error or when ctx is done.
type applier struct {
	ctx  context.Context
	hook func(desc string)
	done []string
}

func (a *applier) apply(plan []change) error {
	for _, ch := range plan {
		if err := a.ctx.Err(); err != nil {
			return fmt.Errorf("interrupted before %q: %w", ch.desc, context.Cause(a.ctx))
		}
		if err := ch.do(); err != nil {
			return fmt.Errorf("%s: %w", ch.desc, err)
		}
		a.done = append(a.done, ch.desc)
		if a.hook != nil {
			a.hook(ch.desc)
		}
	}
	return nil
}

// DownResult says what Down removed.
type DownResult struct {
	Name string `json:"name"`
	// Removed lists what was removed: namespaces and the record. Empty
	// means there was no such lab.
	Removed []string `json:"removed"`
	// Busy lists processes still running in a removed namespace; the
	// namespace lives on, without its veth, until they exit.
	Busy []string `json:"busy,omitempty"`
}

// Down removes lab name: its veth, its namespaces and its record. It finds
// the namespaces by name, so it also removes what a killed Up left behind,
// with or without a record. A lab that does not exist is not an error (the
// result's Removed is empty): down's job is that the lab is gone.
func Down(ctx context.Context, name string) (*DownResult, error) {
	if name == "" {
		name = DefaultName
	}
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	dir, unlock, err := openLabs(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return teardown(dir, name)
}

// teardown removes lab name; the caller holds the lock.
func teardown(dir, name string) (*DownResult, error) {
	res := &DownResult{Name: name, Removed: []string{}}
	var errs []error
	for _, ns := range teardownNamespaces(dir, name) {
		// The lab's own processes go first, so that they neither keep a
		// namespace alive nor show as someone else's.
		stopped, err := stopAllBusy(ns)
		res.Removed = append(res.Removed, stopped...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, ns := range teardownNamespaces(dir, name) {
		st, err := probeNS(nsPath(ns))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if st == nsAbsent {
			continue
		}
		if st == nsPinned {
			res.Busy = append(res.Busy, processesIn(ns)...)
			// Delete the veth first: a process left in the namespace would
			// keep it, and the link, alive after the unpin.
			if err := deleteVeth(ns); err != nil {
				errs = append(errs, err)
			}
		}
		if err := deleteNS(ns); err != nil {
			errs = append(errs, err)
			continue
		}
		res.Removed = append(res.Removed, "namespace "+ns)
	}
	removed, err := removeRecord(dir, name)
	if err != nil {
		errs = append(errs, err)
	}
	if removed {
		res.Removed = append(res.Removed, "record "+recordPath(dir, name))
	}
	if err := errors.Join(errs...); err != nil {
		return res, fmt.Errorf("removing lab %s: %w", name, err)
	}
	return res, nil
}

func deleteVeth(ns string) error {
	c, err := dial(ns)
	if err != nil {
		return err
	}
	defer c.Close()
	l, err := c.link(Iface)
	if err != nil || l == nil {
		return err
	}
	if _, ok := l.(*netlink.Veth); !ok {
		return nil
	}
	if err := c.nl.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("deleting %s in %s: %w", Iface, ns, err)
	}
	return nil
}
