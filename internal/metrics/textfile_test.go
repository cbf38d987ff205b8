package metrics

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestWriteTextfile: the file is replaced whole, world-readable, with no
// temporary file left beside it; "-" writes to stdout; a directory or a
// missing directory is a clear error that leaves the old file alone.
func TestWriteTextfile(t *testing.T) {
	l := treeLive(t, "t6-cwdm4-dark-lane")
	reg := NewRegistry(NewCollector(l.Snapshot, "test"))
	dir := t.TempDir()
	path := filepath.Join(dir, "linerate.prom")
	if err := os.WriteFile(path, []byte("# old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteTextfile(path, reg, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e := parseExposition(t, b)
	e.lint(t, "textfile")
	if e.value(t, "linerate_transceiver_rx_power_watts", map[string]string{"interface": "ens5f4", "lane": "4"}) != 0.000759 {
		t.Error("textfile lacks lane 4's RX power")
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644 (node_exporter runs as another user)", fi.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("%d files in the directory after the write, want only linerate.prom", len(ents))
	}

	var out bytes.Buffer
	if err := WriteTextfile("-", reg, &out); err != nil || !bytes.Contains(out.Bytes(), []byte("linerate_nic_info{")) {
		t.Errorf("- to stdout: %v\n%s", err, out.String())
	}

	if err := WriteTextfile(dir, reg, nil); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: %v", err)
	}
	if err := WriteTextfile(filepath.Join(dir, "no", "such", "x.prom"), reg, nil); err == nil || !strings.Contains(err.Error(), "does the directory exist") {
		t.Errorf("a missing directory: %v", err)
	}
	if b2, _ := os.ReadFile(path); !bytes.Equal(b, b2) {
		t.Error("a failed write changed the existing file")
	}
}

// TestTextfileFailedRename: when the rename fails, no temporary file is
// left, and its name could never have been read as *.prom.
func TestTextfileFailedRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "linerate.prom")
	os.Mkdir(path, 0o755)
	os.WriteFile(filepath.Join(path, "x"), nil, 0o644) // a non-empty directory: rename(2) fails
	if err := writeAtomic(path, []byte("linerate_x 1\n")); err == nil || !strings.Contains(err.Error(), "replacing") {
		t.Fatalf("rename over a non-empty directory: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("%d entries after a failed write, want only the directory in the way", len(ents))
	}
	if m, _ := filepath.Match("*.prom", strings.Replace(tempPattern(path), "*", "123456", 1)); m {
		t.Errorf("temporary name %q matches *.prom", tempPattern(path))
	}
}

// TestAlertRules: the rules and the example configuration pass promtool's
// checks, and the rules' unit tests (dark lane, RX power low, PCIe, FEC
// growth, goodput, findings) pass.
func TestAlertRules(t *testing.T) {
	pt := promtool(t)
	dir := filepath.Join("..", "..", "deploy", "prometheus")
	for _, args := range [][]string{
		{"check", "rules", "linerate.rules.yml"},
		{"test", "rules", "linerate.rules.test.yml"},
		{"check", "config", "prometheus.yml"},
	} {
		cmd := exec.Command(pt, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SUCCESS") {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestRulesUseExportedNames: every linerate_ metric the rules and their
// tests name is one this package exports, so a rename cannot leave an
// alert that never fires.
func TestRulesUseExportedNames(t *testing.T) {
	known := map[string]bool{}
	for _, d := range allDescs {
		m := regexp.MustCompile(`fqName: "([^"]+)"`).FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read the name of %s", d)
		}
		known[m[1]] = true
	}
	for _, f := range []string{"linerate.rules.yml", "linerate.rules.test.yml", "prometheus.yml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "prometheus", f))
		if err != nil {
			t.Fatal(err)
		}
		names := regexp.MustCompile(`\blinerate_[a-z_]+`).FindAllString(string(b), -1)
		if f == "linerate.rules.yml" && len(names) < 10 {
			t.Errorf("%s names only %d metrics", f, len(names))
		}
		for _, n := range names {
			if !known[n] && !slices.Contains([]string{"linerate_"}, n) {
				t.Errorf("%s names %s, which linerate does not export", f, n)
			}
		}
	}
}
