package fleet

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// median of xs (not empty): a plain sort, no interval claimed. (bench's
// benchmath medians add confidence intervals a fleet's threshold does not
// use.)
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func ptr(x float64) *float64 { return &x }

// firstTries lists every test's first try that worked (what has run when
// it is called: the schedule).
func firstTries(res map[[2]int]*outcome) []float64 {
	var xs []float64
	for _, o := range res {
		if o.err == nil && len(o.tries) > 0 {
			xs = append(xs, o.tries[0].gbps)
		}
	}
	return xs
}

// slowLimit is the Gbit/s below which a test is slow: ThresholdPct of the
// median of the first tries, or of the best with FromBest. ok is false
// when no test worked.
func slowLimit(res map[[2]int]*outcome, opts Options) (limit float64, ok bool) {
	xs := firstTries(res)
	if len(xs) == 0 {
		return 0, false
	}
	if opts.Latency {
		// The figures are inverse latencies: above SlowFactor times the
		// best latency is below the best figure over SlowFactor.
		return slices.Max(xs) / opts.SlowFactor, true
	}
	if opts.FromBest {
		return slices.Max(xs) * opts.ThresholdPct / 100, true
	}
	return median(xs) * opts.ThresholdPct / 100, true
}

// status of one direction: ok when a try was not slow; slow when every
// try was and need of them showed no contention; inconclusive when every
// try was slow and fewer were free of contention (a test slow while its
// CPUs were busy with other work says nothing of the network).
func (o *outcome) status(limit float64, haveLimit bool, need int) string {
	switch {
	case o == nil || !o.ran:
		return StatusNotRun
	case o.err != nil:
		return StatusFailed
	case len(o.tries) == 0:
		return StatusNotRun
	case !haveLimit:
		return StatusOK
	}
	clean := 0
	for _, t := range o.tries {
		if t.gbps >= t.limit(limit) {
			return StatusOK
		}
		if t.contention == "" {
			clean++
		}
	}
	if clean < need {
		return StatusInconclusive
	}
	return StatusSlow
}

func (o *outcome) best() float64 {
	b := 0.0
	for _, t := range o.tries {
		b = max(b, t.gbps)
	}
	return b
}

// side is one side of one host: what it sends, or what it receives.
type side struct {
	host int
	send bool
}

// judgement is who is to blame, from every test's status so far.
type judgement struct {
	r      *run
	st     func(from, to int) string
	blamed map[side]bool
	// partners lists each host's partners over every pair tested.
	partners [][]int
}

// of is the side a test (from, to) measures at host h (its sender's send
// side or its receiver's receive side), and the other end's.
func sidesOf(from, to int) (sender, receiver side) {
	return side{host: from, send: true}, side{host: to}
}

// tests lists the directions that measure side s: (h, p) for a send side,
// (p, h) for a receive side, over h's partners.
func (j *judgement) tests(s side) [][2]int {
	var out [][2]int
	for _, p := range j.partners[s.host] {
		if s.send {
			out = append(out, [2]int{s.host, p})
		} else {
			out = append(out, [2]int{p, s.host})
		}
	}
	return out
}

// counts tallies side s's tests whose other end is not blamed (a test
// with a blamed partner says nothing of s): how many were measured (ok or
// slow), how many slow; and of the probes that tested s as a suspect, how
// many were slow and how many ok.
func (j *judgement) counts(s side) (measured, slow, probeSlow, probeOK int) {
	for _, d := range j.tests(s) {
		sender, receiver := sidesOf(d[0], d[1])
		other := receiver
		if !s.send {
			other = sender
		}
		if j.blamed[other] {
			continue
		}
		st := j.st(d[0], d[1])
		if st != StatusOK && st != StatusSlow {
			continue
		}
		measured++
		if st == StatusSlow {
			slow++
		}
		if sus, ok := j.r.suspect[d]; ok && sus == s.send {
			if st == StatusSlow {
				probeSlow++
			} else {
				probeOK++
			}
		}
	}
	return
}

// judge blames sides one at a time, the most convincing first, until no
// side is left that is slow with most (more than half) of at least two
// partners, the hosts proven good the sampled design probed it against
// among them. Each blamed side explains its tests, which then say nothing
// of their other ends: a healthy host whose partners were mostly slow
// receivers is not blamed for them.
func (r *run) judge() *judgement {
	j := &judgement{r: r, blamed: map[side]bool{}, partners: make([][]int, len(r.hosts))}
	j.st = func(from, to int) string { return r.res[[2]int{from, to}].status(r.limit, r.haveLimit, r.need()) }
	for _, p := range r.pairs {
		j.partners[p.A] = append(j.partners[p.A], p.B)
		j.partners[p.B] = append(j.partners[p.B], p.A)
	}
	for i := range j.partners {
		slices.Sort(j.partners[i])
		j.partners[i] = slices.Compact(j.partners[i])
	}
	for {
		var best side
		var bestScore float64
		bestSlow, found := 0, false
		for h := range r.hosts {
			for _, send := range []bool{true, false} {
				s := side{host: h, send: send}
				if j.blamed[s] || r.down[h] != nil {
					continue
				}
				m, sl, _, _ := j.counts(s)
				if m < 2 || 2*sl <= m {
					continue
				}
				score := float64(sl) / float64(m)
				if !found || score > bestScore || score == bestScore && sl > bestSlow {
					best, bestScore, bestSlow, found = s, score, sl, true
				}
			}
		}
		if !found {
			return j
		}
		j.blamed[best] = true
	}
}

// unexplained lists the slow directions that no blamed side explains, in
// the order of the pairs.
func (j *judgement) unexplained() [][2]int {
	var out [][2]int
	for _, p := range j.r.pairs {
		for _, d := range [][2]int{{p.A, p.B}, {p.B, p.A}} {
			snd, rcv := sidesOf(d[0], d[1])
			if j.st(d[0], d[1]) == StatusSlow && !j.blamed[snd] && !j.blamed[rcv] {
				out = append(out, d)
			}
		}
	}
	return out
}

// cleared: side s, probed against hosts proven good, was fine with more
// of them than not.
func (j *judgement) cleared(s side) bool {
	_, _, ps, po := j.counts(s)
	return po >= 1 && po > ps
}

// good says whether side s is proven good: not blamed, measured ok at
// least once, and no slow test of it is left unexplained.
func (j *judgement) good(s side) bool {
	if j.blamed[s] || j.r.down[s.host] != nil {
		return false
	}
	ok := false
	for _, d := range j.tests(s) {
		switch j.st(d[0], d[1]) {
		case StatusOK:
			ok = true
		case StatusSlow:
			snd, rcv := sidesOf(d[0], d[1])
			other := rcv
			if !s.send {
				other = snd
			}
			if !j.blamed[other] {
				return false
			}
		case StatusFailed, StatusInconclusive:
			return false
		}
	}
	return ok
}

// analyse builds the result: pairs, re-tests, outliers and the verdict.
func (r *run) analyse() *Result {
	opts := r.opts
	res := &Result{Schema: Schema, Label: opts.Label, Hosts: r.hosts, Pattern: opts.Pattern.String(), Design: opts.Design,
		Partners: opts.Partners, Seed: opts.Seed, Parallel: opts.Parallel, DurationS: opts.Duration.Seconds(),
		Streams: opts.Streams, ThresholdPct: opts.ThresholdPct, Rounds: len(r.sched.Rounds), Tests: r.ran, Legs: r.legs,
		Pairs: []PairResult{}, Retests: []Retest{}, Outliers: []Outlier{}}
	if opts.Design == DesignSampled {
		res.Pattern = PatternPairs
	}
	res.FromBest = opts.FromBest && !opts.Latency
	switch {
	case r.haveLimit && opts.Latency:
		r.latencyFigures(res)
	case r.haveLimit:
		res.MedianGbps = ptr(round3(median(firstTries(r.res))))
		res.SlowBelowGbps = ptr(round3(r.limit))
	}
	j := r.judge()
	for _, p := range r.pairs {
		res.Pairs = append(res.Pairs, r.pairResult(p, j.st))
	}
	slices.SortStableFunc(res.Pairs, func(x, y PairResult) int { return cmpPair(r.hosts, x, y) })
	res.Retests = r.retests(j.st)
	res.Halving = r.halving
	b := blame{r: r, j: j, med: round3(r.limit * 100 / opts.ThresholdPct)}
	if opts.Latency && res.BestUs != nil {
		b.med = *res.BestUs
	}
	res.Outliers = b.outliers()
	res.Verdict = verdict(res, r.res)
	return res
}

// cmpPair orders pairs by their hosts' places in the host list.
func cmpPair(hosts []Host, x, y PairResult) int {
	idx := func(name string) int {
		return slices.IndexFunc(hosts, func(h Host) bool { return h.Name == name })
	}
	if c := idx(x.A) - idx(y.A); c != 0 {
		return c
	}
	return idx(x.B) - idx(y.B)
}

func (r *run) pairResult(tp testedPair, st func(int, int) string) PairResult {
	a, b := min(tp.A, tp.B), max(tp.A, tp.B)
	pr := PairResult{A: r.hosts[a].Name, B: r.hosts[b].Name, Round: tp.round, Probe: tp.probe}
	dirStatus := func(from, to int) string {
		if tp.probe && r.res[[2]int{from, to}] == nil {
			return StatusUntested
		}
		return st(from, to)
	}
	pr.AToB, pr.AToBGbps = direction(r.res[[2]int{a, b}], dirStatus(a, b), r.limit)
	pr.BToA, pr.BToAGbps = direction(r.res[[2]int{b, a}], dirStatus(b, a), r.limit)
	if r.opts.Latency {
		pr.AToBGbps, pr.AToBUs, pr.AToBP99Us = nil, latencyOf(r.res[[2]int{a, b}]), p99Of(r.res[[2]int{a, b}])
		pr.BToAGbps, pr.BToAUs, pr.BToAP99Us = nil, latencyOf(r.res[[2]int{b, a}]), p99Of(r.res[[2]int{b, a}])
		latencyTries(&pr.AToB, r.res[[2]int{a, b}], r.limit)
		latencyTries(&pr.BToA, r.res[[2]int{b, a}], r.limit)
	}
	pr.Retested = r.res[[2]int{a, b}].retested() || r.res[[2]int{b, a}].retested()
	sts := []string{pr.AToB.Status, pr.BToA.Status}
	switch {
	case slices.Contains(sts, StatusFailed):
		pr.Status = StatusFailed
	case slices.Contains(sts, StatusSlow):
		pr.Status = StatusSlow
	case slices.Contains(sts, StatusInconclusive):
		pr.Status = StatusInconclusive
	case slices.Contains(sts, StatusNotRun):
		pr.Status = StatusNotRun
	default:
		pr.Status = StatusOK
	}
	return pr
}

// retested says whether a direction was tried again for being slow (a
// control's tries do not count).
func (o *outcome) retested() bool {
	if o == nil {
		return false
	}
	for _, t := range o.tries {
		if t.role == kindRetest {
			return true
		}
	}
	return false
}

func direction(o *outcome, status string, limit float64) (Direction, *float64) {
	d := Direction{Status: status, TriesGbps: []float64{}}
	if o == nil {
		return d, nil
	}
	contended, scaled := false, false
	for _, t := range o.tries {
		d.TriesGbps = append(d.TriesGbps, round3(t.gbps))
		d.TriesAt = append(d.TriesAt, t.span)
		d.TriesAtOnce = append(d.TriesAtOnce, t.atOnce)
		d.TriesContention = append(d.TriesContention, t.contention)
		d.TriesRole = append(d.TriesRole, roles[t.role])
		d.TriesSlowBelow = append(d.TriesSlowBelow, round3(t.limit(limit)))
		contended = contended || t.contention != ""
		scaled = scaled || t.slowBelow > 0
		if t.runID != 0 {
			d.RunIDs = append(d.RunIDs, t.runID)
		}
	}
	if !contended {
		d.TriesContention = nil
	}
	if !scaled {
		d.TriesSlowBelow = nil
	}
	if len(o.tries) < 2 {
		d.TriesRole = nil
	}
	if o.err != nil {
		d.Error = o.err.Error()
		return d, nil
	}
	if len(o.tries) == 0 {
		return d, nil
	}
	return d, ptr(round3(o.best()))
}

// retests lists the tests tried more than once, in the order of the
// pairs.
func (r *run) retests(st func(int, int) string) []Retest {
	out := []Retest{}
	for _, p := range r.pairs {
		for _, k := range [][2]int{{p.A, p.B}, {p.B, p.A}} {
			o := r.res[k]
			if o == nil || len(o.tries) < 2 || !o.retested() && !r.suspect[k] {
				continue
			}
			status := st(k[0], k[1])
			rt := Retest{From: r.hosts[k[0]].Name, To: r.hosts[k[1]].Name, FirstGbps: round3(o.tries[0].gbps),
				Confirmed: status == StatusSlow, Status: status}
			contended, scaled := false, false
			for i, t := range o.tries {
				if t.role == kindControl {
					continue // a control of another test's moment, not a re-test of this one
				}
				if i > 0 {
					rt.RetestsGbps = append(rt.RetestsGbps, round3(t.gbps))
				}
				rt.AtOnce = append(rt.AtOnce, t.atOnce)
				rt.Contention = append(rt.Contention, t.contention)
				rt.SlowBelowGbps = append(rt.SlowBelowGbps, round3(t.limit(r.limit)))
				contended = contended || t.contention != ""
				scaled = scaled || t.slowBelow > 0
			}
			if !contended {
				rt.Contention = nil
			}
			if !scaled {
				rt.SlowBelowGbps = nil
			}
			if r.opts.Latency {
				latencyRetest(&rt, o, r.limit)
			}
			out = append(out, rt)
		}
	}
	return out
}

// blame turns a judgement into outliers.
type blame struct {
	r   *run
	j   *judgement
	med float64 // the fleet's median test, Gbit/s (a latency run: its best test, µs)
}

// share says how g compares with the fleet: "21% of the fleet's median
// 9.42 Gbit/s".
func (b *blame) share(g float64) string {
	if b.med <= 0 {
		return ""
	}
	if b.r.opts.Latency {
		return fmt.Sprintf("%.1f× the fleet's best %s µs", g/b.med, usText(b.med))
	}
	what := "median"
	if b.r.opts.FromBest {
		what = "best"
	}
	return fmt.Sprintf("%.0f%% of the fleet's %s %s Gbit/s", 100*g/b.med, what, gbpsText(b.med))
}

func (b *blame) outliers() []Outlier {
	r, j := b.r, b.j
	n := len(r.hosts)
	failedHost := make([]bool, n)
	out := []Outlier{}
	for h := 0; h < n; h++ {
		var failedWith []int
		for _, p := range j.partners[h] {
			if j.st(h, p) == StatusFailed || j.st(p, h) == StatusFailed {
				failedWith = append(failedWith, p)
			}
		}
		switch {
		case r.down[h] != nil:
			failedHost[h] = true
			out = append(out, Outlier{Kind: KindHost, Name: r.hosts[h].Name, Direction: DirBoth, Cause: CauseFailed,
				Evidence: r.down[h].Error(), Partners: b.names(failedWith)})
		case len(j.partners[h]) >= 2 && 2*len(failedWith) > len(j.partners[h]):
			failedHost[h] = true
			out = append(out, Outlier{Kind: KindHost, Name: r.hosts[h].Name, Direction: DirBoth, Cause: CauseFailed,
				Evidence: fmt.Sprintf("tests with %d of its %d partner%s failed; the first: %s", len(failedWith), len(j.partners[h]), plural(len(j.partners[h])), b.firstFailure(h, failedWith)),
				Partners: b.names(failedWith)})
		}
	}
	for h := 0; h < n; h++ {
		if o, ok := b.hostOutlier(h); ok {
			out = append(out, o)
		}
	}
	seen := map[[2]int]bool{}
	for _, p := range r.pairs {
		a, c := min(p.A, p.B), max(p.A, p.B)
		if seen[[2]int{a, c}] {
			continue
		}
		seen[[2]int{a, c}] = true
		out = append(out, b.pathOutliers(a, c, failedHost)...)
	}
	return out
}

// slowWith lists the partners of side s with which its tests were slow,
// and their best Gbit/s; measured counts its ok and slow tests.
func (b *blame) slowWith(s side) (partners []int, gbps []float64, measured int) {
	for _, d := range b.j.tests(s) {
		st := b.j.st(d[0], d[1])
		if st == StatusOK || st == StatusSlow {
			measured++
		}
		if st == StatusSlow {
			p := d[1]
			if !s.send {
				p = d[0]
			}
			partners = append(partners, p)
			gbps = append(gbps, b.r.figure(b.r.res[d]))
		}
	}
	return partners, gbps, measured
}

// hostOutlier blames host h when a side of it is blamed: when it sends,
// when it receives, or both.
func (b *blame) hostOutlier(h int) (Outlier, bool) {
	snd, rcv := b.j.blamed[side{host: h, send: true}], b.j.blamed[side{host: h}]
	if !snd && !rcv {
		return Outlier{}, false
	}
	sp, sg, sm := b.slowWith(side{host: h, send: true})
	rp, rg, rm := b.slowWith(side{host: h})
	var dir, ev string
	var slow []int
	var gbps []float64
	switch {
	case snd && rcv:
		dir, slow, gbps = DirBoth, union(sp, rp), append(sg, rg...)
	case snd:
		dir, slow, gbps = DirSend, sp, sg
	default:
		dir, slow, gbps = DirReceive, rp, rg
	}
	m := round3(median(gbps))
	switch dir {
	case DirSend:
		ev = fmt.Sprintf("it sent %s (median) to %d of its %d partner%s", b.r.atText(m), len(sp), sm, plural(sm))
	case DirReceive:
		ev = fmt.Sprintf("it received %s (median) from %d of its %d partner%s", b.r.atText(m), len(rp), rm, plural(rm))
	default:
		ev = fmt.Sprintf("it sent to %d of its %d partner%s and received from %d of %d %s (median)", len(sp), sm, plural(sm), len(rp), rm, b.r.atText(m))
	}
	if probes := b.probeText(h, snd, rcv); probes != "" {
		ev += ", " + probes
	}
	ev += ", " + b.share(m)
	o := Outlier{Kind: KindHost, Name: b.r.hosts[h].Name, Direction: dir, Cause: CauseSlow, Evidence: ev,
		MedianGbps: ptr(m), Partners: b.names(slow)}
	if b.r.opts.Latency {
		o.MedianGbps, o.MedianUs = nil, ptr(m)
	}
	return o, true
}

// probeText says how the probes of a blamed host went: "2 of 2 hosts
// proven good among them".
func (b *blame) probeText(h int, snd, rcv bool) string {
	slow, all := 0, 0
	for _, s := range []side{{host: h, send: true}, {host: h}} {
		if s.send && !snd || !s.send && !rcv {
			continue
		}
		_, _, ps, po := b.j.counts(s)
		slow, all = slow+ps, all+ps+po
	}
	if all == 0 {
		return ""
	}
	return fmt.Sprintf("slow with %d of the %d host%s proven good it was tried against", slow, all, plural(all))
}

// pathOutliers blames the path a-c for its slow tests that no blamed side
// explains, and for its failed tests that no failed host explains.
func (b *blame) pathOutliers(a, c int, failedHost []bool) []Outlier {
	r, j := b.r, b.j
	var out []Outlier
	name := r.hosts[a].Name + "-" + r.hosts[c].Name
	explained := func(from, to int) bool {
		snd, rcv := sidesOf(from, to)
		return j.blamed[snd] || j.blamed[rcv]
	}
	ab := j.st(a, c) == StatusSlow && !explained(a, c)
	ca := j.st(c, a) == StatusSlow && !explained(c, a)
	if ab || ca {
		var gbps []float64
		if ab {
			gbps = append(gbps, r.figure(r.res[[2]int{a, c}]))
		}
		if ca {
			gbps = append(gbps, r.figure(r.res[[2]int{c, a}]))
		}
		dir := DirBoth
		switch {
		case ab && !ca:
			dir = DirSend
		case ca && !ab:
			dir = DirReceive
		}
		way := pathDir(r.hosts[a].Name, r.hosts[c].Name, dir)
		m := round3(median(gbps))
		ev := fmt.Sprintf("%s, %s, while neither host is slow with most of its partners", r.figText(m), b.share(m))
		if cl := b.clearedText(a, c, ab, ca); cl != "" {
			ev += "; " + cl
		}
		o := Outlier{Kind: KindPath, Name: name, Direction: dir, Way: way, Cause: CauseSlow,
			Evidence: ev, MedianGbps: ptr(m), Partners: []string{r.hosts[a].Name, r.hosts[c].Name}}
		if r.opts.Latency {
			o.MedianGbps, o.MedianUs = nil, ptr(m)
		}
		out = append(out, o)
	}
	if failedHost[a] || failedHost[c] {
		return out
	}
	fab, fca := j.st(a, c) == StatusFailed, j.st(c, a) == StatusFailed
	if fab || fca {
		dir, o := DirBoth, r.res[[2]int{a, c}]
		switch {
		case fab && !fca:
			dir = DirSend
		case fca && !fab:
			dir, o = DirReceive, r.res[[2]int{c, a}]
		}
		way := pathDir(r.hosts[a].Name, r.hosts[c].Name, dir)
		out = append(out, Outlier{Kind: KindPath, Name: name, Direction: dir, Way: way, Cause: CauseFailed,
			Evidence: o.err.Error(), Partners: []string{r.hosts[a].Name, r.hosts[c].Name}})
	}
	return out
}

// clearedText says which ends of a slow path probes cleared.
func (b *blame) clearedText(a, c int, ab, ca bool) string {
	var parts []string
	add := func(s side) {
		if b.j.cleared(s) {
			what := "sends well to"
			if !s.send {
				what = "receives well from"
			}
			parts = append(parts, fmt.Sprintf("%s %s hosts proven good", b.r.hosts[s.host].Name, what))
		}
	}
	if ab {
		add(side{host: a, send: true})
		add(side{host: c})
	}
	if ca {
		add(side{host: c, send: true})
		add(side{host: a})
	}
	return strings.Join(parts, ", ")
}

// pathDir names the tests of a path in a direction: "h01→h05".
func pathDir(a, c, dir string) string {
	switch dir {
	case DirSend:
		return a + "→" + c
	case DirReceive:
		return c + "→" + a
	}
	return a + "↔" + c
}

func (b *blame) firstFailure(h int, partners []int) string {
	for _, p := range partners {
		for _, k := range [][2]int{{h, p}, {p, h}} {
			if o := b.r.res[k]; o != nil && o.err != nil {
				return o.err.Error()
			}
		}
	}
	return "unknown"
}

func (b *blame) names(idx []int) []string {
	out := make([]string, 0, len(idx))
	for _, i := range idx {
		out = append(out, b.r.hosts[i].Name)
	}
	return out
}

func union(a, b []int) []int {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// gbpsText writes Gbit/s with two decimals, three below 1.
func gbpsText(g float64) string {
	if g < 1 {
		return fmt.Sprintf("%.3f", g)
	}
	return fmt.Sprintf("%.2f", g)
}

// inconclusive lists the directions that stayed inconclusive, with the
// first try's contention.
func inconclusive(r *Result) []string {
	var out []string
	for _, p := range r.Pairs {
		for _, d := range []struct {
			from, to string
			dir      Direction
		}{{p.A, p.B, p.AToB}, {p.B, p.A, p.BToA}} {
			if d.dir.Status != StatusInconclusive {
				continue
			}
			why := ""
			for _, c := range d.dir.TriesContention {
				if c != "" {
					why = c
					break
				}
			}
			out = append(out, d.from+"→"+d.to+": "+why)
		}
	}
	return out
}

// verdict says in a few sentences what the run found.
func verdict(r *Result, res map[[2]int]*outcome) string {
	if r.MedianGbps == nil && r.BestUs == nil {
		return "No test worked, so nothing can be compared; the first failure: " + firstError(res) + "."
	}
	inc := inconclusive(r)
	var s string
	if len(r.Outliers) == 0 {
		lo, hi := math.Inf(1), 0.0
		for _, p := range r.Pairs {
			for _, x := range []struct {
				g  *float64
				st string
			}{{cmp.Or(p.AToBGbps, p.AToBUs), p.AToB.Status}, {cmp.Or(p.BToAGbps, p.BToAUs), p.BToA.Status}} {
				if x.g != nil && x.st == StatusOK {
					lo, hi = min(lo, *x.g), max(hi, *x.g)
				}
			}
		}
		what := "every test"
		if len(inc) > 0 {
			what = "every conclusive test"
		}
		if r.Metric == MetricLatency {
			s = fmt.Sprintf("No outlier: %s of the %d pair%s of %d hosts stayed within %g× the best latency %s µs",
				what, len(r.Pairs), plural(len(r.Pairs)), len(r.Hosts), r.SlowFactor, usText(*r.BestUs))
			if hi > 0 {
				s += fmt.Sprintf(" (%s to %s µs)", usText(lo), usText(hi))
			}
		} else {
			of, ref := "median", *r.MedianGbps
			if r.FromBest && r.SlowBelowGbps != nil {
				of, ref = "best", round3(*r.SlowBelowGbps*100/r.ThresholdPct)
			}
			s = fmt.Sprintf("No outlier: %s of the %d pair%s of %d hosts reached %g%% of the %s %s Gbit/s",
				what, len(r.Pairs), plural(len(r.Pairs)), len(r.Hosts), r.ThresholdPct, of, gbpsText(ref))
			if hi > 0 {
				s += fmt.Sprintf(" (%s to %s Gbit/s)", gbpsText(lo), gbpsText(hi))
			}
		}
		s += "."
		back := 0
		for _, t := range r.Retests {
			if t.Status == StatusOK {
				back++
			}
		}
		if back > 0 {
			s += fmt.Sprintf(" %d test%s slow at first came back on re-test.", back, plural(back))
		}
	} else {
		var parts []string
		for _, o := range r.Outliers {
			parts = append(parts, sentence(o))
		}
		s = fmt.Sprintf("%d outlier%s among %d hosts: ", len(r.Outliers), plural(len(r.Outliers)), len(r.Hosts)) + strings.Join(parts, " ")
	}
	if n := len(inc); n > 0 {
		s += fmt.Sprintf(" %d test%s stayed inconclusive, slow while %s own record showed contention, and %s not blamed (the first, %s).",
			n, plural(n), map[bool]string{true: "its", false: "their"}[n == 1], map[bool]string{true: "is", false: "are"}[n == 1], inc[0])
	}
	return s
}

func sentence(o Outlier) string {
	switch {
	case o.Kind == KindHost && o.Cause == CauseFailed:
		return fmt.Sprintf("Host %s failed: %s.", o.Name, o.Evidence)
	case o.Kind == KindHost && o.Direction == DirSend:
		return fmt.Sprintf("Host %s is slow when it sends: %s.", o.Name, o.Evidence)
	case o.Kind == KindHost && o.Direction == DirReceive:
		return fmt.Sprintf("Host %s is slow when it receives: %s.", o.Name, o.Evidence)
	case o.Kind == KindHost:
		return fmt.Sprintf("Host %s is slow both ways: %s.", o.Name, o.Evidence)
	case o.Cause == CauseFailed:
		return fmt.Sprintf("The path %s failed: %s.", cmp.Or(o.Way, o.Name), o.Evidence)
	}
	return fmt.Sprintf("The path %s is slow: %s.", cmp.Or(o.Way, o.Name), o.Evidence)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
