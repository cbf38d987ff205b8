package result

import "github.com/linerate/linerate/internal/latency"

// TCPStats is TCP's own account of one stream over one interval
// (intervals[].streams[].tcp), read with TCP_INFO by the native engine at
// the interval's end. The sending socket gives the first fields, the
// receiving socket the rcv_* ones.
//
// The chrono stats (busy_us, rwnd_limited_us, sndbuf_limited_us) are
// kept by the kernel as cumulative microseconds since the connection
// began, at jiffy resolution (1 to 10 ms); here each is its growth over
// the interval. busy_us is all the time the socket had data to send
// (tcpi_busy_time: the kernel adds the limited times into it), so
// rwnd_limited_us and sndbuf_limited_us are parts of it: the share of an
// interval the receiver's window held the sender back is
// rwnd_limited_us / interval, and the rest of busy_us is time the
// congestion window (or the network) set the pace.
type TCPStats struct {
	BusyUs          uint64 `json:"busy_us"`
	RwndLimitedUs   uint64 `json:"rwnd_limited_us"`
	SndbufLimitedUs uint64 `json:"sndbuf_limited_us"`
	// DeliveryRateBps is the kernel's latest delivery rate sample
	// (tcpi_delivery_rate, in bits/s), and AppLimited whether that sample
	// was taken while the application, not the network, left the pipe
	// short (tcpi_delivery_rate_app_limited).
	DeliveryRateBps float64 `json:"delivery_rate_bps"`
	AppLimited      bool    `json:"app_limited"`
	// ReordSeen is how many reordering events the sender detected over
	// the interval (growth of tcpi_reord_seen); Retrans the segments it
	// retransmitted (growth of tcpi_total_retrans); Lost the segments it
	// held lost at the interval's end (tcpi_lost, a gauge: lost and not
	// yet retransmitted and acknowledged).
	ReordSeen uint64 `json:"reord_seen"`
	Lost      uint64 `json:"lost"`
	Retrans   uint64 `json:"retrans"`
	// SndCwnd and SndSsthresh are in segments at the interval's end;
	// an ssthresh of 2147483647 is the kernel's "infinite": no loss or
	// ECN signal has lowered it yet. PacingRateBps is the socket's
	// current pacing rate (bits/s; the kernel computes one even without
	// the fq qdisc; 0 before it has, with no RTT sample yet).
	SndCwnd       uint32  `json:"snd_cwnd"`
	SndSsthresh   uint32  `json:"snd_ssthresh"`
	PacingRateBps float64 `json:"pacing_rate_bps"`

	// From the receiving socket, absent where its end's sample did not
	// arrive or its kernel does not give the field: RcvRTTUs is the
	// receiver's own RTT estimate (µs), RcvSpace the receive-buffer
	// autotuning's current estimate of what one RTT brings (bytes),
	// RcvWnd the window it advertises now (bytes, Linux 6.2), RcvOOOPack
	// the out-of-order packets it received over the interval (Linux 5.4).
	RcvRTTUs   *uint32 `json:"rcv_rtt_us,omitempty"`
	RcvSpace   *uint32 `json:"rcv_space,omitempty"`
	RcvWnd     *uint32 `json:"rcv_wnd,omitempty"`
	RcvOOOPack *uint64 `json:"rcv_ooopack,omitempty"`
}

// IntervalTransactions is one interval of a transaction run (rr, crr):
// the transactions the client completed in it and their latency, by the
// run's percentile rule (end.latency's: too few samples leave a
// percentile null).
type IntervalTransactions struct {
	Count     uint64      `json:"count"`
	PerSecond float64     `json:"per_second"`
	RTTUs     latency.RTT `json:"rtt_us"`
}

// Transactions is end.transactions of a transaction run: what the client
// completed in its measured window, their latency (a transaction's time
// from the request's write to the response's last byte; with crr from
// the connect), and each end's CPU time per transaction.
type Transactions struct {
	Mode Mode `json:"mode"`
	// Count is the transactions the client completed in its measured
	// window, PerSecond them over the window; ServerCount what the agent
	// answered over its own.
	Count       uint64  `json:"count"`
	PerSecond   float64 `json:"per_second"`
	ServerCount uint64  `json:"server_count"`
	// Samples, RTTUs and Notes are the latency of the counted
	// transactions, as end.latency gives a ping-pong's.
	Samples int64       `json:"samples"`
	RTTUs   latency.RTT `json:"rtt_us"`
	Notes   []string    `json:"notes,omitempty"`
	// Size is the bytes of a request and of its response; Depth the
	// requests each flow keeps outstanding; Flows and Threads how many
	// connections at once over how many threads per end.
	Size    int `json:"size"`
	Depth   int `json:"depth"`
	Flows   int `json:"flows"`
	Threads int `json:"threads"`
	// CPUUsPerTransaction is each end's process CPU time (user and
	// system) over its measured window, divided by the transactions
	// counted there, in microseconds.
	CPUUsPerTransaction HostCPUPer `json:"cpu_us_per_transaction"`
	// ConnectErrors counts crr connections that failed (refused, reset
	// before the answer) and were made again.
	ConnectErrors uint64 `json:"connect_errors,omitempty"`
}

// HostCPUPer is a CPU cost of each end.
type HostCPUPer struct {
	Client float64 `json:"client"`
	Server float64 `json:"server"`
}

// RxCopyReport is end.rx_copy of a run that asked receivers not to copy
// (--skip-rx-copy), and, on every native stream run, what the receiving
// threads' CPU cost per byte was, so that two runs, with and without the
// copy, say how much of the receiver's CPU the copy took.
type RxCopyReport struct {
	// Asked is the method asked for; Method what the receivers did
	// ("" when they copied: the kernel could not skip it), with Note
	// saying why when the two differ.
	Asked  SkipRxCopy `json:"asked,omitempty"`
	Method SkipRxCopy `json:"method,omitempty"`
	Note   string     `json:"note,omitempty"`
	// MappedBytes and CopiedBytes split what zerocopy_receive took:
	// pages mapped, and what the kernel could not map and copied.
	MappedBytes uint64 `json:"mapped_bytes,omitempty"`
	CopiedBytes uint64 `json:"copied_bytes,omitempty"`
	// ReceiverThreadCPUSeconds is the CPU time of the threads that
	// received (their thread clocks, over each end's measured window;
	// softirq work the kernel does on other CPUs is not in it), and
	// ReceiverCPUSecondsPerGB the same per 10^9 bytes received.
	ReceiverThreadCPUSeconds float64 `json:"receiver_thread_cpu_seconds"`
	ReceiverCPUSecondsPerGB  float64 `json:"receiver_cpu_s_per_gb"`
}
