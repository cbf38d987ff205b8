package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/testutil"
)

// TestServeCheck: `serve --check` (the Kubernetes readiness probe)
// authenticates and leaves, so the agent logs nothing for it, where a
// bare TCP connection — the tcpSocket probe it replaces — is logged as a
// refused stranger ("nothing sent"). A wrong key fails the check; a node
// key and the fleet's secret both pass; the address may come from
// $LINERATE_BIND, which an exec probe's command cannot expand.
func TestServeCheck(t *testing.T) {
	dir := t.TempDir()
	secret, key := filepath.Join(dir, "fleet"), filepath.Join(dir, "n1.key")
	if err := agent.WriteNewToken(secret); err != nil {
		t.Fatal(err)
	}
	if _, stderr, c := runCLI(t, "serve", "--token-file", secret, "--node-key", "n1", "--new-token-file", key); c != 0 {
		t.Fatal(stderr)
	}
	port := freePort(t)
	out, errb := &testutil.Buffer{}, &testutil.Buffer{}
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"serve", "--once", "--bind", "127.0.0.1", "--port", port, "--token-file", key}, strings.NewReader(""), out, errb)
	}()
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(out.String(), "Listening on "); {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not listen: %q %q", out.String(), errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	for range 3 {
		if stdout, stderr, c := runCLI(t, "serve", "--check", "--bind", "127.0.0.1", "--port", port, "--token-file", key); c != 0 || !strings.Contains(stdout, "answered") {
			t.Fatalf("check with the node key: exit %d: %s %s", c, stdout, stderr)
		}
	}
	t.Setenv(bindEnv, "127.0.0.1")
	if stdout, stderr, c := runCLI(t, "serve", "--check", "--port", port, "--token-file", secret); c != 0 {
		t.Errorf("check with the fleet's secret, address from $%s: exit %d: %s %s", bindEnv, c, stdout, stderr)
	}
	wrong := tokenFile(t, 0o600)
	if _, stderr, c := runCLI(t, "serve", "--check", "--port", port, "--token-file", wrong); c != 2 || !strings.Contains(stderr, "serve --check") {
		t.Errorf("check with another token: exit %d: %s", c, stderr)
	}
	time.Sleep(200 * time.Millisecond)
	logs := errb.String()
	if n := strings.Count(logs, "refused connection"); n != 1 || !strings.Contains(logs, "authentication failed") {
		t.Errorf("the agent logged %d refusals for four checks, one with a wrong key (want that one):\n%s", n, logs)
	}
	// What the tcpSocket probe did: connect, send nothing.
	c, err := net.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(errb.String(), "nothing sent"); {
		if time.Now().After(deadline) {
			t.Fatalf("a bare connection was not logged as refused:\n%s", errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The checks were no test: serve --once still serves one.
	if _, stderr, c := runCLI(t, "bench", "127.0.0.1", "-p", port, "-t", "0.5", "-i", "0.25", "--token-file", secret, "--no-store"); c != 0 {
		t.Errorf("bench after the checks: exit %d: %s", c, stderr)
	}
	if c := <-code; c != 0 {
		t.Errorf("serve exited %d", c)
	}
}
