package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
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

	// What the server printed, asked for with --get-server-output: its
	// -J document when it ran with -J, else its text.
	ServerOutputJSON *iperf3Doc `json:"server_output_json"`
	ServerOutputText string     `json:"server_output_text"`
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
		Protocol      string  `json:"protocol"` // "TCP" or "UDP"
		TargetBitrate uint64  `json:"target_bitrate"`
		NumStreams    int     `json:"num_streams"`
		Blksize       int     `json:"blksize"`
		Omit          float64 `json:"omit"`
		Duration      float64 `json:"duration"`
		Reverse       int     `json:"reverse"`
		Bidir         int     `json:"bidir"`    // 3.13 and later
		Interval      float64 `json:"interval"` // 3.17 and later
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

	// A UDP stream's (iperf3 -u): Packets are what the sender sent or,
	// on the receiving side, the highest sequence number seen, so the
	// datagrams that arrived are Packets - LostPackets.
	Packets     int64   `json:"packets"`
	JitterMS    float64 `json:"jitter_ms"`
	LostPackets int64   `json:"lost_packets"`
	LostPercent float64 `json:"lost_percent"`
	OutOfOrder  int64   `json:"out_of_order"`
}

type iperf3Interval struct {
	Streams         []iperf3Stream `json:"streams"`
	Sum             iperf3Stream   `json:"sum"`
	SumBidirReverse *iperf3Stream  `json:"sum_bidir_reverse"`
}

type iperf3End struct {
	Streams []struct {
		Sender   iperf3Stream  `json:"sender"`
		Receiver iperf3Stream  `json:"receiver"`
		UDP      *iperf3Stream `json:"udp"` // a UDP run's streams have this only
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
	case "server_output_json":
		err = json.Unmarshal(data, &d.ServerOutputJSON)
	case "server_output_text":
		err = json.Unmarshal(data, &d.ServerOutputText)
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
	if d.udp() {
		r.Start.Protocol, r.Start.Bitrate, r.Start.BlockSize = result.UDP, ts.TargetBitrate, ts.Blksize
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
	if r.Start.Direction == result.Receive && !d.udp() {
		d.serverRetransmits(r)
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
			Packets: uint64(max(s.Packets, 0)),
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

// serverRetransmits fills the retransmits of a -R run's intervals from
// the server's output: the server sends, so only it counts them, and the
// client's -J has none per interval (3.12 leaves the field out) while its
// end has the server's total. Intervals match by their order, streams by
// the order of their sockets at each end (both ends number the
// connections as they were made). Nothing changes when the server's
// output is missing or does not match the client's intervals.
func (d *iperf3Doc) serverRetransmits(r *result.Result) {
	var srv []serverInterval
	switch {
	case d.ServerOutputJSON != nil:
		for _, iv := range d.ServerOutputJSON.Intervals {
			si := serverInterval{Sum: iv.Sum.Retransmits}
			socks := streamIDs(iv.Streams)
			si.Streams = make([]uint64, len(iv.Streams))
			for _, s := range iv.Streams {
				si.Streams[socks[s.Socket]-1] = s.Retransmits
			}
			srv = append(srv, si)
		}
	case d.ServerOutputText != "":
		srv = parseIperf3ServerText(d.ServerOutputText)
	}
	if len(srv) != len(r.Intervals) {
		return
	}
	for i := range r.Intervals {
		iv := &r.Intervals[i]
		iv.Sum.Retransmits = srv[i].Sum
		if len(srv[i].Streams) != len(iv.Streams) {
			continue
		}
		for j := range iv.Streams {
			if id := iv.Streams[j].ID; id >= 1 && id <= len(srv[i].Streams) {
				iv.Streams[j].Retransmits = srv[i].Streams[id-1]
			}
		}
	}
}

// serverInterval is one interval of an iperf3 server's report: its
// retransmits in all and per stream, in socket order.
type serverInterval struct {
	Sum     uint64
	Streams []uint64
	sawSum  bool
}

// maxServerLines bounds the server text read: a peer's output is
// untrusted, and a 1-second interval over a day is 86,400 lines per
// stream.
const maxServerLines = 1 << 20

// parseIperf3ServerText reads the interval lines of an iperf3 3.x
// server's text report as a sender (under -R):
//
//	[  5]   0.00-1.00   sec  2.09 GBytes  17.9 Gbits/sec    8    767 KBytes
//	[SUM]   0.00-1.00   sec   954 MBytes  7.97 Gbits/sec    1
//
// The fifth field after "sec" is Retr. The summary lines at the end
// (marked "sender" or "receiver") are not intervals. A line that does not
// parse is skipped, as are a receiver's lines, whose seventh field is not
// a count.
func parseIperf3ServerText(text string) []serverInterval {
	var out []serverInterval
	last := ""        // the interval of the line before: a new one starts a new interval
	var socks [][]int // per interval, the sockets in the order read
	for n, line := range strings.Split(text, "\n") {
		if n >= maxServerLines {
			break
		}
		lb, closing := strings.IndexByte(line, '['), strings.IndexByte(line, ']')
		if lb != 0 || closing < 0 {
			continue
		}
		id, rest := strings.TrimSpace(line[1:closing]), strings.Fields(line[closing+1:])
		// start-end, "sec", transfer and bitrate with their units, Retr.
		if len(rest) < 7 || rest[1] != "sec" || slices.Contains(rest, "sender") || slices.Contains(rest, "receiver") {
			continue
		}
		retr, err := strconv.ParseUint(rest[6], 10, 64)
		if !strings.Contains(rest[0], "-") || err != nil {
			continue
		}
		sock, err := strconv.Atoi(id)
		if id != "SUM" && err != nil {
			continue
		}
		// With -O the measured intervals start again at 0.00: a new
		// interval is a new time span, or a stream or [SUM] seen again.
		if n := len(out) - 1; rest[0] != last || n >= 0 && (id == "SUM" && out[n].sawSum || slices.Contains(socks[n], sock) && id != "SUM") {
			last = rest[0]
			out = append(out, serverInterval{})
			socks = append(socks, nil)
		}
		i := len(out) - 1
		if id == "SUM" {
			out[i].Sum, out[i].sawSum = retr, true
			continue
		}
		out[i].Streams = append(out[i].Streams, retr)
		socks[i] = append(socks[i], sock)
	}
	for i := range out {
		if len(socks[i]) == 1 {
			out[i].Sum = out[i].Streams[0] // one stream: no [SUM] line
		}
		// socket order, as the client's stream IDs are numbered
		ord := make([]int, len(socks[i]))
		for j := range ord {
			ord[j] = j
		}
		sort.SliceStable(ord, func(a, b int) bool { return socks[i][ord[a]] < socks[i][ord[b]] })
		st := make([]uint64, len(ord))
		for j, o := range ord {
			st[j] = out[i].Streams[o]
		}
		out[i].Streams = st
	}
	return out
}

// udp reports whether the run was iperf3 -u.
func (d *iperf3Doc) udp() bool { return strings.EqualFold(d.Start.TestStart.Protocol, "UDP") }

func (d *iperf3Doc) end() result.End {
	if d.udp() {
		return d.udpEnd()
	}
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

// udpEnd is a UDP run's end section as the native engine writes one:
// the sender's count in sum_sent, the receiver's in sum_received, both
// together in Sum (iperf3 -u's end.sum) and UDP (packets per second, what
// the receiver counted, the target).
func (d *iperf3Doc) udpEnd() result.End {
	e := d.End
	sent, recv := e.SumSent, e.SumReceived
	out := result.End{
		Seconds:     sent.Seconds,
		SumSent:     result.Sum{Bytes: sent.Bytes, BitsPerSecond: sent.BitsPerSecond},
		SumReceived: result.Received{Bytes: recv.Bytes, BitsPerSecond: recv.BitsPerSecond, Seconds: recv.Seconds},
		Streams:     []result.StreamEnd{},
	}
	ts := d.Start.TestStart
	// iperf3 3.12 writes no sum_received.out_of_order; the streams do.
	var ooo int64
	for _, s := range e.Streams {
		if s.UDP != nil {
			ooo += s.UDP.OutOfOrder
		}
	}
	u := &result.UDPSum{
		Bytes: sent.Bytes, BitsPerSecond: sent.BitsPerSecond, Packets: uint64(max(sent.Packets, 0)),
		LostPackets: recv.LostPackets, LostPercent: recv.LostPercent, JitterMS: recv.JitterMS, OutOfOrder: uint64(max(ooo, 0)),
		ReceivedPackets:       uint64(max(recv.Packets-recv.LostPackets, 0)),
		ReceivedBitsPerSecond: recv.BitsPerSecond,
		TargetBitsPerSecond:   float64(ts.TargetBitrate), Length: ts.Blksize,
		// iperf3 3.12 hands the kernel one datagram per write(2).
		Method: "write",
	}
	if sent.Seconds > 0 {
		u.PacketsPerSecond = result.Round3(float64(u.Packets) / sent.Seconds)
	}
	out.UDP = u
	out.Sum = &result.UDPStream{Start: 0, End: sent.Seconds, Seconds: sent.Seconds, Bytes: sent.Bytes, BitsPerSecond: sent.BitsPerSecond,
		JitterMS: u.JitterMS, LostPackets: u.LostPackets, Packets: sent.Packets, LostPercent: u.LostPercent, OutOfOrder: ooo,
		Sender: ts.Reverse == 0}
	streams := make([]iperf3Stream, 0, len(e.Streams))
	for _, s := range e.Streams {
		if s.UDP != nil {
			streams = append(streams, *s.UDP)
		}
	}
	ids := streamIDs(streams)
	for _, s := range streams {
		st := result.UDPStream{Socket: ids[s.Socket], Start: s.Start, End: s.End, Seconds: s.Seconds, Bytes: s.Bytes,
			BitsPerSecond: s.BitsPerSecond, JitterMS: s.JitterMS, LostPackets: s.LostPackets, Packets: s.Packets,
			LostPercent: s.LostPercent, OutOfOrder: s.OutOfOrder, Sender: s.Sender}
		// iperf3's per-stream UDP line carries the sender's bytes; the
		// receiver's are in sum_received only, which one stream owns.
		rb := uint64(0)
		if len(streams) == 1 {
			rb = recv.Bytes
		}
		out.Streams = append(out.Streams, result.StreamEnd{ID: ids[s.Socket], Sender: senderName(ts.Reverse == 0),
			SentBytes: s.Bytes, ReceivedBytes: rb, UDP: &st})
	}
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
