package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/fleet"
)

// TestFleetRunRefuses: bad hosts files, sources and options give one line
// naming the cause, and exit 2, before anything starts.
func TestFleetRunRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.txt", "# rack 7\nn1 10.0.0.1 root@n1\nn2 10.0.0.2\nn3 10.0.0.3\n")
	bad := write("bad.txt", "n1 10.0.0.1\n\nn2 10.0.0.2 -oProxyCommand=x\n")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"fleet", "run"}, "say which hosts: --hosts FILE"},
		{[]string{"fleet", "run", "--hosts", good, "--slurm"}, "give one of --hosts, --lab, --slurm and --k8s"},
		{[]string{"fleet", "run", "--hosts", bad}, bad + ":3: ssh target \"-oProxyCommand=x\" starts with '-'"},
		{[]string{"fleet", "run", "--hosts", filepath.Join(dir, "none.txt")}, "--hosts: open"},
		{[]string{"fleet", "run", "--hosts", good, "--pattern", "star:n9"}, "pattern star:n9: no host is called n9"},
		{[]string{"fleet", "run", "--hosts", good, "--pattern", "mesh"}, "pattern \"mesh\": use pairs, ring or star:HOST"},
		{[]string{"fleet", "run", "--hosts", good, "--threshold", "100"}, "--threshold 100"},
		{[]string{"fleet", "run", "--hosts", good, "-t", "0.5"}, "-t 500ms: at least 1s per test"},
		{[]string{"fleet", "run", "--hosts", good, "-P", "0"}, "-P 0: 1 to 128 streams"},
		{[]string{"fleet", "run", "--hosts", good, "--retests", "9"}, "--retests 9: 0 to 5"},
		{[]string{"fleet", "run", "--k8s", "linerate-agents"}, "--k8s needs --token-file"},
		{[]string{"fleet", "run", "--lab", "rack", "--ssh-config", good}, "--ssh-config goes with --hosts"},
		{[]string{"fleet", "run", "--lab", "Bad!"}, "lab name \"Bad!\""},
		{[]string{"fleet", "run", "--hosts", good, "--engine", "perftest"}, "--engine perftest runs over a lab (--lab NAME)"},
		{[]string{"fleet", "run", "--hosts", good, "--engine", "iperf3"}, "--engine \"iperf3\": native or perftest"},
	}
	for _, tt := range tests {
		_, stderr, code := runCLI(t, tt.args...)
		if code != 2 || !strings.HasPrefix(stderr, "linerate: "+tt.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tt.args[2:], code, stderr, "linerate: "+tt.want)
		}
	}
}

// TestFleetRunSlurmOutsideAllocation: --slurm says how to get an
// allocation.
func TestFleetRunSlurmOutsideAllocation(t *testing.T) {
	for _, k := range []string{"SLURM_JOB_ID", "SLURM_JOB_NODELIST", "SLURM_NODELIST"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	_, stderr, code := runCLI(t, "fleet", "run", "--slurm")
	if code != 2 || !strings.Contains(stderr, "not inside a Slurm allocation") || !strings.Contains(stderr, "salloc -N K") {
		t.Errorf("exit %d, %q", code, stderr)
	}
}

// fleetDoc writes the document of a fleet run made with a runner that
// returns planted figures: a slow send side on n03.
func fleetDoc(t *testing.T) string {
	t.Helper()
	hosts := []fleet.Host{{Name: "n01", Address: "10.0.0.1"}, {Name: "n02", Address: "10.0.0.2"},
		{Name: "n03", Address: "10.0.0.3"}, {Name: "n04", Address: "10.0.0.4"}}
	res, err := fleet.Run(context.Background(), hosts, fleet.Options{Pattern: fleet.Pattern{Kind: fleet.PatternPairs},
		Duration: 10 * time.Second, Streams: 1, Label: "fleet-cli"}, plantedRunner{"n03"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	p := filepath.Join(t.TempDir(), "fleet.json")
	os.WriteFile(p, b, 0o644)
	return p
}

type plantedRunner struct{ slow string }

func (p plantedRunner) Run(_ context.Context, s fleet.Spec) (fleet.Measurement, error) {
	if s.From.Name == p.slow {
		return fleet.Measurement{Gbps: 2}, nil
	}
	if s.From.Name == "n04" && s.To.Name == "n01" {
		return fleet.Measurement{}, errors.New("agent died")
	}
	return fleet.Measurement{Gbps: 9.4 + float64(len(s.To.Name+s.From.Name))/100}, nil
}

// TestReportFleet: report --fleet draws a fleet document as HTML and
// Markdown, says what it wrote (also as JSON), and refuses what is not one.
func TestReportFleet(t *testing.T) {
	doc := fleetDoc(t)
	out := filepath.Join(t.TempDir(), "fleet.html")
	stdout, stderr, code := runCLI(t, "report", "--fleet", doc, "-o", out)
	if code != 0 || !strings.Contains(stdout, "fleet of 4 hosts, 6 pairs, 2 outlier(s)") {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	page, _ := os.ReadFile(out)
	if !strings.Contains(string(page), "Host n03 is slow when it sends") || !strings.Contains(string(page), `class="fl-cell"`) {
		t.Error("the page lacks the blame or the matrix")
	}
	md := filepath.Join(filepath.Dir(out), "fleet.md")
	stdout, _, code = runCLI(t, "report", "--fleet", doc, "-o", md, "--json")
	var rep struct {
		Schema, Verdict string
		Hosts           []string
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil || rep.Schema != reportSchema || len(rep.Hosts) != 4 || !strings.Contains(rep.Verdict, "n03") {
		t.Errorf("--json: exit %d %s", code, stdout)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(out), "fleet-fleet-matrix.svg")); err != nil {
		t.Errorf("Markdown's matrix: %v", err)
	}
	notFleet := filepath.Join(t.TempDir(), "x.json")
	os.WriteFile(notFleet, []byte(`{"schema":"linerate.bench/v1"}`), 0o644)
	for _, args := range [][]string{
		{"report", "--fleet", notFleet, "-o", out},
		{"report", "--fleet", doc, "--last", "3", "-o", out},
		{"report", "--fleet", doc + ".missing", "-o", out},
	} {
		_, stderr, code := runCLI(t, args...)
		if code != 2 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, %q", args[1:], code, stderr)
		}
	}
}
