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

// DefaultWidth is the width the text view wraps at when the caller knows
// none (output to a file or a pipe without COLUMNS).
const DefaultWidth = 80

// textWriter writes the text view, wrapping every line at width columns:
// prose at spaces, commands with a backslash continuation (wrap.go).
type textWriter struct {
	w     *bufio.Writer
	width int
	st    termui.Style
}

// blank writes an empty line.
func (t *textWriter) blank() { t.w.WriteString("\n") }

// para writes s wrapped: the first line after first, the rest after hang.
func (t *textWriter) para(first, hang, s string) {
	for _, l := range wrapProse(s, first, hang, t.width) {
		t.w.WriteString(strings.TrimRight(l, " ") + "\n")
	}
}

// headLine writes fields two spaces apart, wrapping only between fields
// (continuation lines at hang), so that "pci 0000:00:03.0" and "numa n/a"
// are never split at a narrow terminal's edge.
func (t *textWriter) headLine(hang string, fields ...string) {
	line := ""
	for _, f := range fields {
		switch {
		case line == "":
			line = f
		case t.width > 0 && visibleWidth(line)+2+visibleWidth(f) > t.width:
			t.w.WriteString(line + "\n")
			line = hang + f
		default:
			line += "  " + f
		}
	}
	t.w.WriteString(line + "\n")
}

// field writes a block's "  key        value" line, continuation lines
// aligned under the value.
func (t *textWriter) field(key, value string) {
	t.para(fmt.Sprintf("  %-10s ", key), strings.Repeat(" ", 13), value)
}

// cmd writes a command line at indent, wrapped as the shell reads it.
func (t *textWriter) cmd(indent string, argv []string) {
	for _, l := range wrapCommand(ShellLine(argv), indent, t.width) {
		t.w.WriteString(l + "\n")
	}
}

// WriteText writes the human view: the host, a block per NIC in the manner
// of lspci and ethtool, the findings by severity with evidence and fixes,
// and the facts that could not be read. Every line fits in width columns
// (0: no wrapping) but a shell word longer than a line, which cannot be
// broken.
func WriteText(out io.Writer, r *Report, st termui.Style, width int) error {
	t := &textWriter{w: bufio.NewWriter(out), width: width, st: st}
	writeHost(t, r)
	for _, n := range r.NICs {
		t.blank()
		writeNIC(t, n)
	}
	writeGPUs(t, r.GPUs)
	if len(r.Virtual) > 0 {
		t.blank()
		var vs []string
		for _, v := range r.Virtual {
			vs = append(vs, fmt.Sprintf("%s (%s)", v.Interface, v.Kind))
		}
		t.para(st.Dim("other interfaces:")+" ", "  ", strings.Join(vs, ", "))
	}
	if r.PathMTU != nil {
		t.blank()
		writePathMTU(t, r.PathMTU)
	}
	t.blank()
	writeFindings(t, r)
	if len(r.Notes) > 0 {
		t.blank()
		t.para("", "", st.Dim("not read:"))
		for _, n := range r.Notes {
			t.para("  "+st.Dim("-")+" ", "    ", n)
		}
	}
	return t.w.Flush()
}

func writeHost(t *textWriter, r *Report) {
	st := t.st
	c := r.CPU
	title := r.Host.Hostname
	if title == "" {
		title = "(unknown host)"
	}
	t.para("", "  ", fmt.Sprintf("%s  %s", st.Bold(title), st.Dim("Linux "+r.Host.Kernel)))
	model := c.Model
	if model == "" {
		model = "CPU model unknown"
	}
	sockets := ""
	if c.Sockets > 0 {
		sockets = fmt.Sprintf(", %d socket%s", c.Sockets, plural(c.Sockets))
	}
	t.field("cpu", fmt.Sprintf("%d × %s%s", c.Count, model, sockets))
	var nodes []string
	for _, k := range sortedNodeKeys(c.NUMANodes) {
		nodes = append(nodes, fmt.Sprintf("%s: %s", k, cpulist.Format(c.NUMANodes[k])))
	}
	t.field("numa", strings.Join(nodes, "  "))
	var l3 []string
	for _, d := range c.L3Domains {
		l3 = append(l3, cpulist.Format(d))
	}
	if len(l3) == 0 {
		l3 = []string{"not reported"}
	}
	t.field("l3", strings.Join(l3, " | "))
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
	t.field("governor", gov)
	ib := "not running"
	if r.Host.IRQBalance.Running {
		ib = fmt.Sprintf("running (pid %s)", joinInts(r.Host.IRQBalance.PIDs))
	}
	t.field("irqbalance", ib)
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

func writeNIC(t *textWriter, n NICReport) {
	st := t.st
	head := st.Bold(n.Interface)
	switch {
	case n.Kind == "pci":
		id := fmt.Sprintf("[%s:%s]", strings.TrimPrefix(n.VendorID, "0x"), strings.TrimPrefix(n.DeviceID, "0x"))
		model := n.Model
		if model == "" {
			model = "NIC"
		}
		t.headLine("  ", head, model+" "+st.Dim(id), n.Driver, "pci "+n.PCI, "numa "+numaName(n.NUMANode))
	default:
		t.para("", "  ", fmt.Sprintf("%s  %s", head, n.Kind))
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
	t.field("link", fmt.Sprintf("%s  %s  %s  queues %d rx / %d tx", state, speed, mtu, n.Queues.RX, n.Queues.TX))
	if n.Qdisc != nil {
		q := n.Qdisc.Kind
		if n.Qdisc.RateGbps != nil {
			q += fmt.Sprintf(" shaped to %s Gbit/s", trimFloat(*n.Qdisc.RateGbps))
		}
		t.field("qdisc", q)
	}
	if n.PCIe != nil {
		writePCIe(t, n.PCIe)
	}
	if n.Kind == "pci" {
		writeIRQs(t, n.IRQs)
	}
	if n.TempC != nil {
		temp := fmt.Sprintf("%.1f °C", *n.TempC)
		if n.TempCritC != nil {
			temp += fmt.Sprintf(" (crit %.1f °C)", *n.TempCritC)
		}
		if *n.TempC >= tempWarnC {
			temp = st.Yellow(temp)
		}
		t.field("temp", temp)
	}
	for _, p := range n.RDMA {
		s := p.State
		if s != "ACTIVE" {
			s = st.Yellow(s)
		}
		t.field("rdma", fmt.Sprintf("%s/%d %s %s Gb/s %s  fw %s", p.Device, p.Port, s, trimFloat(p.RateGbps), p.LinkLayer, p.Firmware))
	}
	writeRoCE(t, n)
	writeEthtool(t, n)
	writeCeiling(t, n.Limits, n.Kind == "pci")
}

// numaName shows a NIC's NUMA node: the kernel's -1 (no affinity) and an
// unread node are "n/a", not a number.
func numaName(node *int) string {
	if node == nil || *node < 0 {
		return "n/a"
	}
	return strconv.Itoa(*node)
}

func writePCIe(t *textWriter, p *inventory.PCIe) {
	st := t.st
	if !p.Reported {
		t.field("pcie", st.Dim("link not reported (virtual or non-Express device)"))
		return
	}
	line := fmt.Sprintf("%s of %s", link(p.CurGTs, p.CurWidth), link(p.MaxGTs, p.MaxWidth))
	if p.Upstream != nil {
		line += fmt.Sprintf("  (slot %s: %s)", p.Upstream.PCI, link(p.Upstream.MaxGTs, p.Upstream.MaxWidth))
	}
	if p.Downgraded {
		line += "  " + st.Red("DOWNGRADED")
	}
	t.field("pcie", line)
	mps := "MPS 256 assumed"
	if p.MPS != nil {
		mps = fmt.Sprintf("MPS %d, MRRS %d", *p.MPS, deref32(p.MRRS))
	}
	t.field("", fmt.Sprintf("%.2f Gbit/s raw, %.2f effective (%s)", deref(p.RawGbps), deref(p.EffGbps), mps))
}

func deref32(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func writeIRQs(t *textWriter, irqs []inventory.IRQ) {
	if len(irqs) == 0 {
		t.field("irqs", "none found")
		return
	}
	routed, served := map[int]bool{}, map[int]bool{}
	for _, q := range irqs {
		markAll(routed, q.AffinityOrEffective())
		markAll(served, ServedOn(q))
	}
	r, s := keys(routed), keys(served)
	t.field("irqs", fmt.Sprintf("%d, routed to %s, served on %s", len(irqs), cpusPhrase(r), orNone(cpulist.Format(s))))
}

// cpusPhrase writes "CPU 0" or "CPUs 0,3-5", or "no CPU".
func cpusPhrase(cpus []int) string {
	switch len(cpus) {
	case 0:
		return "no CPU"
	case 1:
		return "CPU " + cpulist.Format(cpus)
	}
	return "CPUs " + cpulist.Format(cpus)
}

func orNone(s string) string {
	if s == "" {
		return "none yet"
	}
	return s
}

func writeCeiling(t *textWriter, l limits.Limits, pci bool) {
	st := t.st
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
	t.field("ceiling", fmt.Sprintf("%s Gbit/s  → bottleneck: %s", strings.Join(parts, " → "), b))
}

func writePathMTU(t *textWriter, p *PathMTU) {
	st := t.st
	switch {
	case p.Error != "":
		t.para("", "  ", fmt.Sprintf("%s %s: %s", st.Bold("path MTU"), p.Peer, st.Yellow("not probed: "+p.Error)))
	case p.OK:
		t.para("", "  ", fmt.Sprintf("%s %s via %s: %d bytes pass with don't-fragment %s", st.Bold("path MTU"), p.Peer, p.Interface, p.MTU, st.Green("ok")))
	default:
		t.para("", "  ", fmt.Sprintf("%s %s via %s: %d bytes %s; largest that passed %d (%d probes)", st.Bold("path MTU"), p.Peer, p.Interface, p.MTU, st.Red("FAIL"), p.Largest, p.Probes))
	}
}

func writeFindings(t *textWriter, r *Report) {
	st := t.st
	if len(r.Findings) == 0 {
		msg := "no findings: nothing here limits the link"
		for _, n := range r.NICs {
			if n.Limits.LineRate == nil {
				msg = "no findings (some line rates are unknown, so ceilings could not be compared)"
			}
		}
		t.para("", "", st.Green(msg))
		return
	}
	t.para("", "", fmt.Sprintf("%s %d critical, %d warning, %d info", st.Bold("findings:"), r.Count(Critical), r.Count(Warning), r.Count(Info)))
	for _, f := range r.Findings {
		t.blank()
		label := strings.ToUpper(string(f.Severity))
		switch f.Severity {
		case Critical:
			label = st.Red(label)
		case Warning:
			label = st.Yellow(label)
		default:
			label = st.Cyan(label)
		}
		t.para("", "  ", fmt.Sprintf("%s  %s  %s", label, st.Bold(f.ID), f.Subject))
		t.para("  ", "  ", f.Summary)
		if ev := evidence(f.Evidence); ev != "" {
			t.para("  "+st.Dim("evidence:")+" ", "            ", ev)
		}
		writeFixes(t, f.Fix)
	}
}

// writeFixes writes a finding's fixes as numbered steps: the action as
// prose, its command alone on the lines below, then how to keep it and
// how to check it, each the same way.
func writeFixes(t *textWriter, fixes []Fix) {
	if len(fixes) == 0 {
		return
	}
	t.para("  ", "  ", t.st.Dim("fix:"))
	for i, x := range fixes {
		num := fmt.Sprintf("    %d. ", i+1)
		if len(fixes) == 1 {
			num = "    - "
		}
		hang := strings.Repeat(" ", len(num))
		step := func(first, action string, argv []string) {
			if action != "" {
				if argv != nil && !strings.HasSuffix(action, ":") {
					action += ":"
				}
				t.para(first, hang, action)
			}
			if argv != nil {
				t.cmd(hang+"  ", argv)
			}
		}
		step(num, x.Action, x.Command)
		for _, s := range []*Step{x.Persist, x.Verify} {
			if s != nil {
				step(hang, s.Action, s.Command)
			}
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
