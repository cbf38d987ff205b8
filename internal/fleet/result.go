package fleet

import "time"

// Schema names the JSON document of a fleet run.
const Schema = "linerate.fleet/v1"

// Result is a fleet run: the linerate.fleet/v1 document.
type Result struct {
	Schema       string  `json:"schema"`
	Label        string  `json:"label,omitempty"`
	Hosts        []Host  `json:"hosts"`
	Pattern      string  `json:"pattern"`
	Parallel     bool    `json:"parallel"`
	DurationS    float64 `json:"duration_s"`
	Streams      int     `json:"streams"`
	ThresholdPct float64 `json:"threshold_pct"`
	// Rounds and Tests are the schedule's: each round runs its pairs in
	// two legs, one per direction.
	Rounds int `json:"rounds"`
	Tests  int `json:"tests"`
	// MedianGbps is the median of every test's first try that worked
	// (null when none did); SlowBelowGbps is ThresholdPct of it.
	MedianGbps    *float64     `json:"median_gbps"`
	SlowBelowGbps *float64     `json:"slow_below_gbps"`
	Pairs         []PairResult `json:"pairs"`
	Retests       []Retest     `json:"retests"`
	Outliers      []Outlier    `json:"outliers"`
	Verdict       string       `json:"verdict"`
	WallS         float64      `json:"wall_s"`
}

// Statuses of a pair and of a direction.
const (
	StatusOK     = "ok"
	StatusSlow   = "slow"
	StatusFailed = "failed"
	// StatusNotRun marks what an interrupted run did not reach.
	StatusNotRun = "not_run"
)

// PairResult is one pair: A is the host listed first. A direction's
// Gbit/s is its best try: a test slow only once is not slow.
type PairResult struct {
	A        string    `json:"a"`
	B        string    `json:"b"`
	AToBGbps *float64  `json:"a_to_b_gbps"`
	BToAGbps *float64  `json:"b_to_a_gbps"`
	Status   string    `json:"status"`
	Retested bool      `json:"retested"`
	Round    int       `json:"round"` // 1-based
	AToB     Direction `json:"a_to_b"`
	BToA     Direction `json:"b_to_a"`
}

// Direction is one direction of a pair.
type Direction struct {
	Status string `json:"status"`
	// TriesGbps holds every try that worked, the first first.
	TriesGbps []float64 `json:"tries_gbps"`
	// TriesAt says when each of TriesGbps was measured.
	TriesAt []Span  `json:"tries_at,omitempty"`
	RunIDs  []int64 `json:"run_ids,omitempty"`
	// Error is why the test failed.
	Error string `json:"error,omitempty"`
}

// Span is when a test's measured part ran (UTC, milliseconds): a parallel
// leg's tests overlap.
type Span struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// Retest is one slow test tried again.
type Retest struct {
	From        string    `json:"from"`
	To          string    `json:"to"`
	FirstGbps   float64   `json:"first_gbps"`
	RetestsGbps []float64 `json:"retests_gbps"`
	// Confirmed is true when every try was slow.
	Confirmed bool `json:"confirmed"`
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
// (named "A-B"), Direction is A's: send means A→B.
type Outlier struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Direction string `json:"direction"`
	Cause     string `json:"cause"`
	Evidence  string `json:"evidence"`
	// MedianGbps is the median of the blamed tests' best tries (slow
	// outliers only).
	MedianGbps *float64 `json:"median_gbps,omitempty"`
	// Partners names the hosts the blamed tests ran with.
	Partners []string `json:"partners,omitempty"`
}
