package c2c

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/linerate/linerate/internal/cpulist"
)

// maxTextCPUs is the widest matrix the text output prints; wider ones are
// in the JSON (and the report's heatmap).
const maxTextCPUs = 48

// WriteText prints the result for a person: the lower half of the matrix
// (it is symmetric) in whole ns, the clusters, and the verdict.
func WriteText(w io.Writer, r *Result) error {
	var b strings.Builder
	model := ""
	if r.CPUModel != "" {
		model = " (" + r.CPUModel + ")"
	}
	fmt.Fprintf(&b, "core-to-core latency on %s%s: one way, ns, median of %d samples of %d round trips per pair\n",
		r.Host, model, r.Samples, r.RoundTrips)
	if len(r.CPUs) <= maxTextCPUs {
		b.WriteString("\n")
		writeMatrix(&b, r)
		b.WriteString("\n")
	} else {
		fmt.Fprintf(&b, "(%d CPUs: too wide to print; --json has the matrix, 'linerate report' draws it)\n", len(r.CPUs))
	}
	switch lo, hi, ok := extremes(r); {
	case ok && r.Pairs > 1:
		fmt.Fprintf(&b, "fastest pair %s, slowest %s; %d pairs in %s\n", lo, hi, r.Pairs, seconds(r.DurationS))
	case ok:
		fmt.Fprintf(&b, "1 pair (%s; fastest sample %s) in %s\n", lo, ns(*r.MinNs[1][0]), seconds(r.DurationS))
	}
	groups := make([]string, len(r.Clusters))
	for i, g := range r.Clusters {
		groups[i] = cpulist.Format(g)
	}
	fmt.Fprintf(&b, "clusters: %s", strings.Join(groups, " | "))
	if r.ThresholdNs != nil {
		fmt.Fprintf(&b, " (pairs under %s are inside)", ns(*r.ThresholdNs))
	}
	b.WriteString("\n")
	b.WriteString(r.Verdict + "\n")
	for _, n := range r.Notes {
		b.WriteString("note: " + n + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeMatrix prints the lower triangle, "·" where a pair was not
// measured.
func writeMatrix(b *strings.Builder, r *Result) {
	width := 4
	for _, row := range r.MatrixNs {
		for _, v := range row {
			if v != nil {
				width = max(width, len(fmt.Sprintf("%.0f", *v))+1)
			}
		}
	}
	fmt.Fprintf(b, "%5s", "")
	for _, c := range r.CPUs {
		fmt.Fprintf(b, "%*d", width, c)
	}
	b.WriteString("\n")
	for i, c := range r.CPUs {
		fmt.Fprintf(b, "%5d", c)
		for j := 0; j < i; j++ {
			if v := r.MatrixNs[i][j]; v != nil {
				fmt.Fprintf(b, "%*.0f", width, *v)
			} else {
				fmt.Fprintf(b, "%*s", width, "·")
			}
		}
		fmt.Fprintf(b, "%*s\n", width, "-")
	}
}

// extremes names the fastest and slowest measured pairs with their times.
func extremes(r *Result) (lo, hi string, ok bool) {
	best, worst := math.Inf(1), math.Inf(-1)
	for i := range r.CPUs {
		for j := 0; j < i; j++ {
			v := r.MatrixNs[i][j]
			if v == nil {
				continue
			}
			pair := fmt.Sprintf("%d↔%d %s", r.CPUs[j], r.CPUs[i], ns(*v))
			if *v < best {
				best, lo = *v, pair
			}
			if *v > worst {
				worst, hi = *v, pair
			}
		}
	}
	return lo, hi, !math.IsInf(best, 1)
}

// seconds shows a duration with two decimals under a second.
func seconds(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.2f s", s)
	}
	return fmt.Sprintf("%.1f s", s)
}
