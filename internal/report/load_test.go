package report

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/bench"
	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/explain"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/store"
	"github.com/linerate/linerate/internal/toolserver"
	"github.com/linerate/linerate/internal/tune"
)

// The tests below store a recorded dataset the way `linerate bench` and
// `linerate tune --apply` record them — runs with both hosts' doctor
// reports, campaigns with their linerate.campaign/v1 summaries, a tune
// journal file — and check what Load reads back. The documents are
// written with package bench's own types, so that a change to the
// contract shows here.

// journalIDs maps the fixtures' tune IDs to journal IDs of the form tune
// writes.
var journalIDs = map[string]string{"vulture-1": "20250118T201200.000000Z"}

// stored is a fixture dataset written to a results database and a tune
// journal directory.
type stored struct {
	st      *store.Store
	tuneDir string
}

// storeDataset writes ds: each campaign's runs (by ID) in a campaign of
// the store, then the runs outside campaigns, so that the store numbers
// the runs as the fixture does. Hosts[0] is every run's client, Hosts[1]
// its server.
func storeDataset(tb testing.TB, ds Dataset) stored {
	tb.Helper()
	ctx := context.Background()
	dir := tb.TempDir()
	st, err := store.Open(ctx, filepath.Join(dir, "results.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	s := stored{st: st, tuneDir: filepath.Join(dir, "tune")}
	if err := os.Mkdir(s.tuneDir, 0o700); err != nil {
		tb.Fatal(err)
	}
	docs := make([]json.RawMessage, len(ds.Hosts))
	for i := range ds.Hosts {
		if docs[i], err = json.Marshal(ds.Hosts[i]); err != nil {
			tb.Fatal(err)
		}
	}
	byID := map[int64]*Run{}
	for i := range ds.Runs {
		byID[ds.Runs[i].Result.RunID] = &ds.Runs[i]
	}
	var tools = map[string]*result.Tool{}
	for _, t := range ds.Tools {
		tools[t.Name] = &result.Tool{Name: t.Name, Version: t.Version}
	}
	add := func(r *Run, campaign int64, seq int) {
		res := r.Result
		res.RunID = 0 // as bench stores it
		if r.TuneID != "" {
			res.Start.Server.TuneJournal = journalIDs[r.TuneID]
		}
		br := res
		br.Label, br.Tool = r.Label, tools[res.Engine]
		doc, err := json.Marshal(&br)
		if err != nil {
			tb.Fatal(err)
		}
		sr := &store.Run{CampaignID: campaign, Seq: seq, StartedAt: res.Start.Timestamp, Label: r.Label, Engine: res.Engine,
			Peer: res.Start.Peer, Streams: res.Start.Streams, Direction: string(res.Start.Direction), DurationS: res.End.Seconds,
			Gbps: br.Gbps(), SentGbps: res.End.SumSent.BitsPerSecond / 1e9, Result: doc}
		if len(docs) > 1 {
			sr.ClientDoctor, sr.ServerDoctor = docs[0], docs[1]
		}
		if err := st.AddRun(ctx, sr); err != nil {
			tb.Fatal(err)
		}
		if sr.ID != r.Result.RunID {
			tb.Fatalf("the store numbered run %d as %d", r.Result.RunID, sr.ID)
		}
		delete(byID, r.Result.RunID)
	}
	for _, c := range ds.Campaigns {
		cg := &store.Campaign{Label: c.Label, Engine: byID[c.Points[0].RunIDs[0]].Result.Engine, Peer: "192.168.88.3", Spec: specOf(tb, c, byID)}
		if err := st.BeginCampaign(ctx, cg); err != nil {
			tb.Fatal(err)
		}
		var ids []int64
		for _, p := range c.Points {
			ids = append(ids, p.RunIDs...)
		}
		slices.Sort(ids)
		for i, id := range ids {
			add(byID[id], cg.ID, i+1)
		}
		if err := st.FinishCampaign(ctx, cg.ID, summaryOf(tb, c)); err != nil {
			tb.Fatal(err)
		}
	}
	var loose []int64
	for id := range byID {
		loose = append(loose, id)
	}
	slices.Sort(loose)
	for _, id := range loose {
		add(byID[id], 0, 0)
	}
	for _, j := range ds.Tunes {
		writeJournal(tb, s.tuneDir, j)
	}
	return s
}

// specOf is the campaign as bench would have been asked for it.
func specOf(tb testing.TB, c Campaign, runs map[int64]*Run) json.RawMessage {
	first := runs[c.Points[0].RunIDs[0]].Result
	spec := bench.Spec{Driver: first.Engine, Peer: first.Start.Peer, Label: c.Label, Repeat: len(c.Points[0].RunIDs),
		Run: bench.Params{Test: agent.Test{Params: engine.Params{Streams: first.Start.Streams, Duration: time.Duration(first.Start.DurationS) * time.Second}}}}
	for _, p := range c.Points {
		spec.Streams = append(spec.Streams, p.Streams)
	}
	if first.Start.Placement.Source == "user" {
		spec.Run.Pinning = agent.Pinning{Client: first.Start.Placement.Client, Server: first.Start.Placement.Server}
	}
	b, err := json.Marshal(spec)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// summaryOf is the campaign's linerate.campaign/v1 document as bench
// stores it: null intervals below 6 runs, buckets with the receiver's
// softirq CPUs, the best point's command.
func summaryOf(tb testing.TB, c Campaign) json.RawMessage {
	s := c.Summary
	s.Schema, s.CIMethod, s.BucketRule = explain.CampaignSchema, explain.CIMethod, explain.BucketRule
	s.Points = nil
	for _, p := range c.Points {
		p.Buckets = slices.Clone(p.Buckets)
		if p.Buckets == nil {
			p.Buckets = []Bucket{}
		}
		for i := range p.Buckets {
			p.Buckets[i].Name = explain.BucketName(i, len(p.Buckets))
		}
		s.Points = append(s.Points, p)
	}
	if c.Best != nil {
		s.Best = &explain.Best{Streams: c.Best.Streams, Placement: c.Best.Placement, MedianGbps: c.Best.MedianGbps, Command: c.Command}
	}
	b, err := json.Marshal(s)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// writeJournal writes a tune journal as `linerate tune --apply` does: the
// header, each step journaled with its prior value and then applied, and
// the "applied" event.
func writeJournal(tb testing.TB, dir string, j TuneJournal) {
	tb.Helper()
	id := journalIDs[j.ID]
	var buf bytes.Buffer
	line := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		buf.Write(append(b, '\n'))
	}
	line(map[string]any{"schema": tune.JournalSchema, "id": id, "time": j.Applied, "host": j.Host, "root": "/", "profile": j.Profile, "planned": len(j.Changes)})
	for i, c := range j.Changes {
		ch := tune.Change{Step: i + 1, Kind: tune.Kind(c.Kind), Target: c.Target, Before: c.Before, After: c.After,
			Finding: c.Finding, Source: "finding " + c.Finding, Command: c.Command, Path: journalPath(c)}
		prior := strings.ReplaceAll(c.Before, " ", "\t") + "\n" // as /proc/sys holds tcp_rmem
		line(map[string]any{"step": i + 1, "phase": tune.PhaseJournaled, "change": ch, "prior": prior, "want": c.After + "\n"})
		line(map[string]any{"step": i + 1, "phase": tune.PhaseApplied, "now": c.After + "\n"})
	}
	line(map[string]any{"event": "applied"})
	if err := os.WriteFile(filepath.Join(dir, id+".jsonl"), buf.Bytes(), 0o600); err != nil {
		tb.Fatal(err)
	}
}

// journalPath is the file a change writes, as tune journals it (a journal
// naming none is refused).
func journalPath(c TuneChange) string {
	switch c.Kind {
	case "sysctl":
		return "/proc/sys/" + strings.ReplaceAll(c.Target, ".", "/")
	case "governor":
		return "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"
	case "irq":
		return "/proc/irq/" + strings.TrimPrefix(c.Target, "irq ") + "/smp_affinity_list"
	case "irqbalance":
		return c.Target
	}
	return ""
}

// rawDoc decodes a stored JSON document untyped: the numbers the report
// is checked against come from the stored JSON, not from the Go types the
// loader reads it into.
func rawDoc(t testing.TB, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestReportLoadNumbersMatchDatabase stores the home lab's runs, campaigns,
// hosts and tune, loads them back, writes the report, and checks every
// number taken from the database — each run's Gbit/s, each campaign
// point's median, range and interval, the NIC and PCIe figures and the
// line rate of both doctor reports, the verdict, the tune's values before
// and after — against the stored JSON it came from (issue 7).
func TestReportLoadNumbersMatchDatabase(t *testing.T) {
	ctx := context.Background()
	s := storeDataset(t, loadFixture(t, "seed000"))
	ds, err := Load(ctx, s.st, LoadOptions{Commands: bench.StoredCommands{}, Selection: Selection{Labels: []string{"baseline", "pinned", "sweep"}}, TuneDir: s.tuneDir, Linerate: "v9.9.9"})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.st.Runs(ctx, store.Query{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	// The stored documents, as untyped JSON in the shape the table checks read.
	raw := map[string]any{"hosts": []any{rawDoc(t, rows[0].ClientDoctor), rawDoc(t, rows[0].ServerDoctor)}}
	var campaigns []any
	for id := int64(1); id <= 3; id++ {
		c, err := s.st.Campaign(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		campaigns = append(campaigns, rawDoc(t, c.Summary))
	}
	raw["campaigns"] = campaigns

	page := renderHTML(t, *ds)
	tabs := parseTables(t, page)
	checkDoctorTables(t, raw, tabs)
	checkCampaigns(t, raw, tabs)

	runs := tabs["runs"]
	if len(runs.rows) != len(rows) {
		t.Fatalf("runs table has %d rows, the database %d runs", len(runs.rows), len(rows))
	}
	gcol, idcol, tcol := runs.col(t, "Gbit/s"), runs.col(t, "Run"), runs.col(t, "Tune")
	for i, row := range rows {
		res := rawDoc(t, row.Result)
		bps := at(t, res, "end", "sum_received", "bits_per_second").(float64)
		if got := runs.rows[i]; got[idcol] != strconv.FormatInt(row.ID, 10) || got[gcol] != f2(bps/1e9) {
			t.Errorf("runs row %d: run %s at %s Gbit/s, database run %d at %s", i, got[idcol], got[gcol], row.ID, f2(bps/1e9))
		}
		want := "—"
		if j, _ := at(t, res, "start", "server", "tune_journal").(string); j != "" {
			want = j
		}
		if runs.rows[i][tcol] != want {
			t.Errorf("run %d: tune %s, database %s", row.ID, runs.rows[i][tcol], want)
		}
	}

	// The verdict: the best stored median of the stored ceiling.
	best := maxOf(t, raw, "campaigns", "points", "median_gbps")
	ceiling := f2(at(t, raw, "hosts", 0, "nics", 0, "limits", "tcp_goodput_gbps"))
	m, err := Build(*ds)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Achieved " + f2(best) + " of " + ceiling + " Gbit/s"; !strings.HasPrefix(m.Verdict, want) {
		t.Errorf("verdict %q, want it to start %q", m.Verdict, want)
	}

	// The tune: every step's value before (as read when applied) and after.
	jb, err := os.ReadFile(filepath.Join(s.tuneDir, journalIDs["vulture-1"]+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	changes := tabs["tune-1-changes"]
	step := 0
	for line := range strings.Lines(string(jb)) {
		rec := rawDoc(t, []byte(line)).(map[string]any)
		if rec["phase"] != "journaled" {
			continue
		}
		row := changes.rows[step]
		step++
		before := strings.Join(strings.Fields(rec["prior"].(string)), " ")
		after := at(t, rec, "change", "after").(string)
		if row[changes.col(t, "Target")] != at(t, rec, "change", "target") || row[changes.col(t, "Before")] != orDash(before) || row[changes.col(t, "After")] != orDash(after) {
			t.Errorf("tune step %d: %q, journal %v %q → %q", step, row, at(t, rec, "change", "target"), before, after)
		}
	}
	if step == 0 || step != len(changes.rows) {
		t.Errorf("tune table has %d rows, the journal %d steps", len(changes.rows), step)
	}

	// Tools: linerate's version and the tool the runs recorded.
	tools := tabs["tools"]
	for _, want := range [][]string{{"linerate", "v9.9.9"}, {"iperf3", "3.16 (cJSON 1.7.15)"}} {
		if !slices.ContainsFunc(tools.rows, func(r []string) bool { return slices.Equal(r, want) }) {
			t.Errorf("tools table %q lacks %q", tools.rows, want)
		}
	}
	// The sweep's command is rebuilt from the stored spec.
	if want := "linerate bench 192.168.88.3 -t 10 --sweep-streams 1,2,4,8 --repeat 3 --label sweep"; !bytes.Contains(page, []byte(want)) {
		t.Errorf("the report does not give the sweep's command %q", want)
	}

	// Markdown carries the same numbers, and its charts beside it.
	out := filepath.Join(t.TempDir(), "r.md")
	if err := WriteMarkdown(out, m); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for ci, c := range campaigns {
		for pi, p := range list(t, c, "points") {
			cell := "| " + f2(at(t, p, "median_gbps")) + " |"
			if !bytes.Contains(md, []byte(cell)) {
				t.Errorf("Markdown lacks campaign %d point %d's median %s", ci+1, pi+1, cell)
			}
		}
	}
	for _, h := range list(t, raw, "hosts") {
		for _, n := range list(t, h, "nics") {
			for _, k := range []string{"raw_gbps", "effective_gbps"} {
				if v := at(t, n, "pcie", k); v != nil && !bytes.Contains(md, []byte("| "+f2(v)+" |")) {
					t.Errorf("Markdown lacks PCIe %s %s", k, f2(v))
				}
			}
		}
	}
	svgs, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "r-*.svg"))
	if len(svgs) == 0 {
		t.Error("Markdown wrote no chart files")
	}
}

// TestReportLoadSelection checks which runs each selection reads, and
// that a campaign is reduced to the runs selected.
func TestReportLoadSelection(t *testing.T) {
	ctx := context.Background()
	s := storeDataset(t, loadFixture(t, "seed000"))
	ids := func(ds *Dataset) []int64 {
		var out []int64
		for _, r := range ds.Runs {
			out = append(out, r.Result.RunID)
		}
		return out
	}
	span := func(a, b int64) []int64 {
		var out []int64
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		sel       Selection
		want      []int64
		campaigns []string
	}{
		{"default: the newest campaign", Selection{}, span(15, 26), []string{"sweep"}},
		{"last", Selection{Last: 2}, []int64{25, 26}, []string{"sweep"}},
		{"union", Selection{RunIDs: []int64{3, 12}, Labels: []string{"pinned"}}, append([]int64{3}, span(10, 14)...), []string{"baseline", "pinned"}},
		{"overlap", Selection{RunIDs: []int64{26}, Last: 1}, []int64{26}, []string{"sweep"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds, err := Load(ctx, s.st, LoadOptions{Commands: bench.StoredCommands{}, Selection: tc.sel, TuneDir: s.tuneDir})
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(ds); !slices.Equal(got, tc.want) {
				t.Errorf("runs %v, want %v", got, tc.want)
			}
			var labels []string
			for _, c := range ds.Campaigns {
				labels = append(labels, c.Label)
			}
			if !slices.Equal(labels, tc.campaigns) {
				t.Errorf("campaigns %v, want %v", labels, tc.campaigns)
			}
			if _, err := Build(*ds); err != nil {
				t.Errorf("Build: %v", err)
			}
		})
	}

	// Run 3 alone of the baseline: its point is that run, with no interval
	// and a note that says so.
	ds, err := Load(ctx, s.st, LoadOptions{Commands: bench.StoredCommands{}, Selection: Selection{RunIDs: []int64{3}}})
	if err != nil {
		t.Fatal(err)
	}
	c := ds.Campaigns[0]
	p := c.Points[0]
	g := round3(runGbps(&ds.Runs[0].Result))
	if !slices.Equal(p.RunIDs, []int64{3}) || p.MedianGbps != g || p.MinGbps != g || p.MaxGbps != g || p.CI95Gbps != nil {
		t.Errorf("reduced point %+v, want run 3 at %v", p, g)
	}
	if len(p.Buckets) != 1 || p.Buckets[0].Name != "high" || !slices.Equal(p.Buckets[0].RunIDs, []int64{3}) {
		t.Errorf("reduced buckets %+v, want run 3 in the high bucket", p.Buckets)
	}
	if !strings.HasPrefix(c.Explanation[0], "This report holds run 3 of the campaign's 9 runs") {
		t.Errorf("no note on the reduced campaign: %q", c.Explanation[0])
	}
}

// TestReportLoadErrors checks the one-line errors of a selection that
// finds nothing.
func TestReportLoadErrors(t *testing.T) {
	ctx := context.Background()
	empty, err := store.Open(ctx, filepath.Join(t.TempDir(), "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	s := storeDataset(t, loadFixture(t, "seed000"))
	for _, tc := range []struct {
		st   *store.Store
		sel  Selection
		want string
	}{
		{empty, Selection{}, "no runs stored in"},
		{empty, Selection{Last: 5}, "no runs stored in"},
		{s.st, Selection{RunIDs: []int64{3, 99}}, "run 99: not in the results database"},
		{s.st, Selection{Labels: []string{"pinned", "nope"}}, `label "nope": no run in`},
		{s.st, Selection{Last: -1}, "--last -1"},
	} {
		_, err := Load(ctx, tc.st, LoadOptions{Commands: bench.StoredCommands{}, Selection: tc.sel})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: error %v, want one line with %q", tc.sel, err, tc.want)
		}
	}
}

// TestReportLoadMissingJournal: a run made under a journal this machine
// does not have (another machine's) names it in the tuning section.
func TestReportLoadMissingJournal(t *testing.T) {
	ctx := context.Background()
	s := storeDataset(t, loadFixture(t, "seed000"))
	for _, dir := range []string{t.TempDir(), filepath.Join(t.TempDir(), "absent"), ""} {
		ds, err := Load(ctx, s.st, LoadOptions{Commands: bench.StoredCommands{}, Selection: Selection{Labels: []string{"baseline", "pinned"}}, TuneDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		id := journalIDs["vulture-1"]
		if len(ds.Tunes) != 1 || ds.Tunes[0].ID != id || ds.Tunes[0].Host != "vulture" || ds.Tunes[0].NotFound == "" {
			t.Fatalf("tunes %+v, want %s on vulture, not found", ds.Tunes, id)
		}
		page := renderHTML(t, *ds)
		if !bytes.Contains(page, []byte("The journal of tune "+id+" could not be read here")) {
			t.Errorf("tuning section does not name the missing journal (dir %q)", dir)
		}
		if !bytes.Contains(page, []byte("Bench before and after tune "+id)) {
			t.Errorf("no before/after comparison for the missing journal (dir %q)", dir)
		}
	}
}

// TestReportLoadPerftestAndHosts stores perftest runs and lab-style runs
// (both ends on one machine, so one hostname) and checks where they go.
func TestReportLoadPerftestAndHosts(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	seed := loadFixture(t, "seed002")
	hostDoc, err := json.Marshal(seed.Hosts[0])
	if err != nil {
		t.Fatal(err)
	}
	// A perftest run as the perftest driver records it.
	avg, peak, rate := 55.86, 55.87, 0.00666
	res := result.Result{Schema: result.Schema, Engine: "perftest", Start: result.Start{Peer: "10.0.0.1", Streams: 1,
		Client: result.HostInfo{Hostname: "mark1amd"}, Server: result.HostInfo{Hostname: "mark1nvidia"}},
		End: result.End{SumReceived: result.Received{BitsPerSecond: avg * 1e9}}}
	br := res
	br.Tool, br.Perftest = &result.Tool{Name: "perftest", Client: []string{"taskset", "-c", "6", "ib_write_bw", "--size=1048576", "-d", "rocep5s0", "10.0.0.1"},
		Server: []string{"ib_write_bw", "--size=1048576", "-d", "rocep3s0"}},
		&result.Perftest{Test: "RDMA_Write BW Test", Device: "rocep5s0", MsgBytes: 1 << 20, Iterations: 5000,
			BWPeakGbps: &peak, BWAverageGbps: &avg, MsgRateMpps: &rate}
	doc, err := json.Marshal(&br)
	if err != nil {
		t.Fatal(err)
	}
	params, _ := json.Marshal(bench.Params{Perftest: toolserver.PerftestParams{Test: "ib_write_bw"}})
	warn := " Conflicting CPU frequency values detected: 5529.980000 != 600.000000. CPU Frequency is not max.\n"
	if err := st.AddRun(ctx, &store.Run{Engine: "perftest", Peer: "10.0.0.1", Streams: 1, Gbps: avg, Params: params, Result: doc,
		ClientDoctor: hostDoc, Raw: warn + "#bytes #iterations ...\n" + warn}); err != nil {
		t.Fatal(err)
	}
	// Two lab runs: both ends are "lab" with different reports; the
	// second run's client report repeats the first's and its server's
	// differs (as after a tuning): still one report per end.
	labRep := func(rmem float64) json.RawMessage {
		r := doctor.Report{Schema: "linerate.doctor/v1", Sysctl: map[string]any{"net.core.rmem_max": rmem}}
		r.Host.Hostname = "lab"
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for i := range 2 {
		server := labRep(65536)
		if i == 1 {
			server = labRep(4194304)
		}
		lr := result.Result{Schema: result.Schema, Engine: "native", Start: result.Start{Peer: "198.18.0.2", Streams: 1,
			Client: result.HostInfo{Hostname: "lab", Iface: "lab0"}, Server: result.HostInfo{Hostname: "lab", Iface: "lab0"}},
			End: result.End{Seconds: 1, SumReceived: result.Received{BitsPerSecond: 9e9}}}
		doc, _ := json.Marshal(lr)
		if err := st.AddRun(ctx, &store.Run{Engine: "native", Peer: "198.18.0.2", Streams: 1, Gbps: 9, Result: doc,
			ClientDoctor: labRep(212992), ServerDoctor: server}); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := Load(ctx, st, LoadOptions{Commands: bench.StoredCommands{}, Selection: Selection{RunIDs: []int64{1}, Last: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Runs) != 2 || len(ds.Perftest) != 1 {
		t.Fatalf("%d runs and %d perftest results, want 2 and 1", len(ds.Runs), len(ds.Perftest))
	}
	p := ds.Perftest[0]
	want := PerftestResult{Test: "ib_write_bw", Host: "mark1amd", Device: "rocep5s0", SizeBytes: 1 << 20, Iterations: 5000,
		PeakGbps: peak, AverageGbps: avg, MsgRateMpps: rate,
		Command:  "taskset -c 6 ib_write_bw --size=1048576 -d rocep5s0 10.0.0.1",
		Server:   "ib_write_bw --size=1048576 -d rocep3s0",
		Warnings: []string{strings.TrimSpace(warn)}}
	if fmt.Sprint(p) != fmt.Sprint(want) {
		t.Errorf("perftest result\n%+v, want\n%+v", p, want)
	}
	if !slices.Equal(ds.Tools, []Tool{{Name: "perftest"}}) {
		t.Errorf("tools %+v, want perftest", ds.Tools)
	}
	var hosts []string
	for _, h := range ds.Hosts {
		hosts = append(hosts, fmt.Sprint(h.Host.Hostname, " ", h.Sysctl["net.core.rmem_max"]))
	}
	// Client reports first (the perftest client's, then the lab
	// client's), then the lab server's; the second lab run's copies are
	// not repeated.
	seedHost := seed.Hosts[0].Host.Hostname
	if len(hosts) != 3 || !strings.HasPrefix(hosts[0], seedHost+" ") || hosts[1] != "lab 212992" || hosts[2] != "lab 65536" {
		t.Errorf("hosts %q, want %s, lab 212992, lab 65536", hosts, seedHost)
	}
	page := renderHTML(t, *ds)
	if !regexp.MustCompile(`<td[^>]*>55\.86</td>`).Match(page) {
		t.Error("the perftest average 55.86 is not in the report")
	}
}

var benchDir = flag.String("bench-db", "", "BenchmarkReport1000Stored: store the 1,000 runs in DIR/results.db and DIR/tune, and keep them (to time `linerate report --state-dir DIR` on them)")

// BenchmarkReport1000Stored is BenchmarkReport1000 from the database: the
// 1,000 runs stored with their doctor reports, campaign summary and tune
// journal, then per iteration opened, loaded, built and written as an
// HTML file, as `linerate report -o FILE.html` does. Target (issue 7):
// under 2 s and 5 MB.
func BenchmarkReport1000Stored(b *testing.B) {
	s := storeDataset(b, thousandRuns(b))
	if *benchDir != "" {
		keepBenchDB(b, s, *benchDir)
	}
	out := filepath.Join(b.TempDir(), "r.html")
	ctx := context.Background()
	var size int64
	b.ReportAllocs()
	for b.Loop() {
		st, err := store.Open(ctx, s.st.Path())
		if err != nil {
			b.Fatal(err)
		}
		ds, err := Load(ctx, st, LoadOptions{Commands: bench.StoredCommands{}, Selection: Selection{Last: 1000}, TuneDir: s.tuneDir})
		st.Close()
		if err != nil {
			b.Fatal(err)
		}
		if len(ds.Runs) != 1000 || len(ds.Tunes) != 1 || ds.Tunes[0].NotFound != "" {
			b.Fatalf("loaded %d runs and tunes %+v", len(ds.Runs), ds.Tunes)
		}
		m, err := Build(*ds)
		if err != nil {
			b.Fatal(err)
		}
		f, err := os.Create(out)
		if err != nil {
			b.Fatal(err)
		}
		if err := WriteHTML(f, m); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		fi, err := os.Stat(out)
		if err != nil {
			b.Fatal(err)
		}
		size = fi.Size()
	}
	b.ReportMetric(float64(size), "html-bytes")
}

// keepBenchDB copies the stored database and journals to dir.
func keepBenchDB(b *testing.B, s stored, dir string) {
	if err := os.MkdirAll(filepath.Join(dir, "tune"), 0o700); err != nil {
		b.Fatal(err)
	}
	if err := s.st.Close(); err != nil { // checkpoints the WAL into the file
		b.Fatal(err)
	}
	for _, f := range []string{filepath.Join(filepath.Dir(s.st.Path()), store.FileName), filepath.Join(s.tuneDir, journalIDs["vulture-1"]+".jsonl")} {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		rel, _ := filepath.Rel(filepath.Dir(s.st.Path()), f)
		if err := os.WriteFile(filepath.Join(dir, rel), data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
}
