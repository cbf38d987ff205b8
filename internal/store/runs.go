package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/linerate/linerate/internal/result"
)

// Run is one stored benchmark run. The scalar fields are copied out of
// Result (the linerate.bench/v1 document) so that listings and
// comparisons need not decode it.
type Run struct {
	ID         int64
	CampaignID int64 // 0: a run of its own
	Seq        int   // position in its campaign, from 1
	StartedAt  time.Time
	Label      string
	Engine     string // native, iperf3, iperf2, perftest
	Peer       string
	Streams    int
	Placement  string // the -A pair asked for ("6,7"), "" when the engine chose
	Direction  string // send, receive, bidir
	DurationS  float64
	// Gbps is the goodput the receivers got, SentGbps what the senders
	// wrote, both in Gbit/s (10^9 bit/s).
	Gbps, SentGbps float64
	Retransmits    int64
	// CPU seconds each end's benchmark process used; nil when unknown.
	ClientCPUSeconds, ServerCPUSeconds *float64

	// Documents, loaded only when asked for (Query.Full, or Run).
	Params       json.RawMessage // what was asked
	Result       json.RawMessage // the linerate.bench/v1 document
	ClientDoctor json.RawMessage // linerate.doctor/v1 of the client host, nil when not taken
	ServerDoctor json.RawMessage // of the server host
	Raw          string          // the external tool's own output, kept as it printed it

	// Outline is the part of the run's document that says what it
	// measured, read with every run (without its intervals or streams):
	// start.protocol, mode, bitrate_bps and fq_rate_bps, end.latency,
	// udp, sum and transactions. Its Kind and Rate are the run's.
	Outline result.Result

	// Failed says why a run ended before its length (its path or its peer
	// went away); "" for a run that ran to its end. A failed run keeps
	// the intervals measured until then and never counts in a median.
	Failed string
}

// Campaign is a set of runs made by one `linerate bench` with --repeat,
// --sweep-streams or --placements.
type Campaign struct {
	ID         int64
	StartedAt  time.Time
	FinishedAt time.Time // zero while running, or when the campaign was killed
	Label      string
	Engine     string
	Peer       string
	Spec       json.RawMessage // the campaign as asked
	Summary    json.RawMessage // linerate.campaign/v1, nil until finished
}

// AddRun stores r in one transaction of its own and sets r.ID. Doctor
// reports identical to stored ones are shared, not copied.
func (s *Store) AddRun(ctx context.Context, r *Run) error {
	if err := checkDocs(r); err != nil {
		return err
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		cd, err := putDoctor(ctx, tx, r.ClientDoctor)
		if err != nil {
			return err
		}
		sd, err := putDoctor(ctx, tx, r.ServerDoctor)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO runs (campaign_id, seq, started_at, label, engine, peer,
			streams, placement, direction, duration_s, gbps, sent_gbps, retransmits, client_cpu_s, server_cpu_s,
			client_doctor_id, server_doctor_id, params, result, raw, failed)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			nullID(r.CampaignID), r.Seq, timeText(r.StartedAt), r.Label, r.Engine, r.Peer,
			r.Streams, r.Placement, r.Direction, r.DurationS, r.Gbps, r.SentGbps, r.Retransmits,
			r.ClientCPUSeconds, r.ServerCPUSeconds, cd, sd, string(r.Params), string(r.Result), r.Raw, r.Failed)
		if err != nil {
			return fmt.Errorf("storing run: %w", err)
		}
		r.ID, err = res.LastInsertId()
		return err
	})
}

// checkDocs refuses documents SQLite's json_valid would, with a clearer
// error, and fills the required ones.
func checkDocs(r *Run) error {
	if len(r.Params) == 0 {
		r.Params = json.RawMessage("{}")
	}
	if len(r.Result) == 0 {
		r.Result = json.RawMessage("{}")
	}
	for name, d := range map[string]json.RawMessage{"params": r.Params, "result": r.Result,
		"client doctor report": r.ClientDoctor, "server doctor report": r.ServerDoctor} {
		if len(d) > 0 && !json.Valid(d) {
			return fmt.Errorf("storing run: its %s is not valid JSON", name)
		}
	}
	return nil
}

// putDoctor stores a doctor report once per content and returns its ID
// (nil for no report).
func putDoctor(ctx context.Context, tx *sql.Tx, doc json.RawMessage) (any, error) {
	if len(doc) == 0 {
		return nil, nil
	}
	sum := sha256.Sum256(doc)
	h := hex.EncodeToString(sum[:])
	if _, err := tx.ExecContext(ctx, `INSERT INTO doctor_reports (sha256, report) VALUES (?, ?) ON CONFLICT (sha256) DO NOTHING`, h, string(doc)); err != nil {
		return nil, fmt.Errorf("storing doctor report: %w", err)
	}
	var id int64
	if err := tx.QueryRowContext(ctx, `SELECT id FROM doctor_reports WHERE sha256 = ?`, h).Scan(&id); err != nil {
		return nil, fmt.Errorf("finding doctor report: %w", err)
	}
	return id, nil
}

func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

// Query selects runs. Zero fields do not filter.
type Query struct {
	Label      string
	CampaignID int64
	IDs        []int64
	// Limit keeps the newest Limit runs (still listed oldest first).
	Limit int
	// Full loads the documents (params, result, doctor reports, raw).
	Full bool
}

const runColumns = `r.id, COALESCE(r.campaign_id, 0), r.seq, r.started_at, r.label, r.engine, r.peer, r.streams,
	r.placement, r.direction, r.duration_s, r.gbps, r.sent_gbps, r.retransmits, r.client_cpu_s, r.server_cpu_s`

// outlineColumn reads the fields of Run.Outline from the stored document
// in SQL, in one json_extract (the document is parsed once, not once per
// field), so that listing runs never loads their intervals: a JSON array
// in the order of outlineFields.
const outlineColumn = `, json_extract(r.result, '$.start.protocol', '$.start.mode', '$.start.bitrate_bps',
	'$.start.fq_rate_bps', '$.end.latency', '$.end.udp', '$.end.sum', '$.end.transactions')`

// setOutline fills r.Outline from outlineColumn's array. A document of
// another shape (hand-edited, or an older version's) says nothing of its
// kind: a bulk TCP run, as the runs before kinds were.
func setOutline(r *Run, outline string) {
	var f []json.RawMessage
	if json.Unmarshal([]byte(outline), &f) != nil || len(f) != 8 {
		return
	}
	o := &r.Outline
	// The rates as float64: SQLite may give an integer as 1.0e9.
	var bitrate, fqRate float64
	for i, dst := range []any{&o.Start.Protocol, &o.Start.Mode, &bitrate, &fqRate,
		&o.End.Latency, &o.End.UDP, &o.End.Sum, &o.End.Transactions} {
		if json.Unmarshal(f[i], dst) != nil || bitrate < 0 || fqRate < 0 {
			r.Outline = result.Result{}
			return
		}
	}
	o.Start.Bitrate, o.Start.FQRate = uint64(bitrate), uint64(fqRate)
}

const docColumns = `, r.params, r.result, COALESCE(cd.report, ''), COALESCE(sd.report, ''), r.raw`

const docJoins = ` LEFT JOIN doctor_reports cd ON cd.id = r.client_doctor_id
	LEFT JOIN doctor_reports sd ON sd.id = r.server_doctor_id`

// Runs returns the runs q selects, oldest first.
func (s *Store) Runs(ctx context.Context, q Query) ([]Run, error) {
	cols, from := runColumns+", r.failed"+outlineColumn, ` FROM runs r`
	if s.version < 3 { // a read-only store of an older schema: no run of it failed
		cols = runColumns + ", ''" + outlineColumn
	}
	if q.Full {
		cols += docColumns
		from += docJoins
	}
	var where []string
	var args []any
	if q.Label != "" {
		where, args = append(where, "r.label = ?"), append(args, q.Label)
	}
	if q.CampaignID != 0 {
		where, args = append(where, "r.campaign_id = ?"), append(args, q.CampaignID)
	}
	if len(q.IDs) > 0 {
		where = append(where, "r.id IN ("+strings.TrimSuffix(strings.Repeat("?,", len(q.IDs)), ",")+")")
		for _, id := range q.IDs {
			args = append(args, id)
		}
	}
	stmt := "SELECT " + cols + from
	if len(where) > 0 {
		stmt += " WHERE " + strings.Join(where, " AND ")
	}
	stmt += " ORDER BY r.id DESC"
	if q.Limit > 0 {
		stmt += fmt.Sprintf(" LIMIT %d", q.Limit)
	}
	rows, err := s.db.QueryContext(ctx, "SELECT * FROM ("+stmt+") ORDER BY 1", args...)
	if err != nil {
		return nil, damaged(s.path, fmt.Errorf("listing runs: %w", err))
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		r, err := scanRun(rows, q.Full)
		if err != nil {
			return nil, damaged(s.path, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, damaged(s.path, fmt.Errorf("listing runs: %w", err))
	}
	return out, nil
}

// Run returns run id with its documents.
func (s *Store) Run(ctx context.Context, id int64) (*Run, error) {
	runs, err := s.Runs(ctx, Query{IDs: []int64{id}, Full: true})
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("run %d: %w (see 'linerate history')", id, ErrNotFound)
	}
	return &runs[0], nil
}

func scanRun(rows *sql.Rows, full bool) (Run, error) {
	var r Run
	var started string
	var ccpu, scpu sql.NullFloat64
	dest := []any{&r.ID, &r.CampaignID, &r.Seq, &started, &r.Label, &r.Engine, &r.Peer, &r.Streams,
		&r.Placement, &r.Direction, &r.DurationS, &r.Gbps, &r.SentGbps, &r.Retransmits, &ccpu, &scpu, &r.Failed}
	var outline, params, doc, cd, sd string
	dest = append(dest, &outline)
	if full {
		dest = append(dest, &params, &doc, &cd, &sd, &r.Raw)
	}
	if err := rows.Scan(dest...); err != nil {
		return r, fmt.Errorf("reading a run: %w", err)
	}
	r.StartedAt = parseTime(started)
	setOutline(&r, outline)
	if ccpu.Valid {
		r.ClientCPUSeconds = &ccpu.Float64
	}
	if scpu.Valid {
		r.ServerCPUSeconds = &scpu.Float64
	}
	if full {
		r.Params, r.Result = json.RawMessage(params), json.RawMessage(doc)
		r.ClientDoctor, r.ServerDoctor = rawOrNil(cd), rawOrNil(sd)
	}
	return r, nil
}

func rawOrNil(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// BeginCampaign records the start of a campaign and sets c.ID. Its runs
// refer to it as they are added; FinishCampaign stores the summary.
func (s *Store) BeginCampaign(ctx context.Context, c *Campaign) error {
	if len(c.Spec) == 0 {
		c.Spec = json.RawMessage("{}")
	}
	if !json.Valid(c.Spec) {
		return errors.New("storing campaign: its spec is not valid JSON")
	}
	if c.StartedAt.IsZero() {
		c.StartedAt = time.Now()
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO campaigns (started_at, label, engine, peer, spec) VALUES (?, ?, ?, ?, ?)`,
			timeText(c.StartedAt), c.Label, c.Engine, c.Peer, string(c.Spec))
		if err != nil {
			return fmt.Errorf("storing campaign: %w", err)
		}
		c.ID, err = res.LastInsertId()
		return err
	})
}

// FinishCampaign stores campaign id's summary (linerate.campaign/v1) and
// its end time.
func (s *Store) FinishCampaign(ctx context.Context, id int64, summary json.RawMessage) error {
	if !json.Valid(summary) {
		return errors.New("storing campaign summary: not valid JSON")
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE campaigns SET finished_at = ?, summary = ? WHERE id = ?`,
			timeText(time.Now()), string(summary), id)
		if err != nil {
			return fmt.Errorf("storing campaign summary: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("campaign %d: %w", id, ErrNotFound)
		}
		return nil
	})
}

// Campaign returns campaign id.
func (s *Store) Campaign(ctx context.Context, id int64) (*Campaign, error) {
	var c Campaign
	var started string
	var spec string
	var finished, summary sql.NullString
	err := s.db.QueryRowContext(ctx, `SELECT id, started_at, finished_at, label, engine, peer, spec, summary
		FROM campaigns WHERE id = ?`, id).Scan(&c.ID, &started, &finished, &c.Label, &c.Engine, &c.Peer, &spec, &summary)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("campaign %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading campaign %d: %w", id, err)
	}
	c.StartedAt, c.Spec = parseTime(started), json.RawMessage(spec)
	if finished.Valid {
		c.FinishedAt = parseTime(finished.String)
	}
	if summary.Valid {
		c.Summary = json.RawMessage(summary.String)
	}
	return &c, nil
}
