// Package launchtest runs real sshd and Slurm daemons in the hosts of a
// lab of many hosts, for tests of the fleet launchers and, later, of whole
// fleet runs through them. Every helper takes a testing.TB, fails the test
// on error and stops what it started in the test's cleanup.
//
// Needs root, openssh-server (sshd, ssh, ssh-keygen), and for Slurm
// slurm-wlm and munge (Debian packages). Missing tools fail the test
// under CI=true and skip it otherwise.
package launchtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/testbin"
)

// NeedRoot skips a test without root, except under CI=true, where it fails.
func NeedRoot(t testing.TB) {
	t.Helper()
	testbin.NeedRoot(t, "network namespaces")
}

// NeedTools skips a test when a tool is missing, except under CI=true,
// where it fails and names the package to install.
func NeedTools(t testing.TB, pkg string, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed (CI=true): apt-get install -y %s", tool, pkg)
			}
			t.Skipf("%s is not installed: apt-get install -y %s", tool, pkg)
		}
	}
}

// Lab brings up a lab of k hosts called name, with the state in a
// temporary directory, and removes it in the cleanup.
func Lab(t testing.TB, name string, k int) []lab.Member {
	t.Helper()
	return LabWith(t, lab.Config{Name: name, Hosts: k})
}

// LabWith is Lab of configuration c (its Name and Hosts set; a Rate
// shapes every host).
func LabWith(t testing.TB, c lab.Config) []lab.Member {
	t.Helper()
	name := c.Name
	NeedRoot(t)
	t.Setenv("LINERATE_STATE_DIR", t.TempDir())
	ctx := context.Background()
	if _, err := lab.Up(ctx, c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := lab.Down(context.Background(), name); err != nil {
			t.Errorf("lab down: %v", err)
		}
	})
	m, err := lab.Members(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// daemon starts cmd in host h of lab name and stops it (SIGTERM, then
// SIGKILL after 5 s) in the cleanup. Its output goes to log.
func daemon(t testing.TB, name string, h lab.Host, log string, cmd *exec.Cmd) *exec.Cmd {
	t.Helper()
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := lab.Start(name, h, cmd); err != nil {
		f.Close()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		f.Close()
		close(done)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return cmd
}

// output runs cmd in host h of lab name and returns its standard output.
func output(name string, h lab.Host, cmd *exec.Cmd) (string, error) {
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := lab.Start(name, h, cmd); err != nil {
		return "", err
	}
	if err := cmd.Wait(); err != nil {
		return out.String(), fmt.Errorf("%s: %v: %s", strings.Join(cmd.Args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// poll calls f every 100 ms until it returns nil or d has passed.
func poll(d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// privateDir makes a directory for a cluster's files that daemons which
// check their paths accept: mode 755 (munged wants its socket directory
// searchable by all), owned by root, not under a 700 test directory.
func privateDir(t testing.TB, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
