package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/jsonshape"
	"github.com/linerate/linerate/internal/result"
)

// iperf3Captures holds iperf3 3.12's own -J documents
// (internal/result/testdata/iperf3-3.12/README.md says how they were made).
const iperf3Captures = "../../internal/result/testdata/iperf3-3.12"

// nativeJSON makes one native run over loopback with `bench --json` and
// returns what it printed.
func nativeJSON(t *testing.T, args ...string) []byte {
	t.Helper()
	tok := tokenFile(t, 0o600)
	port := freePort(t)
	_, code := serveOnce(t, "--port", port, "--token-file", tok)
	argv := append([]string{"bench", "127.0.0.1:" + port, "--token-file", tok, "-t", "1", "-i", "0.5", "--no-store", "--json"}, args...)
	stdout, stderr, c := runCLI(t, argv...)
	if c != 0 {
		t.Fatalf("%v: exit %d: %s", argv, c, stderr)
	}
	<-code
	return []byte(stdout)
}

func decodeAny(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return v
}

// TestBenchJSONIsIperf3s: each kind of native run's --json document has
// every key path of the document iperf3 3.12 wrote for the same kind of
// run in the lab, with the same JSON type.
func TestBenchJSONIsIperf3s(t *testing.T) {
	for _, c := range []struct {
		capture string
		args    []string
	}{{"tcp.json", nil}, {"tcp-P2.json", []string{"-P", "2"}}, {"tcp-R.json", []string{"-R"}}, {"tcp-bidir.json", []string{"--bidir"}},
		{"udp-1G.json", []string{"--udp", "-b", "100M"}}} {
		t.Run(c.capture, func(t *testing.T) {
			ref, err := os.ReadFile(filepath.Join(iperf3Captures, c.capture))
			if err != nil {
				t.Fatal(err)
			}
			doc := nativeJSON(t, c.args...)
			if miss := jsonshape.Missing(decodeAny(t, ref), decodeAny(t, doc)); len(miss) > 0 {
				t.Errorf("bench --json %s lacks iperf3's:\n%s", strings.Join(c.args, " "), strings.Join(miss, "\n"))
			}
		})
	}
}

// TestBenchJSONPythonIperf3 is issue 16's done-when for TCP: the PyPI
// iperf3 package's TestResult parses a native run's --json and reads the
// throughput, retransmits and CPU figures linerate recorded in its own
// fields.
func TestBenchJSONPythonIperf3(t *testing.T) {
	py := pythonIperf3(t)
	doc := nativeJSON(t, "-P", "2")
	var r result.Result
	if err := json.Unmarshal(doc, &r); err != nil {
		t.Fatal(err)
	}
	got := testResult(t, py, doc)
	pct := func(s float64) float64 { return s / r.End.Seconds * 100 }
	for k, want := range map[string]float64{
		"sent_bps": r.End.SumSent.BitsPerSecond, "received_bps": r.End.SumReceived.BitsPerSecond,
		"sent_bytes": float64(r.End.SumSent.Bytes), "received_bytes": float64(r.End.SumReceived.Bytes),
		"retransmits": float64(r.End.SumSent.Retransmits), "num_streams": 2, "duration": 1,
		"local_cpu_total": pct(r.End.CPU.ClientSeconds), "local_cpu_user": pct(r.End.CPU.ClientUserSeconds),
		"local_cpu_system": pct(r.End.CPU.ClientSystemSeconds), "remote_cpu_total": pct(r.End.CPU.ServerSeconds),
		"remote_cpu_user": pct(r.End.CPU.ServerUserSeconds), "remote_cpu_system": pct(r.End.CPU.ServerSystemSeconds),
		"timesecs": float64(r.Start.Timestamp.Unix()), "remote_port": float64(r.Start.Port),
	} {
		g, ok := got[k].(float64)
		if !ok || math.Abs(g-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("TestResult.%s = %v, linerate recorded %v", k, got[k], want)
		}
	}
	if got["protocol"] != "TCP" || got["type"] != "client" || got["remote_host"] != "127.0.0.1" || got["local_host"] != "127.0.0.1" {
		t.Errorf("TestResult: %v", got)
	}
	// The figures are real: bytes moved, CPU used, the client's and
	// agent's user and system time add up to their totals.
	if r.End.SumReceived.Bytes == 0 || r.End.CPU.ClientSeconds <= 0 || r.End.CPU.ServerSeconds <= 0 ||
		math.Abs(r.End.CPU.ClientUserSeconds+r.End.CPU.ClientSystemSeconds-r.End.CPU.ClientSeconds) > 0.01 ||
		math.Abs(r.End.CPU.ServerUserSeconds+r.End.CPU.ServerSystemSeconds-r.End.CPU.ServerSeconds) > 0.01 {
		t.Errorf("end: %+v", r.End)
	}
	if r.Start.MSS <= 0 || r.Start.SenderCongestion == "" || r.Start.Connections[0].Local == "" {
		t.Errorf("start: MSS %d congestion %q connections %+v", r.Start.MSS, r.Start.SenderCongestion, r.Start.Connections)
	}
}

// TestBenchJSONPythonIperf3UDP: the PyPI iperf3 package's TestResult reads
// a native UDP run (bench --udp) as it reads iperf3 -u's, with the figures
// linerate recorded: rate, bytes, packets, loss, jitter and CPU.
func TestBenchJSONPythonIperf3UDP(t *testing.T) {
	py := pythonIperf3(t)
	doc := nativeJSON(t, "--udp", "-b", "100M")
	var r result.Result
	if err := json.Unmarshal(doc, &r); err != nil {
		t.Fatal(err)
	}
	got := testResult(t, py, doc)
	s := r.End.Sum
	if s == nil || s.Packets == 0 {
		t.Fatalf("the run has no UDP sum: %+v", r.End)
	}
	pct := func(sec float64) float64 { return sec / r.End.Seconds * 100 }
	for k, want := range map[string]float64{
		"bps": s.BitsPerSecond, "bytes": float64(s.Bytes), "packets": float64(s.Packets),
		"lost_packets": float64(s.LostPackets), "lost_percent": s.LostPercent, "jitter_ms": s.JitterMS,
		"num_streams": 1, "local_cpu_total": pct(r.End.CPU.ClientSeconds), "remote_cpu_total": pct(r.End.CPU.ServerSeconds),
	} {
		g, ok := got[k].(float64)
		if !ok || math.Abs(g-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("TestResult.%s = %v, linerate recorded %v", k, got[k], want)
		}
	}
	if got["protocol"] != "UDP" || got["type"] != "client" {
		t.Errorf("TestResult: %v", got)
	}
}

// pythonIperf3 returns the Python that has the PyPI iperf3 package; it
// fails under CI=true, and skips elsewhere, where it has not.
func pythonIperf3(t *testing.T) string {
	t.Helper()
	py := "/opt/linerate-py/bin/python"
	if out, err := exec.Command(py, "-c", "import iperf3").CombinedOutput(); err != nil {
		msg := "the PyPI iperf3 package is not importable with " + py + " (" + strings.TrimSpace(string(out)) + " " + err.Error() + "): python3 -m venv /opt/linerate-py && /opt/linerate-py/bin/pip install iperf3"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return py
}

// testResult feeds a run document to iperf3.TestResult (testresult.py)
// and returns the figures it read.
func testResult(t *testing.T, py string, doc []byte) map[string]any {
	t.Helper()
	cmd := exec.Command(py, filepath.Join(iperf3Captures, "..", "testresult.py"))
	cmd.Stdin = bytes.NewReader(doc)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("iperf3.TestResult failed on the run document: %v\n%s\n%s", err, stderr.String(), doc)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("testresult.py printed %q: %v", out, err)
	}
	return got
}
