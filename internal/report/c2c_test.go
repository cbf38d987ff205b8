package report

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/bench"
	"github.com/linerate/linerate/internal/c2c"
	"github.com/linerate/linerate/internal/store"
)

// storeC2C stores a matrix for host as `linerate c2c` does.
func storeC2C(t *testing.T, st *store.Store, r c2c.Result) {
	t.Helper()
	doc, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AddC2C(context.Background(), &store.C2C{MeasuredAt: r.MeasuredAt, Host: r.Host, Result: doc}); err != nil {
		t.Fatal(err)
	}
}

// TestReportLoadC2C: Load attaches the newest stored matrix of each host
// in the report, and none of a host that is not in it.
func TestReportLoadC2C(t *testing.T) {
	ds0 := loadFixture(t, "seed000")
	s := storeDataset(t, ds0)
	old := ds0.C2C[0]
	old.MeasuredAt = old.MeasuredAt.Add(-time.Hour)
	old.Verdict = "an older matrix"
	storeC2C(t, s.st, old)
	storeC2C(t, s.st, ds0.C2C[0])
	other := ds0.C2C[0]
	other.Host = "owl"
	storeC2C(t, s.st, other)
	ds, err := Load(context.Background(), s.st, LoadOptions{Commands: bench.StoredCommands{}, TuneDir: s.tuneDir})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.C2C) != 1 || ds.C2C[0].Host != "vulture" || ds.C2C[0].Verdict != ds0.C2C[0].Verdict {
		t.Fatalf("c2c %+v", ds.C2C)
	}
}

// TestC2CSection: the section says the verdict, draws a cell per pair and
// an outline per group, and its Markdown carries the same sentence and
// table with the chart beside it.
func TestC2CSection(t *testing.T) {
	ds := loadFixture(t, "seed000")
	m, err := Build(ds)
	if err != nil {
		t.Fatal(err)
	}
	var sec *section
	for _, s := range m.sections {
		if s.ID == "c2c" {
			sec = s
		}
	}
	if sec == nil || sec.Omitted != "" {
		t.Fatalf("no c2c section: %+v", sec)
	}
	var text []string
	var svg string
	for _, bl := range sec.Blocks {
		text = append(text, bl.Text)
		if bl.Chart != nil {
			svg = string(bl.Chart.Body)
		}
	}
	all := strings.Join(text, "\n")
	if !strings.Contains(all, "Sysfs says 2 L3 domains; the matrix agrees: 20 ns inside, 216 ns across.") {
		t.Errorf("no verdict in %q", all)
	}
	// 12 CPUs: 132 measured cells, 12 diagonal cells; two group outlines
	// (and one in the legend); two L3 brackets.
	if n := strings.Count(svg, `class="hm hm-softirq"`); n != 132+5 {
		t.Errorf("%d shaded cells, want 132 and 5 in the legend", n)
	}
	if n := strings.Count(svg, `class="app-mark"`); n != 3 {
		t.Errorf("%d outlines, want 3", n)
	}
	for _, want := range []string{"L3 0-5", "L3 6-11", "CPU 8 ↔ CPU 1: 228 ns", ">216<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	dir := t.TempDir()
	md := filepath.Join(dir, "r.md")
	if err := WriteMarkdown(md, m); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Core-to-core latency", "Sysfs says 2 L3 domains; the matrix agrees", "| 1 | 0-5 | 0-5 | 20 | 216 |", "r-c2c-1.svg"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "r-c2c-1.svg")); err != nil {
		t.Error(err)
	}
}

// TestC2CPerL3Chart: a sparse matrix (--per-l3) draws its unmeasured
// pairs grey and says so in their tooltips.
func TestC2CPerL3Chart(t *testing.T) {
	r := c2c.Result{Schema: c2c.Schema, Host: "big", Mode: c2c.ModePerL3, CPUs: []int{0, 1, 8, 9}, Pairs: 3, RoundTrips: 1000, Samples: 300}
	r.MatrixNs = [][]*float64{make([]*float64, 4), make([]*float64, 4), make([]*float64, 4), make([]*float64, 4)}
	set := func(i, j int, v float64) { r.MatrixNs[i][j], r.MatrixNs[j][i] = &v, &v }
	set(0, 2, 110)
	set(0, 1, 24)
	set(2, 3, 23)
	r.Judge([][]int{{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15}})
	ds := loadFixture(t, "seed002")
	ds.C2C = []c2c.Result{r}
	m, err := Build(ds)
	if err != nil {
		t.Fatal(err)
	}
	var svg, all string
	for _, s := range m.sections {
		for _, bl := range s.Blocks {
			if bl.Chart != nil && strings.HasPrefix(bl.Chart.ID, "c2c") {
				svg = string(bl.Chart.Body)
			}
			all += bl.Text + "\n"
		}
	}
	if n := strings.Count(svg, ": not measured"); n != 6 {
		t.Errorf("%d unmeasured cells, want 6 (1↔8, 1↔9, 0↔9 both ways)", n)
	}
	if !strings.Contains(all, "(again: 'linerate c2c --per-l3' on big)") || !strings.Contains(all, "the matrix agrees: 24 ns inside, 110 ns across") {
		t.Errorf("text: %s", all)
	}
}

// TestReadC2C: a file from `c2c --json` is read; other JSON is refused
// with the reason.
func TestReadC2C(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	doc, _ := json.Marshal(loadFixture(t, "seed000").C2C[0])
	os.WriteFile(good, doc, 0o644)
	if r, err := ReadC2C(good); err != nil || r.Host != "vulture" {
		t.Fatalf("%v %v", r, err)
	}
	for name, body := range map[string]string{
		"bench.json":  `{"schema":"linerate.bench/v1"}`,
		"ragged.json": `{"schema":"linerate.c2c/v1","cpus":[0,1],"matrix_ns":[[null,1],[1]]}`,
		"short.json":  `{"schema":"linerate.c2c/v1","cpus":[0],"matrix_ns":[[null]]}`,
		"text.json":   `sysfs says`,
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := ReadC2C(p); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestC2CLegendOneValue: the matrix of a 2-CPU machine has one pair, so
// its scale is one value: one swatch labelled with it, not five alike.
func TestC2CLegendOneValue(t *testing.T) {
	r := c2c.Result{Schema: c2c.Schema, Host: "vm", CPUs: []int{0, 1}, Pairs: 1, RoundTrips: 1000, Samples: 300}
	v := 26.0
	r.MatrixNs = [][]*float64{{nil, &v}, {&v, nil}}
	r.Judge([][]int{{0, 1}})
	ds := loadFixture(t, "seed002")
	ds.C2C = []c2c.Result{r}
	m, err := Build(ds)
	if err != nil {
		t.Fatal(err)
	}
	var svg string
	for _, s := range m.sections {
		for _, bl := range s.Blocks {
			if bl.Chart != nil && strings.HasPrefix(bl.Chart.ID, "c2c") {
				svg = string(bl.Chart.Body)
			}
		}
	}
	if n := len(regexp.MustCompile(`class="legend"[^>]*>26</text>`).FindAllString(svg, -1)); n != 1 {
		t.Errorf("%d legend labels of 26 ns, want 1:\n%s", n, svg)
	}
}
