package mesh

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteText writes the status as `linerate mesh status` prints it: the
// hosts, the pairs' states as a matrix, the pairs that are not ok, the
// suspects with their evidence, and the verdict.
func (d *Doc) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Mesh %s (%s): %d hosts, %d pairs, probing %g/s per peer over %d flows; up since %s\n\n",
		d.Name, d.Source, len(d.Hosts), len(d.Pairs), d.Settings.ProbeRate, d.Settings.Flows, d.Started.Local().Format(time.DateTime))
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tADDRESS\tAGENT\tCPU\tMEMORY")
	for _, h := range d.Hosts {
		state, cpu, mem := "up", "-", "-"
		if !h.Up {
			state = "DOWN: " + h.Error
		}
		if h.AgentCPUPct != nil {
			cpu = fmt.Sprintf("%.2f%%", *h.AgentCPUPct)
		}
		if h.AgentRSSBytes != nil {
			mem = fmt.Sprintf("%.1f MB", float64(*h.AgentRSSBytes)/1e6)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", h.Name, h.Address, state, cpu, mem)
	}
	tw.Flush()
	b.WriteString("\n")
	d.writeMatrix(&b)
	var notOK []PairStatus
	for _, p := range d.Pairs {
		if p.State != OK || p.Inconclusive != "" {
			notOK = append(notOK, p)
		}
	}
	if len(notOK) > 0 {
		b.WriteString("\nPairs not ok:\n")
		for _, p := range notOK {
			what := p.Why
			if p.State == OK {
				what = "inconclusive: " + p.Inconclusive
			}
			fmt.Fprintf(&b, "  %s → %s  %s since %s: %s\n", p.Src, p.Dst, p.State, p.Since.Local().Format(time.TimeOnly), what)
		}
	}
	if len(d.Suspects) > 0 {
		b.WriteString("\nSuspects:\n")
		for _, s := range d.Suspects {
			fmt.Fprintf(&b, "  %s %s, %s side, since %s\n", s.Kind, s.Name, s.Side, s.Since.Local().Format(time.TimeOnly))
			for _, e := range s.Evidence {
				fmt.Fprintf(&b, "    - %s\n", e)
			}
		}
	}
	fmt.Fprintf(&b, "\n%s\n", d.Verdict)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeMatrix draws the states, a row per sending host: "." ok, "~"
// inconclusive, "D" degraded, "X" down, "?" not judged yet.
func (d *Doc) writeMatrix(b *strings.Builder) {
	idx := map[string]int{}
	for i, h := range d.Hosts {
		idx[h.Name] = i
	}
	n := len(d.Hosts)
	cell := make([][]byte, n)
	for i := range cell {
		cell[i] = []byte(strings.Repeat(" ", n))
		cell[i][i] = '-'
	}
	for _, p := range d.Pairs {
		i, ok1 := idx[p.Src]
		j, ok2 := idx[p.Dst]
		if !ok1 || !ok2 {
			continue
		}
		c := byte('?')
		switch {
		case p.State == OK && p.Inconclusive != "":
			c = '~'
		case p.State == OK:
			c = '.'
		case p.State == Degraded:
			c = 'D'
		case p.State == Down:
			c = 'X'
		}
		cell[i][j] = c
	}
	width := 0
	for _, h := range d.Hosts {
		width = max(width, len(h.Name))
	}
	fmt.Fprintf(b, "%-*s  sends to →  (. ok  ~ inconclusive  D degraded  X down  ? not judged yet)\n", width, "")
	for i, h := range d.Hosts {
		fmt.Fprintf(b, "%-*s  %s\n", width, h.Name, strings.Join(strings.Split(string(cell[i]), ""), " "))
	}
}
