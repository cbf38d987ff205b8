package explain

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/telemetry"
)

// endLoad is one end's CPU load over a run's measured intervals, or the
// mean over several runs: per CPU, % busy, % in softirq, and NET_RX
// softirqs per interval.
type endLoad struct {
	app     []int // the benchmark threads' CPUs on this end
	busy    map[int]float64
	softirq map[int]float64
	netRX   map[int]float64
	// unread are the telemetry sources of this end that could not be
	// read, and why: what they feed is unknown, not zero.
	unread map[string]string
}

// receiver names the end whose NET_RX softirq carries the payload: the
// server when the client sends, else the client. With both directions,
// the server (the client's own receive path is the mirror image).
func receiver(d result.Direction) string {
	if d == result.Receive {
		return "client"
	}
	return "server"
}

// loadOf averages one end's per-CPU samples over the run's measured
// intervals.
func loadOf(r *result.Result, side string) endLoad {
	l := endLoad{busy: map[int]float64{}, softirq: map[int]float64{}, netRX: map[int]float64{}}
	if side == "client" {
		l.app, l.unread = r.Start.Placement.Client, r.End.Unread.Client
	} else {
		l.app, l.unread = r.Start.Placement.Server, r.End.Unread.Server
	}
	n := 0
	for _, iv := range r.Intervals {
		per := iv.CPU.Server
		if side == "client" {
			per = iv.CPU.Client
		}
		if iv.Omitted || len(per) == 0 {
			continue
		}
		n++
		for k, s := range per {
			cpu, err := strconv.Atoi(k)
			if err != nil {
				continue
			}
			l.busy[cpu] += s.Busy
			l.softirq[cpu] += s.SoftIRQ
			l.netRX[cpu] += float64(s.NetRX)
		}
	}
	for _, m := range []map[int]float64{l.busy, l.softirq, l.netRX} {
		for k := range m {
			m[k] /= float64(max(n, 1))
		}
	}
	return l
}

// meanLoad averages loads of several runs; the application CPUs are the
// union of theirs.
func meanLoad(ls []endLoad) endLoad {
	out := endLoad{busy: map[int]float64{}, softirq: map[int]float64{}, netRX: map[int]float64{}}
	for _, l := range ls {
		for _, c := range l.app {
			if !slices.Contains(out.app, c) {
				out.app = append(out.app, c)
			}
		}
		for src, why := range l.unread { // unknown in one run: unknown in the mean
			if out.unread == nil {
				out.unread = map[string]string{}
			}
			out.unread[src] = why
		}
		for _, p := range [][2]map[int]float64{{out.busy, l.busy}, {out.softirq, l.softirq}, {out.netRX, l.netRX}} {
			for k, v := range p[1] {
				p[0][k] += v / float64(len(ls))
			}
		}
	}
	slices.Sort(out.app)
	return out
}

// softirqCPUs returns the CPUs that served the end's softirq work: those
// with at least a quarter of the busiest CPU's softirq time and 5% at
// least; where /proc/stat showed no softirq time, those with a quarter of
// the most NET_RX softirqs. A source that could not be read is not read
// as zeros.
func (l endLoad) softirqCPUs() []int {
	pick := func(m map[int]float64, floor float64) []int {
		var top float64
		for _, v := range m {
			top = math.Max(top, v)
		}
		var out []int
		for c, v := range m {
			if v >= math.Max(floor, top/4) && v > 0 {
				out = append(out, c)
			}
		}
		slices.Sort(out)
		return out
	}
	if _, ok := l.unread[telemetry.SrcStat]; !ok {
		if cpus := pick(l.softirq, 5); len(cpus) > 0 {
			return cpus
		}
	}
	if _, ok := l.unread[telemetry.SrcSoftirqs]; ok {
		return nil
	}
	return pick(l.netRX, 1)
}

// softirqUnknown says why an end's softirq load is unknown when neither
// source of it could be read (/proc/stat's softirq time, /proc/softirqs'
// NET_RX counts), else "".
func (l endLoad) softirqUnknown() string {
	st, okStat := l.unread[telemetry.SrcStat]
	sf, okSoft := l.unread[telemetry.SrcSoftirqs]
	if !okStat || !okSoft {
		return ""
	}
	return "softirq load unknown (" + st + "; " + sf + ")"
}

// relation classifies where softirq ran against the application's CPUs.
type relation int

const (
	relUnknown   relation = iota
	relAppCore            // on the application's own CPU(s)
	relOtherL3            // only in L3 domains the application does not use
	relSplitL3            // across L3 domains, the application's and others
	relSameL3             // other CPUs of the application's L3 domain(s)
	relOtherCPUs          // other CPUs, topology unknown
)

func relate(soft, app []int, t Topology) relation {
	switch {
	case len(soft) == 0 || len(app) == 0:
		return relUnknown
	case overlaps(soft, app):
		return relAppCore
	}
	sd, ad := t.domains(soft), t.domains(app)
	switch {
	case len(sd) == 0 || len(ad) == 0:
		return relOtherCPUs
	case !overlaps(sd, ad):
		return relOtherL3
	case len(sd) > 1 || !subset(sd, ad):
		return relSplitL3
	}
	return relSameL3
}

// what says a relation in the words of a "what differs" sentence.
func (r relation) what() string {
	switch r {
	case relAppCore:
		return "shared the application's core"
	case relOtherL3:
		return "ran in another L3 domain than the application"
	case relSplitL3:
		return "was spread across L3 domains"
	case relSameL3:
		return "ran on other CPUs of the application's L3 domain, off its core"
	case relOtherCPUs:
		return "ran on other CPUs than the application"
	}
	return "ran on CPUs the telemetry could not relate to the application"
}

func overlaps(a, b []int) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

func subset(a, b []int) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// whereSoftirq describes in words where an end's softirq work ran:
// "NET_RX softirq on CPU 6 (92% busy), the application's own CPU".
func whereSoftirq(l endLoad, t Topology) string {
	soft := l.softirqCPUs()
	if why := l.softirqUnknown(); why != "" {
		return why
	}
	if len(soft) == 0 {
		if _, ok := l.unread[telemetry.SrcSoftirqs]; ok {
			return "no softirq time was seen; NET_RX counts unknown (" + l.unread[telemetry.SrcSoftirqs] + ")"
		}
		return "no softirq load was seen"
	}
	s := "NET_RX softirq on " + cpusName(soft) + " (" + busyRange(l, soft) + ")"
	app := l.app
	switch relate(soft, app, t) {
	case relAppCore:
		if subset(soft, app) {
			s += ", the application's own " + cpuWord(app)
		} else {
			s += ", including the application's " + cpusName(intersect(soft, app))
		}
	case relSameL3:
		s += fmt.Sprintf(", in %s with the application's %s but off its core", domainsName(t, t.domains(soft)), cpusName(app))
	case relSplitL3:
		s += fmt.Sprintf(", across %s; the application's %s is in %s", domainsName(t, t.domains(soft)), cpusName(app), domainsName(t, t.domains(app)))
	case relOtherL3:
		s += fmt.Sprintf(", in %s, not the application's %s", domainsName(t, t.domains(soft)), domainsName(t, t.domains(app)))
	case relOtherCPUs:
		s += ", not the application's " + cpusName(app)
	}
	if nodes := t.nodes(soft); len(t.NUMANodes) > 1 && len(nodes) > 0 {
		s += fmt.Sprintf(" (NUMA node%s %s)", plural(len(nodes)), joinInts(nodes))
	}
	return s
}

func cpuWord(app []int) string {
	if len(app) == 1 {
		return "CPU " + strconv.Itoa(app[0])
	}
	return cpusName(app)
}

func intersect(a, b []int) []int {
	var out []int
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func domainsName(t Topology, ds []int) string {
	if len(ds) == 1 {
		return t.domainName(ds[0])
	}
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = strings.TrimPrefix(t.domainName(d), "L3 domain ")
	}
	return "L3 domains " + strings.Join(parts, " and ")
}

// busyRange writes the busy share of cpus: "92% busy" or "35-50% busy";
// "busy share unknown" when /proc/stat could not be read.
func busyRange(l endLoad, cpus []int) string {
	if _, ok := l.unread[telemetry.SrcStat]; ok {
		return "busy share unknown"
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range cpus {
		lo, hi = math.Min(lo, l.busy[c]), math.Max(hi, l.busy[c])
	}
	if math.Round(lo) == math.Round(hi) {
		return fmt.Sprintf("%.0f%% busy", hi)
	}
	return fmt.Sprintf("%.0f-%.0f%% busy", lo, hi)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

// bucketNames names n buckets in order, first to last ("slow" to "fast",
// "low" to "high"), with "middle" between two, and numbers beyond three.
func bucketNames(n int, first, last string) []string {
	switch n {
	case 1:
		return []string{""}
	case 2:
		return []string{first, last}
	case 3:
		return []string{first, "middle", last}
	}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("bucket-%d", i+1)
	}
	return out
}

// explainBuckets says what differed between the buckets of one point, in
// plain sentences: one per bucket, then what differs between the slowest
// and the fastest. runs[i] holds the runs of buckets[i].
func explainBuckets(point string, buckets [][]*result.Result, gap float64, t Topology) []string {
	total := 0
	for _, b := range buckets {
		total += len(b)
	}
	out := []string{fmt.Sprintf("%s: the %d runs fell into %d buckets (split where neighbouring throughputs differ by more than %.2f Gbit/s = max(5%% of the median, 3 × the median gap between neighbours)).",
		point, total, len(buckets), gap)}
	names := bucketNames(len(buckets), "slow", "fast")
	side := receiver(buckets[0][0].Start.Direction)
	loads := make([]endLoad, len(buckets))
	perRun := make([][]endLoad, len(buckets))
	for i, b := range buckets {
		ls := make([]endLoad, len(b))
		for j, r := range b {
			ls[j] = loadOf(r, side)
		}
		loads[i], perRun[i] = meanLoad(ls), ls
		out = append(out, fmt.Sprintf("The %d %s run%s (%s): on the receiver (%s), %s.",
			len(b), names[i], plural(len(b)), gbpsRange(b), side, whereSoftirq(loads[i], t)))
	}
	last := len(buckets) - 1
	slowName, fastName := names[0], names[last]
	// Causes in the order of their evidence: other load that every slow
	// run had and no fast run; a CPU difference that every run of both
	// buckets shows; other load that set the buckets apart less cleanly.
	// A difference of the buckets' means that the runs do not all show
	// is no cause.
	load, clean := otherLoadDiffers(buckets[0], buckets[last], slowName, fastName)
	cpus := whatDiffers(perRun[0], perRun[last], loads[0], loads[last], slowName, fastName, t)
	switch {
	case load != "" && clean:
		out = append(out, load)
		if cpus != "" {
			out = append(out, "Also: "+lowerFirst(strings.TrimPrefix(cpus, "What differs: ")))
		}
	case cpus != "":
		out = append(out, cpus)
		if load != "" {
			out = append(out, "Also: "+lowerFirst(strings.TrimPrefix(load, "What differs: ")))
		}
	case load != "":
		out = append(out, load)
	default:
		out = append(out, "The per-CPU telemetry does not tell the buckets apart (no difference of softirq or application CPUs that every run of both buckets shows, and no other load that only the slow runs had): look at what else ran on the hosts, and at CPU frequency.")
	}
	return append(out, explainNICBuckets(buckets[0], buckets[last], slowName, fastName)...)
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// otherLoadDiffers says whether other work kept CPUs busy (above
// otherBusy) in more of the slow runs than of the fast ones, naming the
// busiest case; clean is set when every slow run had such load and no
// fast run did. "" when the share is not higher in the slow runs.
func otherLoadDiffers(slow, fast []*result.Result, slowName, fastName string) (text string, clean bool) {
	var worst *busyCPU
	slowN, fastN := 0, 0
	for _, r := range slow {
		bs := busyCPUs(r)
		if len(bs) > 0 {
			slowN++
		}
		for i := range bs {
			if worst == nil || bs[i].pct > worst.pct {
				worst = &bs[i]
			}
		}
	}
	for _, r := range fast {
		if len(busyCPUs(r)) > 0 {
			fastN++
		}
	}
	if worst == nil || float64(slowN)/float64(len(slow)) <= float64(fastN)/float64(len(fast)) {
		return "", false
	}
	return fmt.Sprintf("What differs: other load. In %d of the %d %s runs other work kept a CPU above %.0f%% busy (at worst %s), against %d of the %d %s runs.",
		slowN, len(slow), slowName, otherBusy, worst.sentence(worst.pct), fastN, len(fast), fastName), slowN == len(slow) && fastN == 0
}

// minSoftirqShift is how far (percentage points of softirq time, summed
// over the CPUs that differ) the softirq work must move between the
// buckets for a difference of its CPUs to count: a CPU that crosses the
// "a quarter of the busiest" line at 7% in one bucket and 10% in the
// other has not moved the work.
const minSoftirqShift = 10.0

// whatDiffers compares the slowest and fastest buckets' receivers, run
// by run: a difference is named only when every run of each bucket shows
// it (the buckets' means can differ while their runs overlap), and a
// difference of softirq CPUs only when the softirq work moved by
// minSoftirqShift at least. "" when nothing passes.
func whatDiffers(slowRuns, fastRuns []endLoad, slow, fast endLoad, slowName, fastName string, t Topology) string {
	ss, fs := slow.softirqCPUs(), fast.softirqCPUs()
	rs, rf := relate(ss, slow.app, t), relate(fs, fast.app, t)
	all := func(ls []endLoad, ok func(endLoad) bool) bool {
		return !slices.ContainsFunc(ls, func(l endLoad) bool { return !ok(l) })
	}
	moved := softirqShift(slow, fast, ss, fs) >= minSoftirqShift
	switch {
	case rs != rf && rs != relUnknown && rf != relUnknown && moved &&
		all(slowRuns, func(l endLoad) bool { return relate(l.softirqCPUs(), l.app, t) == rs }) &&
		all(fastRuns, func(l endLoad) bool { return relate(l.softirqCPUs(), l.app, t) == rf }):
		return fmt.Sprintf("What differs: in the %s runs the receiver's softirq work %s; in the %s runs it %s.", slowName, rs.what(), fastName, rf.what())
	case !slices.Equal(ss, fs) && len(ss) > 0 && len(fs) > 0 && moved &&
		all(slowRuns, func(l endLoad) bool { return slices.Equal(l.softirqCPUs(), ss) }) &&
		all(fastRuns, func(l endLoad) bool { return slices.Equal(l.softirqCPUs(), fs) }):
		return fmt.Sprintf("What differs: the receiver's softirq work ran on %s in the %s runs and on %s in the %s runs.", cpusName(ss), slowName, cpusName(fs), fastName)
	}
	// The application's CPUs: each run's own, the same within each bucket.
	sa, fa := slowRuns[0].app, fastRuns[0].app
	if len(sa) > 0 && len(fa) > 0 && !slices.Equal(sorted(sa), sorted(fa)) &&
		all(slowRuns, func(l endLoad) bool { return slices.Equal(sorted(l.app), sorted(sa)) }) &&
		all(fastRuns, func(l endLoad) bool { return slices.Equal(sorted(l.app), sorted(fa)) }) {
		return fmt.Sprintf("What differs: the receiving application ran on %s in the %s runs and on %s in the %s runs.", cpusName(sorted(sa)), slowName, cpusName(sorted(fa)), fastName)
	}
	return ""
}

func sorted(xs []int) []int {
	out := slices.Clone(xs)
	slices.Sort(out)
	return out
}

// softirqShift is how much softirq time (percentage points, summed) moved
// between the buckets on the CPUs that serve softirq in one and not the
// other; where /proc/stat gave no softirq time, any difference of the
// NET_RX CPUs counts as moved.
func softirqShift(slow, fast endLoad, ss, fs []int) float64 {
	var sum float64
	seen := false
	for _, c := range append(slices.Clone(ss), fs...) {
		if slices.Contains(ss, c) && slices.Contains(fs, c) {
			continue
		}
		seen = true
		d := slow.softirq[c] - fast.softirq[c]
		sum += math.Abs(d)
	}
	if seen && sum == 0 {
		return math.Inf(1) // NET_RX counts only: their CPUs moved
	}
	return sum
}

func gbpsRange(runs []*result.Result) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range runs {
		lo, hi = math.Min(lo, r.Gbps()), math.Max(hi, r.Gbps())
	}
	if fmt.Sprintf("%.1f", lo) == fmt.Sprintf("%.1f", hi) {
		return fmt.Sprintf("%.1f Gbit/s", lo)
	}
	return fmt.Sprintf("%.1f-%.1f Gbit/s", lo, hi)
}

// explainPlacements compares the fastest and the slowest placement of the
// same stream count: where each end's threads ran and how busy those CPUs
// were, and where the receiver's softirq ran.
func explainPlacements(fast, slow *PointSummary, fastRuns, slowRuns []*result.Result, t Topology) string {
	ratio := fast.MedianGbps / slow.MedianGbps
	s := fmt.Sprintf("Placement %s ran %.2f× as fast as %s (median %.2f vs %.2f Gbit/s, %d stream%s).",
		fast.Placement, ratio, slow.Placement, fast.MedianGbps, slow.MedianGbps, fast.Streams, plural(fast.Streams))
	return s + " With " + slow.Placement + ": " + placementFacts(slowRuns, t) + "; with " + fast.Placement + ": " + placementFacts(fastRuns, t) + "."
}

// placementFacts says where a point's threads ran and what their CPUs
// did.
func placementFacts(runs []*result.Result, t Topology) string {
	cl, sv := make([]endLoad, len(runs)), make([]endLoad, len(runs))
	for i, r := range runs {
		cl[i], sv[i] = loadOf(r, "client"), loadOf(r, "server")
	}
	c, s := meanLoad(cl), meanLoad(sv)
	same := sameMachine(runs[0])
	var parts []string
	switch {
	case same && len(c.app) > 0 && slices.Equal(c.app, s.app):
		parts = append(parts, fmt.Sprintf("client and server threads shared %s (%s) on one machine", cpusName(c.app), busyRange(c, c.app)))
	default:
		if len(c.app) > 0 {
			parts = append(parts, fmt.Sprintf("client on %s (%s)", cpusName(c.app), busyRange(c, c.app)))
		}
		if len(s.app) > 0 {
			parts = append(parts, fmt.Sprintf("server on %s (%s)", cpusName(s.app), busyRange(s, s.app)))
		}
	}
	recv := s
	if receiver(runs[0].Start.Direction) == "client" {
		recv = c
	}
	parts = append(parts, "receiver's "+whereSoftirq(recv, t))
	return strings.Join(parts, ", ")
}

// sameMachine reports whether both ends of a run ran on one kernel (a
// lab, or loopback): then their per-CPU samples are of the same CPUs.
func sameMachine(r *result.Result) bool {
	return r.Start.Client.BootID != "" && r.Start.Client.BootID == r.Start.Server.BootID
}
