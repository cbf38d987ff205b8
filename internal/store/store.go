// Package store keeps linerate's results history in SQLite
// (modernc.org/sqlite: pure Go, so a CGO_ENABLED=0 build works): every
// benchmark run with its parameters, label, engine, both hosts' doctor
// JSON, the full linerate.bench/v1 document (intervals and per-CPU
// telemetry) and its campaign.
//
// The database lives at DefaultPath unless the caller names one (--db):
// $LINERATE_STATE_DIR/results.db when that is set; for root
// /var/lib/linerate/results.db (beside the tune journals, so one backup
// holds both); for other users $XDG_DATA_HOME/linerate/results.db, i.e.
// ~/.local/share/linerate/results.db — results are data a user keeps, not
// state a program may rebuild, so XDG_DATA_HOME rather than
// XDG_STATE_HOME.
//
// Durability: the database runs in WAL mode, and every run is committed in
// a transaction of its own the moment it ends, so a campaign killed with
// SIGKILL leaves every finished run readable. Schema changes are ordered
// migrations (migrations.go) applied in one transaction and recorded in
// the schema_version table.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/linerate/linerate/internal/statedir"
)

// FileName is the database's file name inside its directory.
const FileName = "results.db"

// busyTimeout is how long a statement waits for another process's lock
// (a history listing while a campaign commits) before failing.
const busyTimeout = 5 * time.Second

// Store is an open results database. Its methods are safe for concurrent
// use.
type Store struct {
	db   *sql.DB
	path string
	// version is the schema's: a read-only store may read an older one.
	version int
}

// DefaultPath returns where the results database lives when no --db is
// given (see the package comment), without creating anything.
func DefaultPath() string {
	if d := os.Getenv("LINERATE_STATE_DIR"); d != "" {
		return filepath.Join(d, FileName)
	}
	if os.Geteuid() == 0 {
		return filepath.Join("/var/lib/linerate", FileName)
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "linerate", FileName)
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "linerate", FileName)
	}
	return filepath.Join(statedir.TempFallback(), FileName)
}

// Open opens the database at path, creating it and its directory (mode
// 0700) if needed, and brings its schema up to date. An empty path means
// DefaultPath.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		path = DefaultPath()
	}
	if err := statedir.MkdirAll(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("the results directory: %w (or use --db PATH to put the database elsewhere)", err)
	}
	db, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		return nil, fmt.Errorf("opening results database %s: %w", path, err)
	}
	// One connection: SQLite has one writer anyway, each modernc
	// connection carries its own page cache and libc state, and a single
	// connection makes the pragmas in the DSN hold for every statement.
	db.SetMaxOpenConns(1)
	s := &Store{db: db, path: path, version: len(migrations)}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		if d := damaged(path, err); d != err {
			return nil, d
		}
		return nil, fmt.Errorf("results database %s: %w", path, err)
	}
	return s, nil
}

// readBusyTimeout is how long a read-only reader waits for another
// process's lock: short, because its readers (a metrics scrape) would
// rather report the database busy than stall.
const readBusyTimeout = time.Second

// OpenReadOnly opens the existing database at path (empty: DefaultPath)
// for reading only: it creates nothing, migrates nothing, and refuses a
// database written by a newer linerate. A missing file gives an error
// that errors.Is(err, fs.ErrNotExist) recognises.
func OpenReadOnly(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		path = DefaultPath()
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("results database %s: %w", path, err)
	}
	q := url.Values{}
	q.Add("mode", "ro")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", readBusyTimeout.Milliseconds()))
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("opening results database %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	var have int
	if err := db.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&have); err != nil {
		db.Close()
		if d := damaged(path, err); d != err {
			return nil, d
		}
		hint := "is this a linerate results database?"
		if strings.Contains(err.Error(), "SQLITE_BUSY") {
			hint = "another process holds it locked: try again"
		}
		return nil, fmt.Errorf("results database %s: reading schema_version: %w (%s)", path, err, hint)
	}
	if have < 1 || have > len(migrations) {
		db.Close()
		return nil, fmt.Errorf("results database %s: schema version %d is not one this linerate reads (1 to %d): upgrade linerate", path, have, len(migrations))
	}
	return &Store{db: db, path: path, version: have}, nil
}

// dsn sets the pragmas on every connection the driver opens: WAL (readers
// do not block the writer; a killed writer loses only its open
// transaction), a busy timeout instead of SQLITE_BUSY at once, and
// enforced foreign keys (off by default in SQLite).
func dsn(path string) string {
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)") // WAL + NORMAL: durable across a process kill, fast commits
	q.Add("_txlock", "immediate")           // take the write lock at BEGIN: no upgrade deadlocks
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// ErrNotFound is returned for a run or campaign ID the database does not
// hold, and for a label no run carries.
var ErrNotFound = errors.New("not in the results database")

// tx runs fn in a transaction, committing when fn returns nil.
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	t, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return damaged(s.path, fmt.Errorf("starting a transaction: %w", err))
	}
	if err := fn(t); err != nil {
		t.Rollback()
		return damaged(s.path, err)
	}
	if err := t.Commit(); err != nil {
		return damaged(s.path, fmt.Errorf("committing: %w", err))
	}
	return nil
}

// timeText formats t the way the database stores times: RFC 3339 in UTC
// with milliseconds, so that text order is time order.
func timeText(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s) // written by timeText; zero if someone edited it
	return t
}
