package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/gap"
	"github.com/linerate/linerate/internal/result"
)

// gapRuns are the gap model's lab runs (internal/gap/testdata: one limit
// planted in each), as runs of a report, each with its end.gap; with
// ceiling, the sender's doctor report is a 10 GbE PCI NIC's, so that the
// gap is in Gbit/s below its 9.90 Gbit/s goodput.
func gapRuns(t *testing.T, ceiling bool) []Run {
	t.Helper()
	var runs []Run
	for i, name := range []string{"small-sndbuf.json", "small-rcvbuf.json", "busy-receiver.json", "shaped.json"} {
		b, err := os.ReadFile(filepath.Join("..", "gap", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Run    result.Result `json:"run"`
			Doctor struct{ Client, Server json.RawMessage }
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		d := gap.Doctors{Client: s.Doctor.Client, Server: s.Doctor.Server}
		if ceiling {
			d.Client = json.RawMessage(`{"nics": [{"interface": "lab0", "kind": "pci", "mtu": 9000, "speed_mbps": 10000, "limits": {"tcp_goodput_gbps": 9.9}}]}`)
		}
		s.Run.RunID = int64(i + 1)
		s.Run.End.Gap = gap.Of(&s.Run, d)
		runs = append(runs, Run{Result: s.Run})
	}
	return runs
}

func TestGapSection(t *testing.T) {
	for _, tt := range []struct {
		name    string
		ceiling bool
		title   string
	}{
		{"no ceiling: shares of time", false, "share of each run&#39;s time"},
		{"ceiling: Gbit/s", true, "ceiling → measured"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			runs := gapRuns(t, tt.ceiling)
			page := string(renderHTML(t, Dataset{Runs: runs}))
			i := strings.Index(page, `<section id="gap"`)
			if i < 0 {
				t.Fatal("no gap section")
			}
			sec := page[i:]
			sec = sec[:strings.Index(sec, "</section>")]
			// It leads with each run's dominant limit and its fix.
			wants := []string{"Limit: receiver_window", "tcp_rmem max 64 KiB", "Limit: receiver_cpu", "Fix: ", tt.title}
			if !tt.ceiling { // the sender's own report, with its findings and its qdisc
				wants = append(wants, "Limit: sender_buffer", "tcp_wmem max 64 KiB", "Limit: path_rate", "tc qdisc del dev lab0 root")
			}
			for _, want := range wants {
				if !strings.Contains(sec, want) {
					t.Errorf("gap section lacks %q", want)
				}
			}
			if strings.Index(sec, "Limit:") > strings.Index(sec, "<svg") {
				t.Error("the section does not lead with the limits")
			}
			// The verdict names the best run's limit and its fix: run 1,
			// the fastest, held by its send buffer.
			m, err := Build(Dataset{Runs: runs})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(m.Verdict, " Limit: "+runs[0].Result.End.Gap.Dominant) || (!tt.ceiling && !strings.Contains(m.Verdict, "Fix: net.ipv4.tcp_wmem")) {
				t.Errorf("verdict %q", m.Verdict)
			}
			tab := parseTables(t, []byte(page))["gap-shares"]
			if len(tab.rows) != len(runs) {
				t.Fatalf("%d rows for %d runs", len(tab.rows), len(runs))
			}
			for i, r := range runs {
				row := tab.rows[i]
				if row[tab.col(t, "Dominant")] != r.Result.End.Gap.Dominant || row[tab.col(t, "Measured (Gbit/s)")] != gbps(r.Result.End.Gap.MeasuredGbps) {
					t.Errorf("row %v for gap %+v", row, r.Result.End.Gap)
				}
				wantCeil := "—"
				if tt.ceiling {
					wantCeil = "9.90"
				}
				if got := row[tab.col(t, "Ceiling (Gbit/s)")]; got != wantCeil {
					t.Errorf("ceiling %q, want %q", got, wantCeil)
				}
			}
			// One segment per share, a bar per run: the shaped run's whole
			// bar is path_rate's colour (k6).
			if !strings.Contains(sec, `class="swatch k6"`) {
				t.Error("no path_rate segment drawn")
			}
		})
	}
}

// A campaign point without its own gap shows its runs' gaps merged.
func TestGapCampaignPoint(t *testing.T) {
	runs := gapRuns(t, false)
	c := Campaign{}
	c.Points = []Point{{Streams: 1, RunIDs: []int64{2, 4}, Runs: 2}}
	m, err := Build(Dataset{Runs: runs, Campaigns: []Campaign{c}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, m); err != nil {
		t.Fatal(err)
	}
	tab := parseTables(t, b.Bytes())["gap-shares"]
	if len(tab.rows) != 3 || !strings.HasPrefix(tab.rows[0][0], "Campaign 1") {
		t.Fatalf("rows %v: want the point, then runs 1 and 3", tab.rows)
	}
	want := gap.Merge([]*result.Gap{runs[1].Result.End.Gap, runs[3].Result.End.Gap})
	if got := tab.rows[0][tab.col(t, "Dominant")]; got != want.Dominant {
		t.Errorf("point's dominant %q, want %q", got, want.Dominant)
	}
}
