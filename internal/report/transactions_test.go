package report

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/explain"
	"github.com/linerate/linerate/internal/result"
)

// transactionRuns reads the captured runs of testdata/transactions
// (bench --rr and --crr in a lab; see its README), labelled by file name.
func transactionRuns(t *testing.T) []Run { return capturedRuns(t, "transactions", 9_100_000) }

// TestTransactionsSection: the captured rr and crr runs give a row each
// with their mode, flows on threads, rate, percentiles and CPU per
// transaction of both ends; a campaign of them a row per point in
// transactions per second, its best the point of most; the verdict of
// transactions alone speaks of transactions, not Gbit/s; the Markdown
// carries the same; the page renders in Chromium without a console error.
func TestTransactionsSection(t *testing.T) {
	runs := transactionRuns(t)
	ds := loadFixture(t, "seed000")
	ds.Runs = append(ds.Runs, runs...)
	m, err := Build(ds)
	if err != nil {
		t.Fatal(err)
	}
	sec := sectionOf(m, "transactions")
	if sec == nil || sec.Omitted != "" {
		t.Fatalf("no transactions section: %+v", sec)
	}
	tab := firstTable(sec)
	if tab == nil || len(tab.Rows) != len(runs) {
		t.Fatalf("table %+v: want a row per captured run (%d)", tab, len(runs))
	}
	for i, row := range tab.Rows {
		x := runs[i].Result.End.Transactions
		if row[0] != runName(&runs[i]) || row[1] != string(x.Mode) || row[2] != strconv.Itoa(x.Flows)+" on "+strconv.Itoa(x.Threads) ||
			row[6] != strconv.FormatFloat(x.PerSecond, 'f', 0, 64) || row[7] == "–" || row[11] == "–" || row[12] == "–" {
			t.Errorf("row %q: want the run's mode, flows on threads, rate, p50 and CPU per transaction of both ends (%+v)", row, x)
		}
	}
	// A campaign of the rr runs, as bench summarizes it.
	var outs []explain.Outcome
	d := explain.Design{Driver: "native", Peer: "lab:txn"}
	for i, r := range runs {
		if r.Result.End.Transactions.Mode == result.RR {
			d.Points = append(d.Points, explain.Point{Streams: r.Result.Start.Streams, Placement: "auto"})
			outs = append(outs, explain.Outcome{Point: len(d.Points) - 1, ID: runs[i].Result.RunID, Run: &runs[i].Result})
		}
	}
	sum := explain.Summarize(d, outs, explain.Topology{}, nil)
	only := Dataset{Runs: runs, Campaigns: []Campaign{{Summary: *sum}}}
	m, err = Build(only)
	if err != nil {
		t.Fatal(err)
	}
	pt := tableOf(m, "points-c1")
	if pt == nil || len(pt.Rows) != len(outs) || !strings.Contains(strings.Join(pt.Classes, " "), "best") {
		t.Fatalf("campaign table %+v: want a row per rr run, one best", pt)
	}
	if rt := tableOf(m, "runs"); rt == nil || len(rt.Rows) == 0 || !strings.HasSuffix(rt.Rows[0][5], " transactions/s") || rt.Rows[0][8] != "— / —" {
		t.Errorf("every run's table: %+v; want transactions/s, not Gbit/s or CPU per Gbit", rt)
	}
	if !strings.HasPrefix(m.Verdict, "Transactions, not throughput, were measured: the most is a median of ") {
		t.Errorf("verdict of transactions alone: %q", m.Verdict)
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
	for _, want := range []string{"## Transactions", "| Run | Mode | Flows on threads |", runs[0].Label, "transactions per point"} {
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
	s, err := c.shoot(ctx, "file://"+page+"#transactions", 1280, 0, false, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range s.Problems {
		t.Error(p)
	}
}

// sectionOf is m's section id, nil when it has none.
func sectionOf(m *Model, id string) *section {
	for _, s := range m.sections {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// firstTable is s's first table.
func firstTable(s *section) *table {
	for _, bl := range s.Blocks {
		if bl.Table != nil {
			return bl.Table
		}
	}
	return nil
}

// tableOf is m's table id, in any section.
func tableOf(m *Model, id string) *table {
	for _, s := range m.sections {
		for _, bl := range s.Blocks {
			if bl.Table != nil && bl.Table.ID == id {
				return bl.Table
			}
		}
	}
	return nil
}
