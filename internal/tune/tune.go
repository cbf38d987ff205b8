// Package tune turns doctor's findings into a plan of exact changes, applies
// the plan as a journaled transaction that proves each write by reading it
// back, and reverts it on request.
//
// A plan (NewPlan) changes only what a finding or an explicit option asks
// for, on the NICs selected (--iface, or the PCI NICs that are up), the IRQs
// doctor ties to them and the CPUs local to them. Each change carries its
// value before and after, the finding it answers, where the value comes
// from, and the command a user could paste instead.
//
// Apply writes each change's previous value to a journal, synced to disk
// with its directory, before the change; then changes; then reads back. A
// failed step rolls back every applied step in reverse order. Revert
// restores a journal's values in reverse order, leaving alone (and
// reporting) any value someone else changed since, unless forced. Because
// the previous value is on disk before each change, a tune killed at any
// point leaves a journal from which Revert restores the prior state.
//
// File-backed changes (net sysctls, CPU governors, IRQ affinity, the
// irqbalance configuration) go through hostfs, so they apply to the live
// host or, with a captured tree as root, to the tree's files; changes that
// live in the driver (MTU, queues, rings) need the live NIC (Devices).
package tune

import (
	"fmt"
	"github.com/linerate/linerate/internal/placement"
	"slices"
	"strings"
)

// Schema names the JSON document of a plan.
const Schema = "linerate.tune/v1"

// Profile selects the settings beyond the findings' fixes.
type Profile string

// The profiles; see profile.go for each setting and its source.
const (
	// Throughput follows tuned's network-throughput and fasterdata's 100G
	// page: buffers at 2 × line rate × RTT, rings at the maximum.
	Throughput Profile = "throughput"
	// Latency follows tuned's network-latency: busy polling, buffers no
	// larger than one bandwidth-delay product, rings left alone.
	Latency Profile = "latency"
)

// ParseProfile reads a --profile value.
func ParseProfile(s string) (Profile, error) {
	switch p := Profile(strings.ToLower(s)); p {
	case Throughput, Latency:
		return p, nil
	}
	return "", fmt.Errorf("unknown profile %q (want throughput or latency)", s)
}

// Kind says what a change changes, and so how it is applied and read back.
type Kind string

// The kinds of change, in the order Apply makes them.
const (
	KindSysctl     Kind = "sysctl"     // /proc/sys/net/…, in the current network namespace
	KindGovernor   Kind = "governor"   // cpufreq scaling_governor
	KindMTU        Kind = "mtu"        // rtnetlink
	KindChannels   Kind = "channels"   // ethtool -L
	KindRings      Kind = "rings"      // ethtool -G
	KindIRQBalance Kind = "irqbalance" // its configuration file, then a restart
	KindIRQ        Kind = "irq"        // /proc/irq/N/smp_affinity_list
)

// kindOrder is the order changes are applied in. Queue changes come before
// IRQ placement because they can add IRQs; irqbalance is restarted with
// its ban list before the IRQs move, since some versions rewrite banned
// IRQs' affinity at start-up (irqbalance#297).
func kindOrder() []Kind {
	return []Kind{KindSysctl, KindGovernor, KindMTU, KindChannels, KindRings, KindMRRS, KindTrust, KindPFC, KindECN, KindIRQBalance, KindIRQ}
}

func kindRank(k Kind) int { return slices.Index(kindOrder(), k) }

// liveOnly reports whether a kind lives in the driver rather than in a
// file, so that it cannot be applied below a captured tree.
func (k Kind) liveOnly() bool {
	return k == KindMTU || k == KindChannels || k == KindRings || k == KindPFC || k == KindTrust
}

// Change is one planned change.
type Change struct {
	// Step numbers the change in apply order, from 1.
	Step int  `json:"step"`
	Kind Kind `json:"kind"`
	// Target names what changes as users name it: "net.ipv4.tcp_rmem",
	// "cpu7", "irq 99", "ens2f0np0", "/etc/default/irqbalance".
	Target string `json:"target"`
	// Path is the file written, as on the host ("/proc/irq/99/smp_affinity_list");
	// empty for changes made over netlink or ethtool.
	Path string `json:"path,omitempty"`
	// Interface is the NIC the change is for, if any.
	Interface string `json:"interface,omitempty"`
	// Detail says more about the target (an IRQ's name).
	Detail string `json:"detail,omitempty"`
	Before string `json:"before"`
	After  string `json:"after"`
	// Finding is the doctor finding ID the change answers; empty for a
	// profile setting or an explicit option (see Source).
	Finding string `json:"finding,omitempty"`
	// Source says where the value comes from.
	Source string `json:"source"`
	// Command is what a user could paste to make the same change.
	Command string `json:"command"`
	// LiveOnly marks changes that need the live NIC (not file-backed):
	// applying below a captured tree skips them.
	LiveOnly bool `json:"live_only,omitempty"`
}

// Label is a short description for messages: "irq 99 (mlx5_comp0@pci:…) 3 → 8".
func (c Change) Label() string {
	t := c.Target
	if c.Kind == KindSysctl || c.Kind == KindGovernor {
		t = string(c.Kind) + " " + t
	}
	return fmt.Sprintf("%s %s → %s", t, orNone(c.Before), orNone(c.After))
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// Note is advice the plan gives but does not apply: a fix that needs the
// user's say (an MTU the path must match), a finding no setting fixes, a
// setting this host does not have.
type Note struct {
	Finding string `json:"finding,omitempty"`
	Subject string `json:"subject,omitempty"`
	Text    string `json:"text"`
}

// Placement is where one NIC's IRQs go and where its application should
// run (package placement decides it; doctor proposes the same).
type Placement = placement.Placement

// Plan is what tune would change, and why.
type Plan struct {
	Schema  string  `json:"schema"`
	Profile Profile `json:"profile"`
	// Host is the hostname of the host (or captured tree) planned for.
	Host string `json:"host"`
	// Root is "/" for the live host, else the captured tree's directory.
	Root string `json:"root"`
	// NetNS is the inode of the network namespace the plan was made in:
	// sysctls under /proc/sys/net belong to it.
	NetNS      uint64   `json:"netns"`
	RTTMs      float64  `json:"rtt_ms"`
	Interfaces []string `json:"interfaces"`
	// Findings lists the IDs of doctor's findings the plan was made from.
	Findings   []string    `json:"findings"`
	Changes    []Change    `json:"changes"`
	Placements []Placement `json:"placements"`
	Notes      []Note      `json:"notes"`
}
