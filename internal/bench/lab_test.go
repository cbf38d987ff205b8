package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/explain"
	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/store"
	"github.com/linerate/linerate/internal/testbin"
	"github.com/linerate/linerate/internal/testutil"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestMain doubles as the campaign process TestKilledCampaign kills.
func TestMain(m *testing.M) {
	if db := os.Getenv("BENCH_TEST_CAMPAIGN_DB"); db != "" {
		os.Exit(killableCampaign(db, os.Getenv("BENCH_TEST_LAB")))
	}
	os.Exit(m.Run())
}

// needRoot skips without root, except under CI=true, where a skip would
// hide that the end-to-end tests never ran.
func needRoot(t *testing.T) {
	t.Helper()
	testbin.NeedRoot(t, "network namespaces")
}

// newLab brings up a healthy lab for the test and removes it after.
func newLab(t *testing.T, name string) *LabHosts {
	t.Helper()
	return newLabOf(t, lab.Config{Name: name})
}

// newLabOf is newLab for a lab of cfg (queues, a scenario). Under -short
// it skips: the lab's names are fixed, so two runs of the package at
// once would collide in it.
func newLabOf(t *testing.T, cfg lab.Config) *LabHosts {
	t.Helper()
	if testing.Short() {
		// CI: runs the suite without -short, so this runs there.
		t.Skip("-short: unit tests only, no lab")
	}
	needRoot(t)
	name := cfg.Name
	t.Setenv("LINERATE_STATE_DIR", t.TempDir())
	if _, err := lab.Up(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := lab.Down(context.Background(), name); err != nil {
			t.Errorf("lab down: %v", err)
		}
	})
	h, err := NewLabHosts(name)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func labDriver(t *testing.T, name string, h *LabHosts) Driver {
	switch name {
	case "iperf3":
		return &Iperf3{Hosts: h}
	case "iperf2":
		return &Iperf2{Hosts: h}
	}
	t.Fatalf("no driver %s", name)
	return nil
}

// TestLabCampaigns runs, with each external driver that can run here, a
// sweep over 1, 2 and 4 streams and a placement campaign 0,0 against
// 0,1, end to end in a lab, and checks that every run is stored and the
// placement campaign names the faster placement and the CPUs.
func TestLabCampaigns(t *testing.T) {
	h := newLab(t, "t-bdrv")
	for _, engineName := range []string{"iperf3", "iperf2"} {
		t.Run(engineName, func(t *testing.T) {
			d := labDriver(t, engineName, h)
			if err := d.Check(); err != nil {
				t.Fatal(err)
			}
			db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "r.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			doc, err := h.Doctor(lab.A)
			if err != nil {
				t.Fatal(err)
			}
			run := Params{Test: agent.Test{Params: engine.Params{Duration: 2 * time.Second, Interval: time.Second}}}
			sweep := &Campaign{Spec: Spec{Driver: engineName, Peer: "lab:t-bdrv", Label: "sweep", Repeat: 1, Streams: []int{1, 2, 4}, Run: run},
				Driver: d, Store: db, ClientDoctor: doc, ServerDoctor: doc, Iface: lab.Iface, Reporter: NewTextReporter(testWriter{t}, false)}
			s, outs, err := sweep.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(outs) != 3 || len(s.Points) != 3 || s.Best == nil {
				t.Fatalf("sweep: %d runs, summary %+v", len(outs), s)
			}
			for i, n := range []int{1, 2, 4} {
				if s.Points[i].Streams != n || s.Points[i].MedianGbps <= 0 || len(outs[i].Run.Intervals) < 2 {
					t.Errorf("sweep point %d: %+v", i, s.Points[i])
				}
			}
			place := &Campaign{Spec: Spec{Driver: engineName, Peer: "lab:t-bdrv", Label: "place", Repeat: 2,
				Placements: []agent.Pinning{{Client: []int{0}, Server: []int{0}}, {Client: []int{0}, Server: []int{1}}}, Run: run},
				Driver: d, Store: db, ClientDoctor: doc, ServerDoctor: doc, Iface: lab.Iface}
			ps, _, err := place.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			explain.WriteSummary(&text, ps)
			t.Logf("\n%s", text.String())
			// Which placement wins is the lab's to say (on a veth the
			// receive softirq runs on the sender's CPU, which favours 0,0
			// on this VM); the summary must name the faster one.
			faster := ps.Points[0]
			if ps.Points[1].MedianGbps > faster.MedianGbps {
				faster = ps.Points[1]
			}
			if ps.Best.Placement != faster.Placement {
				t.Errorf("best placement %s, but %s was faster", ps.Best.Placement, faster.Placement)
			}
			expl := strings.Join(ps.Explanation, " ")
			for _, want := range []string{"shared CPU 0", "server on CPU 1", "NET_RX softirq on CPU", "-A " + faster.Placement} {
				if !strings.Contains(expl, want) {
					t.Errorf("explanation lacks %q", want)
				}
			}
			runs, err := db.Runs(context.Background(), store.Query{})
			if err != nil || len(runs) != 7 {
				t.Fatalf("%d runs stored (%v), want 7", len(runs), err)
			}
			for _, r := range runs {
				if r.Engine != engineName || r.Gbps <= 0 || r.CampaignID == 0 {
					t.Errorf("stored run %+v", r)
				}
			}
			full, err := db.Run(context.Background(), runs[0].ID)
			if err != nil || len(full.ClientDoctor) == 0 || !strings.Contains(string(full.Result), `"cpu"`) || full.Raw == "" {
				t.Errorf("stored documents: %v", err)
			}
			c, err := db.Campaign(context.Background(), ps.CampaignID)
			if err != nil || c.Summary == nil || c.FinishedAt.IsZero() {
				t.Errorf("campaign %+v %v", c, err)
			}
		})
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// killableCampaign runs a long iperf3 repeat campaign into db, printing
// each stored run ID, for TestKilledCampaign to kill.
func killableCampaign(db, labName string) int {
	s, err := store.Open(context.Background(), db)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	h, err := NewLabHosts(labName)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	c := &Campaign{Spec: Spec{Driver: "iperf3", Peer: "lab:" + labName, Repeat: 50, Run: Params{Test: agent.Test{Params: engine.Params{Duration: time.Second, Interval: time.Second}}}},
		Driver: &Iperf3{Hosts: h}, Store: s, Reporter: idPrinter{}}
	if _, _, err := c.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}

type idPrinter struct{}

func (idPrinter) RunStarting(int, int, Point, time.Duration)   {}
func (idPrinter) Interval(int, result.Interval)                {}
func (idPrinter) RunDone(_, _ int, id int64, _ *result.Result) { fmt.Println(id) }
func (idPrinter) Finish()                                      {}

// TestKilledCampaign kills a campaign with SIGKILL while it runs and
// checks the database: readable, intact, every run reported stored
// present, the campaign unfinished.
func TestKilledCampaign(t *testing.T) {
	newLab(t, "t-kill")
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Fatal("iperf3 is not installed: apt-get install iperf3")
	}
	db := filepath.Join(t.TempDir(), "r.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "BENCH_TEST_CAMPAIGN_DB="+db, "BENCH_TEST_LAB=t-kill")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var stored []int64
	sc := bufio.NewScanner(out)
	for len(stored) < 2 && sc.Scan() {
		id, err := strconv.ParseInt(sc.Text(), 10, 64)
		if err != nil {
			t.Fatalf("campaign printed %q", sc.Text())
		}
		stored = append(stored, id)
	}
	time.Sleep(500 * time.Millisecond) // mid-run: the third run is under way
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	if len(stored) < 2 {
		t.Fatalf("campaign stored %d runs before the kill: %s", len(stored), stderr.String())
	}
	s, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatalf("database after SIGKILL: %v", err)
	}
	defer s.Close()
	runs, err := s.Runs(context.Background(), store.Query{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) < len(stored) {
		t.Fatalf("%d runs in the database, %d were reported stored", len(runs), len(stored))
	}
	for i, id := range stored {
		if runs[i].ID != id || runs[i].Gbps <= 0 || !json.Valid(runs[i].Result) {
			t.Errorf("run %d after the kill: %+v", id, runs[i])
		}
	}
	if c, err := s.Campaign(context.Background(), 1); err != nil || !c.FinishedAt.IsZero() {
		t.Errorf("killed campaign: %+v %v", c, err)
	}
}

// benchSchema is docs/schema/bench-v1.schema.json, compiled.
func benchSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	return testutil.Schema(t, "../../docs/schema/bench-v1.schema.json")
}
