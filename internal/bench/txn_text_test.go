package bench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/latency"
	"github.com/linerate/linerate/internal/result"
)

// TestTxnTextProgress: a transaction run's text says its shape, a line
// per interval with its transactions, rate, p50 and p99, and at the end
// the count, the rate, the latency per transaction and each end's CPU per
// transaction; a stream run that skipped the copy, or could not, says so.
func TestTxnTextProgress(t *testing.T) {
	p50, p99, mx := 63.9, 158.2, 4467.0
	st := result.Start{Peer: "198.18.0.2", Port: 5301, Streams: 10, Threads: 2, Mode: result.RR, Size: 1, DurationS: 2,
		Placement: result.Placement{Client: []int{0, 1}, Server: []int{0, 1}, Source: "auto"}}
	iv := result.Interval{Start: 0, End: 1, Transactions: &result.IntervalTransactions{Count: 123675, PerSecond: 123675, RTTUs: latency.RTT{P50: &p50, P99: &p99}}}
	end := result.End{Seconds: 2, CPU: result.EndCPU{ClientSeconds: 1.5, ServerSeconds: 1.49},
		Transactions: &result.Transactions{Mode: result.RR, Count: 212622, PerSecond: 106258, ServerCount: 213143, Flows: 10, Threads: 2, Size: 1,
			RTTUs: latency.RTT{P50: &p50, P99: &p99, Max: &mx}, CPUUsPerTransaction: result.HostCPUPer{Client: 7.03, Server: 7.0}, ConnectErrors: 3}}
	var b bytes.Buffer
	p := ProbeTextProgress(&b, false, nil)
	p(result.Event{Event: "start", Data: &st})
	p(result.Event{Event: "interval", Data: &iv})
	p(result.Event{Event: "end", Data: &end})
	for _, want := range []string{
		"rr: 10 flows on 2 threads, 1-byte requests and responses, 1 outstanding per flow, 2 s",
		"Transactions   per second   p50 µs   p99 µs",
		"[SUM]   0.00-1.00   sec        123675     123675/s     63.9    158.2",
		"212622 transactions  106258/s",
		"the server answered 213143",
		"p50 63.9  p90 -  p99 158.2",
		"max 4467.0",
		"CPU per transaction: client 7.03 µs, server 7.00 µs",
		"failed and were made again: 3",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "Gbits/sec") || strings.Contains(b.String(), "retr") {
		t.Errorf("a transaction run told in Gbit/s or retransmits:\n%s", b.String())
	}
	for _, c := range []struct {
		rc   *result.RxCopyReport
		want string
	}{
		{nil, ""},
		{&result.RxCopyReport{Asked: result.MsgTrunc, Method: result.MsgTrunc, ReceiverThreadCPUSeconds: 0.35, ReceiverCPUSecondsPerGB: 0.133},
			"Receive: without copying (msg_trunc); receiving threads' CPU 0.35 s, 0.133 s per GB"},
		{&result.RxCopyReport{Asked: result.MsgTrunc, Note: "this kernel copies anyway", ReceiverCPUSecondsPerGB: 0.3},
			"Receive: msg_trunc asked, but the receivers copied (this kernel copies anyway)"},
		{&result.RxCopyReport{Asked: result.ZerocopyReceive, Method: result.ZerocopyReceive, CopiedBytes: 1 << 30, ReceiverCPUSecondsPerGB: 0.3},
			"0 Bytes mapped, 1.00 GBytes copied"},
	} {
		got := RxCopyLine(c.rc)
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("RxCopyLine(%+v) = %q, want %q", c.rc, got, c.want)
		}
	}
	var s bytes.Buffer
	writeFlowsLine(&s, &result.Start{Streams: 100, Threads: 2})
	if s.String() != "Threads: 100 streams on 2 threads per end (epoll)\n" {
		t.Errorf("100 streams on 2 threads: %q", s.String())
	}
	s.Reset()
	writeFlowsLine(&s, &result.Start{Streams: 4, Threads: 4})
	if s.Len() != 0 {
		t.Errorf("a thread per stream: %q", s.String())
	}
}
