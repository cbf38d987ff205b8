package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/linerate/linerate/internal/tune"
)

// RunSchema names the JSON summary the demo writes to its output directory.
const RunSchema = "linerate.lab-run/v1"

// RunConfig says how to run the demo.
type RunConfig struct {
	// Lab is the lab the demo brings up and removes. It must not exist.
	Lab Config
	// OutDir receives one file per step and summary.json;
	// "" means ./linerate-demo-<timestamp>.
	OutDir string
	// Self is the linerate binary run inside the lab hosts;
	// "" means /proc/self/exe, this very binary.
	Self string
	// Progress receives one line per step as it happens; nil discards.
	Progress io.Writer
}

// Step outcomes.
const (
	StepOK        = "ok"        // the step worked and found nothing
	StepFindings  = "findings"  // the step worked and found something (exit 1)
	StepFailed    = "failed"    // the step did not work
	StepCancelled = "cancelled" // interrupted before or while running
)

// StepResult is the outcome of one step of the demo.
type StepResult struct {
	Name    string  `json:"name"`
	Status  string  `json:"status"`
	Detail  string  `json:"detail,omitempty"`
	Output  string  `json:"output,omitempty"`
	Seconds float64 `json:"seconds"`
}

// RunResult is what the demo did; it is also written to OutDir/summary.json.
type RunResult struct {
	Schema   string       `json:"schema"`
	Lab      string       `json:"lab"`
	Scenario Scenario     `json:"scenario"`
	OutDir   string       `json:"out_dir"`
	Steps    []StepResult `json:"steps"`
	// LineRate is the rate the lab's tbf shapes lab0 to, standing in for a
	// NIC's line rate ("25gbit"); ProbeGbps what the healthy lab carried
	// in the probe that picked it (0 when the scenario or --rate set it).
	LineRate  string  `json:"line_rate,omitempty"`
	ProbeGbps float64 `json:"probe_gbps,omitempty"`
	// Report is the report the demo ends with; "" when it was not written.
	Report string `json:"report,omitempty"`
}

// Failed lists the steps that failed.
func (r *RunResult) Failed() []string {
	var out []string
	for _, s := range r.Steps {
		if s.Status == StepFailed {
			out = append(out, s.Name)
		}
	}
	return out
}

// step is one stage of the demo.
type step struct {
	name string
	file string // output file name in OutDir
	run  func(ctx context.Context, d *demo, out io.Writer) (findings bool, err error)
}

// The demo's benches: host a sends to host b (the host the scenarios
// shape), three runs of 5 s after a 1 s warm-up each, labelled so that
// the report can put them side by side.
const (
	demoLabelBefore = "demo-before-tune"
	demoLabelAfter  = "demo-after-tune"
)

func demoBench(label string) []string {
	return []string{"bench", "", "-t", "5", "-O", "1", "--repeat", "3", "--label", label}
}

// demoSteps is the demo, in order, between bringing the lab up and down.
func demoSteps() []step {
	return []step{
		{"doctor on a", "doctor-a.txt", linerateIn(A, "doctor", "--iface", Iface, "--peer", AddrB)},
		{"doctor on b", "doctor-b.txt", linerateIn(B, "doctor", "--iface", Iface)},
		{"bench", "bench.txt", linerateHere(demoBench(demoLabelBefore)...)},
		{"tune", "tune.txt", linerateIn(B, "tune", "--iface", Iface, "--apply")},
		{"bench after tune", "bench-tuned.txt", linerateHere(demoBench(demoLabelAfter)...)},
		{"report", "report.txt", linerateHere("report", "--label", demoLabelBefore, "--label", demoLabelAfter,
			"--title", "linerate lab demo", "-o", ReportFile)},
	}
}

// The probe: a veth has no line rate, and the demo's story (line rate →
// TCP goodput → what was achieved, before and after tune) needs one that
// the machine can fill once tuned, fast or slow. So, unless the scenario
// or --rate shapes the lab, the demo first measures what the healthy,
// unshaped lab carries (one run of 4 s after a 1 s warm-up) and shapes
// lab0 to the fastest line rate not above that: what a tuned flow then
// fills, while small-buffers' window holds the first bench below it
// (demoConfig: a quarter of what the healthy lab carries). Rates at most 1.5 times apart keep
// the line rate close to what the machine can do: with Ethernet's alone,
// a probe of 23.6 Gbit/s gave 10 and a first bench of 9.23, 93% of the
// ceiling. On a machine shared with other work neither end is sure: the
// load can change after the probe.
const probeLabel = "demo-probe"

// lineRates are the line rates the demo may shape to, bits per second:
// 1, 1.5, 2, 2.5, 3, 4, 5, 6 and 8 times a power of ten, from 100 Mbit/s
// to 400 Gbit/s (Ethernet's 1, 2.5, 5, 10, 25, 40, 50, 100, 200 and 400
// among them).
func lineRates() []Rate {
	var out []Rate
	for mag := Rate(100e6); mag <= 100e9; mag *= 10 {
		for _, m := range []Rate{10, 15, 20, 25, 30, 40, 50, 60, 80} {
			if r := m * mag / 10; r <= 400e9 {
				out = append(out, r)
			}
		}
	}
	return out
}

// The demo's small-buffers: MTU 1500 and 16 KiB in host b, a window of a
// few segments, so that the first bench stays well below what the machine
// can do however busy it is. 64 KiB at MTU 9000 (the scenario's own) is a
// window of three or four segments, which a busy machine's round trips
// barely slow: at load 4.5 on 2 CPUs it carried 6.2 Gbit/s (the median of
// 3 runs) where the healthy lab carried 9.05, two thirds; 16 KiB at MTU
// 1500 carried 2.9 where the healthy lab carried 12.1, a quarter (under
// load 20: 0.7-0.9 against 3-3.9). A smaller buffer at MTU 9000 is below
// two segments and stalls (32 KiB: 0.17-0.3 Gbit/s).
const (
	demoMTU       = 1500
	demoBufferMax = 16384
)

// demoConfig gives small-buffers the demo's MTU and buffer unless the
// caller chose an MTU or a buffer.
func demoConfig(c Config) Config {
	if c.Scenario == SmallBuffers && c.MTU == 0 && c.BufferMax == 0 {
		c.MTU, c.BufferMax = demoMTU, demoBufferMax
	}
	return c
}

// fallbackRate is the demo's line rate when the probe measured nothing.
const fallbackRate Rate = 10e9

// demoRate is the fastest of lineRates not above gbps (the slowest, 100
// Mbit/s, below that), or 10 Gbit/s when the probe measured nothing.
func demoRate(gbps float64) Rate {
	rates := lineRates()
	if !(gbps > 0) {
		return fallbackRate
	}
	best := rates[0]
	for _, r := range rates {
		if float64(r) <= gbps*1e9 {
			best = r
		}
	}
	return best
}

// probe runs the probe bench and returns its step and the rate the
// receiver measured, 0 when it measured none.
func (d *demo) probe(ctx context.Context, dir string) (StepResult, float64) {
	st := step{"probe", "probe.json", linerateHere("bench", "", "-t", "4", "-O", "1", "--label", probeLabel, "--json")}
	sr := runStep(ctx, d, dir, st)
	if sr.Status != StepOK {
		return sr, 0
	}
	b, err := os.ReadFile(sr.Output)
	if err != nil {
		sr.Status, sr.Detail = StepFailed, err.Error()
		return sr, 0
	}
	var run struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal(b, &run); err != nil {
		sr.Status, sr.Detail = StepFailed, fmt.Sprintf("the probe's output is not a bench document (%v): the lab is shaped to %s", err, fallbackRate)
		return sr, 0
	}
	bps := run.End.SumReceived.BitsPerSecond
	if !(bps > 0) || math.IsInf(bps, 0) {
		sr.Status, sr.Detail = StepFailed, fmt.Sprintf("the probe measured no rate: the lab is shaped to %s", fallbackRate)
		return sr, 0
	}
	gbps := bps / 1e9
	sr.Detail = fmt.Sprintf("the healthy lab carried %.2f Gbit/s", gbps)
	return sr, gbps
}

// ReportFile is the report the demo writes in its output directory.
const ReportFile = "report.html"

// demo is what the steps share.
type demo struct {
	name string
	self string
	// state is the state directory of the commands the demo runs (tune's
	// journals, the results database): the output directory's, so the
	// demo leaves nothing behind in the user's own state.
	state string
	// out is the output directory.
	out string
}

// linerateIn runs `linerate ARGS` inside host h. Exit 1 means the command
// worked and found something (docs/architecture.md, "Exit codes"); other non-zero exits
// are failures, described by the last line the command wrote to stderr.
func linerateIn(h Host, args ...string) func(context.Context, *demo, io.Writer) (bool, error) {
	return func(ctx context.Context, d *demo, out io.Writer) (bool, error) {
		return d.linerate(ctx, out, args, func(cmd *exec.Cmd) error { return Start(d.name, h, cmd) })
	}
}

// linerateHere runs `linerate ARGS` in this process's namespaces (bench
// across the lab, report), in the output directory, with "" in args
// standing for the lab as a bench peer (lab:NAME).
func linerateHere(args ...string) func(context.Context, *demo, io.Writer) (bool, error) {
	return func(ctx context.Context, d *demo, out io.Writer) (bool, error) {
		a := make([]string, len(args))
		for i, x := range args {
			if x == "" {
				x = "lab:" + d.name
			}
			a[i] = x
		}
		return d.linerate(ctx, out, a, func(cmd *exec.Cmd) error {
			cmd.Dir = d.out
			return cmd.Start()
		})
	}
}

// linerate runs the demo's binary with args, started by start, with the
// demo's state directory (tune's journals, the results database).
func (d *demo) linerate(ctx context.Context, out io.Writer, args []string, start func(*exec.Cmd) error) (bool, error) {
	cmd := exec.CommandContext(ctx, d.self, args...)
	cmd.Env = append(os.Environ(), "LINERATE_STATE_DIR="+d.state, "NO_COLOR=1")
	var stderr bytes.Buffer
	cmd.Stdout = out
	cmd.Stderr = io.MultiWriter(out, &stderr)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	if err := start(cmd); err != nil {
		return false, err
	}
	err := cmd.Wait()
	code, ok := ExitCode(err)
	switch {
	case !ok:
		return false, err
	case code == 0:
		return false, nil
	case code == 1:
		return true, nil
	}
	msg := lastLine(stderr.String())
	if msg == "" {
		msg = "no message"
	}
	return false, fmt.Errorf("linerate %s exited %d: %s", args[0], code, msg)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// Run runs the demo: it brings lab rc.Lab up, runs each step with its
// output in a file of rc.OutDir, and brings the lab down again, also when a
// step fails or ctx is cancelled. A failed step does not stop the demo: the
// result says which ones failed. The error is about the demo itself (the lab
// could not be made, the output could not be written, ctx was cancelled).
func Run(ctx context.Context, rc RunConfig) (res *RunResult, err error) {
	c, err := rc.Lab.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := requireRoot(); err != nil {
		return nil, err
	}
	progress := rc.Progress
	if progress == nil {
		progress = io.Discard
	}
	d := &demo{name: c.Name, self: rc.Self}
	if d.self == "" {
		d.self = "/proc/self/exe"
	}
	dir := rc.OutDir
	if dir == "" {
		dir = "linerate-demo-" + time.Now().Format("20060102-150405")
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	d.state, d.out = filepath.Join(dir, "state"), dir
	if exists, err := labExists(c.Name); err != nil {
		return nil, err
	} else if exists {
		return nil, fmt.Errorf("lab %s already exists and the demo removes its lab when done: pass another --name, or run 'linerate lab down --name %s' first", c.Name, c.Name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the output directory: %w", err)
	}
	res = &RunResult{Schema: RunSchema, Lab: c.Name, Scenario: c.Scenario, OutDir: dir, Steps: []StepResult{}}

	c = demoConfig(c)
	// Without a rate of its own (small-buffers, healthy, mtu-mismatch), the
	// lab comes up healthy first, for the probe that picks its line rate.
	probing := c.lineRate() == 0
	first := c
	if probing {
		first.Scenario = Healthy
	}
	up, err := Up(ctx, first)
	if err != nil {
		return res, err
	}
	fmt.Fprintf(progress, "lab %s is up (scenario %s)\n", c.Name, first.Scenario)
	defer func() {
		// The lab goes whatever happened, with a context of its own:
		// ctx may be the reason we are leaving.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		// What tune changed goes back first, also after a failure or
		// Ctrl-C: in a lab, its sysctls die with the namespace, but a
		// change outside it (a CPU governor) would outlive the demo.
		if sr := d.revertTune(dctx, dir); sr != nil {
			res.Steps = append(res.Steps, *sr)
			report(progress, *sr)
		}
		if werr := writeSummary(res); werr != nil {
			err = errors.Join(err, werr)
		}
		if _, derr := Down(dctx, c.Name); derr != nil {
			err = errors.Join(err, derr)
			return
		}
		fmt.Fprintf(progress, "lab %s is down\n", c.Name)
	}()
	if probing {
		sr, gbps := d.probe(ctx, dir)
		res.Steps = append(res.Steps, sr)
		report(progress, sr)
		if ctx.Err() != nil {
			return res, fmt.Errorf("demo interrupted: %w", context.Cause(ctx))
		}
		c.Rate = demoRate(gbps)
		res.ProbeGbps = gbps
		again, err := Up(ctx, c)
		if err != nil {
			return res, err
		}
		up.Scenario, up.Changes = again.Scenario, append(up.Changes, again.Changes...)
		fmt.Fprintf(progress, "lab %s is reshaped (scenario %s, lab0 shaped to %s, standing in for a NIC's line rate)\n", c.Name, c.Scenario, c.Rate)
	}
	res.Scenario, res.LineRate = c.Scenario, c.lineRate().String()
	if err := writeLabFile(ctx, filepath.Join(dir, "lab-up.txt"), up, c); err != nil {
		return res, err
	}

	for _, st := range demoSteps() {
		sr := runStep(ctx, d, dir, st)
		res.Steps = append(res.Steps, sr)
		report(progress, sr)
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("demo interrupted: %w", context.Cause(ctx))
	}
	if last := res.Steps[len(res.Steps)-1]; last.Status == StepOK {
		res.Report = filepath.Join(dir, ReportFile)
		fmt.Fprintf(progress, "report: %s\n", res.Report)
	}
	return res, nil
}

// report prints a step's outcome as a progress line.
func report(progress io.Writer, sr StepResult) {
	switch sr.Status {
	case StepFailed:
		fmt.Fprintf(progress, "failed: %s: %s (output in %s)\n", sr.Name, sr.Detail, sr.Output)
	default:
		fmt.Fprintf(progress, "%s: %s (output in %s)\n", sr.Status, sr.Name, sr.Output)
	}
}

// revertTune undoes the demo's tune in host b when it left changes to
// revert (a journal in the demo's state), and returns the step; nil when
// there is nothing to revert.
func (d *demo) revertTune(ctx context.Context, dir string) *StepResult {
	ino, err := NetNSInode(d.name, B)
	if err != nil {
		return nil
	}
	j, err := tune.Last(filepath.Join(d.state, "tune"), ino)
	if errors.Is(err, tune.ErrNoJournal) {
		return nil // no journal with changes: tune did not run, or changed nothing
	}
	if err != nil {
		// The journals cannot be trusted or read: say so, never pass over it.
		return &StepResult{Name: "tune revert", Status: StepFailed, Detail: err.Error()}
	}
	sr := runStep(ctx, d, dir, step{"tune revert", "tune-revert.txt", linerateIn(B, "tune", "revert", j.ID)})
	return &sr
}

// runStep runs one step with its output in dir/st.file.
func runStep(ctx context.Context, d *demo, dir string, st step) StepResult {
	sr := StepResult{Name: st.name}
	if ctx.Err() != nil {
		sr.Status = StepCancelled
		return sr
	}
	sr.Output = filepath.Join(dir, st.file)
	f, err := os.Create(sr.Output)
	if err != nil {
		sr.Status, sr.Detail = StepFailed, err.Error()
		return sr
	}
	start := time.Now()
	findings, err := st.run(ctx, d, f)
	sr.Seconds = time.Since(start).Round(time.Millisecond).Seconds()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case ctx.Err() != nil:
		sr.Status = StepCancelled
	case err != nil:
		sr.Status, sr.Detail = StepFailed, err.Error()
	case findings:
		sr.Status = StepFindings
	default:
		sr.Status = StepOK
	}
	return sr
}

// labExists reports whether any namespace or record of lab name exists.
func labExists(name string) (bool, error) {
	for _, ns := range labNamespaces(name) {
		st, err := probeNS(nsPath(ns))
		if err != nil || st != nsAbsent {
			return true, err
		}
	}
	dir, err := labDir()
	if err != nil {
		return false, err
	}
	rec, err := readRecord(dir, name)
	return rec != nil, err
}

// writeLabFile records what up did and the lab it made, shaped as c.
func writeLabFile(ctx context.Context, path string, up *UpResult, c Config) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "linerate lab up --name %s --scenario %s", up.Name, up.Scenario)
	if c.Rate != 0 {
		fmt.Fprintf(&b, " --rate %s", c.Rate)
	}
	if c.MTU != 0 {
		fmt.Fprintf(&b, " --mtu %d", c.MTU)
	}
	if c.BufferMax != 0 {
		fmt.Fprintf(&b, "   # tcp_rmem and tcp_wmem max %d in host b", c.BufferMax)
	}
	b.WriteByte('\n')
	for _, ch := range up.Changes {
		fmt.Fprintf(&b, "  %s\n", ch)
	}
	b.WriteByte('\n')
	rep, err := Status(ctx, up.Name)
	if err != nil {
		return err
	}
	if err := rep.WriteText(&b); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	jpath := strings.TrimSuffix(path, ".txt") + ".json"
	if err := os.WriteFile(jpath, append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", jpath, err)
	}
	return nil
}

func writeSummary(res *RunResult) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(res.OutDir, "summary.json")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
