package metrics

import (
	"math"
	"testing"
)

// TestRDMAFamilies: the RoCE trees' RDMA, DCB, ECN, per-priority and GPU
// facts come out in base units, equal to what the trees hold.
func TestRDMAFamilies(t *testing.T) {
	l := treeLive(t, "roce-healthy")
	e := expose(t, NewRegistry(NewCollector(l.Snapshot, "test")))
	port := map[string]string{"interface": "enp51s0np0", "device": "rocep51s0", "port": "1"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	nic := map[string]string{"interface": "enp51s0np0"}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"linerate_rdma_port_info", with(port, "link_layer", "Ethernet", "hca_type", "MT4125", "firmware", "22.39.1002"), 1},
		{"linerate_rdma_port_active", port, 1},
		{"linerate_rdma_port_rate_bytes_per_second", port, 12.5e9},
		{"linerate_rdma_port_active_mtu_bytes", port, 4096},
		{"linerate_rdma_port_roce_v2_gids", port, 2},
		{"linerate_rdma_hw_events_total", with(port, "name", "rp_cnp_handled"), 3911},
		{"linerate_rdma_hw_events_total", with(port, "name", "out_of_sequence"), 0},
		{"linerate_rdma_port_events_total", with(port, "name", "port_xmit_discards"), 0},
		// The PMA keeps data in 4-byte words.
		{"linerate_rdma_port_transmit_bytes_total", port, 4 * 90_118_335_120},
		{"linerate_pfc_enabled", with(nic, "priority", "3"), 1},
		{"linerate_pfc_enabled", with(nic, "priority", "0"), 0},
		{"linerate_pfc_frames_total", with(nic, "priority", "3", "direction", "rx"), 1822},
		{"linerate_pfc_frames_total", with(nic, "priority", "3", "direction", "tx"), 96},
		{"linerate_roce_ecn_enabled", with(nic, "priority", "3", "point", "rp"), 1},
		{"linerate_roce_priority", with(nic, "priority", "3"), 1},
		{"linerate_nic_priority_pause_frames_total", with(nic, "priority", "3", "direction", "rx"), 1822},
		// mlx5 counts pause in microseconds: 1822 × 3 µs.
		{"linerate_nic_priority_pause_seconds_total", with(nic, "priority", "3", "direction", "rx"), 5466e-6},
		{"linerate_nic_priority_discards_total", with(nic, "priority", "3"), 0},
		{"linerate_nic_priority_packets_total", with(nic, "priority", "3", "direction", "tx"), 89_324_931},
		{"linerate_pcie_max_read_request_bytes", nic, 4096},
		{"linerate_nic_iommu_info", with(nic, "group", "3", "type", "identity"), 1},
		{"linerate_gpu_info", map[string]string{"pci": "0000:34:00.0", "vendor": "NVIDIA", "model": "A100 PCIe 40GB", "numa_node": "0"}, 1},
		{"linerate_gpu_nic_distance_info", map[string]string{"pci": "0000:34:00.0", "interface": "enp51s0np0", "distance": "PIX"}, 1},
	} {
		if got := e.value(t, c.name, c.labels); math.Abs(got-c.want) > 1e-9*math.Max(1, c.want) {
			t.Errorf("%s%v = %g, want %g", c.name, c.labels, got, c.want)
		}
	}
	if n := len(e.samples("linerate_rdma_hw_events_total", map[string]string{"name": "lifespan"})); n != 0 {
		t.Error("lifespan, a setting, is exposed as a counter")
	}

	// PFC off and ECN off: the series say so, and RoCE's priority is 3.
	e = expose(t, NewRegistry(NewCollector(treeLive(t, "roce-pfc-off").Snapshot, "test")))
	if v := e.value(t, "linerate_pfc_enabled", with(nic, "priority", "3")); v != 0 {
		t.Errorf("pfc_enabled = %g on the PFC-off host", v)
	}
	if v := e.value(t, "linerate_roce_ecn_enabled", with(nic, "priority", "3", "point", "np")); v != 0 {
		t.Errorf("ecn np = %g on the ECN-off host", v)
	}
	e.value(t, "linerate_roce_priority", with(nic, "priority", "3"))
}
