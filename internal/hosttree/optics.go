package hosttree

import (
	"fmt"

	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/sff"
)

// Hosts with live ethtool facts: link modes, FEC, module memory and NIC
// counters, as `linerate snapshot` records them. Module pages are encoded
// by Optic from the specifications; link modes, FEC and counters follow
// what each driver reports (mlx5 fills every standard group and FEC
// counters per lane, cxgb4 none of them; cxgb4 answers EOPNOTSUPP for an
// empty cage).

func u32p(v uint32) *uint32 { return &v }
func u64p(v uint64) *uint64 { return &v }
func intp(v int) *int       { return &v }
func boolp(v bool) *bool    { return &v }
func strp(v string) *string { return &v }

// lanes4 returns four lanes with RX power rx (mW), TX power 1 mW (0 dBm)
// and bias 38 mA, varied a little lane to lane as real modules are.
func lanes4(rx ...float64) []OpticLane {
	out := make([]OpticLane, len(rx))
	for i, r := range rx {
		out[i] = OpticLane{RXmW: r, TXmW: 0.95 + 0.03*float64(i), BiasMA: 37.5 + 0.6*float64(i)}
	}
	return out
}

// finisarCWDM4 is the Chelsio T6 host's module: a Finisar FTLC1157RGPL6FB1 100G
// CWDM4 Lite QSFP28, bought used.
func finisarCWDM4(sn string, rx ...float64) Optic {
	return Optic{Vendor: "FINISAR CORP.", PN: "FTLC1157RGPL6FB1", SN: sn, Rev: "A0", OUI: [3]byte{0x00, 0x90, 0x65},
		Date: "190312", Connector: 0x07, Compliance: 0x06, WavelengthNM: 1311, TempC: 41.3, VccV: 3.283,
		Lanes: lanes4(rx...), Thresholds: LRThresholds()}
}

// cxgb4Counters are the T6's `ethtool -S` port counters (names as
// cxgb4_ethtool.c has them, trimmed of their padding).
func cxgb4Counters(rxFrames, fcs uint64) map[string]uint64 {
	m := map[string]uint64{
		"tx_octets_ok": rxFrames * 8950, "tx_frames_ok": rxFrames, "tx_bcast_frames": 12, "tx_mcast_frames": 341,
		"tx_ucast_frames": rxFrames - 353, "tx_error_frames": 0, "tx_frames_dropped": 0, "tx_pause_frames": 0,
		"rx_octets_ok": rxFrames * 8950, "rx_frames_ok": rxFrames, "rx_bcast_frames": 40, "rx_mcast_frames": 507,
		"rx_ucast_frames": rxFrames - 547, "rx_too_long": 0, "rx_jabber_errors": 0, "rx_fcs_errors": fcs,
		"rx_length_errors": 0, "rx_symbol_errors": 0, "rx_runt_frames": 0, "rx_pause_frames": 0,
		"rx_frames_too_long": 0, "tso": 5130220, "tx_csum_offload": rxFrames, "rx_csum_good": rxFrames,
		"vlan_extractions": 0, "vlan_insertions": 0, "gro_packets": 220311, "gro_merged": 1876012,
		"db_drop": 0, "db_full": 0, "db_empty": 0, "write_coal_success": 0, "write_coal_fail": 0,
		"octets_ok": 0, "frames_ok": 0, "frames_dropped": 0, "frames_truncated": 0,
	}
	for bg := range 4 {
		m[fmt.Sprintf("rx_bg%d_frames_dropped", bg)] = 0
		m[fmt.Sprintf("rx_bg%d_frames_trunc", bg)] = 0
	}
	return m
}

// t6Supported are the link modes cxgb4 lists for a T62100 port with a
// CWDM4 module (the T6 host's `ethtool ens5f4`).
var t6Supported = []string{"1000baseT/Full", "10000baseKR/Full", "40000baseSR4/Full", "25000baseCR/Full", "50000baseCR2/Full", "100000baseCR4/Full"}

// t6Port returns a cxgb4 port's facts: linked at 100 Gb/s or not, with
// module pages or the module read's error.
func t6Port(up bool, module sff.Pages, moduleErr string, fcs uint64) *ethtool.Facts {
	lm := &ethtool.LinkModes{Duplex: "full", Supported: t6Supported, Advertised: []string{"100000baseCR4/Full"},
		PartnerAdvertised: []string{}, SupportedFEC: []string{"RS", "BASER"}, AdvertisedFEC: []string{"RS"}, PartnerFEC: []string{}, Source: "netlink"}
	fec := &ethtool.FEC{Configured: []string{"RS"}}
	frames := uint64(0)
	if up {
		lm.SpeedMbps = intp(100000)
		fec.Active = strp("RS")
		frames = 184_300_512
	} else {
		lm.Duplex = "unknown"
	}
	f := &ethtool.Facts{
		LinkModes: lm, LinkState: &ethtool.LinkState{Link: boolp(up)}, FEC: fec,
		Stats:    &ethtool.Stats{Driver: cxgb4Counters(frames, fcs), Pause: &ethtool.Pause{Autoneg: boolp(false), RX: boolp(true), TX: boolp(true)}},
		Channels: &ethtool.Channels{CombinedMax: u32p(32), Combined: u32p(16)},
		Rings:    &ethtool.Rings{RXMax: u32p(16384), RXMiniMax: u32p(16384), RXJumboMax: u32p(16384), TXMax: u32p(16384), RX: u32p(1024), RXMini: u32p(1024), RXJumbo: u32p(1024), TX: u32p(1024)},
		Module:   module, ModuleError: moduleErr,
		NotRead: map[string]string{
			ethtool.FactStandardStats: "not reported by the driver (no eth-mac, eth-phy, eth-ctrl or rmon counters)",
		},
	}
	if moduleErr != "" {
		f.Module = nil
		if moduleErr == "EOPNOTSUPP" {
			f.NotRead[ethtool.FactModule] = "no module data: the driver reads no module EEPROM (EOPNOTSUPP)"
		} else {
			f.NotRead[ethtool.FactModule] = "the module EEPROM cannot be read: " + moduleErr
		}
	}
	return f
}

// t6Optics is Xeon6530T6Healthy with ethtool facts on both ports; port 0
// up or down as given, port 1 an empty cage.
func t6Optics(name string, port0Up bool, port0 *ethtool.Facts) *Host {
	h := Xeon6530T6Healthy()
	h.Hostname = name
	ifs := h.NICs[0].Interfaces
	if !port0Up {
		p := noCarrier(ifs[0].Name, ifs[0].Address, ifs[0].Ifindex, 9000, 16, "")
		ifs[0] = p
	}
	ifs[0].Ethtool = port0
	ifs[1].Ethtool = t6Port(false, nil, "EOPNOTSUPP", 0)
	return h
}

// T6CWDM4Healthy is baltazar, the Chelsio T6 host, with a working Finisar CWDM4
// module in ens5f4: four lanes between −1.9 and −1.2 dBm, RS-FEC.
func T6CWDM4Healthy() *Host {
	m := finisarCWDM4("X7TA03K", 0.646, 0.705, 0.672, 0.759).QSFP28()
	return t6Optics("baltazar", true, t6Port(true, m, "", 0))
}

// T6CWDM4Unreadable is the Chelsio T6 host's dead module: ens5f4 holds a CWDM4 whose
// EEPROM read fails with EIO, and the port never links.
func T6CWDM4Unreadable() *Host {
	return t6Optics("baltazar", false, t6Port(false, nil, "EIO", 0))
}

// T6CWDM4DarkLane has a CWDM4 whose lane 3 receives no light (RX LOS set)
// while lanes 1, 2 and 4 do: the port stays down.
func T6CWDM4DarkLane() *Host {
	o := finisarCWDM4("X7TA09Q", 0.646, 0.705, 0, 0.759)
	o.Lanes[2].RXLOS = true
	return t6Optics("baltazar", false, t6Port(false, o.QSFP28(), "", 0))
}

// mlx5Counters are a ConnectX port's `ethtool -S` counters: the port
// counters that explain drops (mlx5 counters.rst) and per-queue ones.
func mlx5Counters(queues int, rxPackets, outOfBuffer, crc, pauseRX uint64, downEvents uint32) map[string]uint64 {
	m := map[string]uint64{
		"rx_packets": rxPackets, "rx_bytes": rxPackets * 8964, "tx_packets": rxPackets / 2, "tx_bytes": rxPackets / 2 * 66,
		"rx_out_of_buffer": outOfBuffer, "rx_discards_phy": 0, "rx_buffer_passed_thres_phy": 0,
		"rx_crc_errors_phy": crc, "rx_symbol_err_phy": 0, "rx_pcs_symbol_err_phy": 0, "rx_corrected_bits_phy": 0,
		"rx_bits_phy": rxPackets * 9000 * 8, "tx_pause_ctrl_phy": 0, "rx_pause_ctrl_phy": pauseRX,
		"link_down_events_phy": uint64(downEvents), "rx_oversize_pkts_phy": 0, "rx_out_of_range_len_phy": 0,
		"tx_queue_stopped": 0, "tx_queue_dropped": 0, "rx_steer_missed_packets": 0,
		"module_unplug": 0, "module_bus_stuck": 0, "module_high_temp": 0, "module_bad_shorted": 0,
		"rx_pci_signal_integrity": 0, "tx_pci_signal_integrity": 0, "outbound_pci_stalled_rd": 0, "outbound_pci_stalled_wr": 0,
	}
	for q := range queues {
		for _, k := range []string{"packets", "bytes", "csum_complete", "csum_unnecessary", "xdp_drop", "wqe_err",
			"buff_alloc_err", "cqe_compress_blks", "congst_umr", "arfs_err", "recover"} {
			m[fmt.Sprintf("rx%d_%s", q, k)] = 0
		}
		for _, k := range []string{"packets", "bytes", "tso_packets", "nop", "stopped", "dropped", "wake", "cqe_err", "recover"} {
			m[fmt.Sprintf("tx%d_%s", q, k)] = 0
		}
		m[fmt.Sprintf("rx%d_packets", q)] = rxPackets / uint64(queues)
	}
	return m
}

// mlx5Standard returns the standard groups mlx5 fills.
func mlx5Standard(st *ethtool.Stats, rxFrames, fcs uint64, pauseTX, pauseRX uint64) {
	st.EthPHY = map[string]uint64{"SymbolErrorDuringCarrier": 0}
	st.EthMAC = map[string]uint64{"FramesTransmittedOK": rxFrames / 2, "FramesReceivedOK": rxFrames, "FrameCheckSequenceErrors": fcs,
		"OctetsTransmittedOK": rxFrames / 2 * 66, "OctetsReceivedOK": rxFrames * 8964, "MulticastFramesXmittedOK": 120,
		"BroadcastFramesXmittedOK": 4, "MulticastFramesReceivedOK": 211, "BroadcastFramesReceivedOK": 9,
		"InRangeLengthErrors": 0, "OutOfRangeLengthField": 0, "FrameTooLongErrors": 0}
	st.EthCtrl = map[string]uint64{"MACControlFramesTransmitted": pauseTX, "MACControlFramesReceived": pauseRX, "UnsupportedOpcodesReceived": 0}
	st.RMON = map[string]uint64{"etherStatsUndersizePkts": 0, "etherStatsOversizePkts": 0, "etherStatsFragments": 0, "etherStatsJabbers": 0}
	st.Pause = &ethtool.Pause{Autoneg: boolp(false), RX: boolp(true), TX: boolp(true), TXFrames: u64p(pauseTX), RXFrames: u64p(pauseRX)}
}

// mlx5Supported100 are the link modes a ConnectX-6 Dx lists with a 100G
// module.
var mlx5Supported100 = []string{"1000baseKX/Full", "10000baseKR/Full", "40000baseKR4/Full", "40000baseCR4/Full",
	"40000baseSR4/Full", "40000baseLR4/Full", "25000baseCR/Full", "25000baseKR/Full", "25000baseSR/Full",
	"50000baseCR2/Full", "50000baseKR2/Full", "100000baseKR4/Full", "100000baseSR4/Full", "100000baseCR4/Full",
	"100000baseLR4_ER4/Full"}

// mlx5Port is a ConnectX port's facts.
type mlx5Port struct {
	speed                 int // Mb/s, 0: no link
	supported             []string
	advertised            string
	fecConf               string
	fecActive             string
	corrected, uncorr     []uint64
	rxFrames, outOfBuf    uint64
	fcs, pauseTX, pauseRX uint64
	queues, ringRX        uint32
	extState, extSub      string
	downEvents            uint32
	module                sff.Pages
}

func (p mlx5Port) facts() *ethtool.Facts {
	lm := &ethtool.LinkModes{Duplex: "full", Supported: p.supported, Advertised: []string{p.advertised},
		PartnerAdvertised: []string{}, SupportedFEC: []string{"None", "RS", "BASER"}, AdvertisedFEC: []string{"RS"},
		PartnerFEC: []string{}, Source: "netlink"}
	ls := &ethtool.LinkState{Link: boolp(p.speed > 0), DownEvents: u32p(p.downEvents)}
	fec := &ethtool.FEC{Configured: []string{p.fecConf}}
	if p.speed > 0 {
		lm.SpeedMbps = intp(p.speed)
		lm.PartnerAdvertised = []string{p.advertised}
		lm.PartnerFEC = []string{"RS"}
		fec.Active = strp(p.fecActive)
		fec.Stats = &ethtool.FECStats{CorrectedBlocks: p.corrected, UncorrectableBlocks: p.uncorr}
	} else {
		lm.Duplex = "unknown"
		ls.ExtState, ls.ExtSubstate = p.extState, p.extSub
	}
	st := &ethtool.Stats{Driver: mlx5Counters(int(p.queues), p.rxFrames, p.outOfBuf, p.fcs, p.pauseRX, p.downEvents)}
	mlx5Standard(st, p.rxFrames, p.fcs, p.pauseTX, p.pauseRX)
	ring := p.ringRX
	if ring == 0 {
		ring = 1024
	}
	return &ethtool.Facts{LinkModes: lm, LinkState: ls, FEC: fec, Stats: st,
		Channels: &ethtool.Channels{RXMax: u32p(1), TXMax: u32p(1), CombinedMax: u32p(63), Combined: u32p(p.queues)},
		Rings:    &ethtool.Rings{RXMax: u32p(8192), TXMax: u32p(8192), RX: u32p(ring), TX: u32p(1024), CQESize: u32p(64)},
		Module:   p.module, NotRead: map[string]string{}}
}

// xeonMLX5 is the tuned Xeon of Xeon6530T6Healthy with a dual-port
// ConnectX card on node 0 instead of the T6: device ID dev, PCIe at gts
// GT/s × width (the card's maximum), queue IRQs one per CPU of node 0, a
// 56 °C sensor.
func xeonMLX5(hostname string, dev uint16, gts float64, width int, speeds [2]int, queues int, eth [2]*ethtool.Facts) *Host {
	h := Xeon6530T6Healthy()
	h.Hostname = hostname
	bridge := PCIDevice{BDF: "0000:16:02.0", Vendor: 0x8086, Device: 0x352a, Revision: 0x04, Class: 0x060400,
		NUMANode: 0, LegacyIRQ: 30, MaxSpeed: 32, MaxWidth: 16, CurSpeed: gts, CurWidth: width,
		MPSSupported: 512, MPS: 256, MRRS: 512, Port: 2, Config: true}
	h.NICs = nil
	names := [2]string{"ens5f0np0", "ens5f1np1"}
	for p := range 2 {
		bdf := fmt.Sprintf("0000:17:00.%d", p)
		mac := fmt.Sprintf("b8:ce:f6:4c:12:%02x", 0x3a+p)
		var nif NetIface
		if speeds[p] > 0 {
			nif = upIface(names[p], mac, 4+p, 9000, speeds[p], queues, fmt.Sprintf("p%d", p))
		} else {
			nif = noCarrier(names[p], mac, 4+p, 9000, queues, fmt.Sprintf("p%d", p))
		}
		nif.Ethtool = eth[p]
		irqs := []IRQ{{Num: 300 + 100*p, Vector: 0, Name: "mlx5_async0@pci:" + bdf, Counts: map[int]uint64{0: 811}, Affinity: one(0)}}
		for i := range queues {
			cpu := 1 + (i+p*queues)%31
			irqs = append(irqs, IRQ{Num: 301 + 100*p + i, Vector: 1 + i, Name: fmt.Sprintf("mlx5_comp%d@pci:%s", i, bdf),
				Counts: map[int]uint64{cpu: uint64(180000 + 977*i)}, Affinity: one(cpu), Hint: one(cpu)})
		}
		nic := NIC{
			PCI: PCIDevice{BDF: bdf, Vendor: 0x15b3, Device: dev, SubsystemVendor: 0x15b3, SubsystemDevice: 0x0016,
				Class: 0x020000, Driver: "mlx5_core", NUMANode: 0, LegacyIRQ: 16 + p,
				MaxSpeed: gts, MaxWidth: width, CurSpeed: gts, CurWidth: width, MPSSupported: 512, MPS: 256, MRRS: 4096,
				MultiFunction: true, Config: true},
			Bridge: bridge, Interfaces: []NetIface{nif}, IRQs: irqs,
		}
		if p == 0 {
			nic.Hwmon = &Hwmon{Index: 2, Name: "mlx5", Label: "sensor0", Input: 56000, Crit: 105000, Highest: 61000}
		}
		h.NICs = append(h.NICs, nic)
	}
	return h
}

// CX6DxLowRX has two 100G CWDM4 ports on a ConnectX-6 Dx: ens5f0np0 links
// with lane 2 weak (−11.6 dBm, under the module's −10.5 dBm warning) and
// its FEC losing blocks on that lane; ens5f1np1 stays down because
// someone turned its FEC off while the switch port insists on RS.
func CX6DxLowRX() *Host {
	weak := finisarCWDM4("X7UB11A", 0.646, 0.0692, 0.672, 0.759)
	weak.Vendor, weak.PN, weak.OUI = "Mellanox", "MMA1L30-CM", [3]byte{0x00, 0x02, 0xc9}
	ok := finisarCWDM4("X7UB11F", 0.701, 0.688, 0.652, 0.733)
	ok.Vendor, ok.PN, ok.OUI = "Mellanox", "MMA1L30-CM", [3]byte{0x00, 0x02, 0xc9}
	p0 := mlx5Port{speed: 100000, supported: mlx5Supported100, advertised: "100000baseLR4_ER4/Full",
		fecConf: "RS", fecActive: "RS", corrected: []uint64{2_114_377, 3_092, 2_104_911, 3_310, 3_064},
		uncorr: []uint64{17, 0, 17, 0, 0}, rxFrames: 912_004_117, fcs: 17, queues: 16, downEvents: 1,
		module: weak.QSFP28()}.facts()
	p1 := mlx5Port{speed: 0, supported: mlx5Supported100, advertised: "100000baseLR4_ER4/Full", fecConf: "off",
		queues: 16, downEvents: 3, extState: "Logical mismatch", extSub: "RS FEC is not locked", module: ok.QSFP28()}.facts()
	return xeonMLX5("kestrel", 0x101d, 16, 16, [2]int{100000, 0}, 16, [2]*ethtool.Facts{p0, p1})
}

// acmeSFP28 is a 25GBASE-SR SFP28.
func acmeSFP28(sn string, ext bool, rx float64) Optic {
	return Optic{Vendor: "FS", PN: "SFP28-25GSR-85", SN: sn, Rev: "A", OUI: [3]byte{0x64, 0x9d, 0x99}, Date: "210705",
		Connector: 0x07, Compliance: 0x02, WavelengthNM: 850, TempC: 36.5, VccV: 3.291, ExternalCal: ext,
		Lanes: []OpticLane{{RXmW: rx, TXmW: 0.74, BiasMA: 7.2}}, Thresholds: SRThresholds()}
}

// mlx5Supported25 are the link modes of a ConnectX-4 Lx with a 25G SR module.
var mlx5Supported25 = []string{"1000baseKX/Full", "10000baseKR/Full", "25000baseCR/Full", "25000baseKR/Full", "25000baseSR/Full"}

// CX4LxSFP28 is a ConnectX-4 Lx with two 25GBASE-SR SFP28 modules:
// ens5f0np0 has an internally calibrated one and runs clean; ens5f1np1 an
// older externally calibrated one, with FEC turned off, a 512-descriptor
// RX ring and 184,211 frames dropped for lack of RX buffers.
func CX4LxSFP28() *Host {
	p0 := mlx5Port{speed: 25000, supported: mlx5Supported25, advertised: "25000baseSR/Full", fecConf: "RS", fecActive: "RS",
		corrected: []uint64{1_204}, uncorr: []uint64{0}, rxFrames: 512_330_019, queues: 8, downEvents: 1,
		module: acmeSFP28("F2107050001", false, 0.55).SFP28()}.facts()
	p1 := mlx5Port{speed: 25000, supported: mlx5Supported25, advertised: "25000baseSR/Full", fecConf: "off", fecActive: "off",
		rxFrames: 488_102_774, outOfBuf: 184_211, queues: 8, ringRX: 512, downEvents: 1,
		module: acmeSFP28("F1811220417", true, 0.49).SFP28()}.facts()
	return xeonMLX5("wren", 0x1015, 8, 8, [2]int{25000, 25000}, 8, [2]*ethtool.Facts{p0, p1})
}

// qsfpdd400 is a QSFP-DD 400GBASE-DR4 (CMIS 5.0, TX bias reported ×2).
func qsfpdd400(sn string, temp float64) Optic {
	return Optic{Vendor: "ACME OPTICS", PN: "QDD-400G-DR4", SN: sn, Rev: "01", OUI: [3]byte{0x00, 0x11, 0x22}, Date: "220115",
		Connector: 0x0C, WavelengthNM: 1311, TempC: temp, VccV: 3.302, State: 3, MediaType: 0x02, HostCode: 0x11, MediaCode: 0x1C,
		BiasScale: 2, Lanes: []OpticLane{{RXmW: 1.05, TXmW: 1.2, BiasMA: 61}, {RXmW: 0.98, TXmW: 1.18, BiasMA: 60.4},
			{RXmW: 1.11, TXmW: 1.22, BiasMA: 62}, {RXmW: 1.02, TXmW: 1.19, BiasMA: 60.8}},
		Thresholds: OpticThresholds{Temp: Limits{75, -5, 70, 0}, Vcc: Limits{3.63, 2.97, 3.465, 3.135},
			Bias: Limits{140, 20, 130, 30}, TX: Limits{dbmToMW(6), dbmToMW(-6.5), dbmToMW(5), dbmToMW(-5.5)},
			RX: Limits{dbmToMW(6), dbmToMW(-8.9), dbmToMW(5), dbmToMW(-7.9)}}}
}

// mlx5Supported400 are the link modes of a ConnectX-7 with a 400G DR4 module.
var mlx5Supported400 = []string{"100000baseKR/Full", "100000baseSR/Full", "100000baseCR/Full", "100000baseDR/Full",
	"200000baseKR2/Full", "200000baseSR2/Full", "200000baseCR2/Full", "200000baseDR2/Full",
	"400000baseKR4/Full", "400000baseSR4/Full", "400000baseCR4/Full", "400000baseDR4/Full"}

// CX7QSFPDD is a ConnectX-7 with two QSFP-DD 400GBASE-DR4 modules (CMIS,
// page 11h): ens5f0np0 linked at only 200 Gb/s, its module at 72 °C
// (warning 70 °C) and the switch sending pause frames; ens5f1np1 down,
// its module reporting a TX fault on lane 2.
func CX7QSFPDD() *Host {
	hot := qsfpdd400("AC2201000123", 72.2)
	faulty := qsfpdd400("AC2201000188", 44.0)
	faulty.Lanes[1].TXFault = true
	faulty.Lanes[1].TXmW, faulty.Lanes[1].BiasMA = 0, 0
	p0 := mlx5Port{speed: 200000, supported: mlx5Supported400, advertised: "200000baseDR2/Full", fecConf: "RS", fecActive: "RS",
		corrected: []uint64{88_201, 22_004, 21_950, 22_131, 22_116}, uncorr: []uint64{0, 0, 0, 0, 0},
		rxFrames: 2_004_118_223, pauseRX: 52_311, queues: 32, downEvents: 1, module: hot.CMIS(0x18)}.facts()
	p0.LinkModes.Lanes = intp(2)
	p1 := mlx5Port{speed: 0, supported: mlx5Supported400, advertised: "400000baseDR4/Full", fecConf: "RS",
		queues: 32, downEvents: 2, module: faulty.CMIS(0x18)}.facts()
	return xeonMLX5("osprey", 0x1021, 32, 16, [2]int{200000, 0}, 32, [2]*ethtool.Facts{p0, p1})
}

// largeFacts are the live facts of one of Large's 400G ports: a healthy
// QSFP112 400GBASE-DR4, RS-FEC with per-lane counters, every standard
// group and mlx5's per-queue counters for 64 queues.
func largeFacts(k int) *ethtool.Facts {
	o := qsfpdd400(fmt.Sprintf("AC23%08d", 4100+k), 48+float64(k))
	return mlx5Port{speed: 400000, supported: mlx5Supported400, advertised: "400000baseDR4/Full", fecConf: "RS", fecActive: "RS",
		corrected: []uint64{8_021, 2_004, 1_996, 2_011, 2_010}, uncorr: []uint64{0, 0, 0, 0, 0},
		rxFrames: 9_004_118_223, queues: 64, ringRX: 8192, downEvents: 1, module: o.CMIS(0x1E)}.facts()
}
