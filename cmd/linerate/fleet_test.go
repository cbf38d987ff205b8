package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	typo := write("typo.txt", "a 198.18.0.1\n# a typo\nb 198.18.0.300\n")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"fleet", "run"}, "say which hosts: --hosts FILE"},
		{[]string{"fleet", "run", "--hosts", good, "--slurm"}, "give one of --hosts, --lab, --slurm and --k8s"},
		{[]string{"fleet", "run", "--hosts", bad}, bad + ":3: ssh target \"-oProxyCommand=x\" starts with '-'"},
		{[]string{"fleet", "run", "--hosts", filepath.Join(dir, "none.txt")}, "--hosts: open"},
		{[]string{"fleet", "run", "--hosts", good, "--pattern", "star:n9"}, "pattern star:n9: no host is called n9"},
		{[]string{"fleet", "run", "--hosts", good, "--pattern", "mesh"}, "pattern \"mesh\": use pairs, ring, star:HOST or incast:HOST"},
		{[]string{"fleet", "run", "--hosts", good, "--threshold", "100"}, "--threshold 100"},
		{[]string{"fleet", "run", "--hosts", good, "-t", "0.5"}, "-t 500ms: at least 1s per test"},
		{[]string{"fleet", "run", "--hosts", good, "-P", "0"}, "-P 0: 1 to 128 streams"},
		{[]string{"fleet", "run", "--hosts", good, "--retests", "9"}, "--retests 9: 0 to 5"},
		{[]string{"fleet", "run", "--k8s", "linerate-agents"}, "--k8s needs --token-file"},
		{[]string{"fleet", "run", "--lab", "rack", "--ssh-config", good}, "--ssh-config goes with --hosts"},
		{[]string{"fleet", "run", "--lab", "Bad!"}, "lab name \"Bad!\""},
		{[]string{"fleet", "run", "--hosts", typo}, typo + ":3: address \"198.18.0.300\": not a valid IP address"},
		{[]string{"fleet", "run", "--hosts", good, "--only", "n1,n9"}, "--only: no host is called n9"},
		{[]string{"fleet", "run", "--hosts", good, "--only", "n1"}, "--only n1: a fleet needs at least 2 hosts"},
		{[]string{"fleet", "run", "--hosts", good, "--design", "sampled"}, "--partners 4 with 3 hosts"},
		{[]string{"fleet", "run", "--hosts", good, "--design", "most"}, "--design \"most\": all or sampled"},
		{[]string{"fleet", "run", "--hosts", good, "--partners", "2"}, "--partners goes with --design sampled"},
		{[]string{"fleet", "run", "--hosts", good, "--seed", "-3"}, "--seed -3: a positive number"},
		{[]string{"fleet", "run", "--hosts", good, "--engine", "perftest"}, "--engine perftest runs over a lab (--lab NAME)"},
		{[]string{"fleet", "run", "--hosts", good, "--engine", "iperf3"}, "--engine \"iperf3\": native or perftest"},
		{[]string{"fleet", "run", "--hosts", good, "--latency"}, "--latency goes with --engine perftest"},
		{[]string{"fleet", "run", "--lab", "rack", "--engine", "perftest", "--latency", "--threshold", "80"}, "--threshold is a share of the best bandwidth; with --latency a test is bad above 2.1 times"},
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
	if code != 0 || !strings.Contains(stdout, "fleet of 4 hosts, 6 pairs, 2 outliers") {
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

// TestFleetPlan: --plan prints the schedule, the number of tests and the
// time, runs nothing and needs no agent (the hosts of these lists do not
// exist); 64 hosts plan within 5 minutes and 1,000 within 15 at 10 s a
// test with --concurrent, sampled being the default beyond 16 hosts.
// --parallel is --concurrent's old, hidden name.
func TestFleetPlan(t *testing.T) {
	dir := t.TempDir()
	list := func(n int) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "node%04d 10.%d.%d.%d\n", i, i/65536, i/256%256, i%256)
		}
		p := filepath.Join(dir, fmt.Sprintf("hosts-%d.txt", n))
		os.WriteFile(p, []byte(b.String()), 0o644)
		return p
	}
	for _, tt := range []struct {
		n      int
		args   []string
		design string
		tests  int
		maxS   float64
	}{
		{6, nil, "all", 30, 0},
		{64, []string{"--concurrent"}, "sampled", 256, 300},
		{1000, []string{"--concurrent"}, "sampled", 4000, 900},
		{1000, []string{"--parallel", "--design", "sampled", "--partners", "4"}, "sampled", 4000, 900},
		{12, []string{"--design", "sampled", "--partners", "4", "--concurrent", "--seed", "5"}, "sampled", 48, 0},
	} {
		args := append([]string{"fleet", "run", "--hosts", list(tt.n), "--plan", "--json"}, tt.args...)
		stdout, stderr, code := runCLI(t, args...)
		var p struct {
			Design    string  `json:"design"`
			Hosts     int     `json:"hosts"`
			Tests     int     `json:"tests"`
			Legs      int     `json:"legs"`
			EstimateS float64 `json:"estimate_s"`
			Parallel  bool    `json:"parallel"`
			Seed      int64   `json:"seed"`
		}
		if code != 0 || json.Unmarshal([]byte(stdout), &p) != nil {
			t.Fatalf("%v: exit %d\n%s%s", args[2:], code, stdout, stderr)
		}
		if p.Design != tt.design || p.Hosts != tt.n || p.Tests != tt.tests || p.Legs == 0 || p.EstimateS <= 0 {
			t.Errorf("%v: %+v", args[4:], p)
		}
		if tt.maxS > 0 && (p.EstimateS > tt.maxS || !p.Parallel) {
			t.Errorf("%d hosts: estimate %g s, target %g s (parallel %v)", tt.n, p.EstimateS, tt.maxS, p.Parallel)
		}
		if tt.design == "sampled" && p.Seed <= 0 {
			t.Errorf("%d hosts: no seed recorded", tt.n)
		}
	}
	stdout, _, code := runCLI(t, "fleet", "run", "--hosts", list(12), "--plan", "--design", "sampled", "--seed", "5", "--concurrent")
	for _, want := range []string{"fleet plan: 12 hosts, design sampled (4 partners each, seed 5): 48 tests in 4 rounds, 8 legs",
		"agents ", "(ssh, 8 at a time)", "round 4: ", "nothing was run"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("exit %d; the plan lacks %q:\n%s", code, want, stdout)
		}
	}
	// The same seed draws the same sample.
	again, _, _ := runCLI(t, "fleet", "run", "--hosts", list(12), "--plan", "--design", "sampled", "--seed", "5", "--concurrent")
	if again != stdout {
		t.Errorf("seed 5 planned twice differently:\n%s\n%s", stdout, again)
	}
}

// TestFleetAdvice: what a fleet run says to run next works as printed:
// through the lab, ssh or srun that reaches the host, with its interface,
// and a slow path is tested again with --only.
func TestFleetAdvice(t *testing.T) {
	res := &fleet.Result{Hosts: []fleet.Host{{Name: "h01", Address: "198.18.0.1", Iface: "lab0"},
		{Name: "h03", Address: "198.18.0.3", SSH: "root@h03-mgmt", Iface: "ens5f0np0"}}}
	host := fleet.Outlier{Kind: fleet.KindHost, Name: "h03", Direction: fleet.DirSend, Cause: fleet.CauseSlow}
	path := fleet.Outlier{Kind: fleet.KindPath, Name: "h01-h03", Direction: fleet.DirSend, Cause: fleet.CauseSlow, Partners: []string{"h01", "h03"}}
	failed := fleet.Outlier{Kind: fleet.KindHost, Name: "h03", Direction: fleet.DirBoth, Cause: fleet.CauseFailed}
	base := fleetFlags{duration: seconds(10 * time.Second), streams: 1, port: 5301}
	lab, ssh, slurm := base, base, base
	lab.labName = "uxf"
	rdma := lab
	rdma.engine, rdma.latency = "perftest", true
	ssh.hostsFile, ssh.sshConfig = "my hosts.txt", "ssh_config"
	ssh.streams = 4
	for _, tt := range []struct {
		a    advisor
		o    fleet.Outlier
		want string
	}{
		{advisor{f: lab, src: &fleetSource{kind: "lab"}, bin: "linerate"}, host, "linerate lab exec uxf h03 -- linerate doctor --iface ens5f0np0   #"},
		{advisor{f: lab, src: &fleetSource{kind: "lab"}, bin: "linerate"}, path, "linerate fleet run --lab uxf -t 10 --only h01,h03 --retests 2   #"},
		{advisor{f: rdma, src: &fleetSource{kind: "lab"}, bin: "linerate"}, path, "linerate fleet run --lab uxf --engine perftest --latency -t 10 --only h01,h03 --retests 2   #"},
		{advisor{f: ssh, src: &fleetSource{kind: "hosts"}, bin: "linerate"}, host, "ssh -F ssh_config root@h03-mgmt linerate doctor --iface ens5f0np0"},
		{advisor{f: ssh, src: &fleetSource{kind: "hosts"}, bin: "linerate"}, path, "linerate fleet run --hosts 'my hosts.txt' --ssh-config ssh_config -P 4 -t 10 --only h01,h03"},
		{advisor{f: ssh, src: &fleetSource{kind: "hosts"}, bin: "linerate"}, failed, "ssh -F ssh_config -o BatchMode=yes -o ConnectTimeout=5 root@h03-mgmt true"},
		{advisor{f: slurm, src: &fleetSource{kind: "slurm"}, bin: "/opt/bin/linerate"}, host, "srun -N1 -n1 -w h03 /opt/bin/linerate doctor --iface ens5f0np0"},
	} {
		got := tt.a.next(res, tt.o)
		if len(got) != 1 || !strings.HasPrefix(got[0], tt.want) {
			t.Errorf("%s %s %s: %q, want %q…", tt.a.src.kind, tt.o.Kind, tt.o.Cause, got, tt.want)
		}
		if len(got) == 1 && strings.Contains(got[0], "<") {
			t.Errorf("a placeholder in %q", got[0])
		}
	}
}
