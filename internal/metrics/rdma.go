package metrics

import (
	"regexp"
	"slices"
	"strconv"

	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/inventory"
)

// RDMA and RoCE families: an RDMA port's identity, state and counters
// (counters/ and the driver's hw_counters/), the DCB and ECN settings of
// the port's NIC, the driver's per-priority counters, the priority RoCE
// uses, and each GPU's PCIe distance to each NIC.
var (
	rdmaLabels = []string{lIface, "device", "port"}

	rdmaInfo      = newDesc("rdma_port_info", "An RDMA port's identity; always 1. link_layer is Ethernet (RoCE) or InfiniBand.", lIface, "device", "port", "link_layer", "hca_type", "firmware")
	rdmaActive    = newDesc("rdma_port_active", "1 when the RDMA port's state is ACTIVE, else 0.", rdmaLabels...)
	rdmaRate      = newDesc("rdma_port_rate_bytes_per_second", "The RDMA port's rate (its rate file, 100 Gb/sec is 12.5e9).", rdmaLabels...)
	rdmaActiveMTU = newDesc("rdma_port_active_mtu_bytes", "RoCE's active MTU: the largest IB MTU not above the netdev MTU less 96 bytes of RoCE headers.", rdmaLabels...)
	rdmaV2GIDs    = newDesc("rdma_port_roce_v2_gids", "How many RoCE v2 GIDs the port's GID table holds (0: RoCE v1 only, not routable).", rdmaLabels...)
	rdmaHW        = newDesc("rdma_hw_events_total", "The driver's RDMA counters (hw_counters/), by file name: out_of_sequence, packet_seq_err, local_ack_timeout_err and implied_nak_seq_err count retransmission; np_cnp_sent and rp_cnp_handled congestion notification; see the driver's documentation for the rest.", lIface, "device", "port", "name")
	rdmaPort      = newDesc("rdma_port_events_total", "The RDMA port's IB counters (counters/), by file name, but for the data counters, which are in the _bytes_total families.", lIface, "device", "port", "name")
	rdmaRxBytes   = newDesc("rdma_port_receive_bytes_total", "Bytes the RDMA port received (counters/port_rcv_data, kept in 4-byte words by the PMA).", rdmaLabels...)
	rdmaTxBytes   = newDesc("rdma_port_transmit_bytes_total", "Bytes the RDMA port transmitted (counters/port_xmit_data, kept in 4-byte words by the PMA).", rdmaLabels...)

	pfcEnabled = newDesc("pfc_enabled", "1 when PFC is on for the priority (DCB), else 0.", lIface, "priority")
	pfcFrames  = newDesc("pfc_frames_total", "PFC frames per priority as DCB counts them: direction=tx the NIC asked its peer to pause (requests), rx the peer asked it to (indications).", lIface, "priority", "direction")
	ecnEnabled = newDesc("roce_ecn_enabled", "1 when RoCE ECN is on for the priority: point=np the NIC sends CNPs for congestion it sees, rp it slows down on CNPs (MLNX_OFED mlx5's ecn/ switches).", lIface, "priority", "point")
	rocePrio   = newDesc("roce_priority", "1 for the priority RoCE v2 traffic uses on the interface, as doctor works it out (the trust mode and DSCP 26's mapping).", lIface, "priority")

	prioPackets  = newDesc("nic_priority_packets_total", "Packets per priority, as the driver counts them (mlx5 rx_prio3_packets, tx_prio3_packets).", lIface, "priority", "direction")
	prioBytes    = newDesc("nic_priority_bytes_total", "Bytes per priority, as the driver counts them.", lIface, "priority", "direction")
	prioDiscards = newDesc("nic_priority_discards_total", "Received packets of the priority the NIC discarded (mlx5 rx_prio3_discards: no buffer while the priority was lossy).", lIface, "priority")
	prioPause    = newDesc("nic_priority_pause_frames_total", "Pause frames per priority as the driver counts them (mlx5 rx_prio3_pause: the peer paused this priority; tx: this NIC paused its peer).", lIface, "priority", "direction")
	prioPauseDur = newDesc("nic_priority_pause_seconds_total", "How long the priority was paused (mlx5 rx_prio3_pause_duration, tx_prio3_pause_duration, kept in microseconds).", lIface, "priority", "direction")

	pcieMRRS  = newDesc("pcie_max_read_request_bytes", "The PCIe Max_Read_Request_Size the NIC uses (Device Control; 4096 is NVIDIA's recommendation for RDMA at 100 Gbit/s).", lIface)
	iommuInfo = newDesc("nic_iommu_info", "The IOMMU group of the NIC's PCI function and its type (identity: passthrough; DMA, DMA-FQ: translated); always 1.", lIface, "group", "type")
	gpuInfo   = newDesc("gpu_info", "A GPU's identity; always 1.", "pci", "vendor", "model", "numa_node")
	gpuNIC    = newDesc("gpu_nic_distance_info", "A GPU's PCIe distance to a NIC, named as nvidia-smi topo -m names it (PIX, PXB, PHB, NODE, SYS); always 1.", "pci", lIface, "distance")
)

// prioCounterRE splits a per-priority counter name ("rx_pause_duration").
var prioCounterRE = regexp.MustCompile(`^(rx|tx)_(packets|bytes|discards|pause|pause_duration)$`)

func emitRDMA(e *emitter, n *doctor.NICReport, roceP *int) {
	iface := n.Interface
	for _, p := range n.RDMA {
		port := strconv.Itoa(p.Port)
		e.gauge(rdmaInfo, 1, iface, p.Device, port, p.LinkLayer, p.HCAType, p.Firmware)
		e.gauge(rdmaActive, bool01(p.State == "ACTIVE"), iface, p.Device, port)
		if p.RateGbps > 0 {
			e.gauge(rdmaRate, p.RateGbps*gbpsToBytes, iface, p.Device, port)
		}
		if p.ActiveMTU != nil {
			e.gauge(rdmaActiveMTU, float64(*p.ActiveMTU), iface, p.Device, port)
		}
		if p.LinkLayer == "Ethernet" && len(p.GIDs) > 0 {
			v2 := 0
			for _, g := range p.GIDs {
				if g.Type == "RoCE v2" {
					v2++
				}
			}
			e.gauge(rdmaV2GIDs, float64(v2), iface, p.Device, port)
		}
		for _, k := range sortedKeys(p.HWCounters) {
			if k == "lifespan" {
				continue // a setting (ms between counter refreshes), not a count
			}
			e.counter(rdmaHW, float64(p.HWCounters[k]), iface, p.Device, port, k)
		}
		for _, k := range sortedKeys(p.Counters) {
			v := float64(p.Counters[k])
			switch k {
			case "port_rcv_data":
				e.counter(rdmaRxBytes, 4*v, iface, p.Device, port)
			case "port_xmit_data":
				e.counter(rdmaTxBytes, 4*v, iface, p.Device, port)
			default:
				e.counter(rdmaPort, v, iface, p.Device, port, k)
			}
		}
	}
	if c := n.DCB; c != nil && c.PFC != nil {
		for prio := range 8 {
			ps := strconv.Itoa(prio)
			e.gauge(pfcEnabled, bool01(c.PFC.Has(prio)), iface, ps)
			e.counter(pfcFrames, float64(c.PFC.Requests[prio]), iface, ps, "tx")
			e.counter(pfcFrames, float64(c.PFC.Indications[prio]), iface, ps, "rx")
		}
	}
	if x := n.ECN; x != nil {
		for prio := range 8 {
			ps := strconv.Itoa(prio)
			for point, v := range map[string]*bool{"np": x.NP[prio], "rp": x.RP[prio]} {
				if v != nil {
					e.gauge(ecnEnabled, bool01(*v), iface, ps, point)
				}
			}
		}
	}
	if r, ok := doctor.RoCEOf(&n.NIC, roceP); ok && r.Priority >= 0 && r.Priority < 8 {
		e.gauge(rocePrio, 1, iface, strconv.Itoa(r.Priority))
	}
	emitPriorityCounters(e, iface, n.PriorityCounters)
	if p := n.PCIe; p != nil && p.MRRS != nil {
		e.gauge(pcieMRRS, float64(*p.MRRS), iface)
	}
	if m := n.IOMMU; m != nil {
		e.gauge(iommuInfo, 1, iface, strconv.Itoa(m.Group), m.Type)
	}
}

func emitPriorityCounters(e *emitter, iface string, pc map[string]map[string]uint64) {
	for _, prio := range sortedKeys(pc) {
		for _, name := range sortedKeys(pc[prio]) {
			m := prioCounterRE.FindStringSubmatch(name)
			if m == nil {
				continue
			}
			v, dir := float64(pc[prio][name]), m[1]
			switch m[2] {
			case "packets":
				e.counter(prioPackets, v, iface, prio, dir)
			case "bytes":
				e.counter(prioBytes, v, iface, prio, dir)
			case "discards":
				if dir == "rx" {
					e.counter(prioDiscards, v, iface, prio)
				}
			case "pause":
				e.counter(prioPause, v, iface, prio, dir)
			case "pause_duration":
				e.counter(prioPauseDur, v/1e6, iface, prio, dir)
			}
		}
	}
}

func emitGPUs(e *emitter, gpus []inventory.GPU) {
	for _, g := range gpus {
		node := ""
		if g.NUMANode != nil {
			node = strconv.Itoa(*g.NUMANode)
		}
		e.gauge(gpuInfo, 1, g.PCI, g.Vendor, g.Model, node)
		for _, n := range g.NICs {
			e.gauge(gpuNIC, 1, g.PCI, n.Interface, n.Distance)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
