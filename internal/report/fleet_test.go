package report

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/fleet"
)

// fleetNet is a fleet.Runner for report tests: every test at base Gbit/s
// with a fixed wobble, a slow send side on one host and one failing
// direction. The fleet package tests the blame; here it only feeds the
// report a document with every kind of outcome.
type fleetNet struct {
	base     float64
	slowSend string
	fail     [2]string
	calls    int
}

func (f *fleetNet) Run(_ context.Context, s fleet.Spec) (fleet.Measurement, error) {
	f.calls++
	if s.From.Name == f.fail[0] && s.To.Name == f.fail[1] {
		return fleet.Measurement{}, errors.New("connecting to the agent at " + s.To.Address + ":5301: connection refused")
	}
	g := f.base * (0.97 + 0.06*float64((f.calls*37)%11)/10)
	if s.From.Name == f.slowSend {
		g = f.base / 5 * (0.98 + 0.04*float64(f.calls%3)/2)
	}
	return fleet.Measurement{Gbps: g, RunID: int64(100 + f.calls)}, nil
}

func fleetResult(t testing.TB, n int, net *fleetNet) *fleet.Result {
	t.Helper()
	hosts := make([]fleet.Host, n)
	for i := range hosts {
		hosts[i] = fleet.Host{Name: fmt.Sprintf("h%02d", i+1), Address: fmt.Sprintf("198.18.0.%d", i+1)}
	}
	res, err := fleet.Run(context.Background(), hosts, fleet.Options{Pattern: fleet.Pattern{Kind: fleet.PatternPairs},
		Design: fleet.DesignAll, Duration: 10 * time.Second, Streams: 1, Label: "fleet-test"}, net)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestFleetReport: the report of a 6-host run with a slow send side and a
// failing direction shows the verdict, every test in the matrix, the slow
// ones outlined, the failed one crossed, the host's row framed, the
// outliers with what to run next, the re-tests and every pair.
func TestFleetReport(t *testing.T) {
	res := fleetResult(t, 6, &fleetNet{base: 9.4, slowSend: "h03", fail: [2]string{"h05", "h01"}})
	m, err := BuildFleet(res, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	page := modelHTML(t, m)
	count := func(re string) int { return matches(page, re) }
	checks := []struct {
		what string
		got  int
		want int
	}{
		{"measured cells", count(`<rect class="fl-cell"[^>]*><title>h0\d → h0\d`), 29},
		{"slow outlines", count(`class="fl-slow"`), 5 + 1}, // h03's row, and the legend
		{"failed cells", count(`<rect class="fl-failed"[^>]*><title>h05 → h01: failed: connecting`), 1},
		{"framed rows", count(`class="fl-frame"`), 1 + 1}, // h03's row, and the legend
		{"marked host labels", count(`class="tick fl-blamed"[^>]*>h03<`), 1},
		{"re-test rows", count(`<tr class="crit"><td>h03</td><td>h0\d</td><td class="num">[0-9.]+</td><td class="num">[0-9.]+</td><td>slow again</td>`), 5},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.what, c.got, c.want)
		}
	}
	for _, want := range []string{
		"Host h03 is slow when it sends", "<strong>h03: send side</strong>", "The path h05→h01 failed", "<strong>h05→h01</strong>",
		"linerate doctor   # on h03", "linerate bench 198.18.0.1 --repeat 5   # on h05, with &#39;linerate serve&#39; on h01",
		"h01 – h02", "fleet-test", "15 pairs in 5 rounds, 40 tests run",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script") {
		t.Error("the page has a script")
	}

	// Markdown, with the matrix as an SVG file beside it.
	dir := t.TempDir()
	md := filepath.Join(dir, "fleet.md")
	if err := WriteMarkdown(md, m); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(md)
	for _, want := range []string{"![Pair matrix", "fleet-fleet-matrix.svg", "| h03 | h01 |", "**HOST** `h03: send side`"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, text)
		}
	}
	if svg, err := os.ReadFile(filepath.Join(dir, "fleet-fleet-matrix.svg")); err != nil || !strings.Contains(string(svg), "fl-cell") {
		t.Errorf("matrix SVG: %v", err)
	}
}

// TestFleetReportNoOutlier: a healthy fleet says so, and leaves the
// re-tests out.
func TestFleetReportNoOutlier(t *testing.T) {
	m, err := BuildFleet(fleetResult(t, 4, &fleetNet{base: 9.4}), "Rack 7", "")
	if err != nil {
		t.Fatal(err)
	}
	page := modelHTML(t, m)
	for _, want := range []string{"<h1>Rack 7</h1>", "No outlier", "Re-tests: no test was slow"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, `class="fl-frame" x="1`) {
		t.Error("a host is framed in a healthy fleet")
	}
}

// TestFleetReportBelowOneGbit: a fleet below 1 Gbit/s (a shaped lab)
// keeps three decimals in the matrix, its legend and the tables, so that
// a fifth of 0.2 Gbit/s does not read as 0.0 beside 0.2.
func TestFleetReportBelowOneGbit(t *testing.T) {
	m, err := BuildFleet(fleetResult(t, 4, &fleetNet{base: 0.205, slowSend: "h02"}), "", "")
	if err != nil {
		t.Fatal(err)
	}
	page := modelHTML(t, m)
	for _, re := range []string{`>0\.0[34]\d<`, `>0\.2[01]\d<`} {
		if !regexp.MustCompile(re).MatchString(page) {
			t.Errorf("the page has no figure like %s", re)
		}
	}
	if regexp.MustCompile(`>0\.[0-9]<`).MatchString(page) {
		t.Error("a figure with one decimal in a fleet below 1 Gbit/s")
	}
}

// TestFleetReport64: 64 hosts draw a 64 × 64 matrix with the column labels
// turned and thinned out, and the blamed host always labelled.
func TestFleetReport64(t *testing.T) {
	res := fleetResult(t, 64, &fleetNet{base: 95, slowSend: "h41"})
	m, err := BuildFleet(res, "", "")
	if err != nil {
		t.Fatal(err)
	}
	page := modelHTML(t, m)
	if n := strings.Count(page, `<rect class="fl-cell"`); n != 64*63+7 {
		t.Errorf("%d cells, want %d and the legend's 7", n, 64*63)
	}
	if !strings.Contains(page, `class="tick fl-blamed"`) || !strings.Contains(page, "rotate(-90") {
		t.Error("no marked, turned label for h41")
	}
	if len(res.Outliers) != 1 || res.Outliers[0].Name != "h41" {
		t.Errorf("outliers %+v", res.Outliers)
	}
}

// loadedNet is a fleet.Runner whose tests run faster the fewer run at
// once (a loaded fabric), with one host busy (every test with it
// contended, and slow whatever the load) and one direction that is slow
// only in its first try.
type loadedNet struct {
	busy      string
	slowFirst [2]string
}

func (l loadedNet) Run(_ context.Context, s fleet.Spec) (fleet.Measurement, error) {
	m := fleet.Measurement{Gbps: 40 / float64(s.AtOnce)}
	if s.From.Name == l.busy || s.To.Name == l.busy {
		m.Gbps = 0.5
		m.Contention = "CPU 0 of " + l.busy + " was 60% busy with other work"
	}
	if s.From.Name == l.slowFirst[0] && s.To.Name == l.slowFirst[1] && !s.Retest {
		m.Gbps /= 3
	}
	return m, nil
}

// TestFleetReportSampledContended: a sampled, parallel run's report says
// which cells were not in the sample, dashes the inconclusive tests with
// their reason, dots the figure of a re-test run with another number of
// tests at once and says both loads in its tooltip, and gives the design.
func TestFleetReportSampledContended(t *testing.T) {
	hosts := make([]fleet.Host, 20)
	for i := range hosts {
		hosts[i] = fleet.Host{Name: fmt.Sprintf("h%02d", i+1), Address: fmt.Sprintf("198.18.0.%d", i+1)}
	}
	sched, err := fleet.SampledSchedule(20, 4, 11)
	if err != nil {
		t.Fatal(err)
	}
	// A pair of the sample without h07 (index 6), slow at first one way.
	var slow [2]string
	for _, p := range sched.Pairs() {
		if p.A != 6 && p.B != 6 {
			slow = [2]string{hosts[p.A].Name, hosts[p.B].Name}
			break
		}
	}
	res, err := fleet.Run(context.Background(), hosts, fleet.Options{Design: fleet.DesignSampled, Partners: 4, Seed: 11,
		Duration: 10 * time.Second, Streams: 1, Parallel: true}, loadedNet{busy: "h07", slowFirst: slow})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Outliers) != 0 {
		t.Fatalf("outliers %+v", res.Outliers)
	}
	m, err := BuildFleet(res, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	page := modelHTML(t, m)
	count := func(re string) int { return len(regexp.MustCompile(re).FindAllString(page, -1)) }
	if n := count(`<title>h\d\d → h\d\d: not in the sample</title>`); n != 20*19-20*4 {
		t.Errorf("%d cells not in the sample, want %d", n, 20*19-20*4)
	}
	if n := count(`class="fl-inconclusive"`); n != 8+1 { // h07's 4 partners both ways, and the legend
		t.Errorf("%d inconclusive marks, want 8 and the legend's", n)
	}
	if !strings.Contains(page, "(inconclusive: CPU 0 of h07 was 60% busy with other work)") {
		t.Error("no inconclusive cell gives its reason")
	}
	for _, want := range []string{"Sampled design: each host was tested with 4 partners", "sampled: 4 partners each (seed 11)",
		"At once</th>", "inconclusive: CPU 0 of h07", "stayed inconclusive"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// The slow first try came back in a re-test with fewer tests at once:
	// its cell is dotted and its tooltip says both loads.
	if count(`class="fl-otherload"`) != 2 || count(slow[0]+" → "+slow[1]+`: [0-9.]+ Gbit/s; measured (alone|with \d tests at once) in a re-test; the first try ran with 10 tests at once`) != 1 {
		t.Errorf("the re-test of %s→%s is not marked as measured alone", slow[0], slow[1])
	}
}

func TestBuildFleetRefuses(t *testing.T) {
	if _, err := BuildFleet(nil, "", ""); err == nil {
		t.Error("nil accepted")
	}
	res := fleetResult(t, 3, &fleetNet{base: 9})
	res.Pairs[0].B = "nobody"
	if _, err := BuildFleet(res, "", ""); err == nil {
		t.Error("a pair of an unlisted host accepted")
	}
}

// TestFleetChromiumRender renders the 6-host and the 64-host fleet reports
// in headless Chromium, light and dark, and fails on any console message,
// exception or error log entry. REPORT_PNG_DIR=DIR keeps every screenshot
// (and the top of each page) for a person to look at. The fleets are a
// fake runner's: docs/img gets a fleet report from a real lab run.
func TestFleetChromiumRender(t *testing.T) {
	if testing.Short() {
		// CI: runs the suite without -short, so this runs there.
		t.Skip("starts a browser")
	}
	bin := chromium(t)
	dir := t.TempDir()
	pages := map[string]*fleet.Result{
		"fleet6":  fleetResult(t, 6, &fleetNet{base: 9.4, slowSend: "h03", fail: [2]string{"h05", "h01"}}),
		"fleet64": fleetResult(t, 64, &fleetNet{base: 95, slowSend: "h41"}),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := startChromium(ctx, bin, filepath.Join(dir, "profile"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	for name, res := range pages {
		m, err := BuildFleet(res, "", "test")
		if err != nil {
			t.Fatal(err)
		}
		page := filepath.Join(dir, name+".html")
		f, err := os.Create(page)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteHTML(f, m); err != nil {
			t.Fatal(err)
		}
		f.Close()
		for _, dark := range []bool{false, true} {
			s, err := c.shoot(ctx, "file://"+page, 1280, 0, dark, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range s.Problems {
				t.Errorf("%s dark=%v: %s", name, dark, p)
			}
			if len(s.PNG) < 10000 || s.Height < 1000 {
				t.Errorf("%s: screenshot %d bytes of a page %d px tall: the page did not render", name, len(s.PNG), s.Height)
			}
			png := name + map[bool]string{false: ".png", true: "-dark.png"}[dark]
			if out := os.Getenv("REPORT_PNG_DIR"); out != "" {
				top, err := c.shoot(ctx, "file://"+page, 1280, 1600, dark, false)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(out, png), s.PNG, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(out, "top-"+png), top.PNG, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}
