package bench

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/explain"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/store"
	"github.com/linerate/linerate/internal/toolserver"
)

// ParsePlacements reads --placements: -A pairs separated by ';'
// ("6,6;0,0;6,7").
func ParsePlacements(s string) ([]agent.Pinning, error) {
	var out []agent.Pinning
	for _, part := range strings.Split(s, ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		p, err := agent.ParsePinning(part)
		if err != nil {
			return nil, fmt.Errorf("--placements: placement %q: %w", strings.TrimSpace(part), err)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--placements %q names no placement (e.g. \"6,6;0,0;6,7\")", s)
	}
	return out, nil
}

// ParseStreams reads --sweep-streams: stream counts separated by commas.
func ParseStreams(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" && strings.TrimSpace(s) != "" {
			// "1,,4" is a typo, not 1 and 4: say so rather than guess.
			return nil, fmt.Errorf("--sweep-streams %q: an empty stream count between commas (e.g. 1,2,4,8)", s)
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > engine.MaxStreams {
			return nil, fmt.Errorf("--sweep-streams: %q is not a stream count from 1 to %d", f, engine.MaxStreams)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--sweep-streams %q names no stream count (e.g. 1,2,4,8)", s)
	}
	return out, nil
}

// ParseFlows reads --sweep-flows: flow counts of a transaction test
// (--rr, --crr) separated by commas.
func ParseFlows(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > engine.MaxFlows {
			return nil, fmt.Errorf("--sweep-flows: %q is not a flow count from 1 to %d", f, engine.MaxFlows)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--sweep-flows %q names no flow count (e.g. 1,10,100)", s)
	}
	return out, nil
}

// Params are one run's settings, as the CLI builds them once: the test as
// the agent's client runs it (agent.Test: the engine's parameters, the -A
// pinning, a probe), and what the external drivers take beside it. A
// campaign varies the stream count and the pinning; the native driver
// hands the agent.Test on as it is; the engine gets its engine.Params.
type Params struct {
	agent.Test
	// NoTelemetry turns the external drivers' per-CPU sampling off (to
	// measure what it costs); it samples once per Interval otherwise.
	NoTelemetry bool `json:"no_telemetry,omitempty"`
	// Perftest settings, for that driver only.
	Perftest toolserver.PerftestParams `json:"perftest,omitzero"`
}

// paramsJSON is Params as documents hold it (the stored run's params, the
// campaign's spec, what the lab's client reads): every field by its own
// JSON name, through the embedding, and the times, which engine.Params
// leaves to each document, in nanoseconds.
type paramsJSON struct {
	plainParams
	Duration time.Duration `json:"duration"`
	Omit     time.Duration `json:"omit"`
	Interval time.Duration `json:"interval"`
	// FQRateBps is the pacing rate under the name runs stored before
	// the parameters took the engine's names (fq_rate).
	FQRateBps uint64 `json:"fq_rate_bps,omitempty"`
}

type plainParams Params // without the methods

// MarshalJSON writes p with its times.
func (p Params) MarshalJSON() ([]byte, error) {
	return json.Marshal(paramsJSON{plainParams: plainParams(p), Duration: p.Duration, Omit: p.Omit, Interval: p.Interval})
}

// UnmarshalJSON reads p, also as runs stored before it took the engine's
// names wrote it.
func (p *Params) UnmarshalJSON(b []byte) error {
	var d paramsJSON
	if err := json.Unmarshal(b, &d); err != nil {
		return err
	}
	*p = Params(d.plainParams)
	p.Duration, p.Omit, p.Interval = d.Duration, d.Omit, d.Interval
	if p.FQRate == 0 {
		p.FQRate = d.FQRateBps
	}
	return nil
}

// withDefaults fills what was left zero, with the agent's defaults (one
// place says what a test is when nothing is asked).
func (p Params) withDefaults() Params {
	p.Params = p.EngineParams()
	return p
}

// Spec is a campaign as asked: every stream count crossed with every
// placement, each repeated.
type Spec struct {
	Driver     string          `json:"engine"` // the --engine value
	Peer       string          `json:"peer"`
	Label      string          `json:"label,omitempty"`
	Repeat     int             `json:"repeat"`
	Streams    []int           `json:"streams"`
	Placements []agent.Pinning `json:"placements"`
	Run        Params          `json:"run"` // the settings every run shares
}

// Point is one combination of a campaign: a stream count and a pinning.
type Point struct {
	Streams int
	Pinning agent.Pinning
}

// Points returns the campaign's points, stream counts outermost.
func (s Spec) Points() []Point {
	streams := s.Streams
	if len(streams) == 0 {
		streams = []int{max(s.Run.Streams, 1)}
	}
	places := s.Placements
	if len(places) == 0 {
		places = []agent.Pinning{s.Run.Pinning}
	}
	var out []Point
	for _, n := range streams {
		for _, p := range places {
			out = append(out, Point{Streams: n, Pinning: p})
		}
	}
	return out
}

// Order returns the runs to make, as indexes into Points: round by round,
// every point once per round. Interleaving the repeats keeps a drift over
// the campaign's time (a NIC warming up, a neighbour's job) from looking
// like a difference between points.
func (s Spec) Order() []int {
	n := len(s.Points())
	var out []int
	for range max(s.Repeat, 1) {
		for i := range n {
			out = append(out, i)
		}
	}
	return out
}

// IsCampaign reports whether the spec asks for more than one run.
func (s Spec) IsCampaign() bool { return len(s.Order()) > 1 }

// Design is the campaign as its summary names and compares it.
func (s Spec) Design() explain.Design {
	d := explain.Design{Driver: s.Driver, Peer: s.Peer, Label: s.Label, Sweep: len(s.Streams) > 1, Placements: len(s.Placements) > 1,
		PingPong: s.Run.Probe != nil && s.Run.Probe.Kind == agent.ProbePingPong}
	for _, p := range s.Points() {
		d.Points = append(d.Points, explain.Point{Streams: p.Streams, Placement: p.Pinning.String(), Command: s.Command(p)})
	}
	return d
}

// params returns the settings of a run of point p.
func (s Spec) params(p Point) Params {
	r := s.Run
	r.Streams, r.Pinning = p.Streams, p.Pinning
	r.Params = CapThreads(r.Params)
	return r.withDefaults()
}

// CapThreads gives p at most a thread per connection: a sweep's points of
// fewer flows than --threads run on a thread each.
func CapThreads(p engine.Params) engine.Params {
	if p.Threads > 0 {
		p.Threads = min(p.Threads, p.Connections())
	}
	return p
}

// Command returns the command line that reproduces one point of the
// campaign with a single run.
func (s Spec) Command(p Point) string {
	return s.commandLine([]int{p.Streams}, []agent.Pinning{p.Pinning}, 1, true)
}

// CampaignCommand returns the command line that runs the whole campaign
// again: its sweep, placements and repeats.
func (s Spec) CampaignCommand() string {
	streams := s.Streams
	if len(streams) == 0 {
		streams = []int{max(s.Run.Streams, 1)}
	}
	places := s.Placements
	if len(places) == 0 {
		places = []agent.Pinning{s.Run.Pinning}
	}
	return s.commandLine(streams, places, s.Repeat, false)
}

// commandLine writes `linerate bench` with the spec's shared settings and
// the given streams, placements and repeats; alwaysP writes -P 1 too. It
// is the one writer of the CLI's flags (cmd/linerate parses what it
// writes back to the same spec: TestReproduceRoundTrip).
func (s Spec) commandLine(streams []int, places []agent.Pinning, repeat int, alwaysP bool) string {
	r := s.Run.withDefaults()
	if len(streams) == 1 {
		r.Streams = streams[0]
		r.Params = CapThreads(r.Params)
	}
	args := []string{"linerate", "bench", ShellQuote(s.Peer)}
	if s.Driver != "" && s.Driver != "native" {
		args = append(args, "--engine", s.Driver)
	}
	args = append(args, "-t", durationArg(r.Duration))
	if r.Omit > 0 {
		args = append(args, "-O", durationArg(r.Omit))
	}
	if r.Interval != time.Second {
		args = append(args, "-i", durationArg(r.Interval))
	}
	countFlag, sweepFlag := "-P", "--sweep-streams"
	if r.Mode != result.Stream {
		countFlag, sweepFlag = "--flows", "--sweep-flows"
		args = append(args, "--"+string(r.Mode))
	}
	switch {
	case len(streams) > 1:
		parts := make([]string, len(streams))
		for i, n := range streams {
			parts[i] = strconv.Itoa(n)
		}
		args = append(args, sweepFlag, strings.Join(parts, ","))
	case r.Probe != nil: // one stream, and -P is refused beside --latency and --udp
	case alwaysP || streams[0] > 1:
		args = append(args, countFlag, strconv.Itoa(streams[0]))
	}
	switch {
	case len(places) > 1:
		parts := make([]string, len(places))
		for i, p := range places {
			parts[i] = p.String()
		}
		args = append(args, "--placements", ShellQuote(strings.Join(parts, ";")))
	case !places[0].Auto():
		args = append(args, "-A", places[0].String())
	}
	if repeat > 1 {
		args = append(args, "--repeat", strconv.Itoa(repeat))
	}
	switch r.Direction {
	case result.Receive:
		args = append(args, "--reverse")
	case result.Bidir:
		args = append(args, "--bidir")
	}
	if r.Window > 0 {
		args = append(args, "--window", strconv.Itoa(r.Window))
	}
	args = append(args, engineArgs(r)...)
	args = append(args, probeFlags(r.Probe)...)
	if s.Driver == "perftest" {
		args = append(args, perftestFlags(r.Perftest)...)
	}
	if s.Label != "" {
		args = append(args, "--label", ShellQuote(s.Label))
	}
	return strings.Join(args, " ")
}

// engineArgs writes the native engine's sending options as flags.
func engineArgs(r Params) []string {
	var a []string
	switch r.ZeroCopy {
	case result.Sendfile:
		a = append(a, "--zerocopy")
	case result.NoZeroCopy:
	default:
		a = append(a, "--zerocopy="+string(r.ZeroCopy))
	}
	if r.Congestion != "" {
		a = append(a, "--congestion", ShellQuote(r.Congestion))
	}
	if r.FQRate > 0 {
		a = append(a, "--fq-rate", strconv.FormatUint(r.FQRate, 10))
	}
	if r.Threads > 0 {
		a = append(a, "--threads", strconv.Itoa(r.Threads))
	}
	if r.Mode != result.Stream {
		a = append(a, "--size", strconv.Itoa(r.Size))
		if r.Depth > 0 {
			a = append(a, "--depth", strconv.Itoa(r.Depth))
		}
	}
	if r.SkipRxCopy != result.RxCopy {
		a = append(a, "--skip-rx-copy="+string(r.SkipRxCopy))
	}
	return a
}

// probeFlags are the bench flags that ask for probe pr (nil: none).
func probeFlags(pr *agent.ProbeTest) []string {
	if pr == nil {
		return nil
	}
	var a []string
	if pr.Kind == agent.ProbePingPong {
		a = append(a, "--latency", "--size", strconv.Itoa(pr.Size))
		if pr.UDP {
			a = append(a, "--udp")
		}
		if pr.Rate > 0 {
			a = append(a, "--rate", strconv.FormatFloat(pr.Rate, 'f', -1, 64))
		}
	} else {
		a = append(a, "--udp", "-l", strconv.Itoa(pr.Size), "-b", strconv.FormatFloat(pr.Rate, 'f', -1, 64))
	}
	return a
}

// perftestFlags writes the perftest settings that differ from the
// defaults.
func perftestFlags(p toolserver.PerftestParams) []string {
	var a []string
	if p.Test != "" {
		a = append(a, "--perftest-test", p.Test)
	}
	if p.Size > 0 {
		a = append(a, "--perftest-size", strconv.Itoa(p.Size))
	}
	if p.Iters > 0 {
		a = append(a, "--perftest-iters", strconv.Itoa(p.Iters))
	}
	if p.Device != "" {
		a = append(a, "--rdma-device", p.Device)
	}
	if p.GID > 0 {
		a = append(a, "--gid-index", strconv.Itoa(p.GID))
	}
	return a
}

// RunCommand rebuilds the `linerate bench` command of one recorded run
// from its start section. Placement is given with -A only when the user
// chose it: an automatic placement is reproduced by choosing again.
func RunCommand(r *result.Result, label string) string {
	st := r.Start
	var p Params
	p.Params = engine.Params{Streams: st.Streams, Duration: secondsOf(st.DurationS), Omit: secondsOf(st.OmitS),
		Interval: secondsOf(st.IntervalS), Direction: st.Direction, Window: st.Window.Requested,
		ZeroCopy: st.ZeroCopy, Congestion: st.Congestion, FQRate: st.FQRate,
		Mode: st.Mode, Size: st.Size, Depth: st.Depth, SkipRxCopy: st.SkipRxCopy}
	if st.Threads > 0 && (st.Mode != result.Stream || st.Threads < st.Streams) {
		p.Threads = st.Threads // shared threads; a thread per stream is the default
	}
	if strings.Contains(st.Placement.Source, "user") {
		p.Pinning = agent.Pinning{Client: st.Placement.Client, Server: st.Placement.Server}
	}
	peer := st.Peer
	if peer == "" {
		peer = "-"
	}
	s := Spec{Driver: r.Engine, Peer: peer, Label: label, Run: p}
	return s.Command(Point{Streams: max(st.Streams, 1), Pinning: p.Pinning})
}

// StoredCommands writes the commands that reproduce what a results
// database holds (the report's Commands): a run's from what was asked
// (its params) and its peer as it was named ("lab:ux1", not the address
// the lab resolved it to), so that the command runs as printed; from its
// document's start section when its params are not there; none for a
// perftest run, which carries its tool's own command lines.
type StoredCommands struct{}

// Run is the command that makes the stored run again.
func (StoredCommands) Run(row *store.Run) string {
	var p Params
	if row.Peer != "" && len(row.Params) > 0 && json.Unmarshal(row.Params, &p) == nil {
		if p.Perftest.Test != "" {
			return ""
		}
		s := Spec{Driver: row.Engine, Peer: row.Peer, Label: row.Label, Run: p}
		return s.Command(Point{Streams: max(p.Streams, 1), Pinning: p.Pinning})
	}
	var r result.Result
	if json.Unmarshal(row.Result, &r) != nil || r.Perftest != nil {
		return ""
	}
	return RunCommand(&r, row.Label)
}

// Campaign is the command that makes the stored campaign again; "" when
// its spec is not known, or for perftest (its runs carry their commands).
func (StoredCommands) Campaign(c *store.Campaign) string {
	var s Spec
	if json.Unmarshal(c.Spec, &s) != nil || s.Peer == "" || s.Run.Perftest.Test != "" {
		return ""
	}
	return s.CampaignCommand()
}

func secondsOf(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// durationArg writes a duration as -t takes it: "10", "1m30s".
func durationArg(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10)
	}
	return d.String()
}

// ShellQuote quotes s for a POSIX shell when it needs quoting.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
