package bench

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/jsonshape"
	"github.com/linerate/linerate/internal/result"
)

// TestIperf3EngineDocument: a run of --engine iperf3, parsed from
// iperf3's own -J document, is written back with every key path of that
// document, with the same JSON types, and with iperf3's own figures where
// linerate keeps them.
func TestIperf3EngineDocument(t *testing.T) {
	for _, name := range []string{"tcp.json", "tcp-P2.json", "tcp-R.json", "tcp-bidir.json"} {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("../result/testdata/iperf3-3.12", name))
			if err != nil {
				t.Fatal(err)
			}
			run, err := ParseIperf3(raw)
			if err != nil {
				t.Fatal(err)
			}
			run.Label = "before"
			out, err := json.Marshal(run)
			if err != nil {
				t.Fatal(err)
			}
			var ref, doc map[string]any
			if err := json.Unmarshal(raw, &ref); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(out, &doc); err != nil {
				t.Fatal(err)
			}
			if miss := jsonshape.Missing(ref, doc); len(miss) > 0 {
				t.Errorf("the run's document lacks iperf3's:\n%s", strings.Join(miss, "\n"))
			}
			if doc["tool"] == nil || doc["engine"] != "iperf3" || doc["label"] != "before" {
				t.Errorf("Run's own fields lost: tool %v engine %v label %v", doc["tool"], doc["engine"], doc["label"])
			}
			var back result.Result
			if err := json.Unmarshal(out, &back); err != nil || back.Label != "before" || back.Tool == nil ||
				back.End.SumReceived != run.End.SumReceived || back.Start.Timestamp != run.Start.Timestamp {
				t.Errorf("read back: %v %+v", err, back)
			}
			for _, p := range []string{"start.connected.0.local_port", "start.connected.0.local_host", "start.tcp_mss_default",
				"start.test_start.blksize", "start.test_start.num_streams", "start.test_start.reverse", "start.timestamp.timesecs",
				"start.sndbuf_actual", "start.connecting_to.port", "end.sum_sent.bytes", "end.sum_received.bytes",
				"end.sum_sent.retransmits", "end.sender_tcp_congestion", "end.streams.0.sender.retransmits",
				"end.streams.0.sender.bytes", "end.streams.0.receiver.bytes", "intervals.0.streams.0.bytes", "intervals.0.sum.bytes"} {
				want, _ := lookup(ref, p)
				got, _ := lookup(doc, p)
				if got != want {
					t.Errorf("%s = %v, iperf3 wrote %v", p, got, want)
				}
			}
			for _, p := range []string{"host_total", "host_user", "host_system", "remote_total", "remote_user", "remote_system"} {
				want, _ := lookup(ref, "end.cpu_utilization_percent."+p)
				got, _ := lookup(doc, "end.cpu_utilization_percent."+p)
				if w, g := want.(float64), got.(float64); math.Abs(w-g) > 1e-9*math.Max(1, w) {
					t.Errorf("cpu_utilization_percent.%s = %v, iperf3 wrote %v", p, g, w)
				}
			}
		})
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
