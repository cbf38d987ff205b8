package store

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/result"
)

// TestMain doubles as the writer process of TestKilledWriter: with
// STORE_TEST_WRITER set it adds runs until killed.
func TestMain(m *testing.M) {
	if path := os.Getenv("STORE_TEST_WRITER"); path != "" {
		os.Exit(writer(path))
	}
	os.Exit(m.Run())
}

// writer adds runs to the database at path forever, printing each ID once
// it is committed.
func writer(path string) int {
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	c := &Campaign{Engine: "native", Peer: "198.18.0.2"}
	if err := s.BeginCampaign(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	big := json.RawMessage(`{"intervals":[` + strings.Repeat(`{"sum":{"bits_per_second":1e10}},`, 2000) + `{}]}`)
	for seq := 1; ; seq++ {
		r := sampleRun(float64(seq))
		r.CampaignID, r.Seq, r.Result = c.ID, seq, big
		if err := s.AddRun(ctx, r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Println(r.ID)
	}
}

func sampleRun(gbps float64) *Run {
	cpu := 1.5
	return &Run{
		StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC), Label: "base", Engine: "iperf3",
		Peer: "198.18.0.2", Streams: 2, Placement: "0,1", Direction: "send", DurationS: 3,
		Gbps: gbps, SentGbps: gbps + 0.1, Retransmits: 7, ClientCPUSeconds: &cpu,
		Params:       json.RawMessage(`{"streams":2}`),
		Result:       json.RawMessage(`{"schema":"linerate.bench/v1"}`),
		ClientDoctor: json.RawMessage(`{"schema":"linerate.doctor/v1","host":{"hostname":"a"}}`),
		ServerDoctor: json.RawMessage(`{"schema":"linerate.doctor/v1","host":{"hostname":"b"}}`),
		Raw:          "iperf Done.",
	}
}

func openTemp(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "sub", "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	c := &Campaign{Label: "base", Engine: "iperf3", Peer: "198.18.0.2", Spec: json.RawMessage(`{"repeat":2}`)}
	if err := s.BeginCampaign(ctx, c); err != nil {
		t.Fatal(err)
	}
	for i, g := range []float64{9.5, 9.7} {
		r := sampleRun(g)
		r.CampaignID, r.Seq = c.ID, i+1
		if err := s.AddRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		if r.ID != int64(i+1) {
			t.Errorf("run %d got ID %d", i, r.ID)
		}
	}
	solo := sampleRun(3)
	solo.Label, solo.ClientCPUSeconds, solo.ServerDoctor = "other", nil, nil
	if err := s.AddRun(ctx, solo); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishCampaign(ctx, c.ID, json.RawMessage(`{"schema":"linerate.campaign/v1"}`)); err != nil {
		t.Fatal(err)
	}

	runs, err := s.Runs(ctx, Query{Label: "base"})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].Gbps != 9.5 || runs[1].Gbps != 9.7 || runs[0].CampaignID != c.ID || runs[1].Seq != 2 {
		t.Fatalf("label query: %+v", runs)
	}
	if runs[0].Result != nil {
		t.Error("documents loaded without Full")
	}
	if runs[0].ClientCPUSeconds == nil || *runs[0].ClientCPUSeconds != 1.5 || runs[0].ServerCPUSeconds != nil {
		t.Errorf("cpu seconds: %v %v", runs[0].ClientCPUSeconds, runs[0].ServerCPUSeconds)
	}
	if !runs[0].StartedAt.Equal(time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)) {
		t.Errorf("started_at %v", runs[0].StartedAt)
	}

	got, err := s.Run(ctx, solo.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Label != "other" || string(got.ClientDoctor) != string(solo.ClientDoctor) || got.ServerDoctor != nil || got.Raw != "iperf Done." {
		t.Errorf("full run: %+v", got)
	}
	// Three runs, two distinct doctor reports.
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM doctor_reports`).Scan(&n); err != nil || n != 2 {
		t.Errorf("doctor reports stored: %d (%v), want 2 (shared by content)", n, err)
	}
	last, err := s.Runs(ctx, Query{Limit: 2})
	if err != nil || len(last) != 2 || last[0].ID != 2 || last[1].ID != 3 {
		t.Errorf("limit 2: %+v %v", last, err)
	}
	cg, err := s.Campaign(ctx, c.ID)
	if err != nil || cg.FinishedAt.IsZero() || string(cg.Summary) != `{"schema":"linerate.campaign/v1"}` || string(cg.Spec) != `{"repeat":2}` {
		t.Errorf("campaign: %+v %v", cg, err)
	}
	if _, err := s.Run(ctx, 99); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing run: %v", err)
	}
}

func TestPragmas(t *testing.T) {
	s := openTemp(t)
	var mode string
	var fk, busy int
	if err := s.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode %q %v", mode, err)
	}
	if err := s.db.QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys %d %v", fk, err)
	}
	if err := s.db.QueryRow(`PRAGMA busy_timeout`).Scan(&busy); err != nil || busy != 5000 {
		t.Errorf("busy_timeout %d %v", busy, err)
	}
	// Foreign keys are enforced: a run of a campaign that does not exist.
	r := sampleRun(1)
	r.CampaignID = 42
	if err := s.AddRun(context.Background(), r); err == nil {
		t.Error("run of a missing campaign was stored")
	}
}

func TestBadDocumentsRefused(t *testing.T) {
	s := openTemp(t)
	r := sampleRun(1)
	r.Result = json.RawMessage(`{"intervals": [`)
	if err := s.AddRun(context.Background(), r); err == nil || !strings.Contains(err.Error(), "result") {
		t.Errorf("invalid result JSON: %v", err)
	}
}

func TestMigrationsAreIdempotent(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	for range 3 {
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		var v int
		if err := s.db.QueryRow(`SELECT version FROM schema_version`).Scan(&v); err != nil || v != SchemaVersion() {
			t.Fatalf("version %d %v", v, err)
		}
		s.Close()
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(`UPDATE schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(ctx, path); err == nil || !strings.Contains(err.Error(), "upgrade linerate") {
		t.Errorf("newer schema: %v", err)
	}
}

func TestFailedMigrationLeavesNothing(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	// A database where "runs" already exists as something else: migration
	// 1 fails half-way, and must leave neither its tables nor a version.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE runs (x)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(ctx, path); err == nil {
		t.Fatal("migration over a conflicting table succeeded")
	}
	db, _ = sql.Open("sqlite", path)
	defer db.Close()
	var n int
	db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name IN ('campaigns', 'doctor_reports', 'schema_version')`).Scan(&n)
	if n != 0 {
		t.Errorf("%d tables left by a failed migration", n)
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("LINERATE_STATE_DIR", "/x/state")
	if p := DefaultPath(); p != "/x/state/results.db" {
		t.Errorf("with LINERATE_STATE_DIR: %s", p)
	}
	t.Setenv("LINERATE_STATE_DIR", "")
	t.Setenv("XDG_DATA_HOME", "/x/data")
	want := "/x/data/linerate/results.db"
	if os.Geteuid() == 0 {
		want = "/var/lib/linerate/results.db"
	}
	if p := DefaultPath(); p != want {
		t.Errorf("DefaultPath() = %s, want %s", p, want)
	}
}

// TestKilledWriter kills a process with SIGKILL while it commits runs,
// then checks that the database opens, passes SQLite's integrity check,
// and holds every run the writer reported committed.
func TestKilledWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "STORE_TEST_WRITER="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var committed []int64
	for len(committed) < 25 && sc.Scan() {
		id, err := strconv.ParseInt(sc.Text(), 10, 64)
		if err != nil {
			t.Fatalf("writer said %q", sc.Text())
		}
		committed = append(committed, id)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if len(committed) < 25 {
		t.Fatalf("writer committed only %d runs: %s", len(committed), stderr.String())
	}

	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("opening after SIGKILL: %v", err)
	}
	defer s.Close()
	var check string
	if err := s.db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check: %q %v", check, err)
	}
	runs, err := s.Runs(context.Background(), Query{CampaignID: 1, Full: true})
	if err != nil {
		t.Fatal(err)
	}
	have := map[int64]bool{}
	for _, r := range runs {
		have[r.ID] = true
		if !json.Valid(r.Result) {
			t.Errorf("run %d: result not valid JSON after the kill", r.ID)
		}
	}
	for _, id := range committed {
		if !have[id] {
			t.Errorf("run %d was committed before the kill and is gone", id)
		}
	}
	t.Logf("%d runs reported committed, %d in the database", len(committed), len(runs))
	c, err := s.Campaign(context.Background(), 1)
	if err != nil || !c.FinishedAt.IsZero() {
		t.Errorf("killed campaign: %+v %v (want unfinished)", c, err)
	}
}

// TestOutline stores the captured documents of each kind (a ping-pong,
// a UDP stream at 20 Mbit/s, a transaction run) beside bulk TCP and
// reads their kind and figures back from a listing that does not load
// the documents.
func TestOutline(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	read := func(name string) json.RawMessage {
		b, err := os.ReadFile(filepath.Join("..", "report", "testdata", "latency", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	docs := []struct {
		doc  json.RawMessage
		kind result.Kind
		rate string
	}{
		{json.RawMessage(`{"schema":"linerate.bench/v1","start":{"streams":1},"end":{}}`), result.KindTCP, ""},
		{read("native-tcp.json"), result.KindLatency, "1000/s"},
		{read("native-udp-20M.json"), result.KindUDP, "20 Mbit/s"},
		{json.RawMessage(`{"start":{"mode":"crr"},"end":{"transactions":{"mode":"crr","per_second":5000}}}`), result.KindTransactions, ""},
		{json.RawMessage(`{"start":{"fq_rate_bps":2000000000},"end":{"latency":"not an object"}}`), result.KindTCP, ""}, // another shape: no kind read
		{json.RawMessage(`[]`), result.KindTCP, ""},
	}
	for _, d := range docs {
		r := sampleRun(1)
		r.Result = d.doc
		if err := s.AddRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := s.Runs(ctx, Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != len(docs) {
		t.Fatalf("%d runs, want %d", len(runs), len(docs))
	}
	for i, r := range runs {
		if got := r.Outline.Kind(); got != docs[i].kind {
			t.Errorf("run %d: kind %q, want %q", r.ID, got, docs[i].kind)
		}
		if got := r.Outline.Rate(); got != docs[i].rate {
			t.Errorf("run %d: rate %q, want %q", r.ID, got, docs[i].rate)
		}
	}
	if l := runs[1].Outline.End.Latency; l == nil || l.RTTUs.P50 == nil || *l.RTTUs.P50 <= 0 {
		t.Errorf("the ping-pong's outline has no p50: %+v", l)
	}
	if u := runs[2].Outline.End.UDP; u == nil || u.PacketsPerSecond <= 0 {
		t.Errorf("the UDP run's outline has no packet rate: %+v", u)
	}
	if tx := runs[3].Outline.End.Transactions; tx == nil || tx.PerSecond != 5000 {
		t.Errorf("the crr run's outline: %+v", tx)
	}
}
