package bench

import (
	"fmt"
	"io"
	"strings"

	"github.com/linerate/linerate/internal/explain"
	"github.com/linerate/linerate/internal/result"
)

// writeTxnStart writes a transaction run's header: its shape (mode,
// flows on threads, request size, depth), where its threads ran, and the
// interval columns.
func writeTxnStart(w io.Writer, s *result.Start) {
	warm := ""
	if s.OmitS > 0 {
		warm = fmt.Sprintf(" after a %g s warm-up", s.OmitS)
	}
	fmt.Fprintf(w, "Connected to %s port %d: %s, %g s%s\n", s.Peer, s.Port, txnShape(s.Mode, s.Streams, s.Threads, s.Size, s.Depth), s.DurationS, warm)
	fmt.Fprintf(w, "Placement (%s): client CPU %s, server CPU %s\n", s.Placement.Source, cpuList(s.Placement.Client), cpuList(s.Placement.Server))
	for _, n := range s.Notes {
		fmt.Fprintf(w, "Note: %s\n", n)
	}
	fmt.Fprint(w, sharedCPUsNote(s))
	fmt.Fprintln(w, "[ ID] Interval           Transactions   per second   p50 µs   p99 µs")
}

// txnShape says what a transaction test is: "rr: 10 flows on 2 threads,
// 1-byte requests and responses, 1 outstanding per flow".
func txnShape(mode result.Mode, flows, threads, size, depth int) string {
	return fmt.Sprintf("%s: %d flow%s on %d thread%s, %d-byte requests and responses, %d outstanding per flow",
		mode, flows, plural(flows), threads, plural(threads), size, max(depth, 1))
}

// writeTxnInterval writes a transaction run's interval: the transactions
// the client completed, their rate, p50 and p99.
func writeTxnInterval(w io.Writer, iv *result.Interval, st *result.Start, verbose bool) {
	var n uint64
	var perS float64
	var p50, p99 *float64
	if t := iv.Transactions; t != nil {
		n, perS, p50, p99 = t.Count, t.PerSecond, t.RTTUs.P50, t.RTTUs.P99
	}
	if verbose {
		for _, s := range iv.Streams {
			fmt.Fprintf(w, "[%3d] %s  %12d%s\n", s.ID, span(iv.Start, iv.End), s.Transactions, omittedMark(iv))
		}
	}
	writeSum(w, iv, st, fmt.Sprintf("%12d  %9.0f/s  %7s  %7s", n, perS, us(p50), us(p99)), verbose)
}

// writeTxnEnd writes a transaction run's totals: transactions per
// second, latency per transaction, and each end's CPU per transaction.
func writeTxnEnd(w io.Writer, e *result.End) {
	t := e.Transactions
	fmt.Fprintln(w, "- - - - - - - - - - - - - - - - - - - - - - - - -")
	fmt.Fprintf(w, "[SUM] %s  %d transactions  %.0f/s  (%s; the server answered %d)\n", span(0, e.Seconds), t.Count, t.PerSecond,
		txnShape(t.Mode, t.Flows, t.Threads, t.Size, t.Depth), t.ServerCount)
	r := t.RTTUs
	fmt.Fprintf(w, "Latency per transaction µs: min %s  p25 %s  p50 %s  p90 %s  p99 %s  p99.9 %s  p99.99 %s  max %s  mean %s  stdev %s\n",
		us(r.Min), us(r.P25), us(r.P50), us(r.P90), us(r.P99), us(r.P999), us(r.P9999), us(r.Max), us(r.Mean), us(r.Stdev))
	fmt.Fprintf(w, "CPU per transaction: client %.2f µs, server %.2f µs (CPU time: client %.2f s, server %.2f s)\n",
		t.CPUUsPerTransaction.Client, t.CPUUsPerTransaction.Server, e.CPU.ClientSeconds, e.CPU.ServerSeconds)
	if t.ConnectErrors > 0 {
		fmt.Fprintf(w, "Connections that failed and were made again: %d\n", t.ConnectErrors)
	}
	for _, n := range t.Notes {
		fmt.Fprintf(w, "Note: %s\n", n)
	}
	if l := explain.NICLine(e.NICCounters); l != "" {
		fmt.Fprintln(w, l)
	}
	for _, err := range e.Errors {
		fmt.Fprintf(w, "Error: %s\n", err)
	}
}

// writeFlowsLine says, for a stream run whose streams share threads,
// how many threads carried them.
func writeFlowsLine(w io.Writer, s *result.Start) {
	if s.Mode == result.Stream && s.Threads > 0 && s.Threads < s.Streams {
		fmt.Fprintf(w, "Threads: %d streams on %d thread%s per end (epoll)\n", s.Streams, s.Threads, plural(s.Threads))
	}
}

// RxCopyLine says how the receivers took their data when asked not to
// copy it, and what receiving cost their threads; "" when the run has
// no end.rx_copy or copied as usual without being asked otherwise.
func RxCopyLine(rc *result.RxCopyReport) string {
	if rc == nil || rc.Asked == result.RxCopy && rc.ReceiverCPUSecondsPerGB == 0 {
		return ""
	}
	var b strings.Builder
	switch {
	case rc.Asked == result.RxCopy:
		b.WriteString("Receive: copied")
	case rc.Method == rc.Asked:
		fmt.Fprintf(&b, "Receive: without copying (%s)", rc.Method)
	case rc.Method == result.RxCopy:
		fmt.Fprintf(&b, "Receive: %s asked, but the receivers copied", rc.Asked)
	default:
		fmt.Fprintf(&b, "Receive: %s asked, %s done", rc.Asked, rc.Method)
	}
	if rc.Note != "" {
		fmt.Fprintf(&b, " (%s)", rc.Note)
	}
	if rc.MappedBytes+rc.CopiedBytes > 0 {
		fmt.Fprintf(&b, "; %s mapped, %s copied", strings.TrimSpace(bytesText(rc.MappedBytes)), strings.TrimSpace(bytesText(rc.CopiedBytes)))
	}
	fmt.Fprintf(&b, "; receiving threads' CPU %.2f s, %.3f s per GB", rc.ReceiverThreadCPUSeconds, rc.ReceiverCPUSecondsPerGB)
	return b.String()
}

// TxnIntervalLine writes one interval of a transaction run for a
// campaign's progress: time, transactions per second and in all, p50 and
// p99, and the busiest CPUs of each end.
func TxnIntervalLine(iv result.Interval) string {
	var b strings.Builder
	if t := iv.Transactions; t != nil {
		fmt.Fprintf(&b, "  %6.2f-%-6.2f s  %9.0f transactions/s  (%d)  p50 %s µs  p99 %s µs", iv.Start, iv.End, t.PerSecond, t.Count, us(t.RTTUs.P50), us(t.RTTUs.P99))
	} else {
		fmt.Fprintf(&b, "  %6.2f-%-6.2f s  no transactions", iv.Start, iv.End)
	}
	writeIntervalTail(&b, iv)
	return b.String()
}

// txnDone is a transaction run's result in a line.
func txnDone(t *result.Transactions) string {
	return fmt.Sprintf("%.0f transactions/s (%s), p50 %s µs, p99 %s µs; CPU per transaction client %.2f µs, server %.2f µs",
		t.PerSecond, t.Mode, us(t.RTTUs.P50), us(t.RTTUs.P99), t.CPUUsPerTransaction.Client, t.CPUUsPerTransaction.Server)
}
