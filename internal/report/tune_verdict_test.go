package report

import (
	"strings"
	"testing"
)

// TestTuneVerdictSignificance: the tune verdict carries the U test's
// p-value, as compare gives it. The walkthrough's case — 4 runs before,
// 4 after, the median up 3.7% with one run of each side overlapping
// (p = 4/70 = 0.057) — is "not significant", never an effect of the
// tune; 5 runs against 5 wholly apart are significant; ping-pongs on the
// host are left out of both medians.
func TestTuneVerdictSignificance(t *testing.T) {
	run := func(id int64, gbit float64, tune string) Run {
		r := Run{TuneID: tune}
		r.Result.RunID = id
		r.Result.Start.Client.Hostname, r.Result.Start.Server.Hostname = "a", "b"
		r.Result.End.Seconds = 5
		r.Result.End.SumReceived.BitsPerSecond = gbit * 1e9
		return r
	}
	ping := run(99, 0.001, "j1")
	ping.Result.End.Latency = latencyRuns(t)[0].Result.End.Latency
	tune := []TuneJournal{{ID: "j1", Host: "b", Changes: []TuneChange{{Kind: "sysctl", Target: "net.ipv4.tcp_rmem", Before: "1", After: "2"}}}}
	for _, c := range []struct {
		name string
		runs []Run
		want string
	}{
		{"overlap", []Run{run(1, 9.40, ""), run(2, 9.50, ""), run(3, 9.54, ""), run(4, 9.86, ""),
			run(5, 9.85, "j1"), run(6, 9.87, "j1"), run(7, 9.89, "j1"), run(8, 9.95, "j1"), ping},
			"took the median from 9.52 to 9.88 Gbit/s (+3.8%, p = 0.057, not significant by the U test over whole runs"},
		{"apart", []Run{run(1, 9.40, ""), run(2, 9.50, ""), run(3, 9.54, ""), run(4, 9.45, ""), run(9, 9.46, ""),
			run(5, 9.85, "j1"), run(6, 9.87, "j1"), run(7, 9.89, "j1"), run(8, 9.95, "j1"), run(10, 9.9, "j1")},
			"(+4.5%, p = 0.0079, significant by the U test over whole runs)"},
		{"few", []Run{run(1, 9.40, ""), run(5, 9.85, "j1"), ping},
			"(+4.8%, p = 1, not significant: too few runs to tell (1 against 1))"},
	} {
		m, err := Build(Dataset{Runs: c.runs, Tunes: tune})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(m.Verdict, c.want) {
			t.Errorf("%s: verdict %q lacks %q", c.name, m.Verdict, c.want)
		}
		page := string(renderHTML(t, Dataset{Runs: c.runs, Tunes: tune}))
		if !strings.Contains(page, "Median throughput went from") || !strings.Contains(page, "p = ") {
			t.Errorf("%s: the tuning section lacks the p-value", c.name)
		}
	}
}
