package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/store"
)

// TestCompareDominantChange: compare says when A's dominant limit and
// B's differ, from each side's gap over its runs (the gap model's lab
// runs, stored with their doctor reports as bench stores them), and says
// nothing when they agree.
func TestCompareDominantChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"small-sndbuf.json", "shaped.json", "shaped.json"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "internal", "gap", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Run    json.RawMessage `json:"run"`
			Doctor struct{ Client, Server json.RawMessage }
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		r := &store.Run{StartedAt: time.Date(2026, 11, 26, 20, 0, 0, 0, time.UTC), Engine: "native", Peer: "lab:gap",
			Streams: 1, Direction: "send", DurationS: 3, Gbps: 2, SentGbps: 2, Result: s.Run,
			ClientDoctor: s.Doctor.Client, ServerDoctor: s.Doctor.Server}
		if err := db.AddRun(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	out, errOut, _ := runCLI(t, "compare", "1", "2", "--db", path)
	if !strings.Contains(out, "Limit: the dominant limit changed: A was held by sender_buffer (99%), B by path_rate (100%).") {
		t.Errorf("compare of a buffer-limited and a shaped run:\n%s%s", out, errOut)
	}
	out, _, _ = runCLI(t, "compare", "2", "3", "--db", path, "--json")
	var doc struct {
		DominantChange *string `json:"dominant_change"`
		A              struct {
			Gap struct{ Dominant string }
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.DominantChange != nil || doc.A.Gap.Dominant != "path_rate" {
		t.Errorf("two shaped runs: %s", out)
	}
}
