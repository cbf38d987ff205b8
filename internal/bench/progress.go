package bench

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/explain"
	"github.com/linerate/linerate/internal/result"
)

// TextReporter is the Reporter the CLI uses. On a terminal it keeps one
// status line at the bottom ("run 3/12 · 2 streams · placement 0,1 ·
// ETA 0:27"), rewritten in place, with each interval of the run in
// progress printed above it; elsewhere (a pipe, a log) it prints plain
// lines only.
type TextReporter struct {
	w   io.Writer
	tty bool
	// pingPong is a ping-pong campaign's message bytes (0: not one): its
	// intervals are told in round trips.
	pingPong int
	// udp says the campaign sends UDP datagrams: its intervals are told
	// in datagrams, without TCP's retransmits.
	udp bool
	// mode is a transaction campaign's (rr, crr): its points count flows.
	mode result.Mode

	mu     sync.Mutex
	status string
}

// NewTextReporter writes a campaign's progress to w; tty says whether w
// is a terminal.
func NewTextReporter(w io.Writer, tty bool) *TextReporter { return &TextReporter{w: w, tty: tty} }

// ForProbe makes the interval lines of a ping-pong (probe of kind
// agent.ProbePingPong) round trips per second instead of Gbit/s and
// retransmits, and those of a UDP run (agent.ProbeUDP) Gbit/s and
// datagrams; nil changes nothing. It returns p.
func (p *TextReporter) ForProbe(probe *agent.ProbeTest) *TextReporter {
	switch {
	case probe == nil:
	case probe.Kind == agent.ProbePingPong:
		p.pingPong = max(probe.Size, 1)
	case probe.Kind == agent.ProbeUDP:
		p.udp = true
	}
	return p
}

// ForMode makes the status lines of a transaction campaign (mode rr or
// crr) count flows instead of streams. It returns p.
func (p *TextReporter) ForMode(mode result.Mode) *TextReporter {
	p.mode = mode
	return p
}

// RunStarting shows which run begins and the campaign's ETA.
func (p *TextReporter) RunStarting(i, n int, pt Point, eta time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	what := "stream"
	if p.mode != result.Stream {
		what = string(p.mode) + " flow"
	}
	line := fmt.Sprintf("run %d/%d · %d %s%s · placement %s · ETA %s", i+1, n, pt.Streams, what, plural(pt.Streams), pt.Pinning, clock(eta))
	if p.tty {
		p.status = line
		p.redraw()
		return
	}
	fmt.Fprintln(p.w, line)
}

// Interval prints one interval of the run in progress.
func (p *TextReporter) Interval(i int, iv result.Interval) {
	if iv.LoadOnly {
		p.println(LoadOnlyIntervalLine(iv))
		return
	}
	if iv.Transactions != nil {
		p.println(TxnIntervalLine(iv))
		return
	}
	if p.pingPong > 0 {
		p.println(PingPongIntervalLine(iv, p.pingPong))
		return
	}
	if p.udp {
		p.println(UDPIntervalLine(iv))
		return
	}
	p.println(IntervalLine(iv))
}

// RunDone prints the run's result.
func (p *TextReporter) RunDone(i, n int, id int64, r *result.Result) {
	stored := ""
	if id != 0 {
		stored = fmt.Sprintf(" (stored as run %d)", id)
	}
	if l := r.End.Latency; l != nil {
		p.println(fmt.Sprintf("run %d/%d: %s%s", i+1, n, latencyDone(l), stored))
	} else if u := r.End.UDP; u != nil {
		p.println(fmt.Sprintf("run %d/%d: %.2f Gbit/s received, lost %d/%d (%.2g%%), jitter %.3f ms%s", i+1, n, r.Gbps(),
			u.LostPackets, u.Packets, u.LostPercent, u.JitterMS, stored))
	} else if t := r.End.Transactions; t != nil {
		p.println(fmt.Sprintf("run %d/%d: %s%s", i+1, n, txnDone(t), stored))
	} else {
		p.println(fmt.Sprintf("run %d/%d: %.2f Gbit/s received, %d retransmits%s", i+1, n, r.Gbps(), r.End.SumSent.Retransmits, stored))
	}
	if l := explain.NICLine(r.End.NICCounters); l != "" {
		p.println("  " + l)
	}
}

// Finish clears the status line.
func (p *TextReporter) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.status != "" {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.status = ""
	}
}

func (p *TextReporter) println(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
	fmt.Fprintln(p.w, s)
	if p.tty {
		p.redraw()
	}
}

func (p *TextReporter) redraw() { fmt.Fprint(p.w, "\r\x1b[K"+p.status) }

// clock writes a duration as m:ss.
func clock(d time.Duration) string {
	s := int(math.Round(d.Seconds()))
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// latencyDone is a ping-pong run's result in a line: its percentiles and
// round trips (and losses over UDP).
func latencyDone(l *result.Latency) string {
	s := fmt.Sprintf("round trip p50 %s µs, p99 %s µs, p99.9 %s µs; %d round trips (%.0f/s)",
		us(l.RTTUs.P50), us(l.RTTUs.P99), us(l.RTTUs.P999), l.Samples, l.RatePerSecond)
	if l.Protocol == "udp" {
		s += fmt.Sprintf(", %d dropped, %d out of order", l.Dropped, l.OutOfOrder)
	}
	return s
}

// PingPongIntervalLine writes one interval of a ping-pong of size-byte
// messages: time, round trips per second and in all, their p50 and p99
// when the interval carries them, and the busiest CPUs of each end. The
// round trips are the interval's bytes over the two messages of each.
func PingPongIntervalLine(iv result.Interval, size int) string {
	var b strings.Builder
	n, perS := roundTrips(iv, size)
	fmt.Fprintf(&b, "  %6.2f-%-6.2f s  %9.0f round trips/s  (%d)", iv.Start, iv.End, perS, n)
	if p50, p99 := intervalPercentiles(&iv); p50 != nil {
		fmt.Fprintf(&b, "  p50 %s µs  p99 %s µs", us(p50), us(p99))
	}
	writeIntervalTail(&b, iv)
	return b.String()
}

// LoadOnlyIntervalLine writes an interval of a tool that reports its
// figures only at its end (result.Interval.LoadOnly): its figures are unknown,
// not zero, and what the hosts' CPUs did is known.
func LoadOnlyIntervalLine(iv result.Interval) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %6.2f-%-6.2f s  figures unknown: the tool reports only at its end", iv.Start, iv.End)
	writeIntervalTail(&b, iv)
	return b.String()
}

// roundTrips is a ping-pong interval's round trips (its bytes over the
// two size-byte messages of each) and their rate over the interval.
func roundTrips(iv result.Interval, size int) (n uint64, perS float64) {
	n = iv.Sum.Bytes / uint64(2*max(size, 1))
	if d := iv.End - iv.Start; d > 0 {
		perS = float64(n) / d
	}
	return n, perS
}

// UDPIntervalLine writes one interval of a UDP run: time, the sender's
// Gbit/s and datagrams, the receiver's jitter and loss over the interval
// where it counted them, and the busiest CPUs of each end. UDP has no
// retransmits.
func UDPIntervalLine(iv result.Interval) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %6.2f-%-6.2f s  %7.2f Gbit/s  %d datagrams%s", iv.Start, iv.End, iv.Sum.BitsPerSecond/1e9, datagrams(iv), udpReceived(iv))
	writeIntervalTail(&b, iv)
	return b.String()
}

// datagrams is the datagrams an interval's streams sent.
func datagrams(iv result.Interval) uint64 {
	var n uint64
	for _, s := range iv.Streams {
		n += s.Packets
	}
	return n
}

// udpReceived is what the receivers of an interval's UDP streams counted,
// as iperf3 -u's server writes it ("  0.005 ms  12/85000 (0.014%)": the
// jitter, the largest of the streams', then lost of received + lost);
// "" when no receiver's count arrived (a driver without one, a run
// stored before intervals carried it).
func udpReceived(iv result.Interval) string {
	var u *result.UDPInterval
	for _, s := range iv.Streams {
		if s.UDPInterval == nil {
			continue
		}
		if u == nil {
			u = &result.UDPInterval{}
		}
		u.ReceivedPackets += s.ReceivedPackets
		u.LostPackets += s.LostPackets
		u.JitterMS = max(u.JitterMS, s.JitterMS)
	}
	if u == nil {
		return ""
	}
	u = result.NewUDPInterval(u.ReceivedPackets, u.LostPackets, 0, u.JitterMS)
	return fmt.Sprintf("  %.3f ms  %d/%d (%.2g%%)", u.JitterMS, u.LostPackets, int64(u.ReceivedPackets)+u.LostPackets, u.LostPercent)
}

// IntervalLine writes one interval as a human line: time, goodput,
// retransmits, and the busiest CPUs of each end.
func IntervalLine(iv result.Interval) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %6.2f-%-6.2f s  %7.2f Gbit/s  retr %-5d", iv.Start, iv.End, iv.Sum.BitsPerSecond/1e9, iv.Sum.Retransmits)
	writeIntervalTail(&b, iv)
	return b.String()
}

// writeIntervalTail ends an interval line: the warm-up mark and the
// busiest CPUs of each end.
func writeIntervalTail(b *strings.Builder, iv result.Interval) {
	if iv.Omitted {
		b.WriteString(" (warm-up)")
	}
	if c := busiest(iv.CPU.Client, 2); c != "" {
		b.WriteString("  client " + c)
	}
	if s := busiest(iv.CPU.Server, 2); s != "" && !sameSamples(iv.CPU.Client, iv.CPU.Server) {
		b.WriteString("  server " + s)
	}
}

// busiest lists the n busiest CPUs: "cpu0 97% (si 31%)".
func busiest(per map[string]result.CPUSample, n int) string {
	type c struct {
		cpu string
		s   result.CPUSample
	}
	var cs []c
	for k, s := range per {
		cs = append(cs, c{k, s})
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].s.Busy != cs[j].s.Busy {
			return cs[i].s.Busy > cs[j].s.Busy
		}
		a, _ := strconv.Atoi(cs[i].cpu)
		b, _ := strconv.Atoi(cs[j].cpu)
		return a < b
	})
	var parts []string
	for _, x := range cs[:min(n, len(cs))] {
		parts = append(parts, fmt.Sprintf("cpu%s %.0f%% (si %.0f%%)", x.cpu, x.s.Busy, x.s.SoftIRQ))
	}
	return strings.Join(parts, ", ")
}

func sameSamples(a, b map[string]result.CPUSample) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
