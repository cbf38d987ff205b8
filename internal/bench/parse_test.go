package bench

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/result"
)

func testdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

func TestParseIperf3(t *testing.T) {
	for _, c := range []struct {
		file      string
		streams   int
		dir       result.Direction
		intervals int
		recvBytes uint64
		sentBytes uint64
		senders   string
	}{
		{"iperf3-3.12-J.json", 1, result.Send, 2, 2898657280, 2898657280, "client"},
		{"iperf3-3.12-J-P2.json", 2, result.Send, 2, 3663014160, 3681288192, "client"},
		{"iperf3-3.12-J-R.json", 1, result.Receive, 2, 2514223104, 2519597056, "server"},
		{"iperf3-3.12-J-bidir.json", 1, result.Bidir, 2, 1040711680 + 953942016, 1045954560 + 954597376, "client,server"},
		{"iperf3-3.12-J-A01.json", 1, result.Send, 2, 0, 0, "client"},
	} {
		t.Run(c.file, func(t *testing.T) {
			r, err := ParseIperf3(testdata(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			if r.Schema != result.Schema || r.Engine != "iperf3" || r.Tool.Version != "3.12" {
				t.Errorf("schema %q engine %q tool %+v", r.Schema, r.Engine, r.Tool)
			}
			if r.Start.Streams != c.streams || r.Start.Direction != c.dir || r.Start.Peer != "198.18.0.2" || r.Start.Port != 5201 {
				t.Errorf("start %+v", r.Start)
			}
			if len(r.Intervals) != c.intervals || r.Start.IntervalS < 0.95 || r.Start.IntervalS > 1.05 {
				t.Errorf("%d intervals of %v s", len(r.Intervals), r.Start.IntervalS)
			}
			if c.recvBytes != 0 && (r.End.SumReceived.Bytes != c.recvBytes || r.End.SumSent.Bytes != c.sentBytes) {
				t.Errorf("end: received %d sent %d", r.End.SumReceived.Bytes, r.End.SumSent.Bytes)
			}
			var senders []string
			for _, s := range r.Intervals[0].Streams {
				if !strings.Contains(strings.Join(senders, ","), s.Sender) {
					senders = append(senders, s.Sender)
				}
				if s.ID < 1 || s.ID > 2*c.streams {
					t.Errorf("stream ID %d", s.ID)
				}
			}
			if strings.Join(senders, ",") != c.senders {
				t.Errorf("senders %v, want %s", senders, c.senders)
			}
			var sum float64
			for _, s := range r.Intervals[0].Streams {
				sum += s.BitsPerSecond
			}
			// iperf3 divides each stream by its own seconds: the sum is close, not equal.
			if math.Abs(sum-r.Intervals[0].Sum.BitsPerSecond) > 1e-3*sum {
				t.Errorf("interval sum %v, streams add to %v", r.Intervals[0].Sum.BitsPerSecond, sum)
			}
			if r.End.CPU.ClientSeconds <= 0 || r.End.CPU.ServerSeconds <= 0 {
				t.Errorf("cpu %+v", r.End.CPU)
			}
			if r.Gbps() < 1 {
				t.Errorf("goodput %.2f Gbit/s", r.Gbps())
			}
		})
	}
}

func TestParseIperf3Errors(t *testing.T) {
	_, err := ParseIperf3(testdata(t, "iperf3-3.12-J-busy.json"))
	var pe *agent.PeerError
	if !errors.As(err, &pe) || !pe.Busy {
		t.Errorf("busy server: %v", err)
	}
	_, err = ParseIperf3(testdata(t, "iperf3-3.12-J-refused.json"))
	if err == nil || !strings.Contains(err.Error(), "unable to connect") || errors.As(err, &pe) {
		t.Errorf("refused: %v", err)
	}
	if _, err := ParseIperf3(testdata(t, "iperf3-3.12-text.txt")); err == nil {
		t.Error("text output parsed as JSON")
	}
}

func TestParseIperf3Stream(t *testing.T) {
	var live []result.Interval
	r, err := ParseIperf3Stream(bytes.NewReader(testdata(t, "iperf3-json-stream-derived-P2.ndjson")),
		func(iv result.Interval) { live = append(live, iv) })
	if err != nil {
		t.Fatal(err)
	}
	whole, err := ParseIperf3(testdata(t, "iperf3-3.12-J-P2.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 2 || r.End.SumReceived != whole.End.SumReceived || len(r.Intervals) != 2 || r.Start.Streams != 2 {
		t.Errorf("stream: %d live intervals, end %+v (want %+v)", len(live), r.End.SumReceived, whole.End.SumReceived)
	}
	_, err = ParseIperf3Stream(bytes.NewReader(testdata(t, "iperf3-json-stream-derived-error.ndjson")), nil)
	if err == nil || !strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("error event: %v", err)
	}
	_, err = ParseIperf3Stream(strings.NewReader(`{"event":"start","data":{}}`+"\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "end") {
		t.Errorf("cut-off stream: %v", err)
	}
}

func TestParseIperf2CSV(t *testing.T) {
	for _, c := range []struct {
		file       string
		streams    int
		dir        result.Direction
		intervals  int
		totalBytes uint64
		peer       string
		port       int
		retrans    bool
	}{
		{"iperf2-2.1.8-eyC.csv", 1, result.Send, 2, 4013424700, "198.18.0.2", 5001, false},
		{"iperf2-2.1.8-eyC-P2.csv", 2, result.Send, 2, 2664562748 + 2524184636, "198.18.0.2", 5001, false},
		{"iperf2-2.1.8-eyC-R.csv", 1, result.Receive, 2, 3810918400, "198.18.0.2", 5001, false},
		{"iperf2-2.1.8-eyC-fullduplex.csv", 1, result.Bidir, 2, 1801715772 + 1891106816, "198.18.0.2", 5001, false},
		{"iperf2-2.1.8-yC.csv", 1, result.Send, 0, 4217503804, "198.18.0.2", 5001, false},
		{"iperf2-2.1.9-eyC-k8s.csv", 1, result.Send, 2, 5127667712, "192.168.9.4", 5001, false},
		{"iperf2-2.2.0-eyC-k8s.csv", 1, result.Send, 3, 8703574016, "10.96.223.154", 6789, false},
	} {
		t.Run(c.file, func(t *testing.T) {
			r, err := ParseIperf2CSV(bytes.NewReader(testdata(t, c.file)))
			if err != nil {
				t.Fatal(err)
			}
			if r.Engine != "iperf2" || r.Start.Streams != c.streams || r.Start.Direction != c.dir || r.Start.Peer != c.peer || r.Start.Port != c.port {
				t.Errorf("start %+v", r.Start)
			}
			wantIv := c.intervals
			if wantIv == 0 {
				wantIv = 1 // no -i: the total is the only interval
			}
			if len(r.Intervals) != wantIv {
				t.Errorf("%d intervals, want %d", len(r.Intervals), wantIv)
			}
			if c.file != "iperf2-2.1.9-eyC-k8s.csv" && c.file != "iperf2-2.2.0-eyC-k8s.csv" && r.End.SumSent.Bytes != c.totalBytes {
				t.Errorf("total %d bytes, want %d", r.End.SumSent.Bytes, c.totalBytes)
			}
			if r.Gbps() <= 0 {
				t.Errorf("goodput %v", r.Gbps())
			}
		})
	}
}

func TestParseIperf2CSVEmpty(t *testing.T) {
	_, err := ParseIperf2CSV(bytes.NewReader(testdata(t, "iperf2-2.1.8-eyC-refused.csv")))
	if err == nil || !strings.Contains(err.Error(), "no results") {
		t.Errorf("refused (empty output): %v", err)
	}
	_, err = ParseIperf2CSV(strings.NewReader("20261122081405.967,198.18.0.1,34938,198.18.0.2,5001,1,0.0-1.0,abc,1\n"))
	if err == nil {
		t.Error("bad number accepted")
	}
}

func TestIperf2ParserLive(t *testing.T) {
	var p Iperf2Parser
	var live []result.Interval
	for _, l := range strings.Split(string(testdata(t, "iperf2-2.1.8-eyC-P2.csv")), "\n") {
		iv, ok, err := p.Line(l)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			live = append(live, iv)
		}
	}
	if len(live) != 2 || len(live[0].Streams) != 2 || live[0].Sum.Bytes != 1321467964+1274150972 {
		t.Errorf("live intervals: %+v", live)
	}
}

func TestParsePerftest(t *testing.T) {
	f := func(p *float64) float64 {
		if p == nil {
			return -1
		}
		return *p
	}
	for _, c := range []struct {
		file                     string
		bytes, iters             int64
		peak, avg, rate          float64
		tmin, typical, p99, avg2 float64
		device                   string
	}{
		{"perftest-seed002-ib_write_bw.txt", 1048576, 5000, 55.87, 55.86, 0.006660, -1, -1, -1, -1, ""},
		{"perftest-seed002-ib_read_bw.txt", 1048576, 5000, 55.97, 55.97, 0.006672, -1, -1, -1, -1, ""},
		{"perftest-seed002-ib_send_bw.txt", 1048576, 5000, 55.88, 55.88, 0.006661, -1, -1, -1, -1, ""},
		{"perftest-seed002-ib_write_lat.txt", 8, 10000, -1, -1, -1, 0.93, 0.99, 1.15, 1.00, ""},
		{"perftest-seed002-ib_send_lat.txt", 8, 10000, -1, -1, -1, 0.89, 0.92, 0.95, 0.92, ""},
		{"perftest-issue273-ib_write_bw.txt", 8, 224958464, 0, 0.48, 7.498617, -1, -1, -1, -1, "ib0"},
		{"perftest-issue65-ib_send_bw-MBps.txt", 1024, 1000, 0, 920.13 / mibPerGbit, 0.942218, -1, -1, -1, -1, ""},
		{"perftest-issue216-ib_write_lat-out_json-bare.txt", 128, 5000, -1, -1, -1, 2.37, 2.42, 2.47, 2.42, "rxe0"},
	} {
		t.Run(c.file, func(t *testing.T) {
			r, err := ParsePerftest(testdata(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			got := []float64{float64(r.MsgBytes), float64(r.Iterations), f(r.BWPeakGbps), f(r.BWAverageGbps), f(r.MsgRateMpps),
				f(r.TMinUs), f(r.TTypicalUs), f(r.P99Us), f(r.TAvgUs)}
			want := []float64{float64(c.bytes), float64(c.iters), c.peak, c.avg, c.rate, c.tmin, c.typical, c.p99, c.avg2}
			for i := range got {
				if !near(got[i], want[i]) {
					t.Errorf("field %d = %v, want %v (%+v)", i, got[i], want[i], r)
				}
			}
			if r.Device != c.device {
				t.Errorf("device %q, want %q", r.Device, c.device)
			}
		})
	}
}

func TestParsePerftestLatencyExtras(t *testing.T) {
	r, err := ParsePerftest(testdata(t, "perftest-seed002-ib_write_lat.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r.TMaxUs == nil || *r.TMaxUs != 3.52 || r.P999Us == nil || *r.P999Us != 1.40 || r.TStdevUs != nil {
		t.Errorf("t_max %v p99.9 %v stdev %v", r.TMaxUs, r.P999Us, r.TStdevUs)
	}
	j, err := ParsePerftest(testdata(t, "perftest-issue216-ib_write_lat-out_json-bare.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if j.TStdevUs == nil || *j.TStdevUs != 0.05 || j.P999Us == nil || *j.P999Us != 4.03 || j.Test != "RDMA_Write_Latency_Test" || j.LinkType != "Ethernet" {
		t.Errorf("json extras: %+v", j)
	}
}

// TestParsePerftestQuotedJSON reads the issue-216 document with its keys
// quoted the way perftest has written them since PR #239.
func TestParsePerftestQuotedJSON(t *testing.T) {
	fixed, err := quoteBareJSON(testdata(t, "perftest-issue216-ib_write_lat-out_json-bare.txt"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := quoteBareJSON(fixed)
	if err != nil || !bytes.Equal(again, fixed) {
		t.Errorf("quoting valid JSON changed it: %v\n%s", err, again)
	}
	r, err := ParsePerftest(fixed)
	if err != nil || r.TTypicalUs == nil || *r.TTypicalUs != 2.42 {
		t.Errorf("quoted: %+v %v", r, err)
	}
}

func TestParsePerftestFailures(t *testing.T) {
	_, err := ParsePerftest(testdata(t, "perftest-issue234-ib_write_bw-truncated.txt"))
	if err == nil || !strings.Contains(err.Error(), "no results under it") {
		t.Errorf("truncated: %v", err)
	}
	if _, err := ParsePerftest([]byte("ib_write_bw: command not found\n")); err == nil {
		t.Error("no table accepted")
	}
	if _, err := ParsePerftest([]byte(`{"results": {}}`)); err == nil {
		t.Error("empty results accepted")
	}
}

func TestPerftestHeaderFacts(t *testing.T) {
	r, err := ParsePerftest(testdata(t, "perftest-issue273-ib_write_bw.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Test != "RDMA_Write Post List BW Test" || r.LinkType != "Ethernet" {
		t.Errorf("test %q link %q", r.Test, r.LinkType)
	}
}
