package report

import (
	"strconv"
	"testing"
)

// TestFailedRunShownAsFailed: a run cut short (its path went away) is
// listed as failed with its reason, not with the rate of its partial
// intervals, and is no sample of the tuning comparison.
func TestFailedRunShownAsFailed(t *testing.T) {
	ds := loadFixture(t, "seed000")
	best := 0
	for i := range ds.Runs {
		if runGbps(&ds.Runs[i].Result) > runGbps(&ds.Runs[best].Result) {
			best = i
		}
	}
	const why = "the path to 198.18.0.2 went away 2.6 s into the run: lab0 was removed"
	ds.Runs[best].Result.Error = why
	id := strconv.FormatInt(ds.Runs[best].Result.RunID, 10)
	runs := parseTables(t, renderHTML(t, ds))["runs"]
	found := false
	for _, row := range runs.rows {
		if row[runs.col(t, "Run")] != id {
			continue
		}
		found = true
		if g, p := row[runs.col(t, "Gbit/s")], row[runs.col(t, "% of ceiling")]; g != "failed: "+why || p != "—" {
			t.Errorf("run %s: %q, %q", id, g, p)
		}
	}
	if !found {
		t.Fatalf("run %s is not in the runs table", id)
	}
	b := &builder{ds: &ds}
	for ji := range ds.Tunes {
		before, after := b.tuneRuns(&ds.Tunes[ji])
		for _, r := range append(before, after...) {
			if r.Result.Error != "" {
				t.Errorf("journal %s compares failed run %d", ds.Tunes[ji].ID, r.Result.RunID)
			}
		}
	}
}
