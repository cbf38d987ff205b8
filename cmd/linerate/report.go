package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/internal/bench"
	"github.com/linerate/linerate/internal/c2c"
	"github.com/linerate/linerate/internal/report"
	"github.com/linerate/linerate/internal/statedir"
	"github.com/linerate/linerate/internal/store"
)

type reportFlags struct {
	runs     []int64
	last     int
	labels   []string
	db       string
	stateDir string
	out      string
	title    string
	json     bool
	c2c      []string
	fleet    string
	mesh     string
}

func newReportCmd(env *cliEnv) *cobra.Command {
	var f reportFlags
	cmd := &cobra.Command{
		Use:   "report -o FILE.html|FILE.md",
		Short: "Write the baseline report of stored runs: verdict, hosts, ceiling, findings, results, variance, tuning",
		Long: `report writes what doctor, bench and tune recorded as one report: the verdict
(achieved X of Y Gbit/s and what limits it), the hosts' NICs, PCIe links and
topology, the ceiling waterfall, doctor's findings with their fixes, every
campaign and run (and perftest's bandwidth and latency), run-to-run variance
with the per-CPU picture, the tuning in effect with the bench before and after,
the environment, and the commands that reproduce every run. A host's newest
core-to-core matrix ('linerate c2c') is included when the database has one;
--c2c FILE adds one measured elsewhere.

The runs are the union of --run, --last and --label; with none of them, the
runs of the newest campaign, or the newest run when no run belongs to one.

-o names the file and its format: .html (or .htm) is one self-contained page
with inline SVG charts; .md is Markdown, with each chart written as an .svg
file beside it (FILE-CHART.svg).

The database is --db, else DIR/results.db when --state-dir DIR is given, else
` + store.DefaultPath() + `. Tune journals are read from DIR/tune
(default ` + filepath.Join(statedir.Dir(), "tune") + `); a run made under a
journal this machine does not have (another machine's) is reported with
the journal's ID only.`,
		Example: `  linerate report -o report.html
  linerate report --label baseline --label tuned -o report.md
  linerate report --run 12 --run 17 --last 5 --title "crow → vulture" -o crow.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runReport(cmd, env, f) },
	}
	fl := cmd.Flags()
	fl.Var((*idList)(&f.runs), "run", "a run to report, by ID ('linerate history' lists them); repeatable or comma-separated")
	fl.IntVar(&f.last, "last", 0, "the newest N runs")
	fl.StringArrayVar(&f.labels, "label", nil, "the runs with this label; repeatable")
	fl.StringVar(&f.db, "db", "", "the results database (default "+store.DefaultPath()+")")
	fl.StringVar(&f.stateDir, "state-dir", "", "linerate's state directory: tune journals in DIR/tune, the database DIR/results.db (default "+statedir.Dir()+")")
	fl.StringVarP(&f.out, "output", "o", "", "the report file: FILE.html, FILE.htm or FILE.md (required)")
	fl.StringVar(&f.title, "title", "", "the report's title (default: made from the hosts)")
	fl.StringArrayVar(&f.c2c, "c2c", nil, "a core-to-core matrix from 'linerate c2c --json' to include (a host's stored one is included anyway); repeatable")
	fl.StringVar(&f.fleet, "fleet", "", "draw a fleet run: the linerate.fleet/v1 document 'linerate fleet run --json' wrote")
	fl.StringVar(&f.mesh, "mesh", "", "draw a mesh: the linerate.mesh/v1 document 'linerate mesh status --json' wrote")
	fl.BoolVar(&f.json, "json", false, "say what was written as a "+reportSchema+" JSON document (the verdict, the runs, hosts and journals in the report)")
	return cmd
}

// reportFormat is the output format -o names by its extension.
func reportFormat(path string) (string, error) {
	if path == "" {
		return "", errors.New("-o is required: name the report file, e.g. -o report.html or -o report.md")
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".html", ".htm":
		return "html", nil
	case ".md":
		return "markdown", nil
	}
	return "", fmt.Errorf("-o %s: the extension says the format: use .html, .htm or .md", path)
}

func runReport(cmd *cobra.Command, env *cliEnv, f reportFlags) error {
	format, err := reportFormat(f.out)
	if err != nil {
		return err
	}
	if f.fleet != "" {
		return runFleetReport(env, f, format)
	}
	if f.mesh != "" {
		return runMeshReport(env, f, format)
	}
	if f.last < 0 {
		return fmt.Errorf("--last %d: give a positive number of runs", f.last)
	}
	state := f.stateDir
	if state == "" {
		state = statedir.Dir()
	}
	dbPath := f.db
	switch {
	case dbPath == "" && f.stateDir != "":
		dbPath = filepath.Join(f.stateDir, store.FileName)
	case dbPath == "":
		dbPath = store.DefaultPath()
	}
	db, err := openResults(cmd.Context(), dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	ds, err := report.Load(cmd.Context(), db, report.LoadOptions{
		Selection: report.Selection{RunIDs: f.runs, Last: f.last, Labels: f.labels},
		TuneDir:   filepath.Join(state, "tune"),
		Title:     f.title,
		Linerate:  versionText(),
		Commands:  bench.StoredCommands{},
	})
	if err != nil {
		return err
	}
	if err := addC2CFiles(ds, f.c2c); err != nil {
		return err
	}
	m, err := report.Build(*ds)
	if err != nil {
		return err
	}
	if err := writeReport(f.out, format, m); err != nil {
		return err
	}
	if f.json {
		return writeJSON(env.stdout, reportSummary(f.out, format, m, ds))
	}
	fmt.Fprintf(env.stdout, "report written to %s: %s\n", f.out, reportContents(ds))
	chartsNote(env.stdout, f.out, format)
	return nil
}

// writeReport writes m to out as format (markdown, or an HTML page),
// naming the likely cause when it cannot.
func writeReport(out, format string, m *report.Model) error {
	var err error
	if format == "markdown" {
		err = report.WriteMarkdown(out, m)
	} else {
		err = writeHTMLReport(out, m)
	}
	if err != nil {
		return fmt.Errorf("%w (does the directory exist and can you write to it?)", err)
	}
	return nil
}

// chartsNote says where a Markdown report's charts went (SVG files
// beside it); an HTML page holds its own.
func chartsNote(w io.Writer, out, format string) {
	if format == "markdown" {
		fmt.Fprintf(w, "charts written beside it as %s-*.svg\n", strings.TrimSuffix(out, filepath.Ext(out)))
	}
}

// writeHTMLReport writes the page to a temporary file beside path and
// renames it into place, so that a failed write leaves no half report.
func writeHTMLReport(path string, m *report.Model) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing the report %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing left to remove
	err = report.WriteHTML(tmp, m)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("writing the report %s: %w", path, err)
	}
	return nil
}

// reportContents says what the report covers: "27 runs in 3 campaigns, 2
// hosts, 1 tune journal".
func reportContents(ds *report.Dataset) string {
	count := func(n int, one, many string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %s", n, many)
	}
	parts := []string{count(len(ds.Runs), "run", "runs")}
	if len(ds.Campaigns) > 0 {
		parts[0] += " in " + count(len(ds.Campaigns), "campaign", "campaigns")
	}
	if len(ds.Perftest) > 0 {
		parts = append(parts, count(len(ds.Perftest), "perftest result", "perftest results"))
	}
	parts = append(parts, count(len(ds.Hosts), "host", "hosts"))
	if len(ds.Tunes) > 0 {
		parts = append(parts, count(len(ds.Tunes), "tune journal", "tune journals"))
	}
	if len(ds.C2C) > 0 {
		parts = append(parts, count(len(ds.C2C), "core-to-core matrix", "core-to-core matrices"))
	}
	return strings.Join(parts, ", ")
}

// reportSchema names the JSON document `linerate report --json` prints.
const reportSchema = "linerate.report/v1"

// reportDoc is what `report --json` says of the report it wrote.
type reportDoc struct {
	Schema    string   `json:"schema"`
	Output    string   `json:"output"`
	Format    string   `json:"format"`
	Title     string   `json:"title"`
	Verdict   string   `json:"verdict"`
	RunIDs    []int64  `json:"run_ids"`
	Campaigns int      `json:"campaigns"`
	Perftest  int      `json:"perftest_results"`
	Hosts     []string `json:"hosts"`
	Tunes     []string `json:"tune_journals"`
}

func reportSummary(out, format string, m *report.Model, ds *report.Dataset) reportDoc {
	d := reportDoc{Schema: reportSchema, Output: out, Format: format, Title: m.Title, Verdict: m.Verdict,
		RunIDs: []int64{}, Campaigns: len(ds.Campaigns), Perftest: len(ds.Perftest), Hosts: []string{}, Tunes: []string{}}
	for _, r := range ds.Runs {
		d.RunIDs = append(d.RunIDs, r.Result.RunID)
	}
	for _, h := range ds.Hosts {
		d.Hosts = append(d.Hosts, h.Host.Hostname)
	}
	for _, j := range ds.Tunes {
		d.Tunes = append(d.Tunes, j.ID)
	}
	return d
}

// openResults opens an existing results database (path "" is the default
// one) for reading. Reading must not create: a mistyped --db would leave
// an empty database behind.
func openResults(ctx context.Context, path string) (*store.Store, error) {
	if path == "" {
		path = store.DefaultPath()
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no results database at %s: run 'linerate bench PEER' first, or name the database with --db", path)
	} else if err != nil {
		return nil, fmt.Errorf("results database %s: %w", path, err)
	}
	return store.Open(ctx, path)
}

// addC2CFiles adds the matrices of --c2c to the dataset; a file's matrix
// replaces a stored one of the same host.
func addC2CFiles(ds *report.Dataset, paths []string) error {
	for _, p := range paths {
		r, err := report.ReadC2C(p)
		if err != nil {
			return fmt.Errorf("--c2c %w", err)
		}
		i := slices.IndexFunc(ds.C2C, func(c c2c.Result) bool { return c.Host == r.Host })
		if i >= 0 {
			ds.C2C[i] = *r
		} else {
			ds.C2C = append(ds.C2C, *r)
		}
	}
	return nil
}

// idList is a repeatable flag of run IDs ("--run 3 --run 7", "--run
// 3,7"). Its own type, rather than pflag's Int64Slice, so that help shows
// "--run ID" without "(default [])".
type idList []int64

func (l *idList) String() string {
	parts := make([]string, len(*l))
	for i, id := range *l {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(parts, ",")
}

func (l *idList) Type() string { return "ID" }

func (l *idList) Set(v string) error {
	for _, f := range strings.Split(v, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || id <= 0 {
			return fmt.Errorf("%q is not a run ID ('linerate history' lists them)", f)
		}
		*l = append(*l, id)
	}
	return nil
}
