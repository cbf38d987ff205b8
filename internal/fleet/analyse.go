package fleet

import (
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

// firstTries lists every test's first try that worked.
func firstTries(res map[[2]int]*outcome) []float64 {
	var xs []float64
	for _, o := range res {
		if o.err == nil && len(o.tries) > 0 {
			xs = append(xs, o.tries[0])
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
	if opts.FromBest {
		return slices.Max(xs) * opts.ThresholdPct / 100, true
	}
	return median(xs) * opts.ThresholdPct / 100, true
}

// status of one direction.
func (o *outcome) status(limit float64, haveLimit bool) string {
	switch {
	case o == nil || !o.ran:
		return StatusNotRun
	case o.err != nil:
		return StatusFailed
	case len(o.tries) == 0:
		return StatusNotRun
	case haveLimit && allBelow(o.tries, limit):
		return StatusSlow
	}
	return StatusOK
}

func (o *outcome) best() float64 { return slices.Max(o.tries) }

// analyse builds the result: pairs, re-tests, outliers and the verdict.
func analyse(hosts []Host, sched Schedule, res map[[2]int]*outcome, down map[int]error, opts Options) *Result {
	r := &Result{Schema: Schema, Label: opts.Label, Hosts: hosts, Pattern: opts.Pattern.String(),
		Parallel: opts.Parallel, DurationS: opts.Duration.Seconds(), Streams: opts.Streams,
		ThresholdPct: opts.ThresholdPct, Rounds: len(sched.Rounds), Tests: sched.Tests(),
		Pairs: []PairResult{}, Retests: []Retest{}, Outliers: []Outlier{}}
	limit, haveLimit := slowLimit(res, opts)
	if haveLimit {
		r.MedianGbps = ptr(round3(median(firstTries(res))))
		r.SlowBelowGbps = ptr(round3(limit))
	}
	st := func(from, to int) string { return res[[2]int{from, to}].status(limit, haveLimit) }
	for ri, round := range sched.Rounds {
		for _, p := range round {
			a, b := min(p.A, p.B), max(p.A, p.B)
			r.Pairs = append(r.Pairs, pairResult(hosts, res, a, b, ri+1, st))
		}
	}
	slices.SortStableFunc(r.Pairs, func(x, y PairResult) int {
		return cmpPair(hosts, x, y)
	})
	r.Retests = retests(hosts, sched, res, limit)
	b := blame{hosts: hosts, sched: sched, res: res, down: down, st: st, med: limit * 100 / opts.ThresholdPct}
	r.Outliers = b.outliers()
	r.Verdict = verdict(r, res)
	return r
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

func pairResult(hosts []Host, res map[[2]int]*outcome, a, b, round int, st func(int, int) string) PairResult {
	pr := PairResult{A: hosts[a].Name, B: hosts[b].Name, Round: round}
	pr.AToB, pr.AToBGbps = direction(res[[2]int{a, b}], st(a, b))
	pr.BToA, pr.BToAGbps = direction(res[[2]int{b, a}], st(b, a))
	pr.Retested = len(pr.AToB.TriesGbps) > 1 || len(pr.BToA.TriesGbps) > 1
	sts := []string{pr.AToB.Status, pr.BToA.Status}
	switch {
	case slices.Contains(sts, StatusFailed):
		pr.Status = StatusFailed
	case slices.Contains(sts, StatusSlow):
		pr.Status = StatusSlow
	case slices.Contains(sts, StatusNotRun):
		pr.Status = StatusNotRun
	default:
		pr.Status = StatusOK
	}
	return pr
}

func direction(o *outcome, status string) (Direction, *float64) {
	d := Direction{Status: status, TriesGbps: []float64{}}
	if o == nil {
		return d, nil
	}
	for _, g := range o.tries {
		d.TriesGbps = append(d.TriesGbps, round3(g))
	}
	d.TriesAt = o.spans
	d.RunIDs = o.runIDs
	if o.err != nil {
		d.Error = o.err.Error()
		return d, nil
	}
	if len(o.tries) == 0 {
		return d, nil
	}
	return d, ptr(round3(o.best()))
}

// retests lists the tests tried more than once, in schedule order.
func retests(hosts []Host, sched Schedule, res map[[2]int]*outcome, limit float64) []Retest {
	out := []Retest{}
	for _, leg := range sched.Legs() {
		for _, t := range leg {
			o := res[[2]int{t.From, t.To}]
			if o == nil || len(o.tries) < 2 {
				continue
			}
			rt := Retest{From: hosts[t.From].Name, To: hosts[t.To].Name, FirstGbps: round3(o.tries[0]),
				Confirmed: allBelow(o.tries, limit)}
			for _, g := range o.tries[1:] {
				rt.RetestsGbps = append(rt.RetestsGbps, round3(g))
			}
			out = append(out, rt)
		}
	}
	return out
}

// blame finds the outliers.
type blame struct {
	hosts []Host
	sched Schedule
	res   map[[2]int]*outcome
	down  map[int]error
	st    func(from, to int) string
	med   float64 // the fleet's median test, Gbit/s
}

// share says how g compares with the fleet: "21% of the fleet's median
// 9.42 Gbit/s".
func (b *blame) share(g float64) string {
	if b.med <= 0 {
		return ""
	}
	return fmt.Sprintf("%.0f%% of the fleet's median %s Gbit/s", 100*g/b.med, gbpsText(b.med))
}

// side counts one host's tests in one direction: with how many partners
// it was measured, and with how many it was slow.
type side struct {
	measured, slow []int
}

// mostSlow: slow with most (more than half) of at least two partners. One
// partner cannot tell a host from the path between the two.
func (s side) mostSlow() bool { return len(s.measured) >= 2 && 2*len(s.slow) > len(s.measured) }

func (b *blame) partners() [][]int {
	out := make([][]int, len(b.hosts))
	for _, p := range b.sched.Pairs() {
		out[p.A] = append(out[p.A], p.B)
		out[p.B] = append(out[p.B], p.A)
	}
	for i := range out {
		slices.Sort(out[i])
	}
	return out
}

func (b *blame) outliers() []Outlier {
	partners := b.partners()
	n := len(b.hosts)
	send, recv := make([]side, n), make([]side, n)
	failedHost := make([]bool, n)
	out := []Outlier{}
	for h := 0; h < n; h++ {
		var failedWith []int
		for _, p := range partners[h] {
			switch b.st(h, p) {
			case StatusSlow:
				send[h].slow = append(send[h].slow, p)
				send[h].measured = append(send[h].measured, p)
			case StatusOK:
				send[h].measured = append(send[h].measured, p)
			}
			switch b.st(p, h) {
			case StatusSlow:
				recv[h].slow = append(recv[h].slow, p)
				recv[h].measured = append(recv[h].measured, p)
			case StatusOK:
				recv[h].measured = append(recv[h].measured, p)
			}
			if b.st(h, p) == StatusFailed || b.st(p, h) == StatusFailed {
				failedWith = append(failedWith, p)
			}
		}
		switch {
		case b.down[h] != nil:
			failedHost[h] = true
			out = append(out, Outlier{Kind: KindHost, Name: b.hosts[h].Name, Direction: DirBoth, Cause: CauseFailed,
				Evidence: b.down[h].Error(), Partners: b.names(failedWith)})
		case len(partners[h]) >= 2 && 2*len(failedWith) > len(partners[h]):
			failedHost[h] = true
			out = append(out, Outlier{Kind: KindHost, Name: b.hosts[h].Name, Direction: DirBoth, Cause: CauseFailed,
				Evidence: fmt.Sprintf("tests with %d of its %d partners failed; the first: %s", len(failedWith), len(partners[h]), b.firstFailure(h, failedWith)),
				Partners: b.names(failedWith)})
		}
	}
	for h := 0; h < n; h++ {
		if o, ok := b.hostOutlier(h, send[h], recv[h]); ok {
			out = append(out, o)
		}
	}
	for _, p := range b.sched.Pairs() {
		a, c := min(p.A, p.B), max(p.A, p.B)
		out = append(out, b.pathOutliers(a, c, send, recv, failedHost)...)
	}
	return out
}

// hostOutlier blames host h when it is slow with most partners when it
// sends, when it receives, or both.
func (b *blame) hostOutlier(h int, s, r side) (Outlier, bool) {
	var dir string
	var slow []int
	var gbps []float64
	switch {
	case s.mostSlow() && r.mostSlow():
		dir, slow = DirBoth, union(s.slow, r.slow)
		gbps = append(b.bests(h, s.slow, true), b.bests(h, r.slow, false)...)
	case s.mostSlow():
		dir, slow, gbps = DirSend, s.slow, b.bests(h, s.slow, true)
	case r.mostSlow():
		dir, slow, gbps = DirReceive, r.slow, b.bests(h, r.slow, false)
	default:
		return Outlier{}, false
	}
	name := b.hosts[h].Name
	m := round3(median(gbps))
	var ev string
	switch dir {
	case DirSend:
		ev = fmt.Sprintf("it sent at %s Gbit/s (median) to %d of its %d partners", gbpsText(m), len(s.slow), len(s.measured))
	case DirReceive:
		ev = fmt.Sprintf("it received at %s Gbit/s (median) from %d of its %d partners", gbpsText(m), len(r.slow), len(r.measured))
	default:
		ev = fmt.Sprintf("it sent to %d of its %d partners and received from %d of %d at %s Gbit/s (median)", len(s.slow), len(s.measured), len(r.slow), len(r.measured), gbpsText(m))
	}
	ev += ", " + b.share(m)
	return Outlier{Kind: KindHost, Name: name, Direction: dir, Cause: CauseSlow, Evidence: ev,
		MedianGbps: ptr(m), Partners: b.names(slow)}, true
}

// pathOutliers blames the path a-c for its slow tests that no blamed host
// explains, and for its failed tests that no failed host explains.
func (b *blame) pathOutliers(a, c int, send, recv []side, failedHost []bool) []Outlier {
	var out []Outlier
	name := b.hosts[a].Name + "-" + b.hosts[c].Name
	explained := func(from, to int) bool { return send[from].mostSlow() || recv[to].mostSlow() }
	ab := b.st(a, c) == StatusSlow && !explained(a, c)
	ca := b.st(c, a) == StatusSlow && !explained(c, a)
	if ab || ca {
		var gbps []float64
		if ab {
			gbps = append(gbps, b.res[[2]int{a, c}].best())
		}
		if ca {
			gbps = append(gbps, b.res[[2]int{c, a}].best())
		}
		dir := DirBoth
		switch {
		case ab && !ca:
			dir = DirSend
		case ca && !ab:
			dir = DirReceive
		}
		m := round3(median(gbps))
		out = append(out, Outlier{Kind: KindPath, Name: name, Direction: dir, Cause: CauseSlow,
			Evidence: fmt.Sprintf("%s carried %s Gbit/s, %s, while neither host is slow with most of its partners",
				pathDir(b.hosts[a].Name, b.hosts[c].Name, dir), gbpsText(m), b.share(m)),
			MedianGbps: ptr(m), Partners: []string{b.hosts[a].Name, b.hosts[c].Name}})
	}
	if failedHost[a] || failedHost[c] {
		return out
	}
	fab, fca := b.st(a, c) == StatusFailed, b.st(c, a) == StatusFailed
	if fab || fca {
		dir, o := DirBoth, b.res[[2]int{a, c}]
		switch {
		case fab && !fca:
			dir = DirSend
		case fca && !fab:
			dir, o = DirReceive, b.res[[2]int{c, a}]
		}
		out = append(out, Outlier{Kind: KindPath, Name: name, Direction: dir, Cause: CauseFailed,
			Evidence: pathDir(b.hosts[a].Name, b.hosts[c].Name, dir) + ": " + o.err.Error(),
			Partners: []string{b.hosts[a].Name, b.hosts[c].Name}})
	}
	return out
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

// bests is the best tries of h's tests with partners, h sending or not.
func (b *blame) bests(h int, partners []int, sending bool) []float64 {
	var out []float64
	for _, p := range partners {
		k := [2]int{p, h}
		if sending {
			k = [2]int{h, p}
		}
		out = append(out, b.res[k].best())
	}
	return out
}

func (b *blame) firstFailure(h int, partners []int) string {
	for _, p := range partners {
		for _, k := range [][2]int{{h, p}, {p, h}} {
			if o := b.res[k]; o != nil && o.err != nil {
				return o.err.Error()
			}
		}
	}
	return "unknown"
}

func (b *blame) names(idx []int) []string {
	out := make([]string, 0, len(idx))
	for _, i := range idx {
		out = append(out, b.hosts[i].Name)
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

// verdict says in a few sentences what the run found.
func verdict(r *Result, res map[[2]int]*outcome) string {
	if r.MedianGbps == nil {
		return "No test worked, so nothing can be compared; the first failure: " + firstError(res) + "."
	}
	med := *r.MedianGbps
	if len(r.Outliers) == 0 {
		lo, hi := math.Inf(1), 0.0
		for _, p := range r.Pairs {
			for _, g := range []*float64{p.AToBGbps, p.BToAGbps} {
				if g != nil {
					lo, hi = min(lo, *g), max(hi, *g)
				}
			}
		}
		s := fmt.Sprintf("No outlier: every test of the %d pairs of %d hosts reached %g%% of the median %s Gbit/s (%s to %s Gbit/s).",
			len(r.Pairs), len(r.Hosts), r.ThresholdPct, gbpsText(med), gbpsText(lo), gbpsText(hi))
		if n := len(r.Retests); n > 0 {
			s += fmt.Sprintf(" %d test%s slow at first came back on re-test.", n, plural(n))
		}
		return s
	}
	var parts []string
	for _, o := range r.Outliers {
		parts = append(parts, sentence(o))
	}
	return fmt.Sprintf("%d outlier%s among %d hosts: ", len(r.Outliers), plural(len(r.Outliers)), len(r.Hosts)) + strings.Join(parts, " ")
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
		return fmt.Sprintf("The path %s failed: %s.", o.Name, o.Evidence)
	}
	return fmt.Sprintf("The path %s is slow: %s.", o.Name, o.Evidence)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
