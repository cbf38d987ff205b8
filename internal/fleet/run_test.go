package fleet

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeNet is a Runner over an imagined network: every test runs at base
// Gbit/s with a deterministic ±3% wobble, capped by the planted faults. It
// tests the scheduling and the blame, not a network: the real runs are
// the lab's business.
type fakeNet struct {
	base    float64
	sendCap map[string]float64    // a host's send side
	recvCap map[string]float64    // a host's receive side
	pathCap map[[2]string]float64 // one direction of a path
	flaky   map[[2]string]int     // slow (a tenth of base) for the first N tries
	fail    map[[2]string]error   // one direction fails
	down    map[string]bool       // a host whose agent is gone
	// contend: the first N tries of a direction ran at half speed with
	// their record showing contention; busy: every test with the host
	// shows contention, at full speed.
	contend  map[[2]string]int
	busy     map[string]bool
	cancelAt int // cancel after this many calls (with cancel)
	cancel   context.CancelFunc
	// slowAfter: from this call on, every test runs at half speed (the
	// load on a shared machine rose after the first tries).
	slowAfter int

	mu      sync.Mutex
	calls   int
	tries   map[[2]string]int
	inTest  map[string]bool
	overlap string // a host seen in two tests at once
	maxConc int
	conc    int
	specs   []Spec
}

func (f *fakeNet) Run(ctx context.Context, s Spec) (Measurement, error) {
	key := [2]string{s.From.Name, s.To.Name}
	f.mu.Lock()
	f.calls++
	if f.tries == nil {
		f.tries, f.inTest = map[[2]string]int{}, map[string]bool{}
	}
	f.tries[key]++
	try, id := f.tries[key], int64(f.calls)
	for _, h := range key {
		if f.inTest[h] {
			f.overlap = h
		}
		f.inTest[h] = true
	}
	f.conc++
	f.maxConc = max(f.maxConc, f.conc)
	f.specs = append(f.specs, s)
	if f.cancel != nil && f.calls == f.cancelAt {
		f.cancel()
	}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inTest[key[0]], f.inTest[key[1]] = false, false
		f.conc--
		f.mu.Unlock()
	}()
	// Let concurrent tests of a parallel leg overlap in time.
	select {
	case <-time.After(time.Millisecond):
	case <-ctx.Done():
		return Measurement{}, ctx.Err()
	}
	for _, h := range key {
		if f.down[h] {
			return Measurement{}, &HostDownError{Host: h, Err: errors.New("connection refused")}
		}
	}
	if err := f.fail[key]; err != nil {
		return Measurement{}, err
	}
	g := f.base * wobble(key, try)
	if c, ok := f.sendCap[s.From.Name]; ok {
		g = min(g, c*wobble(key, try+7))
	}
	if c, ok := f.recvCap[s.To.Name]; ok {
		g = min(g, c*wobble(key, try+13))
	}
	if c, ok := f.pathCap[key]; ok {
		g = min(g, c*wobble(key, try+17))
	}
	if try <= f.flaky[key] {
		g = f.base / 10
	}
	if f.slowAfter > 0 && int(id) >= f.slowAfter {
		g /= 2
	}
	m := Measurement{Gbps: g, RunID: id}
	if try <= f.contend[key] {
		m.Gbps /= 2
		m.Contention = "CPU 0 of " + s.From.Name + " was 48% busy with other work"
	}
	if f.busy[s.From.Name] || f.busy[s.To.Name] {
		m.Contention = "CPU 1 was 60% busy with other work"
	}
	return m, nil
}

// wobble is a factor in [0.97, 1.03] that depends only on its arguments.
func wobble(key [2]string, try int) float64 {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s>%s#%d", key[0], key[1], try)
	return 0.97 + 0.06*float64(h.Sum32()%1000)/999
}

func fleetOf(n int) []Host {
	hosts := make([]Host, n)
	for i := range hosts {
		hosts[i] = Host{Name: fmt.Sprintf("h%02d", i+1), Address: fmt.Sprintf("198.18.%d.%d", (i+1)/256, (i+1)%256)}
	}
	return hosts
}

func opts() Options {
	return Options{Pattern: Pattern{Kind: PatternPairs}, Duration: 10 * time.Second, Streams: 1, Label: "fleet-test"}
}

func runFake(t *testing.T, n int, o Options, f *fakeNet) *Result {
	t.Helper()
	res, err := Run(context.Background(), fleetOf(n), o, f)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if f.overlap != "" {
		t.Fatalf("host %s was in two tests at once", f.overlap)
	}
	// The document is valid JSON with the contract's fields.
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	json.Unmarshal(b, &doc)
	for _, k := range []string{"schema", "hosts", "pattern", "pairs", "outliers", "verdict"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("document lacks %q", k)
		}
	}
	return res
}

func outliers(r *Result) string {
	var s []string
	for _, o := range r.Outliers {
		s = append(s, o.Kind+" "+o.Name+" "+o.Direction+" "+o.Cause)
	}
	return strings.Join(s, "; ")
}

// TestRunBlame plants one fault per case and checks the blame.
func TestRunBlame(t *testing.T) {
	tests := []struct {
		name     string
		n        int
		parallel bool
		net      *fakeNet
		want     string // the outliers, in order
		slow     int    // pairs with status slow
		retests  int
		// pathChecks: the tries more a slow path gets before it is blamed.
		pathChecks int
	}{
		{name: "healthy", n: 6, net: &fakeNet{base: 9.5}, want: ""},
		{name: "healthy-parallel", n: 6, parallel: true, net: &fakeNet{base: 9.5}, want: ""},
		{name: "send-side", n: 6, net: &fakeNet{base: 9.5, sendCap: map[string]float64{"h03": 1.9}},
			want: "host h03 send slow", slow: 5, retests: 5},
		{name: "receive-side", n: 6, parallel: true, net: &fakeNet{base: 9.5, recvCap: map[string]float64{"h05": 1.9}},
			want: "host h05 receive slow", slow: 5, retests: 5},
		{name: "both-sides", n: 7, net: &fakeNet{base: 9.5, sendCap: map[string]float64{"h02": 3}, recvCap: map[string]float64{"h02": 3}},
			want: "host h02 both slow", slow: 6, retests: 12},
		{name: "path-one-way", n: 6, net: &fakeNet{base: 9.5, pathCap: map[[2]string]float64{{"h05", "h01"}: 4}},
			want: "path h01-h05 receive slow", slow: 1, retests: 1, pathChecks: 2},
		{name: "path-both-ways", n: 5, net: &fakeNet{base: 9.5, pathCap: map[[2]string]float64{{"h02", "h04"}: 4, {"h04", "h02"}: 4}},
			want: "path h02-h04 both slow", slow: 1, retests: 2, pathChecks: 4},
		{name: "host-and-path", n: 8, parallel: true, net: &fakeNet{base: 9.5, sendCap: map[string]float64{"h08": 2},
			pathCap: map[[2]string]float64{{"h01", "h02"}: 5}},
			want: "host h08 send slow; path h01-h02 send slow", slow: 8, retests: 8, pathChecks: 2},
		{name: "flaky-comes-back", n: 6, net: &fakeNet{base: 9.5, flaky: map[[2]string]int{{"h02", "h06"}: 1}},
			want: "", retests: 1},
		{name: "slight-dip-is-noise", n: 6, net: &fakeNet{base: 9.5, sendCap: map[string]float64{"h04": 9.0}}, want: ""},
		{name: "two-hosts-path-only", n: 2, net: &fakeNet{base: 9.5, pathCap: map[[2]string]float64{{"h01", "h02"}: 2}},
			want: "path h01-h02 send slow", slow: 1, retests: 1, pathChecks: 2},
		{name: "three-hosts-send", n: 3, net: &fakeNet{base: 9.5, sendCap: map[string]float64{"h02": 2}},
			want: "host h02 send slow", slow: 2, retests: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts()
			o.Parallel = tt.parallel
			res := runFake(t, tt.n, o, tt.net)
			if got := outliers(res); got != tt.want {
				t.Errorf("outliers %q, want %q\nverdict: %s", got, tt.want, res.Verdict)
			}
			if len(res.Pairs) != tt.n*(tt.n-1)/2 {
				t.Errorf("%d pairs, want %d", len(res.Pairs), tt.n*(tt.n-1)/2)
			}
			slow := 0
			for _, p := range res.Pairs {
				if p.Status == StatusSlow {
					slow++
				}
				if p.AToBGbps == nil || p.BToAGbps == nil {
					t.Errorf("pair %s-%s lacks a direction", p.A, p.B)
				}
			}
			if slow != tt.slow {
				t.Errorf("%d slow pairs, want %d", slow, tt.slow)
			}
			if len(res.Retests) != tt.retests {
				t.Errorf("%d re-tests, want %d: %+v", len(res.Retests), tt.retests, res.Retests)
			}
			// A serial re-test runs after a control (a fine test between
			// two other hosts), when four hosts or more give one.
			// A concurrent path check runs at once with as many controls
			// as ran with its first try, at most two.
			again := tt.retests + tt.pathChecks
			if !tt.parallel && tt.n >= 4 {
				again *= 2
			}
			if tt.parallel {
				again += tt.pathChecks * min(maxPathControls, tt.n/2-1)
			}
			if wantCalls := tt.n*(tt.n-1) + again; tt.net.calls != wantCalls {
				t.Errorf("%d tests ran, want %d", tt.net.calls, wantCalls)
			}
			for _, s := range tt.net.specs {
				if s.Duration != 10*time.Second || s.Streams != 1 || s.Label != "fleet-test" {
					t.Fatalf("spec %+v", s)
				}
			}
			if tt.want == "" && !strings.HasPrefix(res.Verdict, "No outlier") {
				t.Errorf("verdict %q", res.Verdict)
			}
			for _, o := range res.Outliers {
				if name := cmp.Or(o.Way, o.Name); !strings.Contains(res.Verdict, name) {
					t.Errorf("verdict %q does not name %s", res.Verdict, name)
				}
				if o.Kind == KindPath && !strings.Contains(o.Way, "→") && !strings.Contains(o.Way, "↔") {
					t.Errorf("path %s: way %q does not say which way", o.Name, o.Way)
				}
			}
		})
	}
}

// TestRunParallel: --parallel runs each leg's tests at once (⌊n/2⌋), and
// serial never more than one.
func TestRunParallel(t *testing.T) {
	for _, n := range []int{6, 7, 12} {
		o := opts()
		o.Parallel = true
		f := &fakeNet{base: 9.5}
		res := runFake(t, n, o, f)
		if f.maxConc != n/2 {
			t.Errorf("n=%d parallel: at most %d tests at once, want %d", n, f.maxConc, n/2)
		}
		wantRounds := n - 1 + n%2
		if res.Rounds != wantRounds {
			t.Errorf("n=%d: %d rounds, want %d", n, res.Rounds, wantRounds)
		}
		f = &fakeNet{base: 9.5}
		runFake(t, n, opts(), f)
		if f.maxConc != 1 {
			t.Errorf("n=%d serial: %d tests at once", n, f.maxConc)
		}
	}
}

// TestRunFailures: a failing direction is recorded with its reason and the
// matrix goes on; a host whose agent is gone fails its remaining tests
// without running them and is blamed.
func TestRunFailures(t *testing.T) {
	f := &fakeNet{base: 9.5, fail: map[[2]string]error{{"h02", "h04"}: errors.New("connecting to the agent at 198.18.0.4:5301: no route to host")}}
	res := runFake(t, 6, opts(), f)
	if f.calls != 30 {
		t.Errorf("%d tests ran, want all 30", f.calls)
	}
	var p PairResult
	for _, pr := range res.Pairs {
		if pr.A == "h02" && pr.B == "h04" {
			p = pr
		}
	}
	if p.Status != StatusFailed || p.AToB.Status != StatusFailed || !strings.Contains(p.AToB.Error, "no route") || p.AToBGbps != nil || p.BToAGbps == nil {
		t.Errorf("failed pair %+v", p)
	}
	if got := outliers(res); got != "path h02-h04 send failed" {
		t.Errorf("outliers %q", got)
	}

	f = &fakeNet{base: 9.5, down: map[string]bool{"h04": true}}
	res = runFake(t, 6, opts(), f)
	if got := outliers(res); got != "host h04 both failed" {
		t.Errorf("outliers %q, want h04 failed", got)
	}
	// h04's first test finds it down; its other tests are not run.
	ran := 0
	for _, s := range f.specs {
		if s.From.Name == "h04" || s.To.Name == "h04" {
			ran++
		}
	}
	if ran != 1 {
		t.Errorf("%d tests with a down host ran, want 1", ran)
	}
	fails := 0
	for _, pr := range res.Pairs {
		if pr.A == "h04" || pr.B == "h04" {
			if pr.Status != StatusFailed || (pr.AToB.Error == "" && pr.BToA.Error == "") {
				t.Errorf("pair with h04: %+v", pr)
			}
			fails++
		} else if pr.Status != StatusOK {
			t.Errorf("pair %s-%s: %s", pr.A, pr.B, pr.Status)
		}
	}
	if fails != 5 {
		t.Errorf("%d failed pairs, want 5", fails)
	}

	// Hosts known down before the run (their agents did not start) are
	// failed each with its own reason, and none of their tests runs.
	f = &fakeNet{base: 9.5}
	o := opts()
	o.Down = map[string]error{"h01": errors.New("its agent did not start: ssh: connection timed out"), "h02": errors.New("its agent did not start: ssh: no route to host")}
	res, err := Run(context.Background(), fleetOf(2), o, f)
	if err == nil || f.calls != 0 {
		t.Errorf("two hosts, both down: %d tests ran, error %v; want none and an error", f.calls, err)
	}
	if got := outliers(res); got != "host h01 both failed; host h02 both failed" {
		t.Errorf("outliers %q, want both hosts failed", got)
	}
	for i, why := range []string{"timed out", "no route"} {
		if i < len(res.Outliers) && !strings.Contains(res.Outliers[i].Evidence, why) {
			t.Errorf("%s's evidence %q: not its own reason (%s)", res.Outliers[i].Name, res.Outliers[i].Evidence, why)
		}
	}

	// Every test failing is an error, with the reason.
	f = &fakeNet{base: 9.5, down: map[string]bool{"h01": true, "h02": true}}
	if _, err := Run(context.Background(), fleetOf(2), opts(), f); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("all failed: %v", err)
	}
}

// TestRunCancel: a cancelled context stops the run: no test starts after
// it, and Run says how far it got.
func TestRunCancel(t *testing.T) {
	for _, parallel := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		f := &fakeNet{base: 9.5, cancelAt: 7, cancel: cancel}
		o := opts()
		o.Parallel = parallel
		res, err := Run(ctx, fleetOf(8), o, f)
		if !errors.Is(err, context.Canceled) || res == nil || !strings.Contains(res.Verdict, "Interrupted") {
			t.Errorf("parallel=%v: %v, %+v", parallel, err, res)
			continue
		}
		// Serial stops at the 7th test; parallel lets the 7th test's leg
		// (4 tests) be cut short.
		if f.calls > 8 {
			t.Errorf("parallel=%v: %d tests started, want no more after the cancel", parallel, f.calls)
		}
		notRun := 0
		for _, p := range res.Pairs {
			if p.Status == StatusNotRun {
				notRun++
			}
		}
		if notRun == 0 {
			t.Errorf("parallel=%v: no pair marked not run", parallel)
		}
	}
}

func TestRunOptions(t *testing.T) {
	f := &fakeNet{base: 9.5}
	for _, bad := range []func(*Options){
		func(o *Options) { o.ThresholdPct = 100 },
		func(o *Options) { o.ThresholdPct = -5 },
		func(o *Options) { o.Duration = 0 },
		func(o *Options) { o.Streams = 0 },
		func(o *Options) { o.Retests = 99 },
		func(o *Options) { o.Pattern = Pattern{Kind: PatternStar, Center: "h09"} },
	} {
		o := opts()
		bad(&o)
		if _, err := Run(context.Background(), fleetOf(4), o, f); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	dup := fleetOf(3)
	dup[2].Name = "h01"
	if _, err := Run(context.Background(), dup, opts(), f); err == nil {
		t.Error("a host listed twice was accepted")
	}
	if f.calls != 0 {
		t.Errorf("bad options ran %d tests", f.calls)
	}
	// A stricter threshold, no re-tests: the 9.0 host is slow now.
	o := opts()
	o.ThresholdPct, o.Retests = 97, -1
	f = &fakeNet{base: 9.5, sendCap: map[string]float64{"h04": 8.5}}
	res := runFake(t, 6, o, f)
	if got := outliers(res); got != "host h04 send slow" || len(res.Retests) != 0 || f.calls != 30 {
		t.Errorf("threshold 97, no re-tests: %q, %d re-tests, %d calls", got, len(res.Retests), f.calls)
	}
}

// TestRunStar: a star blames its hub like any host; a slow leaf has one
// partner, so it is a path.
func TestRunStar(t *testing.T) {
	o := opts()
	o.Pattern = Pattern{Kind: PatternStar, Center: "h01"}
	res := runFake(t, 6, o, &fakeNet{base: 9.5, recvCap: map[string]float64{"h01": 2}})
	if got := outliers(res); got != "host h01 receive slow" {
		t.Errorf("star, slow hub: %q", got)
	}
	res = runFake(t, 6, o, &fakeNet{base: 9.5, sendCap: map[string]float64{"h04": 2}})
	if got := outliers(res); got != "path h01-h04 receive slow" {
		t.Errorf("star, slow leaf: %q", got)
	}
}

func TestWriteText(t *testing.T) {
	res := runFake(t, 6, opts(), &fakeNet{base: 9.5, sendCap: map[string]float64{"h03": 1.9},
		fail: map[[2]string]error{{"h01", "h02"}: errors.New("agent died")}})
	var b strings.Builder
	if err := res.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"fleet: 6 hosts, design all, pattern pairs, 15 pairs in 5 rounds; 40 tests of 10s with 1 stream", "row sends to column",
		"h03→h01", "slow again", "failed: h01→h02: agent died", "host h03 (send side, slow)", "path h01→h02 (failed)", "verdict: 2 outliers"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	// A matrix row: h03 sends slowly to everyone.
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 7 && f[0] == "h03" {
			for _, c := range f[1:] {
				if c != "-" && !strings.HasSuffix(c, "!") {
					t.Errorf("h03's row: %q", line)
				}
			}
		}
	}
	o := opts()
	o.Design = DesignAll
	big := runFake(t, 20, o, &fakeNet{base: 9.5, sendCap: map[string]float64{"h13": 1}})
	b.Reset()
	big.WriteText(&b)
	if !strings.Contains(b.String(), "19 of 190 pairs not ok") || strings.Contains(b.String(), "row sends to column") {
		t.Errorf("20 hosts:\n%s", b.String())
	}
}

// spanRunner gives every test a measured window of its own: the n-th
// call measured from second n to second n+1 of a fixed day.
type spanRunner struct {
	mu sync.Mutex
	n  int
}

var day0 = time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)

func (s *spanRunner) Run(_ context.Context, _ Spec) (Measurement, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	at := day0.Add(time.Duration(s.n) * time.Second)
	return Measurement{Gbps: 9, RunID: int64(s.n), Start: at, End: at.Add(time.Second)}, nil
}

// TestRunSpans: every try in the document says when it was measured: the
// runner's window when it gives one, else the span of its call, which in
// a serial run never overlaps another's.
func TestRunSpans(t *testing.T) {
	res := runFake(t, 5, opts(), &fakeNet{base: 9.5, flaky: map[[2]string]int{{"h01", "h02"}: 1}})
	var spans []Span
	for _, p := range res.Pairs {
		for _, d := range []Direction{p.AToB, p.BToA} {
			if len(d.TriesAt) != len(d.TriesGbps) || len(d.TriesAt) == 0 {
				t.Fatalf("%s-%s: %d times for %d tries", p.A, p.B, len(d.TriesAt), len(d.TriesGbps))
			}
			spans = append(spans, d.TriesAt...)
		}
	}
	if len(spans) != 22 { // 20 tests, a control and a re-test
		t.Errorf("%d spans, want 22", len(spans))
	}
	slices.SortFunc(spans, func(a, b Span) int { return a.Start.Compare(b.Start) })
	for i := 1; i < len(spans); i++ {
		if spans[i].Start.Before(spans[i-1].End) {
			t.Errorf("serial tests overlap: %+v and %+v", spans[i-1], spans[i])
		}
	}
	got, err := Run(context.Background(), fleetOf(3), opts(), &spanRunner{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range got.Pairs {
		for _, d := range []Direction{p.AToB, p.BToA} {
			sp := d.TriesAt[0]
			if sp.End.Sub(sp.Start) != time.Second || sp.Start.Before(day0) || sp.Start.After(day0.Add(time.Minute)) {
				t.Errorf("%s-%s: %+v is not the runner's window", p.A, p.B, sp)
			}
		}
	}
}

// TestSerialRetestsAgainstControls: a serial run's re-tests come after the
// first tries, when the load may be another: here every test runs at half
// speed from the 31st on. A test slow at first for its own reasons, re-
// tested then, is judged against a control run just before it (a fine
// test between two other hosts, at half speed too): it comes back, and
// nothing is blamed, where the run's own limit would blame its path. A
// real fault stays slow against its controls.
func TestSerialRetestsAgainstControls(t *testing.T) {
	flaky := [2]string{"h02", "h05"}
	f := &fakeNet{base: 9.5, flaky: map[[2]string]int{flaky: 1}, slowAfter: 31}
	res := runFake(t, 6, opts(), f)
	if got := outliers(res); got != "" {
		t.Fatalf("outliers %q under a load that rose after the first tries", got)
	}
	var d Direction
	for _, p := range res.Pairs {
		if p.A == "h02" && p.B == "h05" {
			d = p.AToB
		}
	}
	if d.Status != StatusOK || len(d.TriesGbps) != 2 || !slices.Equal(d.TriesRole, []string{"first", "retest"}) ||
		len(d.TriesSlowBelow) != 2 || d.TriesSlowBelow[1] > 0.6*d.TriesSlowBelow[0] {
		t.Errorf("h02→h05: %+v, want ok, re-tested against a limit halved by its control", d)
	}
	controls := 0
	for _, p := range res.Pairs {
		for _, dir := range []Direction{p.AToB, p.BToA} {
			for _, role := range dir.TriesRole {
				if role == "control" {
					controls++
				}
			}
		}
	}
	if controls != 1 || res.Tests != 32 || len(res.Retests) != 1 {
		t.Errorf("%d controls, %d tests, re-tests %+v; want 1, 32 and h02→h05's", controls, res.Tests, res.Retests)
	}
	var b strings.Builder
	res.WriteText(&b)
	if !strings.Contains(b.String(), "h02→h05") || !strings.Contains(b.String(), "not slow on re-test") {
		t.Errorf("text:\n%s", b.String())
	}

	// A path at a third of the rate stays slow against controls at half.
	f = &fakeNet{base: 9.5, pathCap: map[[2]string]float64{flaky: 3}, slowAfter: 31}
	res = runFake(t, 6, opts(), f)
	if got := outliers(res); got != "path h02-h05 send slow" {
		t.Errorf("outliers %q, want the path h02→h05", got)
	}
	// Without re-tests nothing is controlled.
	o := opts()
	o.Retests = -1
	f = &fakeNet{base: 9.5, flaky: map[[2]string]int{flaky: 1}}
	if res := runFake(t, 6, o, f); f.calls != 30 || res.Tests != 30 {
		t.Errorf("no re-tests: %d calls", f.calls)
	}
}

// TestConcurrentPathChecksAgainstControls: in a concurrent run every test
// runs at half speed from the 31st on (after the first tries). A path slow
// at first for its own reasons and at half speed on re-test (the load of
// its moment, with nothing to compare) is tried again beside controls, at
// once with it: they run at half speed too, so it comes back, and nothing
// is blamed. A real fault stays slow beside its controls.
func TestConcurrentPathChecksAgainstControls(t *testing.T) {
	flaky := [2]string{"h02", "h05"}
	o := opts()
	o.Parallel = true
	f := &fakeNet{base: 9.5, flaky: map[[2]string]int{flaky: 1}, slowAfter: 31}
	res := runFake(t, 6, o, f)
	if got := outliers(res); got != "" {
		t.Fatalf("outliers %q under a load that rose after the first tries\n%s", got, res.Verdict)
	}
	var d Direction
	for _, p := range res.Pairs {
		if p.A == "h02" && p.B == "h05" {
			d = p.AToB
		}
	}
	// first, a re-test slow at the run's limit, a path check beside two
	// controls judged against a limit halved by them.
	if n := len(d.TriesRole); n < 3 || d.TriesRole[n-1] != "retest" || d.TriesAtOnce[n-1] != 3 ||
		len(d.TriesSlowBelow) != n || d.TriesSlowBelow[n-1] > 0.6*d.TriesSlowBelow[0] || d.Status != StatusOK {
		t.Errorf("h02→h05: %+v, want ok, its last try at once with 2 controls against a limit they halved", d)
	}
	controls := 0
	for _, p := range res.Pairs {
		for _, dir := range []Direction{p.AToB, p.BToA} {
			for i, role := range dir.TriesRole {
				if role == "control" {
					controls++
					if dir.TriesAtOnce[i] != 3 {
						t.Errorf("%s-%s: a control with %d tests at once, want 3", p.A, p.B, dir.TriesAtOnce[i])
					}
				}
			}
		}
	}
	if controls != 2 {
		t.Errorf("%d controls, want 2 (one path check)", controls)
	}

	// A path at a third of the rate stays slow beside controls at half.
	f = &fakeNet{base: 9.5, pathCap: map[[2]string]float64{flaky: 3}, slowAfter: 31}
	res = runFake(t, 6, o, f)
	if got := outliers(res); got != "path h02-h05 send slow" {
		t.Errorf("outliers %q, want the path h02→h05", got)
	}
}
