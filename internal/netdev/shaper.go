package netdev

import (
	"fmt"
	"strconv"
	"strings"
)

// Shaper is what caps a link's egress: the qdisc (or htb class) whose
// rate binds the traffic no filter classifies, found by Link.Shaper.
type Shaper struct {
	Kind   string `json:"kind"`   // the shaping qdisc: tbf, htb, fq, cake
	Handle string `json:"handle"` // its handle, or the htb class's ("1:10")
	// RateBitsPerSec is the rate it allows: tbf's rate, the lowest ceil
	// from htb's default class up, fq's maxrate, cake's bandwidth.
	RateBitsPerSec uint64 `json:"rate_bits_per_sec"`
	// PerFlow is set for fq's maxrate, which caps each flow, not the
	// link.
	PerFlow bool `json:"per_flow,omitempty"`
	// OverheadBytes is cake's compensation (Qdisc.OverheadBytes); nil
	// when the shaper counts each packet as the qdisc sees it.
	OverheadBytes *int `json:"overhead_bytes,omitempty"`
	// Detail says where it sits, as tc names it: "tbf 1: rate 1gbit",
	// "htb class 1:10 ceil 500mbit (the default class of htb 1:)".
	Detail string `json:"detail"`
}

// maxDepth bounds the walk down a qdisc tree: a real one is two or three
// levels deep; a snapshot's could be anything.
const maxDepth = 8

// Shaper walks the egress tree from the root the way traffic no filter
// classifies goes, and returns the tightest cap on the way: tbf's rate;
// for htb, its default class (none, or one that is not a leaf, means
// htb sends such traffic unshaped) and the lowest ceil from it up to the
// root class; fq's maxrate (per flow); cake's bandwidth; for mq, the sum
// of its queues' caps when every queue has one. Classful qdiscs whose
// classification is not read (prio, hfsc, drr, ets, mqprio, …) end the
// walk, as do filters, which are not read: a shaper reached only through
// a filter is not found. nil when nothing caps the link.
func (l Link) Shaper() *Shaper {
	if len(l.Qdiscs) == 0 {
		// A snapshot made before the tree was kept: the root's kind and
		// the rate it was found to shape to.
		if q := l.Qdisc; q != nil && q.RateBitsPerSec > 0 {
			return &Shaper{Kind: q.Kind, Handle: "root", RateBitsPerSec: q.RateBitsPerSec,
				Detail: fmt.Sprintf("%s at %s", q.Kind, RateString(q.RateBitsPerSec))}
		}
		return nil
	}
	for _, q := range l.Qdiscs {
		if q.Parent == "root" {
			return l.walk(q, 0)
		}
	}
	return nil
}

func (l Link) walk(q Qdisc, depth int) *Shaper {
	if depth > maxDepth {
		return nil
	}
	switch q.Kind {
	case "tbf":
		var s *Shaper
		if q.RateBitsPerSec > 0 {
			s = &Shaper{Kind: "tbf", Handle: q.Handle, RateBitsPerSec: q.RateBitsPerSec,
				Detail: fmt.Sprintf("tbf %s rate %s", q.Handle, RateString(q.RateBitsPerSec))}
		}
		// tbf's inner qdisc hangs from its class major:1.
		if c, ok := l.qdiscUnder(q.Handle, 1); ok {
			return tighter(s, l.walk(c, depth+1))
		}
		return s
	case "cake":
		if q.RateBitsPerSec == 0 {
			return nil
		}
		return &Shaper{Kind: "cake", Handle: q.Handle, RateBitsPerSec: q.RateBitsPerSec, OverheadBytes: q.OverheadBytes,
			Detail: fmt.Sprintf("cake %s bandwidth %s", q.Handle, RateString(q.RateBitsPerSec))}
	case "fq":
		if q.RateBitsPerSec == 0 {
			return nil
		}
		return &Shaper{Kind: "fq", Handle: q.Handle, RateBitsPerSec: q.RateBitsPerSec, PerFlow: true,
			Detail: fmt.Sprintf("fq %s maxrate %s (each flow)", q.Handle, RateString(q.RateBitsPerSec))}
	case "htb":
		return l.htb(q, depth)
	case "mq":
		return l.mq(q, depth)
	}
	return nil
}

// htb follows the default class: the lowest ceil (a class may borrow up
// to its ceil, and no further than its parents' ceils) from it to the
// root class, then the qdisc under it.
func (l Link) htb(q Qdisc, depth int) *Shaper {
	leaf, ok := l.class(q.DefaultClass)
	if !ok || l.hasChildClass(leaf.Handle) {
		return nil // the kernel sends unclassified traffic unshaped (direct)
	}
	var s *Shaper
	c, seen := leaf, map[string]bool{}
	for i := 0; i <= maxDepth && !seen[c.Handle]; i++ {
		seen[c.Handle] = true
		if c.CeilBitsPerSec > 0 && (s == nil || c.CeilBitsPerSec < s.RateBitsPerSec) {
			s = &Shaper{Kind: "htb", Handle: c.Handle, RateBitsPerSec: c.CeilBitsPerSec,
				Detail: fmt.Sprintf("htb class %s ceil %s", c.Handle, RateString(c.CeilBitsPerSec))}
		}
		p, ok := l.class(c.Parent)
		if !ok {
			break
		}
		c = p
	}
	if s != nil {
		if s.Handle == leaf.Handle {
			s.Detail += fmt.Sprintf(" (the default class of htb %s)", q.Handle)
		} else {
			s.Detail += fmt.Sprintf(" (above %s, the default class of htb %s)", leaf.Handle, q.Handle)
		}
	}
	for _, c := range l.Qdiscs {
		if c.Parent == leaf.Handle {
			return tighter(s, l.walk(c, depth+1))
		}
	}
	return s
}

// mq gives each TX queue a qdisc of its own: the link is capped only when
// every queue is, at the sum of their rates; fq's maxrate caps a flow,
// which uses one queue, at the highest of theirs.
func (l Link) mq(q Qdisc, depth int) *Shaper {
	major, ok := handleMajor(q.Handle)
	if !ok {
		return nil
	}
	var kids []*Shaper
	for _, c := range l.Qdiscs {
		if pm, ok := handleMajor(c.Parent); ok && pm == major && c.Parent != "root" {
			s := l.walk(c, depth+1)
			if s == nil {
				return nil
			}
			kids = append(kids, s)
		}
	}
	if len(kids) == 0 {
		return nil
	}
	out := &Shaper{Kind: kids[0].Kind, Handle: q.Handle, PerFlow: kids[0].PerFlow, OverheadBytes: kids[0].OverheadBytes}
	for _, k := range kids {
		if k.PerFlow != out.PerFlow {
			return nil
		}
		if out.PerFlow {
			out.RateBitsPerSec = max(out.RateBitsPerSec, k.RateBitsPerSec)
		} else {
			out.RateBitsPerSec += k.RateBitsPerSec
		}
	}
	kind := out.Kind
	for _, k := range kids {
		if k.Kind != kind {
			kind = "a shaper"
		}
	}
	if kind == "fq" {
		kind = "fq maxrate"
	}
	if out.PerFlow {
		out.Detail = fmt.Sprintf("mq %s with %s on each of its %d queues, each flow at most %s", q.Handle, kind, len(kids), RateString(out.RateBitsPerSec))
	} else {
		out.Detail = fmt.Sprintf("mq %s with %s on each of its %d queues, %s in all", q.Handle, kind, len(kids), RateString(out.RateBitsPerSec))
	}
	return out
}

// tighter returns the shaper of the lower rate (a if equal), either may
// be nil.
func tighter(a, b *Shaper) *Shaper {
	switch {
	case a == nil:
		return b
	case b == nil || a.RateBitsPerSec <= b.RateBitsPerSec:
		return a
	}
	return b
}

// qdiscUnder returns the qdisc whose parent is class minor of handle.
func (l Link) qdiscUnder(handle string, minor uint32) (Qdisc, bool) {
	major, ok := handleMajor(handle)
	if !ok {
		return Qdisc{}, false
	}
	want := fmt.Sprintf("%x:%x", major, minor)
	for _, c := range l.Qdiscs {
		if c.Parent == want {
			return c, true
		}
	}
	return Qdisc{}, false
}

func (l Link) class(handle string) (Class, bool) {
	if handle == "" {
		return Class{}, false
	}
	for _, c := range l.Classes {
		if c.Handle == handle {
			return c, true
		}
	}
	return Class{}, false
}

func (l Link) hasChildClass(handle string) bool {
	for _, c := range l.Classes {
		if c.Parent == handle && c.Handle != handle {
			return true
		}
	}
	return false
}

// handleMajor reads the major number of a tc handle ("1:", "8001:10").
func handleMajor(h string) (uint32, bool) {
	maj, _, ok := strings.Cut(h, ":")
	if !ok || maj == "" {
		return 0, false
	}
	v, err := strconv.ParseUint(maj, 16, 16)
	return uint32(v), err == nil
}

// RateString writes a rate in bits per second as tc reads it: "10gbit",
// "2.5gbit", "400mbit".
func RateString(bps uint64) string {
	for _, u := range []struct {
		div  float64
		name string
	}{{1e12, "tbit"}, {1e9, "gbit"}, {1e6, "mbit"}, {1e3, "kbit"}} {
		if float64(bps) >= u.div {
			return strconv.FormatFloat(float64(bps)/u.div, 'f', -1, 64) + u.name
		}
	}
	return strconv.FormatUint(bps, 10) + "bit"
}

// The alias by which linerate's lab declares that a link's tbf stands in
// for a NIC's line rate (DeclareLineRate).
const (
	declaredPrefix = "linerate lab: tbf at "
	declaredSuffix = " bit/s stands in for a NIC's line rate"
)

// DeclareLineRate is the interface alias that says the link's shaper, at
// bps bits per second, stands in for a NIC's line rate: the lab sets it on
// the links it shapes, so that doctor takes the rate as the line rate
// rather than as a shaper capping one.
func DeclareLineRate(bps uint64) string {
	return declaredPrefix + strconv.FormatUint(bps, 10) + declaredSuffix
}

// DeclaredLineRate reads an alias DeclareLineRate wrote: the rate in bits
// per second, and whether the alias is one.
func DeclaredLineRate(alias string) (uint64, bool) {
	s, ok := strings.CutPrefix(alias, declaredPrefix)
	if !ok {
		return 0, false
	}
	if s, ok = strings.CutSuffix(s, declaredSuffix); !ok {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil && v > 0
}
