package main

import (
	"strings"
	"testing"
)

// TestBenchInputsCheckedFirst: -t 0, an interval out of range and an
// empty stream count in --sweep-streams are refused with exit 2 before
// any connection (the peer, port 1 of loopback, listens to nothing: a
// run that tried to connect would fail with "connection refused").
func TestBenchInputsCheckedFirst(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-t", "0"}, "-t 0: give a measured time above 0"},
		{[]string{"-i", "10ms"}, "-i 10ms: must be 100ms to 1m0s"},
		{[]string{"-i", "61"}, "-i 1m1s: must be 100ms to 1m0s"},
		{[]string{"--sweep-streams", "1,,4"}, `--sweep-streams "1,,4": an empty stream count between commas`},
		{[]string{"--sweep-streams", "1,2,"}, `--sweep-streams "1,2,": an empty stream count`},
	} {
		_, errOut, code := runCLI(t, append([]string{"bench", "127.0.0.1:1", "--no-store", "--token-file", "/nonexistent"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("bench %v: exit %d, %q; want exit 2 and %q on one line", c.args, code, errOut, c.want)
		}
	}
}
