package result

import (
	"encoding/json"
	"testing"
)

// TestRunFieldsMarshalled: what a campaign and a tool add to a run (its
// label, the tool, perftest's figures, the streams' fairness) is written by
// the run's one marshaller, and read back; the tool's raw output is not.
func TestRunFieldsMarshalled(t *testing.T) {
	cpu, bw := 3, 55.9
	r := Result{Schema: Schema, Engine: "iperf2", Label: "after",
		Tool:     &Tool{Name: "iperf2", Version: "2.1.9", Client: []string{"iperf", "-c", "h"}},
		Perftest: &Perftest{Test: "RDMA_Write BW Test", MsgBytes: 1 << 20, BWAverageGbps: &bw},
		Fairness: &Fairness{Spread: 0.5, Basis: "rx_cpu", Explained: true, Explanation: "shared CPU 3",
			Streams: []StreamShare{{ID: 1, Gbps: 7, RxCPU: &cpu, Sharing: 2}}},
		Raw: "the tool's own text"}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"label", "tool", "perftest", "fairness", "start", "intervals", "end"} {
		if doc[k] == nil {
			t.Errorf("the document lacks %q: %s", k, b)
		}
	}
	if f, _ := doc["fairness"].(map[string]any); f["basis"] != "rx_cpu" || f["explained"] != true {
		t.Errorf("fairness = %v", doc["fairness"])
	}
	if _, ok := doc["raw"]; ok {
		t.Error("the raw output is in the document")
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Label != "after" || back.Tool == nil || back.Tool.Version != "2.1.9" || back.Perftest == nil ||
		*back.Perftest.BWAverageGbps != bw || back.Fairness == nil || *back.Fairness.Streams[0].RxCPU != cpu || back.Raw != "" {
		t.Errorf("read back: %+v", back)
	}
}
