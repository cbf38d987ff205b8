package fleet

import "time"

// Schema names the JSON document of a fleet run.
const Schema = "linerate.fleet/v1"

// Result is a fleet run: the linerate.fleet/v1 document.
type Result struct {
	Schema  string `json:"schema"`
	Label   string `json:"label,omitempty"`
	Hosts   []Host `json:"hosts"`
	Pattern string `json:"pattern"`
	// Design is DesignAll (every pair of the pattern) or DesignSampled
	// (each host with Partners partners drawn with Seed, then suspects
	// against hosts proven good).
	Design   string `json:"design"`
	Partners int    `json:"partners,omitempty"`
	Seed     int64  `json:"seed,omitempty"`
	// Parallel says each leg's tests ran at once (--concurrent).
	Parallel     bool    `json:"parallel"`
	DurationS    float64 `json:"duration_s"`
	Streams      int     `json:"streams"`
	ThresholdPct float64 `json:"threshold_pct"`
	// FromBest says ThresholdPct is a share of the best first try, not
	// of the median (ClusterKit's rule for RDMA bandwidth).
	FromBest bool `json:"from_best,omitempty"`
	// Rounds is the schedule's: each round runs its pairs in two legs,
	// one per direction. Tests counts every test run, first tries,
	// re-tests and probes alike; Legs every leg run (with Parallel, each
	// leg took about one test's time).
	Rounds int `json:"rounds"`
	Tests  int `json:"tests"`
	Legs   int `json:"legs"`
	// MedianGbps is the median of every scheduled test's first try that
	// worked (null when none did); SlowBelowGbps is ThresholdPct of it.
	MedianGbps    *float64 `json:"median_gbps"`
	SlowBelowGbps *float64 `json:"slow_below_gbps"`
	// Metric is MetricLatency for a latency run (--latency: each test's
	// typical latency, ib_write_lat), absent for bandwidth. A latency
	// run has no Gbit/s: MedianGbps and SlowBelowGbps are null, and
	// ThresholdPct is 100/SlowFactor (the inverse latency's share of the
	// best). BestUs and MedianUs are the best and the median typical
	// latency of the schedule's first tries; SlowAboveUs is SlowFactor
	// times BestUs: a test above it is slow.
	Metric      string       `json:"metric,omitempty"`
	SlowFactor  float64      `json:"slow_factor,omitempty"`
	BestUs      *float64     `json:"best_us,omitempty"`
	MedianUs    *float64     `json:"median_us,omitempty"`
	SlowAboveUs *float64     `json:"slow_above_us,omitempty"`
	Pairs       []PairResult `json:"pairs"`
	Retests     []Retest     `json:"retests"`
	// Halving lists the rounds of the halving re-tests (Options.Halving,
	// the RDMA matrix), when any ran.
	Halving  []HalvingRound `json:"halving,omitempty"`
	Outliers []Outlier      `json:"outliers"`
	// Incast is an incast's figures (pattern incast:HOST): its senders'
	// shares, their sum at the receiver and its drops; absent for other
	// patterns. An incast blames nobody: Outliers is empty and
	// MedianGbps null.
	Incast  *Incast `json:"incast,omitempty"`
	Verdict string  `json:"verdict"`
	WallS   float64 `json:"wall_s"`
}

// MetricLatency marks a latency run (Result.Metric).
const MetricLatency = "latency"

// HalvingRound is one round of the halving re-tests: the suspects it
// re-tested (the half of the suspects left with the most bad pairs),
// the hosts known good they were re-tested against, and which suspects
// stayed bad with most of those (blamed) or came back (cleared).
type HalvingRound struct {
	Round    int      `json:"round"`
	Suspects []string `json:"suspects"`
	Good     []string `json:"good"`
	Tests    int      `json:"tests"`
	Blamed   []string `json:"blamed"`
	Cleared  []string `json:"cleared"`
}

// Statuses of a pair and of a direction.
const (
	StatusOK     = "ok"
	StatusSlow   = "slow"
	StatusFailed = "failed"
	// StatusInconclusive marks a direction every try of which was slow,
	// fewer than two of them (one without re-tests) free of contention
	// in their own record (Measurement.Contention): not blamed, not ok.
	StatusInconclusive = "inconclusive"
	// StatusNotRun marks what an interrupted run did not reach.
	StatusNotRun = "not_run"
	// StatusUntested marks the direction of a probe pair that was not
	// needed: a probe tests one side of a suspect.
	StatusUntested = "untested"
)

// PairResult is one pair: A is the host listed first. A direction's
// Gbit/s is its best try: a test slow only once is not slow.
type PairResult struct {
	A        string   `json:"a"`
	B        string   `json:"b"`
	AToBGbps *float64 `json:"a_to_b_gbps"`
	BToAGbps *float64 `json:"b_to_a_gbps"`
	// AToBUs and BToAUs are a latency run's typical latency of each
	// direction's best try (the lowest), AToBP99Us and BToAP99Us that
	// try's 99th percentile.
	AToBUs    *float64 `json:"a_to_b_us,omitempty"`
	BToAUs    *float64 `json:"b_to_a_us,omitempty"`
	AToBP99Us *float64 `json:"a_to_b_p99_us,omitempty"`
	BToAP99Us *float64 `json:"b_to_a_p99_us,omitempty"`
	Status    string   `json:"status"`
	Retested  bool     `json:"retested"`
	// Round is the pair's round, 1-based; a probe's rounds follow the
	// schedule's.
	Round int `json:"round"`
	// Probe marks a pair the sampled design added to test a suspect
	// against a host already proven good.
	Probe bool      `json:"probe,omitempty"`
	AToB  Direction `json:"a_to_b"`
	BToA  Direction `json:"b_to_a"`
}

// Direction is one direction of a pair.
type Direction struct {
	Status string `json:"status"`
	// TriesGbps holds every try that worked, the first first (empty
	// for a latency run).
	TriesGbps []float64 `json:"tries_gbps"`
	// TriesUs and TriesP99Us are a latency run's tries: typical and 99th
	// percentile latency, microseconds.
	TriesUs    []float64 `json:"tries_us,omitempty"`
	TriesP99Us []float64 `json:"tries_p99_us,omitempty"`
	// TriesAt says when each of TriesGbps was measured.
	TriesAt []Span `json:"tries_at,omitempty"`
	// TriesAtOnce says how many tests ran at once in each try's leg (1:
	// alone), so that a figure measured alone is never read as one of a
	// loaded leg.
	TriesAtOnce []int `json:"tries_at_once,omitempty"`
	// TriesContention says, for each try, why its own record shows that
	// the test did not have its CPUs to itself ("" when it did).
	TriesContention []string `json:"tries_contention,omitempty"`
	// TriesRole says why each try ran: "first", "retest" (it was slow),
	// "probe" (the sampled design's test of a suspect) or "control" (a
	// fine test run again just before a serial re-test, for the load of
	// that moment); absent for a single try.
	TriesRole []string `json:"tries_role,omitempty"`
	// TriesSlowBelow is, for each try, the Gbit/s it was judged against
	// when some try of the direction was judged against a control: the
	// run's slow limit scaled by how the control fared against its own
	// first try.
	TriesSlowBelow []float64 `json:"tries_slow_below,omitempty"`
	// TriesSlowAboveUs is TriesSlowBelow of a latency run: the latency
	// above which each try was slow.
	TriesSlowAboveUs []float64 `json:"tries_slow_above_us,omitempty"`
	RunIDs           []int64   `json:"run_ids,omitempty"`
	// Error is why the test failed.
	Error string `json:"error,omitempty"`
}

// Span is when a test's measured part ran (UTC, milliseconds): a parallel
// leg's tests overlap.
type Span struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Retest is one slow or inconclusive test tried again.
type Retest struct {
	From        string    `json:"from"`
	To          string    `json:"to"`
	FirstGbps   float64   `json:"first_gbps"`
	RetestsGbps []float64 `json:"retests_gbps"`
	// Confirmed is true when every try was slow and two of them were not
	// contended: the test stayed slow.
	Confirmed bool `json:"confirmed"`
	// Status is the direction's in the end: ok (it came back), slow or
	// inconclusive.
	Status string `json:"status"`
	// AtOnce is how many tests ran at once in each try's leg, the first
	// first; Contention why each try was contended ("" when not).
	AtOnce     []int    `json:"at_once,omitempty"`
	Contention []string `json:"contention,omitempty"`
	// SlowBelowGbps is what each try was judged against, when a serial
	// re-test was judged against a control (Direction.TriesSlowBelow).
	SlowBelowGbps []float64 `json:"slow_below_gbps,omitempty"`
	// FirstUs and RetestsUs are a latency run's typical latencies (its
	// FirstGbps is 0 and RetestsGbps empty); SlowAboveUs is its
	// SlowBelowGbps.
	FirstUs     *float64  `json:"first_us,omitempty"`
	RetestsUs   []float64 `json:"retests_us,omitempty"`
	SlowAboveUs []float64 `json:"slow_above_us,omitempty"`
}

// Outlier kinds, directions and causes.
const (
	KindHost = "host"
	KindPath = "path"

	DirSend    = "send"
	DirReceive = "receive"
	DirBoth    = "both"

	CauseSlow   = "slow"
	CauseFailed = "failed"
)

// Outlier is a host or a path blamed for slow or failed tests. For a path
// (named "A-B"), Direction is A's: send means A→B; Way says it as arrows.
type Outlier struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Direction string `json:"direction"`
	// Way is a path's direction as its tests ran: "h01→h05", "h05→h01"
	// or "h01↔h05" (paths only).
	Way      string `json:"way,omitempty"`
	Cause    string `json:"cause"`
	Evidence string `json:"evidence"`
	// MedianGbps is the median of the blamed tests' best tries (slow
	// outliers only).
	MedianGbps *float64 `json:"median_gbps,omitempty"`
	// MedianUs is a latency run's: the median typical latency of the
	// blamed tests' best tries.
	MedianUs *float64 `json:"median_us,omitempty"`
	// Partners names the hosts the blamed tests ran with.
	Partners []string `json:"partners,omitempty"`
	// Next are commands to run next, as they work when printed (the
	// caller of Run, which knows how the hosts are reached, adds them).
	Next []string `json:"next,omitempty"`
}
