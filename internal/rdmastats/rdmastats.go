// Package rdmastats reads an RDMA port's counters around a run: the
// port's counters/ (the IB port counters) and hw_counters/ (the driver's:
// out_of_sequence, np_cnp_sent, …) and the driver's per-priority pause
// and discard counters of its netdev, before the run and after it, and
// gives their growth. bench reads the ends it can reach with it, the
// agent the end of the perftest server it runs.
package rdmastats

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/result"
)

// Span is one end's RDMA port, read before a run.
type Span struct {
	fs      *hostfs.FS
	port    inventory.RDMAPort
	pcie    *inventory.PCIe
	before  hostfs.RDMACounterSet
	prio    map[string]uint64 // the netdev's per-priority driver counters
	prioErr error
	err     error
}

// Begin finds the RDMA port a perftest run uses on the host below fs and
// reads its counters. The port is the device asked for; without one, the
// ACTIVE port whose netdev is netdev (the interface the test reaches),
// else the first ACTIVE port, as perftest picks the first device. Only
// ports the inventory lists are read, so a device name from a peer never
// becomes a path.
func Begin(fs *hostfs.FS, device, netdev string) *Span {
	s := &Span{fs: fs}
	inv, err := inventory.Collect(fs, inventory.Options{})
	if err != nil {
		s.err = err
		return s
	}
	found, best := false, -1
	for _, n := range inv.NICs {
		for _, p := range n.RDMA {
			if device != "" && p.Device != device {
				continue
			}
			if r := rank(p, netdev); r > best {
				s.port, s.pcie, found, best = p, n.PCIe, true, r
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

// rank orders the ports a run may use: an ACTIVE port on netdev first,
// then any ACTIVE port, then the rest; ties go to the first listed.
func rank(p inventory.RDMAPort, netdev string) int {
	switch {
	case p.State != "ACTIVE":
		return 0
	case netdev != "" && p.Netdev == netdev:
		return 2
	}
	return 1
}

// End reads the port again and returns how its counters grew; NotRead
// says what could not be read, and why.
func (s *Span) End() *result.RDMAEnd {
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
	out.HWCounters = Growth(s.before.HWCounters, after.HWCounters)
	out.Counters = Growth(s.before.Counters, after.Counters)
	prio, err := priorityStats(s.fs, s.port.Netdev)
	if err = errors.Join(s.prioErr, err); err != nil {
		out.NotRead = "per-priority counters: " + err.Error()
	}
	out.Priority = byPriority(Growth(s.prio, prio))
	return out
}

// Ceilings fills what the span's port can carry: its rate and its PCIe
// link's ceiling.
func (s *Span) Ceilings(r *result.RDMA) {
	if s.err != nil {
		return
	}
	if s.port.RateGbps > 0 {
		v := s.port.RateGbps
		r.PortGbps = &v
	}
	if p := s.pcie; p != nil && p.EffGbps != nil && *p.EffGbps > 0 {
		v := *p.EffGbps
		r.PCIeGbps = &v
		if p.CurGTs != nil && p.CurWidth != nil {
			r.PCIeLink = fmt.Sprintf("%g GT/s x%d", *p.CurGTs, *p.CurWidth)
		}
	}
}

// Growth is each counter's growth from before to after, for the counters
// read both times. A counter that went down (the driver reloaded, the
// port reset) grew by its value after.
func Growth(before, after map[string]uint64) map[string]uint64 {
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

// PriorityNames is how many counters one priority can have in
// result.RDMAEnd.Priority: rx and tx, each pause, discards and
// pause_duration.
const PriorityNames = 6

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
