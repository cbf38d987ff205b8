package nicstats

import (
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Kernel is what the kernel counts for every interface whatever its
// driver: the fields of rtnl_link_stats64 that name a cause (what
// /sys/class/net/IF/statistics shows, read over rtnetlink so that it is
// the calling thread's network namespace that answers), and the drops
// of the root queueing discipline (`tc -s qdisc`). A veth, which has no
// drop counters of its own in `ethtool -S`, is seen through these.
type Kernel struct {
	// Hardware says the interface has a parent device on a bus (PCI,
	// virtio): only then do the fields the kernel documents as hardware
	// events (rx_missed_errors, rx_fifo_errors, rx_crc_errors,
	// rx_frame_errors) count; a software device never updates them, so
	// their zero would be a guess.
	Hardware bool
	// Link holds rtnl_link_stats64's fields by their kernel names.
	Link map[string]uint64
	// QdiscDrops is the root qdisc's drop counter (32 bits in the
	// kernel's gnet_stats_queue); nil when no root qdisc was read.
	// QdiscKind is its kind ("tbf", "mq", "noqueue").
	QdiscDrops *uint64
	QdiscKind  string
}

// kernelRules map rtnl_link_stats64's fields to causes, with the
// meanings include/uapi/linux/if_link.h gives them: rx_missed_errors is
// "packets dropped by the device due to lack of buffer space" (the host
// did not keep up: RXNoBuffer); rx_dropped is what the stack discarded
// after the device delivered it and, by definition, excludes that;
// rx_fifo_errors is the receiver FIFO overflowing (the NIC's own
// buffer); rx_crc_errors is aFrameCheckSequenceErrors and rx_frame_errors
// aAlignmentErrors. rx_over_errors is left out: the header allows both
// "ring overflow" and "frame larger than the buffer" readings of it.
var kernelRules = []struct {
	field    string
	cause    Cause
	hardware bool // counts only on an interface with a parent device
}{
	{"rx_missed_errors", RXNoBuffer, true},
	{"rx_fifo_errors", RXNICBuffer, true},
	{"rx_crc_errors", PHYErrors, true},
	{"rx_frame_errors", PHYErrors, true},
	{"rx_dropped", RXDropped, false},
	{"tx_dropped", TXDropped, false},
}

// AddKernel adds the kernel's counters to c. The hardware fields are a
// fallback: a cause the driver's own counters or the standard groups
// already report is left to them (they count the same frames, often
// more precisely). rx_dropped, tx_dropped and the qdisc's drops are
// causes of their own.
func AddKernel(c *Counters, k Kernel) {
	if c.ByCause == nil {
		c.ByCause = map[Cause]Count{}
	}
	had := map[Cause]bool{}
	for cause := range c.ByCause {
		had[cause] = true
	}
	for _, r := range kernelRules {
		v, ok := k.Link[r.field]
		if !ok || had[r.cause] || (r.hardware && !k.Hardware) {
			continue
		}
		c.add(r.cause, "link."+r.field, v)
	}
	if k.QdiscDrops != nil {
		c.add(QdiscDrops, "qdisc.drops", *k.QdiscDrops)
	}
}

// add adds one counter's value to a cause.
func (c *Counters) add(cause Cause, src string, v uint64) {
	n := c.ByCause[cause]
	if n.Sources == nil {
		n.Sources = map[string]uint64{}
	}
	n.Value += v
	n.Sources[src] = v
	c.ByCause[cause] = n
}

// ReadKernel reads iface's kernel counters through h (rtnetlink, in the
// network namespace h was opened in).
func ReadKernel(h *netlink.Handle, iface string) (Kernel, error) {
	l, err := h.LinkByName(iface)
	if err != nil {
		return Kernel{}, fmt.Errorf("reading the link statistics of %s: %w", iface, err)
	}
	a := l.Attrs()
	k := Kernel{Hardware: a.ParentDevBus != ""}
	if s := a.Statistics; s != nil {
		k.Link = map[string]uint64{
			"rx_dropped": s.RxDropped, "tx_dropped": s.TxDropped,
			"rx_missed_errors": s.RxMissedErrors, "rx_fifo_errors": s.RxFifoErrors,
			"rx_crc_errors": s.RxCrcErrors, "rx_frame_errors": s.RxFrameErrors,
		}
	}
	qs, err := h.QdiscList(l)
	if err != nil {
		// The link's counters stand without the qdisc's.
		return k, nil
	}
	for _, q := range qs {
		qa := q.Attrs()
		// The root qdisc's counters include its children's: a classful
		// qdisc counts a child's drop as its own too, and mq sums its
		// per-queue children when dumped. Summing more would count twice.
		if qa.Parent != netlink.HANDLE_ROOT || qa.Statistics == nil || qa.Statistics.Queue == nil {
			continue
		}
		v := uint64(qa.Statistics.Queue.Drops)
		k.QdiscDrops, k.QdiscKind = &v, q.Type()
		break
	}
	return k, nil
}

// openRoute opens an rtnetlink handle in the calling thread's network
// namespace.
func openRoute() (*netlink.Handle, error) {
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("opening rtnetlink: %w", err)
	}
	return h, nil
}
