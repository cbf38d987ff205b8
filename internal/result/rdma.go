package result

// RDMA is what an RDMA run (perftest) counted on both ends' RDMA ports
// and how its result compares with the port and its PCIe link
// (docs/architecture.md, "RDMA runs that explain themselves").
type RDMA struct {
	// Client and Server are each end's counter growth; nil where that end
	// was not read.
	Client *RDMAEnd `json:"client,omitempty"`
	Server *RDMAEnd `json:"server,omitempty"`
	// PortGbps is the client port's rate (its rate file); PCIeGbps the
	// ceiling of its PCIe link for posted writes, PCIeLink that link
	// ("8 GT/s x8"). Nil or empty where unknown.
	PortGbps *float64 `json:"port_gbps"`
	PCIeGbps *float64 `json:"pcie_gbps"`
	PCIeLink string   `json:"pcie_link,omitempty"`
	// OfPort and OfPCIe are the run's average bandwidth as a share of
	// those (0.559 is 55.9%); nil for a latency run or an unknown ceiling.
	OfPort *float64 `json:"of_port"`
	OfPCIe *float64 `json:"of_pcie"`
	// Verdict is "pass" when a bandwidth run reached PassShare of the
	// port's rate, else "fail"; absent for a latency run or an unknown
	// rate.
	Verdict string `json:"verdict,omitempty"`
	// Limit is "pcie" when the PCIe link carries less than the port's
	// rate (the port cannot be filled), else absent.
	Limit string `json:"limit,omitempty"`
	// Causes are the kinds of trouble the counters show, each with the
	// counters that grew; empty when nothing grew.
	Causes []RDMACause `json:"causes"`
	// Explanation says in sentences what the run reached and why.
	Explanation []string `json:"explanation"`
}

// PassShare is the vendor's pass bar for an RDMA bandwidth test: 90% of
// the port's speed (NVIDIA's certification scripts).
const PassShare = 0.9

// RDMAEnd is one end's RDMA port and how its counters grew during the
// run. Counters present grew by their value (zero included); a counter
// absent was not read, never zero.
type RDMAEnd struct {
	Device string `json:"device"`
	Port   int    `json:"port"`
	// Netdev is the interface the port runs RoCE on ("" for InfiniBand).
	Netdev string `json:"netdev,omitempty"`
	// HWCounters and Counters are hw_counters/ (the driver's:
	// out_of_sequence, np_cnp_sent, …) and counters/ (the IB port
	// counters) by file name.
	HWCounters map[string]uint64 `json:"hw_counters,omitempty"`
	Counters   map[string]uint64 `json:"counters,omitempty"`
	// Priority are the driver's per-priority counters of the netdev
	// (mlx5's rx_prio3_pause as "3": {"rx_pause": n}), by priority.
	Priority map[string]map[string]uint64 `json:"priority,omitempty"`
	// NotRead says why the port (or part of it) could not be read.
	NotRead string `json:"not_read,omitempty"`
}

// RDMACause is one kind of trouble the RDMA counters show on one end:
// "retransmission" (out_of_sequence, packet_seq_err,
// local_ack_timeout_err: packets lost and resent), "congestion" (ECN's
// congestion notification packets: np_cnp_sent, rp_cnp_handled), "pause"
// (PFC pause frames on a priority) or "discards" (packets of a priority
// the NIC dropped).
type RDMACause struct {
	Cause string `json:"cause"`
	End   string `json:"end"`
	// Counters are the counters behind the cause and their growth
	// ("out_of_sequence", "prio3.rx_pause").
	Counters map[string]uint64 `json:"counters"`
}
