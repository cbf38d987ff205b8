package fleet

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
)

// maxMatrixHosts is the most hosts WriteText draws as a matrix; beyond,
// rows would not fit a terminal and it lists the pairs that are not ok.
const maxMatrixHosts = 16

// WriteText writes the result for people: what ran, the matrix (or the
// pairs that are not ok), the re-tests, the outliers with what to run
// next, and the verdict.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	if r.Incast != nil {
		r.writeIncast(&b)
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "fleet: %d hosts, %s, %s in %s; %s of %gs with %s, %s (%.0f s)\n",
		len(r.Hosts), r.designText(), count(len(r.Pairs), "pair"), count(r.Rounds, "round"), count(r.Tests, "test"),
		r.DurationS, count(r.Streams, "stream"), r.modeText(), r.WallS)
	if r.MedianGbps != nil {
		of := "median"
		if r.FromBest {
			of = fmt.Sprintf("best %s Gbit/s", gbpsText(*r.SlowBelowGbps*100/r.ThresholdPct))
		}
		fmt.Fprintf(&b, "median %s Gbit/s; slow below %s Gbit/s (%g%% of the %s)\n", gbpsText(*r.MedianGbps), gbpsText(*r.SlowBelowGbps), r.ThresholdPct, of)
	}
	if r.BestUs != nil && r.MedianUs != nil && r.SlowAboveUs != nil {
		fmt.Fprintf(&b, "latency (typical): best %s µs, median %s µs; slow above %s µs (%g× the best)\n",
			usText(*r.BestUs), usText(*r.MedianUs), usText(*r.SlowAboveUs), r.SlowFactor)
	}
	if len(r.Hosts) <= maxMatrixHosts {
		r.writeMatrix(&b)
	} else {
		r.writeNotOK(&b)
	}
	if len(r.Retests) > 0 {
		b.WriteString("re-tests:\n")
		for _, t := range r.Retests {
			r.writeRetest(&b, t)
		}
	}
	for _, h := range r.Halving {
		fmt.Fprintf(&b, "halving round %d: suspects %s re-tested against %s (%s): blamed %s, cleared %s\n", h.Round,
			strings.Join(h.Suspects, ","), strings.Join(h.Good, ","), count(h.Tests, "test"), orNone(h.Blamed), orNone(h.Cleared))
	}
	for _, p := range r.Pairs {
		for _, d := range []struct {
			from, to string
			dir      Direction
		}{{p.A, p.B, p.AToB}, {p.B, p.A, p.BToA}} {
			switch d.dir.Status {
			case StatusFailed:
				fmt.Fprintf(&b, "failed: %s→%s: %s\n", d.from, d.to, d.dir.Error)
			case StatusInconclusive:
				fmt.Fprintf(&b, "inconclusive: %s→%s: %s\n", d.from, d.to, firstContention(d.dir.TriesContention))
			}
		}
	}
	if len(r.Outliers) > 0 {
		b.WriteString("outliers:\n")
		for _, o := range r.Outliers {
			switch {
			case o.Kind == KindPath:
				fmt.Fprintf(&b, "  path %s (%s): %s\n", pathName(o), o.Cause, o.Evidence)
			case o.Cause == CauseFailed:
				fmt.Fprintf(&b, "  host %s (failed): %s\n", o.Name, o.Evidence)
			default:
				fmt.Fprintf(&b, "  host %s (%s, %s): %s\n", o.Name, sideText(o.Direction), o.Cause, o.Evidence)
			}
			for _, n := range o.Next {
				fmt.Fprintf(&b, "    next: %s\n", n)
			}
		}
	}
	fmt.Fprintf(&b, "verdict: %s\n", r.Verdict)
	_, err := io.WriteString(w, b.String())
	return err
}

// designText says which pairs were tested.
func (r *Result) designText() string {
	if r.Design == DesignSampled {
		return fmt.Sprintf("design sampled (%s each, seed %d)", count(r.Partners, "partner"), r.Seed)
	}
	return "design all, pattern " + r.Pattern
}

// modeText says how the legs ran.
func (r *Result) modeText() string {
	if r.Parallel {
		return fmt.Sprintf("each leg's tests at once, %s", count(r.Legs, "leg"))
	}
	return "one test at a time"
}

// onceMark marks a try that ran with another number of tests at once than
// the first try of its test: "(alone)", "(3 at once)".
func (r *Result) onceMark(atOnce []int, i int) string {
	if !r.Parallel || i >= len(atOnce) || len(atOnce) == 0 || i > 0 && atOnce[i] == atOnce[0] {
		return ""
	}
	if i == 0 {
		return fmt.Sprintf(" (%d at once)", atOnce[0])
	}
	if atOnce[i] == 1 {
		return " (alone)"
	}
	return fmt.Sprintf(" (%d at once)", atOnce[i])
}

func retestText(t Retest) string {
	switch t.Status {
	case StatusSlow:
		return "slow again"
	case StatusInconclusive:
		return "inconclusive: " + firstContention(t.Contention)
	}
	return "not slow on re-test"
}

func firstContention(cs []string) string {
	for _, c := range cs {
		if c != "" {
			return c
		}
	}
	return "contended"
}

// sideText names a host's blamed side.
func sideText(dir string) string {
	switch dir {
	case DirSend:
		return "send side"
	case DirReceive:
		return "receive side"
	}
	return "both sides"
}

// pathName is a path outlier's name with its direction: "h01→h05".
func pathName(o Outlier) string {
	if o.Way != "" {
		return o.Way
	}
	if a, c, ok := strings.Cut(o.Name, "-"); ok {
		return pathDir(a, c, o.Direction)
	}
	return o.Name
}

// count writes "1 pair", "3 pairs".
func count(n int, what string) string { return fmt.Sprintf("%d %s%s", n, what, plural(n)) }

// writeMatrix draws Gbit/s with the sender as the row and the receiver as
// the column; '!' marks a slow test, '?' an inconclusive one, '*' a
// figure measured with another number of tests at once than the first
// try, 'x' a failed test, '.' one not run.
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
		cells[i][i] = "-"
	}
	starred := false
	for _, p := range r.Pairs {
		a, c := idx[p.A], idx[p.B]
		var s1, s2 bool
		cells[a][c], s1 = r.cellText(p.AToB, cmp.Or(p.AToBGbps, p.AToBUs))
		cells[c][a], s2 = r.cellText(p.BToA, cmp.Or(p.BToAGbps, p.BToAUs))
		starred = starred || s1 || s2
	}
	unit := "Gbit/s"
	if r.Metric == MetricLatency {
		unit = "typical latency µs"
	}
	b.WriteString(unit + ", row sends to column (! slow, ? inconclusive, x failed")
	if starred {
		b.WriteString(", * a re-test's figure with another number of tests at once")
	}
	b.WriteString("):\n")
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

// cellText is a direction's cell, and whether it is starred.
func (r *Result) cellText(d Direction, g *float64) (string, bool) {
	switch {
	case d.Status == StatusFailed:
		return "x", false
	case d.Status == StatusUntested:
		return "", false
	case g == nil:
		return ".", false
	}
	s := gbpsText(*g)
	if r.Metric == MetricLatency {
		s = usText(*g)
	}
	star := r.Parallel && OtherLoad(d)
	if star {
		s += "*"
	}
	switch d.Status {
	case StatusSlow:
		s += "!"
	case StatusInconclusive:
		s += "?"
	}
	return s, star
}

// OtherLoad says whether a direction's figure (its best try) was
// measured with another number of tests at once than its first try: a
// figure of a re-test alone among figures of loaded legs.
func OtherLoad(d Direction) bool {
	if len(d.TriesUs) > 0 {
		// a latency run: the best try is the lowest
		if len(d.TriesAtOnce) != len(d.TriesUs) {
			return false
		}
		return d.TriesAtOnce[slices.Index(d.TriesUs, slices.Min(d.TriesUs))] != d.TriesAtOnce[0]
	}
	if len(d.TriesAtOnce) < 2 || len(d.TriesAtOnce) != len(d.TriesGbps) {
		return false
	}
	best := 0
	for i, g := range d.TriesGbps {
		if g > d.TriesGbps[best] {
			best = i
		}
	}
	return d.TriesAtOnce[best] != d.TriesAtOnce[0]
}

// writeNotOK lists the pairs that are not ok, for fleets too big for a
// matrix.
func (r *Result) writeNotOK(b *strings.Builder) {
	var lines []string
	for _, p := range r.Pairs {
		if p.Status == StatusOK {
			continue
		}
		c1, _ := r.cellText(p.AToB, cmp.Or(p.AToBGbps, p.AToBUs))
		c2, _ := r.cellText(p.BToA, cmp.Or(p.BToAGbps, p.BToAUs))
		var parts []string
		if p.AToB.Status != StatusUntested {
			parts = append(parts, fmt.Sprintf("%s→%s %s", p.A, p.B, c1))
		}
		if p.BToA.Status != StatusUntested {
			parts = append(parts, fmt.Sprintf("%s→%s %s", p.B, p.A, c2))
		}
		lines = append(lines, fmt.Sprintf("  %s-%s %s: %s", p.A, p.B, p.Status, strings.Join(parts, ", ")))
	}
	fmt.Fprintf(b, "%d of %s not ok\n", len(lines), count(len(r.Pairs), "pair"))
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
}

// writeIncast writes an incast for people: each sender's goodput and
// share, the sum at the receiver, the fairness, the receiver's drops.
func (r *Result) writeIncast(b *strings.Builder) {
	in := r.Incast
	fmt.Fprintf(b, "fleet: %d hosts, incast to %s: %s at once, each %gs with %s (%.0f s)\n",
		len(r.Hosts), in.Receiver, count(len(in.Senders), "sender"), r.DurationS, count(r.Streams, "stream"), r.WallS)
	w := len("sender")
	for _, s := range in.Senders {
		w = max(w, len(s.Name))
	}
	fmt.Fprintf(b, "  %-*s  %10s  %10s  %11s\n", w, "sender", "Gbit/s", "fair share", "retransmits")
	for _, s := range in.Senders {
		if s.Gbps == nil {
			fmt.Fprintf(b, "  %-*s  failed: %s\n", w, s.Name, s.Error)
			continue
		}
		share, re, mark := "—", "—", ""
		if s.FairPct != nil {
			share = fmt.Sprintf("%.0f%%", *s.FairPct)
		}
		if s.Retransmits != nil {
			re = fmt.Sprint(*s.Retransmits)
		}
		if s.Short {
			mark = "  short"
		}
		if s.Contention != "" {
			mark += "  (contended: " + s.Contention + ")"
		}
		fmt.Fprintf(b, "  %-*s  %10s  %10s  %11s%s\n", w, s.Name, gbpsText(*s.Gbps), share, re, mark)
	}
	if in.SumGbps != nil {
		fmt.Fprintf(b, "  %-*s  %10s", w, "sum", gbpsText(*in.SumGbps))
		if in.Retransmits != nil {
			fmt.Fprintf(b, "  %10s  %11d", "", *in.Retransmits)
		}
		b.WriteString("\n")
		fmt.Fprintf(b, "fair share %s Gbit/s each", gbpsText(*in.FairShareGbps))
		if in.JainIndex != nil {
			fmt.Fprintf(b, "; Jain's fairness index %.3f (1: even)", *in.JainIndex)
		}
		fmt.Fprintf(b, "; short below %g%% of the fair share\n", in.ShortBelowPct)
	}
	fmt.Fprintf(b, "receiver %s: %s\n", in.Receiver, in.DropsText())
	fmt.Fprintf(b, "verdict: %s\n", r.Verdict)
}

// writeRetest writes a re-test's line: its first try, the re-tests and,
// where controls set them, the limits each was judged against — in
// Gbit/s, or in µs for a latency run.
func (r *Result) writeRetest(b *strings.Builder, t Retest) {
	first, tries, limits, unit, side, text := t.FirstGbps, t.RetestsGbps, t.SlowBelowGbps, "Gbit/s", "below", gbpsText
	if t.FirstUs != nil {
		first, tries, limits, unit, side, text = *t.FirstUs, t.RetestsUs, t.SlowAboveUs, "µs", "above", usText
	}
	var rs []string
	for i, v := range tries {
		rs = append(rs, text(v)+r.onceMark(t.AtOnce, i+1))
	}
	against := ""
	if len(limits) > 1 {
		var ls []string
		for _, l := range limits[1:] {
			ls = append(ls, text(l))
		}
		against = " (slow " + side + " " + strings.Join(ls, ", ") + " " + unit + ": a control test ran just before each)"
	}
	fmt.Fprintf(b, "  %s→%s  %s%s, then %s %s%s: %s\n", t.From, t.To, text(first), r.onceMark(t.AtOnce, 0),
		strings.Join(rs, ", "), unit, against, retestText(t))
}

// orNone joins names, or says "none".
func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}
