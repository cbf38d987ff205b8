package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/result"
)

// iperf3Doc is the part of iperf3's -J document we read (esnet/iperf
// src/iperf_api.c). --json-stream events carry the same objects: "start"
// the start section, "interval" one element of intervals, "end" the end
// section, "error" a string.
type iperf3Doc struct {
	Start     iperf3Start      `json:"start"`
	Intervals []iperf3Interval `json:"intervals"`
	End       iperf3End        `json:"end"`
	Error     string           `json:"error"`
}

type iperf3Start struct {
	Version      string `json:"version"`
	ConnectingTo struct {
		Host string `json:"host"`
		Port int    `json:"port"`
	} `json:"connecting_to"`
	Timestamp struct {
		Timesecs int64 `json:"timesecs"`
	} `json:"timestamp"`
	Connected []struct {
		LocalHost  string `json:"local_host"`
		LocalPort  int    `json:"local_port"`
		RemoteHost string `json:"remote_host"`
		RemotePort int    `json:"remote_port"`
	} `json:"connected"`
	TCPMSSDefault int `json:"tcp_mss_default"`
	SockBufsize   int `json:"sock_bufsize"`
	SndbufActual  int `json:"sndbuf_actual"`
	RcvbufActual  int `json:"rcvbuf_actual"`
	TestStart     struct {
		NumStreams int     `json:"num_streams"`
		Blksize    int     `json:"blksize"`
		Omit       float64 `json:"omit"`
		Duration   float64 `json:"duration"`
		Reverse    int     `json:"reverse"`
		Bidir      int     `json:"bidir"`    // 3.13 and later
		Interval   float64 `json:"interval"` // 3.17 and later
	} `json:"test_start"`
}

type iperf3Stream struct {
	Socket        int     `json:"socket"`
	Start         float64 `json:"start"`
	End           float64 `json:"end"`
	Seconds       float64 `json:"seconds"`
	Bytes         uint64  `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"`
	Retransmits   uint64  `json:"retransmits"`
	SndCwnd       uint64  `json:"snd_cwnd"`
	RTT           uint32  `json:"rtt"`
	RTTVar        uint32  `json:"rttvar"`
	Omitted       bool    `json:"omitted"`
	Sender        bool    `json:"sender"`
}

type iperf3Interval struct {
	Streams         []iperf3Stream `json:"streams"`
	Sum             iperf3Stream   `json:"sum"`
	SumBidirReverse *iperf3Stream  `json:"sum_bidir_reverse"`
}

type iperf3End struct {
	Streams []struct {
		Sender   iperf3Stream `json:"sender"`
		Receiver iperf3Stream `json:"receiver"`
	} `json:"streams"`
	SumSent                 iperf3Stream  `json:"sum_sent"`
	SumReceived             iperf3Stream  `json:"sum_received"`
	SumSentBidirReverse     *iperf3Stream `json:"sum_sent_bidir_reverse"`
	SumReceivedBidirReverse *iperf3Stream `json:"sum_received_bidir_reverse"`
	CPU                     struct {
		HostTotal    float64 `json:"host_total"`
		HostUser     float64 `json:"host_user"`
		HostSystem   float64 `json:"host_system"`
		RemoteTotal  float64 `json:"remote_total"`
		RemoteUser   float64 `json:"remote_user"`
		RemoteSystem float64 `json:"remote_system"`
	} `json:"cpu_utilization_percent"`
	SenderTCPCongestion   string `json:"sender_tcp_congestion"`
	ReceiverTCPCongestion string `json:"receiver_tcp_congestion"`
}

// iperf3Busy is how iperf3 words a server running another test
// (IESERVERBUSY).
const iperf3Busy = "the server is busy"

// ParseIperf3 reads the document `iperf3 -c … -J` prints and returns it as
// a linerate.bench/v1 run. iperf3 3.12 exits 0 even when it could not
// connect, so the "error" field is checked here: a busy server becomes an
// *agent.PeerError with Busy set, any other error an error naming it.
func ParseIperf3(data []byte) (*result.Result, error) {
	var d iperf3Doc
	if err := json.Unmarshal(trimToJSON(data), &d); err != nil {
		return nil, fmt.Errorf("iperf3 -J output is not JSON: %w", err)
	}
	return d.run()
}

// trimToJSON drops what iperf3 may print around its document (warnings
// before it, text after it): everything outside the outermost braces.
func trimToJSON(b []byte) []byte {
	i, j := bytes.IndexByte(b, '{'), bytes.LastIndexByte(b, '}')
	if i < 0 || j < i {
		return b
	}
	return b[i : j+1]
}

// ParseIperf3Stream reads `iperf3 --json-stream` output (iperf3 3.17 and
// later: one JSON event per line) as it is written, calling onInterval
// with each interval as it arrives (nil: none), and returns the run once
// the "end" event is read.
func ParseIperf3Stream(r io.Reader, onInterval func(result.Interval)) (*result.Result, error) {
	var d iperf3Doc
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	sawEnd := false
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' {
			continue // not an event: a warning iperf3 printed
		}
		var ev struct {
			Event string          `json:"event"`
			Data  json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("iperf3 --json-stream: a line is not JSON: %w", err)
		}
		if err := d.event(ev.Event, ev.Data, onInterval); err != nil {
			return nil, err
		}
		sawEnd = sawEnd || ev.Event == "end"
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading iperf3 --json-stream: %w", err)
	}
	if d.Error == "" && !sawEnd {
		return nil, errors.New("iperf3 --json-stream ended without an \"end\" event (was it killed?)")
	}
	return d.run()
}

// event folds one --json-stream event into d.
func (d *iperf3Doc) event(name string, data json.RawMessage, onInterval func(result.Interval)) error {
	var err error
	switch name {
	case "start":
		err = json.Unmarshal(data, &d.Start)
	case "interval":
		var iv iperf3Interval
		if err = json.Unmarshal(data, &iv); err == nil {
			d.Intervals = append(d.Intervals, iv)
			if onInterval != nil {
				onInterval(d.interval(iv))
			}
		}
	case "end":
		err = json.Unmarshal(data, &d.End)
	case "error":
		err = json.Unmarshal(data, &d.Error)
	}
	if err != nil {
		return fmt.Errorf("iperf3 --json-stream %q event: %w", name, err)
	}
	return nil
}

// run converts the document, or returns the error iperf3 reported.
func (d *iperf3Doc) run() (*result.Result, error) {
	if d.Error != "" {
		if strings.Contains(d.Error, iperf3Busy) {
			return nil, &agent.PeerError{Busy: true, Reason: "iperf3: " + d.Error}
		}
		return nil, fmt.Errorf("iperf3: %s", d.Error)
	}
	ts := d.Start.TestStart
	if ts.NumStreams == 0 || len(d.Intervals) == 0 {
		return nil, errors.New("iperf3 output has no test in it (no streams or no intervals)")
	}
	r := &result.Result{Schema: result.Schema, Engine: "iperf3"}
	r.Tool = &result.Tool{Name: "iperf3", Version: strings.TrimPrefix(d.Start.Version, "iperf ")}
	r.Start = result.Start{
		Peer: d.Start.ConnectingTo.Host, Port: d.Start.ConnectingTo.Port,
		Streams: ts.NumStreams, DurationS: ts.Duration, OmitS: ts.Omit, IntervalS: ts.Interval,
		Direction: d.direction(),
		Window: result.Window{Requested: d.Start.SockBufsize,
			Granted: minPositive(d.Start.SndbufActual, d.Start.RcvbufActual)},
	}
	if d.Start.Timestamp.Timesecs > 0 {
		r.Start.Timestamp = time.Unix(d.Start.Timestamp.Timesecs, 0).UTC()
	}
	if r.Start.IntervalS == 0 {
		r.Start.IntervalS = d.Intervals[0].Sum.Seconds // 3.16 and older do not say; the first interval does
	}
	for _, iv := range d.Intervals {
		r.Intervals = append(r.Intervals, d.interval(iv))
	}
	r.End = d.end()
	d.iperf3Facts(r)
	return r, nil
}

func (d *iperf3Doc) direction() result.Direction {
	switch {
	case d.Start.TestStart.Bidir != 0 || d.End.SumSentBidirReverse != nil:
		return result.Bidir // 3.12 does not set test_start.bidir; the reverse sums tell
	case d.Start.TestStart.Reverse != 0:
		return result.Receive
	}
	return result.Send
}

// streamIDs numbers iperf3's sockets 1, 2, … in socket order, as the
// engine numbers its streams.
func streamIDs(streams []iperf3Stream) map[int]int {
	socks := make([]int, 0, len(streams))
	for _, s := range streams {
		socks = append(socks, s.Socket)
	}
	sort.Ints(socks)
	ids := map[int]int{}
	for i, s := range socks {
		ids[s] = i + 1
	}
	return ids
}

func (d *iperf3Doc) interval(iv iperf3Interval) result.Interval {
	out := result.Interval{Start: iv.Sum.Start, End: iv.Sum.End, Omitted: iv.Sum.Omitted}
	ids := streamIDs(iv.Streams)
	for _, s := range iv.Streams {
		out.Streams = append(out.Streams, result.StreamInterval{
			ID: ids[s.Socket], Sender: senderName(s.Sender), Bytes: s.Bytes, BitsPerSecond: s.BitsPerSecond,
			RTTus: s.RTT, RTTVarUs: s.RTTVar, CwndBytes: s.SndCwnd, Retransmits: s.Retransmits,
		})
	}
	out.Sum = result.Sum{Bytes: iv.Sum.Bytes, BitsPerSecond: iv.Sum.BitsPerSecond, Retransmits: iv.Sum.Retransmits}
	if rv := iv.SumBidirReverse; rv != nil {
		out.Sum.Bytes += rv.Bytes
		out.Sum.BitsPerSecond += rv.BitsPerSecond
		out.Sum.Retransmits += rv.Retransmits
	}
	return out
}

// senderName says which end sent, from the client's view: iperf3's
// "sender" is true when this end (the client) sent the stream.
func senderName(clientSent bool) string {
	if clientSent {
		return "client"
	}
	return "server"
}

func (d *iperf3Doc) end() result.End {
	e := d.End
	sent, recv := e.SumSent, e.SumReceived
	out := result.End{
		Seconds:     recv.Seconds,
		SumSent:     result.Sum{Bytes: sent.Bytes, BitsPerSecond: sent.BitsPerSecond, Retransmits: sent.Retransmits},
		SumReceived: result.Received{Bytes: recv.Bytes, BitsPerSecond: recv.BitsPerSecond},
	}
	if e.SumSentBidirReverse != nil && e.SumReceivedBidirReverse != nil {
		out.SumSent.Bytes += e.SumSentBidirReverse.Bytes
		out.SumSent.BitsPerSecond += e.SumSentBidirReverse.BitsPerSecond
		out.SumSent.Retransmits += e.SumSentBidirReverse.Retransmits
		out.SumReceived.Bytes += e.SumReceivedBidirReverse.Bytes
		out.SumReceived.BitsPerSecond += e.SumReceivedBidirReverse.BitsPerSecond
	}
	if out.Seconds == 0 {
		out.Seconds = sent.Seconds
	}
	senders := make([]iperf3Stream, 0, len(e.Streams))
	for _, s := range e.Streams {
		senders = append(senders, s.Sender)
	}
	ids := streamIDs(senders)
	for _, s := range e.Streams {
		out.Streams = append(out.Streams, result.StreamEnd{ID: ids[s.Sender.Socket], Sender: senderName(s.Sender.Sender),
			SentBytes: s.Sender.Bytes, ReceivedBytes: s.Receiver.Bytes, Retransmits: s.Sender.Retransmits})
	}
	// iperf3 reports each end's process CPU as a percentage of the test's
	// wall time (getrusage); seconds are what the stored runs compare.
	out.CPU = result.EndCPU{ClientSeconds: e.CPU.HostTotal / 100 * out.Seconds, ServerSeconds: e.CPU.RemoteTotal / 100 * out.Seconds}
	return out
}

func minPositive(a, b int) int {
	switch {
	case a <= 0:
		return b
	case b <= 0 || a < b:
		return a
	}
	return b
}
