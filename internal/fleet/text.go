package fleet

import (
	"fmt"
	"io"
	"strings"
)

// maxMatrixHosts is the most hosts WriteText draws as a matrix; beyond,
// rows would not fit a terminal and it lists the pairs that are not ok.
const maxMatrixHosts = 16

// WriteText writes the result for people: what ran, the matrix (or the
// pairs that are not ok), the re-tests, the outliers and the verdict.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	mode := "one test at a time"
	if r.Parallel {
		mode = "each leg's tests at once"
	}
	fmt.Fprintf(&b, "fleet: %d hosts, pattern %s, %d pairs in %d rounds, %d tests of %gs with %d stream%s, %s (%.0f s)\n",
		len(r.Hosts), r.Pattern, len(r.Pairs), r.Rounds, r.Tests, r.DurationS, r.Streams, plural(r.Streams), mode, r.WallS)
	if r.MedianGbps != nil {
		fmt.Fprintf(&b, "median %s Gbit/s; slow below %s Gbit/s (%g%%)\n", gbpsText(*r.MedianGbps), gbpsText(*r.SlowBelowGbps), r.ThresholdPct)
	}
	if len(r.Hosts) <= maxMatrixHosts {
		r.writeMatrix(&b)
	} else {
		r.writeNotOK(&b)
	}
	if len(r.Retests) > 0 {
		b.WriteString("re-tests:\n")
		for _, t := range r.Retests {
			verdict := "not slow on re-test"
			if t.Confirmed {
				verdict = "slow again"
			}
			var rs []string
			for _, g := range t.RetestsGbps {
				rs = append(rs, gbpsText(g))
			}
			fmt.Fprintf(&b, "  %s→%s  %s, then %s Gbit/s: %s\n", t.From, t.To, gbpsText(t.FirstGbps), strings.Join(rs, ", "), verdict)
		}
	}
	for _, p := range r.Pairs {
		for _, d := range []struct {
			from, to string
			dir      Direction
		}{{p.A, p.B, p.AToB}, {p.B, p.A, p.BToA}} {
			if d.dir.Status == StatusFailed {
				fmt.Fprintf(&b, "failed: %s→%s: %s\n", d.from, d.to, d.dir.Error)
			}
		}
	}
	if len(r.Outliers) > 0 {
		b.WriteString("outliers:\n")
		for _, o := range r.Outliers {
			fmt.Fprintf(&b, "  %s %s (%s, %s): %s\n", o.Kind, o.Name, o.Direction, o.Cause, o.Evidence)
		}
	}
	fmt.Fprintf(&b, "verdict: %s\n", r.Verdict)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeMatrix draws Gbit/s with the sender as the row and the receiver as
// the column; '!' marks a slow test, 'x' a failed one, '.' one not run.
func (r *Result) writeMatrix(b *strings.Builder) {
	n := len(r.Hosts)
	idx := map[string]int{}
	width := 6
	for i, h := range r.Hosts {
		idx[h.Name] = i
		width = max(width, len(h.Name)+1)
	}
	cells := make([][]string, n)
	for i := range cells {
		cells[i] = make([]string, n)
		for j := range cells[i] {
			cells[i][j] = ""
		}
		cells[i][i] = "-"
	}
	for _, p := range r.Pairs {
		a, c := idx[p.A], idx[p.B]
		cells[a][c] = cellText(p.AToB, p.AToBGbps)
		cells[c][a] = cellText(p.BToA, p.BToAGbps)
	}
	b.WriteString("Gbit/s, row sends to column (! slow, x failed):\n")
	fmt.Fprintf(b, "%*s", width, "")
	for _, h := range r.Hosts {
		fmt.Fprintf(b, " %*s", width, h.Name)
	}
	b.WriteByte('\n')
	for i, h := range r.Hosts {
		fmt.Fprintf(b, "%*s", width, h.Name)
		for j := range r.Hosts {
			fmt.Fprintf(b, " %*s", width, cells[i][j])
		}
		b.WriteByte('\n')
	}
}

func cellText(d Direction, g *float64) string {
	switch {
	case d.Status == StatusFailed:
		return "x"
	case g == nil:
		return "."
	case d.Status == StatusSlow:
		return gbpsText(*g) + "!"
	}
	return gbpsText(*g)
}

// writeNotOK lists the pairs that are not ok, for fleets too big for a
// matrix.
func (r *Result) writeNotOK(b *strings.Builder) {
	var lines []string
	for _, p := range r.Pairs {
		if p.Status == StatusOK {
			continue
		}
		lines = append(lines, fmt.Sprintf("  %s-%s %s: %s→%s %s, %s→%s %s", p.A, p.B, p.Status,
			p.A, p.B, cellText(p.AToB, p.AToBGbps), p.B, p.A, cellText(p.BToA, p.BToAGbps)))
	}
	fmt.Fprintf(b, "%d of %d pairs not ok\n", len(lines), len(r.Pairs))
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
}
