package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/bench"
	"github.com/linerate/linerate/internal/explain"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/store"
)

// pingCampaign is a ping-pong campaign of two placements, three runs
// each, made from the captured native TCP run (testdata/latency) with
// its p50 and p99 set per run; bench summarizes it as a campaign does.
// Placement 0,0's runs move more bytes, so a Gbit/s ranking would pick
// it; its p50s are the higher.
func pingCampaign(t *testing.T) (*store.Campaign, *explain.Summary, map[int64]*storedRun, []Run) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "latency", "native-tcp.json"))
	if err != nil {
		t.Fatal(err)
	}
	spec := bench.Spec{Driver: "native", Peer: "lab:x", Repeat: 3,
		Placements: []agent.Pinning{{Client: []int{0}, Server: []int{0}}, {Client: []int{0}, Server: []int{1}}},
		Run:        bench.Params{Test: agent.Test{Probe: &agent.ProbeTest{Kind: agent.ProbePingPong, Size: 64}}}}
	figures := []struct {
		point    int
		p50, p99 float64
		gbps     float64
	}{{0, 30, 60, 0.2}, {1, 22, 40, 0.1}, {0, 28, 50, 0.2}, {1, 20, 45, 0.1}, {0, 35, 70, 0.2}, {1, 21, 42, 0.1}}
	var outs []explain.Outcome
	have := map[int64]*storedRun{}
	var runs []Run
	for i, f := range figures {
		var r result.Result
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		id := int64(100 + i)
		p50, p99 := f.p50, f.p99
		r.RunID, r.End.Latency.RTTUs.P50, r.End.Latency.RTTUs.P99 = id, &p50, &p99
		r.End.SumReceived.BitsPerSecond = f.gbps * 1e9
		sr := &storedRun{Result: r, campaignID: 7}
		have[id] = sr
		outs = append(outs, explain.Outcome{Point: f.point, ID: id, Run: &sr.Result})
		runs = append(runs, Run{Result: r})
	}
	sum := explain.Summarize(spec.Design(), outs, explain.Topology{}, nil)
	sj, _ := json.Marshal(spec)
	return &store.Campaign{ID: 7, Spec: sj}, sum, have, runs
}

// TestPingPongCampaignLoad: the report keeps a ping-pong campaign's
// round trips, picks its best by the lowest median p50, and recomputes
// them from the selected runs when the report holds part of it.
func TestPingPongCampaignLoad(t *testing.T) {
	c, sum, have, _ := pingCampaign(t)
	whole, ok := campaignFrom(c, sum, have)
	if !ok {
		t.Fatal("campaign dropped")
	}
	if b := whole.Best; b == nil || b.Placement != "0,1" || b.MedianP50Us == nil || *b.MedianP50Us != 21 || *b.MedianP99Us != 42 {
		t.Fatalf("best %+v: want placement 0,1, p50 21, p99 42", whole.Best)
	}
	if l := whole.Points[0].Latency; l == nil || *l.MedianP50Us != 30 || *l.MinP50Us != 28 || *l.MaxP50Us != 35 {
		t.Fatalf("point 0,0 latency %+v: want p50 30 (28-35)", l)
	}
	delete(have, 104) // run 4 of placement 0,0 (p50 35) not selected
	part, _ := campaignFrom(c, sum, have)
	l := part.Points[0].Latency
	if l == nil || l.Runs != 2 || *l.MedianP50Us != 29 || *l.MaxP50Us != 30 || *l.MedianP99Us != 55 {
		t.Fatalf("part of point 0,0: %+v, want 2 runs, p50 29 (max 30), p99 55", l)
	}
}

// TestPingPongCampaignReport: a report of a ping-pong campaign alone
// gives its verdict and its points in µs, without Gbit/s.
func TestPingPongCampaignReport(t *testing.T) {
	c, sum, have, runs := pingCampaign(t)
	rc, _ := campaignFrom(c, sum, have)
	ds := Dataset{Runs: runs, Campaigns: []Campaign{rc}}
	m, err := Build(ds)
	if err != nil {
		t.Fatal(err)
	}
	want := "Round trips, not throughput, were measured: the lowest median p50 of a campaign is 21.00 µs (p99 42.00 µs), placement 0,1 of Campaign 7"
	if !strings.HasPrefix(m.Verdict, want) {
		t.Errorf("verdict %q\nwant it to begin %q", m.Verdict, want)
	}
	var pts *table
	for _, s := range m.sections {
		for _, bl := range s.Blocks {
			if bl.Table != nil && bl.Table.ID == "points-c1" {
				pts = bl.Table
			}
			if bl.Chart != nil && strings.HasPrefix(bl.Chart.ID, "dots-c") {
				t.Errorf("section %s has a Gbit/s dots chart for a ping-pong campaign", s.ID)
			}
		}
	}
	if pts == nil {
		t.Fatal("no points table for the campaign")
	}
	if strings.Contains(strings.Join(pts.Head, " "), "Gbit") {
		t.Errorf("ping-pong points table in Gbit/s: %q", pts.Head)
	}
	wantRows := [][]string{
		{"0,0", "3", "30.00", "28.00–35.00", "60.00", "50.00–70.00"},
		{"0,1", "3", "21.00", "20.00–22.00", "42.00", "40.00–45.00"},
	}
	for i, w := range wantRows {
		if got := pts.Rows[i][:len(w)]; strings.Join(got, "|") != strings.Join(w, "|") {
			t.Errorf("row %d %q, want %q", i, got, w)
		}
	}
	if pts.Classes[1] != "best" || pts.Classes[0] != "" {
		t.Errorf("best marks %q: want the second row", pts.Classes)
	}
	if strings.Contains(m.Verdict, "had a lower p50") {
		t.Errorf("a campaign's own run below its median is named: %q", m.Verdict)
	}
	// A sockperf run outside the campaign at p50 12.79 µs: the verdict
	// names it, not only the campaign's 21 µs as "the lowest".
	loose := runs[0]
	loose.Result.RunID, loose.Result.Engine = 999, "sockperf"
	lat := *loose.Result.End.Latency
	p50 := 12.79
	lat.RTTUs.P50 = &p50
	loose.Result.End.Latency = &lat
	ds.Runs = append(ds.Runs, loose)
	m, err = Build(ds)
	if err != nil {
		t.Fatal(err)
	}
	if want := "; run 999 (sockperf engine), outside the campaigns, had a lower p50 of 12.79 µs"; !strings.Contains(m.Verdict, want) {
		t.Errorf("verdict %q lacks %q", m.Verdict, want)
	}
}
