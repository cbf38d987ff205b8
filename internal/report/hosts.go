package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/limits"
)

// hostsSection shows each host's NICs, their PCIe links with the
// arithmetic, and the CPU topology around the NIC.
func (b *builder) hostsSection() (*section, error) {
	const id, title = "hosts", "Hosts"
	if len(b.ds.Hosts) == 0 {
		return omitted(id, title, "Hosts: no doctor report in this data set, so no NIC, PCIe or topology facts."), nil
	}
	s := &section{ID: id, Title: title}
	s.addTable(b.nicTable())
	pt, arith := b.pcieTable()
	s.addTable(pt)
	if len(arith) > 0 {
		s.addHeading("PCIe arithmetic")
		s.Blocks = append(s.Blocks, block{Code: arith})
	}
	s.addTable(b.topologyTable())
	b.opticsTables(s)
	return s, nil
}

func (b *builder) nicTable() *table {
	t := &table{ID: "nics", Caption: "Network interfaces",
		Head: []string{"Host", "Interface", "Model", "Driver", "Firmware", "Port state", "Link rate (Gbit/s)", "MTU", "NUMA node"},
		Num:  []bool{false, false, false, false, false, false, true, true, true}}
	for i := range b.ds.Hosts {
		rep := &b.ds.Hosts[i]
		for j := range rep.NICs {
			n := &rep.NICs[j]
			line := "—"
			if n.Limits.LineRate != nil {
				line = gbps(float64(*n.Limits.LineRate))
			}
			t.Rows = append(t.Rows, []string{rep.Host.Hostname, n.Interface, model(&n.NIC), orDash(n.Driver),
				firmware(&n.NIC), portState(&n.NIC), line, intPtr(n.MTU), numaText(n.NUMANode)})
			t.Classes = append(t.Classes, map[bool]string{true: "", false: "warn"}[n.Operstate == "up"])
		}
	}
	return t
}

func model(n *inventory.NIC) string {
	m := n.Model
	if n.VendorID != "" {
		id := strings.TrimPrefix(n.VendorID, "0x") + ":" + strings.TrimPrefix(n.DeviceID, "0x")
		if m == "" {
			return id
		}
		return m + " (" + id + ")"
	}
	return orDash(m)
}

// firmware is the RDMA device's firmware version, the only one doctor's
// captured data hold (ethtool -i would say the same for the netdev).
func firmware(n *inventory.NIC) string {
	for _, p := range n.RDMA {
		if p.Firmware != "" {
			return p.Firmware
		}
	}
	return "—"
}

// portState is the netdev's operstate and each RDMA port's state.
func portState(n *inventory.NIC) string {
	parts := []string{orDash(n.Operstate)}
	for _, p := range n.RDMA {
		parts = append(parts, fmt.Sprintf("%s/%d %s (%s)", p.Device, p.Port, p.State, p.PhysState))
	}
	return strings.Join(parts, "; ")
}

func intPtr(p *int) string {
	if p == nil {
		return "—"
	}
	return strconv.Itoa(*p)
}

func numaText(p *int) string {
	if p == nil {
		return "—"
	}
	if *p < 0 {
		return "none (-1)"
	}
	return strconv.Itoa(*p)
}

// pcieTable lists each PCI NIC's link, capability against actual, and the
// arithmetic behind the bandwidth, once per distinct link.
func (b *builder) pcieTable() (*table, []string) {
	t := &table{ID: "pcie", Caption: "PCIe links: capability and actual",
		Head: []string{"Host", "Interface", "PCI", "Slot capability", "Card capability", "Actual", "Raw (Gbit/s)", "Effective (Gbit/s)", "Status"},
		Num:  []bool{false, false, false, false, false, false, true, true, false}}
	var arith []string
	cards := map[string][]string{} // arithmetic → the cards it is for
	for i := range b.ds.Hosts {
		rep := &b.ds.Hosts[i]
		for j := range rep.NICs {
			n := &rep.NICs[j]
			pc := n.PCIe
			if pc == nil || !pc.Reported {
				continue
			}
			status, class := "full link", ""
			if pc.Downgraded {
				status, class = "downgraded", "crit"
			}
			t.Rows = append(t.Rows, []string{rep.Host.Hostname, n.Interface, n.PCI, slotText(pc.Upstream),
				linkText(pc.MaxGTs, pc.MaxWidth), linkText(pc.CurGTs, pc.CurWidth),
				gbpsPtr(pc.RawGbps), gbpsPtr(pc.EffGbps), status})
			t.Classes = append(t.Classes, class)
			// The functions of a card share its link: one line per card,
			// and one line for all cards with the same link.
			card := rep.Host.Hostname + " " + cardAddr(n.PCI)
			for _, a := range pcieArithmetic(pc) {
				if len(cards[a]) == 0 {
					arith = append(arith, a)
				}
				if !slices.Contains(cards[a], card) {
					cards[a] = append(cards[a], card)
				}
			}
		}
	}
	lines := make([]string, len(arith))
	for i, a := range arith {
		lines[i] = strings.Join(cards[a], ", ") + ": " + a
	}
	return t, lines
}

// cardAddr is a PCI function's card: its address without the function
// ("0000:01:00" of "0000:01:00.1").
func cardAddr(pci string) string {
	if i := strings.LastIndexByte(pci, '.'); i > 0 {
		return pci[:i]
	}
	return pci
}

func slotText(u *inventory.Upstream) string {
	if u == nil {
		return "—"
	}
	return linkText(u.MaxGTs, u.MaxWidth) + " (" + u.PCI + ")"
}

// linkText is "8.0 GT/s x16".
func linkText(gts *float64, width *int) string {
	if gts == nil || width == nil {
		return "—"
	}
	return fmt.Sprintf("%s GT/s x%d", gtsText(*gts), *width)
}

func gtsText(g float64) string {
	if g == float64(int(g)) {
		return strconv.FormatFloat(g, 'f', 1, 64)
	}
	return strconv.FormatFloat(g, 'f', -1, 64)
}

func gbpsPtr(p *float64) string {
	if p == nil {
		return "—"
	}
	return gbps(*p)
}

// pcieArithmetic writes out how a link's bandwidth is reached, for the
// trained link and, when it is downgraded, for the card's full link:
// "8.0 GT/s × 8 lanes × 128/130 = 63.02 Gbit/s raw; × 256/(256+26) … ".
func pcieArithmetic(pc *inventory.PCIe) []string {
	mps := 0
	if pc.MPS != nil {
		mps = *pc.MPS
	}
	var out []string
	add := func(what string, gts *float64, width *int) {
		if gts == nil || width == nil {
			return
		}
		bw, err := limits.PCIe(limits.PCIeLink{GTs: *gts, Width: *width, MPS: mps})
		if err != nil {
			return
		}
		out = append(out, fmt.Sprintf("%s PCIe %s x%d: %s", what, bw.Generation, bw.Link.Width, arithmetic(bw)))
	}
	add("trained", pc.CurGTs, pc.CurWidth)
	if pc.Downgraded {
		add("card capable of", pc.MaxGTs, pc.MaxWidth)
	}
	return out
}

// arithmetic spells out limits.PCIe's model for one link.
func arithmetic(bw limits.PCIeBandwidth) string {
	l := bw.Link
	coding := map[string]string{"8b/10b": "8/10", "128b/130b": "128/130"}[bw.Encoding]
	if coding == "" {
		coding = strings.TrimPrefix(bw.Encoding, "FLIT ")
	}
	overhead := fmt.Sprintf("× %d/(%d+26) for TLP and DLLP overhead at MPS %d", l.MPS, l.MPS, l.MPS)
	if strings.HasPrefix(bw.Encoding, "FLIT") {
		overhead = fmt.Sprintf("× 236/242 × %d/(%d+16) for flit and TLP overhead at MPS %d", l.MPS, l.MPS, l.MPS)
	}
	return fmt.Sprintf("%s GT/s × %d lanes × %s = %s Gbit/s raw; %s = %s Gbit/s effective",
		gtsText(l.GTs), l.Width, coding, gbps(float64(bw.Raw)), overhead, gbps(float64(bw.Effective)))
}

// topologyTable shows CPUs, L3 domains and NUMA nodes, and where each
// NIC sits and where its IRQs go.
func (b *builder) topologyTable() *table {
	t := &table{ID: "topology", Caption: "Topology: CPUs, L3 domains, NUMA nodes and where the NIC sits",
		Head: []string{"Host", "CPU", "CPUs", "L3 domains", "NUMA nodes", "NIC", "NIC NUMA node (local CPUs)", "NIC IRQs routed to"}}
	for i := range b.ds.Hosts {
		rep := &b.ds.Hosts[i]
		for j := range rep.NICs {
			n := &rep.NICs[j]
			if n.Operstate != "up" && len(rep.NICs) > 1 {
				continue // a port without link carries no traffic to place
			}
			t.Rows = append(t.Rows, []string{rep.Host.Hostname, orDash(rep.CPU.Model), strconv.Itoa(rep.CPU.Count),
				domainsText(rep.CPU.L3Domains), nodesText(rep.CPU.NUMANodes), n.Interface,
				nodeText(n.NUMANode) + " (CPUs " + cpus(n.LocalCPUs) + ")", irqPlacement(rep, n)})
		}
	}
	return t
}

// nodeText is a NIC's NUMA node for the topology table: "none" where the
// kernel reports -1 (no affinity, every CPU local).
func nodeText(p *int) string {
	if p != nil && *p < 0 {
		return "none"
	}
	return numaText(p)
}

func domainsText(d [][]int) string {
	var parts []string
	for _, c := range d {
		parts = append(parts, cpus(c))
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, " | ")
}

func nodesText(n map[string][]int) string {
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, "node "+k+": "+cpus(n[k]))
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, "; ")
}

// irqPlacement groups the CPUs a NIC's IRQs are routed to by L3 domain:
// "3 (L3 0-5); 7-11 (L3 6-11)".
func irqPlacement(rep *doctor.Report, n *doctor.NICReport) string {
	var routed []int
	for _, q := range n.IRQs {
		aff := q.Effective
		if aff == nil {
			aff = q.Affinity
		}
		for _, c := range aff {
			if !slices.Contains(routed, c) {
				routed = append(routed, c)
			}
		}
	}
	slices.Sort(routed)
	if len(routed) == 0 {
		return "—"
	}
	var parts []string
	for _, d := range rep.CPU.L3Domains {
		if in := cpulist.Intersect(routed, d); len(in) > 0 {
			parts = append(parts, cpus(in)+" (L3 "+cpus(d)+")")
		}
	}
	if len(parts) == 0 {
		return cpus(routed)
	}
	return fmt.Sprintf("%d IRQs: %s", len(n.IRQs), strings.Join(parts, "; "))
}
