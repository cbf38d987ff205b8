package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/inventory"
)

// vendorPassShare is the share of the port's speed NVIDIA's RDMA
// certification scripts pass an ib_*_bw run at.
const vendorPassShare = 0.90

// rdmaHost is a host's NIC with RDMA ports.
type rdmaHost struct {
	host string
	rep  *doctor.Report
	nic  *doctor.NICReport
}

// rdmaNICs lists the hosts' NICs that have RDMA ports.
func (b *builder) rdmaNICs() []rdmaHost {
	var out []rdmaHost
	for i := range b.ds.Hosts {
		rep := &b.ds.Hosts[i]
		for j := range rep.NICs {
			if len(rep.NICs[j].RDMA) > 0 {
				out = append(out, rdmaHost{host: rep.Host.Hostname, rep: rep, nic: &rep.NICs[j]})
			}
		}
	}
	return out
}

// rdmaSection is the RDMA baseline: the RDMA hardware, the PCIe link RDMA
// crosses with its arithmetic, perftest's bandwidth against the line rate,
// PCIe and the vendor's pass bar, its latency percentiles, what limits it,
// and whether RoCE is set up losslessly (doctor's RoCE facts and findings).
func (b *builder) rdmaSection() (*section, error) {
	const id, title = "rdma", "RDMA"
	nics := b.rdmaNICs()
	if len(nics) == 0 && len(b.ds.Perftest) == 0 {
		return omitted(id, title, "RDMA: no RDMA port on the hosts and no perftest result in this data set."), nil
	}
	s := &section{ID: id, Title: title}
	if len(nics) > 0 {
		s.addTable(rdmaHardware(nics))
		b.rdmaPCIe(s, nics)
	}
	b.rdmaSummary(s)
	b.perftestTables(s)
	if len(nics) > 0 {
		s.addHeading("RoCE configuration checks")
		s.addText("What lossless RoCE v2 needs, as doctor read it: a RoCE v2 GID, RoCE's active MTU at 4096, PFC and ECN on the priority RoCE uses, a trust mode that sends RoCE there, MRRS 4096, the IOMMU in passthrough, and each GPU near an RDMA NIC without ACS redirect between them. \"not read\" is what the capture does not hold (DCB and ECN need a live host or a linerate snapshot).")
		s.addTable(b.roceChecks(nics))
	}
	return s, nil
}

// rdmaHardware is the RDMA ports' table: the baseline report's hardware
// table, with what RoCE depends on.
func rdmaHardware(nics []rdmaHost) *table {
	t := &table{ID: "rdma-hardware", Caption: "RDMA hardware",
		Head: []string{"Node", "Device", "Model", "Firmware", "Port state", "Link rate (Gbit/s)", "Link layer", "Netdev", "Active MTU", "RoCE v2 GIDs"},
		Num:  []bool{false, false, false, false, false, true, false, false, true, true}}
	for _, rn := range nics {
		n := rn.nic
		for _, p := range n.RDMA {
			model := n.Model
			if p.HCAType != "" {
				model = strings.TrimSpace(model + " " + p.HCAType)
			}
			mtu, v2 := "—", "—"
			if p.ActiveMTU != nil {
				mtu = strconv.Itoa(*p.ActiveMTU)
			}
			if p.LinkLayer == "Ethernet" && len(p.GIDs) > 0 {
				n := 0
				for _, g := range p.GIDs {
					if g.Type == "RoCE v2" {
						n++
					}
				}
				v2 = strconv.Itoa(n)
			}
			state := p.State
			if p.PhysState != "" {
				state += "/" + p.PhysState
			}
			class := ""
			if p.State != "ACTIVE" {
				class = "warn"
			}
			t.Rows = append(t.Rows, []string{rn.host, fmt.Sprintf("%s/%d", p.Device, p.Port), orDash(model), orDash(p.Firmware), state,
				gbps(p.RateGbps), orDash(p.LinkLayer), orDash(p.Netdev), mtu, v2})
			t.Classes = append(t.Classes, class)
		}
	}
	return t
}

// rdmaPCIe words the PCIe link under each RDMA NIC: RDMA's reads and
// writes cross it, so it bounds what perftest can reach.
func (b *builder) rdmaPCIe(s *section, nics []rdmaHost) {
	var lines []string
	for _, rn := range nics {
		pc := rn.nic.PCIe
		if pc == nil || !pc.Reported {
			continue
		}
		line := fmt.Sprintf("%s %s (%s): %s", rn.host, rn.nic.Interface, rn.nic.PCI, strings.Join(pcieArithmetic(pc), "; "))
		if pc.MRRS != nil {
			line += fmt.Sprintf("; MRRS %d bytes", *pc.MRRS)
		}
		if pc.Downgraded {
			line += "; the link is downgraded"
			if u := pc.Upstream; u != nil && u.MaxWidth != nil && pc.MaxWidth != nil && *u.MaxWidth < *pc.MaxWidth {
				line += fmt.Sprintf(" by the slot (%s is x%d electrical)", u.PCI, *u.MaxWidth)
			}
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return
	}
	s.addHeading("PCIe analysis")
	s.addText("RDMA moves every byte across the NIC's PCIe link, so perftest's bandwidth cannot pass what the link carries after its overhead.")
	items := make([]item, len(lines))
	for i, l := range lines {
		items[i] = item{Text: l}
	}
	s.Blocks = append(s.Blocks, block{Items: items})
}

// rdmaSummary is the baseline report's summary: the best bandwidth against
// the line rate, the PCIe link and the vendor's 90% bar, the latency, and
// the limiting factor.
func (b *builder) rdmaSummary(s *section) {
	var best *PerftestResult
	var lat []*PerftestResult
	for i := range b.ds.Perftest {
		r := &b.ds.Perftest[i]
		switch {
		case r.Latency != nil:
			lat = append(lat, r)
		case best == nil || r.AverageGbps > best.AverageGbps:
			best = r
		}
	}
	if best == nil && len(lat) == 0 {
		return
	}
	line, raw, ceiling := 0.0, b.pcieRaw(), b.ceilingGbps(false)
	if b.path != nil {
		line = b.path.line.gbps
	}
	t := &table{ID: "rdma-summary", Caption: "RDMA summary", Head: []string{"Metric", "Value", "Against"}, Num: []bool{false, true, false}}
	if best != nil {
		t.Rows = append(t.Rows,
			[]string{"Best bandwidth (" + best.Test + ", average)", gbps(best.AverageGbps) + " Gbit/s", rdmaLimit(best.AverageGbps, line, ceiling)},
			[]string{"Share of the line rate", pct(best.AverageGbps, line), gbps(line) + " Gbit/s"},
			[]string{"Share of PCIe (raw)", pct(best.AverageGbps, raw), gbps(raw) + " Gbit/s after line coding"},
			[]string{"Share of PCIe (effective)", pct(best.AverageGbps, ceiling), gbps(ceiling) + " Gbit/s after TLP and DLLP overhead"},
		)
		t.Classes = append(t.Classes, "", "", "", "")
		if known(line) {
			verdict, class := "pass", "best"
			if best.AverageGbps < vendorPassShare*line {
				verdict, class = "below", "warn"
			}
			t.Rows = append(t.Rows, []string{"Vendor pass bar (90% of port speed)", gbps(vendorPassShare*line) + " Gbit/s", verdict})
			t.Classes = append(t.Classes, class)
		}
	}
	for _, r := range lat {
		l := r.Latency
		t.Rows = append(t.Rows, []string{fmt.Sprintf("Latency, %s (%d bytes)", r.Test, r.SizeBytes),
			num(l.TypicalUs, 2) + " µs typical", fmt.Sprintf("p99 %s µs, p99.9 %s µs, max %s µs", num(l.P99Us, 2), num(l.P999Us, 2), num(l.MaxUs, 2))})
		t.Classes = append(t.Classes, "")
	}
	s.addHeading("Summary")
	s.addTable(t)
	if best != nil {
		s.addText("Limiting factor: %s.", limitingFactor(best.AverageGbps, line, ceiling, b.path))
	}
}

// rdmaLimit names what bounds a bandwidth: the lower of the line rate and
// the PCIe link after its overhead.
func rdmaLimit(got, line, ceiling float64) string {
	switch {
	case known(ceiling) && known(line) && ceiling < line:
		return "PCIe-bound: " + pct(got, ceiling) + " of the link's " + gbps(ceiling) + " Gbit/s"
	case known(line):
		return "line-bound: " + pct(got, line) + " of " + gbps(line) + " Gbit/s"
	}
	return "no ceiling known"
}

// limitingFactor is the baseline report's "limiting factor" in words.
func limitingFactor(got, line, ceiling float64, p *path) string {
	if !known(line) {
		return "unknown: the data hold no line rate for the tested path"
	}
	if known(ceiling) && ceiling < line {
		where := "the NIC's PCIe link carries at most " + gbps(ceiling) + " Gbit/s"
		if p != nil && p.pcie.where != "" {
			where = "the link of " + p.pcie.where + " (" + p.pcie.detail + ") carries at most " + gbps(ceiling) + " Gbit/s"
		}
		return fmt.Sprintf("PCIe, not the network: %s, %s of the %s Gbit/s line rate; RDMA reached %s of it",
			where, pct(ceiling, line), gbps(line), pct(got, ceiling))
	}
	if got >= vendorPassShare*line {
		return fmt.Sprintf("the line rate: %s of %s Gbit/s", pct(got, line), gbps(line))
	}
	return fmt.Sprintf("none of the link's ceilings: RDMA reached %s of a %s Gbit/s line rate that PCIe does not bind; look at the RoCE checks below, the switches and the counters of the run", pct(got, line), gbps(line))
}

// roceChecks is one row per check and RDMA NIC: ok, the finding it
// raised, or not read.
func (b *builder) roceChecks(nics []rdmaHost) *table {
	t := &table{ID: "rdma-roce-checks", Caption: "RoCE configuration checks",
		Head: []string{"Host", "Interface", "Check", "State", "Finding"}}
	add := func(rn rdmaHost, check, state string, ids ...string) {
		f, class := "—", ""
		for _, id := range ids {
			if fd := findingOn(rn.rep, id, rn.nic.Interface); fd != nil {
				f, class = id, map[doctor.Severity]string{doctor.Critical: "crit", doctor.Warning: "warn"}[fd.Severity]
				break
			}
		}
		t.Rows = append(t.Rows, []string{rn.host, rn.nic.Interface, check, state, f})
		t.Classes = append(t.Classes, class)
	}
	for _, rn := range nics {
		n := rn.nic
		p, roce := activeEthernet(n)
		if !roce {
			add(rn, "RoCE port", "no ACTIVE Ethernet RDMA port")
			continue
		}
		gid := "not read"
		if len(p.GIDs) > 0 {
			gid = yesNo(p.RoCEv2(), "present", "v1 only")
		}
		add(rn, "RoCE v2 GID", gid, "roce.no_v2_gid")
		mtu := "not read"
		if p.ActiveMTU != nil {
			mtu = strconv.Itoa(*p.ActiveMTU)
		}
		add(rn, "Active MTU 4096", mtu, "roce.mtu_small")
		r, ok := doctor.RoCEOf(&n.NIC, nil)
		prio := "not read"
		if ok {
			prio = strconv.Itoa(r.Priority)
		}
		pfc, trust := "not read", "not read"
		if c := n.DCB; c != nil && ok {
			if c.PFC != nil {
				pfc = yesNo(c.PFC.Has(r.Priority), "on priority "+prio, "off on priority "+prio)
			}
			trust = fmt.Sprintf("%s: RoCE lands on %d", r.Trust, r.Lands)
		}
		add(rn, "PFC on RoCE's priority", pfc, "roce.pfc_off")
		ecn := "not read"
		if on, known := n.ECN.On(r.Priority); known && ok {
			ecn = yesNo(on, "on (np and rp)", "off")
		}
		add(rn, "ECN on RoCE's priority", ecn, "roce.ecn_off")
		add(rn, "Trust sends RoCE to the PFC priority", trust, "roce.trust_mismatch")
		mrrs := "not read"
		if pc := n.PCIe; pc != nil && pc.MRRS != nil {
			mrrs = strconv.Itoa(*pc.MRRS)
		}
		add(rn, "MRRS 4096", mrrs, "pcie.mrrs_small")
		iommu := "no IOMMU group"
		if m := n.IOMMU; m != nil {
			iommu = orDash(m.Type)
		}
		add(rn, "IOMMU passthrough", iommu, "iommu.translated")
		add(rn, "RDMA error counters", rdmaErrorState(p), "rdma.errors")
	}
	for i := range b.ds.Hosts {
		rep := &b.ds.Hosts[i]
		for _, g := range rep.GPUs {
			near := slices.IndexFunc(g.NICs, func(n inventory.GPUNIC) bool { return n.RDMA })
			if near < 0 {
				continue
			}
			gn := g.NICs[near]
			rn := rdmaHost{host: rep.Host.Hostname, rep: rep, nic: &doctor.NICReport{NIC: inventory.NIC{Interface: gn.Interface}}}
			state := gn.Distance
			for _, br := range gn.Bridges {
				if br.PeerToPeer && br.ACS != nil && br.ACS.Redirect {
					state += ", ACS redirect at " + br.PCI
				}
			}
			row := len(t.Rows)
			add(rn, "GPU "+g.PCI+" near an RDMA NIC", state)
			for _, id := range []string{"pcie.acs_redirect", "gpu.nic_far"} {
				if fd := findingOn(rep, id, g.PCI); fd != nil {
					t.Rows[row][4], t.Classes[row] = id, map[doctor.Severity]string{doctor.Critical: "crit", doctor.Warning: "warn"}[fd.Severity]
				}
			}
		}
	}
	return t
}

// activeEthernet is a NIC's first ACTIVE Ethernet RDMA port.
func activeEthernet(n *doctor.NICReport) (inventory.RDMAPort, bool) {
	for _, p := range n.RDMA {
		if p.State == "ACTIVE" && p.LinkLayer == "Ethernet" {
			return p, true
		}
	}
	return inventory.RDMAPort{}, false
}

// rdmaErrorState sums the retransmission and error counters of a port.
func rdmaErrorState(p inventory.RDMAPort) string {
	if p.HWCounters == nil {
		return "not read"
	}
	var parts []string
	for _, k := range []string{"out_of_sequence", "packet_seq_err", "implied_nak_seq_err", "local_ack_timeout_err", "rnr_nak_retry_err", "req_cqe_error"} {
		if v := p.HWCounters[k]; v > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, v))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func yesNo(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}

// findingOn is the report's finding id about subject, or nil.
func findingOn(rep *doctor.Report, id, subject string) *doctor.Finding {
	for i, f := range rep.Findings {
		if f.ID == id && f.Subject == subject {
			return &rep.Findings[i]
		}
	}
	return nil
}
