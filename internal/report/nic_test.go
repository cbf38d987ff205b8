package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/result"
)

// nicRuns are three runs between two hosts: the first dropped frames at
// the receiver for lack of RX buffers (mlx5's rx_out_of_buffer) and
// sent pause; the second dropped nothing; the third's server was not
// read.
func nicRuns() []Run {
	run := func(id int64, client, server *result.NICDelta) Run {
		var r Run
		r.Label = "nic"
		r.Result.RunID = id
		r.Result.Engine = "native"
		r.Result.Start.Streams = 1
		r.Result.Start.Client.Hostname, r.Result.Start.Server.Hostname = "crow", "vulture"
		r.Result.End.Seconds = 10
		r.Result.End.SumReceived.BitsPerSecond = 64.5e9
		r.Result.End.NICCounters = &result.NICCounters{Client: client, Server: server}
		return r
	}
	quiet := &result.NICDelta{Interface: "enp1s0f0np0", Driver: "mlx5_core", Deltas: map[string]uint64{"rx_no_buffer": 0, "qdisc_drops": 0}}
	dropped := &result.NICDelta{Interface: "enp1s0f0np0", Driver: "mlx5_core",
		Deltas:  map[string]uint64{"rx_no_buffer": 1_234_567, "pause_tx": 88, "rx_dropped": 0},
		Sources: map[string]map[string]uint64{"rx_no_buffer": {"rx_out_of_buffer": 1_234_567}, "pause_tx": {"tx_pause_ctrl_phy": 88}, "rx_dropped": {"link.rx_dropped": 0}}}
	return []Run{
		run(101, quiet, dropped),
		run(102, quiet, quiet),
		run(103, quiet, &result.NICDelta{Interface: "enp1s0f0np0", NotRead: "no answer within 5s"}),
	}
}

// TestNICCountersSection: the report's NIC table has a row per run, end
// and cause that grew, in HTML and in Markdown, with the counters behind
// each cause and what it means; an end not read is said so.
func TestNICCountersSection(t *testing.T) {
	ds := Dataset{Runs: nicRuns()}
	tabs := parseTables(t, renderHTML(t, ds))
	tab, ok := tabs["nic-counters"]
	if !ok {
		t.Fatalf("no nic-counters table; tables %v", keys(tabs))
	}
	want := [][]string{
		{"101", "nic", "server (vulture)", "enp1s0f0np0", "rx_no_buffer", "1234567", "rx_out_of_buffer", "dropped 1.2 M frames for lack of RX buffers"},
		{"101", "nic", "server (vulture)", "enp1s0f0np0", "pause_tx", "88", "tx_pause_ctrl_phy", "sent 88 pause frames (it asked the peer to stop)"},
	}
	if len(tab.rows) != len(want) {
		t.Fatalf("rows %q, want %q", tab.rows, want)
	}
	for i := range want {
		if strings.Join(tab.rows[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("row %d: %q, want %q", i, tab.rows[i], want[i])
		}
	}
	m, err := Build(ds)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "r.md")
	if err := WriteMarkdown(path, m); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"### NIC counters",
		"(5 end-runs read): 2 counters grew",
		"| 101 | nic | server (vulture) | enp1s0f0np0 | rx\\_no\\_buffer | 1234567 | rx\\_out\\_of\\_buffer | dropped 1.2 M frames for lack of RX buffers |",
		"Not read: server enp1s0f0np0: no answer within 5s.",
	} {
		if !bytes.Contains(md, []byte(w)) {
			t.Errorf("the Markdown lacks %q", w)
		}
	}
}

// TestNICCountersNothingGrew: counters read and nothing grew is said in
// a sentence, with no table; runs without counters (older data) leave
// the part out.
func TestNICCountersNothingGrew(t *testing.T) {
	runs := nicRuns()[1:2]
	page := renderHTML(t, Dataset{Runs: runs})
	if _, ok := parseTables(t, page)["nic-counters"]; ok || !bytes.Contains(page, []byte("none grew; the NICs dropped nothing")) {
		t.Error("nothing grew: want the sentence and no table")
	}
	runs[0].Result.End.NICCounters = nil
	if page := renderHTML(t, Dataset{Runs: runs}); bytes.Contains(page, []byte("NIC counters")) {
		t.Error("runs without counters show a NIC part")
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
