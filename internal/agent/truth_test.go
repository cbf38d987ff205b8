package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/telemetry"
)

// TestUnreadableProc runs a test whose two ends read a /proc tree where
// nothing can be read: the run completes; each end's unread telemetry
// sources are on the run, with the reason; the load before the run and
// the other load are unknown and noted, not reported as idle.
func TestUnreadableProc(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"proc", "sys"} { // a tree, empty: every read fails
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	addr, _ := agent(t, &Server{Host: fs})
	res, err := Run(context.Background(), Config{Peer: addr, Token: testToken, Host: fs, Test: Test{Params: engine.Params{Duration: time.Second, Interval: 250 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	e := res.End
	for end, unread := range map[string]map[string]string{"client": e.Unread.Client, "server": e.Unread.Server} {
		for _, src := range []string{telemetry.SrcStat, telemetry.SrcSoftirqs} {
			if !strings.Contains(unread[src], "proc/") {
				t.Errorf("%s: unread %v lacks %s with its reason", end, unread, src)
			}
		}
	}
	if e.Foreign.Client != nil || e.Foreign.Server != nil || len(e.Foreign.Notes) != 2 {
		t.Errorf("other load %+v: want none known and two notes", e.Foreign)
	}
	if res.Start.LoadBefore.Client != nil || res.Start.LoadBefore.Server != nil {
		t.Errorf("load before the run %+v: unknown, not idle", res.Start.LoadBefore)
	}
	notes := strings.Join(res.Start.Notes, "\n")
	for _, want := range []string{"client: CPU load before the run unknown (", "server: CPU load before the run unknown"} {
		if !strings.Contains(notes, want) {
			t.Errorf("start notes lack %q:\n%s", want, notes)
		}
	}
	for _, iv := range res.Intervals {
		if len(iv.CPU.Client) != 0 || len(iv.CPU.Server) != 0 {
			t.Fatalf("interval %g-%g has per-CPU samples read from nothing: %+v", iv.Start, iv.End, iv.CPU)
		}
	}
	if e.SumReceived.Bytes == 0 {
		t.Error("the run moved nothing: telemetry must never end a test")
	}
}
