package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestC2C: matrices are stored by host and the newest comes back; a host
// without one is ErrNotFound.
func TestC2C(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for i, c := range []C2C{
		{MeasuredAt: t0, Host: "crow", Result: []byte(`{"n":1}`)},
		{MeasuredAt: t0.Add(time.Hour), Host: "crow", Result: []byte(`{"n":2}`)},
		{MeasuredAt: t0.Add(2 * time.Hour), Host: "vulture", Result: []byte(`{"n":3}`)},
	} {
		if err := s.AddC2C(ctx, &c); err != nil || c.ID != int64(i+1) {
			t.Fatalf("add %d: id %d, %v", i, c.ID, err)
		}
	}
	got, err := s.LatestC2C(ctx, "crow")
	if err != nil || string(got.Result) != `{"n":2}` || !got.MeasuredAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("latest crow: %+v %v", got, err)
	}
	if _, err := s.LatestC2C(ctx, "owl"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown host: %v", err)
	}
	if err := s.AddC2C(ctx, &C2C{Host: "crow", Result: []byte(`{`)}); err == nil {
		t.Fatal("accepted a broken document")
	}
	if err := s.AddC2C(ctx, &C2C{Result: []byte(`{}`)}); err == nil {
		t.Fatal("accepted a matrix without a host")
	}
}

// TestMigrateToC2C: a database of schema version 1 (runs only) gains the
// c2c table and keeps its runs.
func TestMigrateToC2C(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), FileName)
	db, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{migrations[0], `CREATE TABLE schema_version (version INTEGER NOT NULL)`, `INSERT INTO schema_version VALUES (1)`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.AddRun(ctx, sampleRun(9.5)); err != nil {
		t.Fatal(err)
	}
	if err := s.AddC2C(ctx, &C2C{Host: "crow", MeasuredAt: time.Now(), Result: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	var v int
	if err := s.db.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v); err != nil || v != SchemaVersion() || v < 2 {
		t.Fatalf("version %d (%v), want %d", v, err, SchemaVersion())
	}
}
