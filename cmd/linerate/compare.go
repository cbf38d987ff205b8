package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/internal/explain"
	"github.com/linerate/linerate/internal/gap"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/store"
)

// compareSchema names the JSON document `linerate compare --json` prints.
const compareSchema = "linerate.compare/v1"

type compareFlags struct {
	threshold float64
	json      bool
	db        string
	streams   int  // keep a label's runs of this many streams
	unlike    bool // compare unlike runs with a warning instead of refusing
}

func newCompareCmd(env *cliEnv) *cobra.Command {
	var f compareFlags
	cmd := &cobra.Command{
		Use:   "compare A B",
		Short: "Compare two stored runs, or two labels, and flag a regression",
		Long: `compare shows how B differs from A in the figures of the runs' kind: goodput
for TCP and UDP runs (a UDP run's received goodput falls with its loss),
round-trip p50 and p99 for latency runs (--latency; lower is better),
transactions per second and their p50 and p99 for transaction runs (rr, crr).
For each, the change of the median, and whether the difference is significant by
a two-sided Mann-Whitney U test over whole runs (each run's figure one value: a
run's 1-s intervals are correlated, not independent samples). A and B are run
IDs or labels ('linerate history' lists both); a label's sample is each of its
runs, a run ID's that one run. Small samples (3 runs against 3, or one run
against another) can never show a significant difference at α = 0.05, and
compare says so.

Only like runs are pooled or compared. Runs of different kinds (tcp, udp,
latency, transactions) or rates (--rate 10k against unpaced, -b 1G against
-b 2G) are never pooled or compared, --unlike or not. Beyond that: the same
engine, streams and direction (what is measured), placement, peer and MTU
(where). A label whose runs differ in any of these is refused, naming its
groups: keep one stream count with --streams, pick a run ID, or pool them
anyway with --unlike. A and B that measure different things (send against
bidir, 1 stream against 4, iperf3 against native) are refused too unless
--unlike; when they differ only in placement, peer or MTU — usually the point
of the comparison — compare lists the differences.

Exit status:
  0  no significant regression: no significant difference, B faster, or B
     slower by less than --threshold percent
  1  regression: B is significantly worse than A (p < 0.05) by more than
     --threshold percent in one of the kind's figures (slower goodput,
     higher p50 or p99, fewer transactions)
  2  error: a side names nothing, or the runs cannot be compared`,
		Example: `  linerate compare 12 17
  linerate compare baseline tuned --threshold 3`,
		Args: exactArgs("A", "B"),
		RunE: func(cmd *cobra.Command, args []string) error { return runCompare(cmd, env, args[0], args[1], f) },
	}
	fl := cmd.Flags()
	fl.Float64Var(&f.threshold, "threshold", 5, "percent slower that counts as a regression (exit 1)")
	fl.BoolVar(&f.json, "json", false, "print the "+compareSchema+" JSON document")
	fl.StringVar(&f.db, "db", "", "the results database (default "+store.DefaultPath()+")")
	fl.IntVarP(&f.streams, "streams", "P", 0, "keep only the runs of this many streams in a label (a sweep's point)")
	fl.BoolVar(&f.unlike, "unlike", false, "compare runs of different kinds (streams, direction, engine, ...) with a warning instead of refusing")
	return cmd
}

// compareSide is A or B: what it names and its sample.
type compareSide struct {
	Ref     string  `json:"ref"`
	Kind    string  `json:"kind"` // "run" or "label"
	RunIDs  []int64 `json:"run_ids"`
	Engine  string  `json:"engine,omitempty"`
	Streams int     `json:"streams,omitempty"`
	// Kind is what the side's runs measured and where (the first run's,
	// when --unlike pooled several placements, peers or MTUs).
	RunKind runKind `json:"run_kind"`
	// Sample and Median are the runs' goodput, for the kinds compared by
	// it (tcp, udp); metrics holds every kind's figures.
	Sample []float64 `json:"sample_gbps,omitempty"`
	Median float64   `json:"median_gbps,omitempty"`
	// Gap is where the side's missing gigabits went, its runs' time
	// added up (package gap); absent where they have no TCP account.
	Gap   *result.Gap `json:"gap,omitempty"`
	kinds []kindGroup
	runs  []store.Run
}

// compareMetric is one figure of the runs' kind compared: goodput for
// tcp and udp runs (a UDP run's received goodput falls with its loss),
// round-trip p50 and p99 for latency runs, transactions per second and
// their p50 and p99 for transaction runs. Each run is one value.
type compareMetric struct {
	Name          string    `json:"name"` // goodput_gbps, rtt_p50_us, rtt_p99_us, transactions_per_second
	Unit          string    `json:"unit"`
	LowerIsBetter bool      `json:"lower_is_better"`
	SampleA       []float64 `json:"sample_a"`
	SampleB       []float64 `json:"sample_b"`
	MedianA       float64   `json:"median_a"`
	MedianB       float64   `json:"median_b"`
	Change        float64   `json:"change"`
	PValue        float64   `json:"p_value"`
	Significant   bool      `json:"significant"`
	StatsNote     string    `json:"stats_note,omitempty"`
	Regression    bool      `json:"regression"`
	Verdict       string    `json:"verdict"`
	title         string    // "RTT p50"
}

type compareDoc struct {
	Schema string      `json:"schema"`
	A      compareSide `json:"a"`
	B      compareSide `json:"b"`
	Basis  string      `json:"basis"` // "runs": each run's figure is one value
	// Change, PValue … StatsNote are the first metric's; Regression is
	// set when any metric regressed.
	Change float64 `json:"change"`
	// The two-sided Mann-Whitney U test of A's runs against B's.
	PValue       float64 `json:"p_value"`
	Alpha        float64 `json:"alpha"`
	Significant  bool    `json:"significant"`
	StatsNote    string  `json:"stats_note,omitempty"`
	ThresholdPct float64 `json:"threshold_pct"`
	Regression   bool    `json:"regression"`
	Verdict      string  `json:"verdict"`
	// Metrics are the figures compared, the kind's own.
	Metrics []compareMetric `json:"metrics"`
	// Differences are the fields in which A's runs and B's differ
	// ("peer lab:ux1 vs lab:ux2"); Warnings what --unlike let through.
	Differences []string `json:"differences"`
	Warnings    []string `json:"warnings,omitempty"`
	// DominantChange says when A's dominant limit and B's differ.
	DominantChange string `json:"dominant_change,omitempty"`
}

func runCompare(cmd *cobra.Command, env *cliEnv, a, b string, f compareFlags) error {
	if f.threshold < 0 || math.IsNaN(f.threshold) {
		return fmt.Errorf("--threshold %v: give a percentage, e.g. 5", f.threshold)
	}
	db, err := openResults(cmd.Context(), f.db)
	if err != nil {
		return err
	}
	defer db.Close()
	sa, err := resolve(cmd.Context(), db, a, f.streams)
	if err != nil {
		return err
	}
	sb, err := resolve(cmd.Context(), db, b, f.streams)
	if err != nil {
		return err
	}
	doc := compareDoc{Schema: compareSchema, A: sa, B: sb, ThresholdPct: f.threshold, Basis: "runs", Differences: []string{}}
	if len(doc.A.runs) == 0 || len(doc.B.runs) == 0 {
		return errors.New("nothing to compare: a side without runs")
	}
	if doc.Warnings, err = checkComparable(&doc, f.unlike); err != nil {
		return err
	}
	for _, m := range kindMetrics(doc.A.RunKind.Kind) {
		cm, ok, note := m.compare(doc.A.runs, doc.B.runs, f.threshold)
		if !ok {
			doc.Warnings = append(doc.Warnings, note)
			continue
		}
		doc.Metrics = append(doc.Metrics, cm)
	}
	if len(doc.Metrics) == 0 {
		return fmt.Errorf("nothing to compare: %s", strings.Join(doc.Warnings, "; "))
	}
	first := doc.Metrics[0]
	if first.Name == "goodput_gbps" {
		doc.A.Sample, doc.B.Sample = first.SampleA, first.SampleB
		doc.A.Median, doc.B.Median = first.MedianA, first.MedianB
	}
	doc.Change, doc.PValue, doc.Significant, doc.StatsNote = first.Change, first.PValue, first.Significant, first.StatsNote
	doc.Alpha = explain.CompareRuns(first.SampleA, first.SampleB).Alpha
	var verdicts []string
	for _, m := range doc.Metrics {
		// A regression is a difference the statistics show, and large
		// enough to matter, in any of the kind's figures.
		doc.Regression = doc.Regression || m.Regression
		if len(doc.Metrics) > 1 {
			verdicts = append(verdicts, m.title+": "+m.Verdict)
		} else {
			verdicts = append(verdicts, m.Verdict)
		}
	}
	doc.Verdict = strings.Join(verdicts, "\n")
	doc.DominantChange = explain.GapChange(doc.A.Gap, doc.B.Gap)
	if f.json {
		err = writeJSON(env.stdout, doc)
	} else {
		err = writeCompare(env.stdout, doc)
	}
	if err == nil && doc.Regression {
		return errFindings
	}
	return err
}

// kindMetric is how one figure is read from a stored run.
type kindMetric struct {
	name, title, unit string
	lowerIsBetter     bool
	value             func(r *store.Run) *float64 // nil when the run lacks it
}

// kindMetrics are the figures a kind of run is compared by.
func kindMetrics(k result.Kind) []kindMetric {
	goodput := kindMetric{"goodput_gbps", "goodput", "Gbit/s", false, func(r *store.Run) *float64 { return &r.Gbps }}
	p50 := kindMetric{"rtt_p50_us", "RTT p50", "µs", true, func(r *store.Run) *float64 { return figuresOf(&r.Outline).p50 }}
	p99 := kindMetric{"rtt_p99_us", "RTT p99", "µs", true, func(r *store.Run) *float64 { return figuresOf(&r.Outline).p99 }}
	switch k {
	case result.KindLatency:
		return []kindMetric{p50, p99}
	case result.KindTransactions:
		tps := kindMetric{"transactions_per_second", "transactions", "/s", false, func(r *store.Run) *float64 { return figuresOf(&r.Outline).perSecond }}
		return []kindMetric{tps, p50, p99}
	}
	return []kindMetric{goodput}
}

// compare tests A's runs against B's on the metric; ok is false, with
// the reason, when a side has no run with the figure.
func (m kindMetric) compare(a, b []store.Run, threshold float64) (compareMetric, bool, string) {
	cm := compareMetric{Name: m.name, Unit: m.unit, LowerIsBetter: m.lowerIsBetter, title: m.title,
		SampleA: []float64{}, SampleB: []float64{}}
	for _, side := range []struct {
		runs   []store.Run
		sample *[]float64
	}{{a, &cm.SampleA}, {b, &cm.SampleB}} {
		for i := range side.runs {
			if v := m.value(&side.runs[i]); v != nil && !math.IsNaN(*v) {
				*side.sample = append(*side.sample, *v)
			}
		}
	}
	if len(cm.SampleA) == 0 || len(cm.SampleB) == 0 {
		return cm, false, fmt.Sprintf("%s not compared: a side has no run that measured it (too few round trips for the percentile)", m.title)
	}
	ch := explain.CompareRuns(cm.SampleA, cm.SampleB)
	cm.MedianA, cm.MedianB = round(ch.MedianA, 3), round(ch.MedianB, 3)
	cm.PValue, cm.Significant, cm.StatsNote = round(ch.P, 4), ch.Significant, ch.Note
	if math.IsNaN(ch.Relative) || math.IsInf(ch.Relative, 0) {
		// A's median is 0: no relative change exists, and none is
		// printed as NaN.
		cm.Verdict = fmt.Sprintf("A's median %s is 0: no relative change (p = %.3g)", m.title, ch.P)
		return cm, true, ""
	}
	cm.Change = round(ch.Relative, 4)
	pct := 100 * ch.Relative
	worse := pct < 0
	if m.lowerIsBetter {
		worse = pct > 0
	}
	cm.Regression = ch.Significant && worse && math.Abs(pct) > threshold
	cm.Verdict = m.verdict(ch, worse, threshold)
	return cm, true, ""
}

// verdict says in one sentence what the change of the metric means.
func (m kindMetric) verdict(ch explain.Change, worse bool, threshold float64) string {
	pct := math.Abs(100 * ch.Relative)
	// "B is 5.5% slower than A"; "B's RTT p99 is 30.0% higher than A's".
	what := func(worseWord, betterWord string) string {
		w := betterWord
		if worse {
			w = worseWord
		}
		if m.name == "goodput_gbps" {
			return fmt.Sprintf("B is %.1f%% %s than A", pct, w)
		}
		return fmt.Sprintf("B's %s is %.1f%% %s than A's", m.title, pct, w)
	}
	var change string
	switch {
	case m.name == "goodput_gbps":
		change = what("slower", "faster")
	case m.lowerIsBetter:
		change = what("higher", "lower")
	default:
		change = what("lower", "higher")
	}
	switch {
	case !ch.Significant:
		return fmt.Sprintf("no significant difference (p = %.3g, U test over whole runs)", ch.P)
	case worse && pct > threshold:
		return fmt.Sprintf("regression: %s (p = %.3g), beyond the %.1f%% threshold", change, ch.P, threshold)
	case worse:
		return fmt.Sprintf("%s (p = %.3g), within the %.1f%% threshold", change, ch.P, threshold)
	}
	return fmt.Sprintf("%s (p = %.3g)", change, ch.P)
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

// resolve reads A or B: a run ID when it is a number that names a run,
// else a label (only its runs of `streams` streams, when not 0).
func resolve(ctx context.Context, db *store.Store, ref string, streams int) (compareSide, error) {
	side := compareSide{Ref: ref}
	var runs []store.Run
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
		r, err := db.Run(ctx, id)
		switch {
		case err == nil && r.Failed != "":
			return side, fmt.Errorf("run %d failed (%s): it has no result to compare; pick another run or a label", id, r.Failed)
		case err == nil:
			side.Kind, runs = "run", []store.Run{*r}
		case !errors.Is(err, store.ErrNotFound):
			return side, err
		}
	}
	if side.Kind == "" {
		all, err := db.Runs(ctx, store.Query{Label: ref, Full: true})
		if err != nil {
			return side, err
		}
		if len(all) == 0 {
			return side, fmt.Errorf("%q is neither a run ID nor a label in %s (see 'linerate history')", ref, db.Path())
		}
		side.Kind = "label"
		for _, r := range all {
			if streams == 0 || r.Streams == streams {
				runs = append(runs, r)
			}
		}
		if len(runs) == 0 {
			return side, fmt.Errorf("label %q has no run of %d stream%s (see 'linerate history --label %s')", ref, streams, plural(streams), ref)
		}
	}
	runs = slices.DeleteFunc(runs, func(r store.Run) bool { return r.Failed != "" }) // a failed run is no sample
	if len(runs) == 0 {
		return side, fmt.Errorf("%q has no finished run in %s (see 'linerate history')", ref, db.Path())
	}
	for _, r := range runs {
		side.RunIDs = append(side.RunIDs, r.ID)
	}
	side.runs = runs
	side.Gap = gapOf(runs)
	side.kinds = groupRuns(runs)
	side.RunKind = side.kinds[0].kind
	side.Engine, side.Streams = side.RunKind.Engine, side.RunKind.Streams
	return side, nil
}

// checkComparable refuses (or, with unlike, warns about) a side that
// pools unlike runs, and A and B that measure different things; it
// lists the fields in which A and B differ. Runs of different kinds
// (tcp, udp, latency, transactions) or rates are never pooled, nor
// compared, --unlike or not: their figures are not the same figures.
func checkComparable(d *compareDoc, unlike bool) ([]string, error) {
	var warnings []string
	for _, s := range []*compareSide{&d.A, &d.B} {
		if len(s.kinds) < 2 {
			continue
		}
		msg := fmt.Sprintf("label %q mixes runs that cannot be pooled: %s", s.Ref, groupsText(s.kinds))
		if k := s.kinds[0].kind; slices.ContainsFunc(s.kinds[1:], func(g kindGroup) bool { return g.kind.Kind != k.Kind || g.kind.Rate != k.Rate }) {
			return nil, errors.New(msg + "; runs of different kinds or rates are never pooled, whatever --unlike says: pick one by its run ID")
		}
		if !unlike {
			return nil, errors.New(msg + "; " + pickHint(s.kinds))
		}
		warnings = append(warnings, msg)
	}
	d.Differences = append(d.Differences, d.A.RunKind.diff(d.B.RunKind)...)
	if d.A.RunKind.Kind != d.B.RunKind.Kind {
		return nil, fmt.Errorf("compare: A is a %s run and B a %s run: runs of different kinds have different figures and are never compared",
			d.A.RunKind.Kind, d.B.RunKind.Kind)
	}
	if !d.A.RunKind.measures(d.B.RunKind) {
		msg := "A and B measure different things (" + strings.Join(d.A.RunKind.diff(d.B.RunKind)[:measureDiffs(d.A.RunKind, d.B.RunKind)], ", ") + ")"
		if !unlike {
			return nil, errors.New(msg + ": compare like runs, or pass --unlike to compare them anyway")
		}
		warnings = append(warnings, msg)
	}
	return warnings, nil
}

// pickHint says how to keep one group of a label's: --streams when the
// groups differ in streams, else a run ID (compare has no selector for
// placement, peer, MTU, engine or direction).
func pickHint(gs []kindGroup) string {
	streams := slices.ContainsFunc(gs[1:], func(g kindGroup) bool { return g.kind.Streams != gs[0].kind.Streams })
	if streams {
		return "keep one stream count with --streams N, or pick a run ID, or pool them with --unlike"
	}
	return "pick a run ID, or pool them with --unlike"
}

// measureDiffs counts the leading differences that are of what is
// measured (diff lists kind, rate, engine, streams and direction first).
func measureDiffs(a, b runKind) int {
	n := 0
	for _, differ := range []bool{a.Kind != b.Kind, a.Rate != b.Rate, a.Engine != b.Engine, a.Streams != b.Streams, a.Direction != b.Direction} {
		if differ {
			n++
		}
	}
	return n
}

func writeCompare(w io.Writer, d compareDoc) error {
	valueText := func(m compareMetric, v float64) string {
		switch m.Unit {
		case "µs":
			return usText(v)
		case "/s":
			return countText(v) + "/s"
		}
		return fmt.Sprintf("%.2f %s", v, m.Unit)
	}
	side := func(name string, s compareSide, median func(compareMetric) float64, n func(compareMetric) int) string {
		what := fmt.Sprintf("run %d", s.RunIDs[0])
		if s.Kind == "label" {
			what = fmt.Sprintf("label %q (%d run%s)", s.Ref, len(s.RunIDs), plural(len(s.RunIDs)))
		}
		var meds []string
		for _, m := range d.Metrics {
			title := ""
			if m.Name != "goodput_gbps" {
				title = m.title + " "
			}
			meds = append(meds, title+valueText(m, median(m)))
		}
		k := n(d.Metrics[0])
		return fmt.Sprintf("%s: %s, %s: median %s over %d run%s\n", name, what, s.RunKind, strings.Join(meds, ", "), k, plural(k))
	}
	note := ""
	if len(d.Differences) > 0 {
		note += "A and B differ in: " + strings.Join(d.Differences, "; ") + "\n"
	}
	for _, w := range d.Warnings {
		note += "warning: " + w + "\n"
	}
	if d.StatsNote != "" {
		note += "note: " + d.StatsNote + "\n"
	}
	var changes string
	for _, m := range d.Metrics {
		title := ""
		if len(d.Metrics) > 1 {
			title = " in " + m.title
		}
		ch := fmt.Sprintf("%+.1f%%", 100*m.Change)
		if m.MedianA == 0 {
			ch = "none (A's median is 0)"
		}
		changes += fmt.Sprintf("change%s: %s (Mann-Whitney U test over whole runs: p = %.3g, α = %.2f)\n", title, ch, m.PValue, d.Alpha)
	}
	_, err := fmt.Fprintf(w, "%s%s%s%s%s\n",
		side("A", d.A, func(m compareMetric) float64 { return m.MedianA }, func(m compareMetric) int { return len(m.SampleA) }),
		side("B", d.B, func(m compareMetric) float64 { return m.MedianB }, func(m compareMetric) int { return len(m.SampleB) }),
		changes, note, d.Verdict)
	if err == nil && d.DominantChange != "" {
		_, err = fmt.Fprintf(w, "Limit: %s.\n", d.DominantChange)
	}
	return err
}

// gapOf is the gap of a side's runs (package gap), from their documents
// and the doctor reports stored with them.
func gapOf(runs []store.Run) *result.Gap {
	var rs []*result.Result
	var docs []gap.Doctors
	for _, sr := range runs {
		var r result.Result
		if json.Unmarshal(sr.Result, &r) != nil {
			continue
		}
		rs = append(rs, &r)
		docs = append(docs, gap.Doctors{Client: sr.ClientDoctor, Server: sr.ServerDoctor})
	}
	return gap.OfRuns(rs, docs)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
