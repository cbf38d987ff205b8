package explain

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/result"
)

// unfairRatio is when streams count as unequal: the fastest got more than
// 1.25 times the slowest (they differ by more than 25%).
const unfairRatio = 1.25

// fitTolerance is how far a stream's rate times its inferred sharing may
// stray from the per-CPU rate and still fit the model.
const fitTolerance = 0.2

// FairnessOf looks at a run's streams; nil when the run has fewer than two
// streams with data or when they got within 25% of each other.
//
// The model (docs/architecture.md, "Per-stream fairness"): a flow's
// receive path runs in the NET_RX softirq of the CPU its queue (RSS) or
// RPS sends it to; when that CPU is the bottleneck, the flows it serves
// split it, so a flow sharing its CPU with k-1 others gets 1/k of what a
// flow alone on an equal CPU gets. The Chelsio T6 host's iperf2 -P 8 on a
// 100 GbE NIC: six streams at 14.0 Gbit/s and two at 7.0 — eight flows on
// seven receive CPUs, two of them sharing one.
func FairnessOf(r *result.Result) *result.Fairness {
	streams := streamShares(r)
	if len(streams) < 2 {
		return nil
	}
	lo, hi := math.Inf(1), 0.0
	for _, s := range streams {
		lo, hi = math.Min(lo, s.Gbps), math.Max(hi, s.Gbps)
	}
	if hi <= 0 || hi <= unfairRatio*lo {
		return nil
	}
	f := fair{&result.Fairness{Spread: round3(1 - lo/hi), Streams: streams}}
	switch {
	case allRxCPUs(streams):
		f.Basis = "rx_cpu"
		f.byRxCPU(loadOf(r, receiver(r.Start.Direction)))
	default:
		recv := loadOf(r, receiver(r.Start.Direction))
		f.Basis = "softirq_shares"
		if len(recv.busy) == 0 {
			f.Basis = "rates"
		}
		f.byShares(recv)
	}
	return f.Fairness
}

// fair is a Fairness being worked out.
type fair struct{ *result.Fairness }

// streamShares is each stream's goodput over the measured window: what
// its receiver got (the sender's count where the receiver's is missing),
// else the sum of its measured intervals.
func streamShares(r *result.Result) []result.StreamShare {
	var out []result.StreamShare
	secs := r.End.Seconds
	for _, e := range r.End.Streams {
		b := e.ReceivedBytes
		if b == 0 {
			b = e.SentBytes
		}
		if secs > 0 && b > 0 {
			out = append(out, result.StreamShare{ID: e.ID, Gbps: round3(float64(b) * 8 / secs / 1e9)})
		}
	}
	if len(out) == 0 {
		out = intervalShares(r)
	}
	for i := range out {
		out[i].RxCPU = modeRxCPU(r, out[i].ID)
	}
	slices.SortFunc(out, func(a, b result.StreamShare) int { return a.ID - b.ID })
	return out
}

func intervalShares(r *result.Result) []result.StreamShare {
	bytes, secs := map[int]uint64{}, 0.0
	for _, iv := range r.Intervals {
		if iv.Omitted {
			continue
		}
		secs += iv.End - iv.Start
		for _, s := range iv.Streams {
			bytes[s.ID] += s.Bytes
		}
	}
	var out []result.StreamShare
	for id, b := range bytes {
		if secs > 0 && b > 0 {
			out = append(out, result.StreamShare{ID: id, Gbps: round3(float64(b) * 8 / secs / 1e9)})
		}
	}
	return out
}

// modeRxCPU is the receive CPU a stream had in most measured intervals.
func modeRxCPU(r *result.Result, id int) *int {
	count := map[int]int{}
	for _, iv := range r.Intervals {
		if iv.Omitted {
			continue
		}
		for _, s := range iv.Streams {
			if s.ID == id && s.RxCPU != nil {
				count[*s.RxCPU]++
			}
		}
	}
	best, n := 0, 0
	for cpu, c := range count {
		if c > n || c == n && cpu < best {
			best, n = cpu, c
		}
	}
	if n == 0 {
		return nil
	}
	return &best
}

func allRxCPUs(ss []result.StreamShare) bool {
	for _, s := range ss {
		if s.RxCPU == nil {
			return false
		}
	}
	return true
}

// byRxCPU explains the spread from the streams' measured receive CPUs.
func (f fair) byRxCPU(recv endLoad) {
	byCPU := map[int][]int{} // CPU -> indexes into f.Streams
	for i, s := range f.Streams {
		byCPU[*s.RxCPU] = append(byCPU[*s.RxCPU], i)
	}
	for i := range f.Streams {
		f.Streams[i].Sharing = len(byCPU[*f.Streams[i].RxCPU])
	}
	fast := f.fastest()
	fastCPU := *f.Streams[fast].RxCPU
	cpus := slices.Sorted(func(yield func(int) bool) {
		for c := range byCPU {
			if !yield(c) {
				return
			}
		}
	})
	var parts []string
	explained := true
	for _, c := range cpus {
		idx := byCPU[c]
		if c == fastCPU || !f.slow(idx) {
			continue
		}
		if len(idx) <= len(byCPU[fastCPU]) {
			explained = false
		}
		parts = append(parts, f.groupSentence(idx, c, recv))
	}
	fastGroup := byCPU[fastCPU]
	ref := fmt.Sprintf("%s, %s on CPU %d at %s%s", streamNames(f.ids(fastGroup)), aloneOr(len(fastGroup)), fastCPU,
		gbpsList(f, fastGroup), cpuLoad(recv, fastCPU))
	if len(parts) == 0 { // the slow streams share the fastest one's CPU
		f.Explanation = fmt.Sprintf("The streams differed by %.0f%% but the slow ones shared the fast one's receive CPU: %s. The receive CPUs do not explain it; look at the senders' CPUs and the path.",
			100*f.Spread, ref)
		return
	}
	f.Explained = explained
	parts[0] += " " + ref
	s := strings.Join(parts, "; ") + "."
	if explained {
		s += f.evenSplitNote(byCPU, fastCPU)
	}
	if !explained {
		s += " Their receive CPUs served no more streams than the fastest's, so CPU sharing does not explain the gap: look at the senders' CPUs and the path."
	}
	f.Explanation = upperFirst(s)
}

// groupSentence describes the slow streams that shared one CPU.
func (f fair) groupSentence(idx []int, cpu int, recv endLoad) string {
	fast := f.Streams[f.fastest()].Gbps
	mean := 0.0
	for _, i := range idx {
		mean += f.Streams[i].Gbps / float64(len(idx))
	}
	how, their := "shared", "their"
	if len(idx) == 1 {
		how, their = "had", "its"
	}
	return fmt.Sprintf("%s %s CPU %d%s for %s receive softirq and got %s, %s as much as",
		streamNames(f.ids(idx)), how, cpu, cpuLoad(recv, cpu), their, gbpsList(f, idx), fraction(mean/fast))
}

// evenSplitNote compares the slow streams' share with what an even split
// of equal CPUs gives (k streams on a CPU get 1/k of the CPU's rate, the
// fastest CPU's streams' k' each k'/k of theirs): when another load on the
// machine narrowed or widened the gap, it says so.
func (f fair) evenSplitNote(byCPU map[int][]int, fastCPU int) string {
	fastK := len(byCPU[fastCPU])
	fast := f.Streams[f.fastest()].Gbps
	for c, idx := range byCPU {
		if c == fastCPU || !f.slow(idx) {
			continue
		}
		want := float64(fastK) / float64(len(idx))
		got := meanGbps(f, idx) / fast
		if math.Abs(got-want) > 0.2*want {
			return fmt.Sprintf(" An even split of equal CPUs would give them %s as much, not %s: other work on the CPUs (or CPUs of unequal speed) changed the split.",
				fraction(want), fraction(got))
		}
	}
	return ""
}

// byShares explains the spread without per-flow CPUs: the rates say how
// many streams each would share an equal CPU with, and the receiver's
// per-CPU softirq load says how many CPUs served them.
func (f fair) byShares(recv endLoad) {
	fast := f.Streams[f.fastest()].Gbps
	cpusNeeded, fits := 0.0, true
	for i := range f.Streams {
		k := max(1, int(math.Round(fast/f.Streams[i].Gbps)))
		f.Streams[i].Sharing = k
		cpusNeeded += 1 / float64(k)
		if math.Abs(f.Streams[i].Gbps*float64(k)-fast) > fitTolerance*fast {
			fits = false
		}
	}
	slow, rest := f.split()
	head := fmt.Sprintf("%s got %s as much as %s (%s against %s)", streamNames(f.ids(slow)), fraction(meanGbps(f, slow)/fast),
		othersName(f, rest, len(slow)), gbpsList(f, slow), gbpsList(f, rest))
	head = upperFirst(head)
	if !fits {
		for i := range f.Streams {
			f.Streams[i].Sharing = 0
		}
		f.Explanation = head + ": the rates are not whole fractions of the fastest, so streams sharing receive CPUs do not explain them alone."
		return
	}
	needed := int(math.Round(cpusNeeded))
	pattern := fmt.Sprintf("the pattern of %d flows on %d receive CPUs of equal capacity (%.1f Gbit/s each), %s", len(f.Streams), needed, fast, sharingPhrase(f))
	soft := recv.softirqCPUs()
	switch {
	case len(recv.busy) == 0:
		f.Explanation = head + ": " + pattern + ". The run has no per-CPU telemetry of the receiver to confirm which CPUs."
	case len(soft) == needed:
		f.Explained = true
		f.Explanation = fmt.Sprintf("%s: %s; the receiver's softirq ran on exactly %d CPUs (%s, %s).", head, pattern, needed, cpusName(soft), softirqRange(recv, soft))
	default:
		f.Explanation = fmt.Sprintf("%s: %s, but the receiver's softirq ran on %d CPU%s (%s), not %d: the per-CPU load does not confirm it.",
			head, pattern, len(soft), plural(len(soft)), cpusName(soft), needed)
	}
}

// fastest is the index of the fastest stream.
func (f fair) fastest() int {
	best := 0
	for i, s := range f.Streams {
		if s.Gbps > f.Streams[best].Gbps {
			best = i
		}
	}
	return best
}

// slow reports whether a group's streams are all slow: the fastest got
// more than 1.25 times each.
func (f fair) slow(idx []int) bool {
	fast := f.Streams[f.fastest()].Gbps
	for _, i := range idx {
		if fast <= unfairRatio*f.Streams[i].Gbps {
			return false
		}
	}
	return true
}

// split returns the slow streams and the rest, as indexes.
func (f fair) split() (slow, rest []int) {
	for i := range f.Streams {
		if f.slow([]int{i}) {
			slow = append(slow, i)
		} else {
			rest = append(rest, i)
		}
	}
	return slow, rest
}

func (f fair) ids(idx []int) []int {
	out := make([]int, len(idx))
	for i, x := range idx {
		out[i] = f.Streams[x].ID
	}
	return out
}

func meanGbps(f fair, idx []int) float64 {
	m := 0.0
	for _, i := range idx {
		m += f.Streams[i].Gbps / float64(len(idx))
	}
	return m
}

// gbpsList writes the rates of streams: "7.0 Gbit/s", "7.0 and 7.1
// Gbit/s", "7.0 Gbit/s each", or a range "14.0-14.1 Gbit/s" for more
// than two.
func gbpsList(f fair, idx []int) string {
	vals := make([]float64, len(idx))
	for i, x := range idx {
		vals[i] = f.Streams[x].Gbps
	}
	switch len(vals) {
	case 1:
		return fmt.Sprintf("%.1f Gbit/s", vals[0])
	case 2:
		if fmt.Sprintf("%.1f", vals[0]) == fmt.Sprintf("%.1f", vals[1]) {
			return fmt.Sprintf("%.1f Gbit/s each", vals[0])
		}
		return fmt.Sprintf("%.1f and %.1f Gbit/s", vals[0], vals[1])
	}
	lo, hi := slices.Min(vals), slices.Max(vals)
	if fmt.Sprintf("%.1f", lo) == fmt.Sprintf("%.1f", hi) {
		return fmt.Sprintf("%.1f Gbit/s each", lo)
	}
	return fmt.Sprintf("%.1f-%.1f Gbit/s", lo, hi)
}

// streamNames writes "stream 2", "streams 6 and 7", "streams 1, 4 and 5".
func streamNames(ids []int) string {
	ids = slices.Sorted(slices.Values(ids))
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	if len(s) == 1 {
		return "stream " + s[0]
	}
	return "streams " + strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// othersName names the fast streams: "the other six" when they are all
// the rest, else by number.
func othersName(f fair, rest []int, nSlow int) string {
	if len(rest)+nSlow == len(f.Streams) && len(rest) > 1 {
		return "the other " + numberWord(len(rest))
	}
	return streamNames(f.ids(rest))
}

func numberWord(n int) string {
	words := []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"}
	if n < len(words) {
		return words[n]
	}
	return strconv.Itoa(n)
}

// sharingPhrase says how the inferred sharing groups the streams: "six
// with a CPU each, streams 6 and 7 sharing one".
func sharingPhrase(f fair) string {
	byK := map[int][]int{}
	for i, s := range f.Streams {
		byK[s.Sharing] = append(byK[s.Sharing], i)
	}
	var parts []string
	for _, k := range slices.Sorted(func(yield func(int) bool) {
		for k := range byK {
			if !yield(k) {
				return
			}
		}
	}) {
		idx := byK[k]
		if k == 1 {
			parts = append(parts, fmt.Sprintf("%s with a CPU each", numberWord(len(idx))))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s sharing %s", streamNames(f.ids(idx)), cpusWord(len(idx)/k, k)))
	}
	return strings.Join(parts, ", ")
}

// cpusWord writes how many CPUs a group of streams, k to a CPU, shares:
// "one", "two CPUs 3 to a CPU".
func cpusWord(n, k int) string {
	if n <= 1 {
		return "one"
	}
	return fmt.Sprintf("%s CPUs, %d to a CPU", numberWord(n), k)
}

// fraction says a ratio in words where it is a simple one.
func fraction(x float64) string {
	for _, f := range []struct {
		v    float64
		name string
	}{{1.0 / 2, "half"}, {1.0 / 3, "a third"}, {1.0 / 4, "a quarter"}, {2.0 / 3, "two thirds"}, {3.0 / 4, "three quarters"}} {
		if math.Abs(x-f.v) <= 0.04 {
			return f.name
		}
	}
	return fmt.Sprintf("%.0f%%", 100*x)
}

func aloneOr(n int) string {
	if n == 1 {
		return "alone"
	}
	return "together"
}

// cpuLoad writes a receive CPU's load, when sampled: " (98% busy, 45%
// softirq)".
func cpuLoad(l endLoad, cpu int) string {
	b, ok := l.busy[cpu]
	if !ok {
		return ""
	}
	return fmt.Sprintf(" (%.0f%% busy, %.0f%% softirq)", b, l.softirq[cpu])
}

// softirqRange writes the softirq share of cpus: "45-49% softirq".
func softirqRange(l endLoad, cpus []int) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range cpus {
		lo, hi = math.Min(lo, l.softirq[c]), math.Max(hi, l.softirq[c])
	}
	if math.Round(lo) == math.Round(hi) {
		return fmt.Sprintf("%.0f%% softirq each", hi)
	}
	return fmt.Sprintf("%.0f-%.0f%% softirq", lo, hi)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// fairnessSentences gives a campaign's explanation one sentence per point
// whose runs had unequal streams: how many, and the first one's reason.
func fairnessSentences(points []PointSummary, runsOf map[int][]*result.Result) []string {
	var out []string
	for i, p := range points {
		var first *result.Result
		n := 0
		for _, r := range runsOf[i] {
			if r.Fairness != nil {
				n++
				if first == nil {
					first = r
				}
			}
		}
		if first == nil {
			continue
		}
		out = append(out, fmt.Sprintf("%d stream%s, placement %s: in %d of %d runs the streams differed by more than 25%%. %s",
			p.Streams, plural(p.Streams), p.Placement, n, len(runsOf[i]), upperFirst(first.Fairness.Explanation)))
	}
	return out
}
