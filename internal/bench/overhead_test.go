package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/explain"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/telemetry"
)

// TestSamplingOverhead measures what per-CPU sampling costs the traffic:
// iperf3 runs in a lab with no sampling, with sampling every second, and
// every 100 ms, interleaved round by round so drift hits all three alike.
// It is a measurement, not a check: it runs only when
// LINERATE_SAMPLING_ROUNDS is set (the rounds to make), and logs the
// table docs/benchmarks.md records.
func TestSamplingOverhead(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("LINERATE_SAMPLING_ROUNDS"))
	if rounds <= 0 {
		// CI: a measurement for docs/benchmarks.md, not a check; run by hand.
		t.Skip("a measurement: set LINERATE_SAMPLING_ROUNDS=N to run it")
	}
	secs, _ := strconv.Atoi(os.Getenv("LINERATE_SAMPLING_SECONDS"))
	if secs <= 0 {
		secs = 3
	}
	h := newLab(t, "t-samp")
	d := &Iperf3{Hosts: h}
	modes := []struct {
		name  string
		every time.Duration
	}{{"off", 0}, {"1 s", time.Second}, {"100 ms", 100 * time.Millisecond}}
	got := make([][]float64, len(modes))
	for r := range rounds {
		for k := range modes {
			m := (k + r) % len(modes) // rotate the order every round
			var smp *telemetry.Ticker
			if modes[m].every > 0 {
				smp = telemetry.Start(hostfs.Live(), nil, modes[m].every)
			}
			// Pinned (-A 0,0, the lab's fastest and steadiest placement):
			// unpinned runs land in buckets that would drown the effect.
			run, err := d.Run(context.Background(), Params{NoTelemetry: true, Test: agent.Test{Params: engine.Params{Streams: 1, Duration: time.Duration(secs) * time.Second, Interval: time.Second}, Pinning: agent.Pinning{Client: []int{0}, Server: []int{0}}}}, nil)
			smp.Stop()
			if err != nil {
				t.Fatal(err)
			}
			got[m] = append(got[m], run.Gbps())
		}
	}
	t.Logf("| sampling | runs | median Gbit/s | ratio to off | U test p against off |")
	t.Logf("|---|---|---|---|---|")
	for m, mode := range modes {
		ch := explain.CompareRuns(got[0], got[m])
		t.Logf("| %s | %d | %.2f | %.4f | %.3g |", mode.name, len(got[m]), explain.Median(got[m]),
			explain.Median(got[m])/explain.Median(got[0]), ch.P)
	}
	t.Logf("raw: %v", fmt.Sprint(got))
}

// TestSamplingOverheadPaired measures the same within one long iperf3
// run, which removes run-to-run variance (a lab run's placement buckets):
// the run is cut into 3-second blocks that rotate between no sampling,
// sampling every second and every 100 ms; each block's first interval is
// dropped (the switch) and the other intervals compared. Runs only with
// LINERATE_SAMPLING_PAIRED_SECONDS set (the run's length, a multiple of 9).
func TestSamplingOverheadPaired(t *testing.T) {
	secs, _ := strconv.Atoi(os.Getenv("LINERATE_SAMPLING_PAIRED_SECONDS"))
	if secs <= 0 {
		// CI: a measurement for docs/benchmarks.md, not a check; run by hand.
		t.Skip("a measurement: set LINERATE_SAMPLING_PAIRED_SECONDS=N to run it")
	}
	h := newLab(t, "t-samp2")
	d := &Iperf3{Hosts: h}
	const block = 3 * time.Second
	periods := []time.Duration{0, time.Second, 100 * time.Millisecond}
	stop := make(chan struct{})
	go func() {
		for b := 0; ; b++ {
			var smp *telemetry.Ticker
			if p := periods[b%3]; p > 0 {
				smp = telemetry.Start(hostfs.Live(), nil, p)
			}
			select {
			case <-stop:
				smp.Stop()
				return
			case <-time.After(block):
			}
			smp.Stop()
		}
	}()
	run, err := d.Run(context.Background(), Params{NoTelemetry: true, Test: agent.Test{Params: engine.Params{Streams: 1, Duration: time.Duration(secs) * time.Second, Interval: time.Second}, Pinning: agent.Pinning{Client: []int{0}, Server: []int{0}}}}, nil)
	close(stop)
	if err != nil {
		t.Fatal(err)
	}
	got := make([][]float64, 3)
	for _, iv := range run.Intervals {
		b := int(iv.Start / block.Seconds())
		if iv.Start-float64(b)*block.Seconds() < 0.5 {
			continue // the block's first interval straddles the switch
		}
		got[b%3] = append(got[b%3], iv.Sum.BitsPerSecond/1e9)
	}
	var seq []string
	for _, iv := range run.Intervals {
		seq = append(seq, fmt.Sprintf("%.0f:%d:%.1f", iv.Start, int(iv.Start/block.Seconds())%3, iv.Sum.BitsPerSecond/1e9))
	}
	t.Logf("intervals (start:mode:Gbit/s): %v", seq)
	names := []string{"off", "1 s", "100 ms"}
	// Intervals of one run are correlated: the p-value is indicative only.
	t.Logf("| sampling | intervals | median Gbit/s | ratio to off | U test p against off (intervals, indicative) |")
	t.Logf("|---|---|---|---|---|")
	for m := range got {
		ch := explain.CompareRuns(got[0], got[m])
		t.Logf("| %s | %d | %.2f | %.4f | %.3g |", names[m], len(got[m]), explain.Median(got[m]),
			explain.Median(got[m])/explain.Median(got[0]), ch.P)
	}
}
