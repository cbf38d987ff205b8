package metrics

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/linerate/linerate/internal/store"
)

// capturedDoc is one of the runs captured over loopback (the report's
// testdata/latency): a ping-pong or a UDP stream at 20 Mbit/s.
func capturedDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "report", "testdata", "latency", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// kindRuns are, to one peer with one engine, stream count and direction,
// oldest first: an unpaced TCP run at tcpGbps, a UDP run at a rate and a
// ping-pong, each with the same doctor reports (a 9.5 Gbit/s ceiling).
func kindRuns(t *testing.T, tcpGbps float64) []*store.Run {
	tcp := run("lab:ux", "native", 1, tcpGbps, `{"schema":"linerate.bench/v1","start":{"streams":1}}`)
	udp := run("lab:ux", "native", 1, 0.02, capturedDoc(t, "native-udp-20M.json"))
	lat := run("lab:ux", "native", 1, 0.001, capturedDoc(t, "native-tcp.json"))
	for i, r := range []*store.Run{tcp, udp, lat} {
		r.StartedAt = r.StartedAt.Add(time.Duration(i) * time.Minute)
		r.ClientDoctor, r.ServerDoctor = json.RawMessage(clientDoc), json.RawMessage(serverDoc)
	}
	return []*store.Run{tcp, udp, lat}
}

// TestBenchKinds: a UDP run at a rate and a ping-pong made after a TCP
// run are exported under their own kind, beside it: neither replaces the
// TCP run's goodput, and neither has a goodput or a ceiling of its own.
func TestBenchKinds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.db")
	writeRuns(t, path, kindRuns(t, 7)...)
	e := benchExposition(t, path)
	e.lint(t, "bench kinds")
	e.promtoolCheckMetrics(t, "bench kinds")
	for _, kind := range []string{"tcp", "udp", "latency"} {
		if len(e.samples("linerate_bench_run_timestamp_seconds", map[string]string{"kind": kind})) != 1 {
			t.Errorf("no run timestamp of kind %s", kind)
		}
	}
	gp := e.samples("linerate_bench_goodput_bytes_per_second", nil)
	if len(gp) != 1 || sampleValue(gp[0]) != 7e9/8 || labelOf(gp[0], "kind") != "tcp" {
		t.Errorf("goodput series: %v, want the TCP run's alone", gp)
	}
	if c := e.samples("linerate_bench_ceiling_bytes_per_second", nil); len(c) != 1 || labelOf(c[0], "kind") != "tcp" {
		t.Errorf("ceiling series: %v, want the TCP run's alone", c)
	}
	loss := e.samples("linerate_bench_udp_lost_ratio", map[string]string{"kind": "udp"})
	if len(loss) != 1 || sampleValue(loss[0]) < 0 || sampleValue(loss[0]) > 1 {
		t.Errorf("UDP loss: %v", loss)
	}
	if len(e.samples("linerate_bench_rtt_seconds", map[string]string{"kind": "latency"})) != 1 {
		t.Error("the ping-pong's RTT summary is missing")
	}
}

// TestGoodputAlertKinds runs the shipped rules (promtool test rules) over
// what linerate exports for the runs of TestBenchKinds: with the TCP run
// at 7 Gbit/s against its 9.5 Gbit/s ceiling, LinerateGoodputBelowCeiling
// fires once, for the TCP series, after a UDP run at 20 Mbit/s and a
// ping-pong (before kinds, the UDP run replaced it and fired at 0.2% of
// the ceiling, and the ping-pong removed the goodput series so that the
// alert resolved); with the TCP run at 9.4 Gbit/s it fires for nothing,
// the UDP run's 0.02 Gbit/s included.
func TestGoodputAlertKinds(t *testing.T) {
	pt := promtool(t)
	for _, c := range []struct {
		tcpGbps float64
		fires   bool
	}{{7, true}, {9.4, false}} {
		t.Run(fmt.Sprint(c.tcpGbps), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "results.db")
			writeRuns(t, path, kindRuns(t, c.tcpGbps)...)
			e := benchExposition(t, path)
			rules, err := filepath.Abs(filepath.Join("..", "..", "deploy", "prometheus", "linerate.rules.yml"))
			if err != nil {
				t.Fatal(err)
			}
			var y strings.Builder
			fmt.Fprintf(&y, "rule_files:\n  - %s\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n", rules)
			for _, s := range promSeries(e) {
				fmt.Fprintf(&y, "      - series: '%s'\n        values: '%sx5'\n", s[0], s[1])
			}
			fmt.Fprintf(&y, "    alert_rule_test:\n      - eval_time: 2m\n        alertname: LinerateGoodputBelowCeiling\n        exp_alerts:")
			if c.fires {
				fmt.Fprintf(&y, `
          - exp_labels: {severity: warning, job: linerate, instance: "h1:9101", peer: "lab:ux", engine: native, streams: "1", direction: send, kind: tcp}
            exp_annotations:
              summary: "The last native run from h1:9101 to lab:ux (1 stream) reached less than 90%% of its ceiling"
              description: "The last stored run (native, 1 stream, send) to lab:ux moved 875MB/s, under 90%% of the TCP goodput ceiling of its interfaces. Run 'linerate doctor' on both ends for what limits the link, then 'linerate bench lab:ux --repeat 5 --sweep-streams 1,2,4,8' to see whether more streams or another CPU placement reach the ceiling; 'linerate report' explains the variance."
`)
			} else {
				y.WriteString(" []\n")
			}
			test := filepath.Join(dir, "kinds.test.yml")
			if err := os.WriteFile(test, []byte(y.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(pt, "test", "rules", test).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "SUCCESS") {
				t.Errorf("promtool test rules: %v\n%s\n%s", err, out, y.String())
			}
		})
	}
}

// benchExposition is what one scrape exports for the database at path.
func benchExposition(t *testing.T, path string) *exposition {
	t.Helper()
	runs, err := ReadBench(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	s := NewSnapshot(time.Now())
	s.Bench = runs
	return expose(t, NewRegistry(NewCollector(func() *Snapshot { return s }, "test")))
}

// promSeries lists the exposition's bench samples as promtool input
// series (name{labels} and value), with the job and instance labels a
// scrape adds.
func promSeries(e *exposition) [][2]string {
	var out [][2]string
	for name, mf := range e.mfs {
		if !strings.HasPrefix(name, "linerate_bench_") {
			continue
		}
		for _, m := range mf.Metric {
			labels := []string{`job="linerate"`, `instance="h1:9101"`}
			for _, l := range m.Label {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			series := func(n string, v float64, extra ...string) {
				out = append(out, [2]string{n + "{" + strings.Join(append(slices.Clone(labels), extra...), ",") + "}", fmt.Sprint(v)})
			}
			if sm := m.Summary; sm != nil {
				for _, q := range sm.Quantile {
					series(name, q.GetValue(), fmt.Sprintf("quantile=%q", fmt.Sprint(q.GetQuantile())))
				}
				series(name+"_sum", sm.GetSampleSum())
				series(name+"_count", float64(sm.GetSampleCount()))
				continue
			}
			series(name, sampleValue(m))
		}
	}
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return out
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
