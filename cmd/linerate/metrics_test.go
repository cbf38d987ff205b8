package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/store"
)

// promFamilies parses a textfile as node_exporter's textfile collector
// does, and fails on any sample timestamp (the collector would skip the
// whole file).
func promFamilies(t *testing.T, text []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("textfile does not parse: %v\n%s", err, text)
	}
	for name, mf := range mfs {
		for _, m := range mf.Metric {
			if m.TimestampMs != nil {
				t.Errorf("%s has a timestamp", name)
			}
		}
	}
	return mfs
}

// promValue returns the value of the one sample of name with labels want,
// and whether there is exactly one.
func promValue(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
	var found []float64
next:
	for _, m := range mf.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			found = append(found, m.Gauge.GetValue())
		case m.Counter != nil:
			found = append(found, m.Counter.GetValue())
		}
	}
	if len(found) != 1 {
		return 0, false
	}
	return found[0], true
}

// TestDoctorPromDarkLane: doctor --prom over the captured dark-lane tree
// writes a textfile holding every lane's power as the tree's decoded
// module gives it, the module's thresholds, and the transceiver finding,
// beside the usual report on stdout and the usual exit status.
func TestDoctorPromDarkLane(t *testing.T) {
	tree := filepath.Join("..", "..", "testdata", "hosts", "t6-cwdm4-dark-lane")
	file := filepath.Join(t.TempDir(), "linerate.prom")
	code, out, stderr := runLab(t, "doctor", "--root", tree, "--prom", file)
	if code != exitFindings || !strings.Contains(out, "transceiver.lane_dark") {
		t.Fatalf("doctor --prom: exit %d, want 1 (a critical finding) with the report\n%s%s", code, out, stderr)
	}
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	mfs := promFamilies(t, text)

	code, js, _ := runLab(t, "doctor", "--root", tree, "--json")
	var rep doctor.Report
	if code != exitFindings || json.Unmarshal([]byte(js), &rep) != nil {
		t.Fatalf("doctor --json: exit %d", code)
	}
	var lanes int
	for _, n := range rep.NICs {
		if n.Transceiver == nil || !n.Transceiver.Readable {
			continue
		}
		for _, ln := range n.Transceiver.Lanes {
			lanes++
			lbl := map[string]string{"interface": n.Interface, "lane": strconv.Itoa(ln.Lane)}
			for name, mw := range map[string]*float64{"linerate_transceiver_rx_power_watts": ln.RXPowerMW, "linerate_transceiver_tx_power_watts": ln.TXPowerMW} {
				v, ok := promValue(mfs, name, lbl)
				if !ok || math.Abs(v*1000-*mw) > 1e-12 {
					t.Errorf("%s%v = %v (found %v), decoded %v mW", name, lbl, v, ok, *mw)
				}
			}
		}
	}
	if lanes != 4 {
		t.Errorf("%d lanes decoded, want the CWDM4's 4", lanes)
	}
	for lane, w := range map[string]float64{"1": 0.000646, "2": 0.000705, "3": 0, "4": 0.000759} {
		if v, ok := promValue(mfs, "linerate_transceiver_rx_power_watts", map[string]string{"interface": "ens5f4", "lane": lane}); !ok || v != w {
			t.Errorf("lane %s RX power %v W, want %v (HOST.md)", lane, v, w)
		}
	}
	if v, ok := promValue(mfs, "linerate_transceiver_rx_power_threshold_watts", map[string]string{"interface": "ens5f4", "threshold": "low_alarm"}); !ok || v != 0.0000447 {
		t.Errorf("low alarm %v W, want 4.47e-05", v)
	}
	var xcvrFindings []string
	for _, m := range mfs["linerate_finding"].GetMetric() {
		for _, l := range m.Label {
			if l.GetName() == "id" && strings.HasPrefix(l.GetValue(), "transceiver.") {
				xcvrFindings = append(xcvrFindings, l.GetValue())
			}
		}
	}
	if len(xcvrFindings) != 1 || xcvrFindings[0] != "transceiver.lane_dark" {
		t.Errorf("transceiver findings %v, want [transceiver.lane_dark] (HOST.md)", xcvrFindings)
	}
	if _, ok := mfs["linerate_bench_goodput_bytes_per_second"]; ok {
		t.Error("bench results of this machine in a textfile of a captured tree")
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o644 {
		t.Errorf("textfile mode %v, want 0644", fi.Mode().Perm())
	}
}

// TestDoctorPromStdoutAndErrors: --prom - writes only the metrics to
// stdout; --prom - with --json, and a directory, are usage errors.
func TestDoctorPromStdoutAndErrors(t *testing.T) {
	tree := filepath.Join("..", "..", "testdata", "hosts", "xeon-xl710-gen2-x4")
	code, out, stderr := runLab(t, "doctor", "--root", tree, "--prom", "-")
	if code == exitError || !strings.HasPrefix(out, "# HELP linerate_") {
		t.Fatalf("--prom -: exit %d\n%s%s", code, out, stderr)
	}
	mfs := promFamilies(t, []byte(out))
	if v, ok := promValue(mfs, "linerate_pcie_link_downgraded", nil); !ok || v != 1 {
		t.Errorf("the Gen2 x4 XL710: pcie_link_downgraded %v (found %v), want 1", v, ok)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--prom", "-", "--json"}, "both write to stdout"},
		{[]string{"--prom", t.TempDir()}, "is a directory"},
		{[]string{"--prom", filepath.Join(t.TempDir(), "nodir", "x.prom")}, "does the directory exist"},
	} {
		code, _, stderr := runLab(t, append([]string{"doctor", "--root", tree}, c.args...)...)
		if code != exitError || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d %q, want 2 and one line with %q", c.args, code, stderr, c.want)
		}
	}
}

// TestDoctorPromLiveBench: on this host, doctor --prom adds the last runs
// of the results database.
func TestDoctorPromLiveBench(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("LINERATE_STATE_DIR", dir)
	st, err := store.Open(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	r := &store.Run{StartedAt: time.Now(), Engine: "native", Peer: "198.18.0.2", Streams: 2, Direction: "send",
		DurationS: 3, Gbps: 8, SentGbps: 8, Retransmits: 3, Result: json.RawMessage(`{}`)}
	if err := st.AddRun(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	st.Close()
	file := filepath.Join(dir, "linerate.prom")
	if code, out, stderr := runLab(t, "doctor", "--prom", file); code == exitError {
		t.Fatalf("doctor --prom: exit %d\n%s%s", code, out, stderr)
	}
	text, _ := os.ReadFile(file)
	mfs := promFamilies(t, text)
	lbl := map[string]string{"peer": "198.18.0.2", "engine": "native", "streams": "2", "direction": "send"}
	if v, ok := promValue(mfs, "linerate_bench_goodput_bytes_per_second", lbl); !ok || v != 1e9 {
		t.Errorf("bench goodput %v (found %v), want 1e9 B/s", v, ok)
	}
	if v, ok := promValue(mfs, "linerate_scrape_errors_total", map[string]string{"source": "store"}); !ok || v != 0 {
		t.Errorf("store errors %v (found %v), want 0", v, ok)
	}
}

// TestDoctorPromUnreadableModule: a module that does not answer (EIO in
// the tree) is readable 0 and one module_eeprom scrape error, and the
// textfile still holds the rest of the host.
func TestDoctorPromUnreadableModule(t *testing.T) {
	tree := filepath.Join("..", "..", "testdata", "hosts", "t6-cwdm4-unreadable")
	code, out, stderr := runLab(t, "doctor", "--root", tree, "--prom", "-")
	if code != exitFindings {
		t.Fatalf("exit %d, want 1 (transceiver.unreadable is critical)\n%s%s", code, out, stderr)
	}
	mfs := promFamilies(t, []byte(out))
	for _, c := range []struct {
		name string
		lbl  map[string]string
		want float64
	}{
		{"linerate_transceiver_readable", map[string]string{"interface": "ens5f4"}, 0},
		{"linerate_scrape_errors_total", map[string]string{"source": "module_eeprom"}, 1},
		{"linerate_finding", map[string]string{"id": "transceiver.unreadable", "subject": "ens5f4"}, 1},
		{"linerate_pcie_link_width_lanes", map[string]string{"interface": "ens5f4"}, 16},
	} {
		if v, ok := promValue(mfs, c.name, c.lbl); !ok || v != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.lbl, v, ok, c.want)
		}
	}
}
