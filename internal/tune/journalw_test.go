package tune

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSweepTemps: a hidden temporary journal older than a minute (left by
// a process killed while creating one) is removed; a fresh one, which a
// running tune may be writing, and anything else stay.
func TestSweepTemps(t *testing.T) {
	dir := journalDir(t)
	old := filepath.Join(dir, ".20250101T000000.000000Z"+journalExt+".tmp")
	fresh := filepath.Join(dir, ".20250101T000001.000000Z"+journalExt+".tmp")
	visible := filepath.Join(dir, "x"+journalExt+".tmp")
	other := filepath.Join(dir, ".notes")
	for _, p := range []string{old, fresh, visible, other} {
		if err := os.WriteFile(p, []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-2 * time.Minute)
	for _, p := range []string{old, visible, other} {
		os.Chtimes(p, past, past)
	}
	sweepTemps(dir)
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("a stale temporary journal stays: %v", err)
	}
	for _, p := range []string{fresh, visible, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}
}
