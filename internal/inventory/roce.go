package inventory

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/dcb"
	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/hostfs"
)

// roce reads what lossless RoCE depends on for one PCI NIC: its DCB
// configuration, its ECN switches, the driver's per-priority counters
// and the IOMMU group of its function.
func (c *collector) roce(n *NIC, base, pciDir string, f *ethtool.Facts) {
	n.DCB = c.dcbOf(n)
	n.ECN = c.ecn(n.Interface, base)
	n.PriorityCounters = priorityCounters(f)
	n.IOMMU = c.iommu(pciDir)
}

// dcbOf reads the NIC's DCB configuration: live through Options.DCB, or
// what a tree holds. A driver without DCB is said only for RDMA NICs,
// where it matters; every other NIC leaves the field null in silence.
func (c *collector) dcbOf(n *NIC) *dcb.IEEE {
	var r *dcb.Reading
	switch {
	case c.opts.DCB != nil:
		r = c.opts.DCB(n.Interface)
	case c.fs.IsLive():
		return nil
	default:
		var err error
		r, err = dcb.Load(c.fs, n.Interface)
		if err != nil {
			c.note("%s: DCB facts unreadable: %v", n.Interface, err)
			return nil
		}
		if r == nil {
			if len(n.RDMA) > 0 {
				c.note("%s: DCB (PFC, ETS, APP table) not captured: the tree holds no %s/ (it predates it, or was not made by linerate snapshot)", n.Interface, dcb.Dir(n.Interface))
			}
			return nil
		}
	}
	if r == nil {
		return nil
	}
	if r.Config == nil {
		if len(n.RDMA) > 0 {
			if r.NotSupported() {
				c.note("%s: DCB: not supported by the driver (%s); PFC, trust and the APP table unknown", n.Interface, r.Error)
			} else {
				c.note("%s: DCB not read: %s", n.Interface, r.Error)
			}
		}
		return nil
	}
	return r.Config
}

// ecn reads mlx5's ecn/roce_np/enable/<prio> and ecn/roce_rp/enable/<prio>
// (MLNX_OFED's driver; upstream mlx5 has no such files and runs DCQCN on
// every priority). Nil when the directory is absent.
func (c *collector) ecn(iface, base string) *ECN {
	dir := base + "/ecn"
	if !c.fs.Exists(dir + "/roce_np/enable") {
		return nil
	}
	e := &ECN{}
	for _, side := range []struct {
		name string
		dst  *[8]*bool
	}{{"roce_np", &e.NP}, {"roce_rp", &e.RP}} {
		for p := range 8 {
			rel := fmt.Sprintf("%s/%s/enable/%d", dir, side.name, p)
			v, err := c.fs.ReadInt(rel)
			switch {
			case err != nil:
				c.noteErr(fmt.Sprintf("%s ECN %s priority %d", iface, side.name, p), err)
			case v == 0 || v == 1:
				b := v == 1
				side.dst[p] = &b
			default:
				c.note("%s: %s reads %d, not 0 or 1", iface, c.fs.Display(rel), v)
			}
		}
	}
	return e
}

// prioCounterRE matches a per-priority driver counter: mlx5's
// rx_prio3_pause, tx_prio3_packets, rx_prio3_discards, …
var prioCounterRE = regexp.MustCompile(`^(rx|tx)_prio([0-7])_([a-z_]+)$`)

// priorityCounters picks the per-priority counters out of the driver's
// ethtool -S counters, keyed by priority then by the name without the
// priority ("rx_pause").
func priorityCounters(f *ethtool.Facts) map[string]map[string]uint64 {
	if f == nil || f.Stats == nil {
		return nil
	}
	var out map[string]map[string]uint64
	for k, v := range f.Stats.Driver {
		m := prioCounterRE.FindStringSubmatch(k)
		if m == nil {
			continue
		}
		if out == nil {
			out = map[string]map[string]uint64{}
		}
		if out[m[2]] == nil {
			out[m[2]] = map[string]uint64{}
		}
		out[m[2]][m[1]+"_"+m[3]] = v
	}
	return out
}

// iommu reads the function's IOMMU group and its type
// (Documentation/ABI/testing/sysfs-kernel-iommu_groups). No group: no
// IOMMU translates the function's DMA.
func (c *collector) iommu(pciDir string) *IOMMU {
	t, err := c.fs.Readlink(pciDir + "/iommu_group")
	if err != nil {
		c.noteErr(path.Base(pciDir)+" IOMMU group", err)
		return nil
	}
	g, err := strconv.Atoi(path.Base(t))
	if err != nil || g < 0 {
		c.note("%s: iommu_group links to %q, not a group", path.Base(pciDir), t)
		return nil
	}
	typ, err := c.fs.ReadString("sys/kernel/iommu_groups/" + strconv.Itoa(g) + "/type")
	if err != nil {
		if !hostfs.IsNotExist(err) {
			c.noteErr(fmt.Sprintf("IOMMU group %d type", g), err)
		}
		// Kernels before 5.11 have no type file: the group exists, its
		// type is unknown.
		typ = ""
	}
	return &IOMMU{Group: g, Type: strings.TrimSpace(typ)}
}
