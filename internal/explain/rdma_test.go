package explain

import (
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/result"
)

// TestJudgeRDMA: the verdict against 90% of the port's speed, the PCIe
// limit, and the causes each counter names, end by end.
func TestJudgeRDMA(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	quiet := func() *result.RDMAEnd {
		return &result.RDMAEnd{Device: "mlx5_0", Port: 1, Netdev: "ens1f0np0",
			HWCounters: map[string]uint64{"out_of_sequence": 0, "np_cnp_sent": 0}, Priority: map[string]map[string]uint64{"3": {"rx_pause": 0}}}
	}
	tests := []struct {
		name           string
		r              result.RDMA
		gbps           *float64
		verdict, limit string
		causes         string
		says, not      []string
	}{
		{"pass at 90%", result.RDMA{PortGbps: f(100), PCIeGbps: f(228.8), Client: quiet(), Server: quiet()}, f(90.0),
			"pass", "", "", []string{"90.00 Gbit/s is 90.0% of the port's 100 Gbit/s: PASS", "No retransmission"}, []string{"PCIe limits"}},
		{"fail below", result.RDMA{PortGbps: f(200), PCIeGbps: f(228.8), Client: quiet()}, f(179.9),
			"fail", "", "", []string{"90.0% of the port's 200 Gbit/s: FAIL"}, nil},
		{"PCIe below the port, above the bar", result.RDMA{PortGbps: f(100), PCIeGbps: f(95), PCIeLink: "16 GT/s x4"}, f(91),
			"pass", "pcie", "", []string{"The PCIe link (16 GT/s x4) carries at most 95.0 Gbit/s; the run reached 96% of it: PCIe, not the network, is the ceiling"}, []string{"No retransmission"}},
		{"latency run: no verdict", result.RDMA{PortGbps: f(100), Client: &result.RDMAEnd{Device: "mlx5_0", Port: 1,
			HWCounters: map[string]uint64{"local_ack_timeout_err": 2, "rp_cnp_handled": 7}}}, nil,
			"", "", "client:retransmission client:congestion", []string{"Retransmission: the client's mlx5_0/1 counted local_ack_timeout_err 2", "as sender it slowed down for 7 CNPs"}, []string{"PASS", "FAIL"}},
		{"discards and pause on the server, the client not read", result.RDMA{Client: &result.RDMAEnd{NotRead: "no RDMA port under /sys/class/infiniband"},
			Server: &result.RDMAEnd{Device: "mlx5_1", Port: 1, Netdev: "ens2", HWCounters: map[string]uint64{},
				Priority: map[string]map[string]uint64{"3": {"rx_pause": 12, "rx_discards": 0}, "0": {"rx_discards": 31}}}}, f(40),
			"", "", "server:pause server:discards", []string{"Pause: the server's ens2 counted prio3.rx_pause 12", "Discards: the server's ens2 dropped packets of a priority: prio0.rx_discards 31", "The client's RDMA counters were not read: no RDMA port"}, []string{"No retransmission"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r
			JudgeRDMA(&r, tc.gbps)
			var causes []string
			for _, c := range r.Causes {
				causes = append(causes, c.End+":"+c.Cause)
			}
			if r.Verdict != tc.verdict || r.Limit != tc.limit || strings.Join(causes, " ") != tc.causes {
				t.Errorf("verdict %q limit %q causes %v; want %q %q %q", r.Verdict, r.Limit, causes, tc.verdict, tc.limit, tc.causes)
			}
			text := strings.Join(r.Explanation, "\n")
			for _, s := range tc.says {
				if !strings.Contains(text, s) {
					t.Errorf("does not say %q:\n%s", s, text)
				}
			}
			for _, s := range tc.not {
				if strings.Contains(text, s) {
					t.Errorf("says %q:\n%s", s, text)
				}
			}
		})
	}
}
