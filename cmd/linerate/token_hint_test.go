package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/agent"
)

// TestBenchTokenHint: without a token, bench says where the token comes
// from (the agent's --token-file), not that the agent printed it: it never
// does.
func TestBenchTokenHint(t *testing.T) {
	unsetenv(t, agent.TokenEnv)
	_, err := benchToken("")
	if err == nil || strings.Contains(err.Error(), "printed") || !strings.Contains(err.Error(), "--new-token-file") {
		t.Errorf("no token: %v", err)
	}
}

// TestServeNodeKey: serve --node-key writes a node's key from the fleet's
// secret, readable by its owner only, and refuses without the secret.
func TestServeNodeKey(t *testing.T) {
	dir := t.TempDir()
	secret, key := filepath.Join(dir, "fleet"), filepath.Join(dir, "h01.key")
	if err := agent.WriteNewToken(secret); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runCLI(t, "serve", "--token-file", secret, "--node-key", "h01", "--new-token-file", key)
	if code != 0 || !strings.Contains(out, "node h01's key") {
		t.Fatalf("exit %d: %s %s", code, out, stderr)
	}
	fleet, _ := agent.ReadTokenFile(secret)
	want, _ := agent.NodeKey(fleet, "h01")
	if got, err := agent.ReadTokenFile(key); err != nil || string(got) != string(want) {
		t.Errorf("the key file holds %q, %v; want %q", got, err, want)
	}
	if _, stderr, code := runCLI(t, "serve", "--node-key", "h02", "--new-token-file", filepath.Join(dir, "h02.key")); code != 2 || !strings.Contains(stderr, "fleet's secret") {
		t.Errorf("without the secret: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI(t, "serve", "--token-file", key, "--node-key", "h02", "--new-token-file", filepath.Join(dir, "h02.key")); code != 2 || !strings.Contains(stderr, "cannot make other node keys") {
		t.Errorf("from a node key: exit %d, %s", code, stderr)
	}
}
