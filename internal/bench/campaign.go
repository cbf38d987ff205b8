package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

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
	// Progress sees the campaign as it goes; nil is silent.
	Progress Reporter
	// ClientDoctor and ServerDoctor are both hosts' doctor reports,
	// stored with every run; the client's names CPUs in explanations and
	// gives the line-rate ceiling of Iface.
	ClientDoctor, ServerDoctor json.RawMessage
	Iface                      string
	// ClientTune and ServerTune name the tune journals in effect on each
	// end; a run whose ends did not say carries them.
	ClientTune, ServerTune string
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
	RunDone(i, n int, id int64, r *Run)
	// Finish is called once the campaign ends, whatever the outcome.
	Finish()
}

// Run runs the campaign. On an error it returns what finished so far
// (stored already) with the summary of those runs, and the error.
func (c *Campaign) Run(ctx context.Context) (*Summary, []Outcome, error) {
	if err := c.Driver.Check(); err != nil {
		return nil, nil, err
	}
	// Every point must be one the driver can run before anything is
	// recorded: a refusal at run 5 would leave a campaign half made.
	if pc, ok := c.Driver.(paramChecker); ok {
		for _, p := range c.Spec.Points() {
			if err := pc.CheckParams(c.Spec.params(p)); err != nil {
				return nil, nil, fmt.Errorf("%d streams, placement %s: %w", p.Streams, p.Placement, err)
			}
		}
	}
	campaignID, err := c.begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	points, order := c.Spec.Points(), c.Spec.Order()
	var outs []Outcome
	started := time.Now()
	defer c.finishProgress()
	for i, pi := range order {
		if c.Progress != nil {
			c.Progress.RunStarting(i, len(order), points[pi], c.eta(i, len(order), started))
		}
		out, err := c.one(ctx, campaignID, i+1, pi, points[pi])
		if err != nil {
			return c.summary(campaignID, outs), outs, fmt.Errorf("run %d of %d (%d streams, placement %s): %w",
				i+1, len(order), points[pi].Streams, points[pi].Placement, err)
		}
		outs = append(outs, out)
		if c.Progress != nil {
			c.Progress.RunDone(i, len(order), out.ID, out.Run)
		}
	}
	s := c.summary(campaignID, outs)
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
	if c.Progress != nil {
		c.Progress.Finish()
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

// eta estimates the campaign's time left: runs left × the mean time of
// the runs done, or of the planned duration plus 2 s of setup before any.
func (c *Campaign) eta(done, total int, started time.Time) time.Duration {
	per := c.Spec.params(Point{Streams: 1}).Duration + c.Spec.Run.Omit + 2*time.Second
	if done > 0 {
		per = time.Since(started) / time.Duration(done)
	}
	return per * time.Duration(total-done)
}

// one makes and stores one run.
func (c *Campaign) one(ctx context.Context, campaignID int64, seq, pi int, p Point) (Outcome, error) {
	params := c.Spec.params(p)
	var live func(result.Interval)
	if c.Progress != nil {
		live = func(iv result.Interval) { c.Progress.Interval(seq-1, iv) }
	}
	r, err := c.Driver.Run(ctx, params, live)
	if err != nil {
		return Outcome{}, err
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
	CompactTelemetry(r, TopologyFromDoctor(c.ClientDoctor), TopologyFromDoctor(c.ServerDoctor))
	r.Fairness = FairnessOf(r)
	out := Outcome{Point: pi, Run: r}
	if c.Store == nil {
		return out, nil
	}
	sr, err := storeRun(r, params, c.Spec, c.ClientDoctor, c.ServerDoctor)
	if err != nil {
		return out, err
	}
	sr.CampaignID, sr.Seq = campaignID, seq
	if campaignID == 0 {
		sr.Seq = 0
	}
	if err := c.Store.AddRun(ctx, sr); err != nil {
		return out, err
	}
	out.ID, r.RunID = sr.ID, sr.ID
	return out, nil
}

// storeRun shapes a run as the database keeps it.
func storeRun(r *Run, p Params, spec Spec, clientDoc, serverDoc json.RawMessage) (*store.Run, error) {
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
		Streams: r.Start.Streams, Placement: placementText(p.Placement), Direction: string(r.Start.Direction),
		DurationS: r.End.Seconds, Gbps: r.Gbps(), SentGbps: r.End.SumSent.BitsPerSecond / 1e9,
		Retransmits: int64(r.End.SumSent.Retransmits),
		Params:      params, Result: result, ClientDoctor: clientDoc, ServerDoctor: serverDoc, Raw: r.raw,
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

func placementText(p Placement) string {
	if p.Auto() {
		return ""
	}
	return p.String()
}

// summary summarises what ran.
func (c *Campaign) summary(campaignID int64, outs []Outcome) *Summary {
	s := Summarize(c.Spec, outs, TopologyFromDoctor(c.ClientDoctor), CeilingFromDoctor(c.ClientDoctor, c.Iface))
	s.CampaignID = campaignID
	s.Engine = c.Driver.Name()
	return s
}

func orEmpty(m map[string]result.CPUSample) map[string]result.CPUSample {
	if m == nil {
		return map[string]result.CPUSample{}
	}
	return m
}
