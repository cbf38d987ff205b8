package report

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/fleet"
)

// latencyNet is a fleet.Runner of latency tests: 1 µs typical (99th
// percentile 1.2 µs), three times as long when either end is slow.
type latencyNet struct{ slow string }

func (l latencyNet) Run(_ context.Context, s fleet.Spec) (fleet.Measurement, error) {
	us := 1.0
	if s.From.Name == l.slow || s.To.Name == l.slow {
		us = 3
	}
	return fleet.Measurement{LatencyUs: us, P99Us: 1.2 * us}, nil
}

// TestFleetReportLatency: the report of an RDMA latency matrix (5 hosts,
// h03 three times as slow as the rest) speaks in µs: the matrix's cells
// give each test's typical latency and its 99th percentile, the pairs
// table both, the settings the best latency and the slow limit, and the
// halving rounds have their section.
func TestFleetReportLatency(t *testing.T) {
	hosts := make([]fleet.Host, 5)
	for i := range hosts {
		hosts[i] = fleet.Host{Name: fmt.Sprintf("h%02d", i+1), Address: fmt.Sprintf("198.18.0.%d", i+1)}
	}
	res, err := fleet.Run(context.Background(), hosts, fleet.Options{Pattern: fleet.Pattern{Kind: fleet.PatternPairs},
		Duration: time.Second, Streams: 1, Latency: true, Halving: true}, latencyNet{slow: "h03"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := BuildFleet(res, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	page := modelHTML(t, m)
	count := func(re string) int { return matches(page, re) }
	if n := count(`<title>h0\d → h0\d: 1.00 µs typical \(99th percentile 1.20 µs\)`); n != 12 {
		t.Errorf("%d fast cells with their latency and 99th percentile, want 12", n)
	}
	if n := count(`<title>h0\d → h0\d: 3.00 µs typical \(99th percentile 3.60 µs\) \(slow\)`); n != 8 {
		t.Errorf("%d slow cells, want h03's 8", n)
	}
	for _, want := range []string{"typical latency (µs)", "<td class=\"num\">1.00 / 1.20</td>", "<td class=\"num\">3.00 / 3.60</td>",
		"2.10 µs (2.1 times the best)", "Re-tests by halving", "<td>h03</td><td>h01, h02, h04, h05</td>", "Host h03 is slow both ways"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "Gbit/s from each row") {
		t.Error("a latency matrix titled in Gbit/s")
	}
}

// TestFleetReportFromBest: a run judged by ClusterKit's rule for RDMA
// bandwidth (93% of the best test) says so, not "of the median".
func TestFleetReportFromBest(t *testing.T) {
	hosts := make([]fleet.Host, 4)
	for i := range hosts {
		hosts[i] = fleet.Host{Name: fmt.Sprintf("h%02d", i+1), Address: fmt.Sprintf("198.18.0.%d", i+1)}
	}
	res, err := fleet.Run(context.Background(), hosts, fleet.Options{Pattern: fleet.Pattern{Kind: fleet.PatternPairs},
		Duration: time.Second, Streams: 1, ThresholdPct: fleet.RDMAThresholdPct, FromBest: true}, &fleetNet{base: 94})
	if err != nil {
		t.Fatal(err)
	}
	m, err := BuildFleet(res, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	page := modelHTML(t, m)
	for _, want := range []string{"A test below 93% of the fleet&#39;s best test is slow", "(93% of the best test)"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "93% of the median") {
		t.Error("the page measures the RDMA rule from the median")
	}
}
