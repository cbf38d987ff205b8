package report

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/bench"
	"github.com/linerate/linerate/internal/store"
	"github.com/linerate/linerate/internal/testbin"
)

// TestLabRunReport runs the README's main job for real — `linerate lab
// run`: a lab in network namespaces, doctor, bench, tune, bench, report —
// and checks the report it ends with: written where the demo says,
// self-contained, holding the medians of the results database it came
// from and what tuning did to them, and rendered by headless Chromium,
// light and dark, without a console message, exception or error log
// entry. With -update, the top of the page becomes docs/img/report.png
// and docs/img/report-dark.png, as the README shows them.
func TestLabRunReport(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("TestLabRunReport needs root (network namespaces) and CI=true: run it with sudo")
		}
		t.Skip("needs root (network namespaces)")
	}
	if testing.Short() {
		t.Skip("runs the whole demo")
	}
	browser := chromium(t)
	dir := t.TempDir()
	bin := testbin.Build(t, "../../cmd/linerate")
	out := filepath.Join(dir, "demo")
	cmd := exec.Command(bin, "lab", "run", "--name", "t-rdemo", "-o", out, "--json")
	cmd.Env = append(os.Environ(), "LINERATE_STATE_DIR="+filepath.Join(dir, "state"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("lab run: %v\n%s", err, stderr.String())
	}
	var sum struct {
		Steps []struct {
			Name, Status, Detail string
		} `json:"steps"`
		Report    string  `json:"report"`
		LineRate  string  `json:"line_rate"`
		ProbeGbps float64 `json:"probe_gbps"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("lab run --json: %v\n%s", err, stdout.String())
	}
	reverted := false
	for _, s := range sum.Steps {
		if s.Status != "ok" && s.Status != "findings" {
			t.Errorf("step %s: %s %s", s.Name, s.Status, s.Detail)
		}
		reverted = reverted || s.Name == "tune revert"
	}
	if !reverted {
		t.Error("the demo did not revert its tune: a change outside the lab (a governor) would outlive it")
	}
	if sum.Report != filepath.Join(out, "report.html") || !strings.Contains(stderr.String(), "report: "+sum.Report) {
		t.Fatalf("the demo names its report %q; progress:\n%s", sum.Report, stderr.String())
	}
	page, err := os.ReadFile(sum.Report)
	if err != nil {
		t.Fatal(err)
	}
	checkSelfContained(t, "lab run", page)

	// The numbers are the database's: each bench's median, and the
	// verdict's sentence on tuning.
	st, err := store.Open(context.Background(), filepath.Join(out, "state", "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ds, err := Load(context.Background(), st, LoadOptions{Commands: bench.StoredCommands{}, Selection: Selection{Labels: []string{"demo-before-tune", "demo-after-tune"}},
		TuneDir: filepath.Join(out, "state", "tune")})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Campaigns) != 2 || len(ds.Runs) != 6 || len(ds.Tunes) != 1 || len(ds.Hosts) != 2 {
		t.Fatalf("the demo stored %d campaigns, %d runs, %d tunes, %d hosts; want 2, 6, 1, 2", len(ds.Campaigns), len(ds.Runs), len(ds.Tunes), len(ds.Hosts))
	}
	for _, c := range ds.Campaigns {
		if want := ">" + gbps(c.Points[0].MedianGbps) + "<"; !bytes.Contains(page, []byte(want)) {
			t.Errorf("campaign %s: median %s is not in the report", c.Label, want)
		}
	}
	before, after := ds.Campaigns[0].Points[0].MedianGbps, ds.Campaigns[1].Points[0].MedianGbps
	if want := "took the median from " + gbps(before) + " to " + gbps(after) + " Gbit/s"; !bytes.Contains(page, []byte(want)) {
		t.Errorf("the verdict does not say %q", want)
	}
	// The lab link's rate stands in for a NIC's line rate: the report has
	// a ceiling, the waterfall down to it, and what the better bench
	// achieved of it (on a machine loaded enough, tune may not help: the
	// verdict names the better median, whichever it is).
	for _, want := range []string{"Achieved " + gbps(max(before, after)) + " of ", "standing in for a NIC&#39;s line rate", "Ceiling waterfall", " Gbit/s ceiling."} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the report does not say %q", want)
		}
	}
	t.Logf("demo: lab0 shaped to %s (the probe: %.2f Gbit/s), median %s Gbit/s before tune, %s after", sum.LineRate, sum.ProbeGbps, gbps(before), gbps(after))

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := startChromium(ctx, browser, filepath.Join(dir, "profile"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	for _, mode := range []struct {
		name string
		dark bool
		png  string
	}{{"light", false, "report.png"}, {"dark", true, "report-dark.png"}} {
		s, err := c.shoot(ctx, "file://"+sum.Report, 1280, 0, mode.dark, false)
		if err != nil {
			t.Fatalf("%s: %v", mode.name, err)
		}
		for _, p := range s.Problems {
			t.Errorf("%s: %s", mode.name, p)
		}
		if len(s.PNG) < 10000 || s.Height < 2000 {
			t.Errorf("%s: screenshot %d bytes of a page %d px tall: the page did not render", mode.name, len(s.PNG), s.Height)
		}
		if out := os.Getenv("REPORT_PNG_DIR"); out != "" {
			if err := os.WriteFile(filepath.Join(out, "labrun-"+mode.png), s.PNG, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if *update {
			top, err := c.shoot(ctx, "file://"+sum.Report, 1280, docsPNGHeight, mode.dark, false)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join("..", "..", "docs", "img", mode.png), top.PNG, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
