package store

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations are the schema's versions, in order: migrations[i] takes the
// database from version i to i+1. Never edit one that has shipped; append.
//
// JSON columns hold documents whole (the bench/v1 result with its
// intervals and telemetry, doctor reports); the columns that history and
// compare filter or sort on are copied out of them and indexed. Doctor
// reports are stored once per distinct content (a campaign's runs share
// their hosts' reports) and referenced by ID.
var migrations = []string{
	`CREATE TABLE doctor_reports (
		id     INTEGER PRIMARY KEY,
		sha256 TEXT NOT NULL UNIQUE,
		report TEXT NOT NULL CHECK (json_valid(report))
	);
	CREATE TABLE campaigns (
		id          INTEGER PRIMARY KEY,
		started_at  TEXT NOT NULL,
		finished_at TEXT,
		label       TEXT NOT NULL DEFAULT '',
		engine      TEXT NOT NULL,
		peer        TEXT NOT NULL,
		spec        TEXT NOT NULL CHECK (json_valid(spec)),
		summary     TEXT CHECK (summary IS NULL OR json_valid(summary))
	);
	CREATE TABLE runs (
		id               INTEGER PRIMARY KEY,
		campaign_id      INTEGER REFERENCES campaigns(id) ON DELETE CASCADE,
		seq              INTEGER NOT NULL DEFAULT 0,
		started_at       TEXT NOT NULL,
		label            TEXT NOT NULL DEFAULT '',
		engine           TEXT NOT NULL,
		peer             TEXT NOT NULL,
		streams          INTEGER NOT NULL,
		placement        TEXT NOT NULL DEFAULT '',
		direction        TEXT NOT NULL DEFAULT 'send',
		duration_s       REAL NOT NULL,
		gbps             REAL NOT NULL,
		sent_gbps        REAL NOT NULL,
		retransmits      INTEGER NOT NULL DEFAULT 0,
		client_cpu_s     REAL,
		server_cpu_s     REAL,
		client_doctor_id INTEGER REFERENCES doctor_reports(id),
		server_doctor_id INTEGER REFERENCES doctor_reports(id),
		params           TEXT NOT NULL CHECK (json_valid(params)),
		result           TEXT NOT NULL CHECK (json_valid(result)),
		raw              TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX runs_by_label    ON runs(label, started_at);
	CREATE INDEX runs_by_campaign ON runs(campaign_id, seq);
	CREATE INDEX runs_by_start    ON runs(started_at);
	CREATE INDEX runs_by_point    ON runs(engine, peer, streams, placement);`,
	// 2: core-to-core matrices (linerate.c2c/v1), by host.
	`CREATE TABLE c2c_results (
		id          INTEGER PRIMARY KEY,
		measured_at TEXT NOT NULL,
		host        TEXT NOT NULL,
		result      TEXT NOT NULL CHECK (json_valid(result))
	);
	CREATE INDEX c2c_by_host ON c2c_results(host, measured_at);`,
	// 3: runs that ended before their length (the path or the peer went
	// away) are kept, with the reason; '' for a run that ran to its end.
	`ALTER TABLE runs ADD COLUMN failed TEXT NOT NULL DEFAULT '';`,
}

// SchemaVersion is the schema version this build writes.
func SchemaVersion() int { return len(migrations) }

// migrate applies the migrations the database lacks, all in one
// transaction: a crash mid-way leaves the old version whole.
func (s *Store) migrate(ctx context.Context) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
			return fmt.Errorf("creating schema_version: %w", err)
		}
		var have int
		err := tx.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&have)
		switch {
		case err == sql.ErrNoRows:
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (0)`); err != nil {
				return fmt.Errorf("initialising schema_version: %w", err)
			}
		case err != nil:
			return fmt.Errorf("reading schema_version: %w (is this a linerate results database?)", err)
		}
		if have > len(migrations) {
			return fmt.Errorf("schema version %d is newer than this linerate knows (%d): upgrade linerate", have, len(migrations))
		}
		for v := have; v < len(migrations); v++ {
			if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
				return fmt.Errorf("migrating the schema to version %d: %w", v+1, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = ?`, len(migrations)); err != nil {
			return fmt.Errorf("recording schema version: %w", err)
		}
		return nil
	})
}
