package hosttree

import (
	"fmt"
	"math"
	"slices"

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
		Connector: 0x0C, WavelengthNM: 1311, TempC: temp, VccV: 3.302, State: 3, MediaType: 0x02, MediaTech: 0x06, HostCode: 0x11, MediaCode: 0x1C,
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

func bytep(v byte) *byte { return &v }

// passiveDAC is a passive copper cable's module end (SFF-8636, flat
// memory): no lasers, no optical monitors, but a temperature sensor, as
// some vendors fit one. tech 0xA0 is byte 147's "copper cable,
// unequalized".
func passiveDAC(id, comp131, ext byte, pn, sn string, temp float64) Optic {
	return Optic{Vendor: "Mellanox", PN: pn, SN: sn, Rev: "A3", OUI: [3]byte{0x00, 0x02, 0xc9}, Date: "190611",
		Connector: 0x23, Identifier: id, Comp131: comp131, Compliance: ext, Tech: bytep(0xA0), FlatMem: true,
		TempC: temp, VccV: 3.297, Lanes: make([]OpticLane, 4)}
}

// CX6DxCopperDAC is a ConnectX-6 Dx with two copper cables whose module
// ends report a temperature: ens5f0np0 runs 40 Gb/s over a passive 40G
// QSFP+ DAC (40GBASE-CR4); ens5f1np1 holds the QSFP28 end of a 100G to
// 4x25G breakout DAC whose far ends are not cabled yet, so it has no
// link. Their "RX power" words read 0: copper carries no light.
func CX6DxCopperDAC() *Host {
	dac40 := passiveDAC(0x0D, 0x08, 0x00, "MC2210130-003", "MT1921VS04412", 31.2)
	breakout := passiveDAC(0x11, 0x80, 0x0B, "MCP7F00-A003R", "MT1937VS00218", 29.8)
	p0 := mlx5Port{speed: 40000, supported: mlx5Supported100, advertised: "40000baseCR4/Full", fecConf: "off", fecActive: "off",
		corrected: []uint64{0}, uncorr: []uint64{0}, rxFrames: 301_422_907, queues: 16, downEvents: 1, module: dac40.QSFP28()}.facts()
	p1 := mlx5Port{speed: 0, supported: mlx5Supported100, advertised: "100000baseCR4/Full", fecConf: "RS",
		queues: 16, downEvents: 0, module: breakout.QSFP28()}.facts()
	return xeonMLX5("heron", 0x101d, 16, 16, [2]int{40000, 0}, 16, [2]*ethtool.Facts{p0, p1})
}

// mlx5Supported400 with the 400G eight-lane modes a ConnectX-7 lists.
var mlx5Supported400x8 = append(slices.Clone(mlx5Supported400), "400000baseKR8/Full", "400000baseSR8/Full",
	"400000baseLR8_ER8_FR8/Full", "400000baseDR8/Full", "400000baseCR8/Full")

// qsfpddLR8 is a QSFP-DD 400GBASE-LR8 (CMIS 5.0): eight wavelengths of
// 50 Gb/s PAM4 on one fibre pair, fed by 400GAUI-8; it also advertises
// 2x200GBASE-LR4 (two data paths of four lanes). Configured as one
// 400GBASE-LR8 data path on all eight lanes.
func qsfpddLR8(sn string, rx ...float64) Optic {
	o := Optic{Vendor: "ACME OPTICS", PN: "QDD-400G-LR8", SN: sn, Rev: "02", OUI: [3]byte{0x00, 0x11, 0x22}, Date: "230412",
		Connector: 0x07, WavelengthNM: 1295.56, TempC: 47.5, VccV: 3.296, State: 3, MediaType: 0x02, MediaTech: 0x04,
		Apps:  []OpticApp{{0x11, 0x1B, 8, 8, 0x01, 0x01}, {0x0F, 0x19, 4, 4, 0x11, 0x11}},
		Paths: []OpticPath{{AppSel: 1, HostLanes: []int{1, 2, 3, 4, 5, 6, 7, 8}}},
		Thresholds: OpticThresholds{Temp: Limits{75, -5, 70, 0}, Vcc: Limits{3.63, 2.97, 3.465, 3.135},
			Bias: Limits{110, 15, 100, 20}, TX: Limits{dbmToMW(6.3), dbmToMW(-7.4), dbmToMW(5.3), dbmToMW(-6.4)},
			RX: Limits{dbmToMW(6.3), dbmToMW(-13.5), dbmToMW(5.3), dbmToMW(-12.5)}}}
	for i, r := range rx {
		o.Lanes = append(o.Lanes, OpticLane{RXmW: r, TXmW: 1.05 + 0.02*float64(i), BiasMA: 52 + 0.7*float64(i), RXLOS: r == 0})
	}
	return o
}

// CX7QSFPDD8Lane is a ConnectX-7 whose ports hold eight-lane and
// four-lane CMIS modules, both down: ens5f0np0 a QSFP-DD 400GBASE-LR8
// whose media lane 7 receives no light (one wavelength dead at the peer
// or in a mux), ens5f1np1 a QSFP-DD 400GBASE-DR4 whose lane 3 laser is
// off (bias 0 mA, the module's own low-bias alarm set) while the peer's
// light arrives on all four lanes.
func CX7QSFPDD8Lane() *Host {
	lr8 := qsfpddLR8("AC2304000417", 0.62, 0.58, 0.66, 0.61, 0.59, 0.64, 0, 0.60)
	dr4 := qsfpdd400("AC2201000431", 45.1)
	dr4.Paths = []OpticPath{{AppSel: 1, HostLanes: []int{1, 2, 3, 4}}}
	dr4.Lanes[2].TXmW, dr4.Lanes[2].BiasMA = 0, 0
	p0 := mlx5Port{speed: 0, supported: mlx5Supported400x8, advertised: "400000baseLR8_ER8_FR8/Full", fecConf: "RS",
		queues: 32, downEvents: 4, module: lr8.CMIS(0x18)}.facts()
	p1 := mlx5Port{speed: 0, supported: mlx5Supported400, advertised: "400000baseDR4/Full", fecConf: "RS",
		queues: 32, downEvents: 2, module: dr4.CMIS(0x18)}.facts()
	return xeonMLX5("kite", 0x1021, 32, 16, [2]int{0, 0}, 32, [2]*ethtool.Facts{p0, p1})
}

// CX5FECKernelNames is a ConnectX-5 host whose live facts were written by
// another linerate version (or by hand): linkmodes.json lists the FEC
// bits among the link modes under the kernel's names ("None", "RS",
// "BASER"), with no *_fec lists of their own. ens5f0np0 has no link: its
// FEC was turned off while the switch port advertises RS. ens5f1np1 has
// no link either, and its CWDM4 module receives no light on any lane.
func CX5FECKernelNames() *Host {
	ok := finisarCWDM4("X7TB22C", 0.681, 0.702, 0.655, 0.744)
	dark := finisarCWDM4("X7TB22K", 0, 0, 0, 0)
	for i := range dark.Lanes {
		dark.Lanes[i].RXLOS = true
	}
	facts := func(o Optic, partner []string) *ethtool.Facts {
		f := mlx5Port{speed: 0, supported: mlx5Supported100, advertised: "100000baseLR4_ER4/Full", fecConf: "off",
			queues: 16, downEvents: 3, module: o.QSFP28()}.facts()
		lm := f.LinkModes
		lm.Supported = append(slices.Clone(lm.Supported), "None", "RS", "BASER")
		lm.Advertised = append(lm.Advertised, "None")
		lm.PartnerAdvertised = partner
		lm.SupportedFEC, lm.AdvertisedFEC, lm.PartnerFEC = []string{}, []string{}, []string{}
		f.LinkState.ExtState, f.LinkState.ExtSubstate = "", ""
		return f
	}
	p0 := facts(ok, []string{"100000baseLR4_ER4/Full", "RS"})
	p1 := facts(dark, []string{})
	h := xeonMLX5("plover", 0x1017, 8, 16, [2]int{0, 0}, 16, [2]*ethtool.Facts{p0, p1})
	h.NICs[0].Hwmon.Input = 52000
	return h
}

// berPort is a 400G ConnectX-7 port linked with RS-FEC whose PHY counted
// bits for three days at line rate, laneBER the pre-FEC BER of each of
// its four FEC lanes (corrected bits, per lane and in total, and mlx5's
// rx_corrected_bits_phy and rx_bits_phy follow from them), with the FEC
// histogram of Linux 6.18 that errors at that BER give.
func berPort(sn string, laneBER [4]float64, uncorr uint64) *ethtool.Facts {
	const seconds = 3 * 24 * 3600
	bits := uint64(400e9 * seconds)
	perLane := bits / 4
	corrected := []uint64{0}
	for _, b := range laneBER {
		c := uint64(b * float64(perLane))
		corrected = append(corrected, c)
		corrected[0] += c
	}
	hist := histBins(bits/5440, float64(corrected[0])/float64(bits), laneBER, uncorr)
	// Corrected blocks are the codewords with 1 to 14 errored symbols,
	// uncorrectable ones those of the last bin, per lane and in total.
	blocks, lost := make([]uint64, 5), make([]uint64, 5)
	for _, b := range hist {
		for l, v := range b.PerLane {
			if b.BinLow == 15 {
				lost[l+1] += v
				lost[0] += v
			} else if b.BinLow > 0 {
				blocks[l+1] += v
				blocks[0] += v
			}
		}
	}
	o := qsfpdd400(sn, 51.5)
	o.Paths = []OpticPath{{AppSel: 1, HostLanes: []int{1, 2, 3, 4}}}
	f := mlx5Port{speed: 400000, supported: mlx5Supported400, advertised: "400000baseDR4/Full", fecConf: "RS", fecActive: "RS",
		corrected: blocks, uncorr: lost, rxFrames: 9_211_004_532, fcs: uncorr,
		queues: 32, downEvents: 1, module: o.CMIS(0x18)}.facts()
	f.FEC.Stats.CorrectedBits = corrected
	f.FEC.Hist = hist
	f.Stats.Driver[ethtool.DriverCorrectedBits] = corrected[0]
	f.Stats.Driver[ethtool.DriverReceivedBits] = bits
	f.Stats.Driver[ethtool.DriverPCSSymbolErrors] = uncorr * 4
	return f
}

// histBins returns the FEC histogram of a port whose errors are random
// at its pre-FEC BER: over codewords of 5440 bits (RS(544,514), 10-bit
// symbols) a codeword holds k errored symbols with the Poisson
// probability of mean BER × 5440, binned as IEEE 802.3ck bins them (0,
// 1, 2, 3, 4-5, 6-8, 9-11, 12-14, and 15 or more, which RS(544,514)
// cannot correct: the uncorrectable blocks, bursts a Poisson model does
// not give). A bin's errored codewords are split over the four FEC lanes
// by each lane's share of the errors, the clean ones evenly.
func histBins(codewords uint64, ber float64, laneBER [4]float64, uncorr uint64) []ethtool.FECHistBin {
	lambda := ber * 5440
	p := make([]float64, 15)
	p[0] = math.Exp(-lambda)
	for k := 1; k < len(p); k++ {
		p[k] = p[k-1] * lambda / float64(k)
	}
	bounds := [][2]uint32{{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 5}, {6, 8}, {9, 11}, {12, 14}}
	var sum float64
	for _, b := range laneBER {
		sum += b
	}
	var out []ethtool.FECHistBin
	split := func(b ethtool.FECHistBin, even bool) ethtool.FECHistBin {
		var given uint64
		for l, w := range laneBER {
			x := b.Val / 4
			if !even {
				x = uint64(float64(b.Val) * w / sum)
			}
			if l == 3 {
				x = b.Val - given
			}
			given += x
			b.PerLane = append(b.PerLane, x)
		}
		return b
	}
	for i, bd := range bounds {
		var q float64
		for k := bd[0]; k <= bd[1]; k++ {
			q += p[k]
		}
		out = append(out, split(ethtool.FECHistBin{BinLow: bd[0], BinHigh: bd[1], Val: uint64(math.Round(q * float64(codewords)))}, i == 0))
	}
	// The uncorrectable codewords: bursts on the worst lane.
	worst := 0
	for l, b := range laneBER {
		if b > laneBER[worst] {
			worst = l
		}
	}
	last := ethtool.FECHistBin{BinLow: 15, BinHigh: 15, Val: uncorr, PerLane: make([]uint64, 4)}
	last.PerLane[worst] = uncorr
	return append(out, last)
}

// CX7PreFECBER is a ConnectX-7 host on Linux 6.18 with two 400G ports
// linked with RS(544,514): ens5f0np0 at a pre-FEC BER of about 3.1e-5
// spread over its four FEC lanes (working, but on the FEC's margin);
// ens5f1np1 at 1.6e-4, FEC lane 1 at 5.5e-4 (past what the FEC corrects:
// 12 uncorrectable blocks, 12 FCS errors), within a factor of two of the
// ~2.4e-4 RS-FEC's limit.
func CX7PreFECBER() *Host {
	p0 := berPort("AC2301000911", [4]float64{3.0e-5, 3.3e-5, 2.9e-5, 3.2e-5}, 0)
	p1 := berPort("AC2301000952", [4]float64{3.0e-5, 5.5e-4, 3.2e-5, 2.8e-5}, 12)
	h := xeonMLX5("merlin", 0x1021, 32, 16, [2]int{400000, 400000}, 32, [2]*ethtool.Facts{p0, p1})
	h.Kernel = "6.18.2-061802-generic"
	return h
}
