package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestComparisonKinds: a report of throughput labels beside the captured
// ping-pongs and UDP run (each its own label) shows each label by its own
// figure, never compares across kinds, compares two latency labels by
// their RTT p50 (a label 1.3 times slower is slower, not faster), and
// has no NaN anywhere in its HTML or Markdown.
func TestComparisonKinds(t *testing.T) {
	ds := loadFixture(t, "seed000")
	runs := latencyRuns(t)
	// A second latency label: the native TCP ping-pong again, three
	// times, each round trip 1.3 times longer.
	for i, r := range runs {
		if r.Label != "native-tcp" {
			continue
		}
		for k := range 3 {
			slow := r
			slow.Label = "native-tcp-slow"
			slow.Result.RunID = int64(9_100_000 + 10*i + k)
			lat := *r.Result.End.Latency
			p50 := *lat.RTTUs.P50 * 1.3 * (1 + 0.01*float64(k))
			lat.RTTUs.P50 = &p50
			slow.Result.End.Latency = &lat
			runs = append(runs, slow)
		}
	}
	ds.Runs = append(ds.Runs, runs...)
	m, err := Build(ds)
	if err != nil {
		t.Fatal(err)
	}
	var tb *table
	for _, s := range m.sections {
		for _, bl := range s.Blocks {
			if bl.Table != nil && bl.Table.ID == "comparison" {
				tb = bl.Table
			}
		}
	}
	if tb == nil {
		t.Fatal("no comparison table")
	}
	rows := map[string][]string{}
	for _, r := range tb.Rows {
		rows[r[0]] = r
	}
	for _, c := range []struct {
		label, median, reading string
	}{
		{"native-tcp", "µs RTT p50", "not compared: a latency run at 1000/s, the baseline a tcp run"},
		{"sockperf-tcp", "µs RTT p50", "not compared: a latency run at 1000/s, the baseline a tcp run"},
		{"native-udp-20M", "Gbit/s", "not compared: a udp run at 20 Mbit/s, the baseline a tcp run"},
		{"native-tcp-slow", "µs RTT p50", "not compared"},
	} {
		r := rows[c.label]
		if r == nil {
			t.Errorf("no row for %s", c.label)
			continue
		}
		if !strings.Contains(r[3], c.median) || !strings.Contains(r[8], c.reading) || r[6] != "—" || r[4] != "—" {
			t.Errorf("row %s: %q, want median in %q, reading %q, no change, no ceiling", c.label, r, c.median, c.reading)
		}
	}

	// Two latency labels alone: compared by p50, the slower is slower.
	var lat Dataset
	for _, r := range ds.Runs {
		if r.Label == "native-tcp" || r.Label == "native-tcp-slow" {
			lat.Runs = append(lat.Runs, r)
		}
	}
	lm, err := Build(lat)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, s := range lm.sections {
		for _, bl := range s.Blocks {
			if bl.Table == nil || bl.Table.ID != "comparison" {
				continue
			}
			found = true
			r := bl.Table.Rows[1]
			if r[0] != "native-tcp-slow" || !strings.HasPrefix(r[6], "+3") || r[8] != "too few runs to tell" || r[7] == "—" {
				t.Errorf("latency row: %q, want a change of about +31%% of the RTT p50", r)
			}
		}
	}
	if !found {
		t.Error("two latency labels: no comparison table")
	}

	var html bytes.Buffer
	if err := WriteHTML(&html, m); err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(t.TempDir(), "r.md")
	if err := WriteMarkdown(md, m); err != nil {
		t.Fatal(err)
	}
	mdText, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"HTML": html.String(), "Markdown": string(mdText)} {
		if i := strings.Index(text, "NaN"); i >= 0 {
			t.Errorf("%s has NaN: …%s…", name, text[max(0, i-200):min(len(text), i+50)])
		}
	}
}

// TestRunNamesUnique: runs of one label get names of their own in the
// latency legends and tables ("203 (latcamp)"), not the label four times.
func TestRunNamesUnique(t *testing.T) {
	runs := latencyRuns(t)
	seen := map[string]bool{}
	for i := range runs {
		runs[i].Label = "latcamp"
		n := runName(&runs[i])
		if seen[n] || !strings.HasSuffix(n, " (latcamp)") {
			t.Errorf("run name %q: repeated, or without its label", n)
		}
		seen[n] = true
	}
}
