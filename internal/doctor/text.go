package doctor

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/limits"
	"github.com/linerate/linerate/internal/termui"
)

// WriteText writes the human view: the host, a block per NIC in the manner
// of lspci and ethtool, the findings by severity with evidence and fixes,
// and the facts that could not be read.
func WriteText(out io.Writer, r *Report, st termui.Style) error {
	w := bufio.NewWriter(out)
	writeHost(w, r, st)
	for _, n := range r.NICs {
		fmt.Fprintln(w)
		writeNIC(w, n, st)
	}
	if len(r.Virtual) > 0 {
		fmt.Fprintln(w)
		var vs []string
		for _, v := range r.Virtual {
			vs = append(vs, fmt.Sprintf("%s (%s)", v.Interface, v.Kind))
		}
		fmt.Fprintf(w, "%s %s\n", st.Dim("other interfaces:"), strings.Join(vs, ", "))
	}
	if r.PathMTU != nil {
		fmt.Fprintln(w)
		writePathMTU(w, r.PathMTU, st)
	}
	fmt.Fprintln(w)
	writeFindings(w, r, st)
	if len(r.Notes) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, st.Dim("not read:"))
		for _, n := range r.Notes {
			fmt.Fprintf(w, "  %s %s\n", st.Dim("-"), n)
		}
	}
	return w.Flush()
}

func writeHost(w io.Writer, r *Report, st termui.Style) {
	c := r.CPU
	title := r.Host.Hostname
	if title == "" {
		title = "(unknown host)"
	}
	fmt.Fprintf(w, "%s  %s\n", st.Bold(title), st.Dim("Linux "+r.Host.Kernel))
	model := c.Model
	if model == "" {
		model = "CPU model unknown"
	}
	sockets := ""
	if c.Sockets > 0 {
		sockets = fmt.Sprintf(", %d socket%s", c.Sockets, plural(c.Sockets))
	}
	fmt.Fprintf(w, "  %-10s %d × %s%s\n", "cpu", c.Count, model, sockets)
	var nodes []string
	for _, k := range sortedNodeKeys(c.NUMANodes) {
		nodes = append(nodes, fmt.Sprintf("%s: %s", k, cpulist.Format(c.NUMANodes[k])))
	}
	fmt.Fprintf(w, "  %-10s %s\n", "numa", strings.Join(nodes, "  "))
	var l3 []string
	for _, d := range c.L3Domains {
		l3 = append(l3, cpulist.Format(d))
	}
	if len(l3) == 0 {
		l3 = []string{"not reported"}
	}
	fmt.Fprintf(w, "  %-10s %s\n", "l3", strings.Join(l3, " | "))
	var govs []string
	for _, g := range slices.Sorted(mapKeys(c.Governors)) {
		govs = append(govs, fmt.Sprintf("%s on %s", g, cpulist.Format(c.Governors[g])))
	}
	gov := strings.Join(govs, ", ")
	if len(govs) == 0 {
		gov = "not reported (no cpufreq)"
	} else if c.ScalingDriver != "" {
		gov += " (" + c.ScalingDriver + ")"
	}
	fmt.Fprintf(w, "  %-10s %s\n", "governor", gov)
	ib := "not running"
	if r.Host.IRQBalance.Running {
		ib = fmt.Sprintf("running (pid %s)", joinInts(r.Host.IRQBalance.PIDs))
	}
	fmt.Fprintf(w, "  %-10s %s\n", "irqbalance", ib)
}

func sortedNodeKeys(m map[string][]int) []string {
	k := slices.Collect(func(yield func(string) bool) {
		for key := range m {
			if !yield(key) {
				return
			}
		}
	})
	sort.Slice(k, func(i, j int) bool {
		a, _ := strconv.Atoi(k[i])
		b, _ := strconv.Atoi(k[j])
		return a < b
	})
	return k
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func writeNIC(w io.Writer, n NICReport, st termui.Style) {
	head := st.Bold(n.Interface)
	switch {
	case n.Kind == "pci":
		id := fmt.Sprintf("[%s:%s]", strings.TrimPrefix(n.VendorID, "0x"), strings.TrimPrefix(n.DeviceID, "0x"))
		model := n.Model
		if model == "" {
			model = "NIC"
		}
		node := "?"
		if n.NUMANode != nil {
			node = strconv.Itoa(*n.NUMANode)
		}
		fmt.Fprintf(w, "%s  %s %s  %s  pci %s  numa %s\n", head, model, st.Dim(id), n.Driver, n.PCI, node)
	default:
		fmt.Fprintf(w, "%s  %s\n", head, n.Kind)
	}
	speed := "speed unknown"
	if n.SpeedMbps != nil {
		speed = trimFloat(float64(*n.SpeedMbps)/1000) + " Gbit/s"
	}
	if n.Kind != "pci" {
		speed = "no physical speed"
	}
	mtu := "MTU ?"
	if n.MTU != nil {
		mtu = fmt.Sprintf("MTU %d", *n.MTU)
	}
	state := n.Operstate
	if state == "up" {
		state = st.Green(state)
	} else {
		state = st.Yellow(state)
	}
	fmt.Fprintf(w, "  %-10s %s  %s  %s  queues %d rx / %d tx\n", "link", state, speed, mtu, n.Queues.RX, n.Queues.TX)
	if n.Qdisc != nil {
		q := n.Qdisc.Kind
		if n.Qdisc.RateGbps != nil {
			q += fmt.Sprintf(" shaped to %s Gbit/s", trimFloat(*n.Qdisc.RateGbps))
		}
		fmt.Fprintf(w, "  %-10s %s\n", "qdisc", q)
	}
	if n.PCIe != nil {
		writePCIe(w, n.PCIe, st)
	}
	if n.Kind == "pci" {
		writeIRQs(w, n.IRQs)
	}
	if n.TempC != nil {
		t := fmt.Sprintf("%.1f °C", *n.TempC)
		if n.TempCritC != nil {
			t += fmt.Sprintf(" (crit %.1f °C)", *n.TempCritC)
		}
		if *n.TempC >= tempWarnC {
			t = st.Yellow(t)
		}
		fmt.Fprintf(w, "  %-10s %s\n", "temp", t)
	}
	for _, p := range n.RDMA {
		s := p.State
		if s != "ACTIVE" {
			s = st.Yellow(s)
		}
		fmt.Fprintf(w, "  %-10s %s/%d %s %s Gb/s %s  fw %s\n", "rdma", p.Device, p.Port, s, trimFloat(p.RateGbps), p.LinkLayer, p.Firmware)
	}
	writeEthtool(w, n, st)
	writeCeiling(w, n.Limits, n.Kind == "pci", st)
}

func writePCIe(w io.Writer, p *inventory.PCIe, st termui.Style) {
	if !p.Reported {
		fmt.Fprintf(w, "  %-10s %s\n", "pcie", st.Dim("link not reported (virtual or non-Express device)"))
		return
	}
	line := fmt.Sprintf("%s of %s", link(p.CurGTs, p.CurWidth), link(p.MaxGTs, p.MaxWidth))
	if p.Upstream != nil {
		line += fmt.Sprintf("  (slot %s: %s)", p.Upstream.PCI, link(p.Upstream.MaxGTs, p.Upstream.MaxWidth))
	}
	if p.Downgraded {
		line += "  " + st.Red("DOWNGRADED")
	}
	fmt.Fprintf(w, "  %-10s %s\n", "pcie", line)
	mps := "MPS 256 assumed"
	if p.MPS != nil {
		mps = fmt.Sprintf("MPS %d, MRRS %d", *p.MPS, deref32(p.MRRS))
	}
	fmt.Fprintf(w, "  %-10s %.2f Gbit/s raw, %.2f effective (%s)\n", "", deref(p.RawGbps), deref(p.EffGbps), mps)
}

func deref32(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func writeIRQs(w io.Writer, irqs []inventory.IRQ) {
	if len(irqs) == 0 {
		fmt.Fprintf(w, "  %-10s none found\n", "irqs")
		return
	}
	routed, served := map[int]bool{}, map[int]bool{}
	for _, q := range irqs {
		for _, c := range q.AffinityOrEffective() {
			routed[c] = true
		}
		for _, c := range q.ServedOn(servedShare) {
			served[c] = true
		}
	}
	fmt.Fprintf(w, "  %-10s %d, routed to CPUs %s, served on %s\n", "irqs", len(irqs),
		orNone(cpulist.Format(keys(routed))), orNone(cpulist.Format(keys(served))))
}

func orNone(s string) string {
	if s == "" {
		return "none yet"
	}
	return s
}

func writeCeiling(w io.Writer, l limits.Limits, pci bool, st termui.Style) {
	var parts []string
	for _, s := range l.Chain {
		if s.Stage == "PCIe" && !pci {
			continue // a virtual link has no bus to speak of
		}
		v := "?"
		if s.Gbps != nil {
			v = s.Gbps.String()
		}
		parts = append(parts, fmt.Sprintf("%s %s", s.Stage, v))
	}
	b := string(l.Bottleneck)
	switch l.Bottleneck {
	case limits.BottleneckPCIe:
		b = st.Red("PCIe")
	case limits.BottleneckLineRate:
		b = "line rate"
	}
	fmt.Fprintf(w, "  %-10s %s Gbit/s  → bottleneck: %s\n", "ceiling", strings.Join(parts, " → "), b)
}

func writePathMTU(w io.Writer, p *PathMTU, st termui.Style) {
	switch {
	case p.Error != "":
		fmt.Fprintf(w, "%s %s: %s\n", st.Bold("path MTU"), p.Peer, st.Yellow("not probed: "+p.Error))
	case p.OK:
		fmt.Fprintf(w, "%s %s via %s: %d bytes pass with don't-fragment %s\n", st.Bold("path MTU"), p.Peer, p.Interface, p.MTU, st.Green("ok"))
	default:
		fmt.Fprintf(w, "%s %s via %s: %d bytes %s; largest that passed %d (%d probes)\n", st.Bold("path MTU"), p.Peer, p.Interface, p.MTU, st.Red("FAIL"), p.Largest, p.Probes)
	}
}

func writeFindings(w io.Writer, r *Report, st termui.Style) {
	if len(r.Findings) == 0 {
		msg := "no findings: nothing here limits the link"
		for _, n := range r.NICs {
			if n.Limits.LineRate == nil {
				msg = "no findings (some line rates are unknown, so ceilings could not be compared)"
			}
		}
		fmt.Fprintln(w, st.Green(msg))
		return
	}
	fmt.Fprintf(w, "%s %d critical, %d warning, %d info\n", st.Bold("findings:"), r.Count(Critical), r.Count(Warning), r.Count(Info))
	for _, f := range r.Findings {
		fmt.Fprintln(w)
		label := strings.ToUpper(string(f.Severity))
		switch f.Severity {
		case Critical:
			label = st.Red(label)
		case Warning:
			label = st.Yellow(label)
		default:
			label = st.Cyan(label)
		}
		fmt.Fprintf(w, "%s  %s  %s\n", label, st.Bold(f.ID), f.Subject)
		fmt.Fprintf(w, "  %s\n", f.Summary)
		if ev := evidence(f.Evidence); ev != "" {
			fmt.Fprintf(w, "  %s %s\n", st.Dim("evidence:"), ev)
		}
		for _, fix := range f.Fix {
			fmt.Fprintf(w, "  %s %s\n", st.Dim("fix:"), fix)
		}
	}
}

// evidence writes a finding's evidence as sorted key=value pairs.
func evidence(ev map[string]any) string {
	var parts []string
	for _, k := range slices.Sorted(mapKeys(ev)) {
		parts = append(parts, fmt.Sprintf("%s=%s", k, value(ev[k])))
	}
	return strings.Join(parts, "  ")
}

func value(v any) string {
	switch t := v.(type) {
	case float64:
		return trimFloat(t)
	case map[string]any:
		var p []string
		for _, k := range slices.Sorted(mapKeys(t)) {
			p = append(p, k+":"+value(t[k]))
		}
		return "{" + strings.Join(p, " ") + "}"
	case map[string]string:
		var p []string
		for _, k := range slices.Sorted(mapKeys(t)) {
			p = append(p, k+":"+t[k])
		}
		return "{" + strings.Join(p, " ") + "}"
	case string:
		if strings.ContainsAny(t, " ") {
			return strconv.Quote(t)
		}
		return t
	}
	return fmt.Sprint(v)
}
