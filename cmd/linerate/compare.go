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
		Long: `compare shows how B's goodput differs from A's: the change of the median, and
whether the difference is significant by a two-sided Mann-Whitney U test over
whole runs (each run's goodput one value: a run's 1-s intervals are correlated,
not independent samples). A and B are run IDs or labels ('linerate history'
lists both); a label's sample is the goodput of each of its runs, a run ID's
that one run. Small samples (3 runs against 3, or one run against another) can
never show a significant difference at α = 0.05, and compare says so.

Only like runs are pooled or compared: the same engine, streams and
direction (what is measured), placement, peer and MTU (where). A label whose
runs differ in any of these is refused, naming its groups: pick one with
--streams, or pool them anyway with --unlike. A and B that measure different
things (send against bidir, 1 stream against 4, iperf3 against native) are
refused too unless --unlike; when they differ only in placement, peer or MTU
— usually the point of the comparison — compare lists the differences.

Exit status:
  0  no significant regression: no significant difference, B faster, or B
     slower by less than --threshold percent
  1  regression: B is significantly slower than A (p < 0.05) and by more
     than --threshold percent
  2  error: a side names nothing, or the runs cannot be compared`,
		Example: `  linerate compare 12 17
  linerate compare baseline tuned --threshold 3`,
		Args: cobra.ExactArgs(2),
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
	// when --unlike pooled several kinds).
	RunKind runKind   `json:"run_kind"`
	Sample  []float64 `json:"sample_gbps"`
	Median  float64   `json:"median_gbps"`
	// Gap is where the side's missing gigabits went, its runs' time
	// added up (package gap); absent where they have no TCP account.
	Gap   *result.Gap `json:"gap,omitempty"`
	kinds []kindGroup
}

type compareDoc struct {
	Schema string      `json:"schema"`
	A      compareSide `json:"a"`
	B      compareSide `json:"b"`
	Basis  string      `json:"basis"` // "runs": each run's goodput is one value
	Change float64     `json:"change"`
	// The two-sided Mann-Whitney U test of A's runs against B's.
	PValue       float64 `json:"p_value"`
	Alpha        float64 `json:"alpha"`
	Significant  bool    `json:"significant"`
	StatsNote    string  `json:"stats_note,omitempty"`
	ThresholdPct float64 `json:"threshold_pct"`
	Regression   bool    `json:"regression"`
	Verdict      string  `json:"verdict"`
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
	if len(doc.A.Sample) == 0 || len(doc.B.Sample) == 0 {
		return errors.New("nothing to compare: a side without runs")
	}
	if doc.Warnings, err = checkComparable(&doc, f.unlike); err != nil {
		return err
	}
	ch := explain.CompareRuns(doc.A.Sample, doc.B.Sample)
	doc.A.Median, doc.B.Median = round(ch.MedianA, 3), round(ch.MedianB, 3)
	doc.Change = round(ch.Relative, 4)
	doc.PValue, doc.Alpha, doc.Significant, doc.StatsNote = round(ch.P, 4), ch.Alpha, ch.Significant, ch.Note
	// A regression is a difference the statistics show, and large enough
	// to matter.
	doc.Regression = ch.Significant && ch.Relative*100 < -f.threshold
	doc.Verdict = verdict(ch, f.threshold)
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
		side.Sample = append(side.Sample, r.Gbps)
	}
	side.Gap = gapOf(runs)
	side.kinds = groupRuns(runs)
	side.RunKind = side.kinds[0].kind
	side.Engine, side.Streams = side.RunKind.Engine, side.RunKind.Streams
	return side, nil
}

// checkComparable refuses (or, with unlike, warns about) a side that
// pools unlike runs, and A and B that measure different things; it
// lists the fields in which A and B differ.
func checkComparable(d *compareDoc, unlike bool) ([]string, error) {
	var warnings []string
	for _, s := range []*compareSide{&d.A, &d.B} {
		if len(s.kinds) < 2 {
			continue
		}
		msg := fmt.Sprintf("label %q mixes runs that cannot be pooled: %s", s.Ref, groupsText(s.kinds))
		if !unlike {
			return nil, errors.New(msg + "; pick one with --streams N or a run ID, or pool them with --unlike")
		}
		warnings = append(warnings, msg)
	}
	d.Differences = append(d.Differences, d.A.RunKind.diff(d.B.RunKind)...)
	if !d.A.RunKind.measures(d.B.RunKind) {
		msg := "A and B measure different things (" + strings.Join(d.A.RunKind.diff(d.B.RunKind)[:measureDiffs(d.A.RunKind, d.B.RunKind)], ", ") + ")"
		if !unlike {
			return nil, errors.New(msg + ": compare like runs, or pass --unlike to compare them anyway")
		}
		warnings = append(warnings, msg)
	}
	return warnings, nil
}

// measureDiffs counts the leading differences that are of what is
// measured (diff lists engine, streams and direction first).
func measureDiffs(a, b runKind) int {
	n := 0
	if a.Engine != b.Engine {
		n++
	}
	if a.Streams != b.Streams {
		n++
	}
	if a.Direction != b.Direction {
		n++
	}
	return n
}

// verdict says in one sentence what the change means.
func verdict(ch explain.Change, threshold float64) string {
	pct := 100 * ch.Relative
	switch {
	case !ch.Significant:
		return fmt.Sprintf("no significant difference (p = %.3g, U test over whole runs)", ch.P)
	case pct < -threshold:
		return fmt.Sprintf("regression: B is %.1f%% slower than A (p = %.3g), beyond the %.1f%% threshold", -pct, ch.P, threshold)
	case pct < 0:
		return fmt.Sprintf("B is slower than A (p = %.3g), within the %.1f%% threshold", ch.P, threshold)
	}
	return fmt.Sprintf("B is faster than A (p = %.3g)", ch.P)
}

func writeCompare(w io.Writer, d compareDoc) error {
	side := func(name string, s compareSide) string {
		what := fmt.Sprintf("run %d", s.RunIDs[0])
		if s.Kind == "label" {
			what = fmt.Sprintf("label %q (%d run%s)", s.Ref, len(s.RunIDs), plural(len(s.RunIDs)))
		}
		return fmt.Sprintf("%s: %s, %s: median %.2f Gbit/s over %d run%s\n", name, what, s.RunKind, s.Median, len(s.Sample), plural(len(s.Sample)))
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
	_, err := fmt.Fprintf(w, "%s%schange: %+.1f%% (Mann-Whitney U test over whole runs: p = %.3g, α = %.2f)\n%s%s\n",
		side("A", d.A), side("B", d.B), 100*d.Change, d.PValue, d.Alpha, note, d.Verdict)
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
