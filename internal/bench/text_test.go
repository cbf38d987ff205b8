package bench

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/result"
)

func sampleResult() *result.Result {
	return &result.Result{
		Schema: result.Schema, Engine: "native", RunID: 1,
		Start: result.Start{Peer: "198.18.0.2", Port: 5301, Streams: 1, DurationS: 10, IntervalS: 1, Direction: result.Send,
			Placement: result.Placement{Client: []int{6}, Server: []int{6}, Source: "user"},
			Window:    result.Window{Granted: 425984}, Connections: []result.Connection{{ID: 1, Sender: "client", ClientCPU: 6, ServerCPU: 6}}},
		Intervals: []result.Interval{{Start: 0, End: 1, Streams: []result.StreamInterval{{ID: 1, Sender: "client", Bytes: 1245540515, BitsPerSecond: 9.93e9, RTTus: 41, CwndBytes: 3145728}},
			Sum: result.Sum{Bytes: 1245540515, BitsPerSecond: 9.93e9},
			CPU: result.HostCPUs{Client: map[string]result.CPUSample{"6": {Busy: 99, SoftIRQ: 31}, "7": {Busy: 40, SoftIRQ: 38, NICIRQs: 4360}},
				Server: map[string]result.CPUSample{"6": {Busy: 97, SoftIRQ: 60}}}}},
		End: result.End{Seconds: 10, SumSent: result.Sum{Bytes: 12455405150, BitsPerSecond: 9.93e9}, SumReceived: result.Received{Bytes: 12455405150, BitsPerSecond: 9.93e9},
			CPU: result.EndCPU{ClientSeconds: 9.9, ServerSeconds: 9.7}},
	}
}

func TestTextProgress(t *testing.T) {
	var b bytes.Buffer
	r := sampleResult()
	p := TextProgress(&b, true)
	p(result.Event{Event: "start", Data: &r.Start})
	p(result.Event{Event: "interval", Data: &r.Intervals[0]})
	p(result.Event{Event: "end", Data: &r.End})
	out := b.String()
	for _, want := range []string{
		"Connected to 198.18.0.2 port 5301: 1 stream, send, 10 s",
		"Placement (user): client CPU 6, server CPU 6",
		"Window: autotuned, granted 416 KBytes",
		"[SUM]   0.00-1.00   sec  1.16 GBytes  9.93 Gbits/sec     0 retr  client pinned cpu6  99% si 31% (other cpu7 40%)  server pinned cpu6  97% si 60%",
		"[  1]   0.00-1.00   sec  1.16 GBytes  9.93 Gbits/sec     0   cwnd 3.00 MBytes  rtt 41 us",
		"client cpu7   busy  40.0%  irq  0.0%  softirq  38.0%  NET_RX       0  NET_TX       0  NIC IRQs    4360",
		"[SUM]   0.00-10.00  sec  11.6 GBytes  9.93 Gbits/sec     0 retr  sender",
		"CPU time: client 9.90 s, server 9.70 s (0.100 and 0.098 CPU s per Gbit)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestJSONStreamRoundTrip: what --json-stream writes, readEvents (the lab
// runner) turns back into the same result.
func TestJSONStreamRoundTrip(t *testing.T) {
	r := sampleResult()
	r.Start.Timestamp = time.UnixMilli(1).UTC()
	r.RunID = 1
	var b bytes.Buffer
	p := JSONStreamProgress(&b)
	p(result.Event{Event: "start", Data: &r.Start})
	p(result.Event{Event: "interval", Data: &r.Intervals[0]})
	p(result.Event{Event: "end", Data: &r.End})
	var seen []string
	got, err := readEvents(&b, func(e result.Event) { seen = append(seen, e.Event) })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, r)
	}
	if strings.Join(seen, ",") != "start,interval,end" {
		t.Errorf("progress saw %v", seen)
	}
	if _, err := readEvents(strings.NewReader(`{"event":"error","data":"boom"}`+"\n"), nil); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("error event: %v", err)
	}
}

func TestBenchArgs(t *testing.T) {
	cfg := agent.Config{Streams: 4, Duration: 30 * time.Second, Omit: 2 * time.Second, Direction: result.Bidir, Window: 4 << 20,
		Congestion: "bbr", FQRate: 10e9, ZeroCopy: result.Sendfile, ClientCPUs: []int{0, 2}, ServerCPUs: []int{1}}
	want := "-t 30s -i 1s -O 2s -P 4 --bidir --window 4194304 --congestion bbr --fq-rate 10000000000 --zerocopy=sendfile -A 0,2/1"
	if got := strings.Join(benchArgs(cfg), " "); got != want {
		t.Errorf("benchArgs = %q\nwant %q", got, want)
	}
}

func TestUnits(t *testing.T) {
	tests := map[string]string{
		bytesText(0):                   "0.00 Bytes ",
		bytesText(1245540515):          "1.16 GBytes",
		bytesText(128 << 10):           " 128 KBytes",
		bitsText(9.93e9):               "9.93 Gbits/sec",
		bitsText(25.8e9):               "25.8 Gbits/sec",
		bitsText(440e6):                " 440 Mbits/sec",
		strings.TrimSpace(bitsText(0)): "0.00 bits/sec",
	}
	for got, want := range tests {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
func TestParseAffinity(t *testing.T) {
	tests := []struct {
		in           string
		client, serv []int
		bad          bool
	}{
		{in: "0,1", client: []int{0}, serv: []int{1}},
		{in: "0-3,4-7", client: []int{0, 1, 2, 3}, serv: []int{4, 5, 6, 7}},
		{in: "0,2/1,3", client: []int{0, 2}, serv: []int{1, 3}},
		{in: "6", client: []int{6}},
		{in: "/5", serv: []int{5}},
		{in: "0,1,2", bad: true},
		{in: "x,1", bad: true},
	}
	for _, tt := range tests {
		c, s, err := ParseAffinity(tt.in)
		if tt.bad != (err != nil) || !slices.Equal(c, tt.client) || !slices.Equal(s, tt.serv) {
			t.Errorf("ParseAffinity(%q) = %v, %v, %v", tt.in, c, s, err)
		}
		if err == nil {
			c2, s2, err := ParseAffinity(FormatAffinity(c, s))
			if err != nil || !slices.Equal(c2, c) || !slices.Equal(s2, s) {
				t.Errorf("%q does not survive FormatAffinity: %q", tt.in, FormatAffinity(c, s))
			}
		}
	}
}
