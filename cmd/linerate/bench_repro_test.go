package main

import (
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/internal/bench"
	"github.com/linerate/linerate/internal/result"
)

// parseBench parses a `linerate bench` command line with the CLI's own
// command and returns the campaign it asks for.
func parseBench(t *testing.T, args []string) bench.Spec {
	t.Helper()
	var spec bench.Spec
	cmd := benchCommand(func(cmd *cobra.Command, peer string, f benchFlags) (err error) {
		spec, err = f.spec(cmd, peer)
		return err
	})
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	if err := cmd.Execute(); err != nil {
		t.Fatalf("bench %s: %v", strings.Join(args, " "), err)
	}
	return spec
}

// shellWords splits a command line as a POSIX shell does the quoting
// bench writes: words apart by spaces, '…' quoting, '\” a quote inside.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	in, started := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case in && c == '\'':
			in = false
		case in:
			w.WriteByte(c)
		case c == '\'':
			in, started = true, true
		case c == '\\' && i+1 < len(line):
			i++
			w.WriteByte(line[i])
			started = true
		case c == ' ':
			if started {
				words = append(words, w.String())
			}
			w.Reset()
			started = false
		default:
			w.WriteByte(c)
			started = true
		}
	}
	if in {
		t.Fatalf("unterminated quote in %s", line)
	}
	if started {
		words = append(words, w.String())
	}
	return words
}

// TestReproduceRoundTrip: the command bench prints to make a campaign
// again (its summary, history, the report), and the command of each of its
// points, parsed by the CLI's own bench command, ask for the same
// parameters, for every kind of campaign and every engine.
func TestReproduceRoundTrip(t *testing.T) {
	for _, line := range []string{
		// One run, with every stream option.
		"10.0.0.2 -t 5 -O 1 -i 0.5 -P 4 -A 0,1 --bidir --window 1M --zerocopy=msg_zerocopy -C bbr --fq-rate 5G --label 'before tune'",
		"10.0.0.2:5302 -R -Z -A 0,2/1,3",
		"lab:demo -t 3",
		// Campaigns: repeats, a stream sweep, placements.
		"10.0.0.2 --repeat 3 -R --label baseline",
		"10.0.0.2 --sweep-streams 1,2,4 --repeat 2 -A 6,",
		"10.0.0.2 --placements '6,6;0,2/1,3;auto;,7' --repeat 2 -t 2",
		// Probes: a TCP and a UDP ping-pong, a UDP stream.
		"10.0.0.2 --latency --size 128 --rate 10k -A 3,4 --repeat 3",
		"10.0.0.2 --latency --udp -O 0.2 --placements '0,0;0,1'",
		"10.0.0.2 --udp -b 500M -l 1200 -t 3",
		// Transactions, many flows on few threads, the receiver's copy.
		"10.0.0.2 --rr --flows 10 --threads 2 --size 100 --depth 4 -A 0,1",
		"10.0.0.2 --crr --sweep-flows 1,10,100 --threads 2 --repeat 2",
		"lab:demo --rr --repeat 3 -t 3",
		"10.0.0.2 -P 100 --threads 2 --skip-rx-copy",
		"10.0.0.2 -P 4 --skip-rx-copy=zerocopy_receive -R",
		// The other engines.
		"10.0.0.2 --engine iperf3 -P 2 -A 1,2 --repeat 2",
		"10.0.0.2 --engine iperf2 --sweep-streams 1,8 -R",
		"10.0.0.2 --engine sockperf --latency --udp --rate 1000",
		"lab:x --engine netperf --latency --size 64",
		"10.0.0.1 --engine perftest --perftest-test ib_read_bw --perftest-size 65536 --perftest-iters 100 --rdma-device rocep3s0 --gid-index 3 --sweep-streams 1,4",
	} {
		t.Run(line, func(t *testing.T) {
			spec := parseBench(t, shellWords(t, line))
			again := spec.CampaignCommand()
			got := parseBench(t, shellWords(t, again)[2:]) // without "linerate bench"
			if !reflect.DeepEqual(got, spec) {
				t.Errorf("%s\nparses to %+v\nits command %s\nparses to %+v", line, spec, again, got)
			}
			for _, p := range spec.Points() {
				one := spec.Command(p)
				got := parseBench(t, shellWords(t, one)[2:])
				want := spec
				want.Repeat, want.Streams, want.Placements = 1, nil, nil
				if spec.Run.Probe == nil {
					want.Run.Streams = p.Streams
					want.Run.Params = bench.CapThreads(want.Run.Params)
				}
				want.Run.Pinning = p.Pinning
				if !reflect.DeepEqual(got, want) {
					t.Errorf("point %d streams, %s: %s\nparses to %+v\nwant %+v", p.Streams, p.Pinning, one, got, want)
				}
			}
		})
	}
}

// TestBenchTxnFlags: the transaction and many-flow flags reach the run's
// parameters, and combinations that mean nothing are refused before
// anything connects, each with a line that names the flag.
func TestBenchTxnFlags(t *testing.T) {
	s := parseBench(t, []string{"h", "--crr", "--flows", "30", "--threads", "2"})
	if r := s.Run; r.Mode != result.CRR || r.Streams != 30 || r.Threads != 2 || r.Size != 1 || r.Depth != 0 {
		t.Errorf("--crr --flows 30 --threads 2: %+v", r.Params)
	}
	s = parseBench(t, []string{"h", "-P", "100", "--threads", "2", "--skip-rx-copy"})
	if r := s.Run; r.Mode != result.Stream || r.Streams != 100 || r.Threads != 2 || r.SkipRxCopy != result.MsgTrunc {
		t.Errorf("-P 100 --threads 2 --skip-rx-copy: %+v", r.Params)
	}
	s = parseBench(t, []string{"h", "--rr", "--sweep-flows", "1,10,1000"})
	if !reflect.DeepEqual(s.Streams, []int{1, 10, 1000}) || s.Run.Mode != result.RR {
		t.Errorf("--rr --sweep-flows 1,10,1000: streams %v, mode %q", s.Streams, s.Run.Mode)
	}
	for _, tc := range []struct{ args, want string }{
		{"--rr --crr", "pick one"},
		{"--rr --latency", "pick one"},
		{"--rr -P 4", "--parallel is for TCP streams"},
		{"--crr --skip-rx-copy", "--skip-rx-copy is for TCP streams"},
		{"--flows 4", "--flows is for --rr or --crr"},
		{"--depth 2", "--depth is for --rr or --crr"},
		{"--size 100", "--size is for --latency or --udp (and --size for --rr/--crr)"},
		{"--crr --depth 2", "depth 2"},
		{"--rr --depth 65", "--depth 65"},
		{"--rr --flows 5000", "--flows 5000"},
		{"--rr --flows 4 --threads 8", "8 threads for 4 flows"},
		{"--rr --size 0", "--size 0"}, {"--crr --size 2000000", "--size 2000000"},
		{"--rr --flows 4 --sweep-flows 1,2", "--sweep-flows only"},
		{"--rr --sweep-flows 1,9999", "not a flow count"},
		{"-P 200", "-P 200: must be 1 to 128"},
		{"-P 5000 --threads 2", "-P 5000: must be 1 to 4096"},
		{"--threads 0", "--threads 0"},
		{"--latency --threads 2", "not --latency or --udp"},
		{"--skip-rx-copy=copy", "unknown receive method"},
		{"-P 4 --threads 2 --zerocopy=msg_zerocopy", "msg_zerocopy needs a thread per stream"},
		{"--rr --engine iperf3", "native engine's"},
		{"-P 4 --threads 2 --engine iperf3", "native engine's"},
	} {
		cmd := benchCommand(func(cmd *cobra.Command, peer string, f benchFlags) error {
			spec, err := f.spec(cmd, peer)
			if err == nil {
				err = f.checkEngine(spec.Run)
			}
			return err
		})
		cmd.SetArgs(append([]string{"h"}, strings.Fields(tc.args)...))
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("bench h %s: %v; want an error naming %q", tc.args, err, tc.want)
		}
	}
}
