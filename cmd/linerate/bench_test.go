package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/store"
	"github.com/linerate/linerate/internal/testbin"
	"github.com/linerate/linerate/internal/testutil"
)

// freePort returns a loopback port nobody listens on (for a moment).
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// serveOnce runs `linerate serve --once` in-process and returns its stdout
// once it listens, and a channel with its exit code.
func serveOnce(t *testing.T, args ...string) (*testutil.Buffer, <-chan int) {
	t.Helper()
	out, errb := &testutil.Buffer{}, &testutil.Buffer{}
	code := make(chan int, 1)
	go func() {
		code <- run(append([]string{"serve", "--once", "--bind", "127.0.0.1"}, args...), strings.NewReader(""), out, errb)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "Listening on ") {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not listen: %q %q", out.String(), errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve stderr:\n%s", errb.String())
		}
	})
	return out, code
}

// testToken is a token of 256 random bits, as 'serve --new-token-file'
// makes them.
const testToken = "3e9a07c15fd28b64a0e1c7f39b5d2806e4a1c9f07b3d58e2a6f01c4b97d3e825"

// TestServeNewTokenToBench makes a token with --new-token-file and runs
// a client with it against an agent using it, as a user would.
func TestServeNewTokenToBench(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "token")
	out, stderr, c := runCLI(t, "serve", "--new-token-file", tok)
	if c != 0 || !strings.Contains(out, "Wrote a new token") {
		t.Fatalf("serve --new-token-file: exit %d: %s %s", c, out, stderr)
	}
	if fi, err := os.Stat(tok); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, mode %v", err, fi.Mode())
	}
	if _, stderr, c := runCLI(t, "serve", "--new-token-file", tok); c != 2 || !strings.Contains(stderr, "does not overwrite") {
		t.Errorf("a second --new-token-file: exit %d: %s", c, stderr)
	}
	port := freePort(t)
	_, code := serveOnce(t, "--port", port, "--token-file", tok)
	stdout, stderr, c := runCLI(t, "bench", "127.0.0.1", "-p", port, "-t", "1", "-i", "0.5", "-V", "--token-file", tok, "--no-store")
	if c != 0 {
		t.Fatalf("bench: exit %d: %s", c, stderr)
	}
	for _, want := range []string{"Placement (auto): client CPU", "[  1]", "sender", "receiver", "CPU time: client"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("bench output lacks %q:\n%s", want, stdout)
		}
	}
	// The first interval's line; its end is the sampler's boundary,
	// which a loaded machine can make late (0.64 s seen for -i 0.5).
	if !regexp.MustCompile(`(?m)^\[SUM\]\s+0\.00-0\.[5-9]\d\s+sec`).MatchString(stdout) {
		t.Errorf("bench output has no first interval line from 0.00 s:\n%s", stdout)
	}
	if c := <-code; c != 0 {
		t.Errorf("serve --once exited %d", c)
	}
}

// TestServeEveryAddress: --bind 0.0.0.0 is accepted, and said loudly.
func TestServeEveryAddress(t *testing.T) {
	tok := tokenFile(t, 0o600)
	port := freePort(t)
	out, errb := &testutil.Buffer{}, &testutil.Buffer{}
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"serve", "--once", "--bind", "0.0.0.0", "--port", port, "--token-file", tok}, strings.NewReader(""), out, errb)
	}()
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(out.String(), "Listening on 0.0.0.0:"+port); {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not listen: %q %q", out.String(), errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(errb.String(), "listening on every address of this host (--bind 0.0.0.0)") {
		t.Errorf("serve on every address did not say so: %q", errb.String())
	}
	if _, stderr, c := runCLI(t, "bench", "127.0.0.1", "-p", port, "-t", "0.5", "-i", "0.25", "--token-file", tok, "--no-store"); c != 0 {
		t.Errorf("bench: exit %d: %s", c, stderr)
	}
	<-code
}

// TestBenchJSON checks the names the linerate.bench/v1 contract fixes
// (docs/architecture.md, "JSON documents"), on a real run, and
// --json-stream's events.
func TestBenchJSON(t *testing.T) {
	tok := tokenFile(t, 0o600)
	port := freePort(t)
	_, code := serveOnce(t, "--port", port, "--token-file", tok)
	stdout, stderr, c := runCLI(t, "bench", "127.0.0.1:"+port, "--token-file", tok, "-t", "1", "-O", "0.5", "-i", "0.5", "--json")
	if c != 0 {
		t.Fatalf("bench --json: exit %d: %s", c, stderr)
	}
	<-code
	var doc map[string]any
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("bench --json is not JSON: %v\n%s", err, stdout)
	}
	if doc["schema"] != "linerate.bench/v1" || doc["engine"] != "native" {
		t.Errorf("schema %v engine %v", doc["schema"], doc["engine"])
	}
	want := []string{
		"run_id", "start.peer", "start.streams", "start.duration_s", "start.omit_s", "start.direction",
		"start.placement.client", "start.placement.server", "start.window.requested", "start.window.granted",
		"intervals.0.start", "intervals.0.end", "intervals.0.streams.0.id", "intervals.0.streams.0.bytes",
		"intervals.0.streams.0.bits_per_second", "intervals.0.streams.0.rtt_us", "intervals.0.streams.0.cwnd_bytes",
		"intervals.0.streams.0.retransmits", "intervals.0.sum.bytes", "intervals.0.sum.bits_per_second",
		"intervals.0.sum.retransmits", "intervals.0.cpu.client", "intervals.0.cpu.server",
		"end.sum_sent.bytes", "end.sum_sent.bits_per_second", "end.sum_sent.retransmits",
		"end.sum_received.bytes", "end.sum_received.bits_per_second", "end.cpu.client_seconds", "end.cpu.server_seconds",
	}
	for _, path := range want {
		if _, ok := lookup(doc, path); !ok {
			t.Errorf("--json lacks %s", path)
		}
	}
	cpus, _ := lookup(doc, "intervals.1.cpu.client")
	for k, v := range cpus.(map[string]any) {
		if _, err := strconv.Atoi(k); err != nil {
			t.Errorf("cpu.client key %q is not a CPU number", k)
		}
		for _, f := range []string{"busy", "softirq", "irq"} {
			if _, ok := v.(map[string]any)[f]; !ok {
				t.Errorf("cpu.client.%s lacks %s", k, f)
			}
		}
	}

	_, code = serveOnce(t, "--port", port, "--token-file", tok)
	stdout, stderr, c = runCLI(t, "bench", "127.0.0.1:"+port, "--token-file", tok, "-t", "0.5", "-i", "0.25", "--json-stream")
	if c != 0 {
		t.Fatalf("bench --json-stream: exit %d: %s", c, stderr)
	}
	<-code
	var events []string
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var ev struct {
			Event string          `json:"event"`
			Data  json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil || len(ev.Data) == 0 {
			t.Fatalf("--json-stream line %q: %v", line, err)
		}
		events = append(events, ev.Event)
		if ev.Event == "end" {
			// The end carries the run's analysis, as --json's does.
			var end result.End
			if err := json.Unmarshal(ev.Data, &end); err != nil || end.Gap == nil {
				t.Errorf("--json-stream end event without the gap (%v): %s", err, ev.Data)
			}
		}
	}
	if strings.Join(events, ",") != "start,interval,interval,end" {
		t.Errorf("events = %v", events)
	}
}

// lookup follows a dotted path of keys and array indexes.
func lookup(v any, path string) (any, bool) {
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[k]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func tokenFile(t *testing.T, mode os.FileMode) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(f, []byte(testToken+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f, mode); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestServeAndBenchRefuse(t *testing.T) {
	open := tokenFile(t, 0o644)
	strong := tokenFile(t, 0o600)
	weak := filepath.Join(t.TempDir(), "weak")
	if err := os.WriteFile(weak, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LINERATE_TOKEN", "")
	os.Unsetenv("LINERATE_TOKEN")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--bind", "127.0.0.1", "--token-file", open}, "chmod 600"},
		{[]string{"serve", "--bind", "127.0.0.1", "--port", "70000"}, "--port 70000"},
		{[]string{"serve", "--token-file", strong}, "serve needs --bind ADDR"},
		{[]string{"serve", "--bind", "localhost", "--token-file", strong}, "not an IP address"},
		{[]string{"serve", "--bind", "127.0.0.1"}, "serve needs --token-file FILE: make one with 'linerate serve --new-token-file FILE'"},
		{[]string{"serve", "--bind", "127.0.0.1", "--token-file", weak}, "weak token"},
		{[]string{"bench", "127.0.0.1", "--token-file", weak}, "linerate serve --new-token-file"},
		{[]string{"bench", "127.0.0.1", "--token-file", open}, "chmod 600"},
		{[]string{"bench", "127.0.0.1"}, "no token"},
		{[]string{"bench", "127.0.0.1", "-P", "129"}, "-P 129"},
		{[]string{"bench", "127.0.0.1", "-R", "--bidir"}, "pick one"},
		{[]string{"bench", "127.0.0.1", "--json", "--json-stream"}, "pick one"},
		{[]string{"bench", "127.0.0.1", "-A", "0,1,2"}, "ambiguous"},
		{[]string{"bench", "127.0.0.1", "-w", "3G"}, "--window"},
		{[]string{"bench", "127.0.0.1", "-Z=splice"}, "--zerocopy"},
		{[]string{"bench", "127.0.0.1", "-t", "ten"}, "give seconds"},
		{[]string{"bench", "127.0.0.1", "--sweep-streams", "1,2", "-P", "4"}, "--sweep-streams only"},
		{[]string{"bench", "127.0.0.1", "--no-store", "--label", "x"}, "--no-store keeps nothing"},
		{[]string{"bench", "127.0.0.1", "-A", "0,1", "--placements", "0,0;0,1"}, "--placements only"},
		{[]string{"bench", "127.0.0.1", "--json-stream", "--repeat", "2"}, "--json-stream shows one native run"},
		{[]string{"bench", "127.0.0.1", "--engine", "iperf3", "-C", "bbr"}, "native engine's"},
		{[]string{"bench", "127.0.0.1", "--engine", "nope"}, "--engine \"nope\""},
	}
	for _, tt := range tests {
		_, stderr, code := runCLI(t, tt.args...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tt.args, code, stderr, tt.want)
		}
	}
	t.Setenv("LINERATE_TOKEN", "sixteen-chars-ok")
	if _, stderr, code := runCLI(t, "bench", "127.0.0.1"); code != 2 || !strings.Contains(stderr, "weak token") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Errorf("bench with a weak $LINERATE_TOKEN: exit %d, %q; want 2 and one line", code, stderr)
	}
}

func TestBenchFlagParsers(t *testing.T) {
	for in, want := range map[string]uint64{"4M": 4 << 20, "512k": 512 << 10, "1.5G": 3 << 29, "1000": 1000} {
		if got, err := parseSize(in, 1024); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if got, _ := parseSize("10G", 1000); got != 10e9 {
		t.Errorf("10G bits = %d", got)
	}
	var s seconds
	for in, want := range map[string]time.Duration{"10": 10 * time.Second, "0.5": 500 * time.Millisecond, "1m30s": 90 * time.Second} {
		if err := s.Set(in); err != nil || time.Duration(s) != want {
			t.Errorf("seconds %q = %s, %v", in, time.Duration(s), err)
		}
	}
	for in, want := range map[string]string{
		"h": "h:5301", "h:1": "h:1", "10.0.0.1": "10.0.0.1:5301", "fe80::1": "[fe80::1]:5301",
		"[fe80::1]": "[fe80::1]:5301", "[fe80::1]:7": "[fe80::1]:7",
	} {
		if got := agent.WithPort(in, 5301); got != want {
			t.Errorf("WithPort(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestBenchLab runs `linerate bench lab:NAME` with the real binary (the
// agent in host b, the client in host a) in a lab of two queues, in every
// mode and with every driver that runs here, and validates each
// document it prints against docs/schema/bench-v1.schema.json.
func TestBenchLab(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("TestBenchLab needs root (network namespaces) and CI=true: run it with sudo")
		}
		t.Skip("needs root")
	}
	dir := t.TempDir()
	bin := testbin.Build(t, ".")
	t.Setenv("LINERATE_STATE_DIR", dir)
	const name = "t-bench"
	if _, err := lab.Up(context.Background(), lab.Config{Name: name, Queues: 2}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := lab.Down(context.Background(), name); err != nil {
			t.Errorf("lab down: %v", err)
		}
	})
	schema := testutil.Schema(t, "../../docs/schema/bench-v1.schema.json")
	bench := func(args ...string) []byte {
		t.Helper()
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, append([]string{"bench", "lab:" + name, "--json"}, args...)...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("bench lab:%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
		}
		testutil.Validate(t, schema, "bench lab:"+name+" "+strings.Join(args, " "), stdout.Bytes())
		return stdout.Bytes()
	}

	out := bench("-t", "1", "-R")
	var res struct {
		Start struct {
			Peer      string `json:"peer"`
			Direction string `json:"direction"`
			Client    struct {
				Iface string `json:"iface"`
			} `json:"client"`
		} `json:"start"`
		End struct {
			SumReceived struct {
				Bytes uint64 `json:"bytes"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("output: %v\n%s", err, out)
	}
	if res.Start.Peer != lab.AddrB || res.Start.Direction != "receive" || res.Start.Client.Iface != lab.Iface || res.End.SumReceived.Bytes == 0 {
		t.Errorf("result: %+v", res)
	}
	// Every other mode, and the external drivers that run here; each
	// document names what it was.
	for _, c := range []struct {
		args []string
		want string // a path the mode's document must have
	}{
		{[]string{"-t", "1", "-P", "4"}, "intervals.0.streams.3.rx_cpu"},
		{[]string{"-t", "1", "-P", "2", "--bidir"}, "end.sum_sent_bidir_reverse"},
		{[]string{"-t", "1", "--latency"}, "end.latency.rtt_us.p50"},
		{[]string{"-t", "1", "--latency", "--udp"}, "end.latency.rtt_us.p50"},
		{[]string{"-t", "1", "--udp", "-b", "500M"}, "end.udp.target_bits_per_second"},
		{[]string{"-t", "2", "--engine", "iperf3", "-P", "2"}, "tool.version"},
		{[]string{"-t", "2", "--engine", "iperf2", "-P", "2"}, "tool.client"},
		{[]string{"-t", "2", "--engine", "sockperf", "--latency"}, "end.latency.rtt_us.p50"},
	} {
		var doc map[string]any
		if err := json.Unmarshal(bench(c.args...), &doc); err != nil {
			t.Fatal(err)
		}
		if _, ok := lookup(doc, c.want); !ok {
			t.Errorf("bench %s: the document lacks %s", strings.Join(c.args, " "), c.want)
		}
		if slices.Contains(c.args, "sockperf") {
			sockperfIntervals(t, doc)
		}
	}
	storedRuns(t, bin, name)
	// A lab that does not exist says how to make it.
	cmd := exec.Command(bin, "bench", "lab:nosuch", "-t", "1")
	nosuch, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(nosuch), "linerate lab up --name nosuch") {
		t.Errorf("bench lab:nosuch: %v: %s", err, nosuch)
	}
}

// sockperfIntervals checks a sockperf run of -t 2: two intervals of 1 s,
// each with its round trips and p50, adding up to the end's 2 s.
func sockperfIntervals(t *testing.T, doc map[string]any) {
	t.Helper()
	ivs, _ := doc["intervals"].([]any)
	var sum float64
	for i, v := range ivs {
		iv := v.(map[string]any)
		n, _ := lookup(iv, "latency.samples")
		p50, _ := lookup(iv, "latency.rtt_us.p50")
		if f, ok := n.(float64); !ok || f <= 0 || p50 == nil || iv["start"] != float64(i) || iv["end"] != float64(i+1) {
			t.Errorf("sockperf interval %d: %v", i, iv)
			continue
		}
		sum += n.(float64)
	}
	total, _ := lookup(doc, "end.latency.samples")
	if secs, _ := lookup(doc, "end.seconds"); len(ivs) != 2 || total != sum || secs != 2.0 {
		t.Errorf("sockperf -t 2: %d intervals holding %v round trips, the end %v in %v s", len(ivs), sum, total, secs)
	}
}

// TestBenchThroughAgent runs the external drivers against a standing
// agent, as on two machines: `linerate serve` in lab host b starts the
// tool server itself (bound to its own address), and every interval
// carries host b's per-CPU samples sent by the agent, and its doctor
// report is stored with the run.
func TestBenchThroughAgent(t *testing.T) {
	bin, db := campaignLab(t, "t-agent")
	tok := filepath.Join(filepath.Dir(db), "token")
	if err := os.WriteFile(tok, []byte(testToken), 0o600); err != nil {
		t.Fatal(err)
	}
	agent := exec.Command(bin, "serve", "--bind", lab.AddrB, "--token-file", tok)
	var agentLog testutil.Buffer
	agent.Stdout, agent.Stderr = &agentLog, &agentLog
	if err := lab.Start("t-agent", lab.B, agent); err != nil {
		t.Fatal(err)
	}
	defer func() { agent.Process.Kill(); agent.Wait() }()
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(agentLog.String(), "Listening on"); {
		if time.Now().After(deadline) {
			t.Fatalf("agent did not start: %s", agentLog.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, eng := range []string{"iperf3", "iperf2"} {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, "bench", lab.AddrB, "--engine", eng, "-t", "2", "-A", "0,1", "--token-file", tok, "--db", db, "--json")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := lab.Start("t-agent", lab.A, cmd); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%s through the agent: %v\n%s\nagent:\n%s", eng, err, stderr.String(), agentLog.String())
		}
		var run struct {
			Tool struct {
				Server []string `json:"server"`
			} `json:"tool"`
			Intervals []struct {
				CPU struct {
					Server map[string]struct {
						Busy  float64 `json:"busy"`
						NetRX uint64  `json:"net_rx"`
					} `json:"server"`
				} `json:"cpu"`
			} `json:"intervals"`
			End struct {
				SumReceived struct {
					Bytes uint64 `json:"bytes"`
				} `json:"sum_received"`
			} `json:"end"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &run); err != nil {
			t.Fatalf("%s: %v\n%s", eng, err, stdout.String())
		}
		if got := strings.Join(run.Tool.Server, " "); !strings.Contains(got, "-B "+lab.AddrB) {
			t.Errorf("%s server argv %q: not bound to the agent's address", eng, got)
		}
		if len(run.Intervals) < 2 || run.End.SumReceived.Bytes == 0 {
			t.Fatalf("%s: %d intervals, %d bytes", eng, len(run.Intervals), run.End.SumReceived.Bytes)
		}
		var rx uint64
		for _, iv := range run.Intervals {
			for _, c := range iv.CPU.Server {
				rx += c.NetRX
			}
		}
		if len(run.Intervals[0].CPU.Server) == 0 || rx == 0 {
			t.Errorf("%s: no per-CPU samples of the agent's host: %+v", eng, run.Intervals[0].CPU.Server)
		}
	}
	if !strings.Contains(agentLog.String(), "tool done") || !strings.Contains(agentLog.String(), "doctor report sent") {
		t.Errorf("agent log:\n%s", agentLog.String())
	}
	s, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runs, err := s.Runs(context.Background(), store.Query{Full: true})
	if err != nil || len(runs) != 2 {
		t.Fatalf("%d runs stored: %v", len(runs), err)
	}
	for _, r := range runs {
		if !bytes.Contains(r.ServerDoctor, []byte(`"linerate.doctor/v1"`)) || !bytes.Contains(r.ClientDoctor, []byte(`"linerate.doctor/v1"`)) {
			t.Errorf("run %d lacks a doctor report of both hosts", r.ID)
		}
	}
}

// storedRuns checks `history --run ID --json` of the lab's runs stored by
// TestBenchLab (a native and an iperf3 one): each is a
// linerate.stored-run/v1 document, and both ends' doctor reports of lab0
// are what `linerate doctor --iface lab0 --json` says in that lab host
// (the link and its channels included), but for its counters, which grow.
func storedRuns(t *testing.T, bin, name string) {
	t.Helper()
	run := func(args ...string) []byte {
		t.Helper()
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("linerate %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return stdout.Bytes()
	}
	var hist struct {
		Runs []struct {
			ID     int64  `json:"id"`
			Engine string `json:"engine"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(run("history", "--json"), &hist); err != nil {
		t.Fatal(err)
	}
	ids := map[string]int64{}
	for _, r := range hist.Runs {
		if ids[r.Engine] == 0 {
			ids[r.Engine] = r.ID
		}
	}
	// lab0 as doctor sees it in each lab host, live.
	live := map[string]map[string]any{}
	for _, h := range []string{"a", "b"} {
		live[h] = lab0Of(t, run("lab", "exec", name, h, "--", bin, "doctor", "--iface", "lab0", "--json"))
	}
	schema := testutil.Schema(t, "../../docs/schema/stored-run-v1.schema.json")
	for _, engine := range []string{"native", "iperf3"} {
		id := ids[engine]
		if id == 0 {
			t.Fatalf("no %s run stored: %+v", engine, hist.Runs)
		}
		out := run("history", "--run", strconv.FormatInt(id, 10), "--json")
		testutil.Validate(t, schema, fmt.Sprintf("history --run %d --json", id), out)
		var doc struct {
			Schema string `json:"schema"`
			Run    struct {
				RunID  int64  `json:"run_id"`
				Engine string `json:"engine"`
			} `json:"run"`
			Doctor struct {
				Client, Server json.RawMessage
			} `json:"doctor"`
		}
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Schema != "linerate.stored-run/v1" || doc.Run.RunID != id || doc.Run.Engine != engine {
			t.Errorf("run %d: schema %q, run %d of %s", id, doc.Schema, doc.Run.RunID, doc.Run.Engine)
		}
		for end, h := range map[string]string{"client": "a", "server": "b"} {
			rep := map[string]json.RawMessage{"client": doc.Doctor.Client, "server": doc.Doctor.Server}[end]
			stored := lab0Of(t, rep)
			if stored["link"] == nil || stored["channels"] == nil {
				t.Errorf("run %d, %s's lab0 has no link or channels: %v", id, end, stored)
			}
			if got, want := fmt.Sprint(stored), fmt.Sprint(live[h]); got != want {
				t.Errorf("run %d, %s's lab0 differs from doctor --iface lab0 --json in host %s:\nstored %s\nlive   %s", id, end, h, got, want)
			}
		}
	}
}

// lab0Of is the lab0 entry of a doctor report, without what changes from
// one reading to the next (its counters).
func lab0Of(t *testing.T, report []byte) map[string]any {
	t.Helper()
	var rep struct {
		NICs []map[string]any `json:"nics"`
	}
	if err := json.Unmarshal(report, &rep); err != nil {
		t.Fatalf("doctor report: %v\n%s", err, report)
	}
	for _, n := range rep.NICs {
		if n["interface"] == "lab0" {
			delete(n, "counters")
			return n
		}
	}
	t.Fatalf("no lab0 in the doctor report:\n%s", report)
	return nil
}
