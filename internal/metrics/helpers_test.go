package metrics

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/hostfs"
)

// hostsDir holds the captured host trees.
var hostsDir = filepath.Join("..", "..", "testdata", "hosts")

func openTree(t testing.TB, name string) *hostfs.FS {
	t.Helper()
	return openTreeAt(t, filepath.Join(hostsDir, name))
}

func openTreeAt(t testing.TB, dir string) *hostfs.FS {
	t.Helper()
	fs, err := hostfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	return fs
}

// trees lists every captured host tree.
func trees(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(hostsDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	if len(out) < 10 {
		t.Fatalf("found %d host trees in %s, want the 10 or more committed", len(out), hostsDir)
	}
	return out
}

// exposition is a registry's text output, parsed back.
type exposition struct {
	text []byte
	mfs  map[string]*dto.MetricFamily
}

func expose(t testing.TB, g prometheus.Gatherer) *exposition {
	t.Helper()
	var buf bytes.Buffer
	if err := Encode(&buf, g); err != nil {
		t.Fatal(err)
	}
	return parseExposition(t, buf.Bytes())
}

func parseExposition(t testing.TB, text []byte) *exposition {
	t.Helper()
	// Legacy names, as node_exporter's textfile collector reads them.
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v\n%s", err, text)
	}
	return &exposition{text: text, mfs: mfs}
}

// samples returns the samples of family name whose labels include want.
func (e *exposition) samples(name string, want map[string]string) []*dto.Metric {
	mf := e.mfs[name]
	if mf == nil {
		return nil
	}
	var out []*dto.Metric
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
		out = append(out, m)
	}
	return out
}

// value returns the one sample of family name with labels want.
func (e *exposition) value(t testing.TB, name string, want map[string]string) float64 {
	t.Helper()
	s := e.samples(name, want)
	if len(s) != 1 {
		t.Fatalf("%s%v: %d samples, want 1", name, want, len(s))
	}
	return sampleValue(s[0])
}

func sampleValue(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

// lint runs promlint over the exposition and fails on any problem.
func (e *exposition) lint(t testing.TB, what string) {
	t.Helper()
	problems, err := promlint.New(bytes.NewReader(e.text)).Lint()
	if err != nil {
		t.Fatalf("%s: promlint: %v", what, err)
	}
	for _, p := range problems {
		t.Errorf("%s: promlint: %s: %s", what, p.Metric, p.Text)
	}
	for name, mf := range e.mfs {
		for _, m := range mf.Metric {
			if m.TimestampMs != nil {
				t.Errorf("%s: %s has a sample timestamp (node_exporter's textfile collector would skip the file)", what, name)
			}
		}
	}
}

// promtool returns promtool's path. Without it the test fails under
// CI=true and is skipped elsewhere (Debian's prometheus package gives it).
func promtool(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is missing and CI=true: install Debian's prometheus package")
		}
		t.Skip("promtool not installed (Debian package prometheus)")
	}
	return p
}

// promtoolCheckMetrics runs `promtool check metrics` on the exposition:
// it exits 0 and prints nothing when the text is clean.
func (e *exposition) promtoolCheckMetrics(t testing.TB, what string) {
	t.Helper()
	cmd := exec.Command(promtool(t), "check", "metrics")
	cmd.Stdin = bytes.NewReader(e.text)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("%s: promtool check metrics: %v\n%s", what, err, out)
	}
}

// treeEthtool serves a captured tree's ethtool facts as a live host's
// netlink would, counting module reads; failModule, when set, is the
// error line every module read returns ("EIO: ...").
type treeEthtool struct {
	fs          *hostfs.FS
	moduleReads map[string]int
	failModule  string
}

func (s *treeEthtool) load(iface string) *ethtool.Facts {
	f, err := ethtool.Load(s.fs, iface)
	if err != nil || f == nil {
		return &ethtool.Facts{NotRead: map[string]string{}}
	}
	return f
}

func (s *treeEthtool) exceptModule(iface string) *ethtool.Facts {
	f := s.load(iface)
	f.Module, f.ModuleError = nil, ""
	for k := range f.NotRead {
		if strings.HasPrefix(k, ethtool.FactModule) {
			delete(f.NotRead, k)
		}
	}
	return f
}

func (s *treeEthtool) module(iface string) *ethtool.Facts {
	s.moduleReads[iface]++
	if s.failModule != "" {
		return &ethtool.Facts{ModuleError: s.failModule,
			NotRead: map[string]string{ethtool.FactModule: "the module EEPROM cannot be read: " + s.failModule}}
	}
	f := s.load(iface)
	out := &ethtool.Facts{Module: f.Module, ModuleError: f.ModuleError, NotRead: map[string]string{}}
	for k, v := range f.NotRead {
		if strings.HasPrefix(k, ethtool.FactModule) {
			out.NotRead[k] = v
		}
	}
	return out
}

func (s *treeEthtool) close() error { return nil }
