// Package netdev gathers the NIC facts that only the live kernel can
// give, over rtnetlink: every interface's link kind and alias, whether it
// carries a default route, and its egress qdiscs and classes (tc's tree),
// from which Link.Shaper finds what caps the interface. sysfs has none of
// them. Facts gathered here are stored in snapshots (see Facts and
// docs/schema/live-facts.schema.json) so a replay sees them too.
package netdev

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
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
	Kind string `json:"kind"` // "device", "veth", "bridge", "ifb", …
	// Alias is the interface's alias (ip link set IF alias …, sysfs
	// ifalias); the lab declares its shaped rate there (DeclaredLineRate).
	Alias string `json:"alias,omitempty"`
	// DefaultRoute is set when an IPv4 or IPv6 default route of the main
	// table leaves through the interface.
	DefaultRoute bool `json:"default_route,omitempty"`
	// Qdisc sums up the root qdisc: its kind and the rate Shaper finds
	// (0 when nothing caps the link). Snapshots made before Qdiscs
	// existed hold only this.
	Qdisc *Qdisc `json:"qdisc,omitempty"`
	// Qdiscs are the egress qdiscs, root first, as 'tc qdisc show'
	// lists them (ingress and clsact are left out).
	Qdiscs []Qdisc `json:"qdiscs,omitempty"`
	// Classes are the classes of the htb qdiscs, as 'tc class show'.
	Classes []Class `json:"classes,omitempty"`
}

// Qdisc is one queueing discipline. Handles are written as tc writes
// them, in hexadecimal: "1:", "8001:", a parent "1:10" or "root".
type Qdisc struct {
	Kind   string `json:"kind"`
	Handle string `json:"handle,omitempty"`
	Parent string `json:"parent,omitempty"`
	// RateBitsPerSec is the rate the qdisc shapes to: tbf's rate, fq's
	// maxrate (per flow), cake's bandwidth; zero for the others. In
	// Link.Qdisc, the rate Shaper found.
	RateBitsPerSec uint64 `json:"rate_bits_per_sec,omitempty"`
	// DefaultClass is htb's default class ("1:10"), where traffic no
	// filter classifies goes; empty when htb sends it unshaped.
	DefaultClass string `json:"default_class,omitempty"`
	// OverheadBytes is cake's per-packet overhead when it compensates for
	// one (it then counts the IP packet plus this, not the frame); nil
	// when it counts the packet as it comes (cake's raw mode).
	OverheadBytes *int `json:"overhead_bytes,omitempty"`
}

// Class is one class of a classful qdisc (htb): it may send at Rate and,
// borrowing, up to Ceil.
type Class struct {
	Kind           string `json:"kind"`
	Handle         string `json:"handle"`
	Parent         string `json:"parent"`
	RateBitsPerSec uint64 `json:"rate_bits_per_sec,omitempty"`
	CeilBitsPerSec uint64 `json:"ceil_bits_per_sec,omitempty"`
}

// Query asks the kernel, through a netlink socket in the calling thread's
// network namespace, for every link's kind, alias, default route, and
// egress qdiscs and classes.
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
	defaults, err := defaultRouteLinks(h)
	if err != nil {
		return nil, err
	}
	f := &Facts{Links: map[string]Link{}}
	for _, l := range links {
		attrs := l.Attrs()
		lk := Link{Kind: l.Type(), Alias: attrs.Alias, DefaultRoute: defaults[attrs.Index]}
		if lk.Qdiscs, lk.Classes, err = egress(h, l); err != nil {
			return nil, fmt.Errorf("reading the qdiscs of %s: %w", attrs.Name, err)
		}
		lk.Qdisc = lk.summary()
		f.Links[attrs.Name] = lk
	}
	return f, nil
}

// defaultRouteLinks returns the interfaces (by index) that a default
// route of the main table leaves through, nexthops of a multipath route
// included.
func defaultRouteLinks(h *netlink.Handle) (map[int]bool, error) {
	out := map[int]bool{}
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		routes, err := h.RouteList(nil, fam)
		if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
			return nil, fmt.Errorf("listing routes over rtnetlink: %w", err)
		}
		for _, r := range routes {
			if !isDefault(r.Dst) {
				continue
			}
			if r.LinkIndex > 0 {
				out[r.LinkIndex] = true
			}
			for _, nh := range r.MultiPath {
				if nh != nil && nh.LinkIndex > 0 {
					out[nh.LinkIndex] = true
				}
			}
		}
	}
	return out, nil
}

// isDefault reports whether a route's destination is the default: none,
// or 0.0.0.0/0 or ::/0 (the library gives either, by version).
func isDefault(dst *net.IPNet) bool {
	if dst == nil {
		return true
	}
	ones, _ := dst.Mask.Size()
	return ones == 0 && dst.IP.IsUnspecified()
}

// egress lists a link's egress qdiscs (root first) and, when one of them
// is htb, its classes.
func egress(h *netlink.Handle, l netlink.Link) ([]Qdisc, []Class, error) {
	qs, err := h.QdiscList(l)
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return nil, nil, err
	}
	var out []Qdisc
	var htb, cake bool
	for _, q := range qs {
		a := q.Attrs()
		if a.Parent == netlink.HANDLE_INGRESS || q.Type() == "ingress" || q.Type() == "clsact" {
			continue
		}
		e := Qdisc{Kind: q.Type(), Handle: HandleString(a.Handle), Parent: HandleString(a.Parent)}
		switch t := q.(type) {
		case *netlink.Tbf:
			e.RateBitsPerSec = t.Rate * 8
		case *netlink.Htb:
			htb = true
			if t.Defcls != 0 {
				e.DefaultClass = HandleString(a.Handle&0xffff0000 | t.Defcls&0xffff)
			}
		case *netlink.Fq:
			// The kernel reports maxrate in bytes per second as a u32,
			// ~0 for none: a maxrate of 34.36 Gbit/s or more reads as none.
			if t.FlowMaxRate != 0 && t.FlowMaxRate != ^uint32(0) {
				e.RateBitsPerSec = uint64(t.FlowMaxRate) * 8
			}
		default:
			cake = cake || q.Type() == "cake"
		}
		out = append(out, e)
	}
	if cake {
		if err := readCake(l.Attrs().Index, out); err != nil {
			return nil, nil, err
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Parent == "root" && out[j].Parent != "root" })
	if !htb {
		return out, nil, nil
	}
	cs, err := h.ClassList(l, 0)
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return nil, nil, fmt.Errorf("listing classes: %w", err)
	}
	var classes []Class
	for _, c := range cs {
		a := c.Attrs()
		e := Class{Kind: c.Type(), Handle: HandleString(a.Handle), Parent: HandleString(a.Parent)}
		if hc, ok := c.(*netlink.HtbClass); ok {
			e.RateBitsPerSec, e.CeilBitsPerSec = hc.Rate*8, hc.Ceil*8
		}
		classes = append(classes, e)
	}
	return out, classes, nil
}

// summary is Link.Qdisc: the root's kind and the rate Shaper finds.
func (l Link) summary() *Qdisc {
	for _, q := range l.Qdiscs {
		if q.Parent == "root" {
			s := &Qdisc{Kind: q.Kind}
			if sh := l.Shaper(); sh != nil && !sh.PerFlow {
				s.RateBitsPerSec = sh.RateBitsPerSec
			}
			return s
		}
	}
	return nil
}

// HandleString writes a tc handle as tc does: "root", "ingress", "1:",
// "1:10" (hexadecimal), "0:" for none.
func HandleString(h uint32) string {
	switch h {
	case netlink.HANDLE_ROOT:
		return "root"
	case netlink.HANDLE_INGRESS:
		return "ingress"
	}
	major, minor := h>>16, h&0xffff
	if minor == 0 {
		return fmt.Sprintf("%x:", major)
	}
	return fmt.Sprintf("%x:%x", major, minor)
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
