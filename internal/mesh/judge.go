package mesh

import (
	"fmt"
	"math"
	"time"
)

// State is a pair's state.
type State string

// The states of a pair. Unknown is a pair not judged yet: the first
// bucket of its probes has not closed.
const (
	OK       State = "ok"
	Degraded State = "degraded"
	Down     State = "down"
	Unknown  State = "unknown"
)

// The judgement's constants (the package comment says what each does).
const (
	BucketLen       = 5 * time.Second
	BaselineBuckets = 120 // 10 minutes
	RecentBuckets   = 4   // 20 s
	ReportBuckets   = 12  // a minute: what status and the metrics show
	DownBuckets     = 2   // 10 s without a reply
	MinBaseline     = 3   // baseline buckets before latency is judged
	MinLost         = 5
	LossMargin      = 0.01
	LossP           = 1e-4
	// lossFloor is the least loss ratio a baseline is taken to have: a
	// pair of no loss at all in its baseline is not judged against zero,
	// where any loss would be "infinitely" above it.
	lossFloor = 0.001
	// lossCeiling is the most loss a baseline is taken to have: however
	// long a pair has lost more, it is not its normal (a lasting fault
	// that once looked ok for a moment would otherwise become one).
	lossCeiling = 0.005
	RTTSigmas   = 6
	RTTRel      = 0.5
	RTTAbs      = 100 * time.Microsecond
	// rttBadOf: of the RecentBuckets, this many must be slow.
	rttBadOf      = 3
	GoodputSigmas = 6
	GoodputRel    = 0.2
	// GoodputHistory is how many throughput tests a pair keeps.
	GoodputHistory     = 8
	MinGoodputBaseline = 3
	// recoverAfter is how many judgements in a row without a degradation
	// a degraded pair needs to be ok again: no flapping at the edge.
	recoverAfter = 2
)

// Bucket is one BucketLen of a pair's probes.
type Bucket struct {
	// End is when the bucket closed, Unix seconds.
	End int64
	// Sent counts the probes sent; Judged those whose way to the peer is
	// known (the peer's count of the probes it received covers them), and
	// Lost those of them that never reached the peer; Replies the
	// replies received.
	Sent, Judged, Lost, Replies uint32
	// P50 and P99 are the replies' round trips, ns; 0 when none came.
	P50, P99 uint32
	// Contended: either host's record showed contention in the bucket
	// (its CPUs busy with other work, its agent's thread late).
	Contended bool
	// HostDrops: the receiving host dropped datagrams for want of socket
	// buffer in the bucket: a loss that is the host's, not the path's.
	HostDrops bool
}

func (b Bucket) lossRatio() (float64, bool) {
	if b.Judged == 0 {
		return 0, false
	}
	return float64(b.Lost) / float64(b.Judged), true
}

// Tput is one throughput test of a pair.
type Tput struct {
	// End is when it ended, Unix seconds.
	End  int64
	Gbps float64
	// Inconclusive says why the test's own record does not let it judge
	// the pair (a CPU both ends shared, other load), or "".
	Inconclusive string
}

// Verdict is a pair's state and why.
type Verdict struct {
	State State
	// Since is when the pair entered State, Unix seconds.
	Since int64
	// Why says what degraded the pair ("" when ok).
	Why string
	// Inconclusive says what would have degraded the pair and why it does
	// not count, or "".
	Inconclusive string
	// Loss is the forward loss ratio over the last ReportBuckets; nil
	// when no probe's fate is known.
	Loss *float64
	// Goodput is the last conclusive throughput test, Gbit/s; nil before
	// one.
	Goodput *float64
	// Probes counts the probes sent over the last ReportBuckets.
	Probes int
}

// Pair is one directed pair's history and state. Its zero value is a
// pair with no history. It is not safe for concurrent use.
type Pair struct {
	buckets  [BaselineBuckets]Bucket
	excluded [BaselineBuckets]bool // in a degradation: not baseline
	n, head  int                   // buckets held; index of the next
	tputs    [GoodputHistory]Tput
	nt       int

	state   State
	since   int64
	why     string
	inconcl string
	okRun   int

	scratch [BaselineBuckets]float64
}

// at returns the i-th newest bucket (0 the newest) and whether it is
// excluded from baselines.
func (p *Pair) at(i int) (*Bucket, bool) {
	j := (p.head - 1 - i + 2*BaselineBuckets) % BaselineBuckets
	return &p.buckets[j], p.excluded[j]
}

// Add adds a closed bucket and judges the pair again.
func (p *Pair) Add(b Bucket) Verdict {
	j := p.head
	p.buckets[j] = b
	p.excluded[j] = false
	p.head = (p.head + 1) % BaselineBuckets
	p.n = min(p.n+1, BaselineBuckets)
	p.judge(b.End)
	// A bucket inside a degradation is never baseline, so that a lasting
	// fault does not become the pair's normal.
	p.excluded[j] = p.state == Degraded || p.state == Down
	return p.Verdict()
}

// AddTput adds a throughput test and judges the pair again.
func (p *Pair) AddTput(t Tput) Verdict {
	if p.nt == GoodputHistory {
		copy(p.tputs[:], p.tputs[1:])
		p.nt--
	}
	p.tputs[p.nt] = t
	p.nt++
	p.judge(t.End)
	return p.Verdict()
}

// Verdict returns the pair's state as last judged.
func (p *Pair) Verdict() Verdict {
	v := Verdict{State: p.state, Since: p.since, Why: p.why, Inconclusive: p.inconcl}
	if v.State == "" {
		v.State = Unknown
	}
	var judged, lost uint32
	for i := range min(p.n, ReportBuckets) {
		b, _ := p.at(i)
		judged += b.Judged
		lost += b.Lost
		v.Probes += int(b.Sent)
	}
	if judged > 0 {
		l := float64(lost) / float64(judged)
		v.Loss = &l
	}
	for i := p.nt - 1; i >= 0; i-- {
		if p.tputs[i].Inconclusive == "" {
			g := p.tputs[i].Gbps
			v.Goodput = &g
			break
		}
	}
	return v
}

// finding is one reason to degrade a pair, and whether the pair's own
// record excuses it.
type finding struct {
	why, excuse string
}

// judge sets the pair's state from its history, at now.
func (p *Pair) judge(now int64) {
	if p.n == 0 && p.nt == 0 {
		return
	}
	var found []finding
	if why, down := p.isDown(); down {
		p.set(Down, why, "", now)
		return
	}
	if f, ok := p.lossFinding(); ok {
		found = append(found, f)
	}
	if f, ok := p.rttFinding(); ok {
		found = append(found, f)
	}
	if f, ok := p.goodputFinding(); ok {
		found = append(found, f)
	}
	var whys, excuses []string
	for _, f := range found {
		if f.excuse == "" {
			whys = append(whys, f.why)
		} else {
			excuses = append(excuses, f.why+", but "+f.excuse)
		}
	}
	inconcl := joinClauses(excuses)
	if len(whys) > 0 {
		p.set(Degraded, joinClauses(whys), inconcl, now)
		return
	}
	if p.state == Degraded || p.state == Down {
		p.okRun++
		if p.okRun < recoverAfter {
			p.inconcl = inconcl
			return
		}
	}
	p.set(OK, "", inconcl, now)
}

func (p *Pair) set(s State, why, inconcl string, now int64) {
	if s != OK {
		p.okRun = 0
	}
	if p.state != s {
		p.state, p.since = s, now
	}
	p.why, p.inconcl = why, inconcl
}

func joinClauses(cs []string) string {
	out := ""
	for i, c := range cs {
		if i > 0 {
			out += "; "
		}
		out += c
	}
	return out
}

// isDown: the last DownBuckets buckets sent probes and got no reply.
func (p *Pair) isDown() (string, bool) {
	if p.n < DownBuckets {
		return "", false
	}
	var sent uint32
	for i := range DownBuckets {
		b, _ := p.at(i)
		if b.Sent == 0 || b.Replies > 0 {
			return "", false
		}
		sent += b.Sent
	}
	return fmt.Sprintf("no reply to %d probes in %s", sent, DownBuckets*BucketLen), true
}

// baselineLoss is the median loss ratio of the baseline buckets, at
// least lossFloor, and how many buckets it rests on.
func (p *Pair) baselineLoss() (float64, int) {
	xs := p.scratch[:0]
	for i := RecentBuckets; i < p.n; i++ {
		b, ex := p.at(i)
		if r, ok := b.lossRatio(); ok && !ex {
			xs = append(xs, r)
		}
	}
	if len(xs) == 0 {
		return lossFloor, 0
	}
	return min(max(median(xs), lossFloor), lossCeiling), len(xs)
}

func (p *Pair) lossFinding() (finding, bool) {
	var judged, lost int
	hostDrops := false
	for i := range min(p.n, RecentBuckets) {
		b, _ := p.at(i)
		judged += int(b.Judged)
		lost += int(b.Lost)
		hostDrops = hostDrops || b.HostDrops
	}
	p0, _ := p.baselineLoss()
	ratio := float64(lost) / float64(judged)
	if p.state == Degraded {
		// Hysteresis: a degraded pair stays so while its loss stays
		// clearly above the baseline, so that a lucky window in a lasting
		// fault does not make it ok for a moment.
		if judged == 0 || lost < MinLost/2 || ratio < p0+LossMargin/2 {
			return finding{}, false
		}
	} else if judged == 0 || lost < MinLost || ratio < p0+LossMargin || ratio < 2*p0 || binomTail(judged, lost, p0) >= LossP {
		return finding{}, false
	}
	f := finding{why: fmt.Sprintf("loss %s (%d of %d probes) against %s before", pct(ratio), lost, judged, pct(p0))}
	if hostDrops {
		f.excuse = "the receiving host dropped datagrams for want of socket buffer then (its CPU busy with other work)"
	}
	return f, true
}

// baselineRTT is the median and MAD of the baseline buckets' p50s, ns,
// and how many buckets they rest on.
func (p *Pair) baselineRTT() (med, mad float64, n int) {
	xs := p.scratch[:0]
	for i := RecentBuckets; i < p.n; i++ {
		b, ex := p.at(i)
		if b.P50 > 0 && !ex && !b.Contended {
			xs = append(xs, float64(b.P50))
		}
	}
	if len(xs) == 0 {
		return 0, 0, 0
	}
	med, mad = medianMAD(xs)
	return med, mad, len(xs)
}

func (p *Pair) rttFinding() (finding, bool) {
	med, mad, n := p.baselineRTT()
	if n < MinBaseline || p.n < RecentBuckets {
		return finding{}, false
	}
	limit := med + max(RTTSigmas*madScale*mad, RTTRel*med, float64(RTTAbs))
	slow, contended := 0, false
	var worst uint32
	for i := range RecentBuckets {
		b, _ := p.at(i)
		if b.P50 > 0 && float64(b.P50) > limit {
			slow++
			worst = max(worst, b.P50)
			contended = contended || b.Contended
		}
	}
	if slow < rttBadOf {
		return finding{}, false
	}
	f := finding{why: fmt.Sprintf("RTT p50 up to %s against %s before", usText(float64(worst)), usText(med))}
	if contended {
		f.excuse = "a host's CPU was busy with other work then"
	}
	return f, true
}

func (p *Pair) goodputFinding() (finding, bool) {
	if p.nt == 0 {
		return finding{}, false
	}
	last := p.tputs[p.nt-1]
	xs := p.scratch[:0]
	for _, t := range p.tputs[:p.nt-1] {
		if t.Inconclusive == "" {
			xs = append(xs, t.Gbps)
		}
	}
	if len(xs) < MinGoodputBaseline {
		return finding{}, false
	}
	med, mad := medianMAD(xs)
	if last.Gbps >= med-max(GoodputSigmas*madScale*mad, GoodputRel*med) {
		return finding{}, false
	}
	f := finding{why: fmt.Sprintf("goodput %s Gbit/s against %s before", gbps(last.Gbps), gbps(med))}
	if last.Inconclusive != "" {
		f.excuse = last.Inconclusive
	}
	return f, true
}

func pct(r float64) string {
	switch {
	case r == 0:
		return "0%"
	case r < 0.001:
		return fmt.Sprintf("%.3f%%", 100*r)
	case r < 0.1:
		return fmt.Sprintf("%.1f%%", 100*r)
	}
	return fmt.Sprintf("%.0f%%", 100*r)
}

// usText writes ns as microseconds or milliseconds.
func usText(ns float64) string {
	if ns >= 1e6 {
		return fmt.Sprintf("%.2f ms", ns/1e6)
	}
	return fmt.Sprintf("%.0f µs", math.Round(ns/1e3))
}

func gbps(g float64) string {
	if g >= 10 {
		return fmt.Sprintf("%.1f", g)
	}
	return fmt.Sprintf("%.2f", g)
}
