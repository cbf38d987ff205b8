package result

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"time"
)

// A run's document is a superset of the document `iperf3 -c … -J` (3.12)
// prints: every field iperf3 writes, with iperf3's name, JSON type and
// unit, beside linerate's own, so tools written for iperf3's JSON read
// linerate's runs unchanged (docs/schema/bench-v1.md lists the mapping).
// iperf3's fields are derived from linerate's when the document is
// written, never stored apart, so a run stored before they existed prints
// them too. Figures linerate does not measure (snd_wnd, pmtu, tos) are 0,
// as iperf3 prints them when the kernel does not say.

// UDPStream is what a UDP stream's receiver counted, or a UDP run's
// streams together, in iperf3 -u's names and units.
type UDPStream struct {
	Socket        int     `json:"socket,omitempty"` // the stream's ID; absent in a sum
	Start         float64 `json:"start"`
	End           float64 `json:"end"`
	Seconds       float64 `json:"seconds"`
	Bytes         uint64  `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"`
	JitterMS      float64 `json:"jitter_ms"`
	LostPackets   int64   `json:"lost_packets"`
	Packets       int64   `json:"packets"`
	LostPercent   float64 `json:"lost_percent"`
	OutOfOrder    int64   `json:"out_of_order"`
	Sender        bool    `json:"sender"`
}

// iperf3Time is how iperf3 writes start.timestamp.time (RFC 1123, GMT).
const iperf3Time = "Mon, 02 Jan 2006 15:04:05 GMT"

// UDP is Start.Protocol for a UDP run.
const UDP = "udp"

// MarshalJSON writes the run with iperf3's fields beside linerate's.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result // without this method
	d := struct {
		plain
		Start     startDoc      `json:"start"`
		Intervals []intervalDoc `json:"intervals"`
		End       endDoc        `json:"end"`
	}{plain: plain(r), Start: r.startDoc(), End: r.endDoc()}
	d.Intervals = make([]intervalDoc, len(r.Intervals))
	for i := range r.Intervals {
		d.Intervals[i] = r.intervalDoc(&r.Intervals[i])
	}
	return json.Marshal(d)
}

type startPlain Start

type startDoc struct {
	startPlain
	Connected     []connectedDoc `json:"connected"`
	Version       string         `json:"version"`
	SystemInfo    string         `json:"system_info"`
	Timestamp     timestampDoc   `json:"timestamp"`
	ConnectingTo  hostPort       `json:"connecting_to"`
	Cookie        string         `json:"cookie"`
	TCPMSSDefault *int           `json:"tcp_mss_default,omitempty"`
	TargetBitrate uint64         `json:"target_bitrate"`
	SockBufsize   int            `json:"sock_bufsize"`
	SndbufActual  int            `json:"sndbuf_actual"`
	RcvbufActual  int            `json:"rcvbuf_actual"`
	TestStart     testStartDoc   `json:"test_start"`
}

type connectedDoc struct {
	Socket     int    `json:"socket"`
	LocalHost  string `json:"local_host"`
	LocalPort  int    `json:"local_port"`
	RemoteHost string `json:"remote_host"`
	RemotePort int    `json:"remote_port"`
}

type timestampDoc struct {
	Time     string `json:"time"`
	Timesecs int64  `json:"timesecs"`
}

type hostPort struct {
	Host string `json:"host"`
	Port int    `json:"port"`
}

type testStartDoc struct {
	Protocol      string  `json:"protocol"`
	NumStreams    int     `json:"num_streams"`
	Blksize       int     `json:"blksize"`
	Omit          float64 `json:"omit"`
	Duration      float64 `json:"duration"`
	Bytes         uint64  `json:"bytes"`
	Blocks        uint64  `json:"blocks"`
	Reverse       int     `json:"reverse"`
	Tos           int     `json:"tos"`
	TargetBitrate uint64  `json:"target_bitrate"`
	Bidir         int     `json:"bidir"`
	FQRate        uint64  `json:"fqrate"`
}

func (r *Result) udp() bool { return r.Start.Protocol == UDP }

func (r *Result) startDoc() startDoc {
	s := &r.Start
	d := startDoc{startPlain: startPlain(*s),
		Version:       "linerate " + r.Engine + " engine",
		SystemInfo:    systemInfo(s.Client),
		Timestamp:     timestampDoc{Time: s.Timestamp.UTC().Format(iperf3Time), Timesecs: s.Timestamp.Unix()},
		ConnectingTo:  hostPort{Host: s.Peer, Port: s.Port},
		Cookie:        fmt.Sprintf("linerate-run-%d", r.RunID),
		TargetBitrate: s.Bitrate,
		SockBufsize:   s.Window.Requested,
		SndbufActual:  s.Window.Client.Sndbuf,
		RcvbufActual:  s.Window.Client.Rcvbuf,
		Connected:     make([]connectedDoc, 0, len(s.Connections)),
	}
	proto := "TCP"
	if r.udp() {
		proto = "UDP"
	} else {
		mss := s.MSS
		d.TCPMSSDefault = &mss
	}
	d.TestStart = testStartDoc{Protocol: proto, NumStreams: s.Streams, Blksize: s.BlockSize,
		Omit: s.OmitS, Duration: s.DurationS, TargetBitrate: s.Bitrate, FQRate: s.FQRate / 8}
	switch s.Direction {
	case Receive:
		d.TestStart.Reverse = 1
	case Bidir:
		d.TestStart.Bidir = 1
	}
	for _, c := range s.Connections {
		cd := connectedDoc{Socket: c.ID, RemoteHost: s.Peer, RemotePort: s.Port}
		if h, p, ok := splitHostPort(c.Local); ok {
			cd.LocalHost, cd.LocalPort = h, p
		}
		if h, p, ok := splitHostPort(c.Remote); ok {
			cd.RemoteHost, cd.RemotePort = h, p
		}
		d.Connected = append(d.Connected, cd)
	}
	return d
}

// systemInfo is iperf3's `uname -a`-like line, from what linerate keeps
// of the client's host.
func systemInfo(h HostInfo) string {
	return "Linux " + h.Hostname + " " + h.Kernel
}

func splitHostPort(s string) (string, int, bool) {
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, false
	}
	n, err := strconv.Atoi(p)
	return h, n, err == nil
}

type intervalPlain Interval

type intervalDoc struct {
	intervalPlain
	Streams         []streamIntervalDoc `json:"streams"`
	Sum             sumDoc              `json:"sum"`
	SumBidirReverse *sumDoc             `json:"sum_bidir_reverse,omitempty"`
	// SumAll is linerate's sum of a bidirectional run's interval: both
	// directions (iperf3's sum holds one).
	SumAll *Sum `json:"sum_all,omitempty"`
}

type streamIntervalPlain StreamInterval

// streamIntervalDoc is one stream over one interval: the TCP fields are
// pointers, absent in a UDP run as in iperf3's; packets the reverse.
type streamIntervalDoc struct {
	streamIntervalPlain
	Socket   int     `json:"socket"`
	Start    float64 `json:"start"`
	End      float64 `json:"end"`
	Seconds  float64 `json:"seconds"`
	SndCwnd  *uint64 `json:"snd_cwnd,omitempty"`
	SndWnd   *uint64 `json:"snd_wnd,omitempty"`
	RTT      *uint32 `json:"rtt,omitempty"`
	RTTVar   *uint32 `json:"rttvar,omitempty"`
	PMTU     *int    `json:"pmtu,omitempty"`
	Packets  *uint64 `json:"packets,omitempty"`
	Omitted  bool    `json:"omitted"`
	IsSender bool    `json:"sender"`
}

// sumDoc is iperf3's sum of an interval or of a run (sum_sent,
// sum_received). Retransmits and Packets are pointers: iperf3 writes the
// one its protocol has.
type sumDoc struct {
	Start         float64 `json:"start"`
	End           float64 `json:"end"`
	Seconds       float64 `json:"seconds"`
	Bytes         uint64  `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"`
	Retransmits   *uint64 `json:"retransmits,omitempty"`
	// ReceiverSeconds is linerate's Received.Seconds, the receiver's own
	// window, in sum_received.
	ReceiverSeconds float64 `json:"receiver_seconds,omitempty"`
	// UDP: jitter and loss as the receiver saw them (0 in sum_sent).
	JitterMS    *float64 `json:"jitter_ms,omitempty"`
	LostPackets *int64   `json:"lost_packets,omitempty"`
	Packets     *uint64  `json:"packets,omitempty"`
	LostPercent *float64 `json:"lost_percent,omitempty"`
	Omitted     *bool    `json:"omitted,omitempty"`
	Sender      bool     `json:"sender"`
}

func (r *Result) intervalDoc(iv *Interval) intervalDoc {
	d := intervalDoc{intervalPlain: intervalPlain(*iv), Streams: make([]streamIntervalDoc, len(iv.Streams))}
	secs := Round3(iv.End - iv.Start)
	udp := r.udp()
	fwd, rev := sumDoc{Start: iv.Start, End: iv.End, Seconds: secs, Sender: r.Start.Direction != Receive},
		sumDoc{Start: iv.Start, End: iv.End, Seconds: secs}
	var fwdPkts, revPkts, fwdRetr, revRetr uint64
	// recvSums totals each sum's streams as their receivers counted them
	// (UDP); the jitter of streams together is the largest, as iperf3's.
	recvSums := map[*sumDoc]*UDPInterval{}
	for i := range iv.Streams {
		s := &iv.Streams[i]
		sd := streamIntervalDoc{streamIntervalPlain: streamIntervalPlain(*s), Socket: s.ID,
			Start: iv.Start, End: iv.End, Seconds: secs, Omitted: iv.Omitted, IsSender: s.Sender == "client"}
		if udp {
			sd.Packets = &s.Packets
		} else {
			var wnd uint64
			var pmtu int
			sd.SndCwnd, sd.SndWnd, sd.RTT, sd.RTTVar, sd.PMTU = &s.CwndBytes, &wnd, &s.RTTus, &s.RTTVarUs, &pmtu
		}
		d.Streams[i] = sd
		// In a bidirectional run iperf3's sum is the client's sending
		// direction and sum_bidir_reverse the other.
		sum, pkts, retr := &fwd, &fwdPkts, &fwdRetr
		if r.Start.Direction == Bidir && !sd.IsSender {
			sum, pkts, retr = &rev, &revPkts, &revRetr
		}
		sum.Bytes += s.Bytes
		*pkts += s.Packets
		*retr += s.Retransmits
		if u := s.UDPInterval; udp && u != nil {
			recv := recvSums[sum]
			if recv == nil {
				recv = &UDPInterval{}
				recvSums[sum] = recv
			}
			recv.ReceivedPackets += u.ReceivedPackets
			recv.LostPackets += u.LostPackets
			recv.OutOfOrder += u.OutOfOrder
			recv.JitterMS = max(recv.JitterMS, u.JitterMS)
		}
	}
	omitted := iv.Omitted
	for _, x := range []struct {
		s          *sumDoc
		pkts, retr uint64
	}{{&fwd, fwdPkts, fwdRetr}, {&rev, revPkts, revRetr}} {
		x.s.BitsPerSecond = rate(x.s.Bytes, secs)
		x.s.Omitted = &omitted
		if udp {
			x.s.Packets = &x.pkts
			if u := recvSums[x.s]; u != nil {
				u = NewUDPInterval(u.ReceivedPackets, u.LostPackets, u.OutOfOrder, u.JitterMS)
				x.s.JitterMS, x.s.LostPackets, x.s.LostPercent = &u.JitterMS, &u.LostPackets, &u.LostPercent
			}
		} else {
			x.s.Retransmits = &x.retr
		}
	}
	d.Sum = fwd
	if r.Start.Direction == Bidir {
		d.SumBidirReverse, d.SumAll = &rev, &iv.Sum
	} else {
		// One direction: the sum is linerate's own, to the bit.
		d.Sum.Bytes, d.Sum.BitsPerSecond = iv.Sum.Bytes, iv.Sum.BitsPerSecond
	}
	return d
}

func rate(bytes uint64, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(bytes) * 8 / secs
}

type endPlain End

type endDoc struct {
	endPlain
	Streams                 []streamEndDoc `json:"streams"`
	SumSent                 sumDoc         `json:"sum_sent"`
	SumReceived             sumDoc         `json:"sum_received"`
	SumSentBidirReverse     *sumDoc        `json:"sum_sent_bidir_reverse,omitempty"`
	SumReceivedBidirReverse *sumDoc        `json:"sum_received_bidir_reverse,omitempty"`
	CPU                     cpuDoc         `json:"cpu_utilization_percent"`
	SenderTCPCongestion     *string        `json:"sender_tcp_congestion,omitempty"`
	ReceiverTCPCongestion   *string        `json:"receiver_tcp_congestion,omitempty"`
	// linerate's sums of a bidirectional run: both directions.
	SumSentAll     *Sum      `json:"sum_sent_all,omitempty"`
	SumReceivedAll *Received `json:"sum_received_all,omitempty"`
}

type streamEndPlain StreamEnd

type streamEndDoc struct {
	streamEndPlain
	SenderDoc   *endStreamSide `json:"sender,omitempty"`
	ReceiverDoc *endStreamSide `json:"receiver,omitempty"`
}

// endStreamSide is one end of a TCP stream over the measured part:
// iperf3's end.streams[].sender and .receiver.
type endStreamSide struct {
	Socket        int     `json:"socket"`
	Start         float64 `json:"start"`
	End           float64 `json:"end"`
	Seconds       float64 `json:"seconds"`
	Bytes         uint64  `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"`
	Retransmits   *uint64 `json:"retransmits,omitempty"`
	MaxSndCwnd    *uint64 `json:"max_snd_cwnd,omitempty"`
	MaxSndWnd     *uint64 `json:"max_snd_wnd,omitempty"`
	MaxRTT        *uint32 `json:"max_rtt,omitempty"`
	MinRTT        *uint32 `json:"min_rtt,omitempty"`
	MeanRTT       *uint32 `json:"mean_rtt,omitempty"`
	Sender        bool    `json:"sender"`
}

// cpuDoc is iperf3's end.cpu_utilization_percent: each process's CPU time
// (user + system) as a percentage of the measured seconds. With several
// stream threads it can pass 100, as iperf3 3.16's does.
type cpuDoc struct {
	HostTotal    float64 `json:"host_total"`
	HostUser     float64 `json:"host_user"`
	HostSystem   float64 `json:"host_system"`
	RemoteTotal  float64 `json:"remote_total"`
	RemoteUser   float64 `json:"remote_user"`
	RemoteSystem float64 `json:"remote_system"`
}

func (r *Result) endDoc() endDoc {
	e := &r.End
	secs := e.Seconds
	d := endDoc{endPlain: endPlain(*e), Streams: make([]streamEndDoc, len(e.Streams))}
	clientSends := r.Start.Direction != Receive
	fwdS := sumDoc{End: secs, Seconds: secs, Sender: clientSends}
	fwdR := sumDoc{End: secs, Seconds: secs, Sender: clientSends}
	revS, revR := sumDoc{End: secs, Seconds: secs}, sumDoc{End: secs, Seconds: secs}
	var fwdRetr, revRetr uint64
	for i := range e.Streams {
		s := &e.Streams[i]
		sd := streamEndDoc{streamEndPlain: streamEndPlain(*s)}
		mine := s.Sender == "client"
		if !r.udp() {
			st := r.streamStats(s.ID)
			retr := s.Retransmits
			var wnd uint64
			sd.SenderDoc = &endStreamSide{Socket: s.ID, End: secs, Seconds: secs, Bytes: s.SentBytes,
				BitsPerSecond: rate(s.SentBytes, secs), Retransmits: &retr, MaxSndCwnd: &st.maxCwnd, MaxSndWnd: &wnd,
				MaxRTT: &st.maxRTT, MinRTT: &st.minRTT, MeanRTT: &st.meanRTT, Sender: mine}
			sd.ReceiverDoc = &endStreamSide{Socket: s.ID, End: secs, Seconds: secs, Bytes: s.ReceivedBytes,
				BitsPerSecond: rate(s.ReceivedBytes, secs), Sender: mine}
		}
		d.Streams[i] = sd
		snd, rcv, retr := &fwdS, &fwdR, &fwdRetr
		if r.Start.Direction == Bidir && !mine {
			snd, rcv, retr = &revS, &revR, &revRetr
		}
		snd.Bytes += s.SentBytes
		rcv.Bytes += s.ReceivedBytes
		*retr += s.Retransmits
	}
	for _, x := range []struct {
		snd, rcv *sumDoc
		retr     uint64
	}{{&fwdS, &fwdR, fwdRetr}, {&revS, &revR, revRetr}} {
		x.snd.BitsPerSecond, x.rcv.BitsPerSecond = rate(x.snd.Bytes, secs), rate(x.rcv.Bytes, secs)
		if !r.udp() {
			x.snd.Retransmits = &x.retr
		}
	}
	d.SumSent, d.SumReceived = fwdS, fwdR
	if r.Start.Direction == Bidir {
		d.SumSentBidirReverse, d.SumReceivedBidirReverse = &revS, &revR
		d.SumSentAll, d.SumReceivedAll = &e.SumSent, &e.SumReceived
	} else {
		// One direction: the sums are linerate's own, to the bit.
		d.SumSent.Bytes, d.SumSent.BitsPerSecond = e.SumSent.Bytes, e.SumSent.BitsPerSecond
		d.SumReceived.Bytes, d.SumReceived.BitsPerSecond = e.SumReceived.Bytes, e.SumReceived.BitsPerSecond
		d.SumReceived.ReceiverSeconds = e.SumReceived.Seconds
		if d.SumSent.Retransmits != nil {
			retr := e.SumSent.Retransmits
			d.SumSent.Retransmits = &retr
		}
	}
	if r.udp() {
		udpSums(&d, e.Sum)
	}
	d.CPU = cpuPercent(&e.CPU, secs)
	if !r.udp() {
		d.SenderTCPCongestion, d.ReceiverTCPCongestion = &r.Start.SenderCongestion, &r.Start.ReceiverCongestion
	}
	return d
}

type streamStats struct {
	maxCwnd                 uint64
	maxRTT, minRTT, meanRTT uint32
}

// streamStats folds one stream's measured intervals as iperf3 folds its
// end.streams[].sender figures.
func (r *Result) streamStats(id int) streamStats {
	var st streamStats
	var sum, n uint64
	for i := range r.Intervals {
		if r.Intervals[i].Omitted {
			continue
		}
		for _, s := range r.Intervals[i].Streams {
			if s.ID != id || s.RTTus == 0 {
				continue
			}
			st.maxCwnd = max(st.maxCwnd, s.CwndBytes)
			st.maxRTT = max(st.maxRTT, s.RTTus)
			if st.minRTT == 0 || s.RTTus < st.minRTT {
				st.minRTT = s.RTTus
			}
			sum += uint64(s.RTTus)
			n++
		}
	}
	if n > 0 {
		st.meanRTT = uint32(sum / n)
	}
	return st
}

func cpuPercent(c *EndCPU, secs float64) cpuDoc {
	if secs <= 0 {
		return cpuDoc{}
	}
	pct := func(x float64) float64 { return x / secs * 100 }
	return cpuDoc{HostTotal: pct(c.ClientSeconds), HostUser: pct(c.ClientUserSeconds), HostSystem: pct(c.ClientSystemSeconds),
		RemoteTotal: pct(c.ServerSeconds), RemoteUser: pct(c.ServerUserSeconds), RemoteSystem: pct(c.ServerSystemSeconds)}
}

// UnmarshalJSON reads a start section, also one stored before linerate
// wrote iperf3's start.timestamp object, when that name held linerate's
// RFC 3339 string.
func (s *Start) UnmarshalJSON(b []byte) error {
	var d struct {
		startPlain
		Old json.RawMessage `json:"timestamp"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return err
	}
	*s = Start(d.startPlain)
	if len(d.Old) > 0 && d.Old[0] == '"' && s.Timestamp.IsZero() {
		var t time.Time
		if err := json.Unmarshal(d.Old, &t); err != nil {
			return fmt.Errorf("start.timestamp: %w", err)
		}
		s.Timestamp = t
	}
	return nil
}

// UnmarshalJSON reads a stream's interval, also one stored when "sender"
// held linerate's "client" or "server" (now "sent_by"; "sender" is
// iperf3's boolean).
func (s *StreamInterval) UnmarshalJSON(b []byte) error {
	var d struct {
		streamIntervalPlain
		Old json.RawMessage `json:"sender"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return err
	}
	*s = StreamInterval(d.streamIntervalPlain)
	return oldSender(&s.Sender, d.Old)
}

// UnmarshalJSON reads a stream's totals, also one stored when "sender"
// held linerate's "client" or "server" (now "sent_by"; "sender" is
// iperf3's object).
func (s *StreamEnd) UnmarshalJSON(b []byte) error {
	var d struct {
		streamEndPlain
		Old json.RawMessage `json:"sender"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return err
	}
	*s = StreamEnd(d.streamEndPlain)
	return oldSender(&s.Sender, d.Old)
}

func oldSender(dst *string, old json.RawMessage) error {
	if *dst != "" || len(old) == 0 || old[0] != '"' {
		return nil
	}
	return json.Unmarshal(old, dst)
}

// UnmarshalJSON reads an interval; in a bidirectional run linerate's sum
// of both directions is sum_all (iperf3's sum holds one direction).
func (iv *Interval) UnmarshalJSON(b []byte) error {
	var d struct {
		intervalPlain
		SumAll *Sum `json:"sum_all"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return err
	}
	*iv = Interval(d.intervalPlain)
	if d.SumAll != nil {
		iv.Sum = *d.SumAll
	}
	return nil
}

// UnmarshalJSON reads an end section; in a bidirectional run linerate's
// sums of both directions are sum_sent_all and sum_received_all.
func (e *End) UnmarshalJSON(b []byte) error {
	var d struct {
		endPlain
		SumSentAll     *Sum      `json:"sum_sent_all"`
		SumReceivedAll *Received `json:"sum_received_all"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return err
	}
	*e = End(d.endPlain)
	if d.SumSentAll != nil {
		e.SumSent = *d.SumSentAll
	}
	if d.SumReceivedAll != nil {
		e.SumReceived = *d.SumReceivedAll
	}
	return nil
}

// udpSums adds iperf3 -u's datagram counts to sum_sent and sum_received:
// the sender's count in both, the receiver's jitter and loss in the
// latter.
func udpSums(d *endDoc, sum *UDPStream) {
	var u UDPStream
	if sum != nil {
		u = *sum
	}
	pkts := uint64(max(u.Packets, 0))
	var zero float64
	var none int64
	d.SumSent.Packets, d.SumSent.JitterMS, d.SumSent.LostPackets, d.SumSent.LostPercent = &pkts, &zero, &none, &zero
	d.SumReceived.Packets, d.SumReceived.JitterMS, d.SumReceived.LostPackets, d.SumReceived.LostPercent = &pkts, &u.JitterMS, &u.LostPackets, &u.LostPercent
}
