package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/store"
	"github.com/linerate/linerate/internal/testutil"
)

// faultBound is the contract for a run whose path or peer goes
// away: it ends within 5 s of the fault. A generous bound on what a
// broken path costs, not a speed claim (the watch notices in about 1.5 s).
const faultBound = 5 * time.Second

// TestBenchPathFaults: `linerate bench lab:NAME` (the real binary; the
// client in host a, the agent in host b) is hit mid-run by the link being
// removed, the lab being taken down (both namespaces deleted), host a's
// address being removed, host b's end of the link set down (the peer
// unreachable), and the agent being killed with SIGKILL. Each run ends within faultBound of the
// fault with exit 2 and one line naming the cause; the intervals
// measured before it were printed and are stored with the run, marked
// failed with that reason. With the link removed the agent says in its
// log that it ended the test on its side too.
func TestBenchPathFaults(t *testing.T) {
	labNeedsRoot(t)
	t.Setenv("LINERATE_STATE_DIR", t.TempDir())
	bin := buildLinerate(t)
	cases := []struct {
		name  string
		fault func(t *testing.T, name string)
		cause string // in the error line
		agent bool   // -V: the agent's log goes to stderr too
	}{
		{"link removed", func(t *testing.T, name string) {
			if out, err := exec.Command("ip", "-n", lab.Namespace(name, lab.A), "link", "del", lab.Iface).CombinedOutput(); err != nil {
				t.Fatalf("ip link del: %v %s", err, out)
			}
		}, "the path to " + lab.AddrB + " went away", true},
		{"lab down", func(t *testing.T, name string) {
			if code, out, stderr := runLab(t, "lab", "down", "--name", name); code != 0 {
				t.Fatalf("lab down: exit %d\n%s%s", code, out, stderr)
			}
		}, "the path to " + lab.AddrB + " went away", false},
		{"address removed", func(t *testing.T, name string) {
			if out, err := exec.Command("ip", "-n", lab.Namespace(name, lab.A), "addr", "del", lab.AddrA+"/24", "dev", lab.Iface).CombinedOutput(); err != nil {
				t.Fatalf("ip addr del: %v %s", err, out)
			}
		}, "the path to " + lab.AddrB + " went away", false},
		{"peer's link down", func(t *testing.T, name string) {
			if out, err := exec.Command("ip", "-n", lab.Namespace(name, lab.B), "link", "set", lab.Iface, "down").CombinedOutput(); err != nil {
				t.Fatalf("ip link set down: %v %s", err, out)
			}
		}, "the path to " + lab.AddrB + " went away", false},
		{"agent killed", func(t *testing.T, name string) {
			killed := 0
			for _, pid := range nsPids(t, lab.Namespace(name, lab.B)) {
				if cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); bytes.Contains(cmdline, []byte("serve")) {
					syscall.Kill(pid, syscall.SIGKILL)
					killed++
				}
			}
			if killed == 0 {
				t.Fatal("no agent in host b to kill")
			}
		}, "the agent at " + lab.AddrB + " went away", false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := "t-pfault" + strconv.Itoa(i)
			labUp(t, name, "healthy")
			db := filepath.Join(t.TempDir(), "results.db")
			args := []string{"bench", "lab:" + name, "-t", "8", "-i", "0.5", "--db", db}
			if tc.agent {
				args = append(args, "-V")
			}
			cmd := exec.Command(bin, args...)
			var errb testutil.Buffer
			cmd.Stderr = &errb
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Strike after the third interval that moved bytes: the run
			// is well under way. (On a loaded machine an interval can pass
			// with the sender descheduled; the stored run is checked for
			// three that moved bytes.)
			var stdout strings.Builder
			sc := bufio.NewScanner(out)
			seen := 0
			for seen < 3 && sc.Scan() {
				stdout.WriteString(sc.Text() + "\n")
				if movedBytes(sc.Text()) {
					seen++
				}
			}
			if seen < 3 {
				cmd.Wait()
				t.Fatalf("the run ended before its third interval:\n%s%s", stdout.String(), errb.String())
			}
			struck := time.Now()
			tc.fault(t, name)
			for sc.Scan() {
				stdout.WriteString(sc.Text() + "\n")
			}
			werr := cmd.Wait()
			took := time.Since(struck)
			code, _ := lab.ExitCode(werr)
			lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
			last := lines[len(lines)-1]
			t.Logf("ended %.1f s after the fault: %s", took.Seconds(), last)
			if took > faultBound {
				t.Errorf("the run ended %.1f s after the fault, more than %s", took.Seconds(), faultBound)
			}
			if code != 2 || !strings.HasPrefix(last, "linerate: "+tc.cause) || !strings.Contains(last, " s into the run: ") {
				t.Errorf("exit %d, last line %q; want exit 2 and %q", code, last, tc.cause)
			}
			if !tc.agent && len(lines) != 1 {
				t.Errorf("stderr has %d lines, want one:\n%s", len(lines), errb.String())
			}
			if p := repeatedPrefix(last); p != "" {
				t.Errorf("the error repeats %q: %s", p, last)
			}
			if n := strings.Count(stdout.String(), "\n[SUM]"); n < 3 {
				t.Errorf("%d interval lines printed, want at least 3:\n%s", n, stdout.String())
			}
			if !strings.Contains(stdout.String(), "marked failed") {
				t.Errorf("stdout does not say the run was stored as failed:\n%s", stdout.String())
			}
			if tc.agent && !agentSaw(errb.String(), "the path to "+lab.AddrA+" went away", "lab0 was removed") {
				t.Errorf("the agent did not say it ended the test when its path went away:\n%s", errb.String())
			}
			checkFailedRun(t, db, tc.cause)
		})
	}
}

// movedBytes reports whether line is an interval's [SUM] line with a
// transfer above zero ("[SUM]   0.50-1.00   sec  1.16 GBytes  …").
func movedBytes(line string) bool {
	f := strings.Fields(line)
	if len(f) < 4 || f[0] != "[SUM]" || f[2] != "sec" {
		return false
	}
	v, err := strconv.ParseFloat(f[3], 64)
	return err == nil && v > 0
}

// checkFailedRun checks that db holds one run, failed with cause, with
// at least three intervals that moved bytes.
func checkFailedRun(t *testing.T, db, cause string) {
	t.Helper()
	checkStoredFailed(t, db, cause, 3)
}

// checkStoredFailed checks that db holds one run, failed with cause, with
// at least atLeast intervals that moved bytes.
func checkStoredFailed(t *testing.T, db, cause string, atLeast int) {
	t.Helper()
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.Runs(context.Background(), store.Query{Full: true})
	if err != nil || len(runs) != 1 {
		t.Fatalf("%d runs stored (%v), want 1", len(runs), err)
	}
	r := runs[0]
	if !strings.HasPrefix(r.Failed, cause) {
		t.Errorf("stored run failed = %q, want %q…", r.Failed, cause)
	}
	var res result.Result
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatal(err)
	}
	moved := 0
	for _, iv := range res.Intervals {
		if iv.Sum.Bytes > 0 {
			moved++
		}
	}
	if moved < atLeast || res.Error != r.Failed {
		t.Errorf("stored run: %d intervals that moved bytes (want ≥ %d), error %q", moved, atLeast, res.Error)
	}
}

// agentSaw reports whether the agent's log has a "test aborted" line
// holding every one of want.
func agentSaw(log string, want ...string) bool {
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, "test aborted") {
			continue
		}
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(line, w)
		}
		if ok {
			return true
		}
	}
	return false
}

// nsPids lists the processes in a named network namespace.
func nsPids(t *testing.T, ns string) []int {
	t.Helper()
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		t.Fatalf("ip netns pids %s: %v", ns, err)
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}

// repeatedPrefix returns a part of an error line, as ": " separates
// them, that occurs twice ("run 1 of 1 (…): the client reported: run 1 of
// 1 (…): …"), or "".
func repeatedPrefix(line string) string {
	seen := map[string]bool{}
	for _, part := range strings.Split(line, ": ") {
		part = strings.TrimSpace(part)
		if len(part) < 8 { // "exit 2", a number: short parts repeat innocently
			continue
		}
		if seen[part] {
			return part
		}
		seen[part] = true
	}
	return ""
}

// TestBenchDamagedDatabase: a bench whose results database is random bytes,
// or a real database cut short, still measures, keeps its run in a file
// beside the database and says where, in one line that also names the
// database and what to do with it; the database itself is left as it was.
// history on it says the same in one line.
func TestBenchDamagedDatabase(t *testing.T) {
	tok := tokenFile(t, 0o600)
	junk := make([]byte, 64<<10)
	for i := range junk {
		junk[i] = byte(i*7919 + i>>8) // no SQLite header: "not a database"
	}
	for _, tc := range []struct {
		name string
		make func(t *testing.T, db string)
	}{
		{"random bytes", func(t *testing.T, db string) {
			if err := os.WriteFile(db, junk, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"cut short", func(t *testing.T, db string) {
			st, err := store.Open(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 40 {
				r := &store.Run{Engine: "native", Peer: "127.0.0.1", Streams: 1, Gbps: float64(i),
					Result: []byte(`{"pad":"` + strings.Repeat("x", 3000) + `"}`)}
				if err := st.AddRun(context.Background(), r); err != nil {
					t.Fatal(err)
				}
			}
			st.Close()
			fi, _ := os.Stat(db)
			if err := os.Truncate(db, fi.Size()/3/4096*4096); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "results.db")
			tc.make(t, db)
			before, _ := os.ReadFile(db)
			port := freePort(t)
			_, code := serveOnce(t, "--port", port, "--token-file", tok)
			stdout, stderr, c := runCLI(t, "bench", "127.0.0.1:"+port, "--token-file", tok, "-t", "0.5", "-i", "0.25", "--db", db)
			<-code
			side, _ := filepath.Glob(db + ".run-*.json")
			if c != 2 || strings.Count(stderr, "\n") != 1 || len(side) != 1 ||
				!strings.HasPrefix(stderr, "linerate: results database "+db+" is damaged (") ||
				!strings.Contains(stderr, "move it aside") || !strings.Contains(stderr, ".recover") ||
				!strings.HasSuffix(stderr, "; the run was kept in "+side[0]+" instead\n") {
				t.Fatalf("exit %d, side files %v, stderr %q", c, side, stderr)
			}
			if !strings.Contains(stdout, "[SUM]") {
				t.Errorf("the run's intervals were not printed:\n%s", stdout)
			}
			var res result.Result
			b, err := os.ReadFile(side[0])
			if err != nil || json.Unmarshal(b, &res) != nil || res.Schema != result.Schema || len(res.Intervals) == 0 || res.End.SumReceived.Bytes == 0 {
				t.Errorf("side file %s: %v, %d intervals, %d bytes received\n%s", side[0], err, len(res.Intervals), res.End.SumReceived.Bytes, b)
			}
			if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
				t.Errorf("the damaged database was changed")
			}
			_, stderr, c = runCLI(t, "history", "--db", db)
			if c != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, db+" is damaged") {
				t.Errorf("history: exit %d, %q", c, stderr)
			}
		})
	}
}

// TestErrorsSaidOnce: every failure of bench, serve, tune (and the
// commands reading results) is one line, "linerate: " once, and no part
// of it twice — the prefixes that wrapping at several levels used to
// repeat ("run 1 of 1 (…): the client reported: run 1 of 1 (…)").
func TestErrorsSaidOnce(t *testing.T) {
	tok := tokenFile(t, 0o600)
	dir := t.TempDir()
	junkDB := filepath.Join(dir, "junk.db")
	os.WriteFile(junkDB, bytes.Repeat([]byte("not sqlite "), 1000), 0o600)
	closed := freePort(t) // nothing listens there
	cases := [][]string{
		{"bench", "127.0.0.1:" + closed, "--token-file", tok, "--no-store", "-t", "1"},
		{"bench", "127.0.0.1:" + closed, "--token-file", tok, "--no-store", "--repeat", "3", "-t", "1"},
		{"bench", "127.0.0.1:" + closed, "--token-file", tok, "--no-store", "--sweep-streams", "1,2", "-t", "1"},
		{"bench", "127.0.0.1:" + closed, "--token-file", tok, "--engine", "iperf3", "--no-store", "-t", "1"},
		{"bench", "127.0.0.1", "--token-file", filepath.Join(dir, "missing")},
		{"bench", "127.0.0.1", "--token-file", tok, "-P", "0"},
		{"bench", "127.0.0.1", "--token-file", tok, "--db", junkDB, "--repeat", "0"},
		{"bench", "lab:nolab9", "--no-store", "-t", "1"},
		{"serve", "--bind", "127.0.0.1", "--port", "70000", "--token-file", tok},
		{"serve", "--bind", "198.51.100.7", "--token-file", tok},
		{"serve", "--bind", "127.0.0.1", "--token-file", filepath.Join(dir, "missing")},
		{"tune", "--root", filepath.Join(dir, "no-such-tree"), "--apply"},
		{"tune", "revert", "19990101T000000.000000Z"},
		{"tune", "revert", "../../etc/passwd"},
		{"history", "--db", junkDB},
		{"compare", "a", "b", "--db", junkDB},
		{"report", "-o", filepath.Join(dir, "r.html"), "--db", junkDB},
	}
	t.Setenv("LINERATE_STATE_DIR", dir)
	for _, args := range cases {
		_, stderr, code := runCLI(t, args...)
		line := strings.TrimSuffix(stderr, "\n")
		t.Logf("%v: %s", args, line)
		switch {
		case code != 2 || line == "":
			t.Errorf("%v: exit %d, %q; want exit 2 and an error", args, code, stderr)
		case strings.Contains(line, "\n"):
			t.Errorf("%v: more than one line:\n%s", args, stderr)
		case strings.Count(line, "linerate: ") != 1 || !strings.HasPrefix(line, "linerate: "):
			t.Errorf("%v: %q", args, line)
		default:
			if p := repeatedPrefix(line); p != "" {
				t.Errorf("%v: %q repeats %q", args, line, p)
			}
		}
	}
}

// TestBenchJSONAgentKilled: `bench --json --db` whose agent is killed with
// SIGKILL mid-run prints the run's document with the intervals measured
// until then and its "error", says the cause in one line (exit 2), and
// stores the run marked failed; history lists it as failed.
func TestBenchJSONAgentKilled(t *testing.T) {
	tok := tokenFile(t, 0o600)
	port := freePort(t)
	srv := exec.Command(os.Args[0], "--", "serve", "--once", "--bind", "127.0.0.1", "--port", port, "--token-file", tok)
	srv.Env = append(os.Environ(), "LINERATE_LAB_CLI_HELPER=1")
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || !strings.Contains(line, "Listening on ") {
		t.Fatalf("serve: %q %v", line, err)
	}
	go func() {
		time.Sleep(1500 * time.Millisecond) // a few intervals of 0.25 s in
		srv.Process.Kill()
	}()
	db := filepath.Join(t.TempDir(), "results.db")
	stdout, stderr, code := runCLI(t, "bench", "127.0.0.1:"+port, "--token-file", tok, "-t", "10", "-i", "0.25", "--json", "--db", db)
	const cause = "the agent at 127.0.0.1 went away"
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "linerate: "+cause) {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var doc result.Result
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("stdout is not the run's document: %v\n%s", err, stdout)
	}
	if !strings.HasPrefix(doc.Error, cause) || len(doc.Intervals) < 2 || doc.End.SumSent.Bytes == 0 || len(doc.End.Errors) == 0 {
		t.Errorf("document: error %q, %d intervals, %d bytes sent, errors %v", doc.Error, len(doc.Intervals), doc.End.SumSent.Bytes, doc.End.Errors)
	}
	checkStoredFailed(t, db, cause, 2)
	hist, _, c := runCLI(t, "history", "--db", db)
	if c != 0 || !strings.Contains(hist, " failed ") {
		t.Errorf("history: exit %d\n%s", c, hist)
	}
}
