package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/limits"
	"github.com/linerate/linerate/internal/result"
)

// end is one end of the tested path: a host's doctor report and the NIC the
// traffic used.
type end struct {
	role string // "client", "server" or "host"
	rep  *doctor.Report
	nic  *doctor.NICReport // nil when the NIC is not known
}

// name is "crow enp1s0f0np0", or the hostname alone.
func (e end) name() string {
	if e.nic == nil {
		return e.rep.Host.Hostname
	}
	return e.rep.Host.Hostname + " " + e.nic.Interface
}

// stage is one step of the ceiling waterfall.
type stage struct {
	name   string
	gbps   float64 // 0 when unknown
	detail string  // how the rate is reached
	where  string  // the end it is for ("crow enp1s0f0np0")
	mtu    int     // the MTU, for the goodput stage
}

// text is the detail with the end it belongs to.
func (s stage) text() string {
	if s.where == "" {
		return s.detail
	}
	return s.detail + " (" + s.where + ")"
}

// path is the tested path: its ends and the ceilings they add up to, the
// lowest of each stage over both ends (the slower end binds).
type path struct {
	ends       []end
	line       stage
	pcie       stage
	mtu        stage // TCP goodput at the MTU; gbps 0 when no TCP runs
	ceiling    float64
	bottleneck string // "PCIe", "line rate" or "" when unknown
	tcp        bool
}

// findPath picks the ends from the first run (or the first perftest
// result, or else every doctor report) and computes their ceilings.
func (b *builder) findPath() *path {
	p := &path{tcp: len(b.ds.Runs) > 0}
	switch {
	case len(b.ds.Runs) > 0:
		return b.pathOf(&b.ds.Runs[0])
	case len(b.ds.Perftest) > 0:
		for i := range b.ds.Hosts {
			rep := &b.ds.Hosts[i]
			p.addEnd(&end{role: "host", rep: rep, nic: rdmaNIC(rep, b.ds.Perftest)})
		}
	default:
		for i := range b.ds.Hosts {
			rep := &b.ds.Hosts[i]
			p.addEnd(&end{role: "host", rep: rep, nic: primaryNIC(rep)})
		}
	}
	if len(p.ends) == 0 {
		return nil
	}
	p.compute()
	return p
}

// pathOf is the path one run took and its ceilings, computed once per
// pair of ends: a report of two labs has a path, and a ceiling, for each.
func (b *builder) pathOf(r *Run) *path {
	st := r.Result.Start
	key := strings.Join([]string{st.Client.Hostname, st.Client.Iface, st.Server.Hostname, st.Server.Iface}, "\x00")
	if p, ok := b.paths[key]; ok {
		return p
	}
	p := &path{tcp: true}
	p.addEnd(b.endFor("client", st.Client))
	p.addEnd(b.endFor("server", st.Server))
	if len(p.ends) == 0 {
		p = nil
	} else {
		p.compute()
	}
	if b.paths == nil {
		b.paths = map[string]*path{}
	}
	b.paths[key] = p
	return p
}

// runPath is the path of the run with this ID; nil when unknown.
func (b *builder) runPath(id int64) *path {
	if r := b.runs[id]; r != nil {
		return b.pathOf(r)
	}
	return nil
}

// campaignPath is the path of a campaign's first run.
func (b *builder) campaignPath(c *Campaign) *path {
	for _, p := range c.Points {
		for _, id := range p.RunIDs {
			return b.runPath(id)
		}
	}
	return nil
}

// allPaths lists the distinct known paths of the runs, in run order.
func (b *builder) allPaths() []*path {
	var out []*path
	for i := range b.ds.Runs {
		if p := b.pathOf(&b.ds.Runs[i]); p != nil && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func (p *path) addEnd(e *end) {
	if e != nil {
		p.ends = append(p.ends, *e)
	}
}

// hostsText names the hosts of the path: "crow → vulture".
func (p *path) hostsText() string {
	var names []string
	for _, e := range p.ends {
		names = append(names, e.rep.Host.Hostname)
	}
	return strings.Join(names, " → ")
}

// endFor finds the doctor report and NIC of one end of a run: the report
// of that hostname holding the interface, else of that hostname.
func (b *builder) endFor(role string, h result.HostInfo) *end {
	var byName *doctor.Report
	for i := range b.ds.Hosts {
		rep := &b.ds.Hosts[i]
		if rep.Host.Hostname != h.Hostname {
			continue
		}
		if nic := nicByIface(rep, h.Iface, h.PCI); nic != nil {
			return &end{role: role, rep: rep, nic: nic}
		}
		if byName == nil {
			byName = rep
		}
	}
	if byName == nil {
		return nil
	}
	return &end{role: role, rep: byName, nic: primaryNIC(byName)}
}

func nicByIface(rep *doctor.Report, iface, pci string) *doctor.NICReport {
	for i := range rep.NICs {
		n := &rep.NICs[i]
		if (iface != "" && n.Interface == iface) || (iface == "" && pci != "" && n.PCI == pci) {
			return n
		}
	}
	return nil
}

// primaryNIC is the first NIC that is up with a known line rate, else the
// first NIC.
func primaryNIC(rep *doctor.Report) *doctor.NICReport {
	for i := range rep.NICs {
		n := &rep.NICs[i]
		if n.Operstate == "up" && n.Limits.LineRate != nil {
			return n
		}
	}
	if len(rep.NICs) > 0 {
		return &rep.NICs[0]
	}
	return nil
}

// rdmaNIC is the NIC holding an RDMA device a perftest result used.
func rdmaNIC(rep *doctor.Report, res []PerftestResult) *doctor.NICReport {
	for i := range rep.NICs {
		for _, port := range rep.NICs[i].RDMA {
			for _, r := range res {
				if r.Device == port.Device {
					return &rep.NICs[i]
				}
			}
		}
	}
	return primaryNIC(rep)
}

// compute sets the stages, the ceiling and what binds.
func (p *path) compute() {
	p.line = stage{name: "Line rate", detail: "not reported"}
	p.pcie = stage{name: "PCIe", detail: "not reported"}
	p.mtu = stage{name: "TCP goodput at the MTU", detail: "no TCP runs"}
	for _, e := range p.ends {
		if e.nic == nil {
			continue
		}
		l := e.nic.Limits
		if l.LineRate != nil {
			p.line.lower(stage{gbps: float64(*l.LineRate), detail: chainDetail(l, "line rate"), where: e.name()})
		}
		if l.PCIe != nil {
			p.pcie.lower(stage{gbps: float64(*l.PCIe), detail: chainDetail(l, "PCIe"), where: e.name()})
		}
		if p.tcp && l.LineRate != nil && e.nic.MTU != nil {
			if l.LineGoodput != nil {
				// doctor counted the line's goodput as its stage counts: the
				// wire's framing, or a shaper's (a tbf counts no preamble,
				// gap or FCS).
				p.mtu.lower(stage{gbps: float64(*l.LineGoodput), where: e.name(), mtu: *e.nic.MTU, detail: l.LineGoodputDetail})
				p.mtu.name = fmt.Sprintf("TCP goodput at MTU %d", p.mtu.mtu)
			} else if f, err := limits.TCPFrame(*e.nic.MTU, limits.Stack{}); err == nil {
				// A doctor report stored before it gave the line's goodput.
				p.mtu.lower(stage{gbps: float64(f.Goodput(*l.LineRate)), where: e.name(), mtu: f.MTU,
					detail: fmt.Sprintf("MTU %d, %s: %d of every %d bytes on the wire are payload", f.MTU, f.Stack, f.Payload, f.Wire)})
				p.mtu.name = fmt.Sprintf("TCP goodput at MTU %d", p.mtu.mtu)
			}
		}
	}
	if p.line.gbps == 0 {
		return // no line rate, no ceiling: PCIe alone would claim one the wire may be far below
	}
	p.ceiling, p.bottleneck = p.line.gbps, "line rate"
	if p.mtu.gbps > 0 && p.mtu.gbps < p.ceiling {
		p.ceiling = p.mtu.gbps
	}
	if p.pcie.gbps > 0 && p.pcie.gbps < p.ceiling {
		p.ceiling, p.bottleneck = p.pcie.gbps, "PCIe"
	}
}

// lower keeps the lower of two rates for a stage, with its detail; the
// stage keeps its name.
func (s *stage) lower(o stage) {
	if !known(o.gbps) {
		return
	}
	if s.gbps == 0 || o.gbps < s.gbps {
		o.name = s.name
		*s = o
	}
}

// chainDetail is the detail doctor gave a stage of the bottleneck chain.
func chainDetail(l limits.Limits, name string) string {
	for _, s := range l.Chain {
		if s.Stage == name {
			return s.Detail
		}
	}
	return name
}

// runGbps is a run's throughput: what the receivers got, as iperf3 users
// read it, else what was sent.
func runGbps(r *result.Result) float64 {
	if r.End.SumReceived.BitsPerSecond > 0 {
		return r.End.SumReceived.BitsPerSecond / 1e9
	}
	return r.End.SumSent.BitsPerSecond / 1e9
}
