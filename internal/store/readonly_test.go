package store

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenReadOnly: a read-only open reads what a writer stored (also while
// the writer keeps the database open), creates nothing where there is no
// database, cannot write, and refuses a newer schema and a file that is
// not a results database.
func TestOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "results.db")

	_, err := OpenReadOnly(ctx, path)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing database: %v, want fs.ErrNotExist", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("a read-only open of a missing database created %d files", len(ents))
	}

	w, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.AddRun(ctx, sampleRun(42.5)); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := r.Runs(ctx, Query{Full: true})
	if err != nil || len(runs) != 1 || runs[0].Gbps != 42.5 || string(runs[0].Result) != `{"schema":"linerate.bench/v1"}` {
		t.Fatalf("read-only Runs: %v %+v", err, runs)
	}
	if err := r.AddRun(ctx, sampleRun(1)); err == nil || !strings.Contains(err.Error(), "readonly") {
		t.Errorf("AddRun on a read-only store: %v, want a read-only error", err)
	}
	r.Close()

	if _, err := w.db.Exec(`UPDATE schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReadOnly(ctx, path); err == nil || !strings.Contains(err.Error(), "upgrade linerate") {
		t.Errorf("newer schema: %v", err)
	}

	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, []byte("not a database, just text\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReadOnly(ctx, junk); err == nil || !strings.Contains(err.Error(), "junk.db") {
		t.Errorf("a text file: %v", err)
	}
}
