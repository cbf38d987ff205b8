package launch

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startLocal runs the wrapper with the local sh, as ssh or srun would run
// it on a host: the wrapper's behaviour without a network.
func startLocal(t *testing.T, dir string, argv []string, token string) (*Process, string, error) {
	t.Helper()
	tok, err := tokenPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", append([]string{"-c", wrapper, "linerate-launch", dir, tok}, withToken(argv, tok)...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := start(ctx, "local", cmd, nil, []byte(token))
	return p, tok, err
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	// A zombie is as good as gone: it waits only for its reaper.
	return err == nil && !strings.Contains(string(b), ") Z ")
}

// TestWrapperStartStop: the command runs in the background with the token
// in a private file, its output comes back, and Stop kills it (SIGTERM),
// removes the token file and reports the exit status.
func TestWrapperStartStop(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "launch")
	script := `trap 'echo got TERM; exit 143' TERM; echo "token=$(cat "$1") mode=$(stat -c %a "$1") dirmode=$(stat -c %a "$(dirname "$1")")"; while :; do sleep 0.1; done`
	p, tok, err := startLocal(t, dir, []string{"sh", "-c", script, "agent", TokenFile}, "s3cret-token")
	if err != nil {
		t.Fatal(err)
	}
	if !alive(p.PID) {
		t.Fatalf("pid %d is not running", p.PID)
	}
	line, err := p.WaitLine(t.Context(), "token=")
	if err != nil {
		t.Fatal(err)
	}
	if line != "token=s3cret-token mode=600 dirmode=700" {
		t.Errorf("the command saw %q", line)
	}
	ex := p.Stop(t.Context())
	if ex.Code != 143 || ex.Err != nil {
		t.Errorf("exit %+v, want 143 after SIGTERM", ex)
	}
	if alive(p.PID) {
		t.Errorf("pid %d still runs after Stop", p.PID)
	}
	if _, err := os.Stat(tok); !os.IsNotExist(err) {
		t.Errorf("the token file is left: %v", err)
	}
	if !strings.Contains(strings.Join(p.Stdout(), "\n"), "got TERM") {
		t.Errorf("stdout %q lacks the command's last words", p.Stdout())
	}
	// Stop is idempotent.
	if again := p.Stop(t.Context()); again.Code != 143 {
		t.Errorf("second stop: %+v", again)
	}
}

// TestWrapperKillsStubborn: a command that ignores SIGTERM is killed 5 s
// later.
func TestWrapperKillsStubborn(t *testing.T) {
	p, _, err := startLocal(t, t.TempDir(), []string{"sh", "-c", `trap '' TERM; echo ready; while :; do sleep 0.1; done`}, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.WaitLine(t.Context(), "ready"); err != nil {
		t.Fatal(err)
	}
	if ex := p.Stop(t.Context()); ex.Code != 137 {
		t.Errorf("exit %+v, want 137 (SIGKILL)", ex)
	}
}

// TestWrapperCommandEnds: a command that ends by itself is seen to end,
// with its status and its error output.
func TestWrapperCommandEnds(t *testing.T) {
	p, _, err := startLocal(t, t.TempDir(), []string{"sh", "-c", `echo "cannot bind: address in use" >&2; exit 3`}, "x")
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.WaitLine(t.Context(), "Listening on ")
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "address in use") {
		t.Errorf("WaitLine on an ended command: %v", err)
	}
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed")
	}
	if ex := p.Exit(); ex.Code != 3 {
		t.Errorf("exit %+v", ex)
	}
	p.Stop(t.Context())
}

// TestWrapperRefuses: a directory that is a symbolic link, or a token file
// that exists, stops the wrapper before anything runs; so do bad tokens.
func TestWrapperRefuses(t *testing.T) {
	base := t.TempDir()
	link := filepath.Join(base, "link")
	if err := os.Symlink(base, link); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(base, "ran")
	argv := []string{"touch", marker}
	if _, _, err := startLocal(t, link, argv, "x"); err == nil || !strings.Contains(err.Error(), "not a directory of this user") {
		t.Errorf("a symlinked directory: %v", err)
	}
	// A token file planted beforehand (by someone else) is not written
	// through.
	tok := filepath.Join(base, "planted")
	os.WriteFile(tok, []byte("old"), 0o644)
	cmd := exec.Command("sh", "-c", wrapper, "linerate-launch", base, tok, "touch", marker)
	if _, err := start(t.Context(), "local", cmd, nil, []byte("x")); err == nil || !strings.Contains(err.Error(), "cannot create") {
		t.Errorf("an existing token file: %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran although the wrapper refused")
	}
	for _, bad := range []string{"", "two\nlines", "nul\x00", strings.Repeat("x", 5000)} {
		if err := checkToken([]byte(bad)); err == nil {
			t.Errorf("token %.20q accepted", bad)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for _, s := range []string{"plain", "it's", "a b", "$(reboot)", `"\`, ""} {
		out, err := exec.Command("sh", "-c", "printf %s "+shellQuote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("shellQuote(%q): sh printed %q, %v", s, out, err)
		}
	}
}
