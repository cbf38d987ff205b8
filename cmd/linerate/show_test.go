package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/bench"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/store"
)

// TestHistoryRun: history --run shows one stored run in the terminal as
// bench printed it, with the command that runs it again (lab:NAME and -i
// as asked), and history --json gives CPU seconds per Gbit: 2 s of client
// CPU over 10 Gbit/s for 2 s is 0.1.
func TestHistoryRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	res := result.Result{Schema: result.Schema, Engine: "native",
		Start: result.Start{Peer: "198.18.0.2", Port: 5301, Streams: 1, DurationS: 2, IntervalS: 0.5, Direction: result.Send,
			Placement: result.Placement{Client: []int{0}, Server: []int{1}, Source: "auto"}},
		Intervals: []result.Interval{{Start: 0, End: 1, Sum: result.Sum{Bytes: 1_250_000_000, BitsPerSecond: 10e9},
			CPU: result.HostCPUs{Client: map[string]result.CPUSample{"0": {Busy: 80}}}}},
		End: result.End{Seconds: 2, SumSent: result.Sum{Bytes: 2_500_000_000, BitsPerSecond: 10e9},
			SumReceived: result.Received{Bytes: 2_500_000_000, BitsPerSecond: 10e9}, CPU: result.EndCPU{ClientSeconds: 2, ServerSeconds: 1}}}
	doc, _ := json.Marshal(res)
	params, _ := json.Marshal(bench.Params{Test: agent.Test{Params: engine.Params{Streams: 1, Duration: 2 * time.Second, Interval: 500 * time.Millisecond, Direction: result.Send}}})
	two, one := 2.0, 1.0
	r := &store.Run{StartedAt: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), Label: "one", Engine: "native", Peer: "lab:uxa",
		Streams: 1, Direction: "send", DurationS: 2, Gbps: 10, SentGbps: 10, ClientCPUSeconds: &two, ServerCPUSeconds: &one,
		Params: params, Result: doc}
	if err := db.AddRun(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	db.Close()
	out, errOut, code := runCLI(t, "history", "--db", path, "--run", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"Run 1: ", "native engine, peer lab:uxa, label one",
		"[SUM]   0.00-1.00   sec  1.16 GBytes  10.0 Gbits/sec     0 retr  client pinned cpu0  80% si  0%",
		"CPU time: client 2.00 s, server 1.00 s (0.100 and 0.050 CPU s per Gbit)",
		"Run it again: linerate bench lab:uxa -t 2 -i 500ms -P 1 --label one\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("history --run 1 lacks %q:\n%s", want, out)
		}
	}
	for _, args := range [][]string{{"--run", "9"}, {"--run", "9", "--json"}} {
		_, errOut, code := runCLI(t, append([]string{"history", "--db", path}, args...)...)
		if code != 2 || errOut != "linerate: run 9: not in the results database (see 'linerate history')\n" {
			t.Errorf("unknown run %v: exit %d %q (said once, not twice)", args, code, errOut)
		}
	}
	out, _, _ = runCLI(t, "history", "--db", path, "--json")
	var h struct{ Runs []historyRun }
	if err := json.Unmarshal([]byte(out), &h); err != nil || len(h.Runs) != 1 {
		t.Fatalf("history --json: %v\n%s", err, out)
	}
	if c, s := h.Runs[0].ClientCPUPerGbit, h.Runs[0].ServerCPUPerGbit; c == nil || *c != 0.1 || s == nil || *s != 0.05 {
		t.Errorf("CPU s per Gbit: %v %v", c, s)
	}
}
