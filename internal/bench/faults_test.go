package bench

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/store"
)

// scriptedDriver returns, for run i, a run with one measured interval,
// and fails the runs listed in fail with their error after that interval
// (as the native engine does when the path goes away).
type scriptedDriver struct {
	n    int
	fail map[int]error
}

func (d *scriptedDriver) Name() string { return "native" }
func (d *scriptedDriver) Check() error { return nil }
func (d *scriptedDriver) Run(ctx context.Context, p Params, live func(result.Interval)) (*result.Result, error) {
	d.n++
	iv := result.Interval{Start: 0, End: 1, Sum: result.Sum{Bytes: 1e9, BitsPerSecond: 8e9}}
	r := &result.Result{Schema: result.Schema, Engine: "native",
		Start:     result.Start{Streams: p.Streams, Timestamp: time.Now().Add(time.Duration(d.n) * time.Millisecond)},
		Intervals: []result.Interval{iv}}
	if err := d.fail[d.n]; err != nil {
		r.End.Seconds = 1
		return r, err
	}
	r.End = result.End{Seconds: 2, SumReceived: result.Received{Bytes: 2e9, BitsPerSecond: 8e9}}
	return r, nil
}

// TestCampaignKeepsFailedRun: a run cut short is stored marked failed
// with its interval, its reason is the campaign's error (numbered in a
// campaign, as it is for one run), and the summary counts only the runs
// that finished.
func TestCampaignKeepsFailedRun(t *testing.T) {
	ctx := context.Background()
	gone := errors.New("the path to 198.18.0.2 went away 2.6 s into the run: lab0 was removed")
	for _, tc := range []struct {
		repeat int
		want   string
	}{
		{1, gone.Error()},
		{3, "run 2 of 3 (1 streams, placement auto): " + gone.Error()},
	} {
		st, err := store.Open(ctx, filepath.Join(t.TempDir(), "results.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		failAt := min(tc.repeat, 2)
		c := &Campaign{Spec: Spec{Driver: "native", Peer: "198.18.0.2", Repeat: tc.repeat, Run: Params{Test: agent.Test{Params: engine.Params{Streams: 1, Duration: time.Second}}}},
			Driver: &scriptedDriver{fail: map[int]error{failAt: gone}}, Store: st}
		sum, outs, err := c.Run(ctx)
		var fr *FailedRun
		if err == nil || err.Error() != tc.want || !errors.As(err, &fr) || fr.ID == 0 || fr.Run.Error != gone.Error() {
			t.Fatalf("repeat %d: %v (%+v), want %q", tc.repeat, err, fr, tc.want)
		}
		if len(outs) != failAt-1 {
			t.Errorf("repeat %d: %d outcomes, want %d", tc.repeat, len(outs), failAt-1)
		}
		if sum != nil && len(sum.Points) > 0 && len(sum.Points[0].RunIDs) != failAt-1 {
			t.Errorf("repeat %d: the summary counts %v", tc.repeat, sum.Points[0].RunIDs)
		}
		runs, err := st.Runs(ctx, store.Query{Full: true})
		if err != nil || len(runs) != failAt {
			t.Fatalf("repeat %d: %d runs stored (%v)", tc.repeat, len(runs), err)
		}
		last := runs[len(runs)-1]
		var res result.Result
		if json.Unmarshal(last.Result, &res); last.Failed != gone.Error() || res.Error != gone.Error() || len(res.Intervals) != 1 {
			t.Errorf("repeat %d: stored %q, %q, %d intervals", tc.repeat, last.Failed, res.Error, len(res.Intervals))
		}
	}
}

// TestCampaignSideFiles: with the database unusable, every run of a
// campaign goes to a file of its own beside it, and the campaign's error
// names the database's fault and the files; a run cut short goes there too.
func TestCampaignSideFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "results.db")
	if err := os.WriteFile(db, []byte(strings.Repeat("garbage ", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, oerr := store.Open(ctx, db)
	var dmg *store.DamagedError
	if !errors.As(oerr, &dmg) {
		t.Fatalf("open: %v", oerr)
	}
	c := &Campaign{Spec: Spec{Driver: "native", Peer: "198.18.0.2", Repeat: 3, Run: Params{Test: agent.Test{Params: engine.Params{Streams: 1, Duration: time.Second}}}},
		Driver: &scriptedDriver{}, Unstored: db, UnstoredErr: oerr}
	_, outs, err := c.Run(ctx)
	var ue *UnstoredError
	if !errors.As(err, &ue) || len(ue.Paths) != 3 || len(outs) != 3 || !strings.HasPrefix(err.Error(), oerr.Error()+"; the 3 runs were kept beside it instead, "+ue.Paths[0]+" to "+ue.Paths[2]) {
		t.Fatalf("%v (%d outcomes)", err, len(outs))
	}
	for _, p := range ue.Paths {
		var r result.Result
		if b, err := os.ReadFile(p); err != nil || json.Unmarshal(b, &r) != nil || r.Schema != result.Schema || len(r.Intervals) != 1 || filepath.Dir(p) != dir {
			t.Errorf("%s: %v %+v", p, err, r)
		}
	}

	gone := errors.New("the agent at 198.18.0.2 went away 1.0 s into the run: it closed the control connection (was it stopped or killed?)")
	c = &Campaign{Spec: Spec{Driver: "native", Peer: "198.18.0.2", Repeat: 1, Run: Params{Test: agent.Test{Params: engine.Params{Streams: 1, Duration: time.Second}}}},
		Driver: &scriptedDriver{fail: map[int]error{1: gone}}, Unstored: db, UnstoredErr: oerr}
	_, _, err = c.Run(ctx)
	if !errors.As(err, &ue) || len(ue.Paths) != 1 || err.Error() != gone.Error()+"; "+oerr.Error()+"; the run was kept in "+ue.Paths[0]+" instead" {
		t.Errorf("a failed run beside a damaged database: %v", err)
	}
}

// TestReadEventsKeepsIntervals: the lab client's event stream of a run
// cut short (start, intervals, its partial end, then its error) gives the
// run with its intervals and the client's own line as the error, with no
// prefix of ours.
func TestReadEventsKeepsIntervals(t *testing.T) {
	msg := "the path to 198.18.0.2 went away 2.6 s into the run: lab0 was removed"
	stream := `{"event":"start","data":{"peer":"198.18.0.2","streams":1}}
{"event":"interval","data":{"start":0,"end":0.5,"sum":{"bytes":1000}}}
{"event":"interval","data":{"start":0.5,"end":1,"sum":{"bytes":2000}}}
{"event":"end","data":{"seconds":1,"errors":["` + msg + `"]}}
{"event":"error","data":"` + msg + `"}
`
	res, err := readEvents(strings.NewReader(stream), nil)
	if err == nil || err.Error() != msg || res == nil || len(res.Intervals) != 2 || res.Error != msg || res.End.Seconds != 1 {
		t.Fatalf("%v, %+v", err, res)
	}
	// A client that failed before its run started has nothing to keep.
	res, err = readEvents(strings.NewReader(`{"event":"error","data":"connecting to the agent: refused"}`+"\n"), nil)
	if res != nil || err == nil || err.Error() != "connecting to the agent: refused" {
		t.Errorf("%v, %+v", err, res)
	}
}
