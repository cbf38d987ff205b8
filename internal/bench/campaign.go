package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/explain"
	"github.com/linerate/linerate/internal/gap"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/store"
)

// Campaign runs a Spec's runs through a Driver, stores each run the moment
// it ends (so a killed campaign keeps every finished run), and summarises
// them.
type Campaign struct {
	Spec   Spec
	Driver Driver
	// Store keeps the runs; nil keeps nothing.
	Store *store.Store
	// Reporter sees the campaign as it goes; nil is silent. (A run's
	// Progress, in agent.Config, is the callback of its events.)
	Reporter Reporter
	// ClientDoctor and ServerDoctor are both hosts' doctor reports,
	// stored with every run; the client's names CPUs in explanations and
	// gives the line-rate ceiling of Iface.
	ClientDoctor, ServerDoctor json.RawMessage
	Iface                      string
	// ClientTune and ServerTune name the tune journals in effect on each
	// end; a run whose ends did not say carries them.
	ClientTune, ServerTune string
	// Unstored, when set, is the database that could not be opened
	// (damaged), and UnstoredErr why: every run is written beside it
	// (WriteSideFile) instead.
	Unstored    string
	UnstoredErr error
	// SideFiles lists the runs written beside the database, in order.
	SideFiles []string
	storeErr  error // the database's first refusal; later runs go beside it at once
}

// paramChecker is a driver that can tell, before a campaign starts,
// which settings it cannot run.
type paramChecker interface {
	CheckParams(Params) error
}

// Reporter shows a campaign as it runs.
type Reporter interface {
	// RunStarting is called before run i (0-based) of n, with the
	// estimated time left for the whole campaign.
	RunStarting(i, n int, p Point, eta time.Duration)
	// Interval is called with each interval of the run in progress.
	Interval(i int, iv result.Interval)
	// RunDone is called after run i with its stored ID (0 unstored).
	RunDone(i, n int, id int64, r *result.Result)
	// Finish is called once the campaign ends, whatever the outcome.
	Finish()
}

// Run runs the campaign. On an error it returns what finished so far
// (stored already) with the summary of those runs, and the error.
func (c *Campaign) Run(ctx context.Context) (*explain.Summary, []explain.Outcome, error) {
	if err := c.Driver.Check(); err != nil {
		return nil, nil, err
	}
	// Every point must be one the driver can run before anything is
	// recorded: a refusal at run 5 would leave a campaign half made.
	if pc, ok := c.Driver.(paramChecker); ok {
		for _, p := range c.Spec.Points() {
			if err := pc.CheckParams(c.Spec.params(p)); err != nil {
				return nil, nil, fmt.Errorf("%d streams, placement %s: %w", p.Streams, p.Pinning, err)
			}
		}
	}
	campaignID, err := c.begin(ctx)
	var dmg *store.DamagedError
	switch {
	case errors.As(err, &dmg):
		c.storeErr = err // the runs go beside the database
	case err != nil:
		return nil, nil, err
	}
	points, order := c.Spec.Points(), c.Spec.Order()
	var outs []explain.Outcome
	started := time.Now()
	defer c.finishProgress()
	for i, pi := range order {
		if c.Reporter != nil {
			c.Reporter.RunStarting(i, len(order), points[pi], c.eta(i, len(order), started))
		}
		out, err := c.one(ctx, campaignID, i+1, pi, points[pi])
		if err != nil {
			if c.Spec.IsCampaign() { // one run needs no number
				err = fmt.Errorf("run %d of %d (%d streams, placement %s): %w",
					i+1, len(order), points[pi].Streams, points[pi].Pinning, err)
			}
			if u := c.unstored(); u != nil {
				err = fmt.Errorf("%w; %w", err, u)
			}
			return c.summary(campaignID, outs), outs, err
		}
		outs = append(outs, out)
		if c.Reporter != nil {
			c.Reporter.RunDone(i, len(order), out.ID, out.Run)
		}
	}
	s := c.summary(campaignID, outs)
	if u := c.unstored(); u != nil {
		return s, outs, u
	}
	if c.Store != nil && campaignID != 0 {
		b, err := json.Marshal(s)
		if err != nil {
			return s, outs, err
		}
		if err := c.Store.FinishCampaign(ctx, campaignID, b); err != nil {
			return s, outs, err
		}
	}
	return s, outs, nil
}

func (c *Campaign) finishProgress() {
	if c.Reporter != nil {
		c.Reporter.Finish()
	}
}

// begin records the campaign (when more than one run is asked).
func (c *Campaign) begin(ctx context.Context) (int64, error) {
	if c.Store == nil || !c.Spec.IsCampaign() {
		return 0, nil
	}
	spec, err := json.Marshal(c.Spec)
	if err != nil {
		return 0, err
	}
	cg := &store.Campaign{Label: c.Spec.Label, Engine: c.Driver.Name(), Peer: c.Spec.Peer, Spec: spec}
	if err := c.Store.BeginCampaign(ctx, cg); err != nil {
		return 0, err
	}
	return cg.ID, nil
}

// runSetup is the time a run takes beyond its duration and warm-up before
// any run has been timed: lab runs of -t 2 followed each other 2.0 s
// apart, so the 2 s once assumed here doubled the first ETA.
const runSetup = 250 * time.Millisecond

// eta estimates the campaign's time left: runs left × the mean time of
// the runs done, or of the planned duration and warm-up plus runSetup
// before any.
func (c *Campaign) eta(done, total int, started time.Time) time.Duration {
	per := c.Spec.params(Point{Streams: 1}).Duration + c.Spec.Run.Omit + runSetup
	if done > 0 {
		per = time.Since(started) / time.Duration(done)
	}
	return per * time.Duration(total-done)
}

// one makes and stores one run.
func (c *Campaign) one(ctx context.Context, campaignID int64, seq, pi int, p Point) (explain.Outcome, error) {
	params := c.Spec.params(p)
	var live func(result.Interval)
	if c.Reporter != nil {
		live = func(iv result.Interval) { c.Reporter.Interval(seq-1, iv) }
	}
	r, runErr := c.Driver.Run(ctx, params, live)
	if r == nil {
		return explain.Outcome{}, runErr
	}
	if runErr != nil && r.Error == "" {
		r.Error = runErr.Error()
	}
	r.Label = c.Spec.Label
	for i := range r.Intervals {
		// An interval without samples of an end says so with an empty
		// object, as the contract shapes it, not null.
		if cpu := &r.Intervals[i].CPU; cpu.Client == nil || cpu.Server == nil {
			cpu.Client, cpu.Server = orEmpty(cpu.Client), orEmpty(cpu.Server)
		}
	}
	if r.Start.Client.TuneJournal == "" {
		r.Start.Client.TuneJournal = c.ClientTune
	}
	if r.Start.Server.TuneJournal == "" {
		r.Start.Server.TuneJournal = c.ServerTune
	}
	if r.Start.Peer == "" {
		r.Start.Peer = c.Spec.Peer
	}
	explain.CompactTelemetry(r, explain.TopologyFromDoctor(c.ClientDoctor), explain.TopologyFromDoctor(c.ServerDoctor))
	r.Fairness = explain.FairnessOf(r)
	r.End.Gap = gap.Of(r, c.doctors())
	out := explain.Outcome{Point: pi, Run: r}
	if err := c.keep(ctx, &out, params, campaignID, seq); err != nil {
		return out, err
	}
	if runErr != nil {
		return out, &FailedRun{Outcome: out, Err: runErr}
	}
	return out, nil
}

// FailedRun is the error of a run that started and then failed (its path
// or its peer went away): what it measured until then is kept, stored
// marked failed when the campaign stores runs.
type FailedRun struct {
	explain.Outcome
	Err error
}

func (e *FailedRun) Error() string { return e.Err.Error() }
func (e *FailedRun) Unwrap() error { return e.Err }

// keep stores a run, or, when the database cannot take it, writes it
// beside the database (WriteSideFile) so that no finished measurement is
// lost; the campaign goes on, and ends with an UnstoredError naming the
// files.
func (c *Campaign) keep(ctx context.Context, out *explain.Outcome, params Params, campaignID int64, seq int) error {
	if c.Store == nil && c.Unstored == "" {
		return nil
	}
	r := out.Run
	sr, err := storeRun(r, params, c.Spec, c.ClientDoctor, c.ServerDoctor)
	if err != nil {
		return err
	}
	sr.CampaignID, sr.Seq = campaignID, seq
	if campaignID == 0 {
		sr.Seq = 0
	}
	sr.Failed = r.Error
	if c.Store != nil && c.storeErr == nil {
		if err = c.Store.AddRun(ctx, sr); err == nil {
			out.ID, r.RunID = sr.ID, sr.ID
			return nil
		}
		c.storeErr = err
	}
	path, err := WriteSideFile(c.sideDir(), r)
	if err != nil {
		return fmt.Errorf("%w; writing the run beside it failed too: %v", c.unstoredCause(), err)
	}
	c.SideFiles = append(c.SideFiles, path)
	return nil
}

// sideDir is the database whose runs go beside it.
func (c *Campaign) sideDir() string {
	if c.Unstored != "" {
		return c.Unstored
	}
	return c.Store.Path()
}

func (c *Campaign) unstoredCause() error {
	if c.storeErr != nil {
		return c.storeErr
	}
	return c.UnstoredErr
}

// unstored is the campaign's error when runs went to side files.
func (c *Campaign) unstored() error {
	if len(c.SideFiles) == 0 {
		return nil
	}
	return &UnstoredError{Paths: c.SideFiles, Err: c.unstoredCause()}
}

// UnstoredError says that runs the database could not take were kept in
// files beside it.
type UnstoredError struct {
	Paths []string // each run's JSON (linerate.bench/v1), in order
	Err   error    // why the database did not take them
}

func (e *UnstoredError) Error() string {
	if len(e.Paths) == 1 {
		return fmt.Sprintf("%v; the run was kept in %s instead", e.Err, e.Paths[0])
	}
	return fmt.Sprintf("%v; the %d runs were kept beside it instead, %s to %s", e.Err, len(e.Paths), e.Paths[0], e.Paths[len(e.Paths)-1])
}

func (e *UnstoredError) Unwrap() error { return e.Err }

// storeRun shapes a run as the database keeps it.
func storeRun(r *result.Result, p Params, spec Spec, clientDoc, serverDoc json.RawMessage) (*store.Run, error) {
	params, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	r.RunID = 0 // numbered by the store; the document is re-encoded with it by readers
	result, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	sr := &store.Run{
		StartedAt: r.Start.Timestamp, Label: spec.Label, Engine: r.Engine, Peer: spec.Peer,
		Streams: r.Start.Streams, Placement: placementText(p.Pinning), Direction: string(r.Start.Direction),
		DurationS: r.End.Seconds, Gbps: r.Gbps(), SentGbps: r.End.SumSent.BitsPerSecond / 1e9,
		Retransmits: int64(r.End.SumSent.Retransmits),
		Params:      params, Result: result, ClientDoctor: clientDoc, ServerDoctor: serverDoc, Raw: r.Raw,
	}
	if sr.StartedAt.IsZero() {
		sr.StartedAt = time.Now()
	}
	if v := r.End.CPU.ClientSeconds; v > 0 {
		sr.ClientCPUSeconds = &v
	}
	if v := r.End.CPU.ServerSeconds; v > 0 {
		sr.ServerCPUSeconds = &v
	}
	return sr, nil
}

func placementText(p agent.Pinning) string {
	if p.Auto() {
		return ""
	}
	return p.String()
}

// summary summarises what ran.
func (c *Campaign) summary(campaignID int64, outs []explain.Outcome) *explain.Summary {
	s := explain.Summarize(c.Spec.Design(), outs, explain.TopologyFromDoctor(c.ClientDoctor), explain.CeilingFromDoctor(c.ClientDoctor, c.Iface))
	s.CampaignID = campaignID
	s.Engine = c.Driver.Name()
	c.pointGaps(s, outs)
	return s
}

// doctors are the doctor reports of the campaign's two ends.
func (c *Campaign) doctors() gap.Doctors {
	return gap.Doctors{Client: c.ClientDoctor, Server: c.ServerDoctor}
}

// pointGaps sets each point's gap (its runs' time added up) and opens the
// explanation with each point's dominant limit. The summary lists the
// points that ran, in the design's order.
func (c *Campaign) pointGaps(s *explain.Summary, outs []explain.Outcome) {
	byPoint := map[int][]*result.Result{}
	for _, o := range outs {
		byPoint[o.Point] = append(byPoint[o.Point], o.Run)
	}
	k := 0
	for i := range c.Spec.Design().Points {
		runs := byPoint[i]
		if len(runs) == 0 {
			continue
		}
		if k == len(s.Points) {
			break
		}
		docs := make([]gap.Doctors, len(runs))
		for j := range docs {
			docs[j] = c.doctors()
		}
		s.Points[k].Gap = gap.OfRuns(runs, docs)
		k++
	}
	explain.LeadWithGaps(s)
}

func orEmpty(m map[string]result.CPUSample) map[string]result.CPUSample {
	if m == nil {
		return map[string]result.CPUSample{}
	}
	return m
}
