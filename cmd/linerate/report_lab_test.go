package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestReportLabReproduce is the walkthrough's report case in two labs: a
// 20 Gbit/s lab ("healthy") and a 10 Gbit/s one ("capped"), a campaign
// each after a throwaway one (so that the database's campaign IDs, 2 and
// 3, are not the report's positions), a single native run with -i 0.5 and
// a single iperf3 run. The two-label report must title both paths, give
// both ceilings, number campaigns as history does and compare the labels;
// and every command under "Commands to reproduce" of both reports must run
// as printed (through sh, with linerate on PATH) and store a run that
// `linerate compare` accepts as like the original (same engine, streams,
// direction, placement, peer and MTU).
func TestReportLabReproduce(t *testing.T) {
	labNeedsRoot(t)
	bin := buildLinerate(t)
	state := t.TempDir()
	env := append(os.Environ(), "LINERATE_STATE_DIR="+state, "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
	lr := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("linerate %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
		}
		return out.String()
	}
	for _, l := range [][]string{{"--name", "uxr-a", "--rate", "20gbit"}, {"--name", "uxr-b", "--scenario", "capped-10g"}} {
		t.Cleanup(func() {
			cmd := exec.Command(bin, "lab", "down", "--name", l[1])
			cmd.Env = env
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("lab down %s: %v\n%s", l[1], err, out)
			}
		})
		lr(append([]string{"lab", "up"}, l...)...)
	}
	lr("bench", "lab:uxr-a", "-t", "1", "--repeat", "2", "--label", "warm")
	lr("bench", "lab:uxr-a", "-t", "1", "--repeat", "2", "--label", "healthy")
	lr("bench", "lab:uxr-b", "-t", "1", "--repeat", "2", "--label", "capped")
	lr("bench", "lab:uxr-a", "-t", "1", "-i", "0.5", "--label", "one")
	lr("bench", "lab:uxr-a", "-t", "1", "--engine", "iperf3", "--label", "ip3")

	dir := t.TempDir()
	two := filepath.Join(dir, "two.md")
	lr("report", "--label", "healthy", "--label", "capped", "-o", two)
	page, err := os.ReadFile(two)
	if err != nil {
		t.Fatal(err)
	}
	md := string(page)
	for _, want := range []string{
		"# linerate report: lr-uxr-a-a → lr-uxr-a-b; lr-uxr-b-a → lr-uxr-b-b",
		"### Ceiling of label \"healthy\"", "| TCP goodput at MTU 9000 | 19.85 |",
		"### Ceiling of label \"capped\"", "| TCP goodput at MTU 9000 | 9.93 |",
		"### Campaign 2 (healthy)", "### Campaign 3 (capped)",
		"## Comparison of labels", "line rate 20 Gbit/s vs 10 Gbit/s",
		"CPU s per Gbit, client / server",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("two-label report lacks %q", want)
		}
	}
	if strings.Contains(md, "Campaign 1 (") {
		t.Error("the report renumbers campaigns: history has no campaign 1 among these")
	}
	singles := filepath.Join(dir, "singles.md")
	lr("report", "--label", "one", "--label", "ip3", "-o", singles)
	page2, err := os.ReadFile(singles)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"linerate bench lab:uxr-a -t 1 -i 500ms -P 1 --label one", "linerate bench lab:uxr-a --engine iperf3 -t 1 -P 1 --label ip3"} {
		if !strings.Contains(string(page2), want) {
			t.Errorf("singles report lacks the command %q:\n%s", want, commandsBlock(string(page2)))
		}
	}
	ran := 0
	for _, rep := range []string{md, string(page2)} {
		for _, line := range strings.Split(commandsBlock(rep), "\n") {
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			ran++
			before := newestRun(t, lr)
			sh := exec.Command("sh", "-c", line)
			sh.Env = env
			if out, err := sh.CombinedOutput(); err != nil {
				t.Errorf("%s: %v\n%s", line, err, out)
				continue
			}
			after := newestRun(t, lr)
			if after.ID <= before.ID || after.Label != before.Label && !strings.Contains(line, "--label "+after.Label) {
				t.Errorf("%s stored no run of its own (newest %+v, before %+v)", line, after, before)
				continue
			}
			// The rerun is like a run of the same label: compare must not
			// refuse them (exit 2).
			cmp := exec.Command(bin, "compare", after.Label, itoa(after.ID), "--streams", itoa(int64(after.Streams)))
			cmp.Env = env
			out, err := cmp.CombinedOutput()
			if code := cmp.ProcessState.ExitCode(); code == 2 {
				t.Errorf("%s: its run %d is not like label %s's: %v\n%s", line, after.ID, after.Label, err, out)
			}
		}
	}
	if ran != 4 { // two campaigns, two single runs
		t.Errorf("ran %d commands of the reports, want 4", ran)
	}
}

// commandsBlock is the code block under "Commands to reproduce".
func commandsBlock(md string) string {
	m := regexp.MustCompile("(?s)## Commands to reproduce\n\n```\n(.*?)```").FindStringSubmatch(md)
	if m == nil {
		return ""
	}
	return m[1]
}

// newestRun is the last run history lists.
func newestRun(t *testing.T, lr func(...string) string) historyRun {
	t.Helper()
	var doc struct{ Runs []historyRun }
	if err := json.Unmarshal([]byte(lr("history", "--json")), &doc); err != nil || len(doc.Runs) == 0 {
		t.Fatalf("history --json: %v", err)
	}
	return doc.Runs[len(doc.Runs)-1]
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
