package bench

import (
	"fmt"
	"io"

	"github.com/linerate/linerate/internal/explain"
	"github.com/linerate/linerate/internal/latency"
	"github.com/linerate/linerate/internal/result"
)

// writeProbeEnd prints the end of a latency or UDP run of st: the
// round-trip percentiles as a sockperf user reads them, or iperf3 -u's
// summary line.
func writeProbeEnd(w io.Writer, st *result.Start, e *result.End) {
	fmt.Fprintln(w, "- - - - - - - - - - - - - - - - - - - - - - - - -")
	if l := e.Latency; l != nil {
		fmt.Fprintf(w, "Round trips over %s, %d-byte messages: %d in %s (%.0f/s", l.Protocol, l.Size, l.Samples, measuredOf(e.Seconds, st.DurationS), l.RatePerSecond)
		if l.TargetRate > 0 {
			fmt.Fprintf(w, " of %g/s asked", l.TargetRate)
		}
		fmt.Fprintf(w, "), %d dropped, %d out of order\n", l.Dropped, l.OutOfOrder)
		fmt.Fprintf(w, "RTT µs: min %s  p25 %s  p50 %s  p90 %s  p99 %s  p99.9 %s  p99.99 %s  max %s  mean %s  stdev %s\n",
			us(l.RTTUs.Min), us(l.RTTUs.P25), us(l.RTTUs.P50), us(l.RTTUs.P90), us(l.RTTUs.P99), us(l.RTTUs.P999), us(l.RTTUs.P9999),
			us(l.RTTUs.Max), us(l.RTTUs.Mean), us(l.RTTUs.Stdev))
		if l.GCCycles > 0 || l.GCTouched > 0 { // the native engine's own collector; a tool has none
			fmt.Fprintf(w, "GC: %d collections, %d samples touched\n", l.GCCycles, l.GCTouched)
		}
		for _, n := range l.Notes {
			fmt.Fprintf(w, "Note: %s\n", n)
		}
	}
	if u := e.UDP; u != nil {
		fmt.Fprintf(w, "[SUM] %s  %s  %d datagrams of %d bytes (%.0f/s, %s)  sender\n", span(0, e.Seconds), rate(u.Bytes, u.BitsPerSecond),
			u.Packets, u.Length, u.PacketsPerSecond, u.Method)
		fmt.Fprintf(w, "[SUM] %s  %s  jitter %.3f ms  lost %d/%d (%.2g%%)  receiver\n", span(0, e.Seconds),
			rate(e.SumReceived.Bytes, u.ReceivedBitsPerSecond), u.JitterMS, u.LostPackets, u.Packets, u.LostPercent)
		if u.ArrivalClock == result.ArrivalKernel {
			fmt.Fprintln(w, "Note: jitter (RFC 3550) from each datagram's kernel receive timestamp and its scheduled send time: the path's, without the receiving process's scheduling, which iperf3 -u's jitter (arrival = when it read) counts in — expect iperf3's to be higher on the same path")
		}
	}
	fmt.Fprintf(w, "CPU time: client %s, server %s\n", cpuSeconds(e.CPU.ClientSeconds), cpuSeconds(e.CPU.ServerSeconds))
	if l := explain.NICLine(e.NICCounters); l != "" {
		fmt.Fprintln(w, l)
	}
	for _, err := range e.Errors {
		// The run finished and counts: what went wrong in it is a
		// warning (exit 0), not an error.
		fmt.Fprintf(w, "Warning: %s\n", err)
	}
}

// measuredOf is a run's measured seconds, saying of how many asked
// when it measured less ("2.55 s of the 3 s asked"): a tool that ended
// early, or one whose window is shorter than its -t.
func measuredOf(measured, asked float64) string {
	if asked > 0 && measured < asked-0.005 {
		return fmt.Sprintf("%.2f s of the %g s asked", measured, asked)
	}
	return fmt.Sprintf("%.2f s", measured)
}

// cpuSeconds is a process's CPU time, "unknown" when none was measured:
// a process that ran used some, so 0 is a figure nobody read.
func cpuSeconds(s float64) string {
	if s <= 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.2f s", s)
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

// WriteToolProbe prints the end of a tool's latency or UDP run (sockperf,
// iperf3 -u: they report at their end) as the native engine's live output
// does, after where its ends ran and the run's notes, which the native
// engine prints at its start.
func WriteToolProbe(w io.Writer, r *result.Result) {
	fmt.Fprintf(w, "%s: placement: %s\n", r.Engine, pinnedText(r.Start.Placement))
	for _, n := range r.Start.Notes {
		fmt.Fprintf(w, "Note: %s\n", n)
	}
	writeProbeEnd(w, &r.Start, &r.End)
}

// pinnedText is where a run's ends ran: "not pinned (scheduler)" when
// neither end was pinned, else each end's CPUs ("any" for an end left to
// the scheduler).
func pinnedText(p result.Placement) string {
	if len(p.Client) == 0 && len(p.Server) == 0 {
		return "not pinned (scheduler)"
	}
	return fmt.Sprintf("client CPU %s, server CPU %s", cpuList(p.Client), cpuList(p.Server))
}
