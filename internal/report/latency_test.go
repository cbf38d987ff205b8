package report

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/result"
)

// latencyRuns reads the captured runs of testdata/latency (bench
// --latency native and sockperf, bench --udp; see its README), labelled
// by file name.
func latencyRuns(t *testing.T) []Run { return capturedRuns(t, "latency", 9_000_000) }

// capturedRuns reads the captured runs of testdata/DIR, labelled by file
// name, numbered from firstID on.
func capturedRuns(t *testing.T, dir string, firstID int64) []Run {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no captured runs in testdata/%s: %v", dir, err)
	}
	var runs []Run
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r result.Result
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		r.RunID = firstID + int64(i)
		runs = append(runs, Run{Result: r, Label: strings.TrimSuffix(filepath.Base(f), ".json")})
	}
	return runs
}

// TestLatencySection: the captured runs give a table row per ping-pong
// with its placement and percentiles, a dot per known level in the
// chart, a row per UDP run; the Markdown carries the same; the page
// renders in Chromium without a console error.
func TestLatencySection(t *testing.T) {
	ds := loadFixture(t, "seed000")
	runs := latencyRuns(t)
	ds.Runs = append(ds.Runs, runs...)
	var nLat, nUDP, dots, perInterval int
	for _, r := range runs {
		if l := r.Result.End.Latency; l != nil {
			nLat++
			if len(r.Result.Intervals) > 0 && r.Result.Intervals[len(r.Result.Intervals)-1].Latency != nil {
				perInterval++
			}
			_, vals := latencyLevels(l.RTTUs)
			for _, v := range vals {
				if v != nil {
					dots++
				}
			}
		}
		if r.Result.End.UDP != nil {
			nUDP++
		}
	}
	if nLat == 0 || nUDP == 0 {
		t.Fatalf("captured %d latency and %d UDP runs: want both", nLat, nUDP)
	}
	m, err := Build(ds)
	if err != nil {
		t.Fatal(err)
	}
	var sec *section
	for _, s := range m.sections {
		if s.ID == "latency" {
			sec = s
		}
	}
	if sec == nil || sec.Omitted != "" {
		t.Fatalf("no latency section: %+v", sec)
	}
	var tables []*table
	svgs := map[string]string{}
	for _, bl := range sec.Blocks {
		if bl.Table != nil {
			tables = append(tables, bl.Table)
		}
		if bl.Chart != nil {
			svgs[bl.Chart.ID] = string(bl.Chart.Body)
		}
	}
	svg := svgs["latency-percentiles"]
	if len(tables) != 2 || len(tables[0].Rows) != nLat || len(tables[1].Rows) != nUDP {
		t.Fatalf("%d tables: want a latency table of %d rows and a UDP table of %d", len(tables), nLat, nUDP)
	}
	for _, row := range tables[0].Rows {
		if !strings.Contains(row[3], "→") || row[6] == "–" || row[9] == "–" {
			t.Errorf("row %q: want the placement, p50 and p99", row)
		}
	}
	if n := strings.Count(svg, `class="dot `); n != dots {
		t.Errorf("%d dots, want %d (one per known level of each run)", n, dots)
	}
	// The native runs captured with per-interval percentiles get a p50
	// and a p99 line each over time; sockperf's runs carry none.
	if perInterval == 0 {
		t.Fatal("no captured run has per-interval percentiles")
	}
	if n := strings.Count(svgs["latency-over-time"], `class="ln `); n != 2*perInterval {
		t.Errorf("%d lines over time, want %d (p50 and p99 of %d runs)", n, 2*perInterval, perInterval)
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
	for _, want := range []string{"## Latency and packet rate", "| Run | Engine | Protocol, size | CPUs client → server |", tables[0].Rows[0][0], "r-latency-percentiles.svg", "r-latency-over-time.svg", "### UDP at a target rate"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
	if testing.Short() {
		return
	}
	bin := chromium(t)
	page := filepath.Join(dir, "report.html")
	writeReport(t, ds, page)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := startChromium(ctx, bin, filepath.Join(dir, "profile"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	s, err := c.shoot(ctx, "file://"+page+"#latency", 1280, 0, false, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range s.Problems {
		t.Error(p)
	}
	if out := os.Getenv("REPORT_PNG_DIR"); out != "" {
		if err := os.WriteFile(filepath.Join(out, "report-latency.png"), s.PNG, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
