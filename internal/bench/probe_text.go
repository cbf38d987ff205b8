package bench

import (
	"fmt"
	"io"

	"github.com/linerate/linerate/internal/explain"
	"github.com/linerate/linerate/internal/latency"
	"github.com/linerate/linerate/internal/result"
)

// writeProbeEnd prints the end of a latency or UDP run: the round-trip
// percentiles as a sockperf user reads them, or iperf3 -u's summary line.
func writeProbeEnd(w io.Writer, e *result.End) {
	fmt.Fprintln(w, "- - - - - - - - - - - - - - - - - - - - - - - - -")
	if l := e.Latency; l != nil {
		fmt.Fprintf(w, "Round trips over %s, %d-byte messages: %d in %.2f s (%.0f/s", l.Protocol, l.Size, l.Samples, e.Seconds, l.RatePerSecond)
		if l.TargetRate > 0 {
			fmt.Fprintf(w, " of %g/s asked", l.TargetRate)
		}
		fmt.Fprintf(w, "), %d dropped, %d out of order\n", l.Dropped, l.OutOfOrder)
		fmt.Fprintf(w, "RTT µs: min %s  p25 %s  p50 %s  p90 %s  p99 %s  p99.9 %s  p99.99 %s  max %s  mean %s  stdev %s\n",
			us(l.RTTUs.Min), us(l.RTTUs.P25), us(l.RTTUs.P50), us(l.RTTUs.P90), us(l.RTTUs.P99), us(l.RTTUs.P999), us(l.RTTUs.P9999),
			us(l.RTTUs.Max), us(l.RTTUs.Mean), us(l.RTTUs.Stdev))
		fmt.Fprintf(w, "GC: %d collections, %d samples touched\n", l.GCCycles, l.GCTouched)
		for _, n := range l.Notes {
			fmt.Fprintf(w, "Note: %s\n", n)
		}
	}
	if u := e.UDP; u != nil {
		fmt.Fprintf(w, "[SUM] %s  %s  %d datagrams of %d bytes (%.0f/s, %s)  sender\n", span(0, e.Seconds), rate(u.Bytes, u.BitsPerSecond),
			u.Packets, u.Length, u.PacketsPerSecond, u.Method)
		fmt.Fprintf(w, "[SUM] %s  %s  jitter %.3f ms  lost %d/%d (%.2g%%)  receiver\n", span(0, e.Seconds),
			rate(e.SumReceived.Bytes, u.ReceivedBitsPerSecond), u.JitterMS, u.LostPackets, u.Packets, u.LostPercent)
	}
	fmt.Fprintf(w, "CPU time: client %.2f s, server %.2f s\n", e.CPU.ClientSeconds, e.CPU.ServerSeconds)
	if l := explain.NICLine(e.NICCounters); l != "" {
		fmt.Fprintln(w, l)
	}
	for _, err := range e.Errors {
		// The run finished and counts: what went wrong in it is a
		// warning (exit 0), not an error.
		fmt.Fprintf(w, "Warning: %s\n", err)
	}
}

// us prints a round trip in µs, "-" when unknown.
func us(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *v)
}

// LatencyLevels are the rows of a latency table: each percentile with
// its value in a summary, min and max around them.
func LatencyLevels(r latency.RTT) [][2]any {
	rows := [][2]any{{"min", r.Min}}
	for _, p := range latency.Percentiles {
		rows = append(rows, [2]any{p.Name, p.Get(&r)})
	}
	return append(rows, [2]any{"max", r.Max})
}

// WriteProbeEnd prints a latency or UDP run's end as the native engine's
// live output does (for the sockperf driver, which reports at the end).
func WriteProbeEnd(w io.Writer, e *result.End) { writeProbeEnd(w, e) }
