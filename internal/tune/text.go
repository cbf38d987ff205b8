package tune

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/termui"
)

// kindTitle heads a group of changes in the human view.
func kindTitle(k Kind, p *Plan) string {
	switch k {
	case KindSysctl:
		if p.Root != "/" {
			return "net sysctls (the tree's /proc/sys/net)"
		}
		return fmt.Sprintf("net sysctls (network namespace %d)", p.NetNS)
	case KindGovernor:
		return "CPU governors (cpufreq)"
	case KindMTU:
		return "MTU (rtnetlink)"
	case KindChannels:
		return "queues (ethtool -L)"
	case KindRings:
		return "rings (ethtool -G)"
	case KindIRQBalance:
		return "irqbalance (ban the pinned IRQs, then restart it)"
	case KindIRQ:
		return "IRQ affinity"
	case KindMRRS, KindTrust, KindPFC, KindECN:
		return roceTitle(k)
	}
	return string(k)
}

// WritePlan writes the plan the way `terraform plan` does: one line per
// change with before → after and the command, grouped by kind, then the
// placements, the notes, and where to run the application.
func WritePlan(out io.Writer, p *Plan, st termui.Style) error {
	w := bufio.NewWriter(out)
	where := "live host"
	if p.Root != "/" {
		where = "captured tree " + p.Root
	}
	fmt.Fprintf(w, "%s %s (%s), profile %s, rtt %gms, NICs: %s\n", st.Bold("tune plan for"), orUnknown(p.Host), where, p.Profile, p.RTTMs, nics(p))
	for _, k := range kindOrder() {
		writeGroup(w, p, k, st)
	}
	writePlacements(w, p, st)
	if len(p.Notes) > 0 {
		fmt.Fprintf(w, "\n%s\n", st.Bold("notes (not applied)"))
		for _, n := range p.Notes {
			tag := ""
			if n.Finding != "" {
				tag = st.Dim(" [" + n.Finding + "]")
			}
			fmt.Fprintf(w, "  - %s%s\n", n.Text, tag)
		}
	}
	fmt.Fprintln(w)
	writeSummary(w, p, st)
	return w.Flush()
}

func writeGroup(w io.Writer, p *Plan, k Kind, st termui.Style) {
	var cs []Change
	for _, c := range p.Changes {
		if c.Kind == k {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", st.Bold(kindTitle(k, p)))
	tw, bw := 0, 0
	for _, c := range cs {
		tw = max(tw, utf8.RuneCountInString(target(c)))
		bw = max(bw, utf8.RuneCountInString(beforeAfter(c)))
	}
	for _, c := range cs {
		fmt.Fprintf(w, "  %s %s  %s  %s  %s\n", st.Yellow("~"), pad(target(c), tw), pad(beforeAfter(c), bw), c.Command, st.Dim("["+tag(c, p)+"]"))
	}
}

// pad fills s with spaces to width characters (not bytes: "→" is one).
func pad(s string, width int) string {
	return s + strings.Repeat(" ", max(0, width-utf8.RuneCountInString(s)))
}

func target(c Change) string {
	if c.Detail != "" {
		return c.Target + " " + c.Detail
	}
	return c.Target
}

func beforeAfter(c Change) string { return orNone(c.Before) + " → " + orNone(c.After) }

// tag says why a change is in the plan: its finding, else its origin.
func tag(c Change, p *Plan) string {
	switch {
	case c.Finding != "":
		return c.Finding
	case c.Kind == KindMTU:
		return "--mtu"
	case c.Kind == KindIRQ:
		return "--irq-cpus"
	}
	return "profile " + string(p.Profile)
}

func writePlacements(w io.Writer, p *Plan, st termui.Style) {
	if len(p.Placements) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", st.Bold("placement"))
	for _, pl := range p.Placements {
		irqs := "IRQs to " + orDash(cpulist.Format(pl.IRQCPUs))
		if !pl.MovesIRQs {
			irqs = "IRQs stay on " + orDash(cpulist.Format(pl.IRQCPUs)) + " (no finding asks to move them)"
		}
		node := fmt.Sprintf("NUMA node %d", pl.NUMANode)
		if pl.NUMANode < 0 {
			node = "no NUMA node"
		}
		fmt.Fprintf(w, "  %s (%s): %s; application on %s; L3 domain %s (%s)\n",
			pl.Interface, node, irqs, orDash(cpulist.Format(pl.AppCPUs)), orDash(cpulist.Format(pl.L3Domain)), pl.Basis)
	}
}

func writeSummary(w io.Writer, p *Plan, st termui.Style) {
	live := 0
	for _, c := range p.Changes {
		if c.LiveOnly {
			live++
		}
	}
	s := fmt.Sprintf("Plan: %d change(s)", len(p.Changes))
	if live > 0 && p.Root != "/" {
		s += fmt.Sprintf(", %d of them need the live NIC and are skipped when applied to this tree", live)
	}
	fmt.Fprintln(w, st.Bold(s+"."))
	if app := AppCPUs(p); len(app) > 0 {
		l := cpulist.Format(app)
		what := "Run your application on CPUs"
		if len(app) == 1 {
			what = "Run your application on CPU"
		}
		fmt.Fprintf(w, "%s %s: taskset -c %s <command> (iperf3: -A %d)\n", st.Green(what), l, l, app[0])
	}
}

// AppCPUs returns the CPUs the plan says to run the application on: those
// of the first placement (one NIC is the usual case; each placement has
// its own).
func AppCPUs(p *Plan) []int {
	for _, pl := range p.Placements {
		if len(pl.AppCPUs) > 0 {
			return pl.AppCPUs
		}
	}
	return nil
}

// WriteResult writes what Apply did, one line per step.
func WriteResult(out io.Writer, r *Result, st termui.Style) error {
	w := bufio.NewWriter(out)
	fmt.Fprintf(w, "\n%s %s\n", st.Bold("applied, journal"), r.Journal)
	for _, s := range r.Steps {
		writeStep(w, s, st)
	}
	if len(r.Rollback) > 0 {
		fmt.Fprintf(w, "%s\n", st.Bold("rolled back"))
		for _, s := range r.Rollback {
			writeStep(w, s, st)
		}
		return w.Flush()
	}
	fmt.Fprintf(w, "%d applied, %d refused, %d skipped. Undo: linerate tune revert %s\n",
		r.Count(PhaseApplied), r.Count(PhaseRefused), r.Count(PhaseSkipped), r.Journal)
	return w.Flush()
}

// WriteRevert writes what Revert did.
func WriteRevert(out io.Writer, r *RevertResult, st termui.Style) error {
	w := bufio.NewWriter(out)
	fmt.Fprintf(w, "%s %s\n", st.Bold("reverting journal"), r.Journal)
	for _, s := range r.Steps {
		writeStep(w, s, st)
	}
	fmt.Fprintf(w, "%d restored, %d left alone, %d failed\n", r.Count(PhaseReverted), r.Count(PhaseLeft), r.Count(PhaseRevertFailed))
	if r.Count(PhaseLeft) > 0 {
		fmt.Fprintf(w, "values left alone were changed by someone else since tune set them: linerate tune revert %s --force restores them anyway\n", r.Journal)
	}
	return w.Flush()
}

func writeStep(w io.Writer, s StepResult, st termui.Style) {
	mark := map[Phase]string{
		PhaseApplied: st.Green("ok"), PhaseReverted: st.Green("ok"), PhaseRefused: st.Yellow("refused"),
		PhaseSkipped: st.Dim("skipped"), PhaseLeft: st.Yellow("left"), PhaseFailed: st.Red("FAILED"),
		PhaseRevertFailed: st.Red("FAILED"),
	}[s.Phase]
	detail := ""
	switch {
	case s.Reason != "":
		detail = s.Reason
	case s.Value != "":
		detail = "now " + strings.ReplaceAll(s.Value, "\n", " ")
	}
	if s.Forced {
		detail += " (forced)"
	}
	fmt.Fprintf(w, "  %3d %-7s %-10s %s: %s\n", s.Step, mark, s.Kind, s.Target, detail)
}

// WriteList writes the journals as a table, newest first.
func WriteList(out io.Writer, js []*Journal, st termui.Style) error {
	w := bufio.NewWriter(out)
	if len(js) == 0 {
		fmt.Fprintln(w, "no tune journals (linerate tune --apply writes one)")
		return w.Flush()
	}
	fmt.Fprintf(w, "%-27s %-20s %-8s %-15s %-10s %-18s %s\n", "ID", "TIME", "CHANGES", "STATE", "PROFILE", "NETNS", "HOST / ROOT")
	for _, j := range js {
		where := orDash(j.Host)
		if j.Root != "/" && j.Root != "" {
			where += " " + j.Root
		}
		when := "-"
		if !j.Time.IsZero() {
			when = j.Time.Local().Format("2006-01-02 15:04:05")
		}
		state := fmt.Sprintf("%-15s", j.State()) // padded before colouring
		switch j.State() {
		case StateDamaged, StateRefused:
			state = st.Red(state)
		}
		fmt.Fprintf(w, "%-27s %-20s %-8d %s %-10s %-18d %s\n", j.ID, when, j.Planned, state, orDash(string(j.Profile)), j.NetNS, where)
		switch {
		case j.Refused != "":
			fmt.Fprintf(w, "  %s %s\n", st.Red("refused:"), j.Refused)
		case j.State() == StateDamaged:
			fmt.Fprintf(w, "  %s %s: nothing was changed under it (a journal gets its header before any change); remove it: rm %s\n", st.Red("damaged:"), j.Damage, j.Path)
		case j.Damage != "":
			fmt.Fprintf(w, "  %s %s; it holds %s: revert restores what those prove\n", st.Yellow("damaged:"), j.Damage, j.Holds())
		}
	}
	return w.Flush()
}

func nics(p *Plan) string {
	if len(p.Interfaces) == 0 {
		return "none selected (no PCI NIC is up; name one with --iface)"
	}
	return strings.Join(p.Interfaces, ", ")
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown host)"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
