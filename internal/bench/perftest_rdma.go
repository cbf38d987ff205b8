package bench

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/result"
)

// RDMA counters around a perftest run (docs/architecture.md, "RDMA runs
// that explain themselves"): as the NIC counters are read around every
// tool's run, the RDMA port's counters/ and hw_counters/ and the driver's
// per-priority counters of its netdev are read before the client starts
// and after it ends, on each end this process can read.

// rdmaSpan is one end's RDMA port, read before a run.
type rdmaSpan struct {
	fs      *hostfs.FS
	port    inventory.RDMAPort
	pcie    *inventory.PCIe
	before  hostfs.RDMACounterSet
	prio    map[string]uint64 // the netdev's per-priority driver counters
	prioErr error
	err     error
}

// beginRDMA finds the RDMA port a perftest run uses on the host below fs
// (the device asked for, else the first ACTIVE port, as perftest picks
// the first device) and reads its counters.
func beginRDMA(fs *hostfs.FS, device string) *rdmaSpan {
	s := &rdmaSpan{fs: fs}
	inv, err := inventory.Collect(fs, inventory.Options{})
	if err != nil {
		s.err = err
		return s
	}
	found := false
	for _, n := range inv.NICs {
		for _, p := range n.RDMA {
			switch {
			case device != "" && p.Device != device:
				continue
			case !found, device == "" && s.port.State != "ACTIVE" && p.State == "ACTIVE":
				s.port, s.pcie, found = p, n.PCIe, true
			}
		}
	}
	if !found {
		what := "no RDMA port"
		if device != "" {
			what = "no RDMA device " + device
		}
		s.err = fmt.Errorf("%s under %s", what, fs.Display("sys/class/infiniband"))
		return s
	}
	s.before, s.err = fs.RDMACounters(s.port.Device, s.port.Port)
	s.prio, s.prioErr = priorityStats(fs, s.port.Netdev)
	return s
}

// end reads the port again and returns how its counters grew.
func (s *rdmaSpan) end() *result.RDMAEnd {
	out := &result.RDMAEnd{Device: s.port.Device, Port: s.port.Port, Netdev: s.port.Netdev}
	if s.err != nil {
		out.NotRead = s.err.Error()
		return out
	}
	after, err := s.fs.RDMACounters(s.port.Device, s.port.Port)
	if err != nil {
		out.NotRead = err.Error()
		return out
	}
	out.HWCounters = growth(s.before.HWCounters, after.HWCounters)
	out.Counters = growth(s.before.Counters, after.Counters)
	prio, err := priorityStats(s.fs, s.port.Netdev)
	if err = errors.Join(s.prioErr, err); err != nil {
		out.NotRead = "per-priority counters: " + err.Error()
	}
	out.Priority = byPriority(growth(s.prio, prio))
	return out
}

// growth is each counter's growth from before to after, for the counters
// read both times. A counter that went down (the driver reloaded, the
// port reset) grew by its value after.
func growth(before, after map[string]uint64) map[string]uint64 {
	if before == nil || after == nil {
		return nil
	}
	out := make(map[string]uint64, len(after))
	for k, a := range after {
		b, ok := before[k]
		switch {
		case !ok:
		case a >= b:
			out[k] = a - b
		default:
			out[k] = a
		}
	}
	return out
}

// prioStatRE matches a per-priority driver counter: mlx5's rx_prio3_pause,
// rx_prio3_discards, tx_prio3_pause.
var prioStatRE = regexp.MustCompile(`^(rx|tx)_prio([0-7])_(pause|discards|pause_duration)$`)

// priorityStats reads the per-priority pause and discard counters of
// iface: live from the driver (ethtool -S), from a tree what it holds.
// None (a driver without them, an InfiniBand port) is nil, no error.
func priorityStats(fs *hostfs.FS, iface string) (map[string]uint64, error) {
	if iface == "" {
		return nil, nil
	}
	var all map[string]uint64
	if fs.IsLive() {
		c, err := ethtool.Open()
		if err != nil {
			return nil, err
		}
		defer c.Close()
		if all, err = c.DriverStats(iface); err != nil {
			return nil, fmt.Errorf("%s: %w", iface, err)
		}
	} else {
		f, err := ethtool.Load(fs, iface)
		if err != nil {
			return nil, err
		}
		if f == nil || f.Stats == nil {
			return nil, nil
		}
		all = f.Stats.Driver
	}
	var out map[string]uint64
	for k, v := range all {
		if prioStatRE.MatchString(k) {
			if out == nil {
				out = map[string]uint64{}
			}
			out[k] = v
		}
	}
	return out, nil
}

// byPriority groups per-priority counters by priority ("3": {"rx_pause": n}).
func byPriority(m map[string]uint64) map[string]map[string]uint64 {
	var out map[string]map[string]uint64
	for k, v := range m {
		s := prioStatRE.FindStringSubmatch(k)
		if s == nil {
			continue
		}
		if out == nil {
			out = map[string]map[string]uint64{}
		}
		if out[s[2]] == nil {
			out[s[2]] = map[string]uint64{}
		}
		out[s[2]][s[1]+"_"+s[3]] = v
	}
	return out
}

// rdmaCeilings fills what the client's port can carry: its rate and its
// PCIe link's ceiling.
func (s *rdmaSpan) ceilings(r *result.RDMA) {
	if s.err != nil {
		return
	}
	if s.port.RateGbps > 0 {
		r.PortGbps = ptr(s.port.RateGbps)
	}
	if p := s.pcie; p != nil && p.EffGbps != nil && *p.EffGbps > 0 {
		r.PCIeGbps = ptr(*p.EffGbps)
		if p.CurGTs != nil && p.CurWidth != nil {
			r.PCIeLink = fmt.Sprintf("%g GT/s x%d", *p.CurGTs, *p.CurWidth)
		}
	}
}
