package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/osthread"
)

// dialErr is a connection failure as the agent's dialers wrap it.
func dialErr(errno syscall.Errno) error {
	op := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", errno)}
	return fmt.Errorf("connecting to the agent at 198.18.0.3:5301: %w%s", op, agentHint)
}

// TestHintError: each failure's hint follows its errno: an unreachable
// host is not "is serve running?", a missing local address is not
// "another agent?"; a refused connection keeps the agent hint; other
// errors pass unchanged; the hint is said once.
func TestHintError(t *testing.T) {
	listenErr := func(errno syscall.Errno) error {
		op := &net.OpError{Op: "listen", Net: "tcp4", Err: os.NewSyscallError("bind", errno)}
		return fmt.Errorf("listening on 198.18.0.9:5301: %w%s", op, serveHint)
	}
	plain := errors.New("--threshold -1: give a percentage, e.g. 5")
	for _, c := range []struct {
		err       error
		want, not string
	}{
		{dialErr(syscall.EHOSTUNREACH), "no route to host (nothing answers at that address", "serve"},
		{dialErr(syscall.ENETUNREACH), "(this host has no route to that network: see 'ip route get ADDR')", "serve"},
		{dialErr(syscall.ETIMEDOUT), "(no answer: a firewall may drop", "serve"},
		{dialErr(syscall.ECONNREFUSED), "connection refused (is 'linerate serve' running there?)", "route"},
		{listenErr(syscall.EADDRNOTAVAIL), "cannot assign requested address (no interface of this host has that address", "another agent"},
		{listenErr(syscall.EADDRINUSE), "address already in use (another program, perhaps another agent, holds that port: pick another --port)", "is another agent running"},
		{plain, plain.Error(), "("},
	} {
		got := hintError(c.err).Error()
		if !strings.Contains(got, c.want) || strings.Contains(got, c.not) || strings.Count(got, "(") > 1 {
			t.Errorf("%v:\n got %q\nwant %q, without %q, one hint", c.err, got, c.want, c.not)
		}
	}
}

// TestCheckRoute: in a network namespace with no route at all the check
// finds it before connecting; on this host loopback routes.
func TestCheckRoute(t *testing.T) {
	if err := checkRoute(netip.MustParseAddr("127.0.0.1"), 5301); err != nil {
		t.Errorf("loopback: %v", err)
	}
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("TestCheckRoute needs root (a network namespace) and CI=true: run it with sudo")
		}
		t.Skip("needs root for an empty network namespace")
	}
	var got error
	err := osthread.Throwaway(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return err
		}
		got = checkRoute(netip.MustParseAddr("198.18.0.3"), 5301)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Error() != "no route to 198.18.0.3 from this host: see 'ip route get 198.18.0.3'" {
		t.Errorf("empty namespace: %v", got)
	}
}

// TestErrorsBeforeConnecting: the CLI names the cause before any
// connection: -A with a CPU this host lacks (the walkthrough's -A 5,5 was
// found only by the agent), --bind to an address the host lacks; each one
// line, exit 2. The peer port has no listener, so a connection attempt
// would say "connection refused" instead.
func TestErrorsBeforeConnecting(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "token")
	if _, _, code := runCLI(t, "serve", "--new-token-file", tok); code != 0 {
		t.Fatal("serve --new-token-file failed")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "127.0.0.1:1", "-A", "4095,0", "--token-file", tok, "--no-store"},
			"linerate: -A 4095,0: CPU 4095 (client) is not online here, or not allowed to this process: it may use "},
		{[]string{"bench", "lab:nosuch", "-A", "0,4095", "--no-store"},
			"linerate: -A 0,4095: CPU 4095 (server) is not online here, or not allowed to this process: it may use "},
		{[]string{"serve", "--bind", "198.18.255.254", "--token-file", tok},
			"linerate: --bind 198.18.255.254: no interface of this host has that address (see 'ip -br addr'; 0.0.0.0 listens on every address)\n"},
		{[]string{"bench", "no-such-host.invalid", "--token-file", tok, "--no-store"},
			`linerate: bench no-such-host.invalid: cannot resolve "no-such-host.invalid": give an IP address or a name this host resolves` + "\n"},
	} {
		_, stderr, code := runCLI(t, c.args...)
		if code != 2 || !strings.HasPrefix(stderr, c.want) || strings.Count(stderr, "\n") != 1 || strings.Contains(stderr, "refused") {
			t.Errorf("%v: exit %d %q\nwant %q", c.args, code, stderr, c.want)
		}
	}
}

// TestBenchLabNeedsRoot: as a user, bench lab:NAME says it needs root,
// not "run 'linerate lab up'" (the lab exists; root is what is missing).
func TestBenchLabNeedsRoot(t *testing.T) {
	const want = "linerate: bench lab:ux1 needs root: it runs in the lab's network namespaces (run it with sudo)\n"
	var code int
	var stderr string
	if os.Geteuid() != 0 {
		_, stderr, code = runCLI(t, "bench", "lab:ux1", "-t", "1")
	} else {
		code, stderr = runAsNobody(t, []string{"bench", "lab:ux1", "-t", "1"})
	}
	if code != 2 || stderr != want {
		t.Errorf("exit %d %q, want %q", code, stderr, want)
	}
}

// TestVersion: --version and the version command print the same line.
func TestVersion(t *testing.T) {
	a, _, c1 := runCLI(t, "--version")
	b, _, c2 := runCLI(t, "version")
	if c1 != 0 || c2 != 0 || a != b || !strings.HasPrefix(a, "linerate ") || strings.Count(a, "\n") != 1 {
		t.Errorf("--version %q (%d), version %q (%d)", a, c1, b, c2)
	}
	// Never a bare "dev": the commit, or that none was recorded, and Go.
	if !strings.Contains(a, runtime.Version()+")") || !strings.Contains(a, "(commit ") && !strings.Contains(a, "(no commit recorded") {
		t.Errorf("version %q names neither its commit nor that it has none, or not its Go", a)
	}
}
