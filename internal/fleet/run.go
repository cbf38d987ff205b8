package fleet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Runner runs one test: From sends to To for Duration with Streams
// streams. It returns the goodput in Gbit/s and the ID the run is stored
// under in the results database (0 when not stored), or an error. A Runner
// that knows a host itself is unusable (its agent died or never answered)
// says so with a *HostDownError, and the fleet run then fails that host's
// remaining tests without running them. Run calls it from several
// goroutines at once when Parallel is set, never twice at once for one
// host, but for an incast's receiver (Spec.Incast), which takes every
// sender's test at once.
type Runner interface {
	Run(ctx context.Context, s Spec) (Measurement, error)
}

// Spec is one test as a Runner gets it.
type Spec struct {
	From, To Host
	Duration time.Duration
	Streams  int
	// Label is the fleet run's label, for the results database.
	Label string
	// Retest is true for a re-test of a slow test, Probe for a test of a
	// suspect against a host proven good (the sampled design).
	Retest, Probe bool
	// AtOnce is how many tests run at once in this test's leg (1: alone).
	AtOnce int
	// Incast marks a test of an incast: AtOnce senders test toward To at
	// once, so To's agent must take that many clients at once.
	Incast bool
}

// Measurement is what one test measured.
type Measurement struct {
	Gbps  float64
	RunID int64
	// Start and End are when the measured part of the test ran; zero
	// values mean the span of the Run call.
	Start, End time.Time
	// Contention says why the test's own record shows that it did not
	// have its CPUs to itself: both ends on one CPU, other work on a CPU
	// its threads needed, threads left unpinned where the ends share a
	// kernel; "" when it shows none. A slow test that was contended is
	// inconclusive, not blamed.
	Contention string
	// FromIface and ToIface are the interfaces the test ran on at each
	// end ("" when unknown).
	FromIface, ToIface string
	// LatencyUs and P99Us are a latency test's (Options.Latency) typical
	// (median) and 99th-percentile latency in microseconds, as perftest's
	// ib_write_lat reports them; Gbps is not used then.
	LatencyUs, P99Us float64
	// Retransmits is the segments the sender retransmitted over the test
	// (nil when unknown); ToNIC how the receiver's NIC and qdisc counters
	// grew over it (nil when not read). An incast reports them.
	Retransmits *uint64
	ToNIC       *NICReading
}

// NICReading is how one end's NIC and qdisc counters grew over a test, as
// the test's run document carries them (end.nic_counters).
type NICReading struct {
	Interface string `json:"interface"`
	// Deltas is each cause's growth ("rx_no_buffer", "qdisc_drops", …):
	// a cause absent is unknown, not zero.
	Deltas map[string]uint64 `json:"deltas,omitempty"`
	// NotRead says why the counters could not be read.
	NotRead string `json:"not_read,omitempty"`
}

// HostDownError says that a host cannot take part any more.
type HostDownError struct {
	Host string
	Err  error
}

func (e *HostDownError) Error() string { return e.Host + " is down: " + e.Err.Error() }
func (e *HostDownError) Unwrap() error { return e.Err }

// Options are a fleet run's settings.
type Options struct {
	Pattern Pattern
	// Design is DesignAll or DesignSampled; "" means DesignFor the
	// number of hosts. Partners (sampled: 0 means DefaultPartners) and
	// Seed (sampled: 0 draws one, recorded in the result) shape the
	// sampled design.
	Design   string
	Partners int
	Seed     int64
	Duration time.Duration
	Streams  int
	// Parallel runs each leg's tests at once; otherwise one at a time.
	Parallel bool
	// ThresholdPct: a test below this share of the fleet's median test
	// (of its best with FromBest) is slow; 0 means DefaultThresholdPct.
	ThresholdPct float64
	// FromBest measures ThresholdPct from the fleet's best test, as
	// ClusterKit's rule for RDMA does (RDMAThresholdPct of the best
	// bandwidth), rather than from the median.
	FromBest bool
	// Latency: the tests measure latency (Measurement.LatencyUs), and a
	// test is bad above SlowFactor times the fleet's best first try (0
	// means RDMALatencyFactor), ClusterKit's rule for RDMA latency.
	// ThresholdPct and FromBest are not used then.
	Latency    bool
	SlowFactor float64
	// Halving adds ClusterKit's re-tests of the RDMA matrix: the hosts
	// in several bad pairs are re-tested against hosts known good, half
	// of the suspects at a time (halving.go).
	Halving bool
	// Retests is how many times a slow test is tried again; 0 means
	// DefaultRetests, a negative number none.
	Retests int
	Label   string
	// Down are hosts known to be down before the run starts, by name
	// (their agents did not start): each is failed with its own reason
	// and its tests are not run. Otherwise a host is found down by the
	// first test it takes part in, and a test of two down hosts names
	// only one of them.
	Down map[string]error
	// Progress, when set, is called after every test (from one goroutine
	// at a time).
	Progress func(Event)
}

// Defaults of Options.
const (
	DefaultThresholdPct = 90
	// DefaultRetests: a slow test is confirmed by one re-test that is
	// slow too and not contended; a second re-test is for the tests whose
	// first re-test was contended again.
	DefaultRetests = 2
	maxRetests     = 5
)

// RDMAThresholdPct is ClusterKit's rule for RDMA bandwidth: a pair below
// 93% of the best is bad (with FromBest).
const RDMAThresholdPct = 93

// RDMALatencyFactor is ClusterKit's rule for RDMA latency: a pair above
// 2.1 times the best typical latency is bad (Options.Latency).
const RDMALatencyFactor = 2.1

// Event reports one finished test.
type Event struct {
	From, To      string
	Retest, Probe bool
	// Control is a test that was fine run again before a serial re-test,
	// to judge the re-test against the load of its moment.
	Control bool
	Gbps    float64
	// LatencyUs is a latency test's typical latency (Options.Latency).
	LatencyUs float64
	Err       error
	// Contention is the Measurement's.
	Contention string
	Done       int // tests finished so far, re-tests included
	Total      int // tests planned (re-tests are added as they are planned)
}

// check validates the options against the host list and fills in the
// defaults.
func (o *Options) check(hosts []Host) error {
	if o.ThresholdPct == 0 {
		o.ThresholdPct = DefaultThresholdPct
	}
	if o.Latency {
		if o.SlowFactor == 0 {
			o.SlowFactor = RDMALatencyFactor
		}
		if !(o.SlowFactor > 1 && o.SlowFactor <= 100) {
			return fmt.Errorf("a latency test bad above %g times the best: give a factor above 1 (default %g)", o.SlowFactor, RDMALatencyFactor)
		}
	}
	if o.ThresholdPct <= 0 || o.ThresholdPct >= 100 {
		return fmt.Errorf("--threshold %g: give a percentage between 0 and 100 (default %d)", o.ThresholdPct, DefaultThresholdPct)
	}
	switch {
	case o.Retests == 0:
		o.Retests = DefaultRetests
	case o.Retests < 0:
		o.Retests = 0
	case o.Retests > maxRetests:
		return fmt.Errorf("%d re-tests: at most %d", o.Retests, maxRetests)
	}
	if o.Duration <= 0 {
		return errors.New("the test duration must be positive, e.g. -t 10s")
	}
	if o.Streams < 1 {
		return fmt.Errorf("-P %d: at least one stream", o.Streams)
	}
	seen := map[string]bool{}
	for _, h := range hosts {
		if err := h.Validate(); err != nil {
			return err
		}
		if seen[h.Name] {
			return fmt.Errorf("host %s is listed twice", h.Name)
		}
		seen[h.Name] = true
	}
	if o.Pattern.Kind == PatternIncast {
		if err := o.checkIncast(hosts); err != nil {
			return err
		}
	}
	if o.Design == "" {
		o.Design = DesignAll
		if o.Pattern.Kind == PatternPairs || o.Pattern.Kind == "" {
			o.Design = DesignFor(len(hosts))
		}
	}
	switch o.Design {
	case DesignAll:
		if o.Partners != 0 {
			return fmt.Errorf("--partners goes with --design sampled; --design all tests every pair")
		}
		o.Seed = 0
	case DesignSampled:
		if o.Pattern.Kind != PatternPairs && o.Pattern.Kind != "" {
			return fmt.Errorf("--design sampled draws its own pairs: drop --pattern %s", o.Pattern)
		}
		if o.Partners == 0 {
			o.Partners = DefaultPartners
		}
		if o.Seed == 0 {
			o.Seed = newSeed()
		}
		if o.Seed < 0 {
			return fmt.Errorf("--seed %d: a positive number", o.Seed)
		}
	default:
		return fmt.Errorf("--design %q: all or sampled", o.Design)
	}
	return nil
}

// schedule is the opts' schedule over hosts (check first).
func (o *Options) schedule(hosts []Host) (Schedule, error) {
	if o.Design == DesignSampled {
		return SampledSchedule(len(hosts), o.Partners, o.Seed)
	}
	names := make([]string, len(hosts))
	for i, h := range hosts {
		names[i] = h.Name
	}
	return NewSchedule(len(hosts), o.Pattern, names)
}

// try is one measurement of a direction.
type try struct {
	// gbps is the try's figure, higher better: Gbit/s, or for a latency
	// run (Options.Latency) the inverse of its typical latency (1/µs), so
	// that every rule below (slow limits, controls, blame) holds for both
	// alike; us and p99 keep a latency try's own figures.
	gbps       float64
	us, p99    float64
	span       Span
	runID      int64
	atOnce     int
	contention string
	role       testKind
	// slowBelow, when not 0, is the Gbit/s this try is judged against
	// instead of the run's: the run's scaled by a control measured just
	// before it (control).
	slowBelow float64
}

// outcome is what happened to one direction of a pair.
type outcome struct {
	ran   bool
	tries []try // every try that worked, the first first
	err   error // the first try's error: the test failed
}

// testedPair is a pair the run tested: the schedule's, then the probes.
type testedPair struct {
	Pair
	round int // 1-based
	probe bool
}

// run is one fleet run in progress.
type run struct {
	hosts  []Host
	opts   Options
	runner Runner
	sched  Schedule
	pairs  []testedPair
	// suspect names, for a probe direction, the side it tests: its
	// sender's send side (true) or its receiver's receive side.
	suspect map[[2]int]bool
	// checked marks the directions checkPaths tried again.
	checked map[[2]int]bool
	rng     *rand.Rand
	// halving are the rounds of the halving re-tests (halve).
	halving []HalvingRound

	res     map[[2]int]*outcome // by (from, to)
	down    map[int]error
	pending map[int]error // hosts found down in the current leg
	// limit is the Gbit/s below which a test is slow, set once the
	// schedule has run (haveLimit).
	limit     float64
	haveLimit bool
	// nextControl turns the choice of controls over the directions.
	nextControl int
	done        int // tests finished, skipped ones included
	ran         int // tests the runner ran
	legs        int // legs in which a test ran
	total       int
	mu          sync.Mutex
}

// Run runs the schedule of opts over hosts with runner, re-tests the slow
// tests, for the sampled design tests suspects against hosts proven good,
// and analyses the result. A cancelled ctx stops it: Run returns the
// result so far (tests not run marked so) with the context's error. It
// fails without a result on bad options, and with a result when every
// test failed.
func Run(ctx context.Context, hosts []Host, opts Options, runner Runner) (*Result, error) {
	if err := opts.check(hosts); err != nil {
		return nil, err
	}
	var sched Schedule
	if opts.Pattern.Kind != PatternIncast {
		var err error
		if sched, err = opts.schedule(hosts); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	hosts = slices.Clone(hosts) // the run notes each host's interface
	if opts.Pattern.Kind == PatternIncast {
		return runIncast(ctx, hosts, opts, runner, start)
	}
	r := &run{hosts: hosts, opts: opts, runner: runner, sched: sched, res: map[[2]int]*outcome{},
		down: map[int]error{}, suspect: map[[2]int]bool{}, checked: map[[2]int]bool{}, total: sched.Tests(),
		rng: rand.New(rand.NewPCG(uint64(opts.Seed), 0x70726f6265))} // "probe"
	for i, h := range hosts {
		if err := opts.Down[h.Name]; err != nil {
			r.down[i] = &HostDownError{Host: h.Name, Err: err}
		}
	}
	for ri, round := range sched.Rounds {
		for _, p := range round {
			r.pairs = append(r.pairs, testedPair{Pair: p, round: ri + 1})
		}
	}
	for _, leg := range sched.Legs() {
		if ctx.Err() != nil {
			break
		}
		r.runLeg(ctx, leg, kindFirst)
	}
	r.limit, r.haveLimit = slowLimit(r.res, opts)
	if ctx.Err() == nil {
		r.retest(ctx, r.allTests())
	}
	if ctx.Err() == nil && opts.Halving {
		r.halve(ctx)
	}
	// A slow test no blamed side explains is tried again before the
	// sampled design spends probes on its ends (most such tests are
	// noise that does not stay slow), and a probe left slow is checked
	// too.
	if ctx.Err() == nil {
		r.checkPaths(ctx)
	}
	if ctx.Err() == nil && opts.Design == DesignSampled {
		r.resolve(ctx)
		if ctx.Err() == nil {
			r.checkPaths(ctx)
		}
	}
	res := r.analyse()
	res.WallS = round3(time.Since(start).Seconds())
	if err := ctx.Err(); err != nil {
		res.Verdict = fmt.Sprintf("Interrupted after %d of %d tests. ", r.done, r.total) + res.Verdict
		return res, fmt.Errorf("fleet run interrupted after %d of %d tests: %w", r.done, r.total, context.Cause(ctx))
	}
	if !r.haveLimit {
		return res, fmt.Errorf("every test failed; the first: %s", firstError(r.res))
	}
	return res, nil
}

// The kinds of test a leg runs.
type testKind int

const (
	kindFirst testKind = iota
	kindRetest
	kindProbe
	// kindControl is a test that was fine, run again just before a
	// serial re-test or probe: the load of that moment.
	kindControl
)

// roles name the kinds in the document (tries_role).
var roles = [...]string{kindFirst: "first", kindRetest: "retest", kindProbe: "probe", kindControl: "control"}

// runLeg runs tests that share no host: at once when Parallel is set, one
// after the other otherwise.
func (r *run) runLeg(ctx context.Context, tests []Test, kind testKind) {
	// A test with a host down is failed at once: it does not load the leg.
	atOnce := 0
	r.mu.Lock()
	for _, t := range tests {
		if r.down[t.From] == nil && r.down[t.To] == nil {
			atOnce++
		}
	}
	if atOnce > 0 {
		r.legs++
	}
	r.mu.Unlock()
	if !r.opts.Parallel {
		for _, t := range tests {
			if ctx.Err() != nil {
				return
			}
			below := 0.0
			if kind != kindFirst {
				below = r.controlled(ctx, t)
			}
			r.one(ctx, t, kind, 1, below)
			r.markDown()
		}
		return
	}
	var wg sync.WaitGroup
	for _, t := range tests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.one(ctx, t, kind, max(atOnce, 1), 0)
		}()
	}
	wg.Wait()
	r.markDown()
}

// controlled runs, before a serial re-test or probe of t, a control: a
// test that was fine, between two hosts other than t's, again. A serial
// run's re-tests come minutes after the first tries, when the load on
// the hosts (a lab's shared CPUs, a busy fabric) may be another: t is
// judged against the run's slow limit scaled by how the control fared
// against its own first try (never raised). It returns that limit, or 0
// (the run's) when no control could run.
func (r *run) controlled(ctx context.Context, t Test) float64 {
	c, ok := r.control(t)
	if !ok || ctx.Err() != nil {
		return 0
	}
	r.mu.Lock()
	r.total++
	r.mu.Unlock()
	r.one(ctx, c, kindControl, 1, 0)
	r.markDown()
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.res[[2]int{c.From, c.To}]
	if o == nil || len(o.tries) < 2 || o.tries[len(o.tries)-1].role != kindControl || o.tries[0].gbps <= 0 {
		return 0
	}
	drift := o.tries[len(o.tries)-1].gbps / o.tries[0].gbps
	return r.limit * min(1, drift)
}

// control picks the control of a re-test of t: a direction whose first
// try was fine, both its hosts up and neither of t's, taking the fleet's
// directions in turn.
func (r *run) control(t Test) (Test, bool) {
	c := r.controls([]Test{t}, 1)
	if len(c) == 0 {
		return Test{}, false
	}
	return c[0], true
}

// controls picks up to n controls, as control does, that share no host
// with the tests of avoid nor with each other.
func (r *run) controls(avoid []Test, n int) []Test {
	r.mu.Lock()
	defer r.mu.Unlock()
	var dirs [][2]int
	for _, p := range r.pairs {
		dirs = append(dirs, [2]int{p.A, p.B}, [2]int{p.B, p.A})
	}
	busy := map[int]bool{}
	for _, t := range avoid {
		busy[t.From], busy[t.To] = true, true
	}
	var out []Test
	for range dirs {
		if len(out) >= n {
			break
		}
		d := dirs[r.nextControl%len(dirs)]
		r.nextControl++
		if busy[d[0]] || busy[d[1]] || r.down[d[0]] != nil || r.down[d[1]] != nil {
			continue
		}
		if o := r.res[d]; o != nil && o.err == nil && len(o.tries) > 0 && o.tries[0].gbps >= r.limit {
			out = append(out, Test{From: d[0], To: d[1]})
			busy[d[0]], busy[d[1]] = true, true
		}
	}
	return out
}

// maxPathControls bounds the controls that run at once with a concurrent
// run's path checks: enough for a median of the moment, where a large
// fleet's first legs ran hundreds of tests at once.
const maxPathControls = 2

// pathLegs runs the re-tests of slow tests no blamed side explains in a
// concurrent run at once with controls (tests that were fine, between
// other hosts, again): a leg of such re-tests alone holds slow tests
// only, and tests slow together say more about the moment (shared CPUs,
// a busy fabric) than about any one path. Each leg holds as many tests as
// the paths' first tries ran with, up to maxPathControls of them
// controls, and at least one path; each try is judged against the run's
// slow limit scaled by how its best control fared against its own first
// try (never raised), as a serial re-test is, when every control ran free
// of contention: the limit is lowered only as far as every control shows
// the moment slow, not by one control's dip.
func (r *run) pathLegs(ctx context.Context, slow []Test) {
	r.mu.Lock()
	size := 1
	for _, t := range slow {
		if o := r.res[[2]int{t.From, t.To}]; o != nil && len(o.tries) > 0 {
			size = max(size, o.tries[0].atOnce)
		}
	}
	r.mu.Unlock()
	per := max(1, size-maxPathControls)
	for _, leg := range pack(slow) {
		for len(leg) > 0 {
			if ctx.Err() != nil {
				return
			}
			n := min(per, len(leg))
			r.pathLeg(ctx, leg[:n], r.controls(leg[:n], min(maxPathControls, size-n)))
			leg = leg[n:]
		}
	}
}

// pathLeg runs paths and their controls cs at once (pathLegs).
func (r *run) pathLeg(ctx context.Context, paths, cs []Test) {
	r.mu.Lock()
	r.total += len(cs)
	r.legs++
	r.mu.Unlock()
	var wg sync.WaitGroup
	for i, t := range append(slices.Clone(paths), cs...) {
		kind := kindRetest
		if i >= len(paths) {
			kind = kindControl
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.one(ctx, t, kind, len(paths)+len(cs), 0)
		}()
	}
	wg.Wait()
	r.markDown()
	r.mu.Lock()
	defer r.mu.Unlock()
	// Every control must have run, free of contention: a control whose
	// record shows contention ran without its CPUs and says nothing of a
	// try that had them, and one control alone may have dipped for no
	// lasting reason.
	var drift []float64
	for _, c := range cs {
		o := r.res[[2]int{c.From, c.To}]
		if o == nil || len(o.tries) < 2 || o.tries[0].gbps <= 0 {
			return
		}
		last := o.tries[len(o.tries)-1]
		if last.role != kindControl || last.contention != "" {
			return
		}
		drift = append(drift, last.gbps/o.tries[0].gbps)
	}
	if len(drift) == 0 {
		return
	}
	below := r.limit * min(1, slices.Max(drift))
	for _, t := range paths {
		if o := r.res[[2]int{t.From, t.To}]; o != nil && len(o.tries) > 0 && o.tries[len(o.tries)-1].role == kindRetest {
			o.tries[len(o.tries)-1].slowBelow = below
		}
	}
}

// one runs test t, or fails it at once when one of its hosts is down;
// slowBelow, when not 0, is what the try is judged against.
func (r *run) one(ctx context.Context, t Test, kind testKind, atOnce int, slowBelow float64) {
	key := [2]int{t.From, t.To}
	r.mu.Lock()
	o := r.res[key]
	if o == nil {
		o = &outcome{}
		r.res[key] = o
	}
	var skip error
	for _, h := range []int{t.From, t.To} {
		if err := r.down[h]; err != nil && skip == nil {
			skip = fmt.Errorf("not run: %w", err)
		}
	}
	if skip == nil {
		r.ran++
	}
	r.mu.Unlock()
	var m Measurement
	err := skip
	if err == nil {
		began := time.Now()
		m, err = r.runner.Run(ctx, Spec{From: r.hosts[t.From], To: r.hosts[t.To], Duration: r.opts.Duration,
			Streams: r.opts.Streams, Label: r.opts.Label, Retest: kind == kindRetest, Probe: kind == kindProbe, AtOnce: atOnce})
		switch {
		case err != nil:
		case r.opts.Latency && !(m.LatencyUs > 0 && m.LatencyUs < 1e9):
			err = fmt.Errorf("the runner returned a latency of %g µs", m.LatencyUs)
		case r.opts.Latency:
			m.Gbps = 1 / m.LatencyUs
		case !(m.Gbps >= 0):
			err = fmt.Errorf("the runner returned %g Gbit/s", m.Gbps)
		}
		if m.Start.IsZero() || m.End.Before(m.Start) {
			m.Start, m.End = began, time.Now()
		}
	}
	if ctx.Err() != nil && err != nil {
		return // interrupted: not a result
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done++
	o.ran = true
	switch {
	case err != nil && (kind == kindFirst || kind == kindProbe):
		o.err = err
	case err == nil:
		o.tries = append(o.tries, try{gbps: m.Gbps, us: m.LatencyUs, p99: m.P99Us, runID: m.RunID, atOnce: atOnce, contention: m.Contention, role: kind, slowBelow: slowBelow,
			span: Span{Start: m.Start.UTC().Round(time.Millisecond), End: m.End.UTC().Round(time.Millisecond)}})
		r.noteIfaces(t, m)
	}
	var hd *HostDownError
	if errors.As(err, &hd) {
		for _, h := range []int{t.From, t.To} {
			if r.hosts[h].Name == hd.Host && r.down[h] == nil {
				r.pendingDown(h, hd)
			}
		}
	}
	if r.opts.Progress != nil {
		ev := Event{From: r.hosts[t.From].Name, To: r.hosts[t.To].Name, Retest: kind == kindRetest, Probe: kind == kindProbe,
			Control: kind == kindControl, Err: err, Done: r.done, Total: r.total}
		if err == nil {
			ev.Gbps, ev.LatencyUs, ev.Contention = m.Gbps, m.LatencyUs, m.Contention
			if r.opts.Latency {
				ev.Gbps = 0
			}
		}
		r.opts.Progress(ev)
	}
}

// noteIfaces keeps the interfaces a test ran on as its hosts'. The
// caller holds mu.
func (r *run) noteIfaces(t Test, m Measurement) {
	if m.FromIface != "" && r.hosts[t.From].Iface == "" {
		r.hosts[t.From].Iface = m.FromIface
	}
	if m.ToIface != "" && r.hosts[t.To].Iface == "" {
		r.hosts[t.To].Iface = m.ToIface
	}
}

// pendingDown notes a host as down once its leg is over (markDown): within
// a leg no other test has it, so the note only matters to later legs.
// The caller holds mu.
func (r *run) pendingDown(h int, err error) {
	if r.pending == nil {
		r.pending = map[int]error{}
	}
	r.pending[h] = err
}

func (r *run) markDown() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for h, err := range r.pending {
		r.down[h] = err
	}
	r.pending = nil
}

// allTests lists both directions of every pair tested so far, in order.
func (r *run) allTests() []Test {
	var out []Test
	for _, p := range r.pairs {
		out = append(out, Test{From: p.A, To: p.B}, Test{From: p.B, To: p.A})
	}
	return out
}

// retest tries again each of tests that is slow and not yet sure to stay
// slow (unsettled), up to Retests times and once more when a try was
// contended (budget): a test comes back as soon as one try is not slow,
// and is confirmed slow by two tries slow without contention.
// The re-tests of a round run as the first tries did: in legs of
// disjoint tests at once with Parallel (each try records how many ran at
// once), one at a time otherwise.
func (r *run) retest(ctx context.Context, tests []Test) {
	if !r.haveLimit {
		return
	}
	for i := 1; i <= r.opts.Retests+1; i++ {
		var need []Test
		for _, t := range tests {
			if o := r.res[[2]int{t.From, t.To}]; o != nil && len(o.tries) == i && o.unsettled(r.limit, r.need()) && i <= o.budget(r.opts.Retests) {
				need = append(need, t)
			}
		}
		if len(need) == 0 {
			return
		}
		if !r.runTests(ctx, need, kindRetest) {
			return
		}
	}
}

// runTests counts tests into the run's total and runs them, leg by leg
// (legsOf), as kind; it reports false when ctx ended first.
func (r *run) runTests(ctx context.Context, tests []Test, kind testKind) bool {
	r.mu.Lock()
	r.total += len(tests)
	r.mu.Unlock()
	for _, leg := range r.legsOf(tests) {
		if ctx.Err() != nil {
			return false
		}
		r.runLeg(ctx, leg, kind)
	}
	return true
}

// legsOf groups tests into legs: disjoint ones together with Parallel,
// one each otherwise.
func (r *run) legsOf(tests []Test) [][]Test {
	if r.opts.Parallel {
		return pack(tests)
	}
	legs := make([][]Test, len(tests))
	for i, t := range tests {
		legs[i] = []Test{t}
	}
	return legs
}

// limit is the Gbit/s a try is judged against: its own, else the run's.
func (t try) limit(run float64) float64 {
	if t.slowBelow > 0 {
		return t.slowBelow
	}
	return run
}

// budget is how many re-tests a direction gets: retests, and one more
// when a try was contended (it told nothing).
func (o *outcome) budget(retests int) int {
	for _, t := range o.tries {
		if t.contention != "" {
			return retests + 1
		}
	}
	return retests
}

// need is how many tries free of contention make a test that was slow
// every time slow: two (the first try and a re-test that confirms it),
// one when there are no re-tests.
func (r *run) need() int { return min(2, 1+r.opts.Retests) }

// unsettled: every try was slow, and fewer than need of them were free
// of contention: it is not yet sure to stay slow.
func (o *outcome) unsettled(limit float64, need int) bool {
	if o.err != nil || len(o.tries) == 0 {
		return false
	}
	clean := 0
	for _, t := range o.tries {
		if t.gbps >= t.limit(limit) {
			return false
		}
		if t.contention == "" {
			clean++
		}
	}
	return clean < need
}

// checkPaths re-tests, Retests times more, each slow test that no blamed
// side explains, before it is blamed on its path: one direction of one
// pair is all the evidence a path has, where a host has its partners'
// votes, so it must stay slow longer. The tries run as re-tests do, each
// beside controls of its moment: in legs with controls at once when the
// run is concurrent (pathLegs), after one otherwise.
func (r *run) checkPaths(ctx context.Context) {
	if !r.haveLimit || r.opts.Retests == 0 {
		return
	}
	var slow []Test
	for _, d := range r.judge().unexplained() {
		if !r.checked[d] {
			r.checked[d] = true
			slow = append(slow, Test{From: d[0], To: d[1]})
		}
	}
	for i := 0; i < r.opts.Retests && len(slow) > 0; i++ {
		if r.opts.Parallel {
			r.mu.Lock()
			r.total += len(slow)
			r.mu.Unlock()
			r.pathLegs(ctx, slow)
		} else if !r.runTests(ctx, slow, kindRetest) {
			return
		}
		slow = slices.DeleteFunc(slow, func(t Test) bool {
			return r.res[[2]int{t.From, t.To}].status(r.limit, true, r.need()) != StatusSlow
		})
	}
}

func firstError(res map[[2]int]*outcome) string {
	best, msg := [2]int{-1, -1}, "no test ran"
	for k, o := range res {
		if o.err != nil && (best[0] < 0 || k[0] < best[0] || k[0] == best[0] && k[1] < best[1]) {
			best, msg = k, o.err.Error()
		}
	}
	return msg
}
