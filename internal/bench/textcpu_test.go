package bench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/result"
)

// TestCPUColumns: the pinned CPU is shown as pinned even when another is
// busier (the walkthrough's "server cpu0" was the busiest, not the pinned
// CPU 1); the busiest other is shown apart from 10% busy; with nothing
// pinned the busiest CPU is named as such.
func TestCPUColumns(t *testing.T) {
	cpus := map[string]result.CPUSample{"0": {Busy: 100, SoftIRQ: 40}, "1": {Busy: 62, SoftIRQ: 12}}
	for _, c := range []struct {
		pinned []int
		cpus   map[string]result.CPUSample
		want   string
	}{
		{[]int{1}, cpus, "  server pinned cpu1  62% si 12% (other cpu0 100%)"},
		{[]int{0}, cpus, "  server pinned cpu0 100% si 40% (other cpu1 62%)"},
		{[]int{0}, map[string]result.CPUSample{"0": {Busy: 90}, "1": {Busy: 9.9}}, "  server pinned cpu0  90% si  0%"},
		{[]int{0, 1}, cpus, "  server pinned cpu0 100% si 40% cpu1  62% si 12%"},
		{nil, cpus, "  server busiest cpu0 100% si 40%"},
		{[]int{5}, cpus, "  server busiest cpu0 100% si 40%"}, // the pinned CPU was not sampled
		{[]int{1}, nil, ""},
	} {
		if got := cpuColumns("server", c.cpus, c.pinned); got != c.want {
			t.Errorf("pinned %v: %q, want %q", c.pinned, got, c.want)
		}
	}
}

// TestBidirDirections: a --bidir run's end shows each direction as its
// receivers got it, then the sums; a one-way run shows no direction lines.
func TestBidirDirections(t *testing.T) {
	e := &result.End{Seconds: 2, SumSent: result.Sum{Bytes: 4_000_000_000, BitsPerSecond: 16e9},
		SumReceived: result.Received{Bytes: 3_750_000_000, BitsPerSecond: 15e9},
		Streams: []result.StreamEnd{
			{ID: 1, Sender: "client", SentBytes: 2_500_000_000, ReceivedBytes: 2_500_000_000, Retransmits: 7},
			{ID: 2, Sender: "server", SentBytes: 1_500_000_000, ReceivedBytes: 1_250_000_000, Retransmits: 3},
		},
		CPU: result.EndCPU{ClientSeconds: 3, ServerSeconds: 1.5}}
	var b bytes.Buffer
	writeEnd(&b, &result.Start{}, e)
	out := b.String()
	for _, want := range []string{
		"[TX-C]   0.00-2.00   sec  2.33 GBytes  10.0 Gbits/sec     7 retr  1 stream, as received",
		"[RX-C]   0.00-2.00   sec  1.16 GBytes  5.00 Gbits/sec     3 retr  1 stream, as received",
		"[SUM]   0.00-2.00   sec  3.73 GBytes  16.0 Gbits/sec",
		// 15 Gbit/s for 2 s is 30 Gbit: 3 s / 30 and 1.5 s / 30.
		"CPU time: client 3.00 s, server 1.50 s (0.100 and 0.050 CPU s per Gbit)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("bidir end lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "[TX-C]") > strings.Index(out, "[SUM]") {
		t.Errorf("directions after the sum:\n%s", out)
	}
	e.Streams = e.Streams[:1]
	b.Reset()
	writeEnd(&b, &result.Start{}, e)
	if strings.Contains(b.String(), "[TX-C]") {
		t.Errorf("one-way run with direction lines:\n%s", b.String())
	}
}

// TestSharedCPUsNote: the note appears only when both ends share a kernel.
func TestSharedCPUsNote(t *testing.T) {
	s := &result.Start{Client: result.HostInfo{BootID: "x"}, Server: result.HostInfo{BootID: "x"}}
	if !strings.Contains(sharedCPUsNote(s), "one kernel") {
		t.Error("lab: no note")
	}
	s.Server.BootID = "y"
	if sharedCPUsNote(s) != "" {
		t.Error("two machines: a note")
	}
	s.Client.BootID, s.Server.BootID = "", ""
	if sharedCPUsNote(s) != "" {
		t.Error("unknown boot IDs: a note")
	}
}
