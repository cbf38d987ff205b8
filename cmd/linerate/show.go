package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/linerate/linerate/internal/bench"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/store"
)

// showRun prints one stored run as bench printed it (start, intervals,
// totals: the same writer, replayed from the stored document), headed by
// where it is stored and followed by the command that runs it again.
func showRun(ctx context.Context, w io.Writer, db *store.Store, id int64) error {
	r, err := db.Run(ctx, id)
	if err != nil {
		return runErr(id, err)
	}
	var res result.Result
	if err := json.Unmarshal(r.Result, &res); err != nil || res.Schema != result.Schema {
		return fmt.Errorf("run %d: its stored result is not %s JSON", id, result.Schema)
	}
	label, camp := "no label", ""
	if r.Label != "" {
		label = "label " + r.Label
	}
	if r.CampaignID != 0 {
		camp = fmt.Sprintf(", campaign %d (#%d)", r.CampaignID, r.Seq)
	}
	fmt.Fprintf(w, "Run %d: %s, %s engine, peer %s, %s%s\n", r.ID, r.StartedAt.Local().Format("2006-01-02 15:04:05"), r.Engine, r.Peer, label, camp)
	var params bench.Params
	paramsOK := json.Unmarshal(r.Params, &params) == nil
	p := bench.ProbeTextProgress(w, false, params.Probe)
	p(result.Event{Event: "start", Data: &res.Start})
	for i := range res.Intervals {
		p(result.Event{Event: "interval", Data: &res.Intervals[i]})
	}
	p(result.Event{Event: "end", Data: &res.End})
	if paramsOK && r.Peer != "" && params.Perftest.Test == "" {
		s := bench.Spec{Driver: r.Engine, Peer: r.Peer, Label: r.Label, Run: params}
		fmt.Fprintf(w, "Run it again: %s\n", s.Command(bench.Point{Streams: max(params.Streams, 1), Pinning: params.Pinning}))
	}
	return nil
}

// storedRunSchema names the document `linerate history --run ID --json`
// prints (docs/schema/stored-run-v1.schema.json).
const storedRunSchema = "linerate.stored-run/v1"

// storedRunDoc is one stored run, whole.
type storedRunDoc struct {
	Schema   string          `json:"schema"`
	Run      *result.Result  `json:"run"`
	Label    string          `json:"label"`
	Campaign *storedCampaign `json:"campaign"`
	Params   json.RawMessage `json:"params"`
	Command  string          `json:"command,omitempty"`
	Doctor   struct {
		Client json.RawMessage `json:"client"`
		Server json.RawMessage `json:"server"`
	} `json:"doctor"`
}

// storedCampaign is where a stored run sits in its campaign.
type storedCampaign struct {
	ID  int64 `json:"id"`
	Seq int   `json:"seq"`
}

// showRunJSON prints run id as linerate.stored-run/v1.
func showRunJSON(ctx context.Context, w io.Writer, db *store.Store, id int64) error {
	r, err := db.Run(ctx, id)
	if err != nil {
		return runErr(id, err)
	}
	var res result.Result
	if err := json.Unmarshal(r.Result, &res); err != nil || res.Schema != result.Schema {
		return fmt.Errorf("run %d: its stored result is not %s JSON", id, result.Schema)
	}
	res.RunID = r.ID // the store numbers runs; the document holds 0
	doc := storedRunDoc{Schema: storedRunSchema, Run: &res, Label: r.Label, Params: r.Params,
		Command: bench.StoredCommands{}.Run(r)}
	if r.CampaignID != 0 {
		doc.Campaign = &storedCampaign{ID: r.CampaignID, Seq: r.Seq}
	}
	if len(doc.Params) == 0 {
		doc.Params = json.RawMessage("{}")
	}
	doc.Doctor.Client, doc.Doctor.Server = orNull(r.ClientDoctor), orNull(r.ServerDoctor)
	return writeJSON(w, doc)
}

func orNull(doc json.RawMessage) json.RawMessage {
	if len(doc) == 0 {
		return json.RawMessage("null")
	}
	return doc
}

// cpuPerGbit is CPU seconds per Gbit moved; nil when unknown.
func cpuPerGbit(cpuS *float64, gbps, seconds float64) *float64 {
	if cpuS == nil || gbps <= 0 || seconds <= 0 {
		return nil
	}
	v := round(*cpuS/(gbps*seconds), 4)
	return &v
}

// runErr is db.Run's error for run id: the store's own names the run and
// points at history already when the run is not there.
func runErr(id int64, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return err
	}
	return fmt.Errorf("run %d: %w", id, err)
}
