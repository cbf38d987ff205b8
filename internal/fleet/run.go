package fleet

import (
	"context"
	"errors"
	"fmt"
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
// host.
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
	// Retest is true for a re-test of a slow test.
	Retest bool
}

// Measurement is what one test measured.
type Measurement struct {
	Gbps  float64
	RunID int64
	// Start and End are when the measured part of the test ran; zero
	// values mean the span of the Run call.
	Start, End time.Time
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
	Pattern  Pattern
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
	// Retests is how many times a slow test is tried again; 0 means
	// DefaultRetests, a negative number none.
	Retests int
	Label   string
	// Progress, when set, is called after every test (from one goroutine
	// at a time).
	Progress func(Event)
}

// Defaults of Options.
const (
	DefaultThresholdPct = 90
	DefaultRetests      = 1
	maxRetests          = 5
)

// RDMAThresholdPct is ClusterKit's rule for RDMA bandwidth: a pair below
// 93% of the best is bad (with FromBest).
const RDMAThresholdPct = 93

// Event reports one finished test.
type Event struct {
	From, To string
	Retest   bool
	Gbps     float64
	Err      error
	Done     int // tests finished so far, re-tests included
	Total    int // tests planned (re-tests are added as they are planned)
}

// Check validates the options against the host list.
func (o *Options) check(hosts []Host) error {
	if o.ThresholdPct == 0 {
		o.ThresholdPct = DefaultThresholdPct
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
	return nil
}

// outcome is what happened to one direction of a pair.
type outcome struct {
	ran    bool
	tries  []float64 // Gbit/s of each try that worked, the first first
	spans  []Span    // when each of them ran
	runIDs []int64
	err    error // the first try's error: the test failed
}

// run is one fleet run in progress.
type run struct {
	hosts   []Host
	opts    Options
	runner  Runner
	res     map[[2]int]*outcome // by (from, to)
	down    map[int]error
	pending map[int]error // hosts found down in the current leg
	done    int
	total   int
	mu      sync.Mutex
}

// Run runs the matrix of pattern opts.Pattern over hosts with runner, then
// re-tests the slow tests and analyses the result. A cancelled ctx stops
// it: Run returns the result so far (tests not run marked so) with the
// context's error. It fails without a result on bad options, and with a
// result when every test failed.
func Run(ctx context.Context, hosts []Host, opts Options, runner Runner) (*Result, error) {
	if err := opts.check(hosts); err != nil {
		return nil, err
	}
	names := make([]string, len(hosts))
	for i, h := range hosts {
		names[i] = h.Name
	}
	sched, err := NewSchedule(len(hosts), opts.Pattern, names)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	r := &run{hosts: hosts, opts: opts, runner: runner, res: map[[2]int]*outcome{}, down: map[int]error{}, total: sched.Tests()}
	for _, leg := range sched.Legs() {
		if ctx.Err() != nil {
			break
		}
		r.runLeg(ctx, leg, false)
	}
	if ctx.Err() == nil {
		r.retest(ctx, sched)
	}
	res := analyse(hosts, sched, r.res, r.down, opts)
	res.WallS = round3(time.Since(start).Seconds())
	if err := ctx.Err(); err != nil {
		res.Verdict = fmt.Sprintf("Interrupted after %d of %d tests. ", r.done, r.total) + res.Verdict
		return res, fmt.Errorf("fleet run interrupted after %d of %d tests: %w", r.done, r.total, context.Cause(ctx))
	}
	if res.MedianGbps == nil {
		return res, fmt.Errorf("every test failed; the first: %s", firstError(r.res))
	}
	return res, nil
}

// runLeg runs tests that share no host: at once when Parallel is set, one
// after the other otherwise.
func (r *run) runLeg(ctx context.Context, tests []Test, retest bool) {
	if !r.opts.Parallel {
		for _, t := range tests {
			if ctx.Err() != nil {
				return
			}
			r.one(ctx, t, retest)
		}
		r.markDown()
		return
	}
	var wg sync.WaitGroup
	for _, t := range tests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.one(ctx, t, retest)
		}()
	}
	wg.Wait()
	r.markDown()
}

// one runs test t, or fails it at once when one of its hosts is down.
func (r *run) one(ctx context.Context, t Test, retest bool) {
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
	r.mu.Unlock()
	var m Measurement
	err := skip
	if err == nil {
		began := time.Now()
		m, err = r.runner.Run(ctx, Spec{From: r.hosts[t.From], To: r.hosts[t.To],
			Duration: r.opts.Duration, Streams: r.opts.Streams, Label: r.opts.Label, Retest: retest})
		if err == nil && !(m.Gbps >= 0) {
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
	case err != nil && !retest:
		o.err = err
	case err == nil:
		o.tries = append(o.tries, m.Gbps)
		o.spans = append(o.spans, Span{Start: m.Start.UTC().Round(time.Millisecond), End: m.End.UTC().Round(time.Millisecond)})
		if m.RunID != 0 {
			o.runIDs = append(o.runIDs, m.RunID)
		}
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
		ev := Event{From: r.hosts[t.From].Name, To: r.hosts[t.To].Name, Retest: retest, Err: err, Done: r.done, Total: r.total}
		if err == nil {
			ev.Gbps = m.Gbps
		}
		r.opts.Progress(ev)
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

// retest tries every slow test again, one at a time (so that a test slow
// only under a parallel leg's load is told apart), up to Retests times,
// stopping for a test as soon as one try is not slow.
func (r *run) retest(ctx context.Context, sched Schedule) {
	for i := 0; i < r.opts.Retests; i++ {
		limit, ok := slowLimit(r.res, r.opts)
		if !ok {
			return
		}
		var tests []Test
		for _, p := range sched.Pairs() {
			for _, d := range [][2]int{{p.A, p.B}, {p.B, p.A}} {
				o := r.res[d]
				if o != nil && o.err == nil && len(o.tries) == i+1 && allBelow(o.tries, limit) {
					tests = append(tests, Test{From: d[0], To: d[1]})
				}
			}
		}
		r.mu.Lock()
		r.total += len(tests)
		r.mu.Unlock()
		for _, t := range tests {
			if ctx.Err() != nil {
				return
			}
			r.one(ctx, t, true)
			r.markDown()
		}
	}
}

func allBelow(xs []float64, limit float64) bool {
	for _, x := range xs {
		if x >= limit {
			return false
		}
	}
	return true
}

// firstError is the error of the first failed test, in host order.
func firstError(res map[[2]int]*outcome) string {
	best, msg := [2]int{-1, -1}, "no test ran"
	for k, o := range res {
		if o.err != nil && (best[0] < 0 || k[0] < best[0] || k[0] == best[0] && k[1] < best[1]) {
			best, msg = k, o.err.Error()
		}
	}
	return msg
}
