package result

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/jsonshape"
)

const capturedDir = "testdata/iperf3-3.12"

// captured decodes one of iperf3's own -J documents.
func captured(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(capturedDir, name))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

func num(t *testing.T, v map[string]any, path string) float64 {
	t.Helper()
	var x any = v
	for _, k := range strings.Split(path, ".") {
		switch m := x.(type) {
		case map[string]any:
			x = m[k]
		case []any:
			x = m[0]
			if k != "0" {
				t.Fatalf("%s: only index 0", path)
			}
		}
	}
	f, ok := x.(float64)
	if !ok {
		t.Fatalf("%s is %T, not a number", path, x)
	}
	return f
}

// udpRun is a UDP run built from the figures iperf3 3.12 measured in
// testdata/iperf3-3.12/udp-1G.json, as linerate's UDP engine would
// record them.
func udpRun(t *testing.T) Result {
	c := captured(t, "udp-1G.json")
	recv := c["end"].(map[string]any)["sum_received"].(map[string]any)
	st := UDPStream{Socket: 1, End: 3, Seconds: 3,
		Bytes: uint64(recv["bytes"].(float64)), BitsPerSecond: recv["bits_per_second"].(float64),
		JitterMS: recv["jitter_ms"].(float64), LostPackets: int64(recv["lost_packets"].(float64)),
		Packets: int64(recv["packets"].(float64)), LostPercent: recv["lost_percent"].(float64), Sender: true}
	sum := st
	sum.Socket = 0
	sent := uint64(num(t, c, "end.sum_sent.bytes"))
	r := Result{Schema: Schema, RunID: 1795452754000, Engine: "native",
		Start: Start{Peer: "198.18.0.2", Port: 5201, Timestamp: time.Unix(1795452754, 0).UTC(), Streams: 1, DurationS: 3,
			IntervalS: 1, Direction: Send, Protocol: UDP, Bitrate: 1e9, BlockSize: 8948,
			Connections: []Connection{{ID: 1, Sender: "client", Local: "198.18.0.1:44561", Remote: "198.18.0.2:5201"}},
			Client:      HostInfo{Hostname: "vm", Kernel: "6.18.44-fc-v657"}},
		End: End{Seconds: 3, SumSent: Sum{Bytes: sent, BitsPerSecond: float64(sent) * 8 / 3},
			SumReceived: Received{Bytes: st.Bytes, BitsPerSecond: st.BitsPerSecond},
			Streams:     []StreamEnd{{ID: 1, Sender: "client", SentBytes: sent, ReceivedBytes: st.Bytes, UDP: &st}},
			Sum:         &sum,
			CPU: EndCPU{ClientSeconds: 0.417, ClientUserSeconds: 0.023, ClientSystemSeconds: 0.394,
				ServerSeconds: 0.178, ServerUserSeconds: 0.029, ServerSystemSeconds: 0.149}},
	}
	for i, iv := range c["intervals"].([]any) {
		s := iv.(map[string]any)["sum"].(map[string]any)
		b, p := uint64(s["bytes"].(float64)), uint64(s["packets"].(float64))
		// The receiver's count: the interval's datagrams less i+1 lost.
		r.Intervals = append(r.Intervals, Interval{Start: float64(i), End: float64(i + 1),
			Streams: []StreamInterval{{ID: 1, Sender: "client", Bytes: b, BitsPerSecond: float64(b) * 8, Packets: p,
				UDPInterval: NewUDPInterval(p-uint64(i+1), int64(i+1), 0, 0.004)}},
			Sum: Sum{Bytes: b, BitsPerSecond: float64(b) * 8}})
	}
	return r
}

// decoded marshals v and decodes it as a generic JSON value.
func decoded(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestUDPShape: a UDP run's document has every key path of iperf3 -u's,
// with iperf3's JSON types.
func TestUDPShape(t *testing.T) {
	doc := decoded(t, udpRun(t))
	if miss := jsonshape.Missing(captured(t, "udp-1G.json"), doc); len(miss) > 0 {
		t.Errorf("the UDP document lacks iperf3's:\n%s", strings.Join(miss, "\n"))
	}
	// iperf3 writes no TCP figures in a UDP run; a reader that looks for
	// them to tell TCP from UDP must not find them.
	for _, p := range []string{"end.sender_tcp_congestion", "start.tcp_mss_default"} {
		if _, ok := lookup(doc, p); ok {
			t.Errorf("a UDP document has %s", p)
		}
	}
}

// TestUDPIntervalReceiver: a UDP run's intervals carry the receiver's
// count beside the sender's datagrams, in each stream and in iperf3's
// sum, in end.sum_received's names; a TCP run's carry none of it.
func TestUDPIntervalReceiver(t *testing.T) {
	r := udpRun(t)
	doc := decoded(t, r)
	for i, iv := range doc["intervals"].([]any) {
		m := iv.(map[string]any)
		st, sum := m["streams"].([]any)[0].(map[string]any), m["sum"].(map[string]any)
		u := r.Intervals[i].Streams[0].UDPInterval
		want := map[string]float64{"received_packets": float64(u.ReceivedPackets), "lost_packets": float64(i + 1),
			"lost_percent": 100 * float64(i+1) / float64(r.Intervals[i].Streams[0].Packets), "out_of_order": 0, "jitter_ms": 0.004}
		for k, v := range want {
			if st[k] != v {
				t.Errorf("interval %d: streams[0].%s = %v, want %v", i, k, st[k], v)
			}
			if k != "received_packets" && k != "out_of_order" && sum[k] != v {
				t.Errorf("interval %d: sum.%s = %v, want %v", i, k, sum[k], v)
			}
		}
	}
	tcp := decoded(t, tcpRun(1, Send))
	m := tcp["intervals"].([]any)[0].(map[string]any)
	for _, k := range []string{"received_packets", "lost_packets", "lost_percent", "jitter_ms"} {
		if _, ok := m["streams"].([]any)[0].(map[string]any)[k]; ok {
			t.Errorf("a TCP interval's stream has %s", k)
		}
		if _, ok := m["sum"].(map[string]any)[k]; ok {
			t.Errorf("a TCP interval's sum has %s", k)
		}
	}
}

// TestTCPShape: a TCP run built the way the native engine records one has
// every key path of iperf3's, for each kind of run captured.
func TestTCPShape(t *testing.T) {
	for _, c := range []struct {
		file    string
		streams int
		dir     Direction
	}{{"tcp.json", 1, Send}, {"tcp-P2.json", 2, Send}, {"tcp-R.json", 1, Receive}, {"tcp-bidir.json", 1, Bidir}} {
		t.Run(c.file, func(t *testing.T) {
			r := tcpRun(c.streams, c.dir)
			if miss := jsonshape.Missing(captured(t, c.file), decoded(t, r)); len(miss) > 0 {
				t.Errorf("the document lacks iperf3's:\n%s", strings.Join(miss, "\n"))
			}
		})
	}
}

// tcpRun is a run of n streams each way dir says, two intervals long.
func tcpRun(n int, dir Direction) Result {
	r := Result{Schema: Schema, RunID: 5, Engine: "native", Start: Start{Peer: "198.18.0.2", Port: 5201,
		Timestamp: time.Date(2026, 11, 23, 16, 52, 34, 250e6, time.UTC), Streams: n, DurationS: 2, IntervalS: 1,
		Direction: dir, BlockSize: 131072, MSS: 8948, SenderCongestion: "cubic",
		Client: HostInfo{Hostname: "a", Kernel: "6.18.44"}}}
	senders := []string{"client"}
	switch dir {
	case Receive:
		senders = []string{"server"}
	case Bidir:
		senders = []string{"client", "server"}
	}
	id := 0
	for _, who := range senders {
		for range n {
			id++
			r.Start.Connections = append(r.Start.Connections, Connection{ID: id, Sender: who, Local: "198.18.0.1:40000", Remote: "198.18.0.2:5201"})
			r.End.Streams = append(r.End.Streams, StreamEnd{ID: id, Sender: who, SentBytes: 2000, ReceivedBytes: 1900, Retransmits: 3})
			r.End.SumSent.Bytes += 2000
			r.End.SumSent.Retransmits += 3
			r.End.SumReceived.Bytes += 1900
		}
	}
	r.End.Seconds = 2
	r.End.SumSent.BitsPerSecond, r.End.SumReceived.BitsPerSecond = float64(r.End.SumSent.Bytes)*4, float64(r.End.SumReceived.Bytes)*4
	r.End.CPU = EndCPU{ClientSeconds: 1, ClientUserSeconds: 0.25, ClientSystemSeconds: 0.75, ServerSeconds: 0.5, ServerUserSeconds: 0.1, ServerSystemSeconds: 0.4}
	for i := range 2 {
		iv := Interval{Start: float64(i), End: float64(i + 1)}
		for _, c := range r.Start.Connections {
			rtt := uint32(40 + 10*i + c.ID)
			iv.Streams = append(iv.Streams, StreamInterval{ID: c.ID, Sender: c.Sender, Bytes: 1000, BitsPerSecond: 8000,
				RTTus: rtt, CwndBytes: uint64(1000 * (i + 1)), Retransmits: 1})
			iv.Sum.Bytes += 1000
			iv.Sum.Retransmits++
		}
		iv.Sum.BitsPerSecond = float64(iv.Sum.Bytes) * 8
		r.Intervals = append(r.Intervals, iv)
	}
	return r
}

func lookup(v any, path string) (any, bool) {
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// TestIperf3Values: iperf3's fields say what linerate's say, in iperf3's
// units.
func TestIperf3Values(t *testing.T) {
	r := tcpRun(1, Bidir)
	doc := decoded(t, r)
	for path, want := range map[string]any{
		"start.timestamp.time":                     "Mon, 23 Nov 2026 16:52:34 GMT",
		"start.timestamp.timesecs":                 float64(1795452754),
		"start.started_at":                         "2026-11-23T16:52:34.25Z",
		"start.test_start.protocol":                "TCP",
		"start.test_start.bidir":                   float64(1),
		"start.test_start.reverse":                 float64(0),
		"start.test_start.blksize":                 float64(131072),
		"start.tcp_mss_default":                    float64(8948),
		"start.connecting_to.host":                 "198.18.0.2",
		"start.system_info":                        "Linux a 6.18.44",
		"end.cpu_utilization_percent.host_total":   float64(50),
		"end.cpu_utilization_percent.host_user":    12.5,
		"end.cpu_utilization_percent.remote_total": float64(25),
		"end.sender_tcp_congestion":                "cubic",
		// bidir: iperf3's sums are one direction each, linerate's both.
		"end.sum_sent.bytes":                   float64(2000),
		"end.sum_sent_bidir_reverse.bytes":     float64(2000),
		"end.sum_received_bidir_reverse.bytes": float64(1900),
		"end.sum_sent_all.bytes":               float64(4000),
		"end.sum_received_all.bytes":           float64(3800),
		"end.sum_sent.retransmits":             float64(3),
	} {
		if got, ok := lookup(doc, path); !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %v (%v), want %v", path, got, ok, want)
		}
	}
	iv := doc["intervals"].([]any)[1].(map[string]any)
	s0 := iv["streams"].([]any)[0].(map[string]any)
	if s0["sender"] != true || s0["sent_by"] != "client" || s0["rtt"] != float64(51) || s0["snd_cwnd"] != float64(2000) || s0["socket"] != float64(1) {
		t.Errorf("interval stream: %v", s0)
	}
	if iv["sum"].(map[string]any)["bytes"] != float64(1000) || iv["sum_bidir_reverse"].(map[string]any)["bytes"] != float64(1000) ||
		iv["sum_all"].(map[string]any)["bytes"] != float64(2000) {
		t.Errorf("interval sums: %v %v %v", iv["sum"], iv["sum_bidir_reverse"], iv["sum_all"])
	}
	e1 := doc["end"].(map[string]any)["streams"].([]any)[1].(map[string]any)
	snd := e1["sender"].(map[string]any)
	if e1["sent_by"] != "server" || snd["sender"] != false || snd["bytes"] != float64(2000) || snd["max_rtt"] != float64(52) ||
		snd["min_rtt"] != float64(42) || snd["mean_rtt"] != float64(47) || snd["max_snd_cwnd"] != float64(2000) {
		t.Errorf("end stream 2: %v", e1)
	}
}

// TestRoundTrip: a document read back is the run that was written, in
// every direction (the bidirectional sums included).
func TestRoundTrip(t *testing.T) {
	for _, r := range []Result{tcpRun(2, Send), tcpRun(1, Receive), tcpRun(2, Bidir), udpRun(t)} {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back Result
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, r) {
			t.Errorf("%s run read back differs:\n got %+v\nwant %+v", r.Start.Direction, back, r)
		}
	}
}

// TestOldDocuments: a run stored before iperf3's fields were added, with
// start.timestamp a string and "sender" linerate's "client"/"server", is
// read as it was written.
func TestOldDocuments(t *testing.T) {
	old := `{"schema": "linerate.bench/v1", "run_id": 7, "engine": "native",
		"start": {"peer": "198.18.0.2", "timestamp": "2026-11-20T10:00:00.123Z", "streams": 1, "direction": "receive"},
		"intervals": [{"start": 0, "end": 1, "streams": [{"id": 1, "sender": "server", "bytes": 5}], "sum": {"bytes": 5}}],
		"end": {"seconds": 1, "streams": [{"id": 1, "sender": "server", "sent_bytes": 5, "received_bytes": 5}],
		        "sum_sent": {"bytes": 5}, "sum_received": {"bytes": 5}}}`
	var r Result
	if err := json.Unmarshal([]byte(old), &r); err != nil {
		t.Fatal(err)
	}
	if !r.Start.Timestamp.Equal(time.Date(2026, 11, 20, 10, 0, 0, 123e6, time.UTC)) || r.Intervals[0].Streams[0].Sender != "server" ||
		r.End.Streams[0].Sender != "server" || r.Intervals[0].Sum.Bytes != 5 || r.End.SumSent.Bytes != 5 {
		t.Errorf("old document read as %+v", r)
	}
	// A garbled old timestamp is an error naming it, not a zero time.
	bad := strings.Replace(old, "2026-11-20T10:00:00.123Z", "yesterday", 1)
	if err := json.Unmarshal([]byte(bad), &r); err == nil || !strings.Contains(err.Error(), "start.timestamp") {
		t.Errorf("bad old timestamp: %v", err)
	}
}

// pythonIperf3 runs the PyPI iperf3 package's TestResult over doc and
// returns what it read. Without the package it fails under CI=true and
// skips elsewhere (.ci/run installs it in /opt/linerate-py).
func pythonIperf3(t *testing.T, doc []byte) map[string]any {
	t.Helper()
	py := "/opt/linerate-py/bin/python"
	if out, err := exec.Command(py, "-c", "import iperf3").CombinedOutput(); err != nil {
		msg := "the PyPI iperf3 package is not importable with " + py + " (" + strings.TrimSpace(string(out)) + err.Error() + "): python3 -m venv /opt/linerate-py && /opt/linerate-py/bin/pip install iperf3"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	script, err := filepath.Abs("testdata/testresult.py")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, script)
	cmd.Stdin = bytes.NewReader(doc)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("iperf3.TestResult failed on the document: %v\n%s", err, stderr.String())
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("testresult.py printed %q: %v", out, err)
	}
	return got
}

// TestPythonIperf3UDP: the iperf3 package reads a UDP run's throughput,
// datagrams, loss, jitter and CPU figures as linerate recorded them.
func TestPythonIperf3UDP(t *testing.T) {
	r := udpRun(t)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got := pythonIperf3(t, b)
	want := map[string]any{"protocol": "UDP", "type": "client", "num_streams": float64(1), "blksize": float64(8948),
		"bps": r.End.Sum.BitsPerSecond, "bytes": float64(r.End.Sum.Bytes), "jitter_ms": r.End.Sum.JitterMS,
		"packets": float64(r.End.Sum.Packets), "lost_packets": float64(r.End.Sum.LostPackets), "lost_percent": r.End.Sum.LostPercent,
		"local_cpu_total": r.End.CPU.ClientSeconds / 3 * 100, "local_cpu_system": r.End.CPU.ClientSystemSeconds / 3 * 100,
		"remote_cpu_total": r.End.CPU.ServerSeconds / 3 * 100, "remote_cpu_user": r.End.CPU.ServerUserSeconds / 3 * 100,
		"local_host": "198.18.0.1", "local_port": float64(44561), "timesecs": float64(1795452754)}
	for k, w := range want {
		if !reflect.DeepEqual(got[k], w) {
			t.Errorf("TestResult.%s = %v, want %v", k, got[k], w)
		}
	}
}
