package main

import (
	"strings"
	"testing"
)

// TestFlagValueCompletion: enumerated flags complete to their values, not
// to file names (directive 4, ShellCompDirectiveNoFileComp).
func TestFlagValueCompletion(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "bench", "--engine", ""}, "native\niperf3\niperf2\nperftest\nsockperf\nnetperf\n:4\n"},
		{[]string{"__complete", "lab", "up", "--scenario", ""}, "healthy\ncapped-10g\nmtu-mismatch\nsmall-buffers\nsmall-sndbuf\nsmall-rcvbuf\nshaped\nbusy-receiver\npacing\n:4\n"},
		{[]string{"__complete", "doctor", "--fail-on", ""}, "critical\nwarning\ninfo\n:4\n"},
		{[]string{"__complete", "tune", "--profile", ""}, "throughput\nlatency\n:4\n"},
		{[]string{"__complete", "history", "--color", ""}, "auto\nalways\nnever\n:4\n"},
	} {
		out, _, code := runCLI(t, c.args...)
		if code != 0 || out != c.want {
			t.Errorf("%s: exit %d %q, want %q", strings.Join(c.args, " "), code, out, c.want)
		}
	}
}
