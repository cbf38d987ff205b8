package report

import (
	"strconv"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/result"
)

// TestRunsTableLatencyAndUDP: in the table of every run a latency run
// shows its typical round trip, not the ping-pong's bytes as goodput, and
// a UDP run shows no retransmits; a TCP run beside them keeps both.
func TestRunsTableLatencyAndUDP(t *testing.T) {
	ds := loadFixture(t, "seed000")
	if len(ds.Runs) < 3 {
		t.Fatalf("fixture has %d runs, want 3 or more", len(ds.Runs))
	}
	ds.Campaigns = nil // every run loose: on the chart of runs outside campaigns
	p50 := 23.456
	lat, udp, tcp := &ds.Runs[0].Result, &ds.Runs[1].Result, &ds.Runs[2].Result
	lat.End.Latency = &result.Latency{Protocol: "tcp", Size: 1}
	lat.End.Latency.RTTUs.P50 = &p50
	udp.Start.Protocol = result.UDP
	udp.End.SumSent.Retransmits = 7 // what a garbled document could carry
	tcp.End.SumSent.Retransmits = 5
	page := renderHTML(t, ds)
	runs := parseTables(t, page)["runs"]
	want := map[int64][3]string{
		lat.RunID: {"p50 23.46 µs (latency)", "—", ""},
		udp.RunID: {gbps(runGbps(udp)), "", "—"},
		tcp.RunID: {gbps(runGbps(tcp)), "", "5"},
	}
	seen := 0
	for _, row := range runs.rows {
		id, _ := strconv.ParseInt(row[runs.col(t, "Run")], 10, 64)
		w, ok := want[id]
		if !ok {
			continue
		}
		seen++
		g, share, retr := row[runs.col(t, "Gbit/s")], row[runs.col(t, "% of ceiling")], row[runs.col(t, "Retr.")]
		if cost := row[runs.col(t, "CPU s per Gbit, client / server")]; (id == lat.RunID) != (cost == "— / —") {
			t.Errorf("run %d: CPU s per Gbit %q (only the latency run's should be \"— / —\")", id, cost)
		}
		if g != w[0] || w[1] != "" && share != w[1] || w[2] != "" && retr != w[2] {
			t.Errorf("run %d: %q, %q, %q; want %q", id, g, share, retr, w)
		}
	}
	if seen != len(want) {
		t.Errorf("found %d of the %d runs in the table", seen, len(want))
	}
	// The throughput chart of the runs outside campaigns draws the TCP
	// and UDP runs, not the ping-pong's bytes.
	for id, want := range map[int64]bool{lat.RunID: false, udp.RunID: true, tcp.RunID: true} {
		if got := strings.Contains(string(page), "run "+strconv.FormatInt(id, 10)+" (runs): "); got != want {
			t.Errorf("run %d on the throughput chart: %v, want %v", id, got, want)
		}
	}
}
