package main

import (
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
