package runner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/fleet"
	"github.com/linerate/linerate/internal/fleet/launch/launchtest"
	"github.com/linerate/linerate/internal/lab"
)

// TestFleetPerftestLab: the RDMA pair matrix (fleet run --engine
// perftest) over a lab of 5 hosts, each test's ib_write_bw server and
// client started in its two hosts' namespaces. The ib_write_bw on PATH is
// a stand-in (no RDMA device here) that prints perftest's results table:
// 94.21 Gbit/s, or 61.08 when either end is h03, the planted slow host.
// With ClusterKit's rule (bad below 93% of the best) every pair of h03 is
// slow, re-tested, and h03 is blamed on both sides; no other pair is.
func TestFleetPerftestLab(t *testing.T) {
	const name = "t-rdmaflt"
	if testing.Short() {
		// CI runs the suite without -short, so this runs there.
		t.Skip("-short: unit tests only, no lab")
	}
	table := func(gbps string) string {
		return "#bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n" +
			"1048576    5000             " + gbps + "              " + gbps + "               0.011231\n"
	}
	hosts := slowHostLab(t, name, "ib_write_bw", table("94.21"), table("61.08"))
	opts := fleet.Options{Pattern: fleet.Pattern{Kind: fleet.PatternPairs}, Duration: time.Second, Streams: 1,
		ThresholdPct: fleet.RDMAThresholdPct, FromBest: true, Halving: true, Label: "rdma-fleet"}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := fleet.Run(ctx, hosts, opts, &LabPerftest{Lab: name})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pairs) != 10 {
		t.Fatalf("%d pairs of 5 hosts, want 10", len(res.Pairs))
	}
	for _, p := range res.Pairs {
		withH03 := p.A == "h03" || p.B == "h03"
		if got := p.Status == fleet.StatusSlow; got != withH03 || p.AToBGbps == nil || p.BToAGbps == nil {
			t.Errorf("pair %s-%s: status %s (%v, %v)", p.A, p.B, p.Status, p.AToBGbps, p.BToAGbps)
		}
	}
	if res.SlowBelowGbps == nil || *res.SlowBelowGbps < 87.6 || *res.SlowBelowGbps > 87.62 {
		t.Errorf("slow below %v Gbit/s, want 93%% of the best 94.21", res.SlowBelowGbps)
	}
	var got []string
	for _, o := range res.Outliers {
		got = append(got, o.Kind+" "+o.Name+" "+o.Direction)
	}
	if !slices.Equal(got, []string{"host h03 both"}) {
		t.Errorf("outliers %v, want h03 on both sides", got)
	}
	if len(res.Retests) == 0 || !strings.Contains(res.Verdict, "h03") {
		t.Errorf("re-tests %d, verdict %q", len(res.Retests), res.Verdict)
	}
	if len(res.Halving) == 0 || !slices.Equal(res.Halving[0].Blamed, []string{"h03"}) {
		t.Errorf("halving %+v, want h03 blamed in the first round", res.Halving)
	}
}

// TestFleetPerftestLatencyLab: the RDMA latency matrix as a user runs it,
// 'fleet run --lab NAME --engine perftest --latency --json', over a lab
// of 5 hosts, each test's ib_write_lat server and client started in its
// two hosts' namespaces. The ib_write_lat on PATH is a stand-in (no RDMA
// device here) that prints perftest's results table as captured from the
// ConnectX-5 RoCE baseline report (typical 0.99 µs, 99th percentile
// 1.15 µs), or, when either end is h03, the planted slow host, that
// table with every latency three times as long: above 2.1 times the
// best, every pair of h03 is bad, the halving re-tests h03 against the
// hosts known good and blames it, and no other host or path is blamed.
func TestFleetPerftestLatencyLab(t *testing.T) {
	const name = "t-rdmalat"
	if testing.Short() {
		// CI runs the suite without -short, so this runs there.
		t.Skip("-short: unit tests only, no lab")
	}
	captured, err := os.ReadFile("../../bench/testdata/perftest-seed002-ib_write_lat.txt")
	if err != nil {
		t.Fatal(err)
	}
	// The slow host's table: the captured one, each latency (every
	// figure after #bytes and #iterations) three times as long.
	lines := strings.SplitAfter(string(captured), "\n")
	fields := strings.Fields(lines[1])
	for i := 2; i < len(fields); i++ {
		us, err := strconv.ParseFloat(fields[i], 64)
		if err != nil {
			t.Fatalf("the captured table's row %q: %v", lines[1], err)
		}
		fields[i] = strconv.FormatFloat(3*us, 'f', 2, 64)
	}
	tripled := lines[0] + strings.Join(fields, "        ") + "\n"
	slowHostLab(t, name, "ib_write_lat", string(captured), tripled)

	c := startCLI(t, nil, os.Environ(), "fleet", "run", "--lab", name, "--engine", "perftest", "--latency", "-t", "1", "--json")
	code := c.wait(t, 4*time.Minute)
	res := c.result(t)
	if code != 1 {
		t.Errorf("exit %d, want 1 (an outlier)\nstderr: %s", code, c.stderr.String())
	}
	if res.Metric != fleet.MetricLatency || res.BestUs == nil || *res.BestUs != 0.99 || res.SlowAboveUs == nil || *res.SlowAboveUs != 2.079 {
		t.Fatalf("metric %q, best %v µs, slow above %v µs; want latency, 0.99 and 2.1 times it", res.Metric, res.BestUs, res.SlowAboveUs)
	}
	if len(res.Pairs) != 10 {
		t.Fatalf("%d pairs of 5 hosts, want 10", len(res.Pairs))
	}
	for _, p := range res.Pairs {
		withH03 := p.A == "h03" || p.B == "h03"
		want, p99 := 0.99, 1.15
		if withH03 {
			want, p99 = 2.97, 3.45
		}
		if got := p.Status == fleet.StatusSlow; got != withH03 || p.AToBUs == nil || p.BToAUs == nil || p.AToBP99Us == nil ||
			*p.AToBUs != want || *p.BToAUs != want || *p.AToBP99Us != p99 || p.AToBGbps != nil {
			t.Errorf("pair %s-%s: status %s, %v/%v µs, p99 %v; want %g µs, p99 %g", p.A, p.B, p.Status, p.AToBUs, p.BToAUs, p.AToBP99Us, want, p99)
		}
	}
	var got []string
	for _, o := range res.Outliers {
		got = append(got, o.Kind+" "+o.Name+" "+o.Direction)
	}
	if !slices.Equal(got, []string{"host h03 both"}) {
		t.Errorf("outliers %v, want h03 on both sides", got)
	}
	if len(res.Halving) == 0 || !slices.Equal(res.Halving[0].Suspects, []string{"h03"}) || !slices.Equal(res.Halving[0].Blamed, []string{"h03"}) {
		t.Errorf("halving %+v, want h03 suspected and blamed in the first round", res.Halving)
	}
	if !strings.Contains(res.Verdict, "h03") || !strings.Contains(res.Verdict, "µs") {
		t.Errorf("verdict %q", res.Verdict)
	}
	// The progress speaks in µs.
	if !strings.Contains(c.stderr.String(), " µs\n") {
		t.Errorf("progress: %s", c.stderr.String())
	}
}

// slowHostLab makes lab name of 5 hosts and puts on PATH a stand-in for
// the perftest client tool that prints out, or slowOut when either end
// of its test is h03, the planted slow host. It returns the lab's hosts.
func slowHostLab(t *testing.T, name, tool, out, slowOut string) []fleet.Host {
	t.Helper()
	members := launchtest.LabWith(t, lab.Config{Name: name, Hosts: 5})
	var slow string
	var hosts []fleet.Host
	for _, m := range members {
		hosts = append(hosts, fleet.Host{Name: string(m.Host), Address: m.Address})
		if m.Host == "h03" {
			slow = m.Address
		}
	}
	if slow == "" {
		t.Fatalf("no h03 in %v", members)
	}
	bin := t.TempDir()
	// The stand-in servers run as the tool servers' own user, which must
	// reach them: t.TempDir's root is root's, mode 0700.
	for _, d := range []string{filepath.Dir(bin), bin} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fast, slowFile := filepath.Join(bin, "fast.txt"), filepath.Join(bin, "slow.txt")
	for f, text := range map[string]string{fast: out, slowFile: slowOut} {
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The client is called with the server's address last; its own is
	// lab0's in the namespace it runs in.
	script := "#!/bin/sh\n" +
		"for a; do peer=$a; done\n" +
		"case $peer in 198.18.*) ;; *) exec sleep 60;; esac\n" +
		"me=$(ip -o -4 addr show dev " + lab.Iface + " | awk '{print $4}' | cut -d/ -f1)\n" +
		"if [ \"$me\" = " + slow + " ] || [ \"$peer\" = " + slow + " ]; then cat " + slowFile + "; else cat " + fast + "; fi\n"
	if err := os.WriteFile(filepath.Join(bin, tool), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return hosts
}
