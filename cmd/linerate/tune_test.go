package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/testbin"
	"github.com/linerate/linerate/internal/testutil"
	"github.com/linerate/linerate/internal/tune"
)

// tuneHelperEnv makes the test binary run linerate (TestTuneCLIHelper):
// the crash test kills it, the lab test runs it inside a lab host.
const tuneHelperEnv = "LINERATE_TUNE_CLI_HELPER"

// TestTuneCLIHelper is not a test: it is linerate, for subprocesses.
func TestTuneCLIHelper(t *testing.T) {
	if os.Getenv(tuneHelperEnv) != "1" {
		// CI: not a test but the CLI run as a child process; skips when not one.
		t.Skip("helper process")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(run(args, os.Stdin, os.Stdout, os.Stderr))
}

// tuneHelper returns a command running linerate ARGS through the test
// binary at bin.
func tuneHelper(bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, append([]string{"-test.run=^TestTuneCLIHelper$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), tuneHelperEnv+"=1")
	return cmd
}

func tuneRun(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// tuneNeedsRoot skips a test without root, and fails it when CI=true.
func tuneNeedsRoot(t *testing.T, why string) {
	t.Helper()
	testbin.NeedRoot(t, why)
}

// tuneCopyTree copies a committed test host tree, links as links.
func tuneCopyTree(t *testing.T, name string) string {
	t.Helper()
	return testutil.CopyTree(t, hostTree(name))
}

// tuneTreeDiff lists the paths whose bytes differ.
func tuneTreeDiff(want, got map[string]string) []string {
	var d []string
	for p, w := range want {
		if got[p] != w {
			d = append(d, fmt.Sprintf("%s: %q, want %q", p, strings.TrimPrefix(got[p], "file:"), strings.TrimPrefix(w, "file:")))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			d = append(d, p+": new")
		}
	}
	return d
}

// ryzenX4Copy is a copy of the tree of the 100 GbE home lab whose
// ConnectX-5 trained at x4 (testdata/hosts/ryzen-9900x-cx5-x4), with Debian's
// irqbalance configuration, so that every kind of file-backed change is planned.
func ryzenX4Copy(t *testing.T) string {
	t.Helper()
	root := tuneCopyTree(t, "ryzen-9900x-cx5-x4")
	conf := "#Configuration for the irqbalance daemon\n\n#Should irqbalance be enabled?\nENABLED=\"1\"\n#Balance the IRQs only once?\nONESHOT=\"0\"\n"
	if err := os.MkdirAll(filepath.Join(root, "etc/default"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/default/irqbalance"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func journalCount(t *testing.T, state string) int {
	t.Helper()
	js, err := tune.List(filepath.Join(state, "tune"))
	if err != nil {
		t.Fatal(err)
	}
	return len(js)
}

// TestTunePlans checks the CLI's plans on the captured hosts against what
// their owners did by hand.
func TestTunePlans(t *testing.T) {
	t.Setenv("LINERATE_STATE_DIR", t.TempDir())
	tree := func(name string) string { return filepath.Join("..", "..", "testdata", "hosts", name) }

	code, out, stderr := tuneRun(t, "tune", "--root", tree("ryzen-9900x-cx5-x4"), "--app-cpus", "6", "--json")
	var p tune.Plan
	if err := json.Unmarshal([]byte(out), &p); code != 0 || err != nil {
		t.Fatalf("ryzen x4 home lab: exit %d, %v\n%s", code, err, stderr)
	}
	moved := 0
	for _, c := range p.Changes {
		if c.Kind != tune.KindIRQ {
			continue
		}
		moved++
		if cpu, _ := strconv.Atoi(c.After); cpu < 7 || cpu > 11 {
			t.Errorf("ryzen x4 home lab: %s → %s, want 7-11", c.Target, c.After)
		}
	}
	// Twelve of the 13 IRQs are on 7-11 already and stay; IRQ 111 (on
	// CPU 3) moves.
	if moved != 1 || cpulist.Format(tune.AppCPUs(&p)) != "6" {
		t.Errorf("ryzen x4 home lab: %d IRQs moved, application on %v", moved, tune.AppCPUs(&p))
	}

	code, out, _ = tuneRun(t, "tune", "--root", tree("xeon-xl710-gen2-x4"))
	for _, want := range []string{
		"net.core.rmem_max                   212992 → 16777216",
		"ethtool -L ens2f0np0 combined 8  [queues.too_few]",
		"tune changes it only when asked (--mtu 9000)",
		"irq 46 i40e-ens2f0np0-TxRx-0",
		"Run your application on CPUs 10,30",
		"Nothing changed.",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("xl710 gen2 x4: exit %d, plan lacks %q:\n%s", code, want, out)
		}
	}
}

// TestTuneRefusals: bad input changes nothing and exits 2 with one line.
func TestTuneRefusals(t *testing.T) {
	state := t.TempDir()
	t.Setenv("LINERATE_STATE_DIR", state)
	root := ryzenX4Copy(t)
	orig := testutil.TreeState(t, root)
	for _, args := range [][]string{
		{"tune", "--root", root, "--apply", "--iface", "eth9"},
		{"tune", "--root", root, "--apply", "--app-cpus", "12"},
		{"tune", "--root", root, "--apply", "--irq-cpus", "7,40"},
		{"tune", "--root", root, "--apply", "--irq-cpus", "6-7", "--app-cpus", "6"},
		{"tune", "--root", root, "--apply", "--app-cpus", "x"},
		{"tune", "--root", root, "--apply", "--profile", "fast"},
		{"tune", "--root", root, "--apply", "--mtu", "20"},
		{"tune", "--root", root, "--iface", "eth9"},
		{"tune", "revert"},
		{"tune", "revert", "--last"},
		{"tune", "revert", "../../etc/passwd"},
	} {
		code, out, stderr := tuneRun(t, args...)
		if code != 2 || out != "" || !strings.HasPrefix(stderr, "linerate: ") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one error line", args[1:], code, out, stderr)
		}
	}
	if d := tuneTreeDiff(orig, testutil.TreeState(t, root)); len(d) > 0 {
		t.Errorf("a refusal changed the tree: %v", d)
	}
	if n := journalCount(t, state); n != 0 {
		t.Errorf("a refusal wrote %d journal(s)", n)
	}
	code, _, stderr := tuneApplyAsUser(t)
	if code != 2 || !strings.Contains(stderr, "tune --apply changes this host and needs root") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("--apply without root: exit %d, %q", code, stderr)
	}
}

// tuneApplyAsUser runs `tune --apply` on the live host without root: in
// process when the tests are not root, else as nobody.
func tuneApplyAsUser(t *testing.T) (int, string, string) {
	t.Helper()
	code, out, stderr, _ := tuneAsUser(t, "tune", "--apply")
	return code, out, stderr
}

// tuneAsUser runs linerate ARGS without root — in process when the tests
// are not root, else as nobody — with a fresh home directory the user may
// write and the state directory home/state, not yet made. It returns the
// exit code, stdout, stderr and home.
func tuneAsUser(t *testing.T, args ...string) (int, string, string, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "linerate-tune-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(home, "state")
	if os.Geteuid() != 0 {
		t.Setenv("LINERATE_STATE_DIR", state)
		code, out, stderr := tuneRun(t, args...)
		return code, out, stderr, home
	}
	if err := os.Chown(home, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "linerate.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := tuneHelper(bin, args...)
	cover, collect := nobodyCoverDir(t, dir)
	cmd.Env = append(cmd.Env, "LINERATE_STATE_DIR="+state, "HOME="+home)
	cmd.Env = append(cmd.Env, cover...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	code, ok := lab.ExitCode(cmd.Run())
	collect()
	if !ok {
		t.Fatal("running as nobody failed")
	}
	return code, out.String(), errb.String(), home
}

// nobodyCoverDir gives a child that runs as nobody (uid 65534) a coverage
// directory it may write, below dir, when the tests count coverage (go
// test -cover hands the test binary GOCOVERDIR, which its children
// inherit and nobody cannot write: the child then adds "coverage
// meta-data emit failed" to its stderr). It returns the environment entry
// (none when not counting) and a function that copies what the child wrote
// into the test's own coverage directory, so that its coverage counts.
func nobodyCoverDir(t *testing.T, dir string) (env []string, collect func()) {
	t.Helper()
	parent := os.Getenv("GOCOVERDIR")
	if parent == "" {
		return nil, func() {}
	}
	d := filepath.Join(dir, "gocoverdir")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	return []string{"GOCOVERDIR=" + d}, func() {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(d, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			// Meta-data files are named by their hash: one copy is enough.
			f, err := os.OpenFile(filepath.Join(parent, e.Name()), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			f.Write(b)
			f.Close()
		}
	}
}

// TestTuneRevertAsUser: without root, revert says it needs root (not that
// there is no journal), and neither revert nor list creates a state
// directory: both only read.
func TestTuneRevertAsUser(t *testing.T) {
	for _, args := range [][]string{
		{"tune", "revert", "--last"},
		{"tune", "revert", "20250120T153012.123456Z"},
		{"tune", "list"},
	} {
		code, out, stderr, home := tuneAsUser(t, args...)
		if args[1] == "list" {
			if code != 0 || out != "no tune journals (linerate tune --apply writes one)\n" {
				t.Errorf("%v as a user: exit %d, %q %q", args[1:], code, out, stderr)
			}
		} else if code != 2 || !strings.Contains(stderr, "needs root: run it with sudo") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v as a user: exit %d, stderr %q; want exit 2 saying it needs root", args[1:], code, stderr)
		}
		if entries, _ := os.ReadDir(home); len(entries) > 0 {
			t.Errorf("%v as a user created %s in its home directory", args[1:], entries[0].Name())
		}
	}
}

// TestTuneApplyRevert applies to a tree copy, lists, reverts with a value
// changed behind the journal's back, then forces.
func TestTuneApplyRevert(t *testing.T) {
	state := testutil.Scratch(t)
	t.Setenv("LINERATE_STATE_DIR", state)
	root := ryzenX4Copy(t)
	orig := testutil.TreeState(t, root)
	code, out, stderr := tuneRun(t, "tune", "--root", root, "--app-cpus", "6", "--apply")
	// 5 sysctls, 12 governors, irqbalance's file and IRQ 111: 19 changes.
	if code != 0 || !strings.Contains(out, "19 applied, 0 refused, 0 skipped") || !strings.Contains(out, "Run your application on CPU 6.") {
		t.Fatalf("apply: exit %d\n%s%s", code, out, stderr)
	}
	if len(tuneTreeDiff(orig, testutil.TreeState(t, root))) != 19 {
		t.Errorf("apply changed %d files, want 19", len(tuneTreeDiff(orig, testutil.TreeState(t, root))))
	}
	code, out, _ = tuneRun(t, "tune", "list", "--json")
	var list []struct {
		ID      string `json:"id"`
		State   string `json:"state"`
		Planned int    `json:"planned"`
		Root    string `json:"root"`
	}
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list) != 1 || list[0].State != "applied" || list[0].Planned != 19 || list[0].Root != root {
		t.Fatalf("list: exit %d, %v: %s", code, err, out)
	}
	if code, out, _ = tuneRun(t, "tune", "list"); code != 0 || !strings.Contains(out, list[0].ID) || !strings.Contains(out, "applied") {
		t.Errorf("list: %s", out)
	}

	gov := filepath.Join(root, "sys/devices/system/cpu/cpu3/cpufreq/scaling_governor")
	if err := os.WriteFile(gov, []byte("schedutil\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = tuneRun(t, "tune", "revert", "--last")
	if code != 1 || !strings.Contains(out, "18 restored, 1 left alone, 0 failed") || !strings.Contains(out, `now "schedutil", tune set "performance"`) {
		t.Errorf("revert with a value changed since: exit %d\n%s", code, out)
	}
	if d := tuneTreeDiff(orig, testutil.TreeState(t, root)); len(d) != 1 || !strings.Contains(d[0], "schedutil") {
		t.Errorf("after revert: %v", d)
	}
	code, out, _ = tuneRun(t, "tune", "revert", list[0].ID, "--force")
	if code != 0 || !strings.Contains(out, "1 restored, 0 left alone") {
		t.Errorf("revert --force: exit %d\n%s", code, out)
	}
	if d := tuneTreeDiff(orig, testutil.TreeState(t, root)); len(d) > 0 {
		t.Errorf("after revert --force: %v", d)
	}
	if code, _, stderr = tuneRun(t, "tune", "revert", "--last"); code != 2 || !strings.Contains(stderr, "no journal with changes to revert") {
		t.Errorf("revert --last with nothing left: exit %d %q", code, stderr)
	}
}

// TestTuneKilledAtEveryStep kills `tune --apply` with SIGKILL after each
// step, once with the journal record on disk and the change not yet made,
// once after the change and its read-back; `revert --last` must then
// restore the tree byte for byte. The tree and state are reused from one
// kill to the next, so each revert must leave them exactly as found.
func TestTuneKilledAtEveryStep(t *testing.T) {
	state := testutil.Scratch(t)
	t.Setenv("LINERATE_STATE_DIR", state)
	root := ryzenX4Copy(t)
	orig := testutil.TreeState(t, root)
	args := []string{"tune", "--root", root, "--app-cpus", "6", "--apply"}
	code, out, _ := tuneRun(t, "tune", "--root", root, "--app-cpus", "6", "--json")
	var p tune.Plan
	if err := json.Unmarshal([]byte(out), &p); code != 0 || err != nil || len(p.Changes) < 3 {
		t.Fatalf("plan: exit %d, %v, %d changes", code, err, len(p.Changes))
	}
	for step := 1; step <= len(p.Changes); step++ {
		for _, phase := range []string{":journaled", ""} {
			at := strconv.Itoa(step) + phase
			killAt(t, args, at)
			changed := len(tuneTreeDiff(orig, testutil.TreeState(t, root)))
			if want := step - 1; phase == "" {
				want = step
				if changed != want {
					t.Fatalf("killed after %s: %d file(s) changed, want %d", at, changed, want)
				}
			} else if changed != want {
				t.Fatalf("killed after %s: %d file(s) changed, want %d", at, changed, want)
			}
			code, out, stderr := tuneRun(t, "tune", "revert", "--last")
			if code != 0 {
				t.Fatalf("revert after a kill at %s: exit %d\n%s%s", at, code, out, stderr)
			}
			if d := tuneTreeDiff(orig, testutil.TreeState(t, root)); len(d) > 0 {
				t.Fatalf("revert after a kill at %s left %v", at, d)
			}
		}
	}
	if n := journalCount(t, state); n != 2*len(p.Changes) {
		t.Errorf("%d journals, want one per kill (%d)", n, 2*len(p.Changes))
	}
}

// killAt runs linerate ARGS paused at step "N[:journaled]" and kills it
// with SIGKILL once it says it paused.
func killAt(t *testing.T, args []string, at string) {
	t.Helper()
	killAtIn(t, (*exec.Cmd).Start, args, at)
}

// killAtIn is killAt with the command started by start (lab.Start, to run
// it inside a lab host).
func killAtIn(t *testing.T, start func(*exec.Cmd) error, args []string, at string) {
	t.Helper()
	cmd := tuneHelper(os.Args[0], args...)
	cmd.Env = append(cmd.Env, pauseEnv+"="+at)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := start(cmd); err != nil {
		t.Fatal(err)
	}
	paused := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var seen []string
		for sc.Scan() {
			if strings.Contains(sc.Text(), "paused after step") {
				paused <- nil
				io.Copy(io.Discard, stderr)
				return
			}
			seen = append(seen, sc.Text())
		}
		paused <- fmt.Errorf("exited without pausing: %s", strings.Join(seen, "; "))
	}()
	select {
	case err = <-paused:
	case <-time.After(60 * time.Second):
		err = errors.New("did not pause within 60 s")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if err != nil {
		t.Fatalf("tune --apply paused at %s: %v", at, err)
	}
}

// TestTuneLab runs tune inside the receiving host of a small-buffers lab:
// tune --apply in b, iperf3 a → b across the tuned host (traffic still
// flows; how fast is scripts/bench-tune.sh's business, not a test's), then
// revert --last must put every sysctl of b back exactly.
func TestTuneLab(t *testing.T) {
	tuneNeedsRoot(t, "network namespaces")
	if _, err := exec.LookPath("iperf3"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("iperf3 is not installed")
		}
		t.Skip("iperf3 is not installed")
	}
	t.Setenv("LINERATE_STATE_DIR", t.TempDir())
	const name = "t-tune"
	t.Cleanup(func() { tuneRun(t, "lab", "down", "--name", name) })
	if code, out, stderr := tuneRun(t, "lab", "up", "--name", name, "--scenario", "small-buffers"); code != 0 {
		t.Fatalf("lab up: exit %d\n%s%s", code, out, stderr)
	}

	sysctls := labSysctls(t, name)
	if !strings.Contains(sysctls["/proc/sys/net/ipv4/tcp_rmem"], "65536") {
		t.Fatalf("small-buffers lab: b's tcp_rmem is %q", sysctls["/proc/sys/net/ipv4/tcp_rmem"])
	}

	code, out, stderr := labTune(t, name, "tune", "--json")
	var p tune.Plan
	if err := json.Unmarshal([]byte(out), &p); code != 0 || err != nil {
		t.Fatalf("plan in b: exit %d, %v\n%s", code, err, stderr)
	}
	for _, c := range p.Changes {
		if c.Kind != tune.KindSysctl {
			t.Fatalf("the plan in a lab host changes more than its sysctls: %+v", c)
		}
	}
	if len(p.Changes) == 0 || p.Root != "/" {
		t.Fatalf("plan in b: %+v", p)
	}
	code, out, stderr = labTune(t, name, "tune", "--apply")
	t.Logf("tune --apply in b:\n%s", out)
	if code != 0 {
		t.Fatalf("apply in b: exit %d\n%s%s", code, out, stderr)
	}
	if got := labSysctls(t, name)["/proc/sys/net/ipv4/tcp_rmem"]; got != "4096\t65536\t4194304" {
		t.Errorf("b's tcp_rmem after tune: %q", got)
	}
	t.Logf("iperf3 a → b after tune: %.2f Gbit/s", labIperf(t, name))

	code, out, stderr = labTune(t, name, "tune", "revert", "--last")
	if code != 0 {
		t.Fatalf("revert in b: exit %d\n%s%s", code, out, stderr)
	}
	now := labSysctls(t, name)
	for k, v := range sysctls {
		if now[k] != v {
			t.Errorf("%s in b after revert: %q, want %q", k, now[k], v)
		}
	}
	if len(now) != len(sysctls) {
		t.Errorf("b has %d sysctls after revert, %d before", len(now), len(sysctls))
	}
}

// TestTuneKilledAfterMTU: the MTU is a live driver setting, not a file. A
// `tune --iface lab0 --mtu 4000 --apply` in host b of a lab (MTU 9000),
// killed with SIGKILL right after the MTU step (once before the change,
// once after its read-back), leaves a journal from which `tune revert
// --last` in b restores MTU 9000.
func TestTuneKilledAfterMTU(t *testing.T) {
	tuneNeedsRoot(t, "network namespaces")
	t.Setenv("LINERATE_STATE_DIR", t.TempDir())
	const name = "t-tmtu"
	t.Cleanup(func() { tuneRun(t, "lab", "down", "--name", name) })
	if code, out, stderr := tuneRun(t, "lab", "up", "--name", name); code != 0 {
		t.Fatalf("lab up: exit %d\n%s%s", code, out, stderr)
	}
	args := []string{"tune", "--iface", lab.Iface, "--mtu", "4000"}
	code, out, stderr := labTune(t, name, append(args, "--json")...)
	var p tune.Plan
	if err := json.Unmarshal([]byte(out), &p); code != 0 || err != nil {
		t.Fatalf("plan in b: exit %d, %v\n%s", code, err, stderr)
	}
	step := 0
	for _, c := range p.Changes {
		if c.Kind == tune.KindMTU && c.Target == lab.Iface && c.Before == "9000" && c.After == "4000" {
			step = c.Step
		}
	}
	if step == 0 {
		t.Fatalf("the plan in b has no MTU step 9000 → 4000: %+v", p.Changes)
	}
	startInB := func(cmd *exec.Cmd) error { return lab.Start(name, lab.B, cmd) }
	for _, at := range []string{strconv.Itoa(step) + ":journaled", strconv.Itoa(step)} {
		killAtIn(t, startInB, append(args, "--apply"), at)
		want := "9000"
		if at == strconv.Itoa(step) {
			want = "4000"
		}
		if got := labMTU(t, name); got != want {
			t.Fatalf("killed after step %s: MTU %s, want %s", at, got, want)
		}
		if code, out, stderr := labTune(t, name, "tune", "revert", "--last"); code != 0 {
			t.Fatalf("revert --last in b after a kill at %s: exit %d\n%s%s", at, code, out, stderr)
		}
		if got := labMTU(t, name); got != "9000" {
			t.Errorf("after a kill at %s and revert --last: MTU %s, want 9000", at, got)
		}
	}
}

// labMTU reads lab0's MTU in host b.
func labMTU(t *testing.T, name string) string {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command("cat", "/sys/class/net/"+lab.Iface+"/mtu")
	cmd.Stdout = &out
	if err := lab.Start(name, lab.B, cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out.String())
}

// labTune runs linerate ARGS inside host b of lab name.
func labTune(t *testing.T, name string, args ...string) (int, string, string) {
	t.Helper()
	cmd := tuneHelper(os.Args[0], args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := lab.Start(name, lab.B, cmd); err != nil {
		t.Fatal(err)
	}
	code, ok := lab.ExitCode(cmd.Wait())
	if !ok {
		t.Fatalf("running linerate %v in b failed", args)
	}
	return code, out.String(), errb.String()
}

// labSysctls reads every readable sysctl of net.core and net.ipv4 in b.
func labSysctls(t *testing.T, name string) map[string]string {
	t.Helper()
	cmd := exec.Command("grep", "-r", ".", "/proc/sys/net/core", "/proc/sys/net/ipv4")
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := lab.Start(name, lab.B, cmd); err != nil {
		t.Fatal(err)
	}
	cmd.Wait() // some files are write-only: grep complains and goes on
	m := map[string]string{}
	for l := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
		k, v, _ := strings.Cut(l, ":")
		m[k] += v
	}
	if len(m) < 50 {
		t.Fatalf("read only %d sysctls in b", len(m))
	}
	return m
}

// labIperf runs iperf3 a → b for 5 s and returns Gbit/s received; it
// tries again only while the server is not listening yet.
func labIperf(t *testing.T, name string) float64 {
	t.Helper()
	srv := exec.Command("iperf3", "-s", "-1")
	if err := lab.Start(name, lab.B, srv); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	for try := 0; ; try++ {
		var out bytes.Buffer
		cli := exec.Command("iperf3", "-c", lab.AddrB, "-t", "5", "-J")
		cli.Stdout = &out
		if err := lab.Start(name, lab.A, cli); err != nil {
			t.Fatal(err)
		}
		err := cli.Wait()
		var res struct {
			End struct {
				SumReceived struct {
					BitsPerSecond float64 `json:"bits_per_second"`
				} `json:"sum_received"`
			} `json:"end"`
			Error string `json:"error"`
		}
		jerr := json.Unmarshal(out.Bytes(), &res)
		if err == nil && jerr == nil && res.End.SumReceived.BitsPerSecond > 0 {
			return res.End.SumReceived.BitsPerSecond / 1e9
		}
		// Only a server not yet listening is worth another try.
		notYet := strings.Contains(res.Error, "unable to connect") || strings.Contains(res.Error, "refused")
		if !notYet || try == 30 {
			t.Fatalf("iperf3 a → b: %v %v %s", err, jerr, res.Error)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// labLinerate runs the linerate binary bin with args inside host b of lab
// name, and returns its exit code, stdout and stderr.
func labLinerate(t *testing.T, name, bin string, args ...string) (int, string, string) {
	t.Helper()
	return labLinerateEnv(t, name, bin, nil, args...)
}

// labLinerateEnv is labLinerate with env added to the environment.
func labLinerateEnv(t *testing.T, name, bin string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := lab.Start(name, lab.B, cmd); err != nil {
		t.Fatal(err)
	}
	code, ok := lab.ExitCode(cmd.Wait())
	if !ok {
		t.Fatalf("running linerate %v in b failed", args)
	}
	return code, out.String(), errb.String()
}

// labValues is what tune may change in host b: every readable net.core
// and net.ipv4 sysctl, and lab0's MTU.
func labValues(t *testing.T, name string) map[string]string {
	t.Helper()
	v := labSysctls(t, name)
	v["mtu "+lab.Iface] = labMTU(t, name)
	return v
}

// diffValues lists the values that differ from want.
func diffValues(want, got map[string]string) []string {
	var d []string
	for k, w := range want {
		if got[k] != w {
			d = append(d, fmt.Sprintf("%s: %q, want %q", k, got[k], w))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			d = append(d, k+": new")
		}
	}
	slices.Sort(d)
	return d
}

// revertAll runs `tune revert --last` in b until it finds nothing left to
// revert, checking that `tune list` works before each, and returns how
// many journals it reverted.
func revertAll(t *testing.T, name, bin, when string) int {
	t.Helper()
	for n := 0; n < 10; n++ {
		if code, out, stderr := labLinerate(t, name, bin, "tune", "list"); code != 0 || !strings.HasPrefix(out, "ID ") && !strings.HasPrefix(out, "no tune journals") {
			t.Fatalf("%s: tune list: exit %d\n%s%s", when, code, out, stderr)
		}
		code, out, stderr := labLinerate(t, name, bin, "tune", "revert", "--last")
		if code == 2 && strings.Contains(stderr, "no journal with changes to revert") {
			return n
		}
		if code != 0 {
			t.Fatalf("%s: tune revert --last: exit %d\n%s%s", when, code, out, stderr)
		}
	}
	t.Fatalf("%s: tune revert --last still finds changes after 10 reverts", when)
	return 0
}

// TestTuneKilledAtAnyInstant: in host b of a small-buffers lab, `tune
// --iface lab0 --mtu 4000 --apply` (the real binary) is killed with
// SIGKILL 1, 2, … 30, 35, 40, 50 and 60 ms after it starts. After each
// kill `tune list` works, and `tune revert --last`, repeated until nothing
// is left, brings every net sysctl of b and lab0's MTU back exactly. Then
// the same after planting, beside a whole journal, an empty journal, a
// copy of it cut mid-line, and after cutting the journal itself mid-line.
func TestTuneKilledAtAnyInstant(t *testing.T) {
	tuneNeedsRoot(t, "network namespaces")
	state := t.TempDir()
	t.Setenv("LINERATE_STATE_DIR", state)
	journals := filepath.Join(state, "tune")
	bin := buildLinerate(t)
	const name = "t-tkill"
	t.Cleanup(func() { tuneRun(t, "lab", "down", "--name", name) })
	if code, out, stderr := tuneRun(t, "lab", "up", "--name", name, "--scenario", "small-buffers"); code != 0 {
		t.Fatalf("lab up: exit %d\n%s%s", code, out, stderr)
	}
	before := labValues(t, name)
	apply := []string{"tune", "--iface", lab.Iface, "--mtu", "4000", "--apply"}

	var left, none, changedAtKill int
	var lines []string
	killAt := func(ms int) {
		n0 := countFiles(t, journals)
		cmd := exec.Command(bin, apply...)
		if err := lab.Start(name, lab.B, cmd); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		time.Sleep(time.Duration(ms)*time.Millisecond - time.Since(start))
		cmd.Process.Signal(syscall.SIGKILL)
		killed := time.Since(start)
		cmd.Wait()
		changed := len(diffValues(before, labValues(t, name)))
		made := countFiles(t, journals) - n0
		if made > 0 {
			left++
		} else {
			none++
		}
		if changed > 0 {
			changedAtKill++
		}
		if made == 0 && changed > 0 {
			t.Errorf("killed at %d ms: %d values changed, and no journal", ms, changed)
		}
		reverts := revertAll(t, name, bin, fmt.Sprintf("killed at %d ms", ms))
		if d := diffValues(before, labValues(t, name)); len(d) > 0 {
			t.Fatalf("killed at %d ms (%.1f ms), %d journal(s) reverted: %v", ms, killed.Seconds()*1e3, reverts, d)
		}
		if made > 0 && changed > 0 && reverts == 0 {
			t.Errorf("killed at %d ms: %d values changed, but revert --last found nothing", ms, changed)
		}
		lines = append(lines, fmt.Sprintf("%2d ms (%.1f): journal %d, %d values changed, %d revert(s)", ms, killed.Seconds()*1e3, made, changed, reverts))
	}
	for _, ms := range append(seq(1, 30), 35, 40, 50, 60) {
		killAt(ms)
	}
	// On a machine so slow that no kill above landed among the changes,
	// later ones must, or the test proves nothing.
	for ms := 80; changedAtKill == 0 && ms <= 2000; ms += 40 {
		killAt(ms)
	}
	t.Logf("kills: %d left a journal, %d left none, %d had changed values; every one reverted exactly\n%s", left, none, changedAtKill, strings.Join(lines, "\n"))
	if changedAtKill == 0 {
		t.Errorf("no kill up to 2 s landed among the changes (%d journals): the test proves nothing", left)
	}

	// A whole journal, then a newer empty one and a newer copy cut in the
	// middle of a line: list works, each revert finds its journal.
	if code, out, stderr := labLinerate(t, name, bin, apply...); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, stderr)
	}
	whole := newestJournal(t, journals)
	b, err := os.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	plant := func(id string, data []byte) {
		if err := os.WriteFile(filepath.Join(journals, id+".jsonl"), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	plant("29990101T000000.000000Z", nil)
	plant("29990101T000000.000001Z", b[:len(b)/2])
	code, out, stderr := labLinerate(t, name, bin, "tune", "list")
	if code != 0 || strings.Count(out, "damaged: ") != 2 || !strings.Contains(out, "damaged: an empty file") || !strings.Contains(out, "its last line is cut off") {
		t.Errorf("tune list with planted journals: exit %d\n%s%s", code, out, stderr)
	}
	if n := revertAll(t, name, bin, "planted journals"); n != 2 {
		t.Errorf("%d reverts, want 2 (the cut copy, then the whole journal)", n)
	}
	if d := diffValues(before, labValues(t, name)); len(d) > 0 {
		t.Fatalf("after planted journals: %v", d)
	}
	for _, id := range []string{"29990101T000000.000000Z", "29990101T000000.000001Z"} {
		os.Remove(filepath.Join(journals, id+".jsonl"))
	}

	// The journal itself cut in its last record (a read-back's), as a
	// crash in that write would leave it.
	if code, out, stderr := labLinerate(t, name, bin, apply...); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, stderr)
	}
	whole = newestJournal(t, journals)
	b, _ = os.ReadFile(whole)
	lines = strings.SplitAfter(string(b), "\n")
	cut := strings.Join(lines[:len(lines)-3], "") + lines[len(lines)-3][:10] // mid-way through the last step's "applied"
	if err := os.WriteFile(whole, []byte(cut), 0o600); err != nil {
		t.Fatal(err)
	}
	if n := revertAll(t, name, bin, "a cut journal"); n != 1 {
		t.Errorf("%d reverts of a cut journal, want 1", n)
	}
	if d := diffValues(before, labValues(t, name)); len(d) > 0 {
		t.Fatalf("after a cut journal: %v", d)
	}
}

// TestTuneFullDisk: with a full tmpfs of 4 KiB as the state directory,
// `tune --apply` in a lab host, and below a captured tree, exits 2 with
// one line, changes nothing and leaves no journal.
func TestTuneFullDisk(t *testing.T) {
	tuneNeedsRoot(t, "mounting a tmpfs, network namespaces")
	full := fullTmpfs(t)
	t.Setenv("LINERATE_STATE_DIR", full)
	root := ryzenX4Copy(t)
	orig := testutil.TreeState(t, root)
	code, _, stderr := tuneRun(t, "tune", "--root", root, "--app-cpus", "6", "--apply")
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "no space left on device") || !strings.Contains(stderr, "nothing was changed: free space there or set LINERATE_STATE_DIR") {
		t.Errorf("apply on a full disk: exit %d, %q", code, stderr)
	}
	if d := tuneTreeDiff(orig, testutil.TreeState(t, root)); len(d) > 0 {
		t.Errorf("apply on a full disk changed %v", d)
	}
	if n := countFiles(t, filepath.Join(full, "tune")); n != 0 {
		t.Errorf("apply on a full disk left %d file(s)", n)
	}

	// The lab's own records go elsewhere: only tune gets the full disk.
	t.Setenv("LINERATE_STATE_DIR", t.TempDir())
	bin := buildLinerate(t)
	const name = "t-tfull"
	t.Cleanup(func() { tuneRun(t, "lab", "down", "--name", name) })
	if code, out, stderr := tuneRun(t, "lab", "up", "--name", name, "--scenario", "small-buffers"); code != 0 {
		t.Fatalf("lab up: exit %d\n%s%s", code, out, stderr)
	}
	before := labValues(t, name)
	code, _, stderr = labLinerateEnv(t, name, bin, []string{"LINERATE_STATE_DIR=" + full}, "tune", "--iface", lab.Iface, "--mtu", "4000", "--apply")
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "no space left on device") {
		t.Errorf("apply in b on a full disk: exit %d, %q", code, stderr)
	}
	if d := diffValues(before, labValues(t, name)); len(d) > 0 {
		t.Errorf("apply in b on a full disk changed %v", d)
	}
	if n := countFiles(t, filepath.Join(full, "tune")); n != 0 {
		t.Errorf("apply in b on a full disk left %d file(s)", n)
	}
}

// fullTmpfs mounts a tmpfs of 4 KiB for the test, fills it and returns it.
func fullTmpfs(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "linerate-full-")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4k,mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v %s", err, out)
	}
	t.Cleanup(func() {
		exec.Command("umount", "-l", dir).Run()
		os.Remove(dir)
	})
	f, err := os.Create(filepath.Join(dir, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for {
		if _, err := f.Write(make([]byte, 512)); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return dir
		}
	}
}

func seq(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// countFiles counts the files in dir (none when it does not exist).
func countFiles(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return len(entries)
}

// newestJournal returns the path of the newest journal in dir.
func newestJournal(t *testing.T, dir string) string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "2*.jsonl"))
	if len(paths) == 0 {
		t.Fatal("no journal")
	}
	slices.Sort(paths)
	return paths[len(paths)-1]
}

// TestTuneRevertRefusesHostileJournal: a journal naming a captured tree's
// etc/passwd as a sysctl — with the value there now the one it claims tune
// wrote, so that a revert trusting it would write its "prior" — is listed
// as refused, and `tune revert` (by ID or --last) writes nothing: the file
// keeps its bytes and its mtime. A journal others may write is refused the
// same way, and an empty one is damaged and holds nothing.
func TestTuneRevertRefusesHostileJournal(t *testing.T) {
	state := t.TempDir()
	t.Setenv("LINERATE_STATE_DIR", state)
	dir := filepath.Join(state, "tune")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	root := testutil.Scratch(t)
	passwd := filepath.Join(root, "etc", "passwd")
	const content = "root:x:0:0:root:/root:/bin/bash\n"
	os.MkdirAll(filepath.Dir(passwd), 0o755)
	if err := os.WriteFile(passwd, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	then := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	os.Chtimes(passwd, then, then)

	const id = "20250120T153012.123456Z"
	hdr, _ := json.Marshal(map[string]any{"schema": tune.JournalSchema, "id": id, "time": "2025-01-20T15:30:12.123456Z", "host": "crow", "root": root, "profile": "throughput", "planned": 1})
	step, _ := json.Marshal(map[string]any{"step": 1, "phase": "journaled",
		"change": tune.Change{Step: 1, Kind: tune.KindSysctl, Target: "etc.passwd", Path: "/etc/passwd", Before: "x", After: "y"},
		"prior":  "root::0:0:root:/root:/bin/bash\n", "want": content})
	path := filepath.Join(dir, id+".jsonl")
	if err := os.WriteFile(path, []byte(string(hdr)+"\n"+string(step)+"\n"+`{"event":"applied"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const reason = `step 1: a sysctl change names "/etc/passwd", which is not a net sysctl (/proc/sys/net/…)`
	code, out, _ := tuneRun(t, "tune", "list")
	if code != 0 || !strings.Contains(out, "refused") || !strings.Contains(out, "refused: "+reason) {
		t.Errorf("tune list: exit %d\n%s", code, out)
	}
	code, _, stderr := tuneRun(t, "tune", "revert", id)
	if code != 2 || stderr != "linerate: journal "+path+" refused: "+reason+"; a journal tune wrote never does that: check who wrote it, then remove it\n" {
		t.Errorf("tune revert %s: exit %d, %q", id, code, stderr)
	}
	if code, _, stderr = tuneRun(t, "tune", "revert", "--last"); code != 2 || !strings.Contains(stderr, "no journal with changes to revert") {
		t.Errorf("tune revert --last: exit %d, %q", code, stderr)
	}
	if b, _ := os.ReadFile(passwd); string(b) != content {
		t.Errorf("etc/passwd is now %q", b)
	}
	if fi, err := os.Stat(passwd); err != nil || !fi.ModTime().Equal(then) {
		t.Errorf("etc/passwd's mtime changed: %v (%v)", fi.ModTime(), err)
	}

	// A journal anyone may write; an empty one.
	os.Remove(path)
	os.WriteFile(path, []byte(string(hdr)+"\n"), 0o600)
	os.Chmod(path, 0o666)
	if code, _, stderr = tuneRun(t, "tune", "revert", id); code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "is writable by group or others (mode 0666)") || !strings.Contains(stderr, "chmod go-w "+path) {
		t.Errorf("a journal others may write: exit %d, %q", code, stderr)
	}
	os.WriteFile(path, nil, 0o600)
	os.Chmod(path, 0o600)
	if code, _, stderr = tuneRun(t, "tune", "revert", id); code != 2 || stderr != "linerate: journal "+path+" is damaged (an empty file): it has no header, which a journal gets before any change, so nothing was changed under it; remove it (rm "+path+")\n" {
		t.Errorf("an empty journal: exit %d, %q", code, stderr)
	}
	if code, out, _ = tuneRun(t, "tune", "list", "--json"); code != 0 || !strings.Contains(out, `"state": "damaged"`) || !strings.Contains(out, `"damage": "an empty file"`) {
		t.Errorf("tune list --json: exit %d\n%s", code, out)
	}
}
