package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/internal/bench"
	"github.com/linerate/linerate/internal/store"
)

// compareSchema names the JSON document `linerate compare --json` prints.
const compareSchema = "linerate.compare/v1"

type compareFlags struct {
	threshold float64
	json      bool
	db        string
}

func newCompareCmd(env *cliEnv) *cobra.Command {
	var f compareFlags
	cmd := &cobra.Command{
		Use:   "compare A B",
		Short: "Compare two stored runs, or two labels, and flag a regression",
		Long: `compare shows how B's goodput differs from A's: the change of the median with a
95% bootstrap interval (` + strconv.Itoa(bench.Resamples) + ` resamples). A and B are run IDs or labels
('linerate history' lists both).

Two runs are compared interval by interval (each run's measured intervals are
its sample); a label's sample is the goodput of each of its runs.

Exit status: 0 no regression, 1 B is slower than A by more than --threshold
percent, 2 error.`,
		Example: `  linerate compare 12 17
  linerate compare baseline tuned --threshold 3`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return runCompare(cmd, env, args[0], args[1], f) },
	}
	fl := cmd.Flags()
	fl.Float64Var(&f.threshold, "threshold", 5, "percent slower that counts as a regression (exit 1)")
	fl.BoolVar(&f.json, "json", false, "print the "+compareSchema+" JSON document")
	fl.StringVar(&f.db, "db", "", "the results database (default "+store.DefaultPath()+")")
	return cmd
}

// compareSide is A or B: what it names and its sample.
type compareSide struct {
	Ref     string    `json:"ref"`
	Kind    string    `json:"kind"` // "run" or "label"
	RunIDs  []int64   `json:"run_ids"`
	Engine  string    `json:"engine,omitempty"`
	Streams int       `json:"streams,omitempty"`
	Sample  []float64 `json:"sample_gbps"`
	Median  float64   `json:"median_gbps"`
}

type compareDoc struct {
	Schema       string      `json:"schema"`
	A            compareSide `json:"a"`
	B            compareSide `json:"b"`
	Basis        string      `json:"basis"` // "intervals" or "runs"
	Change       float64     `json:"change"`
	ChangeCI95   [2]float64  `json:"change_ci95"`
	ThresholdPct float64     `json:"threshold_pct"`
	Regression   bool        `json:"regression"`
	Verdict      string      `json:"verdict"`
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
	sa, ra, err := resolve(cmd.Context(), db, a)
	if err != nil {
		return err
	}
	sb, rb, err := resolve(cmd.Context(), db, b)
	if err != nil {
		return err
	}
	doc := compareDoc{Schema: compareSchema, A: sa, B: sb, ThresholdPct: f.threshold, Basis: "runs"}
	if sa.Kind == "run" && sb.Kind == "run" {
		// Two single runs: their intervals are the samples.
		doc.Basis = "intervals"
		if doc.A.Sample, err = bench.IntervalGbps(ra[0].Result); err != nil {
			return err
		}
		if doc.B.Sample, err = bench.IntervalGbps(rb[0].Result); err != nil {
			return err
		}
	}
	if len(doc.A.Sample) == 0 || len(doc.B.Sample) == 0 {
		return errors.New("nothing to compare: a run without measured intervals")
	}
	ch := bench.CompareSamples(doc.A.Sample, doc.B.Sample)
	doc.A.Median, doc.B.Median = round(ch.MedianA, 3), round(ch.MedianB, 3)
	doc.Change, doc.ChangeCI95 = round(ch.Relative, 4), [2]float64{round(ch.CI95[0], 4), round(ch.CI95[1], 4)}
	doc.Regression = ch.Relative*100 < -f.threshold
	doc.Verdict = verdict(ch, f.threshold)
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
// else a label.
func resolve(ctx context.Context, db *store.Store, ref string) (compareSide, []store.Run, error) {
	side := compareSide{Ref: ref}
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
		if r, err := db.Run(ctx, id); err == nil {
			if r.Failed != "" {
				return side, nil, fmt.Errorf("run %d failed (%s): it has no result to compare; pick another run or a label", id, r.Failed)
			}
			side.Kind, side.RunIDs, side.Engine, side.Streams = "run", []int64{id}, r.Engine, r.Streams
			side.Sample = []float64{r.Gbps}
			return side, []store.Run{*r}, nil
		} else if !errors.Is(err, store.ErrNotFound) {
			return side, nil, err
		}
	}
	runs, err := db.Runs(ctx, store.Query{Label: ref, Full: true})
	if err != nil {
		return side, nil, err
	}
	runs = slices.DeleteFunc(runs, func(r store.Run) bool { return r.Failed != "" }) // a failed run is no sample
	if len(runs) == 0 {
		return side, nil, fmt.Errorf("%q is neither a run ID nor a label of a finished run in %s (see 'linerate history')", ref, db.Path())
	}
	side.Kind = "label"
	for _, r := range runs {
		side.RunIDs = append(side.RunIDs, r.ID)
		side.Sample = append(side.Sample, r.Gbps)
	}
	side.Engine, side.Streams = runs[0].Engine, runs[0].Streams
	return side, runs, nil
}

// verdict says in one sentence what the change means.
func verdict(ch bench.Change, threshold float64) string {
	pct, lo, hi := 100*ch.Relative, 100*ch.CI95[0], 100*ch.CI95[1]
	switch {
	case pct < -threshold:
		return fmt.Sprintf("regression: B is %.1f%% slower than A, beyond the %.1f%% threshold", -pct, threshold)
	case lo > 0:
		return "B is faster than A (the interval lies above zero)"
	case hi < 0:
		return fmt.Sprintf("B is slower than A, within the %.1f%% threshold", threshold)
	}
	return "no significant change (the interval includes zero)"
}

func writeCompare(w io.Writer, d compareDoc) error {
	side := func(name string, s compareSide) string {
		what := fmt.Sprintf("run %d", s.RunIDs[0])
		if s.Kind == "label" {
			what = fmt.Sprintf("label %q (%d run%s)", s.Ref, len(s.RunIDs), plural(len(s.RunIDs)))
		}
		return fmt.Sprintf("%s: %s, %s, %d stream%s: median %.2f Gbit/s over %d %s\n", name, what, s.Engine, s.Streams,
			plural(s.Streams), s.Median, len(s.Sample), d.Basis)
	}
	_, err := fmt.Fprintf(w, "%s%schange: %+.1f%% (95%% interval %+.1f%% to %+.1f%%, bootstrap of %d resamples)\n%s\n",
		side("A", d.A), side("B", d.B), 100*d.Change, 100*d.ChangeCI95[0], 100*d.ChangeCI95[1], bench.Resamples, d.Verdict)
	return err
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
