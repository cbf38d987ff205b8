package hosttree

import (
	"fmt"
	"maps"

	"github.com/linerate/linerate/internal/dcb"
)

// RoCE hosts: a two-socket Ice Lake server with a ConnectX-6 Dx (100 GbE,
// RoCE v2) and an NVIDIA A100 behind one Broadcom PCIe switch, set up
// for lossless RoCE as NVIDIA's guides do it (PFC and ECN on priority 3,
// DSCP trust with DSCP 26 on priority 3, MTU 9000, MRRS 4096, the IOMMU
// in passthrough, ACS off on the switch), and one variant per RoCE
// finding with exactly one thing undone.
//
// The RDMA files follow drivers/infiniband/core/sysfs.c (GID table, types
// and ndevs, counters/ and mlx5's hw_counters/), the ECN switches MLNX_OFED
// mlx5's ecn/roce_{np,rp}/enable/<prio>, DCB what DCB_CMD_IEEE_GET returns
// from mlx5 (which has no apptrust operation: in DSCP trust it lists all
// 64 DSCP→priority mappings in the APP table, dscp>>3 unless changed), the
// per-priority counters mlx5's `ethtool -S` names (rx_prio3_pause, …).

// roceVariant is what one RoCE host changes from the healthy one.
type roceVariant struct {
	mtu       int       // netdev MTU; 0 means 9000
	pfc       []int     // PFC priorities; nil means [3]
	ecn       *ECN      // nil means every priority on
	pcpTrust  bool      // no DSCP APP entries: mlx5 trusts PCP
	v1Only    bool      // RoCE v1 GIDs only
	hwErrors  bool      // retransmission counters grown
	mrrs      int       // the NIC's MRRS; 0 means 4096
	acsOn     bool      // ACS redirect on the switch's downstream ports
	gpuRemote bool      // the GPU on the other socket, on a root port of its own
	iommu     string    // IOMMU group type; "" means identity
	pause     [2]uint64 // rx, tx PFC frames on priority 3
}

// RoCEHealthy is the healthy RoCE host: it raises no finding.
func RoCEHealthy() *Host { return roceHost("gpu-a01", roceVariant{pause: [2]uint64{1822, 96}}) }

const (
	roceNIC    = "0000:33:00.0"
	roceIface  = "enp51s0np0"
	roceMAC    = "b8:ce:f6:a1:07:3c"
	roceIPv4   = "192.168.100.11"
	roceRDMA   = "rocep51s0"
	roceGPU    = "0000:34:00.0"
	roceGPUFar = "0000:b1:00.0"
)

// roceHosts are the RoCE trees.
func roceTrees() []Tree {
	off := &ECN{}
	rpOff := allECN()
	rpOff.RP[3] = false
	return []Tree{
		{Name: "roce-healthy", Host: RoCEHealthy(), Doc: docRoCEHealthy},
		{Name: "roce-pfc-off", Host: roceHost("gpu-a02", roceVariant{pfc: []int{}, ecn: off}), Doc: docRoCEPFCOff},
		{Name: "roce-ecn-off", Host: roceHost("gpu-a03", roceVariant{ecn: &rpOff}), Doc: docRoCEECNOff},
		{Name: "roce-trust-pcp", Host: roceHost("gpu-a04", roceVariant{pcpTrust: true}), Doc: docRoCETrustPCP},
		{Name: "roce-v1-gid-only", Host: roceHost("gpu-a05", roceVariant{v1Only: true}), Doc: docRoCEV1Only},
		{Name: "roce-mtu-1500", Host: roceHost("gpu-a06", roceVariant{mtu: 1500}), Doc: docRoCEMTU1500},
		{Name: "rdma-errors", Host: roceHost("gpu-a07", roceVariant{hwErrors: true}), Doc: docRDMAErrors},
		{Name: "pcie-mrrs-512", Host: roceHost("gpu-a08", roceVariant{mrrs: 512}), Doc: docMRRS512},
		{Name: "gpu-acs-redirect", Host: roceHost("gpu-a09", roceVariant{acsOn: true}), Doc: docACSRedirect},
		{Name: "gpu-nic-far", Host: roceHost("gpu-a10", roceVariant{gpuRemote: true}), Doc: docGPUNICFar},
		{Name: "iommu-translated", Host: roceHost("gpu-a11", roceVariant{iommu: "DMA-FQ"}), Doc: docIOMMUTranslated},
	}
}

func allECN() ECN {
	var e ECN
	for p := range 8 {
		e.NP[p], e.RP[p] = true, true
	}
	return e
}

// mlx5DSCPMap is the APP table mlx5 reports in DSCP trust: every DSCP to
// priority dscp>>3 (the firmware's default map).
func mlx5DSCPMap() []dcb.App {
	apps := make([]dcb.App, 64)
	for d := range 64 {
		apps[d] = dcb.App{Selector: "dscp", Protocol: d, Priority: d >> 3}
	}
	return apps
}

// mlx5PrioCounters adds a ConnectX port's per-priority `ethtool -S`
// counters: traffic on priority 3, PFC frames received and sent there.
func mlx5PrioCounters(m map[string]uint64, packets uint64, pauseRX, pauseTX uint64) {
	for p := range 8 {
		var pk, rx, tx uint64
		if p == 3 {
			pk, rx, tx = packets, pauseRX, pauseTX
		}
		if p == 0 {
			pk = packets / 50
		}
		for k, v := range map[string]uint64{
			"rx_prio%d_bytes": pk * 4150, "rx_prio%d_packets": pk, "rx_prio%d_discards": 0,
			"tx_prio%d_bytes": pk * 4150, "tx_prio%d_packets": pk,
			"rx_prio%d_pause": rx, "rx_prio%d_pause_duration": rx * 3, "rx_prio%d_pause_transition": rx / 2,
			"tx_prio%d_pause": tx, "tx_prio%d_pause_duration": tx * 5,
		} {
			m[fmt.Sprintf(k, p)] = v
		}
	}
}

// mlx5HWCounters are a ConnectX-6 Dx port's hw_counters after a day of
// RDMA traffic: requests served, a few CNPs, no errors (unless asked).
func mlx5HWCounters(errors bool) map[string]uint64 {
	m := map[string]uint64{
		"duplicate_request": 0, "implied_nak_seq_err": 0, "lifespan": 12, "local_ack_timeout_err": 0,
		"np_cnp_sent": 4_107, "np_ecn_marked_roce_packets": 4_388, "out_of_buffer": 0, "out_of_sequence": 0,
		"packet_seq_err": 0, "req_cqe_error": 0, "req_cqe_flush_error": 0, "req_remote_access_errors": 0,
		"req_remote_invalid_request": 0, "resp_cqe_error": 0, "resp_cqe_flush_error": 0, "resp_local_length_error": 0,
		"resp_remote_access_errors": 0, "rnr_nak_retry_err": 0, "roce_adp_retrans": 0, "roce_adp_retrans_to": 0,
		"roce_slow_restart": 0, "roce_slow_restart_cnps": 0, "roce_slow_restart_trans": 0, "rp_cnp_handled": 3_911,
		"rp_cnp_ignored": 0, "rx_atomic_requests": 0, "rx_dct_connect": 0, "rx_icrc_encapsulated": 0,
		"rx_read_requests": 1_204_377, "rx_write_requests": 88_120_554,
	}
	if errors {
		m["out_of_sequence"], m["packet_seq_err"], m["local_ack_timeout_err"] = 18_234, 912, 37
	}
	return m
}

// mlx5IBCounters are the port's counters/ (IB PMA counters mlx5 keeps for
// RoCE; data counts are in 4-byte words, as the PMA defines them).
func mlx5IBCounters() map[string]uint64 {
	return map[string]uint64{
		"excessive_buffer_overrun_errors": 0, "link_downed": 0, "link_error_recovery": 0, "local_link_integrity_errors": 0,
		"multicast_rcv_packets": 0, "multicast_xmit_packets": 0, "port_rcv_constraint_errors": 0,
		"port_rcv_data": 91_544_203_117, "port_rcv_errors": 0, "port_rcv_packets": 89_324_931,
		"port_rcv_remote_physical_errors": 0, "port_rcv_switch_relay_errors": 0, "port_xmit_constraint_errors": 0,
		"port_xmit_data": 90_118_335_120, "port_xmit_discards": 0, "port_xmit_packets": 88_207_412, "port_xmit_wait": 0,
		"symbol_error": 0, "unicast_rcv_packets": 89_324_931, "unicast_xmit_packets": 88_207_412, "VL15_dropped": 0,
	}
}

// roceHost builds a RoCE host with v's changes.
func roceHost(name string, v roceVariant) *Host {
	mtu := v.mtu
	if mtu == 0 {
		mtu = 9000
	}
	mrrs := v.mrrs
	if mrrs == 0 {
		mrrs = 4096
	}
	pfc := v.pfc
	if pfc == nil {
		pfc = []int{3}
	}
	ecn := allECN()
	if v.ecn != nil {
		ecn = *v.ecn
	}
	iommu := v.iommu
	if iommu == "" {
		iommu = "identity"
	}

	irqs := []IRQ{{Num: 140, Vector: 0, Name: "mlx5_async0@pci:" + roceNIC, Counts: map[int]uint64{0: 2204}, Affinity: one(0)}}
	for i := range 8 {
		irqs = append(irqs, IRQ{Num: 141 + i, Vector: 1 + i, Name: fmt.Sprintf("mlx5_comp%d@pci:%s", i, roceNIC),
			Counts: map[int]uint64{i: uint64(4_210_000 + 35_117*i)}, Affinity: one(i), Hint: one(i)})
	}

	eth := mlx5Port{speed: 100000, supported: mlx5Supported100, advertised: "100000baseCR4/Full",
		fecConf: "RS", fecActive: "RS", corrected: []uint64{40_117, 10_002, 9_871, 10_410, 9_834}, uncorr: []uint64{0, 0, 0, 0, 0},
		rxFrames: 91_002_554, queues: 8, downEvents: 1}.facts()
	mlx5PrioCounters(eth.Stats.Driver, 89_324_931, v.pause[0], v.pause[1])

	nif := upIface(roceIface, roceMAC, 4, mtu, 100000, 8, "p0")
	nif.Ethtool = eth
	nif.ECN = &ecn
	d := &dcb.IEEE{
		PFC: &dcb.PFC{Enabled: pfc, Cap: 8, Delay: 32768},
		ETS: &dcb.ETS{Cap: 8, PrioTC: [8]int{0, 1, 2, 3, 4, 5, 6, 7}, TCTxBW: [8]int{10, 10, 10, 50, 10, 10, 0, 0},
			TCTSA: [8]string{"ets", "ets", "ets", "ets", "ets", "ets", "strict", "strict"}},
		App:  mlx5DSCPMap(),
		DCBX: strp("firmware"), DCBXVersions: []string{"ieee", "cee"},
	}
	d.PFC.Requests[3], d.PFC.Indications[3] = v.pause[1], v.pause[0]
	if v.pcpTrust {
		d.App = []dcb.App{}
	}
	nif.DCB = &dcb.Reading{Config: d}

	gids := RoCEGIDs(roceMAC, roceIface, roceIPv4)
	if v.v1Only {
		// A v1-only table (rdma_cm's default GID type forced to v1 on a
		// device without v2, as ConnectX-3 is): the same addresses, one
		// entry each.
		gids = []GIDEntry{{0, gids[0].Addr, "IB/RoCE v1", roceIface}, {1, roceIPv4, "IB/RoCE v1", roceIface}}
	}

	rootPort := PCIDevice{BDF: "0000:30:02.0", Vendor: 0x8086, Device: 0x347a, Revision: 0x06, Class: 0x060400,
		NUMANode: 0, LegacyIRQ: 32, MaxSpeed: 16, MaxWidth: 16, CurSpeed: 16, CurWidth: 16,
		MPSSupported: 512, MPS: 256, MRRS: 512, Port: 3, Config: true,
		ACS: &ACS{Cap: 0x005f, Ctl: 0x001d}}
	usp := PCIDevice{BDF: "0000:31:00.0", Vendor: 0x1000, Device: 0xc010, Revision: 0xb0, Class: 0x060400,
		NUMANode: 0, LegacyIRQ: 33, MaxSpeed: 16, MaxWidth: 16, CurSpeed: 16, CurWidth: 16,
		MPSSupported: 2048, MPS: 256, MRRS: 512, PortType: 5, Config: true}
	dspACS := uint16(0)
	if v.acsOn {
		// What Linux enables on every ACS-capable downstream port when an
		// IOMMU is on (pci_std_enable_acs): SV, RR, CR, UF.
		dspACS = 0x001d
	}
	dsp := func(bdf string, port int) PCIDevice {
		return PCIDevice{BDF: bdf, Vendor: 0x1000, Device: 0xc010, Revision: 0xb0, Class: 0x060400,
			NUMANode: 0, LegacyIRQ: 34, MaxSpeed: 16, MaxWidth: 16, CurSpeed: 16, CurWidth: 16,
			MPSSupported: 2048, MPS: 256, MRRS: 512, PortType: 6, Port: port, Config: true,
			ACS: &ACS{Cap: 0x005d, Ctl: dspACS}}
	}

	gpu := GPU{
		PCI: PCIDevice{BDF: roceGPU, Vendor: 0x10de, Device: 0x20f1, SubsystemVendor: 0x10de, SubsystemDevice: 0x145f,
			Class: 0x030200, Revision: 0xa1, Driver: "nvidia", NUMANode: 0, LegacyIRQ: 35,
			MaxSpeed: 16, MaxWidth: 16, CurSpeed: 16, CurWidth: 16, MPSSupported: 256, MPS: 256, MRRS: 512, Config: true},
		Bridge: rootPort, Switch: []PCIDevice{usp, dsp("0000:32:04.0", 4)},
	}
	if v.gpuRemote {
		gpu.PCI.BDF, gpu.PCI.NUMANode = roceGPUFar, 1
		gpu.Bridge = PCIDevice{BDF: "0000:b0:02.0", Vendor: 0x8086, Device: 0x347a, Revision: 0x06, Class: 0x060400,
			NUMANode: 1, LegacyIRQ: 36, MaxSpeed: 16, MaxWidth: 16, CurSpeed: 16, CurWidth: 16,
			MPSSupported: 512, MPS: 256, MRRS: 512, Port: 3, Config: true, ACS: &ACS{Cap: 0x005f, Ctl: 0x001d}}
		gpu.Switch = nil
	}

	hw := mlx5HWCounters(v.hwErrors)
	return &Host{
		Hostname: name,
		Kernel:   "6.8.0-90-generic",
		Processor: Processor{
			VendorID: "GenuineIntel", ModelName: "Intel(R) Xeon(R) Gold 6334 CPU @ 3.60GHz",
			Family: 6, Model: 106, Stepping: 6, Microcode: "0xd0003e7", CPUIDLevel: 27,
			Flags: emeraldFlags, Bugs: "spectre_v1 spectre_v2 spec_store_bypass swapgs mmio_stale_data eibrs_pbrsb gds bhi",
			BogoMIPS: "7200.00", AddressSizes: "46 bits physical, 57 bits virtual",
			Caches:       [4]Cache{{1, "Data", 48, 12}, {1, "Instruction", 32, 8}, {2, "Unified", 1280, 20}, {3, "Unified", 18432, 12}},
			CPUInfoCache: "18432 KB", ScalingDriver: "intel_pstate", AvailableGovernors: "performance powersave",
			MinFreqKHz: 800000, MaxFreqKHz: 3700000,
		},
		CPUs: Topology{Sockets: 2, CoresPerSocket: 8, ThreadsPerCore: 1, CoresPerL3: 8,
			Governor: "performance", FreqsKHz: []int{3600000, 3599871, 3600112}}.CPUs(),
		NICs: []NIC{{
			PCI: PCIDevice{BDF: roceNIC, Vendor: 0x15b3, Device: 0x101d, SubsystemVendor: 0x15b3, SubsystemDevice: 0x0042,
				Class: 0x020000, Driver: "mlx5_core", NUMANode: 0, LegacyIRQ: 37,
				MaxSpeed: 16, MaxWidth: 16, CurSpeed: 16, CurWidth: 16, MPSSupported: 512, MPS: 256, MRRS: mrrs, Config: true},
			Bridge:     rootPort,
			Switch:     []PCIDevice{usp, dsp("0000:32:00.0", 0)},
			Interfaces: []NetIface{nif},
			IRQs:       irqs,
			Hwmon:      &Hwmon{Index: 1, Name: "mlx5", Label: "sensor0", Input: 52000, Crit: 105000, Highest: 58000},
			RDMA: []RDMADevice{{Name: roceRDMA, FWVer: "22.39.1002", BoardID: "MT_0000000359", HCAType: "MT4125",
				NodeGUID: "b8ce:f603:00a1:073c",
				Ports: []RDMAPort{{Num: 1, State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "100 Gb/sec (4X EDR)",
					LinkLayer: "Ethernet", Netdev: roceIface, GIDs: gids,
					Counters: mlx5IBCounters(), HWCounters: maps.Clone(hw)}}}},
		}},
		GPUs:    []GPU{gpu},
		IOMMU:   iommu,
		Virtual: []NetIface{loopback()},
		IRQs: append(legacyIRQs(48),
			IRQ{Num: 120, MSIX: "0000:65:00.0", Vector: 0, Name: "nvme0q0", Counts: map[int]uint64{9: 57}, Affinity: one(9)},
			IRQ{Num: 121, MSIX: "0000:65:00.0", Vector: 1, Name: "nvme0q1", Counts: map[int]uint64{0: 30412}, Affinity: one(0)},
		),
		Sysctls:   TunedSysctls(),
		Processes: map[int]string{1: "systemd", 2: "kthreadd", 1021: "sshd", 1410: "nvidia-persiste"},
	}
}
