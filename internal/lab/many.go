package lab

// A lab of many hosts: K namespaces lr-NAME-h01 … lr-NAME-hKK, each with one
// interface lab0 at 198.18.0.<i>/24, and a namespace lr-NAME-sw holding a
// bridge, br0, whose port toward host i is the other end of host i's veth
// and is named h<ii> (h03). The bridge has 198.18.0.254, the seat of a
// controller (a fleet run, slurmctld, an ssh client), so that it reaches
// every host without being one of them.

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Bounds of a lab of many hosts. Host i has 198.18.0.i, so the hosts and
// the switch's .254 fit one /24 with room to spare.
const (
	MinHosts = 3
	MaxHosts = 64
)

// Switch is the host that holds the bridge of a lab of many hosts.
const Switch Host = "sw"

// SwitchAddr is the address of the bridge in the switch namespace.
const SwitchAddr = "198.18.0.254"

// Bridge is the name of the bridge in the switch namespace.
const Bridge = "br0"

// HostN returns host i (1-based) of a lab of many hosts: "h01".
func HostN(i int) Host { return Host(fmt.Sprintf("h%02d", i)) }

// Index returns i for host "h<ii>" of a lab of many hosts (1 to MaxHosts),
// and 0 for any other host.
func (h Host) Index() int {
	s := string(h)
	if len(s) != 3 || s[0] != 'h' || s[1] < '0' || s[1] > '9' || s[2] < '0' || s[2] > '9' {
		return 0
	}
	i, _ := strconv.Atoi(s[1:])
	if i < 1 || i > MaxHosts {
		return 0
	}
	return i
}

// manyAddr is the address of host i of a lab of many hosts.
func manyAddr(i int) string { return "198.18.0." + strconv.Itoa(i) }

// checkHosts validates Hosts and the scenarios a lab of many hosts takes:
// the shaping ones that apply to every host alike.
func (c Config) checkHosts() error {
	if c.Hosts == 0 {
		return nil
	}
	if c.Hosts < MinHosts || c.Hosts > MaxHosts {
		return fmt.Errorf("--hosts %d: a lab of many hosts has %d to %d (leave --hosts out for the two-host lab a and b)", c.Hosts, MinHosts, MaxHosts)
	}
	if c.Scenario != Healthy && c.Scenario != Capped10G {
		return fmt.Errorf("scenario %s shapes host a or b: a lab of many hosts takes %s or %s (and --rate, --mtu for every host)", c.Scenario, Healthy, Capped10G)
	}
	return nil
}

// namespaces lists the namespaces of lab c, hosts first.
func (c Config) namespaces() []string {
	if c.Hosts == 0 {
		return []string{Namespace(c.Name, A), Namespace(c.Name, B)}
	}
	var out []string
	for i := 1; i <= c.Hosts; i++ {
		out = append(out, Namespace(c.Name, HostN(i)))
	}
	return append(out, Namespace(c.Name, Switch))
}

// manySpec is what a lab of many hosts should look like: every host alike.
type manySpec struct {
	hosts int
	mtu   int
	rate  Rate // 0: not shaped
}

func (c Config) manySpec() manySpec {
	s := manySpec{hosts: c.Hosts, mtu: jumboMTU, rate: c.Rate}
	if c.MTU != 0 {
		s.mtu = c.MTU
	}
	if s.rate == 0 && c.Scenario == Capped10G {
		s.rate = rate10G
	}
	return s
}

// foundHosts returns the indexes of the hosts of lab name that have
// something pinned under /run/netns (a namespace or a stale file), sorted.
func foundHosts(name string) ([]int, error) {
	ents, err := os.ReadDir(netnsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", netnsDir, err)
	}
	prefix := "lr-" + name + "-"
	var out []int
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if i := Host(rest).Index(); ok && i > 0 {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out, nil
}

// teardownNamespaces lists every namespace down must remove for lab name:
// a and b, the hosts of a lab of many hosts its record names or
// /run/netns shows (an interrupted up may have made more than the record
// says), and the switch last, so that each host's veth goes before the
// bridge's namespace.
func teardownNamespaces(dir, name string) []string {
	out := []string{Namespace(name, A), Namespace(name, B)}
	idx, _ := foundHosts(name) // an unreadable /run/netns fails later, on each path
	if rec, _ := readRecord(dir, name); rec != nil {
		for i := 1; i <= rec.Hosts; i++ {
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	for _, i := range slices.Compact(idx) {
		out = append(out, Namespace(name, HostN(i)))
	}
	return append(out, Namespace(name, Switch))
}

// notManyHosts refuses to make a two-host lab where a lab of many hosts of
// the same name exists, and notTwoHosts the reverse: one name, one lab.
func notManyHosts(name string, rec *record) error {
	found, err := foundHosts(name)
	if err != nil {
		return err
	}
	if (rec != nil && rec.Hosts != 0) || len(found) > 0 {
		return fmt.Errorf("lab %s is a lab of many hosts: bring it down first ('linerate lab down --name %s') or pick another --name", name, name)
	}
	return nil
}

func notTwoHosts(name string, rec *record) error {
	for _, h := range hosts() {
		st, err := probeNS(nsPath(Namespace(name, h)))
		if err != nil {
			return err
		}
		if st != nsAbsent || (rec != nil && rec.Hosts == 0) {
			return fmt.Errorf("lab %s is a two-host lab (a and b): bring it down first ('linerate lab down --name %s') or pick another --name", name, name)
		}
	}
	return nil
}

// Member is one host of a lab of many hosts, as a fleet run addresses it.
type Member struct {
	Host      Host   `json:"host"`
	Namespace string `json:"namespace"`
	Address   string `json:"address"`
}

// Members lists the hosts of lab name, a lab of many hosts that is up, in
// order; it fails with what to run when the lab is missing, incomplete or
// a two-host lab.
func Members(name string) ([]Member, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if err := requireRoot(); err != nil {
		return nil, err
	}
	dir, err := labDir()
	if err != nil {
		return nil, err
	}
	rec, err := readRecord(dir, name)
	if err != nil {
		return nil, err
	}
	switch {
	case rec == nil:
		return nil, fmt.Errorf("no lab %s: make one with 'linerate lab up --name %s --hosts 6'", name, name)
	case rec.Hosts == 0:
		return nil, fmt.Errorf("lab %s is a two-host lab: a fleet needs a lab of many hosts ('linerate lab up --name NAME --hosts 6')", name)
	case rec.Phase != phaseUp:
		return nil, fmt.Errorf("lab %s is incomplete (its last up did not finish): run 'linerate lab up --name %s --hosts %d' again", name, name, rec.Hosts)
	}
	out := make([]Member, 0, rec.Hosts)
	for i := 1; i <= rec.Hosts; i++ {
		h := HostN(i)
		ns := Namespace(name, h)
		if st, err := probeNS(nsPath(ns)); err != nil {
			return nil, err
		} else if st != nsPinned {
			return nil, fmt.Errorf("lab %s has no host %s (%s is missing): run 'linerate lab up --name %s --hosts %d' again", name, h, ns, name, rec.Hosts)
		}
		out = append(out, Member{Host: h, Namespace: ns, Address: h.Addr()})
	}
	return out, nil
}

// statusHosts lists the hosts Status shows for lab name: a and b, or for a
// lab of many hosts the switch and then every host its record names or
// /run/netns shows.
func statusHosts(name string, rec *record) ([]Host, error) {
	idx, err := foundHosts(name)
	if err != nil {
		return nil, err
	}
	sw, err := probeNS(nsPath(Namespace(name, Switch)))
	if err != nil {
		return nil, err
	}
	if (rec == nil || rec.Hosts == 0) && len(idx) == 0 && sw == nsAbsent {
		return []Host{A, B}, nil
	}
	if rec != nil {
		for i := 1; i <= rec.Hosts; i++ {
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	out := []Host{Switch}
	for _, i := range slices.Compact(idx) {
		out = append(out, HostN(i))
	}
	return out, nil
}
