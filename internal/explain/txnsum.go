package explain

import (
	"fmt"
	"slices"
	"strings"

	"github.com/linerate/linerate/internal/result"
)

// TransactionsPoint is a transaction point's figures across its runs
// (points[].transactions of the summary, bench --rr/--crr): transactions
// per second (median, min, max, the median's 95% interval), the medians
// of each run's p50 and p99 latency per transaction, and of each end's
// CPU per transaction.
type TransactionsPoint struct {
	Mode    result.Mode `json:"mode"`
	Flows   int         `json:"flows"`
	Threads int         `json:"threads"`
	Size    int         `json:"size"`
	Depth   int         `json:"depth"`
	// Runs is how many runs completed a transaction (the others are
	// left out of every figure here).
	Runs            int         `json:"runs"`
	MedianPerSecond float64     `json:"median_per_second"`
	MinPerSecond    float64     `json:"min_per_second"`
	MaxPerSecond    float64     `json:"max_per_second"`
	CI95PerSecond   *[2]float64 `json:"ci95_per_second"`
	MedianP50Us     *float64    `json:"median_p50_us"`
	MedianP99Us     *float64    `json:"median_p99_us"`
	// CPUUsPerTransaction is the median over runs of each end's CPU time
	// per transaction, µs.
	CPUUsPerTransaction CPUCost `json:"cpu_us_per_transaction"`
}

// SummarizeTransactions is the transaction figures of a point made of
// outs; nil when no run of it is a transaction run.
func SummarizeTransactions(outs []Outcome) *TransactionsPoint {
	var tp *TransactionsPoint
	var rates, p50s, p99s, cc, cs []float64
	for _, o := range outs {
		t := o.Run.End.Transactions
		if t == nil {
			continue
		}
		if tp == nil {
			tp = &TransactionsPoint{Mode: t.Mode, Flows: t.Flows, Threads: t.Threads, Size: t.Size, Depth: t.Depth}
		}
		if t.Count == 0 {
			continue
		}
		tp.Runs++
		rates = append(rates, t.PerSecond)
		if t.RTTUs.P50 != nil {
			p50s = append(p50s, *t.RTTUs.P50)
		}
		if t.RTTUs.P99 != nil {
			p99s = append(p99s, *t.RTTUs.P99)
		}
		if t.CPUUsPerTransaction.Client > 0 {
			cc = append(cc, t.CPUUsPerTransaction.Client)
		}
		if t.CPUUsPerTransaction.Server > 0 {
			cs = append(cs, t.CPUUsPerTransaction.Server)
		}
	}
	if tp == nil || len(rates) == 0 {
		return tp
	}
	tp.MedianPerSecond, tp.MinPerSecond, tp.MaxPerSecond = round3(Median(rates)), round3(slices.Min(rates)), round3(slices.Max(rates))
	if ci := medianCI(rates); ci.OK() {
		tp.CI95PerSecond = &[2]float64{round3(ci.Lo), round3(ci.Hi)}
	}
	tp.MedianP50Us, tp.MedianP99Us = medianOf(p50s), medianOf(p99s)
	tp.CPUUsPerTransaction = CPUCost{Client: medianOf(cc), Server: medianOf(cs)}
	return tp
}

// medianOf is the median of vs rounded to 3 places, nil when empty.
func medianOf(vs []float64) *float64 {
	if len(vs) == 0 {
		return nil
	}
	m := round3(Median(vs))
	return &m
}

// transactionsSentence says what a transaction point measured, as a
// campaign's explanation lists it.
func transactionsSentence(ps *PointSummary) string {
	t := ps.Transactions
	if t.Runs == 0 {
		return fmt.Sprintf("%s, %d flows, placement %s: no run completed a transaction.", t.Mode, t.Flows, ps.Placement)
	}
	return fmt.Sprintf("%s, %d flow%s on %d thread%s, placement %s: median %.0f transactions/s over %d run%s (%.0f to %.0f), p50 %s µs, p99 %s µs per transaction, CPU per transaction %s µs client, %s µs server.",
		t.Mode, t.Flows, plural(t.Flows), t.Threads, plural(t.Threads), ps.Placement, t.MedianPerSecond, t.Runs, plural(t.Runs),
		t.MinPerSecond, t.MaxPerSecond, optFloat(t.MedianP50Us), optFloat(t.MedianP99Us),
		optFloat(t.CPUUsPerTransaction.Client), optFloat(t.CPUUsPerTransaction.Server))
}

// isTransactionsSummary reports whether a summary is a transaction
// campaign's (bench --rr/--crr).
func isTransactionsSummary(s *Summary) bool {
	return len(s.Points) > 0 && s.Points[0].Transactions != nil
}

// writeTransactionsSummary writes a transaction campaign's table: a line
// per point in transactions per second and µs.
func writeTransactionsSummary(b *strings.Builder, s *Summary) {
	fmt.Fprintf(b, "%-6s %-5s %-7s %-10s %5s %11s %11s %11s  %-23s %8s %8s  %s\n", "mode", "flows", "threads", "placement", "runs",
		"median/s", "min/s", "max/s", "95% CI (/s)", "p50 µs", "p99 µs", "CPU µs/transaction (client/server)")
	for _, p := range s.Points {
		t := p.Transactions
		ci := "none (6 runs give one)"
		if t.CI95PerSecond != nil {
			ci = fmt.Sprintf("%.0f-%.0f", t.CI95PerSecond[0], t.CI95PerSecond[1])
		}
		fmt.Fprintf(b, "%-6s %-5d %-7d %-10s %5d %11.0f %11.0f %11.0f  %-23s %8s %8s  %s/%s\n", t.Mode, t.Flows, t.Threads, p.Placement, t.Runs,
			t.MedianPerSecond, t.MinPerSecond, t.MaxPerSecond, ci, optFloat(t.MedianP50Us), optFloat(t.MedianP99Us),
			optFloat(t.CPUUsPerTransaction.Client), optFloat(t.CPUUsPerTransaction.Server))
	}
}
