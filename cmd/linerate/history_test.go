package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/store"
	"github.com/linerate/linerate/internal/testbin"
)

// campaignLab builds the real binary and brings up a lab for the
// end-to-end campaign tests; it needs root, and fails without it under
// CI=true.
func campaignLab(t *testing.T, name string) (bin, db string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("the campaign tests need root (network namespaces) and CI=true: run them with sudo")
		}
		t.Skip("needs root")
	}
	dir := t.TempDir()
	bin = testbin.Build(t, ".")
	t.Setenv("LINERATE_STATE_DIR", dir)
	if _, err := lab.Up(context.Background(), lab.Config{Name: name}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := lab.Down(context.Background(), name); err != nil {
			t.Errorf("lab down: %v", err)
		}
	})
	return bin, filepath.Join(dir, "results.db")
}

// campaignDoc is the part of linerate.campaign/v1 the tests read.
type campaignDoc struct {
	Schema string `json:"schema"`
	Points []struct {
		Streams    int         `json:"streams"`
		Placement  string      `json:"placement"`
		RunIDs     []int64     `json:"run_ids"`
		MedianGbps float64     `json:"median_gbps"`
		CI95Gbps   *[2]float64 `json:"ci95_gbps"`
		CINote     string      `json:"ci_note"`
		Buckets    []any       `json:"buckets"`
	} `json:"points"`
	Best *struct {
		Streams    int     `json:"streams"`
		Placement  string  `json:"placement"`
		MedianGbps float64 `json:"median_gbps"`
		Command    string  `json:"command"`
	} `json:"best"`
	Explanation []string `json:"explanation"`
}

func benchJSON(t *testing.T, bin string, args ...string) campaignDoc {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, append([]string{"bench"}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("linerate bench %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var d campaignDoc
	if err := json.Unmarshal(stdout.Bytes(), &d); err != nil || d.Schema != "linerate.campaign/v1" {
		t.Fatalf("bench %s: %v\n%s", strings.Join(args, " "), err, stdout.String())
	}
	return d
}

// TestCampaignsEndToEnd is issue 5's done-when, in a lab: with each
// engine that runs here, a sweep over 1, 2 and 4 streams and a placement
// campaign 0,0 against 0,1; the placement campaign names the faster one
// and the CPUs; every run is in the database; history and compare show
// them.
func TestCampaignsEndToEnd(t *testing.T) {
	bin, db := campaignLab(t, "t-camp")
	peer := "lab:t-camp"
	total := 0
	for _, engine := range []string{"native", "iperf3", "iperf2"} {
		t.Run(engine, func(t *testing.T) {
			sw := benchJSON(t, bin, peer, "--engine", engine, "--sweep-streams", "1,2,4", "-t", "2", "--db", db, "--label", engine+"-sweep", "--json")
			if len(sw.Points) != 3 || sw.Best == nil {
				t.Fatalf("sweep: %+v", sw)
			}
			for i, n := range []int{1, 2, 4} {
				if sw.Points[i].Streams != n || sw.Points[i].MedianGbps <= 0 || len(sw.Points[i].RunIDs) != 1 {
					t.Errorf("sweep point %d: %+v", i, sw.Points[i])
				}
			}
			pl := benchJSON(t, bin, peer, "--engine", engine, "--placements", "0,0;0,1", "--repeat", "2", "-t", "2", "--db", db, "--label", engine+"-place", "--json")
			if len(pl.Points) != 2 || pl.Best == nil {
				t.Fatalf("placements: %+v", pl)
			}
			faster := pl.Points[0]
			if pl.Points[1].MedianGbps > faster.MedianGbps {
				faster = pl.Points[1]
			}
			expl := strings.Join(pl.Explanation, "\n")
			t.Logf("%s placements:\n%s", engine, expl)
			if pl.Best.Placement != faster.Placement || !strings.Contains(pl.Best.Command, "-A "+faster.Placement) {
				t.Errorf("best %+v, but %s was faster", pl.Best, faster.Placement)
			}
			for _, want := range []string{"CPU 0", "CPU 1", "NET_RX softirq"} {
				if !strings.Contains(expl, want) {
					t.Errorf("explanation lacks %q", want)
				}
			}
			total += 3 + 4
		})
	}
	out, errOut, code := runCLI(t, "history", "--db", db, "--json")
	var h struct {
		Runs []struct {
			ID     int64   `json:"id"`
			Engine string  `json:"engine"`
			Label  string  `json:"label"`
			Gbps   float64 `json:"gbps"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &h); err != nil || code != 0 {
		t.Fatalf("history: %v %d %s", err, code, errOut)
	}
	if len(h.Runs) != total {
		t.Errorf("history lists %d runs, want %d", len(h.Runs), total)
	}
	out, _, _ = runCLI(t, "history", "--db", db, "--label", "iperf3-place")
	if strings.Count(out, " iperf3-place ") != 4 {
		t.Errorf("history --label iperf3-place:\n%s", out)
	}
	out, errOut, code = runCLI(t, "compare", "iperf3-place", "iperf2-place", "--db", db, "--threshold", "90")
	if code != 0 || !strings.Contains(out, "change:") {
		t.Errorf("compare: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = runCLI(t, "compare", strconv.FormatInt(h.Runs[0].ID, 10), strconv.FormatInt(h.Runs[1].ID, 10), "--db", db)
	if code == 2 || !strings.Contains(out, "intervals") {
		t.Errorf("compare two runs: exit %d\n%s", code, out)
	}
}

// TestCampaignKilled kills `linerate bench --repeat 20` with SIGKILL
// after its second run is stored, mid-run: the database must open, pass
// SQLite's integrity check, and hold the finished runs.
func TestCampaignKilled(t *testing.T) {
	bin, db := campaignLab(t, "t-kill2")
	cmd := exec.Command(bin, "bench", "lab:t-kill2", "--engine", "iperf3", "--repeat", "20", "-t", "1", "--db", db)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the kill takes its tool processes too
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var stored []int64
	sc := bufio.NewScanner(out)
	for len(stored) < 2 && sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "(stored as run "); i >= 0 {
			id, _ := strconv.ParseInt(strings.TrimSuffix(line[i+len("(stored as run "):], ")"), 10, 64)
			stored = append(stored, id)
		}
	}
	time.Sleep(400 * time.Millisecond)
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	if len(stored) < 2 {
		t.Fatalf("bench stored %d runs before the kill", len(stored))
	}
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	var check string
	if err := raw.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check %q %v", check, err)
	}
	raw.Close()
	s, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runs, err := s.Runs(context.Background(), store.Query{Full: true})
	if err != nil || len(runs) < len(stored) {
		t.Fatalf("%d runs after the kill (%v), %d were reported stored", len(runs), err, len(stored))
	}
	for i, id := range stored {
		if runs[i].ID != id || runs[i].Gbps <= 0 || !json.Valid(runs[i].Result) {
			t.Errorf("run %d after the kill: %+v", id, runs[i])
		}
	}
	outH, _, code := runCLI(t, "history", "--db", db)
	if code != 0 || !strings.Contains(outH, "iperf3") {
		t.Errorf("history after the kill: %d\n%s", code, outH)
	}
}

// TestBusyAgent: while one bench runs against a standing agent, a second
// bench gets "busy" at once and exits 2, instead of waiting.
func TestBusyAgent(t *testing.T) {
	bin, db := campaignLab(t, "t-busy")
	tok := filepath.Join(filepath.Dir(db), "token")
	if err := os.WriteFile(tok, []byte(testToken), 0o600); err != nil {
		t.Fatal(err)
	}
	agent := exec.Command(bin, "serve", "--bind", lab.AddrB, "--token-file", tok)
	if err := lab.Start("t-busy", lab.B, agent); err != nil {
		t.Fatal(err)
	}
	defer func() { agent.Process.Kill(); agent.Wait() }()
	bench := func(secs string) *exec.Cmd {
		return exec.Command(bin, "bench", lab.AddrB, "-t", secs, "--token-file", tok)
	}
	// The agent may take a moment to listen: the first bench retries.
	var firstOut bytes.Buffer
	var firstDone chan error
	for try := 0; ; try++ {
		first := bench("4")
		firstOut.Reset()
		first.Stdout, first.Stderr = &firstOut, &firstOut
		if err := lab.Start("t-busy", lab.A, first); err != nil {
			t.Fatal(err)
		}
		firstDone = make(chan error, 1)
		go func() { firstDone <- first.Wait() }()
		select {
		case <-time.After(700 * time.Millisecond):
		case err := <-firstDone:
			if try == 10 {
				t.Fatalf("the first bench never ran: %v: %s", err, firstOut.String())
			}
			continue
		}
		break // running
	}
	second := bench("1")
	var out bytes.Buffer
	second.Stdout, second.Stderr = &out, &out
	if err := lab.Start("t-busy", lab.A, second); err != nil {
		t.Fatal(err)
	}
	err := second.Wait()
	code, _ := lab.ExitCode(err)
	if code != 2 || !strings.Contains(out.String(), "busy") {
		t.Errorf("second bench: exit %d: %s", code, out.String())
	}
	// Refused at once, not queued behind the first: the first is still
	// running when the second has ended.
	select {
	case err := <-firstDone:
		t.Errorf("the second bench ended only after the first (%v): it waited instead of being refused", err)
		firstDone <- err
	default:
	}
	if err := <-firstDone; err != nil {
		t.Errorf("first bench: %v: %s", err, firstOut.String())
	}
}
