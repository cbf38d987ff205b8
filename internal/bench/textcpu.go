package bench

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/result"
)

// The CPU and direction parts of a single run's text: the pinned CPUs
// shown as pinned (the busiest other CPU apart), CPU cost in CPU seconds
// per Gbit (the unit of campaigns, reports and cpu_s_per_gbit), and a
// --bidir run's two directions before their sum.

// cpuColumns is one end's CPU columns of an interval line: the pinned
// CPUs' load ("client pinned cpu0 99% si 31%"), then the busiest other
// CPU when it is busier than 10% ("other cpu1 45%"). With nothing pinned
// (an engine that chose no CPU) it is the busiest CPU ("client busiest
// cpu1 99% si 31%").
func cpuColumns(label string, cpus map[string]result.CPUSample, pinned []int) string {
	if len(cpus) == 0 {
		return ""
	}
	var b strings.Builder
	for _, c := range sortedCopy(pinned) {
		if s, ok := cpus[strconv.Itoa(c)]; ok {
			if b.Len() == 0 {
				b.WriteString("  " + label + " pinned")
			}
			fmt.Fprintf(&b, " cpu%d %3.0f%% si %2.0f%%", c, s.Busy, s.SoftIRQ)
		}
	}
	key, best := busiestOther(cpus, pinned)
	switch {
	case b.Len() == 0 && key != "":
		s := cpus[key]
		fmt.Fprintf(&b, "  %s busiest cpu%s %3.0f%% si %2.0f%%", label, key, s.Busy, s.SoftIRQ)
	case key != "" && best >= 10:
		fmt.Fprintf(&b, " (other cpu%s %.0f%%)", key, best)
	}
	return b.String()
}

// busiestOther is the busiest CPU not in pinned, and its busy share.
func busiestOther(cpus map[string]result.CPUSample, pinned []int) (string, float64) {
	keys := make([]int, 0, len(cpus))
	for k := range cpus {
		if n, err := strconv.Atoi(k); err == nil && !slices.Contains(pinned, n) {
			keys = append(keys, n)
		}
	}
	slices.Sort(keys)
	key, best := "", -1.0
	for _, n := range keys {
		if s := cpus[strconv.Itoa(n)]; s.Busy > best {
			key, best = strconv.Itoa(n), s.Busy
		}
	}
	return key, best
}

// sharedCPUsNote says, for two ends on one kernel (a lab's namespaces),
// that their CPU columns describe the same CPUs.
func sharedCPUsNote(s *result.Start) string {
	if s.Client.BootID == "" || s.Client.BootID != s.Server.BootID {
		return ""
	}
	return "Note: both ends run on one kernel (a lab, or loopback): the client and server CPU columns show the same CPUs\n"
}

// cpuCostText is "CPU time: client 0.52 s, server 0.45 s (0.080 and 0.069
// CPU s per Gbit)": the cost per Gbit moved does not grow with -t.
func cpuCostText(e *result.End) string {
	t := fmt.Sprintf("CPU time: client %s, server %s", cpuSeconds(e.CPU.ClientSeconds), cpuSeconds(e.CPU.ServerSeconds))
	if gbit := e.SumReceived.BitsPerSecond / 1e9 * e.Seconds; gbit > 0 && e.CPU.ClientSeconds > 0 && e.CPU.ServerSeconds > 0 {
		t += fmt.Sprintf(" (%.3f and %.3f CPU s per Gbit)", e.CPU.ClientSeconds/gbit, e.CPU.ServerSeconds/gbit)
	}
	return t
}

// writeDirections writes a --bidir run's two directions as iperf3 does
// ([TX-C] the client sent, [RX-C] it received), each with what its
// receivers got; nothing when the run went one way.
func writeDirections(w io.Writer, e *result.End) {
	type dir struct {
		sent, recv, retr uint64
		n                int
	}
	var d [2]dir // 0: client sends, 1: server sends
	for _, s := range e.Streams {
		i := 0
		if s.Sender == "server" {
			i = 1
		}
		d[i].sent += s.SentBytes
		d[i].recv += s.ReceivedBytes
		d[i].retr += s.Retransmits
		d[i].n++
	}
	if d[0].n == 0 || d[1].n == 0 || e.Seconds <= 0 {
		return
	}
	for i, tag := range []string{"[TX-C]", "[RX-C]"} {
		fmt.Fprintf(w, "%s %s  %s  %4d retr  %d stream%s, as received\n", tag, span(0, e.Seconds),
			rate(d[i].recv, float64(d[i].recv)*8/e.Seconds), d[i].retr, d[i].n, plural(d[i].n))
	}
}
