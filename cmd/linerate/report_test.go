package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/store"
)

// reportDB stores three runs of a campaign and one run of its own between
// the hosts of the ryzen-9900x-cx5-x4 test tree (doctor's JSON of it
// stands for both ends), in DIR/results.db, and returns DIR.
func reportDB(t *testing.T) string {
	t.Helper()
	out, _, code := runCLI(t, "doctor", "--root", hostTree("ryzen-9900x-cx5-x4"), "--json")
	if code != exitOK && code != exitFindings {
		t.Fatalf("doctor exited %d", code)
	}
	doc := json.RawMessage(out)
	dir := t.TempDir()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(dir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := &store.Campaign{Label: "baseline", Engine: "native", Peer: "192.168.88.3",
		Spec: json.RawMessage(`{"engine":"native","peer":"192.168.88.3","label":"baseline","repeat":3,"streams":[1],"run":{"streams":1,"duration":10000000000}}`)}
	if err := st.BeginCampaign(ctx, c); err != nil {
		t.Fatal(err)
	}
	for i, gbps := range []float64{64.5, 83.7, 98.9, 97.25} {
		host := result.HostInfo{Hostname: "crow", Iface: "enp1s0f0np0"}
		res := result.Result{Schema: result.Schema, Engine: "native",
			Start: result.Start{Peer: "192.168.88.3", Timestamp: time.Date(2025, 1, 18, 20, i, 0, 0, time.UTC), Streams: 1, DurationS: 10,
				Direction: result.Send, Client: host, Server: host},
			Intervals: []result.Interval{{End: 10, Sum: result.Sum{BitsPerSecond: gbps * 1e9}}},
			End: result.End{Seconds: 10, SumSent: result.Sum{BitsPerSecond: gbps * 1e9},
				SumReceived: result.Received{BitsPerSecond: gbps * 1e9}}}
		r := &store.Run{StartedAt: res.Start.Timestamp, Label: "baseline", Engine: "native", Peer: "192.168.88.3", Streams: 1,
			DurationS: 10, Gbps: gbps, SentGbps: gbps, ClientDoctor: doc, ServerDoctor: doc}
		if i < 3 {
			r.CampaignID, r.Seq = c.ID, i+1
		} else {
			res.Start.Server.TuneJournal = "20250118T201200.000000Z" // made on another machine
			r.Label = "tuned"
		}
		if r.Result, err = json.Marshal(res); err != nil {
			t.Fatal(err)
		}
		if err := st.AddRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	summary := `{"schema":"linerate.campaign/v1","label":"baseline","points":[{"streams":1,"placement":"auto","run_ids":[1,2,3],
		"median_gbps":83.7,"min_gbps":64.5,"max_gbps":98.9,"ci95_gbps":[64.5,98.9],"buckets":[]}],
		"best":{"streams":1,"placement":"auto","median_gbps":83.7},"explanation":["one point"]}`
	if err := st.FinishCampaign(ctx, c.ID, json.RawMessage(summary)); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestReportCommand(t *testing.T) {
	dir := reportDB(t)
	db := filepath.Join(dir, store.FileName)
	t.Setenv("LINERATE_STATE_DIR", t.TempDir()) // nothing of the user's is read

	t.Run("html, newest campaign", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "r.html")
		stdout, stderr, code := runCLI(t, "report", "--db", db, "-o", out)
		if code != exitOK || stderr != "" {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		if want := "report written to " + out + ": 3 runs in 1 campaign, 1 host\n"; stdout != want {
			t.Errorf("stdout %q, want %q", stdout, want)
		}
		page, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"<svg", ">83.70<", "64.50–98.90", "linerate bench 192.168.88.3 -t 10 --repeat 3 --label baseline"} {
			if !strings.Contains(string(page), want) {
				t.Errorf("the report lacks %q", want)
			}
		}
		if strings.Contains(string(page), ">97.25<") {
			t.Error("the run outside the newest campaign is in the report")
		}
		if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".r.html.*")); len(left) > 0 {
			t.Errorf("temporary files left: %v", left)
		}
	})

	t.Run("json", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "r.html")
		stdout, stderr, code := runCLI(t, "report", "--db", db, "-o", out, "--json")
		if code != exitOK {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		var doc struct {
			Schema, Output, Format, Verdict string
			RunIDs                          []int64 `json:"run_ids"`
			Campaigns                       int
		}
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatalf("%v: %s", err, stdout)
		}
		if doc.Schema != "linerate.report/v1" || doc.Output != out || doc.Format != "html" || len(doc.RunIDs) != 3 || doc.Campaigns != 1 ||
			!strings.HasPrefix(doc.Verdict, "Achieved ") {
			t.Errorf("report --json: %+v", doc)
		}
		if _, err := os.Stat(out); err != nil {
			t.Error(err)
		}
	})

	t.Run("markdown, state dir, union", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "r.md")
		stdout, stderr, code := runCLI(t, "report", "--state-dir", dir, "--run", "1", "--label", "tuned", "--title", "crow | test", "-o", out)
		if code != exitOK || stderr != "" {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		if !strings.HasPrefix(stdout, "report written to "+out+": 2 runs in 1 campaign, 1 host, 1 tune journal\n") ||
			!strings.Contains(stdout, "charts written beside it as "+strings.TrimSuffix(out, ".md")+"-*.svg") {
			t.Errorf("stdout %q", stdout)
		}
		md, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"# crow | test", "| 97.25 |", "| 64.50 |", "could not be read here", "20250118T201200.000000Z"} {
			if !strings.Contains(string(md), want) {
				t.Errorf("the Markdown lacks %q", want)
			}
		}
		if svgs, _ := filepath.Glob(strings.TrimSuffix(out, ".md") + "-*.svg"); len(svgs) == 0 {
			t.Error("no chart files beside the Markdown")
		}
	})

	missing := filepath.Join(t.TempDir(), "none.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--db", db}, "-o is required"},
		{[]string{"--db", db, "-o", "r.pdf"}, "-o r.pdf: the extension says the format"},
		{[]string{"--db", missing, "-o", "r.html"}, "no results database at " + missing},
		{[]string{"--db", db, "--run", "99", "-o", "r.html"}, "run 99: not in the results database"},
		{[]string{"--db", db, "--label", "nope", "-o", "r.html"}, `label "nope": no run in`},
		{[]string{"--db", db, "--last", "-2", "-o", "r.html"}, "--last -2"},
		{[]string{"--db", db, "--run", "x", "-o", "r.html"}, "invalid argument"},
		{[]string{"--db", db, "-o", filepath.Join(t.TempDir(), "no", "such", "r.html")}, "writing the report"},
	} {
		stdout, stderr, code := runCLI(t, append([]string{"report"}, tc.args...)...)
		if code != exitError || stdout != "" || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("report created the database it was asked to read")
	}
	for _, f := range []string{"r.html", "r.pdf"} {
		if _, err := os.Stat(f); err == nil {
			os.Remove(f)
			t.Errorf("a failed report left %s behind", f)
		}
	}
}
