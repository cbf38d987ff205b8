package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/store"
)

// resultDoc is a bench/v1 document whose intervals carry gbps.
func resultDoc(gbps ...float64) json.RawMessage {
	var ivs []string
	for i, g := range gbps {
		ivs = append(ivs, fmt.Sprintf(`{"start":%d,"end":%d,"omitted":false,"sum":{"bits_per_second":%g}}`, i, i+1, g*1e9))
	}
	return json.RawMessage(`{"schema":"linerate.bench/v1","intervals":[` + strings.Join(ivs, ",") + `]}`)
}

// historyDB makes a database: label "base" (runs 1-3 at ~10 Gbit/s),
// label "slow" (runs 4-6 at ~8), and run 7 (label "fast", ~10.5).
func historyDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "results.db")
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	add := func(label string, gbps float64, ivs ...float64) {
		r := &store.Run{StartedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), Label: label, Engine: "iperf3",
			Peer: "lab:demo", Streams: 1, Placement: "0,1", Direction: "send", DurationS: 3, Gbps: gbps, SentGbps: gbps,
			Result: resultDoc(ivs...)}
		if err := db.AddRun(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	add("base", 10.0, 9.9, 10.0, 10.1)
	add("base", 10.2, 10.1, 10.2, 10.3)
	add("base", 9.9, 9.8, 9.9, 10.0)
	add("slow", 8.0, 7.9, 8.0, 8.1)
	add("slow", 8.1, 8.0, 8.1, 8.2)
	add("slow", 7.9, 7.8, 7.9, 8.0)
	add("fast", 10.5, 10.4, 10.5, 10.6)
	return path
}

func TestHistory(t *testing.T) {
	db := historyDB(t)
	out, errOut, code := runCLI(t, "history", "--db", db)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if n := strings.Count(out, "iperf3"); n != 7 || !strings.Contains(out, "RUN") || !strings.Contains(out, "10.50") {
		t.Errorf("history:\n%s", out)
	}
	out, _, code = runCLI(t, "history", "--db", db, "--label", "slow", "--json")
	var doc struct {
		Schema string
		Runs   []struct {
			ID        int64   `json:"id"`
			Gbps      float64 `json:"gbps"`
			Placement string  `json:"placement"`
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 {
		t.Fatalf("history --json: %v %d\n%s", err, code, out)
	}
	if doc.Schema != "linerate.history/v1" || len(doc.Runs) != 3 || doc.Runs[0].ID != 4 || doc.Runs[0].Placement != "0,1" {
		t.Errorf("label slow: %+v", doc)
	}
	out, _, _ = runCLI(t, "history", "--db", db, "--label", "none")
	if !strings.Contains(out, `no runs stored`) {
		t.Errorf("empty label: %q", out)
	}
}

func TestCompare(t *testing.T) {
	db := historyDB(t)
	// Labels: base → slow is 20% slower, but 3 runs against 3 cannot
	// show it: the U test's smallest p-value is 2/C(6,3) = 0.1.
	out, errOut, code := runCLI(t, "compare", "base", "slow", "--db", db)
	if code != 0 || !strings.Contains(out, "change: -20.0%") || !strings.Contains(out, "p = 0.1,") ||
		!strings.Contains(out, "no significant difference") || !strings.Contains(out, "cannot show a difference") {
		t.Errorf("base→slow: exit %d\n%s%s", code, out, errOut)
	}
	// Two single runs: whole runs are the samples, never their intervals.
	out, _, code = runCLI(t, "compare", "1", "7", "--db", db, "--json")
	var doc compareDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 {
		t.Fatalf("1→7: %v exit %d\n%s", err, code, out)
	}
	if doc.Basis != "runs" || len(doc.A.Sample) != 1 || doc.A.Median != 10 || doc.B.Median != 10.5 || doc.Change != 0.05 ||
		doc.PValue != 1 || doc.Significant || doc.Regression || doc.StatsNote == "" {
		t.Errorf("1→7: %+v", doc)
	}
	_, errOut, code = runCLI(t, "compare", "base", "nosuch", "--db", db)
	if code != 2 || !strings.Contains(errOut, `"nosuch" is neither a run ID nor a label`) {
		t.Errorf("unknown ref: exit %d %s", code, errOut)
	}
}

// TestCompareSignificance: with 5 runs a side the U test can show a
// difference. Fully separated samples of 5 and 5 give p = 2/C(10,5) =
// 2/252 = 0.0079; a 5.5% slowdown (median 10.05 to 9.5) beyond a 3% threshold is then a
// regression (exit 1), within a 10% threshold it is not; overlapping
// samples are no significant difference at all.
func TestCompareSignificance(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	add := func(label string, gbps ...float64) {
		for _, g := range gbps {
			r := &store.Run{StartedAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), Label: label, Engine: "native",
				Peer: "lab:demo", Streams: 1, Direction: "send", DurationS: 3, Gbps: g, SentGbps: g, Result: resultDoc(g)}
			if err := db.AddRun(context.Background(), r); err != nil {
				t.Fatal(err)
			}
		}
	}
	add("before", 10.0, 10.1, 9.9, 10.2, 10.05)
	add("after", 9.55, 9.6, 9.4, 9.5, 9.45)
	add("mixed", 9.8, 10.3, 9.95, 10.15, 9.7)
	db.Close()
	out, errOut, code := runCLI(t, "compare", "before", "after", "--db", path, "--threshold", "3", "--json")
	var doc compareDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 1 {
		t.Fatalf("before→after: %v exit %d\n%s%s", err, code, out, errOut)
	}
	if doc.PValue != 0.0079 || !doc.Significant || !doc.Regression || doc.Change != -0.0547 {
		t.Errorf("before→after: %+v", doc)
	}
	out, _, code = runCLI(t, "compare", "before", "after", "--db", path, "--threshold", "10")
	if code != 0 || !strings.Contains(out, "within the 10.0% threshold") {
		t.Errorf("before→after, 10%%: exit %d\n%s", code, out)
	}
	out, _, code = runCLI(t, "compare", "before", "mixed", "--db", path)
	if code != 0 || !strings.Contains(out, "no significant difference") || strings.Contains(out, "note:") {
		t.Errorf("before→mixed: exit %d\n%s", code, out)
	}
}

// TestReadersDoNotCreate: history, compare and report on a database that
// does not exist say so and exit 2, and leave no database behind.
func TestReadersDoNotCreate(t *testing.T) {
	db := filepath.Join(t.TempDir(), "nope", "results.db")
	for _, args := range [][]string{
		{"history", "--db", db},
		{"compare", "1", "2", "--db", db},
		{"report", "--db", db, "-o", filepath.Join(t.TempDir(), "r.html")},
	} {
		_, stderr, code := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, "no results database at "+db) {
			t.Errorf("%v: exit %d, %q", args, code, stderr)
		}
		if _, err := os.Stat(filepath.Dir(db)); err == nil {
			t.Fatalf("%v created %s", args, filepath.Dir(db))
		}
	}
}
