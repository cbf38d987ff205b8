package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/explain"
	"github.com/linerate/linerate/internal/result"
)

// TextProgress returns a run's Progress callback (agent.Config.Progress)
// that writes the run as iperf3 does: a header, a line per interval ("[SUM] 0.00-1.00 sec 1.16 GBytes
// 9.93 Gbits/sec 0 retr", with the busiest CPU of each end), a line per
// stream too when verbose, and the totals. Units are iperf3's: bytes in
// powers of 1024, bits per second in powers of 1000.
func TextProgress(w io.Writer, verbose bool) func(result.Event) {
	return ProbeTextProgress(w, verbose, nil)
}

// ProbeTextProgress is TextProgress for a run of probe (nil: TCP
// streams): a ping-pong's interval lines count round trips ("[SUM]
// 0.00-1.00 sec  41234 round trips  41234/s"), without the bytes and
// retransmits that mean nothing for it; a UDP run's count datagrams
// instead of retransmits.
func ProbeTextProgress(w io.Writer, verbose bool, probe *agent.ProbeTest) func(result.Event) {
	var st result.Start // the pinned CPUs and the protocol, for the interval lines
	size := 0           // a ping-pong's message bytes
	if probe != nil && probe.Kind == agent.ProbePingPong {
		size = max(probe.Size, 1)
	}
	return func(e result.Event) {
		switch d := e.Data.(type) {
		case *result.Start:
			st = *d
			if d.Mode != result.Stream {
				writeTxnStart(w, d)
				return
			}
			writeStart(w, d, size > 0)
		case *result.Interval:
			if st.Mode != result.Stream {
				writeTxnInterval(w, d, &st, verbose)
				return
			}
			if size > 0 {
				writePingPongInterval(w, d, &st, size, verbose)
				return
			}
			if st.Protocol == result.UDP { // as writeStart's header
				writeUDPInterval(w, d, &st, verbose)
				return
			}
			writeInterval(w, d, &st, verbose)
		case *result.End:
			if d.Transactions != nil {
				writeTxnEnd(w, d)
			} else {
				writeEnd(w, &st, d)
			}
			if l := RxCopyLine(d.RxCopy); l != "" {
				fmt.Fprintln(w, l)
			}
			writeOtherLoad(w, &result.Result{Start: st, End: *d})
		}
	}
}

// writeOtherLoad says what other work kept the run's CPUs busy, and
// which telemetry is unknown.
func writeOtherLoad(w io.Writer, r *result.Result) {
	for _, l := range explain.OtherLoad(r) {
		fmt.Fprintf(w, "Other load: %s.\n", l)
	}
	for _, n := range r.End.Foreign.Notes {
		fmt.Fprintf(w, "Note: %s\n", n)
	}
	for _, end := range []struct {
		name   string
		unread map[string]string
	}{{"client", r.End.Unread.Client}, {"server", r.End.Unread.Server}} {
		for _, src := range slices.Sorted(maps.Keys(end.unread)) {
			fmt.Fprintf(w, "Note: %s telemetry: /%s could not be read (%s): what it measures is unknown for this run, not zero\n", end.name, src, end.unread[src])
		}
	}
}

// JSONStreamProgress returns a run's Progress callback that writes each event
// as one JSON object per line, as iperf3 --json-stream does, but the
// end: the engine's end comes before the campaign's analysis (the gap,
// fairness), so the caller writes the end event from the finished run.
func JSONStreamProgress(w io.Writer) func(result.Event) {
	enc := json.NewEncoder(w)
	return func(e result.Event) {
		if e.Event != "end" {
			_ = enc.Encode(e) // a closed stdout ends the run anyway
		}
	}
}

func writeStart(w io.Writer, s *result.Start, pingPong bool) {
	warm := ""
	if s.OmitS > 0 {
		warm = fmt.Sprintf(" after a %g s warm-up", s.OmitS)
	}
	fmt.Fprintf(w, "Connected to %s port %d: %d stream%s, %s, %g s%s\n", s.Peer, s.Port, s.Streams, plural(s.Streams), s.Direction, s.DurationS, warm)
	fmt.Fprintf(w, "Placement (%s): %s\n", s.Placement.Source, pinnedText(s.Placement))
	if !pingPong { // one message at a time: the buffers never fill
		writeWindow(w, s)
	}
	for _, n := range s.Notes {
		fmt.Fprintf(w, "Note: %s\n", n)
	}
	writeFlowsLine(w, s)
	fmt.Fprint(w, sharedCPUsNote(s))
	if pingPong {
		fmt.Fprintln(w, "[ ID] Interval           Round trips   per second   p50 µs   p99 µs")
		return
	}
	if s.Protocol == result.UDP {
		fmt.Fprintln(w, "[ ID] Interval           Transfer     Bitrate         Datagrams        Jitter    Lost/Total")
		return
	}
	fmt.Fprintln(w, "[ ID] Interval           Transfer     Bitrate         Retr")
}

// writeWindow writes the socket buffers asked for and granted, and zero
// copy.
func writeWindow(w io.Writer, s *result.Start) {
	win := "autotuned"
	if s.Window.Requested > 0 {
		win = fmt.Sprintf("asked %s", strings.TrimSpace(bytesText(uint64(s.Window.Requested))))
	}
	fmt.Fprintf(w, "Window: %s", win)
	if s.Window.Granted > 0 { // a UDP probe records none: say nothing rather than 0
		fmt.Fprintf(w, ", granted %s", strings.TrimSpace(bytesText(uint64(s.Window.Granted))))
	}
	if s.ZeroCopy != result.NoZeroCopy {
		fmt.Fprintf(w, "; zero copy: %s", s.ZeroCopy)
	}
	fmt.Fprintln(w)
}

// writePingPongInterval writes a ping-pong's interval: the round trips,
// their rate (roundTrips) and their p50 and p99 ("-" for a run stored
// before intervals carried them, or too few round trips for a p99).
func writePingPongInterval(w io.Writer, iv *result.Interval, st *result.Start, size int, verbose bool) {
	n, perS := roundTrips(*iv, size)
	p50, p99 := intervalPercentiles(iv)
	writeSum(w, iv, st, fmt.Sprintf("%11d  %9.0f/s  %7s  %7s", n, perS, us(p50), us(p99)), verbose)
}

// intervalPercentiles returns an interval's round-trip p50 and p99 in
// µs, nil where unknown.
func intervalPercentiles(iv *result.Interval) (p50, p99 *float64) {
	if iv.Latency == nil {
		return nil, nil
	}
	return iv.Latency.RTTUs.P50, iv.Latency.RTTUs.P99
}

// writeUDPInterval writes a UDP run's interval: what the sender sent,
// in bytes, bits and datagrams (UDP retransmits nothing), and the
// receiver's jitter and Lost/Total over the interval, as iperf3 -u's
// server writes them.
func writeUDPInterval(w io.Writer, iv *result.Interval, st *result.Start, verbose bool) {
	writeSum(w, iv, st, fmt.Sprintf("%s  %d datagrams%s", rate(iv.Sum.Bytes, iv.Sum.BitsPerSecond), datagrams(*iv), udpReceived(*iv)), verbose)
}

func writeInterval(w io.Writer, iv *result.Interval, st *result.Start, verbose bool) {
	if verbose {
		for _, s := range iv.Streams {
			fmt.Fprintf(w, "[%3d] %s  %s  %4d   cwnd %s  rtt %d us%s\n", s.ID, span(iv.Start, iv.End),
				rate(s.Bytes, s.BitsPerSecond), s.Retransmits, bytesText(s.CwndBytes), s.RTTus, omittedMark(iv))
		}
	}
	writeSum(w, iv, st, fmt.Sprintf("%s  %4d retr", rate(iv.Sum.Bytes, iv.Sum.BitsPerSecond), iv.Sum.Retransmits), verbose)
}

// writeSum writes an interval's [SUM] line: its span, figures (what the
// kind of run counts), both ends' CPU columns and the warm-up mark; and,
// verbose, a line per CPU of each end.
func writeSum(w io.Writer, iv *result.Interval, st *result.Start, figures string, verbose bool) {
	fmt.Fprintf(w, "[SUM] %s  %s%s%s%s\n", span(iv.Start, iv.End), figures,
		cpuColumns("client", iv.CPU.Client, st.Placement.Client), cpuColumns("server", iv.CPU.Server, st.Placement.Server), omittedMark(iv))
	if verbose {
		writeCPUs(w, "client", iv.CPU.Client)
		writeCPUs(w, "server", iv.CPU.Server)
	}
}

// omittedMark ends the lines of a warm-up interval.
func omittedMark(iv *result.Interval) string {
	if iv.Omitted {
		return "  (omitted)"
	}
	return ""
}

// writeCPUs writes one line per CPU of one end: where the load, the
// network softirqs and the NIC's interrupts were.
func writeCPUs(w io.Writer, end string, cpus map[string]result.CPUSample) {
	keys := make([]int, 0, len(cpus))
	for k := range cpus {
		if n, err := strconv.Atoi(k); err == nil {
			keys = append(keys, n)
		}
	}
	slices.Sort(keys)
	for _, n := range keys {
		c := cpus[strconv.Itoa(n)]
		fmt.Fprintf(w, "      %s cpu%-3d busy %5.1f%%  irq %4.1f%%  softirq %5.1f%%  NET_RX %7d  NET_TX %7d  NIC IRQs %7d\n",
			end, n, c.Busy, c.IRQ, c.SoftIRQ, c.NetRX, c.NetTX, c.NICIRQs)
	}
}

func writeEnd(w io.Writer, st *result.Start, e *result.End) {
	if e.Latency != nil || e.UDP != nil {
		writeProbeEnd(w, st, e)
		return
	}
	fmt.Fprintln(w, "- - - - - - - - - - - - - - - - - - - - - - - - -")
	writeDirections(w, e)
	fmt.Fprintf(w, "[SUM] %s  %s  %4d retr  sender\n", span(0, e.Seconds), rate(e.SumSent.Bytes, e.SumSent.BitsPerSecond), e.SumSent.Retransmits)
	fmt.Fprintf(w, "[SUM] %s  %s            receiver\n", span(0, e.Seconds), rate(e.SumReceived.Bytes, e.SumReceived.BitsPerSecond))
	fmt.Fprintln(w, cpuCostText(e))
	if z := e.ZeroCopy; z != nil && z.Method == result.MsgZeroCopy {
		fmt.Fprintf(w, "Zero copy: %d sends, %d completed, %d copied by the kernel anyway", z.Sends, z.Completions, z.Copied)
		if z.Copied > 0 {
			fmt.Fprint(w, " (local delivery such as loopback or veth, or a device without scatter-gather)")
		}
		fmt.Fprintln(w)
	}
	if l := explain.NICLine(e.NICCounters); l != "" {
		fmt.Fprintln(w, l)
	}
	for _, err := range e.Errors {
		fmt.Fprintf(w, "Error: %s\n", err)
	}
}

func span(a, b float64) string { return fmt.Sprintf("%6.2f-%-6.2f sec", a, b) }

func rate(bytes uint64, bps float64) string {
	return fmt.Sprintf("%s  %s", bytesText(bytes), bitsText(bps))
}

// bytesText writes a byte count as iperf3 does ("1.16 GBytes").
func bytesText(n uint64) string {
	v, unit := float64(n), "Bytes"
	for _, u := range []string{"KBytes", "MBytes", "GBytes", "TBytes"} {
		if v < 1024 {
			break
		}
		v, unit = v/1024, u
	}
	return fmt.Sprintf("%s %-6s", threeDigits(v), unit)
}

// bitsText writes a rate as iperf3 does ("9.93 Gbits/sec").
func bitsText(bps float64) string {
	v, unit := bps, "bits/sec"
	for _, u := range []string{"Kbits/sec", "Mbits/sec", "Gbits/sec", "Tbits/sec"} {
		if v < 1000 {
			break
		}
		v, unit = v/1000, u
	}
	return fmt.Sprintf("%s %-9s", threeDigits(v), unit)
}

// threeDigits keeps three significant digits, as iperf3's unit_snprintf.
func threeDigits(v float64) string {
	switch {
	case v < 9.995:
		return fmt.Sprintf("%4.2f", v)
	case v < 99.95:
		return fmt.Sprintf("%4.1f", v)
	}
	return fmt.Sprintf("%4.0f", v)
}

func cpuList(cpus []int) string {
	if len(cpus) == 0 {
		return "any"
	}
	return cpulist.Format(sortedCopy(cpus))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func sortedCopy(a []int) []int {
	b := slices.Clone(a)
	slices.Sort(b)
	return b
}
