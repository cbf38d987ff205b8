package lab

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// conn is a netlink socket inside one lab namespace. NewHandleAt opens the
// socket in the namespace once, so no thread has to switch for netlink.
type conn struct {
	ns string
	fd netns.NsHandle
	nl *netlink.Handle
}

func dial(ns string) (*conn, error) {
	fd, err := netns.GetFromPath(nsPath(ns))
	if err != nil {
		return nil, fmt.Errorf("opening namespace %s: %w", ns, err)
	}
	h, err := netlink.NewHandleAt(fd)
	if err != nil {
		fd.Close()
		return nil, fmt.Errorf("opening netlink in %s: %w", ns, err)
	}
	return &conn{ns: ns, fd: fd, nl: h}, nil
}

func (c *conn) Close() {
	c.nl.Close()
	c.fd.Close()
}

// dumpRetries bounds retries of netlink dumps interrupted by a concurrent
// change (netlink v1.3.1 returns partial results with ErrDumpInterrupted).
const dumpRetries = 5

func retryDump[T any](f func() (T, error)) (T, error) {
	v, err := f()
	for i := 1; i < dumpRetries && errors.Is(err, netlink.ErrDumpInterrupted); i++ {
		v, err = f()
	}
	return v, err
}

// link returns the link called name, or nil if there is none.
func (c *conn) link(name string) (netlink.Link, error) {
	l, err := c.nl.LinkByName(name)
	var nf netlink.LinkNotFoundError
	if errors.As(err, &nf) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("looking up %s in %s: %w", name, c.ns, err)
	}
	return l, nil
}

func (c *conn) links() ([]netlink.Link, error) {
	ls, err := retryDump(c.nl.LinkList)
	if err != nil {
		return nil, fmt.Errorf("listing links in %s: %w", c.ns, err)
	}
	return ls, nil
}

func (c *conn) addrs(l netlink.Link, family int) ([]netlink.Addr, error) {
	as, err := retryDump(func() ([]netlink.Addr, error) { return c.nl.AddrList(l, family) })
	if err != nil {
		return nil, fmt.Errorf("listing addresses of %s in %s: %w", l.Attrs().Name, c.ns, err)
	}
	return as, nil
}

// rootQdisc returns the root qdisc of l, or nil.
func (c *conn) rootQdisc(l netlink.Link) (netlink.Qdisc, error) {
	qs, err := retryDump(func() ([]netlink.Qdisc, error) { return c.nl.QdiscList(l) })
	if err != nil {
		return nil, fmt.Errorf("listing qdiscs of %s in %s: %w", l.Attrs().Name, c.ns, err)
	}
	for _, q := range qs {
		if q.Attrs().Parent == netlink.HANDLE_ROOT {
			return q, nil
		}
	}
	return nil, nil
}

func isUp(l netlink.Link) bool { return l != nil && l.Attrs().Flags&net.FlagUp != 0 }

// tbf sizing. The burst holds 2 ms at the rate: on a busy 2-core machine the
// qdisc watchdog and the softirq that dequeues run late by about that much,
// and a smaller bucket loses tokens meanwhile (measured on veth at 10 Gbit/s
// with a 5 s iperf3 run: 256 KB gave 9.5 Gbit/s, 2.5 MB 9.88, the goodput
// ceiling at MTU 9000 being 9.93). It never drops below 128 KiB, two GSO
// super-packets, so tbf need not split them. The queue limit is twice the
// burst: up to 2 ms of queueing, without tail drops for one TCP flow.
const (
	burstTime = 2e-3 // seconds
	minBurst  = 128 << 10
	maxBurst  = 256 << 20 // keeps 2×burst inside tbf's 32-bit limit
)

// tbfFor returns the tbf that shapes link index to rate r.
func tbfFor(index int, r Rate) *netlink.Tbf {
	bytesPerSec := uint64(r) / 8 // netlink's Tbf.Rate is in bytes per second
	burst := uint32(min(max(float64(bytesPerSec)*burstTime, minBurst), maxBurst))
	return &netlink.Tbf{
		QdiscAttrs: netlink.QdiscAttrs{
			LinkIndex: index,
			Handle:    netlink.MakeHandle(1, 0),
			Parent:    netlink.HANDLE_ROOT,
		},
		Rate:   bytesPerSec, // ≥ 2^32 B/s goes out as TCA_TBF_RATE64, the library's job
		Limit:  2 * burst,
		Buffer: netlink.Xmittime(bytesPerSec, burst), // the bucket, in scheduler ticks
	}
}

// sameTbf reports whether q is a tbf with want's parameters.
func sameTbf(q netlink.Qdisc, want *netlink.Tbf) bool {
	t, ok := q.(*netlink.Tbf)
	return ok && t.Rate == want.Rate && t.Limit == want.Limit && t.Buffer == want.Buffer
}

// fqFor returns the fq that paces each flow leaving link index to at
// most r. Its handle is 2:, not the tbf's 1:, so that either replaces the
// other at the root: the kernel refuses to change a qdisc of one kind
// into another under the same handle.
func fqFor(index int, r Rate) *netlink.Fq {
	q := netlink.NewFq(netlink.QdiscAttrs{
		LinkIndex: index,
		Handle:    netlink.MakeHandle(2, 0),
		Parent:    netlink.HANDLE_ROOT,
	})
	q.FlowMaxRate = uint32(min(uint64(r), uint64(MaxPacingRate)) / 8) // bytes per second
	return q
}

// sameFq reports whether q is an fq with want's maxrate.
func sameFq(q netlink.Qdisc, want *netlink.Fq) bool {
	f, ok := q.(*netlink.Fq)
	return ok && f.FlowMaxRate == want.FlowMaxRate
}

// isDefaultQdisc reports whether q is what the kernel gives a veth by
// itself (noqueue), that is: no shaping.
func isDefaultQdisc(q netlink.Qdisc) bool { return q == nil || q.Type() == "noqueue" }

// QdiscStatus describes the root qdisc of a link.
type QdiscStatus struct {
	Kind string `json:"kind"`
	// RateBPS, BurstBytes and LimitBytes are set for tbf.
	RateBPS    uint64 `json:"rate_bps,omitempty"`
	BurstBytes uint32 `json:"burst_bytes,omitempty"`
	LimitBytes uint32 `json:"limit_bytes,omitempty"`
	// MaxRateBPS is fq's per-flow maxrate, 0 when it has none.
	MaxRateBPS uint64 `json:"max_rate_bps,omitempty"`
}

func qdiscStatus(q netlink.Qdisc) *QdiscStatus {
	if q == nil {
		return nil
	}
	s := &QdiscStatus{Kind: q.Type()}
	if t, ok := q.(*netlink.Tbf); ok {
		s.RateBPS = t.Rate * 8
		s.BurstBytes = netlink.Xmitsize(t.Rate, t.Buffer)
		s.LimitBytes = t.Limit
	}
	if f, ok := q.(*netlink.Fq); ok && f.FlowMaxRate != ^uint32(0) {
		s.MaxRateBPS = uint64(f.FlowMaxRate) * 8
	}
	return s
}

// String writes the qdisc as one phrase: "tbf 10gbit burst 2.5MB limit 5MB".
func (q *QdiscStatus) String() string {
	if q == nil {
		return "none"
	}
	if q.Kind == "fq" && q.MaxRateBPS != 0 {
		return "fq maxrate " + Rate(q.MaxRateBPS).String()
	}
	if q.Kind != "tbf" {
		return q.Kind
	}
	return fmt.Sprintf("tbf %s burst %s limit %s", Rate(q.RateBPS), bytesString(uint64(q.BurstBytes)), bytesString(uint64(q.LimitBytes)))
}

func describeQdisc(q netlink.Qdisc) string { return qdiscStatus(q).String() }

// bytesString writes a size with SI units, as tc does: "2.5MB".
func bytesString(n uint64) string {
	units := []struct {
		div  float64
		name string
	}{{1e9, "GB"}, {1e6, "MB"}, {1e3, "KB"}}
	for _, u := range units {
		if float64(n) >= u.div {
			s := fmt.Sprintf("%.2f", float64(n)/u.div)
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
			return s + u.name
		}
	}
	return fmt.Sprintf("%dB", n)
}
