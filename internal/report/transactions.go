package report

import (
	"fmt"
	"strconv"
)

// transactionsSection reports the transaction runs (bench --rr, --crr):
// transactions per second, latency per transaction and each end's CPU
// per transaction, a row per run.
func (b *builder) transactionsSection() (*section, error) {
	const id, title = "transactions", "Transactions"
	var runs []*Run
	for i := range b.ds.Runs {
		if r := &b.ds.Runs[i]; r.Result.End.Transactions != nil {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return omitted(id, title, "Transactions: no rr or crr run in the data (linerate bench PEER --rr --flows 10 --threads 2, or --crr)."), nil
	}
	s := &section{ID: id, Title: title}
	s.addText("Request/response transactions as fast as they go, as neper's tcp_rr and tcp_crr make them: F flows multiplexed on T threads per end (epoll), each flow keeping its requests outstanding; crr makes a new connection for every transaction, so its rate is a connection rate. A transaction's latency is timed on the client from the request's write (crr: the connect) to the response's last byte. CPU per transaction is each end's CPU time over the measured window divided by the transactions: it says what a transaction costs the host, whatever the load let the rate be.")
	s.addTable(transactionsTable(runs))
	for _, r := range runs {
		t := r.Result.End.Transactions
		if len(t.Notes) > 0 || t.ConnectErrors > 0 || len(r.Result.End.Errors) > 0 {
			s.addText("Run %s: %s", runName(r), transactionsNotes(r))
		}
	}
	return s, nil
}

// transactionsTable has a row per transaction run.
func transactionsTable(runs []*Run) *table {
	t := &table{ID: "transactions-table", Caption: "Transactions: rate, latency per transaction (µs) and CPU per transaction (µs)",
		Head: []string{"Run", "Mode", "Flows on threads", "Size, depth", "CPUs client → server", "Transactions", "Per second", "p50", "p99", "p99.9", "Max", "CPU client", "CPU server"},
		Num:  []bool{false, false, false, false, false, true, true, true, true, true, true, true, true}}
	for _, r := range runs {
		x := r.Result.End.Transactions
		u := x.RTTUs
		t.Rows = append(t.Rows, []string{runName(r), string(x.Mode), fmt.Sprintf("%d on %d", x.Flows, x.Threads),
			fmt.Sprintf("%d B, %d", x.Size, max(x.Depth, 1)), placementText(r.Result.Start.Placement),
			strconv.FormatUint(x.Count, 10), strconv.FormatFloat(x.PerSecond, 'f', 0, 64),
			usText(u.P50), usText(u.P99), usText(u.P999), usText(u.Max),
			cpuPerText(x.CPUUsPerTransaction.Client), cpuPerText(x.CPUUsPerTransaction.Server)})
	}
	return t
}

// cpuPerText writes a CPU time per transaction, "–" when unknown.
func cpuPerText(v float64) string {
	if v <= 0 {
		return "–"
	}
	return usText(&v)
}

// transactionsNotes says what may have disturbed a transaction run.
func transactionsNotes(r *Run) string {
	x := r.Result.End.Transactions
	out := ""
	if x.ConnectErrors > 0 {
		out += fmt.Sprintf("%d connections failed and were made again. ", x.ConnectErrors)
	}
	for _, n := range x.Notes {
		out += n + ". "
	}
	for _, e := range r.Result.End.Errors {
		out += e + ". "
	}
	return out
}

// isTransactions reports whether a campaign made transactions (bench
// --rr/--crr): its figures are then transactions per second.
func isTransactions(c *Campaign) bool {
	return len(c.Points) > 0 && c.Points[0].Transactions != nil
}

// transactionsPointsTable has one row per point of a transaction
// campaign: the medians across its runs.
func transactionsPointsTable(ci int, c *Campaign) *table {
	t := &table{ID: fmt.Sprintf("points-c%d", ci+1), Caption: campaignName(ci, c) + ": transactions per point (medians of the runs, min–max across runs)",
		Head: []string{"Mode", "Flows on threads", "Placement", "Runs", "Per second", "Min–max", "p50 µs", "p99 µs", "CPU µs per transaction, client / server"},
		Num:  []bool{false, false, false, true, true, true, true, true, true}}
	for _, p := range c.Points {
		x := p.Transactions
		if x == nil {
			continue
		}
		class := ""
		if c.Best != nil && c.Best.Streams == p.Streams && c.Best.Placement == p.Placement {
			class = "best"
		}
		t.Rows = append(t.Rows, []string{string(x.Mode), fmt.Sprintf("%d on %d", x.Flows, x.Threads), orDash(p.Placement), strconv.Itoa(x.Runs),
			strconv.FormatFloat(x.MedianPerSecond, 'f', 0, 64),
			strconv.FormatFloat(x.MinPerSecond, 'f', 0, 64) + "–" + strconv.FormatFloat(x.MaxPerSecond, 'f', 0, 64),
			usText(x.MedianP50Us), usText(x.MedianP99Us), usText(x.CPUUsPerTransaction.Client) + " / " + usText(x.CPUUsPerTransaction.Server)})
		t.Classes = append(t.Classes, class)
	}
	return t
}

// bestTransactions is the point of most transactions per second (the
// first on a tie), as bench picks it.
func bestTransactions(points []Point) *Best {
	best := -1
	for i, p := range points {
		if p.Transactions != nil && (best < 0 || p.Transactions.MedianPerSecond > points[best].Transactions.MedianPerSecond) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	p := points[best]
	v := p.Transactions.MedianPerSecond
	return &Best{Streams: p.Streams, Placement: p.Placement, MedianGbps: p.MedianGbps, MedianPerSecond: &v}
}

// transactionsVerdict is the verdict of a data set that measured
// transactions and no throughput: the most transactions per second of a
// transaction campaign's point, else of a run; "" when there is neither.
func (b *builder) transactionsVerdict() string {
	var best *Best
	var where string
	for ci := range b.ds.Campaigns {
		c := &b.ds.Campaigns[ci]
		if bc := c.Best; bc != nil && bc.MedianPerSecond != nil && (best == nil || *bc.MedianPerSecond > *best.MedianPerSecond) {
			best, where = bc, campaignName(ci, c)
		}
	}
	if best != nil {
		return fmt.Sprintf("Transactions, not throughput, were measured: the most is a median of %.0f per second, %d flows, placement %s of %s (see Transactions).",
			*best.MedianPerSecond, best.Streams, orDash(best.Placement), where)
	}
	var run *Run
	for i := range b.ds.Runs {
		r := &b.ds.Runs[i]
		if x := r.Result.End.Transactions; x != nil && (run == nil || x.PerSecond > run.Result.End.Transactions.PerSecond) {
			run = r
		}
	}
	if run == nil {
		return ""
	}
	x := run.Result.End.Transactions
	return fmt.Sprintf("Transactions, not throughput, were measured: the most is %.0f per second (%s, %d flows on %d threads, p50 %s µs), run %s (see Transactions).",
		x.PerSecond, x.Mode, x.Flows, x.Threads, usText(x.RTTUs.P50), runName(run))
}
