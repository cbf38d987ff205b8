package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/linerate/linerate/internal/c2c"
	"github.com/linerate/linerate/internal/store"
)

// c2cArgs keep the live runs short: the figures are not what these tests
// check.
var c2cArgs = []string{"--samples", "20", "--round-trips", "100"}

func needTwoCPUs(t *testing.T) []int {
	t.Helper()
	allowed, err := c2c.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) < 2 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: this process may use CPU %v only; c2c needs two", allowed)
		}
		t.Skipf("this process may use CPU %v only", allowed) // a developer's pinned shell
	}
	return allowed
}

// TestC2CJSON: --json on this machine is a complete matrix that follows
// docs/schema/c2c-v1.schema.json, and it is stored under the hostname.
func TestC2CJSON(t *testing.T) {
	needTwoCPUs(t)
	db := filepath.Join(t.TempDir(), "results.db")
	out, errOut, code := runCLI(t, append([]string{"c2c", "--json", "--db", db}, c2cArgs...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	sch, err := jsonschema.NewCompiler().Compile("../../docs/schema/c2c-v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(doc); err != nil {
		t.Fatalf("c2c --json breaks its schema: %v\n%s", err, out)
	}
	var r c2c.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	n := len(r.CPUs)
	for i := range n {
		for j := range n {
			if v := r.MatrixNs[i][j]; (v == nil) != (i == j) {
				t.Fatalf("cell %d,%d = %v: want null only on the diagonal", i, j, v)
			}
		}
	}
	s, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.LatestC2C(context.Background(), r.Host)
	if err != nil {
		t.Fatal(err)
	}
	var stored c2c.Result
	if err := json.Unmarshal(got.Result, &stored); err != nil || stored.Verdict != r.Verdict {
		t.Fatalf("stored %q, printed %q (%v)", stored.Verdict, r.Verdict, err)
	}
}

// TestC2CText: the text output has the matrix and the verdict; --no-store
// writes no database.
func TestC2CText(t *testing.T) {
	allowed := needTwoCPUs(t)
	state := t.TempDir()
	t.Setenv("LINERATE_STATE_DIR", state)
	pair := fmt.Sprintf("%d,%d", allowed[0], allowed[1])
	out, errOut, code := runCLI(t, append([]string{"c2c", "--no-store", "--cpus", pair}, c2cArgs...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"core-to-core latency on ", "median of 20 samples of 100 round trips", fmt.Sprintf("\n%5d ", allowed[1]), "clusters: ", "sysfs says "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(state, "*")); len(m) != 0 {
		t.Fatalf("--no-store wrote %v", m)
	}
}

// TestC2CBadInput: every refusal is one line and exit 2, before anything
// is measured or stored.
func TestC2CBadInput(t *testing.T) {
	t.Setenv("LINERATE_STATE_DIR", t.TempDir())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--cpus", "0,4095"}, "CPU 4095 is not online"},
		{[]string{"--cpus", "0"}, "give at least two CPUs"},
		{[]string{"--cpus", "zero"}, "--cpus: invalid CPU list"},
		{[]string{"--cpus", ""}, "--cpus is empty"},
		{[]string{"--cpus", "0,1", "--per-l3"}, "--cpus and --per-l3 each choose the CPUs"},
		{[]string{"--samples", "0"}, "--samples 0: give 1 to 100000"},
		{[]string{"--round-trips", "-3"}, "--round-trips -3"},
		{[]string{"--no-store", "--db", "x.db"}, "--no-store keeps nothing"},
		{[]string{"extra"}, "unknown command"},
	} {
		out, errOut, code := runCLI(t, append([]string{"c2c"}, c.args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
}

// TestC2CTerminal: on a terminal, the pairs and the estimate come first.
func TestC2CTerminal(t *testing.T) {
	needTwoCPUs(t)
	master, slave := openPTY(t)
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(master)
		got <- b
	}()
	var out bytes.Buffer
	code := run(append([]string{"c2c", "--no-store"}, c2cArgs...), strings.NewReader(""), &out, slave)
	slave.Close()
	tty := string(<-got)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, tty)
	}
	if !strings.Contains(tty, "measuring ") || !strings.Contains(tty, "CPUs (") || !strings.Contains(tty, "): about ") {
		t.Fatalf("no plan on the terminal: %q", tty)
	}
	if !strings.Contains(out.String(), "sysfs says") {
		t.Fatalf("stdout: %q", out.String())
	}
}

// TestReportC2C: report includes the stored matrix of a host it reports
// on, and --c2c adds one from a file (here measured live, on this
// machine); a file that is not a matrix is a one-line error.
func TestReportC2C(t *testing.T) {
	needTwoCPUs(t)
	dir := reportDB(t)
	db := filepath.Join(dir, store.FileName)
	t.Setenv("LINERATE_STATE_DIR", t.TempDir())
	// A matrix of the reported host (the test tree's "crow"), stored as
	// `linerate c2c` stores one.
	stored := c2c.Result{Schema: c2c.Schema, Host: "crow", Mode: c2c.ModeCPUs, CPUs: []int{0, 6}, Pairs: 1, RoundTrips: 1000, Samples: 300,
		MatrixNs: [][]*float64{{nil, ptrTo(214.0)}, {ptrTo(214.0), nil}}}
	stored.Judge([][]int{{0, 1, 2, 3, 4, 5}, {6, 7, 8, 9, 10, 11}})
	doc, _ := json.Marshal(stored)
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AddC2C(context.Background(), &store.C2C{Host: "crow", Result: doc}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	live, errOut, code := runCLI(t, append([]string{"c2c", "--json", "--no-store"}, c2cArgs...)...)
	if code != 0 {
		t.Fatalf("c2c: %s", errOut)
	}
	file := filepath.Join(t.TempDir(), "c2c.json")
	if err := os.WriteFile(file, []byte(live), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "r.md")
	stdout, stderr, code := runCLI(t, "report", "--db", db, "--c2c", file, "-o", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "2 core-to-core matrices") {
		t.Errorf("stdout %q", stdout)
	}
	md, _ := os.ReadFile(out)
	var r c2c.Result
	json.Unmarshal([]byte(live), &r)
	for _, want := range []string{"## Core-to-core latency", "### crow", "Sysfs says 2 L3 domains; no pair measured lies inside one, so the matrix cannot check them: 214 ns across.",
		"### " + r.Host, "r-c2c-1.svg", "r-c2c-2.svg"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	_, stderr, code = runCLI(t, "report", "--db", db, "--c2c", db, "-o", out)
	if code != exitError || !strings.HasPrefix(stderr, "linerate: --c2c reading") && !strings.Contains(stderr, "not a linerate.c2c/v1 document") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("bad --c2c file: exit %d, %q", code, stderr)
	}
}

func ptrTo(v float64) *float64 { return &v }
