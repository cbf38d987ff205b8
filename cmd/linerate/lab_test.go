package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/testbin"
)

// runLab runs linerate in-process and returns exit code, stdout and stderr.
func runLab(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// TestMain lets a test run the CLI as a child process (to run it as
// another user): with LINERATE_LAB_CLI_HELPER=1 the test binary is
// linerate, taking its arguments after "--".
func TestMain(m *testing.M) {
	if os.Getenv("LINERATE_LAB_CLI_HELPER") == "1" {
		args := os.Args
		for i, a := range args {
			if a == "--" {
				args = args[i+1:]
				break
			}
		}
		os.Exit(run(args, os.Stdin, os.Stdout, os.Stderr))
	}
	// No test may write the user's state: journals, labs and results go
	// to a directory of the run's own unless a test sets another.
	if os.Getenv("LINERATE_STATE_DIR") == "" {
		dir, err := os.MkdirTemp("", "linerate-cli-test-")
		if err != nil {
			panic(err)
		}
		os.Setenv("LINERATE_STATE_DIR", dir)
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func TestLabNeedsRoot(t *testing.T) {
	const want = "linerate: lab needs root (network namespaces): run with sudo\n"
	cmds := [][]string{
		{"lab", "up"}, {"lab", "down"}, {"lab", "status"}, {"lab", "run"},
		{"lab", "exec", "demo", "a", "--", "true"},
	}
	for _, args := range cmds {
		var code int
		var stderr string
		if os.Geteuid() != 0 {
			code, _, stderr = runLab(t, args...)
		} else {
			code, stderr = runAsNobody(t, args)
		}
		if code != 2 || stderr != want {
			t.Errorf("%v as a user: exit %d, stderr %q; want 2, %q", args, code, stderr, want)
		}
	}
}

// runAsNobody runs linerate ARGS as uid/gid 65534 through a copy of the test
// binary that nobody may execute.
func runAsNobody(t *testing.T, args []string) (int, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "linerate-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "linerate.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"-test.run=^$", "--"}, args...)...)
	cover, collect := nobodyCoverDir(t, dir)
	cmd.Env = append(os.Environ(), "LINERATE_LAB_CLI_HELPER=1", "LINERATE_STATE_DIR="+dir, "HOME="+dir)
	cmd.Env = append(cmd.Env, cover...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	collect()
	code, ok := lab.ExitCode(err)
	if !ok {
		t.Fatal(err)
	}
	return code, stderr.String()
}

func TestLabRefusesBadInput(t *testing.T) {
	t.Setenv("LINERATE_STATE_DIR", t.TempDir())
	for _, args := range [][]string{
		{"lab", "up", "--name", "Has_Caps"},
		{"lab", "up", "--name", "muchtoolongname"},
		{"lab", "up", "--scenario", "fast"},
		{"lab", "up", "--rate", "10"},
		{"lab", "up", "--rate", "10gbps"},
		{"lab", "down", "--name", "../etc"},
		{"lab", "exec", "demo", "c", "--", "true"},
		{"lab", "exec", "demo"},
	} {
		code, out, stderr := runLab(t, args...)
		if code != 2 || out != "" || !strings.HasPrefix(stderr, "linerate: ") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one error line", args, code, out, stderr)
		}
	}
}

// TestLabRefusesEmptyName: an explicit --name "" is refused before
// anything else happens, rather than acting on the default lab "demo".
// It runs unprivileged (as nobody when the tests run as root), so that a
// regression cannot touch a real demo lab.
func TestLabRefusesEmptyName(t *testing.T) {
	const want = "linerate: --name is empty: give a lab name, or leave --name out for \"demo\"\n"
	for _, args := range [][]string{
		{"lab", "up", "--name", ""},
		{"lab", "up", "--name="},
		{"lab", "down", "--name", ""},
		{"lab", "run", "--name", ""},
	} {
		var code int
		var stderr string
		if os.Geteuid() != 0 {
			t.Setenv("LINERATE_STATE_DIR", t.TempDir())
			code, _, stderr = runLab(t, args...)
		} else {
			code, stderr = runAsNobody(t, args)
		}
		if code != 2 || stderr != want {
			t.Errorf("%q: exit %d, stderr %q; want 2, %q", args, code, stderr, want)
		}
	}
}

func TestLabCLI(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("the lab tests need root (network namespaces) and CI=true: run them with sudo")
		}
		t.Skip("needs root (network namespaces)")
	}
	t.Setenv("LINERATE_STATE_DIR", t.TempDir())
	const name = "c-cli"
	t.Cleanup(func() { runLab(t, "lab", "down", "--name", name) })

	code, out, stderr := runLab(t, "lab", "up", "--name", name, "--scenario", "mtu-mismatch", "--rate", "25G")
	if code != 0 || !strings.HasPrefix(out, "lab c-cli: created (scenario mtu-mismatch)\n") {
		t.Fatalf("up: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = runLab(t, "lab", "up", "--name", name, "--scenario", "mtu-mismatch", "--rate", "25gbit")
	if code != 0 || out != "lab c-cli: unchanged (scenario mtu-mismatch)\n" {
		t.Errorf("second up: exit %d %q", code, out)
	}

	code, out, _ = runLab(t, "lab", "status", "--name", name, "--json")
	var rep lab.Report
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || len(rep.Labs) != 1 || rep.Labs[0].Rate != "25gbit" {
		t.Errorf("status --json: exit %d, %v: %s", code, err, out)
	}
	code, out, _ = runLab(t, "lab", "status")
	if code != 0 || !strings.Contains(out, "lab c-cli: scenario mtu-mismatch, --rate 25gbit") || !strings.Contains(out, "mtu 1500") {
		t.Errorf("status: exit %d\n%s", code, out)
	}

	code, out, stderr = runLab(t, "lab", "exec", name, "a", "--", "cat", "/sys/class/net/lab0/mtu")
	if code != 0 || out != "9000\n" {
		t.Errorf("exec a cat mtu: exit %d, %q %q", code, out, stderr)
	}
	code, out, _ = runLab(t, "lab", "exec", name, "b", "cat", "/sys/class/net/lab0/mtu")
	if code != 0 || out != "1500\n" {
		t.Errorf("exec b without --: exit %d, %q", code, out)
	}
	// exec exits with the command's status.
	if code, _, stderr = runLab(t, "lab", "exec", name, "b", "--", "sh", "-c", "exit 5"); code != 5 || stderr != "" {
		t.Errorf("exec exit 5: exit %d, stderr %q", code, stderr)
	}

	code, out, _ = runLab(t, "lab", "down", "--name", name)
	if code != 0 || !strings.HasPrefix(out, "lab c-cli: removed\n  namespace lr-c-cli-a\n  namespace lr-c-cli-b\n  record ") {
		t.Errorf("down: exit %d\n%s", code, out)
	}
	code, out, _ = runLab(t, "lab", "down", "--name", name)
	if code != 0 || out != "lab c-cli: nothing to remove (no such lab)\n" {
		t.Errorf("second down: exit %d %q", code, out)
	}
	code, out, stderr = runLab(t, "lab", "exec", name, "a", "--", "true")
	if code != 2 || !strings.Contains(stderr, "run 'linerate lab up --name c-cli'") {
		t.Errorf("exec in a removed lab: exit %d %q %q", code, out, stderr)
	}
}

// labNeedsRoot skips a test without root, and fails it when CI=true.
func labNeedsRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("the lab tests need root (network namespaces) and CI=true: run them with sudo")
	}
	t.Skip("needs root (network namespaces)")
}

// buildLinerate builds the linerate binary into a fresh directory that any
// user may enter.
func buildLinerate(t *testing.T) string {
	t.Helper()
	bin := testbin.Build(t, ".")
	os.Chmod(filepath.Dir(bin), 0o755)
	return bin
}

// labUp brings lab name up shaped by scenario and takes it down when the
// test ends.
func labUp(t *testing.T, name, scenario string) {
	t.Helper()
	t.Cleanup(func() {
		if code, out, stderr := runLab(t, "lab", "down", "--name", name); code != 0 {
			t.Errorf("lab down --name %s: exit %d\n%s%s", name, code, out, stderr)
		}
	})
	if code, out, stderr := runLab(t, "lab", "up", "--name", name, "--scenario", scenario); code != 0 {
		t.Fatalf("lab up --name %s --scenario %s: exit %d\n%s%s", name, scenario, code, out, stderr)
	}
}

// labDoctor runs the built binary's doctor --json inside a lab host
// through 'lab exec' and returns the IDs of its findings.
func labDoctor(t *testing.T, bin, name, host string, args ...string) map[string]string {
	t.Helper()
	argv := append([]string{"lab", "exec", name, host, "--", bin, "doctor", "--json"}, args...)
	code, out, stderr := runLab(t, argv...)
	if code != 0 && code != 1 {
		t.Fatalf("%v: exit %d\n%s%s", argv, code, out, stderr)
	}
	var rep struct {
		Findings []struct {
			ID       string `json:"id"`
			Severity string `json:"severity"`
			Summary  string `json:"summary"`
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: output is not JSON: %v\n%s", argv, err, out)
	}
	ids := map[string]string{}
	for _, f := range rep.Findings {
		ids[f.ID] = f.Severity + ": " + f.Summary
	}
	return ids
}

// TestLabMTUMismatchDoctor: in an mtu-mismatch lab (host a at 9000, host b
// at 1500) doctor in host a with --peer proves the path does not carry
// 9000-byte packets.
func TestLabMTUMismatchDoctor(t *testing.T) {
	labNeedsRoot(t)
	t.Setenv("LINERATE_STATE_DIR", t.TempDir())
	bin := buildLinerate(t)
	const name = "t-mtu"
	labUp(t, name, "mtu-mismatch")
	ids := labDoctor(t, bin, name, "a", "--iface", lab.Iface, "--peer", lab.AddrB)
	if f, ok := ids["mtu.path_mismatch"]; !ok || !strings.HasPrefix(f, "critical: ") {
		t.Errorf("doctor in a --peer %s: no critical mtu.path_mismatch; findings: %v", lab.AddrB, ids)
	}
}

// TestLabSmallBuffersDoctor: in a small-buffers lab, doctor in host b
// (tcp_rmem/tcp_wmem max 64 KiB) reports sysctl.socket_buffers_small.
func TestLabSmallBuffersDoctor(t *testing.T) {
	labNeedsRoot(t)
	t.Setenv("LINERATE_STATE_DIR", t.TempDir())
	bin := buildLinerate(t)
	const name = "t-buf"
	labUp(t, name, "small-buffers")
	ids := labDoctor(t, bin, name, "b", "--iface", lab.Iface)
	if f, ok := ids["sysctl.socket_buffers_small"]; !ok || !strings.Contains(f, "tcp_rmem") {
		t.Errorf("doctor in b: no sysctl.socket_buffers_small naming tcp_rmem; findings: %v", ids)
	}
}
