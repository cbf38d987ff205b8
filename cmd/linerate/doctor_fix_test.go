package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/linerate/linerate/internal/doctor"
)

// doctorRuns are the doctor invocations the fix tests cover: every tree of
// testdata/hosts (with and without --app-cpus where its CPUs allow it),
// and the captured VM.
func doctorRuns(t *testing.T) [][]string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("..", "..", "testdata", "hosts"))
	if err != nil {
		t.Fatal(err)
	}
	runs := [][]string{{"doctor", "--root", vmSnapshot}}
	for _, e := range entries {
		if e.IsDir() {
			runs = append(runs, []string{"doctor", "--root", hostTree(e.Name())})
		}
	}
	return append(runs,
		[]string{"doctor", "--root", hostTree("ryzen-9900x-cx5-x4"), "--app-cpus", "6"},
		[]string{"doctor", "--root", hostTree("ryzen-9900x-cx5-x4"), "--app-cpus", "7"},
		[]string{"doctor", "--root", hostTree("xeon-xl710-gen2-x4"), "--app-cpus", "12", "--rtt", "20ms"},
	)
}

// shSyntax runs sh -n over a command line: it parses it without running it.
func shSyntax(t *testing.T, line string) error {
	t.Helper()
	out, err := exec.Command("sh", "-n", "-c", line).CombinedOutput()
	if err != nil {
		return &exec.ExitError{Stderr: out}
	}
	return nil
}

// TestDoctorFixCommandsParse: on every test host, each fix's command — and
// its persist and verify commands — shell-quoted and joined is a command
// line sh -n accepts; a script run by sh -c parses too; and no command
// holds a placeholder or a bash-only brace expansion.
func TestDoctorFixCommandsParse(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Fatal("sh not found: every Linux host has one")
	}
	commands := 0
	for _, args := range doctorRuns(t) {
		out, stderr, code := runCLI(t, append(args, "--json")...)
		if code == 2 {
			t.Fatalf("%v: exit 2: %s", args, stderr)
		}
		var rep doctor.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for _, f := range rep.Findings {
			if len(f.Fix) == 0 {
				t.Errorf("%v: %s has no fix", args, f.ID)
			}
			for _, x := range f.Fix {
				if x.Action == "" {
					t.Errorf("%v: %s has a fix without prose: %+v", args, f.ID, x)
				}
				for _, prefix := range []string{"verify:", "persist:", "or:"} {
					if strings.HasPrefix(strings.ToLower(x.Action), prefix) {
						t.Errorf("%v: %s: action starts with %q: %q", args, f.ID, prefix, x.Action)
					}
				}
			}
			for _, argv := range f.Commands() {
				commands++
				line := doctor.Quote(argv)
				if err := shSyntax(t, line); err != nil {
					t.Errorf("%v: %s: sh -n rejects %s: %s", args, f.ID, line, err.(*exec.ExitError).Stderr)
				}
				if len(argv) == 3 && argv[0] == "sh" && argv[1] == "-c" {
					if err := shSyntax(t, argv[2]); err != nil {
						t.Errorf("%v: %s: sh -n rejects the script %s: %s", args, f.ID, argv[2], err.(*exec.ExitError).Stderr)
					}
				}
				for _, w := range argv {
					// Placeholders ("PEER", "<command>", "…") are prose.
					if strings.Contains(w, "PEER") || strings.Contains(w, "…") || strings.HasPrefix(w, "<") {
						t.Errorf("%v: %s: command %q holds a placeholder", args, f.ID, line)
					}
				}
				// {a,b} is bash, not POSIX sh.
				if strings.Contains(line, "{") && strings.Contains(line, ",") && strings.Contains(line, "}") {
					t.Errorf("%v: %s: brace expansion in %q", args, f.ID, line)
				}
			}
		}
	}
	if commands < 100 {
		t.Errorf("only %d commands over every test host: the test checks too little", commands)
	}
}

// TestDoctorTextWidth: with COLUMNS set, no line of the text view on any
// test host is wider than it (counted in characters, as a terminal shows
// them), and the fixes' commands are still there, whole, to paste.
func TestDoctorTextWidth(t *testing.T) {
	for _, width := range []int{80, 100} {
		t.Setenv("COLUMNS", strconv.Itoa(width))
		for _, args := range doctorRuns(t) {
			out, stderr, code := runCLI(t, args...)
			if code == 2 {
				t.Fatalf("%v: exit 2: %s", args, stderr)
			}
			for i, line := range strings.Split(out, "\n") {
				if n := utf8.RuneCountInString(line); n > width {
					t.Errorf("COLUMNS=%d %v: line %d is %d wide: %q", width, args, i+1, n, line)
				}
			}
		}
	}
	// The 9900X's IRQ fix, wrapped at 80, is still the loop.
	t.Setenv("COLUMNS", "80")
	out, _, _ := runCLI(t, "doctor", "--root", hostTree("ryzen-9900x-cx5-x4"), "--app-cpus", "6")
	for _, want := range []string{
		"for irq in 98 99 109 110 111 112 113 114 115 116 117 118 119; do echo \\\n",
		"7-11 > /proc/irq/$irq/smp_affinity_list; done",
		"keeping CPU 6 free for the\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text at 80 columns lacks %q:\n%s", want, out)
		}
	}
}
