// Package netdev gathers the NIC facts that only the live kernel can
// give: the link kind and the root qdisc (with a shaped rate) of every
// interface, over rtnetlink. sysfs has neither. Facts gathered here are
// stored in snapshots (see Facts) so a replay sees them too.
package netdev

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/vishvananda/netlink"
)

// Path is where a snapshot keeps the live facts, relative to its root.
const Path = "linerate/live.json"

// Facts are the live facts of every interface in the caller's network
// namespace, by interface name.
type Facts struct {
	Links map[string]Link `json:"links"`
}

// Link is one interface as rtnetlink describes it.
type Link struct {
	Kind  string `json:"kind"`            // "device", "veth", "bridge", "ifb", …
	Qdisc *Qdisc `json:"qdisc,omitempty"` // the root qdisc; nil where none is attached
}

// Qdisc is a root queueing discipline. RateBitsPerSec is set for the
// shaping qdiscs (tbf, and htb's root class) and zero otherwise.
type Qdisc struct {
	Kind           string `json:"kind"`
	RateBitsPerSec uint64 `json:"rate_bits_per_sec,omitempty"`
}

// Query asks the kernel, through a netlink socket in the calling thread's
// network namespace, for every link's kind and root qdisc.
func Query() (*Facts, error) {
	h, err := netlink.NewHandle()
	if err != nil {
		return nil, fmt.Errorf("opening rtnetlink: %w", err)
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return nil, fmt.Errorf("listing links over rtnetlink: %w", err)
	}
	f := &Facts{Links: map[string]Link{}}
	for _, l := range links {
		attrs := l.Attrs()
		lk := Link{Kind: l.Type()}
		q, err := rootQdisc(h, l)
		if err != nil {
			return nil, fmt.Errorf("reading the qdisc of %s: %w", attrs.Name, err)
		}
		lk.Qdisc = q
		f.Links[attrs.Name] = lk
	}
	return f, nil
}

func rootQdisc(h *netlink.Handle, l netlink.Link) (*Qdisc, error) {
	qdiscs, err := h.QdiscList(l)
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return nil, err
	}
	for _, q := range qdiscs {
		a := q.Attrs()
		if a.Parent != netlink.HANDLE_ROOT {
			continue
		}
		out := &Qdisc{Kind: q.Type()}
		switch t := q.(type) {
		case *netlink.Tbf:
			out.RateBitsPerSec = t.Rate * 8
		case *netlink.Htb:
			out.RateBitsPerSec = htbRate(h, l, a.Handle)
		}
		return out, nil
	}
	return nil, nil
}

// htbRate returns the ceiling of the htb root's top class: the rate the
// link is shaped to. Zero when no class hangs from the root.
func htbRate(h *netlink.Handle, l netlink.Link, root uint32) uint64 {
	classes, err := h.ClassList(l, root)
	if err != nil {
		return 0
	}
	var best uint64
	for _, c := range classes {
		if hc, ok := c.(*netlink.HtbClass); ok && hc.Attrs().Parent == root {
			best = max(best, hc.Ceil*8)
		}
	}
	return best
}

// Marshal writes facts as stable, indented JSON for a snapshot.
func (f *Facts) Marshal() ([]byte, error) { return json.MarshalIndent(f, "", "  ") }

// Parse reads facts written by Marshal. Unknown fields are ignored so
// that newer snapshots stay readable.
func Parse(b []byte) (*Facts, error) {
	var f Facts
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", Path, err)
	}
	if f.Links == nil {
		f.Links = map[string]Link{}
	}
	return &f, nil
}

// Names returns the interface names, sorted.
func (f *Facts) Names() []string {
	var n []string
	for k := range f.Links {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}
