package result

// What a run carries beside what its engine or tool measured: the label it
// was made under, the external tool that moved the bytes, what a perftest
// tool reported beyond bandwidth, and how evenly the streams shared the
// path. They are fields of Result like any other, so the one marshaller
// (Result.MarshalJSON) writes them.

// Tool names an external benchmark program and how it was run.
type Tool struct {
	Name    string   `json:"name"`
	Version string   `json:"version,omitempty"`
	Client  []string `json:"client,omitempty"` // the client's command line
	Server  []string `json:"server,omitempty"` // the server's, as started on the peer
}

// Perftest is what a perftest tool (ib_write_bw, ib_send_lat, …) reported
// of one run: its message size and iterations, and either its bandwidth
// (Gbit/s, message rate) or its latency distribution (µs). A figure the
// tool did not print is nil.
type Perftest struct {
	Test       string `json:"test,omitempty"`   // perftest's name: "RDMA_Write BW Test", "RDMA_Write_Latency_Test"
	Device     string `json:"device,omitempty"` // the RDMA device: "rocep3s0"
	LinkType   string `json:"link_type,omitempty"`
	MsgBytes   int64  `json:"msg_bytes"`
	Iterations int64  `json:"iterations"`

	BWPeakGbps    *float64 `json:"bw_peak_gbps,omitempty"`
	BWAverageGbps *float64 `json:"bw_average_gbps,omitempty"`
	MsgRateMpps   *float64 `json:"msg_rate_mpps,omitempty"`

	// Latency: t_typical is perftest's median. Write and send latencies
	// are half the round trip; read latency is the whole round trip.
	TMinUs     *float64 `json:"t_min_us,omitempty"`
	TMaxUs     *float64 `json:"t_max_us,omitempty"`
	TTypicalUs *float64 `json:"t_typical_us,omitempty"`
	TAvgUs     *float64 `json:"t_avg_us,omitempty"`
	TStdevUs   *float64 `json:"t_stdev_us,omitempty"`
	P99Us      *float64 `json:"p99_us,omitempty"`
	P999Us     *float64 `json:"p99_9_us,omitempty"`
}

// Fairness says how evenly a run's streams shared the path and, when the
// slowest got much less than the fastest, which receive CPU explains it
// (docs/architecture.md, "Per-stream fairness"). A run has one when its
// fastest stream got more than 1.25 times its slowest.
type Fairness struct {
	// Spread is 1 - slowest/fastest stream.
	Spread float64 `json:"spread"`
	// Basis says where the streams' receive CPUs come from: "rx_cpu"
	// (each receiving socket's SO_INCOMING_CPU), "softirq_shares" (the
	// receiver's per-CPU softirq load against the stream rates), or
	// "rates" (the rates alone: no telemetry of the receiver).
	Basis   string        `json:"basis"`
	Streams []StreamShare `json:"streams"`
	// Explained is true when the receive CPUs account for the spread.
	Explained   bool   `json:"explained"`
	Explanation string `json:"explanation"`
}

// StreamShare is one stream's goodput and receive CPU.
type StreamShare struct {
	ID   int     `json:"id"`
	Gbps float64 `json:"gbps"`
	// RxCPU is the CPU whose softirq served the stream's receiving socket
	// in most measured intervals; nil when unknown.
	RxCPU *int `json:"rx_cpu"`
	// Sharing is how many streams shared its receive CPU, counting itself:
	// measured with rx_cpu, inferred from the rates otherwise; 0 unknown.
	Sharing int `json:"sharing"`
}

// Gbps returns the run's goodput: what the receivers got, in Gbit/s.
func (r *Result) Gbps() float64 { return r.End.SumReceived.BitsPerSecond / 1e9 }
