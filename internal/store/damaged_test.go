package store

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDamagedDatabase: a database of random bytes, and a real one cut to
// part of its length, give one line that names the file, says it is
// damaged, and says what to do (move it aside; sqlite3 .recover): on
// Open, OpenReadOnly, and whichever later call meets the damage.
func TestDamagedDatabase(t *testing.T) {
	ctx := context.Background()
	junk := filepath.Join(t.TempDir(), "results.db")
	b := make([]byte, 64<<10)
	rand.Read(b)
	if err := os.WriteFile(junk, b, 0o600); err != nil {
		t.Fatal(err)
	}

	// A real database with runs and doctor reports over many pages, cut
	// to a third: its schema survives, the tables' later pages do not.
	cut := filepath.Join(t.TempDir(), "results.db")
	s, err := Open(ctx, cut)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		r := sampleRun(float64(i))
		r.Result = []byte(`{"pad":"` + strings.Repeat("x", 3000) + `"}`)
		if err := s.AddRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	fi, err := os.Stat(cut)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(cut, fi.Size()/3/4096*4096); err != nil {
		t.Fatal(err)
	}

	for _, path := range []string{junk, cut} {
		var errs []error
		if s, err := Open(ctx, path); err != nil {
			errs = append(errs, err)
		} else {
			_, err := s.Runs(ctx, Query{Full: true})
			errs = append(errs, err, s.AddRun(ctx, sampleRun(1)))
			s.Close()
		}
		if s, err := OpenReadOnly(ctx, path); err != nil {
			errs = append(errs, err)
		} else {
			_, err := s.Runs(ctx, Query{Full: true})
			errs = append(errs, err)
			s.Close()
		}
		damaged := 0
		for _, err := range errs {
			var d *DamagedError
			if !errors.As(err, &d) {
				continue
			}
			damaged++
			msg := err.Error()
			want := "results database " + path + " is damaged ("
			if !strings.HasPrefix(msg, want) || strings.Contains(msg, "\n") ||
				!strings.Contains(msg, "move it aside (mv "+path+" "+path+".damaged)") ||
				!strings.Contains(msg, "sqlite3 "+path+".damaged .recover | sqlite3 "+path+".recovered") {
				t.Errorf("%s: %q", path, msg)
			}
		}
		t.Logf("%s: %v", filepath.Base(filepath.Dir(path)), errs)
		if damaged == 0 {
			t.Errorf("%s: no call said the database is damaged: %v", path, errs)
		}
	}
}
