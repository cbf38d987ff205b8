package lab

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
)

// StatusSchema names the JSON form of a Report.
const StatusSchema = "linerate.lab-status/v1"

// Report is what Status found.
type Report struct {
	Schema string      `json:"schema"`
	Labs   []LabStatus `json:"labs"`
}

// LabStatus describes one lab as it exists now.
type LabStatus struct {
	Name string `json:"name"`
	// Exists is true when at least one of the lab's namespaces or its
	// record exists.
	Exists bool `json:"exists"`
	// Scenario, Rate, MTU and Phase come from the record, when there is one.
	Scenario Scenario `json:"scenario,omitempty"`
	Rate     string   `json:"rate,omitempty"`
	// LineRate is the rate the lab's tbf shapes each host's lab0 to,
	// standing in for a NIC's line rate ("10gbit"); empty when unshaped.
	LineRate string `json:"line_rate,omitempty"`
	MTU      int    `json:"mtu,omitempty"`
	Phase    string `json:"phase,omitempty"`
	// HostCount is the number of hosts of a lab of many hosts (its
	// switch is listed in Hosts as well, first); 0 for a and b.
	HostCount int    `json:"host_count,omitempty"`
	Record    string `json:"record,omitempty"`
	// BusyLoop is the busy-receiver scenario's loop running in host b,
	// nil when none runs.
	BusyLoop *BusyLoopStatus `json:"busy_loop,omitempty"`
	Hosts    []HostStatus    `json:"hosts"`
	// Problems says what is wrong and what to run, one sentence each.
	Problems []string `json:"problems,omitempty"`
}

// BusyLoopStatus describes a busy loop the lab runs.
type BusyLoopStatus struct {
	Host Host `json:"host"`
	PID  int  `json:"pid"`
	// CPU is the one CPU it is pinned to, -1 when it is not pinned to one.
	CPU  int    `json:"cpu"`
	User string `json:"user"`
	// Recorded is true when the lab's record names this process.
	Recorded bool `json:"recorded"`
}

// HostStatus describes one lab host.
type HostStatus struct {
	Host      Host         `json:"host"`
	Namespace string       `json:"namespace"`
	Exists    bool         `json:"exists"`
	Links     []LinkStatus `json:"links,omitempty"`
	// Sysctls holds the managed sysctls whose value differs from the
	// kernel default, by dotted name.
	Sysctls map[string]SysctlStatus `json:"sysctls,omitempty"`
}

// SysctlStatus is a sysctl's value next to the kernel's default.
type SysctlStatus struct {
	Value   string `json:"value"`
	Default string `json:"default"`
}

// LinkStatus describes a link in a lab host.
type LinkStatus struct {
	Name  string       `json:"name"`
	Kind  string       `json:"kind"`
	MTU   int          `json:"mtu"`
	Up    bool         `json:"up"`
	Addrs []string     `json:"addrs,omitempty"`
	Qdisc *QdiscStatus `json:"qdisc,omitempty"`
}

// Status describes lab name, or every lab when name is "": the labs with a
// record and those with a namespace under /run/netns.
func Status(ctx context.Context, name string) (*Report, error) {
	if name != "" {
		if err := ValidateName(name); err != nil {
			return nil, err
		}
	}
	if err := requireRoot(); err != nil {
		return nil, err
	}
	dir, err := labDir()
	if err != nil {
		return nil, err
	}
	names := []string{name}
	if name == "" {
		if names, err = labNames(dir); err != nil {
			return nil, err
		}
	}
	rep := &Report{Schema: StatusSchema, Labs: []LabStatus{}}
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s, err := labStatus(dir, n)
		if err != nil {
			return nil, err
		}
		rep.Labs = append(rep.Labs, s)
	}
	return rep, nil
}

// labNames lists every lab with a record or a namespace, sorted.
func labNames(dir string) ([]string, error) {
	names, err := recordNames(dir)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(netnsDir)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("listing %s: %w", netnsDir, err)
	}
	for _, e := range ents {
		if n, ok := labOfNamespace(e.Name()); ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// labOfNamespace returns NAME for lr-NAME-a or lr-NAME-b, and for
// lr-NAME-sw and lr-NAME-h<ii> of a lab of many hosts.
func labOfNamespace(ns string) (string, bool) {
	rest, ok := strings.CutPrefix(ns, "lr-")
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(rest, '-')
	if i < 0 {
		return "", false
	}
	n, h := rest[:i], Host(rest[i+1:])
	ok = h == A || h == B || h == Switch || h.Index() > 0
	return n, ok && ValidateName(n) == nil
}

func labStatus(dir, name string) (LabStatus, error) {
	s := LabStatus{Name: name, Hosts: []HostStatus{}}
	rec, err := readRecord(dir, name)
	if err != nil {
		return s, err
	}
	if rec != nil {
		s.Exists = true
		s.Scenario, s.MTU, s.Phase, s.Record = rec.Scenario, rec.MTU, rec.Phase, recordPath(dir, name)
		if rec.RateBPS != 0 {
			s.Rate = Rate(rec.RateBPS).String()
		}
		if rec.LineRateBPS != 0 {
			s.LineRate = Rate(rec.LineRateBPS).String()
		}
	}
	down := fmt.Sprintf("'linerate lab down --name %s'", name)
	members, err := statusHosts(name, rec)
	if err != nil {
		return s, err
	}
	if len(members) > 2 {
		s.HostCount = len(members) - 1 // all but the switch
	}
	pinned := 0
	for _, h := range members {
		hs, st, err := hostStatus(name, h)
		if err != nil {
			return s, err
		}
		switch st {
		case nsPinned:
			pinned++
			link := Iface
			if h == Switch {
				link = Bridge
			}
			if !slices.ContainsFunc(hs.Links, func(l LinkStatus) bool { return l.Name == link }) {
				s.Problems = append(s.Problems, fmt.Sprintf("%s has no %s: run 'linerate lab up --name %s' or %s", hs.Namespace, link, name, down))
			}
		case nsStale:
			s.Problems = append(s.Problems, fmt.Sprintf("%s is a leftover file, not a namespace: run %s", nsPath(hs.Namespace), down))
		}
		if st != nsAbsent {
			s.Exists = true
		}
		s.Hosts = append(s.Hosts, hs)
	}
	if !s.Exists {
		return s, nil
	}
	loops := findBusy(Namespace(name, B))
	if len(loops) > 0 {
		l := loops[0]
		s.BusyLoop = &BusyLoopStatus{Host: B, PID: l.PID, CPU: l.CPU, User: strconv.Itoa(l.UID),
			Recorded: rec != nil && sameLoop(rec.BusyLoop, &l)}
		if u, err := user.LookupId(s.BusyLoop.User); err == nil {
			s.BusyLoop.User = u.Username
		}
	}
	wantLoop := rec != nil && rec.Scenario == BusyReceiver && rec.Phase == phaseUp
	switch {
	case wantLoop && len(loops) == 0 && pinned > 0:
		s.Problems = append(s.Problems, fmt.Sprintf("the busy loop is not running (it ends after %v, or was killed): run 'linerate lab up --name %s --scenario %s' again", busyLifetime, name, BusyReceiver))
	case len(loops) > 1 || len(loops) == 1 && !wantLoop && rec != nil && rec.Phase == phaseUp:
		s.Problems = append(s.Problems, fmt.Sprintf("%d busy loop(s) run in %s that the scenario does not ask for: run 'linerate lab up --name %s' (it stops them) or %s", len(loops), Namespace(name, B), name, down))
	}
	switch {
	case pinned == 1 && len(members) == 2:
		s.Problems = append(s.Problems, "one of the two namespaces is missing (an up or down was interrupted): run "+down)
	case pinned > 0 && pinned < len(members):
		s.Problems = append(s.Problems, fmt.Sprintf("%d of the lab's %d namespaces are missing (an up or down was interrupted): run 'linerate lab up --name %s --hosts %d' or %s",
			len(members)-pinned, len(members), name, len(members)-1, down))
	case pinned == 0:
		s.Problems = append(s.Problems, "the record exists but no namespace does (an up or down was interrupted): run "+down)
	case rec == nil:
		s.Problems = append(s.Problems, fmt.Sprintf("no record in %s (was it made with another LINERATE_STATE_DIR?); 'linerate lab down --name %s' still removes it", dir, name))
	}
	if rec != nil && rec.Phase != phaseUp {
		s.Problems = append(s.Problems, fmt.Sprintf("the last 'up' did not finish (phase %q): run 'linerate lab up --name %s' again or %s", rec.Phase, name, down))
	}
	return s, nil
}

func hostStatus(name string, h Host) (HostStatus, nsState, error) {
	ns := Namespace(name, h)
	hs := HostStatus{Host: h, Namespace: ns}
	st, err := probeNS(nsPath(ns))
	if err != nil || st != nsPinned {
		return hs, st, err
	}
	hs.Exists = true
	c, err := dial(ns)
	if err != nil {
		return hs, st, err
	}
	defer c.Close()
	links, err := c.links()
	if err != nil {
		return hs, st, err
	}
	for _, l := range links {
		ls := LinkStatus{Name: l.Attrs().Name, Kind: l.Type(), MTU: l.Attrs().MTU, Up: isUp(l)}
		addrs, err := c.addrs(l, netlink.FAMILY_ALL)
		if err != nil {
			return hs, st, err
		}
		for _, a := range addrs {
			if a.IP.IsLinkLocalUnicast() {
				continue // every IPv6 link has one; it says nothing about the lab
			}
			ls.Addrs = append(ls.Addrs, a.IPNet.String())
		}
		q, err := c.rootQdisc(l)
		if err != nil {
			return hs, st, err
		}
		ls.Qdisc = qdiscStatus(q)
		hs.Links = append(hs.Links, ls)
	}
	vals, err := readSysctls(ns, managedSysctls())
	if err != nil {
		return hs, st, err
	}
	defs := kernelDefaults()
	for p, v := range vals {
		if v != defs[p] {
			if hs.Sysctls == nil {
				hs.Sysctls = map[string]SysctlStatus{}
			}
			hs.Sysctls[sysctlName(p)] = SysctlStatus{Value: v, Default: defs[p]}
		}
	}
	return hs, st, nil
}

// WriteText writes the report for people, one block per lab.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	if len(r.Labs) == 0 {
		b.WriteString("no labs (start one with 'linerate lab up')\n")
	}
	for i, l := range r.Labs {
		if i > 0 {
			b.WriteByte('\n')
		}
		if !l.Exists {
			fmt.Fprintf(&b, "lab %s: does not exist\n", l.Name)
			continue
		}
		fmt.Fprintf(&b, "lab %s", l.Name)
		if l.Scenario != "" {
			fmt.Fprintf(&b, ": scenario %s", l.Scenario)
		}
		if l.Rate != "" {
			fmt.Fprintf(&b, ", --rate %s", l.Rate)
		}
		if l.MTU != 0 {
			fmt.Fprintf(&b, ", --mtu %d", l.MTU)
		}
		if l.HostCount != 0 {
			fmt.Fprintf(&b, ", --hosts %d", l.HostCount)
		}
		if l.Record != "" {
			fmt.Fprintf(&b, " (record %s)", l.Record)
		}
		b.WriteByte('\n')
		if l.LineRate != "" {
			fmt.Fprintf(&b, "  line rate %s: a tbf on each host's %s, standing in for a NIC's line rate\n", l.LineRate, Iface)
		}
		if bl := l.BusyLoop; bl != nil {
			fmt.Fprintf(&b, "  busy loop: pid %d in host %s, pinned to CPU %d, as %s (bench lab:%s -A 0,%d puts the receiver on it)\n", bl.PID, bl.Host, bl.CPU, bl.User, l.Name, bl.CPU)
		}
		for _, h := range l.Hosts {
			if !h.Exists {
				fmt.Fprintf(&b, "  %s  %s: missing\n", h.Host, h.Namespace)
				continue
			}
			fmt.Fprintf(&b, "  %s  %s\n", h.Host, h.Namespace)
			for _, ln := range h.Links {
				state := "down"
				if ln.Up {
					state = "up"
				}
				addrs := strings.Join(ln.Addrs, " ")
				if addrs == "" {
					addrs = "-"
				}
				fmt.Fprintf(&b, "     %-5s %-6s %-5s mtu %-5d %-18s qdisc %s\n", ln.Name, ln.Kind, state, ln.MTU, addrs, ln.Qdisc)
			}
			keys := make([]string, 0, len(h.Sysctls))
			for k := range h.Sysctls {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				fmt.Fprintf(&b, "     %s = %s (kernel default %s)\n", k, h.Sysctls[k].Value, h.Sysctls[k].Default)
			}
		}
		for _, p := range l.Problems {
			fmt.Fprintf(&b, "  problem: %s\n", p)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
