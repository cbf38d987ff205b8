// Package doctor judges a host's inventory: one small rule per finding ID
// of docs/architecture.md's table, each saying what limits the link, the evidence,
// and the exact fix. It reads facts only (package inventory) and the
// physics (package limits); it changes nothing and probes nothing — the
// caller runs the path-MTU probe and passes its result in.
package doctor

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/limits"
	"github.com/linerate/linerate/internal/nicstats"
)

// Schema names the JSON document Diagnose produces.
const Schema = "linerate.doctor/v1"

// Severity ranks findings: critical > warning > info.
type Severity string

// The severities, from most to least severe.
const (
	Critical Severity = "critical"
	Warning  Severity = "warning"
	Info     Severity = "info"
)

// Rank orders severities; higher is more severe. Unknown ranks lowest.
func (s Severity) Rank() int {
	switch s {
	case Critical:
		return 3
	case Warning:
		return 2
	case Info:
		return 1
	}
	return 0
}

// ParseSeverity reads a --fail-on value.
func ParseSeverity(s string) (Severity, error) {
	switch v := Severity(strings.ToLower(s)); v {
	case Critical, Warning, Info:
		return v, nil
	}
	return "", fmt.Errorf("unknown severity %q (want critical, warning or info)", s)
}

// Finding is one thing that limits the link, with its proof and its fix:
// steps in order, each prose with the command that does it (Fix).
type Finding struct {
	ID       string         `json:"id"`
	Severity Severity       `json:"severity"`
	Subject  string         `json:"subject"`
	Summary  string         `json:"summary"`
	Evidence map[string]any `json:"evidence"`
	Fix      []Fix          `json:"fix"`
}

// PathMTU is the result of a don't-fragment probe toward --peer, run by
// the caller (package pathmtu) and judged here.
type PathMTU struct {
	Peer      string `json:"peer"`
	Interface string `json:"interface"`
	MTU       int    `json:"mtu"`     // the size probed: the egress interface's MTU
	OK        bool   `json:"ok"`      // a probe of MTU bytes came back
	Largest   int    `json:"largest"` // the largest size that passed (0: none)
	Probes    int    `json:"probes"`  // probes sent
	Detail    string `json:"detail"`  // why the full-size probe failed
	Error     string `json:"error,omitempty"`
}

// Options are doctor's command-line choices.
type Options struct {
	// Ifaces restricts diagnosis to these interfaces (physical or
	// virtual); empty means every PCI-backed NIC.
	Ifaces []string
	// AppCPUs are the CPUs the application runs on (--app-cpus).
	AppCPUs []int
	// RTT is the round-trip time buffers must cover (--rtt, default 1 ms).
	RTT time.Duration
	// PathMTU is the --peer probe's result, nil when not run.
	PathMTU *PathMTU
	// CounterDeltas are the NIC counters' growth during a bench, by
	// interface (nicstats.Delta of snapshots before and after). Without
	// them the counter rules judge totals since the driver loaded.
	CounterDeltas map[string]nicstats.Counters
	// RoCEPriority is the priority RoCE traffic is meant to use
	// (--roce-priority); nil lets doctor work it out from the trust mode
	// and the APP table (DSCP 26's priority).
	RoCEPriority *int
	// RDMADeltas are RDMA ports' hw_counters growth during a bench, by
	// "device/port" (hostfs.RDMACounters before and after). Without them
	// rdma.errors judges totals since the driver loaded.
	RDMADeltas map[string]map[string]uint64
}

// DefaultRTT is the RTT assumed without --rtt: a data-centre path.
const DefaultRTT = time.Millisecond

// Report is the doctor JSON document (schema linerate.doctor/v1).
type Report struct {
	Schema   string          `json:"schema"`
	Host     inventory.Host  `json:"host"`
	CPU      inventory.CPU   `json:"cpu"`
	NICs     []NICReport     `json:"nics"`
	Virtual  []inventory.NIC `json:"virtual_interfaces"`
	GPUs     []inventory.GPU `json:"gpus"`
	Sysctl   map[string]any  `json:"sysctl"`
	PathMTU  *PathMTU        `json:"path_mtu,omitempty"`
	Options  ReportOptions   `json:"options"`
	Findings []Finding       `json:"findings"`
	Notes    []string        `json:"notes"`
}

// ReportOptions echoes the options that shaped the judgement.
type ReportOptions struct {
	Ifaces  []string `json:"ifaces"`
	AppCPUs []int    `json:"app_cpus"`
	RTTMs   float64  `json:"rtt_ms"`
	// RoCEPriority is --roce-priority, absent when doctor worked it out.
	RoCEPriority *int `json:"roce_priority,omitempty"`
}

// NICReport is a NIC with its ceilings.
type NICReport struct {
	inventory.NIC
	Limits limits.Limits `json:"limits"`
}

// nicView is a selected NIC with what the rules derive from it.
type nicView struct {
	*inventory.NIC
	line       limits.Gbps // 0 when unknown
	lineDetail string
	lim        limits.Limits
	named      bool // the user named it with --iface
}

// diag is one Diagnose run.
type diag struct {
	inv  *inventory.Inventory
	opts Options
	nics []*nicView
}

// rule produces the findings of one ID.
type rule func(d *diag) []Finding

// rules lists every finding rule, in no particular order (findings are
// sorted afterwards).
func rules() []rule {
	return []rule{
		pcieDowngraded, pcieBelowLineRate, linkDown, mtuNotJumbo, mtuPathMismatch,
		socketBuffersSmall, queuesTooFew, governorNotPerformance,
		irqSpansL3, irqRemoteNUMA, irqOnAppCPU, temperatureHigh,
		rdmaPortNotActive, irqbalanceRunning,
		transceiverUnreadable, transceiverLaneDark, transceiverRXPowerLow, transceiverTXFault, transceiverTemperatureHigh,
		transceiverLaserOff, fecBERHigh,
		fecOff, fecMismatch, fecUncorrectable, linkSpeedBelowMax,
		nicRXNoBuffer, nicPHYErrors, nicPauseFrames, ringSmall,
		rocePFCOff, roceECNOff, roceTrustMismatch, roceNoV2GID, roceMTUSmall, rdmaErrors,
		pcieMRRSSmall, pcieACSRedirect, gpuNICFar, iommuTranslated,
		linkShaped,
	}
}

// Diagnose judges inv. It fails only on bad options: an --iface that does
// not exist, or --app-cpus outside the host's CPUs.
func Diagnose(inv *inventory.Inventory, opts Options) (*Report, error) {
	if opts.RTT <= 0 {
		opts.RTT = DefaultRTT
	}
	if err := checkAppCPUs(inv, opts.AppCPUs); err != nil {
		return nil, err
	}
	if p := opts.RoCEPriority; p != nil && (*p < 0 || *p > 7) {
		return nil, fmt.Errorf("--roce-priority %d: a priority is 0 to 7 (RoCE usually rides 3)", *p)
	}
	d := &diag{inv: inv, opts: opts}
	rep := &Report{
		Schema: Schema, Host: inv.Host, CPU: inv.CPU, Sysctl: inv.Sysctl,
		NICs: []NICReport{}, Virtual: []inventory.NIC{}, GPUs: nonNilGPUs(inv.GPUs), Notes: inv.Notes,
		PathMTU: opts.PathMTU, Findings: []Finding{},
		Options: ReportOptions{Ifaces: nonNil(opts.Ifaces), AppCPUs: nonNilInts(opts.AppCPUs), RTTMs: float64(opts.RTT) / float64(time.Millisecond), RoCEPriority: opts.RoCEPriority},
	}
	if err := d.selectNICs(rep); err != nil {
		return nil, err
	}
	for _, r := range rules() {
		rep.Findings = append(rep.Findings, r(d)...)
	}
	sortFindings(rep.Findings)
	return rep, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilGPUs(s []inventory.GPU) []inventory.GPU {
	if s == nil {
		return []inventory.GPU{}
	}
	return s
}

func nonNilInts(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}

func checkAppCPUs(inv *inventory.Inventory, cpus []int) error {
	if out := cpulist.Subtract(cpus, inv.CPU.Online); len(out) > 0 && len(inv.CPU.Online) > 0 {
		return fmt.Errorf("--app-cpus %s: %s %s not online on this host (online: %s)",
			cpulist.Format(cpus), cpulist.Phrase(out), cpulist.IsAre(out), cpulist.Format(inv.CPU.Online))
	}
	return nil
}

// maxOnlyLinks bounds the virtual interfaces judged as a host's links
// when nothing else is (selectNICs): a network namespace has one or two;
// a host with many veths has them for its containers.
const maxOnlyLinks = 4

// selectNICs picks the NICs to judge: those named by --iface (physical or
// virtual), else every PCI-backed NIC and the virtual interfaces a
// default route leaves through (a bond, a VLAN, a container's veth);
// where none of those is found, the host's few up, non-loopback
// interfaces (a lab host's lab0, a namespace's link). Selected virtual
// interfaces are reported with the NICs; the rest stay in
// virtual_interfaces.
func (d *diag) selectNICs(rep *Report) error {
	named := map[string]bool{}
	for _, n := range d.opts.Ifaces {
		named[n] = true
	}
	auto := map[string]bool{}
	if len(named) == 0 {
		for _, n := range d.inv.Virtual {
			if n.DefaultRoute {
				auto[n.Interface] = true
			}
		}
		if len(d.inv.NICs) == 0 && len(auto) == 0 {
			var up []string
			for _, n := range d.inv.Virtual {
				if n.Operstate == "up" && n.Kind != "loopback" {
					up = append(up, n.Interface)
				}
			}
			if len(up) <= maxOnlyLinks {
				for _, n := range up {
					auto[n] = true
				}
			}
		}
	}
	found := map[string]bool{}
	pick := func(n *inventory.NIC) {
		found[n.Interface] = true
		v := d.view(n, named[n.Interface])
		d.nics = append(d.nics, v)
		rep.NICs = append(rep.NICs, NICReport{NIC: *n, Limits: v.lim})
	}
	for i := range d.inv.NICs {
		n := &d.inv.NICs[i]
		if len(named) == 0 || named[n.Interface] {
			pick(n)
		}
	}
	for i := range d.inv.Virtual {
		n := &d.inv.Virtual[i]
		if named[n.Interface] || auto[n.Interface] {
			pick(n)
		} else {
			rep.Virtual = append(rep.Virtual, *n)
		}
	}
	for _, n := range d.opts.Ifaces {
		if !found[n] {
			return fmt.Errorf("--iface %s: no such interface here (have: %s)", n, strings.Join(d.allNames(), ", "))
		}
	}
	return nil
}

func (d *diag) allNames() []string {
	var s []string
	for _, n := range d.inv.NICs {
		s = append(s, n.Interface)
	}
	for _, n := range d.inv.Virtual {
		s = append(s, n.Interface)
	}
	slices.Sort(s)
	return s
}

// view derives a NIC's line rate and ceilings (limits.Chain). The line
// rate is the reported speed where it is the link's (a PCI NIC, or a bond,
// VLAN or macvlan, whose speed is their ports'); a veth's "10000" is a
// placeholder, not a link. A shaping qdisc (tbf, htb, cake; not fq's
// per-flow maxrate) below it stands as the line rate, counted as the
// shaper counts; on a virtual interface it is the only line rate there is.
func (d *diag) view(n *inventory.NIC, named bool) *nicView {
	v := &nicView{NIC: n, named: named}
	port := d.port(n)
	port.Shaper = linkShaper(n)
	v.lim = limits.Chain(port)
	if v.lim.LineRate != nil {
		v.line, v.lineDetail = *v.lim.LineRate, v.lim.Chain[0].Detail
	}
	return v
}

// speedKinds are the interface kinds whose reported speed is a line
// rate: PCI NICs, NICs on other buses, and the virtual links that report
// their ports' speed.
var speedKinds = []string{"pci", "other", "bond", "team", "vlan", "macvlan", "macvtap", "ipvlan", "ipvtap"}

// port is n as limits.Chain sees it, without its shaper.
func (d *diag) port(n *inventory.NIC) limits.Port {
	port := limits.Port{Stack: d.stack()}
	if slices.Contains(speedKinds, n.Kind) && n.SpeedMbps != nil {
		port.LineRate = limits.Gbps(float64(*n.SpeedMbps) / 1000)
		port.LineDetail = fmt.Sprintf("%s link", speedName(port.LineRate))
	}
	if n.MTU != nil {
		port.MTU = *n.MTU
	}
	if p := n.PCIe; p != nil && p.Reported {
		mps := 0
		if p.MPS != nil {
			mps = *p.MPS
		}
		if bw, err := limits.PCIe(limits.PCIeLink{GTs: *p.CurGTs, Width: *p.CurWidth, MPS: mps}); err == nil {
			port.PCIe = &bw
		}
	}
	return port
}

// linkShaper is the qdisc that caps n's egress as limits models it: its
// rate, what it counts of a packet (the packet and its MAC header, or
// cake's overhead) and how doctor names it; nil when nothing caps the link
// (none, or fq's maxrate, which caps each flow).
func linkShaper(n *inventory.NIC) *limits.Shaper {
	q := n.Qdisc
	if q == nil || q.RateGbps == nil || *q.RateGbps <= 0 {
		return nil
	}
	kind, overhead := q.Kind, limits.SkbOverhead
	rate := trimFloat(*q.RateGbps)
	detail := fmt.Sprintf("%s qdisc shaped to %s Gbit/s", kind, rate)
	if s := q.Shaper; s != nil {
		kind = s.Kind
		if s.OverheadBytes != nil {
			overhead = *s.OverheadBytes
		}
		detail = fmt.Sprintf("%s qdisc shaped to %s Gbit/s", kind, rate)
		if s.DeclaredLineRate {
			detail = fmt.Sprintf("lab link shaped to %s Gbit/s, standing in for a NIC's line rate", rate)
		}
	}
	return &limits.Shaper{Rate: limits.Gbps(*q.RateGbps), Overhead: overhead, Detail: detail}
}

// stack is the TCP stack of the host's flows: timestamps as
// net.ipv4.tcp_timestamps says (on unless it reads 0), and IPv6 when the
// --peer probed is an IPv6 address (IPv4 otherwise, as the chain's detail
// says).
func (d *diag) stack() limits.Stack {
	var s limits.Stack
	if v, ok := d.inv.SysctlInt("net.ipv4.tcp_timestamps"); ok && v == 0 {
		s.NoTimestamps = true
	}
	if p := d.opts.PathMTU; p != nil {
		if a, err := netip.ParseAddr(p.Peer); err == nil && a.Is6() && !a.Is4In6() {
			s.IPv6 = true
		}
	}
	return s
}

// speedName writes a line rate as engineers say it: "100GbE".
func speedName(g limits.Gbps) string { return trimFloat(float64(g)) + "GbE" }

func trimFloat(f float64) string {
	s := fmt.Sprintf("%.2f", f)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// fastDrivers are drivers of 10 GbE-and-faster NICs; a down port of one of
// these matters even when its speed is unknown.
var fastDrivers = []string{
	"mlx4_en", "mlx5_core", "i40e", "ice", "ixgbe", "idpf", "bnxt_en", "cxgb4",
	"qede", "sfc", "nfp", "ionic", "enic", "hns3", "octeon_ep", "be2net", "ena", "gve",
}

// fast reports whether a NIC is a fast link worth judging when down.
func (v *nicView) fast() bool {
	return v.named || v.line >= 10 || slices.Contains(fastDrivers, v.Driver)
}

// causeOrder lists finding IDs that are often the cause of others, root
// causes first: the physical layer, then the link, then the bus. Within a
// severity they come before every other ID, so a finding whose fix says
// "first restore …" follows the finding it points to.
func causeOrder() []string {
	return []string{
		"transceiver.unreadable", "transceiver.tx_fault", "transceiver.lane_dark", "transceiver.laser_off", "transceiver.rx_power_low",
		"transceiver.temperature_high", "fec.mismatch", "fec.off", "fec.ber_high", "fec.uncorrectable", "nic.phy_errors",
		"link.down", "link.speed_below_max", "pcie.link_downgraded", "pcie.bandwidth_below_line_rate",
	}
}

// causeRank orders an ID by causeOrder; IDs not in it come after, equal.
func causeRank(id string) int {
	if i := slices.Index(causeOrder(), id); i >= 0 {
		return i
	}
	return len(causeOrder())
}

// sortFindings orders findings by severity, root causes first within a
// severity (causeOrder), then by ID and subject.
func sortFindings(f []Finding) {
	slices.SortStableFunc(f, func(a, b Finding) int {
		if r := b.Severity.Rank() - a.Severity.Rank(); r != 0 {
			return r
		}
		if r := causeRank(a.ID) - causeRank(b.ID); r != 0 {
			return r
		}
		if c := strings.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		return strings.Compare(a.Subject, b.Subject)
	})
}

// Worst returns the most severe finding's severity, or "" with none.
func (r *Report) Worst() Severity {
	var w Severity
	for _, f := range r.Findings {
		if f.Severity.Rank() > w.Rank() {
			w = f.Severity
		}
	}
	return w
}

// Count returns how many findings have severity s.
func (r *Report) Count(s Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == s {
			n++
		}
	}
	return n
}
