package main

import (
	"strings"
	"testing"
)

// TestBenchProbeRefuses: the flags of --latency and --udp are checked
// before anything runs, each refusal one line naming the fix, exit 2.
func TestBenchProbeRefuses(t *testing.T) {
	strong := tokenFile(t, 0o600)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--size", "100"}, "--size is for --latency or --udp"},
		{[]string{"-b", "1G"}, "--bitrate is for --latency or --udp"},
		{[]string{"--latency", "--size", "13"}, "--size 13: must be 14 to 65507 bytes"},
		{[]string{"--latency", "--size", "65508"}, "--size 65508"},
		{[]string{"--latency", "--rate", "fast"}, `--rate "fast"`},
		{[]string{"--latency", "--rate", "0"}, `--rate "0"`},
		{[]string{"--latency", "--rate", "20M"}, `--rate "20M"`},
		{[]string{"--latency", "-P", "2"}, "--streams is for TCP streams"},
		{[]string{"--latency", "--parallel", "2"}, "--streams is for TCP streams"}, // iperf3's name, kept hidden
		{[]string{"--latency", "-R"}, "--reverse is for TCP streams and UDP streams: a ping-pong's round trips go both ways"},
		{[]string{"--latency", "--engine", "sockperf", "-R"}, "a ping-pong's round trips go both ways"},
		{[]string{"--udp", "-R"}, "--reverse with --udp runs with --engine iperf3 (its server sends): the native engine's UDP stream goes from the client"},
		{[]string{"--udp", "-R", "--engine", "iperf2"}, "--reverse with --udp runs with --engine iperf3"},
		{[]string{"--udp", "--engine", "iperf2"}, "--udp (a UDP stream at -b) runs with --engine native or iperf3, not iperf2"},
		{[]string{"--latency", "--udp", "--engine", "netperf"}, "--latency --udp (a ping-pong over UDP) runs with --engine native or sockperf, not netperf"},
		{[]string{"--udp", "-P", "2", "--engine", "iperf3"}, "--streams is for TCP streams: a latency or UDP test here is one flow"},
		{[]string{"--udp", "--bidir", "--engine", "iperf3"}, "--bidir is for TCP streams"},
		{[]string{"--udp", "-w", "4M"}, "--window is for TCP streams"},
		{[]string{"--latency", "-b", "1G"}, "-b and -l are for a UDP stream"},
		{[]string{"--udp", "--rate", "100"}, "--size and --rate are for --latency"},
		{[]string{"--udp", "-b", "lots"}, `-b "lots"`},
		{[]string{"--udp", "-b", "2T"}, `-b "2T"`},
		{[]string{"--udp", "-l", "8"}, "-l 8: must be 16 to 65507 bytes"},
		{[]string{"--latency", "--engine", "iperf3"}, "--latency runs with --engine native, perftest, sockperf or netperf, not iperf3"},
		{[]string{"--latency", "--engine", "iperf2"}, "--latency runs with --engine native, perftest, sockperf or netperf, not iperf2"},
		{[]string{"--engine", "sockperf"}, "--engine sockperf measures latency: add --latency"},
	}
	for _, tt := range tests {
		args := append([]string{"bench", "127.0.0.1", "--token-file", strong, "--no-store"}, tt.args...)
		_, stderr, code := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, tt.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", tt.args, code, stderr, tt.want)
		}
	}
}
