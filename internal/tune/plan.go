package tune

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/limits"
)

// Options are tune's command-line choices.
type Options struct {
	// Profile; "" means Throughput.
	Profile Profile
	// Ifaces selects the NICs to tune; empty means the PCI NICs that are up.
	Ifaces []string
	// AppCPUs are the CPUs the application runs on (--app-cpus).
	AppCPUs []int
	// IRQCPUs, when set, overrides the IRQ CPUs placement would choose.
	IRQCPUs []int
	// RTT is the round-trip time buffers must cover; 0 means doctor's default.
	RTT time.Duration
	// MTU, when set, is the MTU to give the selected NICs. The peer and
	// every switch port must carry it too, so tune never picks one itself.
	MTU int
	// RoCE (--roce) adds the lossless RoCE settings: trust DSCP with
	// DSCP 26 on the RoCE priority, PFC and ECN on that priority, MRRS
	// 4096. They must match the switches, so only when asked by name.
	RoCE bool
	// RoCEPriority (--roce-priority) is the priority RoCE uses; nil: the
	// one PFC is already on, else the trust's, else 3.
	RoCEPriority *int
}

// Input is the host a plan is made for.
type Input struct {
	// FS is the root: the live "/" or a captured tree.
	FS *hostfs.FS
	// Inventory is inventory.Collect's view of FS.
	Inventory *inventory.Inventory
	// Devices reads queue counts and rings from the live NIC; nil for a
	// captured tree, whose plan takes queue counts from sysfs.
	Devices Devices
}

// MTU bounds accepted by --mtu: IPv4's minimum and the largest IP packet.
const (
	minMTU = 68
	maxMTU = 65535
)

// NewPlan diagnoses the host (doctor.Diagnose) and plans the changes that
// answer its findings, for the profile. It changes nothing. It fails on
// options that do not fit the host: an unknown interface, CPUs that are
// not online, --irq-cpus on the application's CPUs, an impossible MTU.
func NewPlan(in Input, opts Options) (*Plan, error) {
	opts, err := opts.check(in.Inventory)
	if err != nil {
		return nil, err
	}
	rep, err := doctor.Diagnose(in.Inventory, doctor.Options{Ifaces: opts.Ifaces, AppCPUs: opts.AppCPUs, RTT: opts.RTT, RoCEPriority: opts.RoCEPriority})
	if err != nil {
		return nil, err
	}
	p := &planner{in: in, opts: opts, rep: rep}
	p.plan = &Plan{
		Schema: Schema, Profile: opts.Profile, Host: in.Inventory.Host.Hostname, Root: in.FS.Root(),
		RTTMs: float64(opts.RTT.Microseconds()) / 1000, Interfaces: []string{}, Findings: []string{},
		Changes: []Change{}, Placements: []Placement{}, Notes: []Note{},
	}
	if ns, err := CurrentNetNS(); err == nil {
		p.plan.NetNS = ns
	} else {
		p.note("", "", "network namespace unknown: %v", err)
	}
	for _, f := range rep.Findings {
		p.plan.Findings = append(p.plan.Findings, f.ID)
	}
	p.selectNICs()
	for _, step := range []func(){p.buffers, p.profileSysctls, p.governors, p.mtu, p.channels, p.rings, p.roce, p.irqs, p.untunable} {
		step()
	}
	slices.SortStableFunc(p.plan.Changes, func(a, b Change) int { return kindRank(a.Kind) - kindRank(b.Kind) })
	for i := range p.plan.Changes {
		p.plan.Changes[i].Step = i + 1
	}
	return p.plan, nil
}

// check validates and defaults the options against the host.
func (o Options) check(inv *inventory.Inventory) (Options, error) {
	if o.Profile == "" {
		o.Profile = Throughput
	}
	if _, err := ParseProfile(string(o.Profile)); err != nil {
		return o, err
	}
	if o.RTT <= 0 {
		o.RTT = doctor.DefaultRTT
	}
	if o.MTU != 0 && (o.MTU < minMTU || o.MTU > maxMTU) {
		return o, fmt.Errorf("--mtu %d: outside %d-%d", o.MTU, minMTU, maxMTU)
	}
	online := inv.CPU.Online
	for _, c := range []struct {
		flag string
		cpus []int
	}{{"--app-cpus", o.AppCPUs}, {"--irq-cpus", o.IRQCPUs}} {
		if out := cpulist.Subtract(c.cpus, online); len(out) > 0 {
			return o, fmt.Errorf("%s %s: %s %s not online on this host (online: %s)",
				c.flag, cpulist.Format(c.cpus), cpulist.Phrase(out), cpulist.IsAre(out), cpulist.Format(online))
		}
	}
	if both := cpulist.Intersect(o.IRQCPUs, o.AppCPUs); len(both) > 0 {
		return o, fmt.Errorf("--irq-cpus %s and --app-cpus %s share %s: IRQs there would steal the application's cycles; choose CPUs apart",
			cpulist.Format(o.IRQCPUs), cpulist.Format(o.AppCPUs), cpulist.Phrase(both))
	}
	return o, nil
}

// CurrentNetNS returns the inode of the calling process's network
// namespace, which names it as `ip netns identify` and lsns do.
func CurrentNetNS() (uint64, error) {
	fi, err := os.Stat("/proc/self/ns/net")
	if err != nil {
		return 0, fmt.Errorf("reading the network namespace: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, errors.New("reading the network namespace: no inode")
	}
	return st.Ino, nil
}

// planner is one NewPlan run.
type planner struct {
	in   Input
	opts Options
	rep  *doctor.Report
	plan *Plan
	nics []*doctor.NICReport // the NICs changes are made for
}

func (p *planner) add(c Change) {
	c.LiveOnly = c.Kind.liveOnly()
	p.plan.Changes = append(p.plan.Changes, c)
}

func (p *planner) note(finding, subject, format string, args ...any) {
	p.plan.Notes = append(p.plan.Notes, Note{Finding: finding, Subject: subject, Text: fmt.Sprintf(format, args...)})
}

// finding returns doctor's finding id about subject ("" matches any).
func (p *planner) finding(id, subject string) *doctor.Finding {
	for i, f := range p.rep.Findings {
		if f.ID == id && (subject == "" || f.Subject == subject) {
			return &p.rep.Findings[i]
		}
	}
	return nil
}

// selectNICs keeps the NICs named by --iface, or else the PCI NICs that
// are up: a port without link carries nothing to tune, and its IRQs and
// queues are left as they are unless the user names it.
func (p *planner) selectNICs() {
	for i := range p.rep.NICs {
		n := &p.rep.NICs[i]
		if len(p.opts.Ifaces) > 0 || (n.Kind == "pci" && n.Operstate == "up") {
			p.nics = append(p.nics, n)
			p.plan.Interfaces = append(p.plan.Interfaces, n.Interface)
			continue
		}
		p.note("", n.Interface, "%s is %s: left alone (name it with --iface to tune it anyway)", n.Interface, n.Operstate)
	}
}

// bufferRate is the line rate buffers are sized for: the fastest selected
// NIC's, or 10 Gbit/s when none is known — doctor's rule, so that tune
// answers exactly the finding doctor raised.
func (p *planner) bufferRate() (limits.Gbps, string) {
	var best limits.Gbps
	who := ""
	for _, n := range p.nics {
		if r := n.Limits.LineRate; r != nil && *r > best {
			best, who = *r, n.Interface
		}
	}
	if best == 0 {
		return 10, "no line rate known; 10 Gbit/s assumed"
	}
	return best, fmt.Sprintf("%s at %s Gbit/s", who, strconv.FormatFloat(float64(best), 'f', -1, 64))
}

// buffers raises the socket buffer limits doctor found small.
func (p *planner) buffers() {
	const id = "sysctl.socket_buffers_small"
	if p.finding(id, "") == nil {
		return
	}
	rate, basis := p.bufferRate()
	m := doctor.BufferModel(p.in.Inventory)
	for _, k := range limits.BufferKeys() {
		key := k.Key
		want, why := bufferTarget(p.opts.Profile, m, k.Use, rate, p.opts.RTT)
		source := fmt.Sprintf("%s: %s × %s", why, basis, p.opts.RTT)
		cur, ok := p.readSysctl(key, id)
		if !ok {
			continue
		}
		f := strings.Fields(cur)
		last, err := strconv.ParseInt(f[len(f)-1], 10, 64)
		if err != nil || (len(f) != 1 && len(f) != 3) {
			p.note(id, key, "%s reads %q, not a number or a triple: left alone", key, cur)
			continue
		}
		if last >= want || !p.canSet(key, id) {
			continue
		}
		f[len(f)-1] = strconv.FormatInt(want, 10)
		p.addSysctl(key, cur, strings.Join(f, " "), id, source)
	}
}

// profileSysctls sets the profile's own sysctls.
func (p *planner) profileSysctls() {
	for _, s := range profileSysctls(p.opts.Profile) {
		cur, ok := p.readSysctl(s.key, "")
		if ok && cur != s.value && p.canSet(s.key, "") {
			p.addSysctl(s.key, cur, s.value, "", s.source)
		}
	}
}

// readSysctl reads a sysctl in this network namespace, its fields joined
// by single spaces. A missing one is noted: global settings do not exist
// inside a network namespace, and older kernels lack newer ones.
func (p *planner) readSysctl(key, finding string) (string, bool) {
	v, err := p.in.FS.ReadString(inventory.SysctlPath(key))
	why := ""
	if hostfs.IsNotExist(err) {
		why = "is not present here (a global setting seen only outside network namespaces, or an older kernel)"
	} else if err != nil {
		why = fmt.Sprintf("cannot be read (%v)", err)
	} else if v == "" {
		why = "is empty"
	}
	if why != "" {
		// "left out of the plan", not "skipped": apply's count of
		// skipped steps is of planned steps only.
		p.note(finding, key, "%s %s: left out of the plan", key, why)
		return "", false
	}
	return strings.Join(strings.Fields(v), " "), true
}

// canSet notes and reports false when a sysctl the plan would change is
// read-only here; asked only once a change is needed, so a read-only
// setting already at its target says nothing.
func (p *planner) canSet(key, finding string) bool {
	if !p.readOnly(inventory.SysctlPath(key)) {
		return true
	}
	p.note(finding, key, "%s is read-only here (a global setting inside a network namespace: only the host's initial namespace may change it; set it there): left out of the plan", key)
	return false
}

// readOnly reports whether the live kernel offers a file for reading only:
// net.core.rmem_max and wmem_max are 0444 in a network namespace other
// than the initial one (Linux 6.18). A captured tree's files say nothing
// of that.
func (p *planner) readOnly(rel string) bool {
	if !p.in.FS.IsLive() {
		return false
	}
	fi, err := os.Stat(p.in.FS.Path(rel))
	return err == nil && fi.Mode().Perm()&0o222 == 0
}

func (p *planner) addSysctl(key, before, after, finding, source string) {
	val := after
	if strings.Contains(after, " ") {
		val = "'" + after + "'"
	}
	p.add(Change{
		Kind: KindSysctl, Target: key, Path: p.in.FS.Display(inventory.SysctlPath(key)),
		Before: before, After: after, Finding: finding, Source: source,
		Command: fmt.Sprintf("sysctl -w %s=%s", key, val),
	})
}
