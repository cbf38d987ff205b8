package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/fleet"
)

// The tests run whole fleets: a linerate binary built from this tree is
// what every launcher starts on the hosts ('linerate serve') and, for the
// command-line tests, the controller too.

var (
	buildOnce sync.Once
	binDir    string
	binErr    error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// linerate builds the linerate binary once per test binary, into a
// directory any user (and slurmd's steps) may enter.
func linerate(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "linerate-runner-test-"); binErr != nil {
			return
		}
		os.Chmod(binDir, 0o755)
		out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, "linerate"), "../../../cmd/linerate").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return filepath.Join(binDir, "linerate")
}

// cli is one run of the built binary.
type cli struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	lines          chan string // stderr, line by line
	done           chan struct{}
	code           int
}

// startCLI starts the built binary with args; start, when set, starts it
// (in a lab host); stderr is also sent line by line to c.lines.
func startCLI(t *testing.T, start func(*exec.Cmd) error, env []string, args ...string) *cli {
	t.Helper()
	cmd := exec.Command(linerate(t), args...)
	cmd.Env = env
	return startCmd(t, start, cmd)
}

// startCmd is startCLI of any command (salloc … linerate …).
func startCmd(t *testing.T, start func(*exec.Cmd) error, cmd *exec.Cmd) *cli {
	t.Helper()
	c := &cli{cmd: cmd, lines: make(chan string, 1024), done: make(chan struct{})}
	args := cmd.Args
	c.cmd.Stdout = &c.stdout
	pr, pw := io.Pipe()
	c.cmd.Stderr = io.MultiWriter(&c.stderr, pw)
	if start == nil {
		start = (*exec.Cmd).Start
	}
	if err := start(c.cmd); err != nil {
		t.Fatalf("starting %v: %v", args, err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			select {
			case c.lines <- sc.Text():
			default:
			}
		}
	}()
	go func() {
		err := c.cmd.Wait()
		pw.Close()
		c.code = c.cmd.ProcessState.ExitCode()
		if err != nil && c.code < 0 {
			c.code = -1
		}
		close(c.done)
	}()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			c.cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

// wait waits up to d for the run to end and returns its exit status.
func (c *cli) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-c.done:
		return c.code
	case <-time.After(d):
		c.cmd.Process.Kill()
		<-c.done
		t.Fatalf("%v did not end within %s\nstdout: %s\nstderr: %s", c.cmd.Args[1:], d, c.stdout.String(), c.stderr.String())
		return -1
	}
}

// waitLine waits up to d for a line of stderr holding s.
func (c *cli) waitLine(t *testing.T, s string, d time.Duration) string {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case l := <-c.lines:
			if strings.Contains(l, s) {
				return l
			}
		case <-c.done:
			t.Fatalf("linerate ended (exit %d) before saying %q\nstderr: %s", c.code, s, c.stderr.String())
		case <-timeout:
			t.Fatalf("no %q within %s\nstderr: %s", s, d, c.stderr.String())
		}
	}
}

// result decodes the run's linerate.fleet/v1 document from its stdout.
func (c *cli) result(t *testing.T) *fleet.Result {
	t.Helper()
	res, err := fleet.ReadResult(bytes.NewReader(c.stdout.Bytes()))
	if err != nil {
		t.Fatalf("the --json output: %v\nstdout: %s\nstderr: %s", err, c.stdout.String(), c.stderr.String())
	}
	return res
}

// agentPIDs lists the processes running an agent ('linerate serve --bind
// ADDR …') whose executable is under dir, by the address each listens on.
func agentPIDs(t *testing.T, dir string) map[string]int {
	t.Helper()
	out := map[string]int{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(argv) < 4 || argv[1] != "serve" || argv[2] != "--bind" {
			continue
		}
		// Only this test's, not another's binary.
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err != nil || !strings.HasPrefix(exe, dir+"/") {
			continue
		}
		out[argv[3]] = pid
	}
	return out
}

// noAgentsLeft fails t when an agent under dir still runs d after the
// call.
func noAgentsLeft(t *testing.T, dir string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		left := agentPIDs(t, dir)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("agents still running: %v", left)
			for _, pid := range left {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// outliers lists a result's outliers as "kind name direction cause".
func outliers(res *fleet.Result) []string {
	out := []string{}
	for _, o := range res.Outliers {
		out = append(out, fmt.Sprintf("%s %s %s %s", o.Kind, o.Name, o.Direction, o.Cause))
	}
	return out
}

// dump is a result for a failure message.
func dump(res *fleet.Result) string {
	b, _ := json.MarshalIndent(res, "", "  ")
	return string(b)
}
