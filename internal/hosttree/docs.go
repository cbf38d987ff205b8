package hosttree

// HOST.md texts of the committed trees. Severities and IDs are those of
// the finding table in docs/architecture.md.

const docRyzen9900X = `# ryzen-9900x-cx5-x4

Models the 100 GbE home lab whose ConnectX-5 trained at x4 (write-up "100 GbE Lab", host crow, Ubuntu kernel 6.8.0-51): Ryzen 9 9900X (12 CPUs, SMT off, L3 domains 0-5 and 6-11), dual-port ConnectX-5 MCX516A-CCAT (15b3:1017) at 0000:01:00.0/.1 behind root port 0000:00:01.1 (32 GT/s x16).
What is wrong: the x16 card trained at 8 GT/s **x4** (card not seated; ~28 Gb/s usable), enp1s0f1np1 and its RoCE port are down, the NIC reads 74 °C, sysctls are Ubuntu defaults, governor powersave, and irqbalance (pid 812) has spread the NIC IRQs over both CCDs.
IRQs 98, 99, 101, 102 and 109-119 are its owner's /proc/interrupts lines verbatim; smp_affinity_list is the CPU with the large count.

A correct doctor must raise:
- pcie.link_downgraded (critical) and pcie.bandwidth_below_line_rate (critical) on enp1s0f0np0 (8.0 GT/s x4 of x16)
- link.down on enp1s0f1np1, saying that its RoCE port rocep1s0f1/1 is down with it (one finding: a RoCE port follows its netdev), with a fix naming enp1s0f0np0 as the port in use
- nic.temperature_high (warning: 74 °C, crit 105 °C), sysctl.socket_buffers_small, cpu.governor_not_performance
- irq.spans_l3_domains (IRQs affine to 3 and 7-11, served on 0-11), irqbalance.running (info)
- pcie.mrrs_small (info: MRRS 512 on a 100 Gb/s RDMA NIC) on enp1s0f0np0

It must not raise: roce.* (RoCE v2 GIDs, active MTU 4096; the tree holds no DCB or ECN facts, which doctor notes as not read), mtu.not_jumbo (MTU 9000; the down port's speed is unknown), queues.too_few (12 queues), irq.remote_numa (one node), rdma.port_not_active (folded into link.down).
`

const docRyzen7950X = `# ryzen-7950x-cx5-x8-roce

Models the ConnectX-5 RoCE baseline report ("ConnectX-5 Performance Baseline", host mark1nvidia, Ubuntu kernel 6.8.0-90): Ryzen 9 7950X (32 CPUs, SMT2, L3 domains 0-7,16-23 and 8-15,24-31), single-port ConnectX-5 MCX515A-CCAT (15b3:1017) at 0000:03:00.0, RoCE device rocep3s0 ACTIVE at 100 Gb/s, fw 16.29.2002.
What is wrong: the card sits in the x8 electrical slot (root port 0000:00:01.2 is capable of 32 GT/s **x8** only), so the x16 card runs 8.0 GT/s x8 (63 Gb/s raw, ~57 Gb/s usable; the report measured 55.9 Gb/s); MTU 1500, Ubuntu default sysctls, governor powersave, mlx5 completion IRQs one per CPU over both CCDs.
numa_node is -1 (no _PXM on this desktop board), as the kernel reports it: local_cpulist is every CPU.

A correct doctor must raise:
- pcie.link_downgraded (critical; limited by the slot: the upstream port is x8) and pcie.bandwidth_below_line_rate (critical) on enp3s0np0
- mtu.not_jumbo, sysctl.socket_buffers_small, cpu.governor_not_performance
- irq.spans_l3_domains (mlx5_comp0..31 on CPUs 0-31; mlx5_async0 affine to all)
- roce.mtu_small (warning: MTU 1500 gives RoCE an active MTU of 1024; GIDs for 10.0.0.1, v1 and v2, as the baseline report's 10.0.0.1/24 link has) and pcie.mrrs_small (info: MRRS 512)

It must not raise: roce.pfc_off, roce.ecn_off, roce.trust_mismatch (no DCB or ECN facts in the tree: doctor notes them as not read, it does not guess), roce.no_v2_gid, irq.remote_numa (numa_node -1 means no affinity), queues.too_few (32), nic.temperature_high (58 °C), rdma.port_not_active, link.down, irqbalance.running.
`

const docXL710 = `# xeon-xl710-gen2-x4

Models the XL710 40 GbE host in a Gen2 x4 slot (write-up "Maximizing 40G NIC Performance … Intel XL710", Proxmox VE, kernel 4.15.18-30-pve): 2x Xeon E5-2630 v4 (40 CPUs, HT on; node0 0-9,20-29, node1 10-19,30-39; one L3 per socket), Intel XL710 (8086:1583, i40e) at 0000:0a:00.0 on **numa_node 1**, behind root port 0000:00:03.0.
What is wrong (the state before its owner fixed it): the slot is PCIe Gen2 x4 (the port is capable of 5 GT/s x4 only; the card of 8 GT/s x8), about 16 Gb/s raw for a 40 GbE port; MTU 1500; one queue; both IRQs (i40e-0000:0a:00.0:misc, i40e-ens2f0np0-TxRx-0) on CPU 0 of node 0; Debian default sysctls; governor powersave.
Old-kernel formats on purpose: link speeds read "5 GT/s"/"8 GT/s" (no "PCIe" suffix; prometheus/procfs's PciDevice rejects them), MSI IRQs print as "IR-PCI-MSI 5242880-edge", and topology has no core_cpus_list or die_id (added in 5.x).

A correct doctor must raise:
- pcie.link_downgraded (critical) and pcie.bandwidth_below_line_rate (critical) on ens2f0np0
- mtu.not_jumbo, queues.too_few (1 queue), irq.remote_numa (CPU 0 is on node 0)
- sysctl.socket_buffers_small (rmem_max 212992, tcp_wmem max 4194304 < 40 Gb/s x 1 ms), cpu.governor_not_performance

It must not raise: irq.spans_l3_domains (both IRQs on CPU 0), nic.temperature_high (no hwmon), rdma.*, irqbalance.running, link.down (vmbr0 and veth100i0 are virtual and up).
`

const docT6 = `# xeon-6530-t6-healthy

Models the hardware of the Chelsio T6 host with cheap CWDM4 optics (host baltazar, Ubuntu 24.04, kernel 6.11.0-19): 2x Xeon Gold 6530 (64 CPUs, HT off; node0 0-31, node1 32-63; one L3 per socket), Chelsio T62100-LP-CR (1425:6407, cxgb4) at 0000:17:00.4 on node 0 behind root port 0000:16:02.0 (host bridge pci0000:16), both ports on that one function: ens5f4 (up, 100 Gb/s, MTU 9000, 16 queues) and ens5f4d1 (dev_port 1, no link).
The tuned baseline: 8.0 GT/s x16 (the card's maximum; the 32 GT/s root port is not a downgrade), queue IRQs ens5f4-Rx0..15 pinned one per CPU on 1-16 and ens5f4d1-Rx0..7 on 17-24 (cxgb4's own names; the non-data "ens5f4" and "ens5f4-FWeventq" IRQs on CPU 0), governor performance, rmem_max/wmem_max 256 MiB, tcp_rmem/tcp_wmem max 128 MiB, fq, no irqbalance.
No hwmon under the PCI function: cxgb4 registers a thermal zone ("cxgb4"), not a hwmon device of the NIC. No RDMA device (iw_cxgb4 not loaded).

A correct doctor must raise only:
- link.down (warning) on ens5f4d1

It must not raise anything for ens5f4 (no pcie.*, mtu.*, sysctl.*, queues.*, cpu.*, irq.*, nic.*, rdma.*, irqbalance.*), nor link.down for docker0 (a virtual bridge without ports).
`

// opticsProvenance says, for every tree with live ethtool facts, where
// those facts come from.
const opticsProvenance = `
Live ethtool facts sit in linerate/ethtool/<iface>/ as ` + "`linerate snapshot`" + ` records them
(docs/schema/ethtool-*.schema.json). Module pages (module-eeprom/*.bin) are encoded byte
by byte from SFF-8636 / SFF-8472 / CMIS 5.x by hosttree.Optic, the inverse of package sff;
link modes, FEC and counters follow what each driver reports over the ethtool netlink
family (cxgb4: no standard counter groups, no FEC counters, EOPNOTSUPP for an empty cage;
mlx5: every standard group, FEC counters per lane, extended link state).
`

const docT6Healthy = `# t6-cwdm4-healthy

Baltazar, the Chelsio T6 host with cheap CWDM4 optics (see xeon-6530-t6-healthy), with its optics: ens5f4 holds a working
Finisar FTLC1157RGPL6FB1 100G CWDM4 Lite QSFP28 (SN X7TA03K): 41.3 °C, 3.283 V, RX −1.90,
−1.52, −1.73, −1.20 dBm on lanes 1-4 against its −10.5 dBm low warning, TX about 0 dBm,
bias 37.5-39.3 mA; linked at 100 Gb/s with RS-FEC, as its owner's ` + "`ethtool ens5f4`" + ` shows
(supported modes 1000baseT … 100000baseCR4, advertised 100000baseCR4, autoneg off, partner
not reported). ens5f4d1's cage is empty: cxgb4 answers EOPNOTSUPP (no module data).
` + opticsProvenance + `
A correct doctor must raise only:
- link.down (warning) on ens5f4d1

It must not raise any transceiver.*, fec.*, nic.*, ring.small or link.speed_below_max, and
must list "ens5f4d1: no module data" under "not read".
`

const docT6Unreadable = `# t6-cwdm4-unreadable

The Chelsio T6 host's dead module: two of its owner's ten used CWDM4 modules never linked and
` + "`ethtool -m`" + ` could not read them. ens5f4 holds such a module: MODULE_EEPROM_GET fails
with EIO (module-eeprom/error), and the port has no link. ens5f4d1's cage is empty.
` + opticsProvenance + `
A correct doctor must raise:
- transceiver.unreadable (critical) on ens5f4, with the kernel's error as evidence and the
  fix: reseat, then try the module elsewhere, then replace
- link.down (warning) on ens5f4 and on ens5f4d1

It must not raise transceiver.lane_dark or any other transceiver.* (nothing was read).
`

const docT6DarkLane = `# t6-cwdm4-dark-lane

The Chelsio T6 host with a CWDM4 (Finisar FTLC1157RGPL6FB1, SN X7TA09Q) whose lane 3 receives
no light: RX power 0 and its RX LOS flag set, while lanes 1, 2 and 4 read −1.90, −1.52 and
−1.20 dBm. A 100G link needs all four lanes, so ens5f4 is down. On a CWDM4 the four lanes
share one fibre pair on four wavelengths: the fix is the peer's lane-3 laser or this
module's receiver, not the fibre.
` + opticsProvenance + `
A correct doctor must raise:
- transceiver.lane_dark (critical) on ens5f4: lane 3, with every lane's RX power as evidence
- link.down (warning) on ens5f4 and ens5f4d1

It must not raise transceiver.rx_power_low for lane 3 (a dark lane is lane_dark, not low),
nor transceiver.tx_fault.
`

const docCX6DxLowRX = `# cx6dx-cwdm4-low-rx

A tuned dual-socket Xeon Gold 6530 (as xeon-6530-t6-healthy) with a dual-port ConnectX-6 Dx
(15b3:101d, mlx5_core, 16 GT/s x16) on node 0, 16 queues a port, both ports with a Mellanox
MMA1L30-CM 100G CWDM4 QSFP28.
ens5f0np0 links at 100 Gb/s with RS-FEC, but its module's lane 2 receives −11.60 dBm
(0.0692 mW): under the module's own −10.5 dBm low warning (page 03h), above its −13.5 dBm
alarm. The FEC pays for it: 2,104,911 corrected blocks on FEC lane 1 (from 0) and 17 uncorrectable,
and the MAC counted 17 FCS errors.
ens5f1np1 has no link: its FEC was set to off while the switch port runs RS; mlx5 reports the
extended state "Logical mismatch: RS FEC is not locked".
` + opticsProvenance + `
A correct doctor must raise:
- transceiver.rx_power_low (warning) on ens5f0np0: lane 2 at −11.60 dBm against −10.50
- fec.uncorrectable (warning: totals, no bench) and nic.phy_errors (warning) on ens5f0np0
- fec.mismatch (critical) and link.down (warning) on ens5f1np1

It must not raise transceiver.lane_dark, fec.off (no FEC is active on a port without link),
link.speed_below_max or ring.small.
`

const docCX4LxSFP28 = `# cx4lx-sfp28-a2h

The same tuned Xeon with a dual-port ConnectX-4 Lx (15b3:1015, mlx5_core, 8 GT/s x8) and two
FS SFP28-25GSR-85 25GBASE-SR modules (SFF-8472, diagnostics at A2h).
ens5f0np0's module is internally calibrated (A0h byte 92 = 0x68): 36.5 °C, RX −2.60 dBm; the
port runs 25 Gb/s with RS-FEC and is clean.
ens5f1np1's module is an older, externally calibrated one (byte 92 = 0x58): its A2h values are
raw A/D counts with slope/offset constants at A2h 76-91 and a first-order RX power polynomial
at 56-75, which the decoder must apply to the values and the thresholds. That port runs with
FEC off (25GBASE-SR needs RS-FEC), a 512-descriptor RX ring of a possible 8192, and mlx5
counted 184,211 rx_out_of_buffer drops.
` + opticsProvenance + `
A correct doctor must raise, all on ens5f1np1:
- fec.off (warning), nic.rx_no_buffer (warning: rx_out_of_buffer 184211), ring.small (warning)

It must not raise anything on ens5f0np0, nor any transceiver.* (both modules are healthy once
calibrated).
`

const docCX7QSFPDD = `# cx7-qsfpdd-cmis

The same tuned Xeon with a dual-port ConnectX-7 (15b3:1021, mlx5_core, 32 GT/s x16) and two
ACME QDD-400G-DR4 QSFP-DD modules (CMIS 5.0, MPO, TX bias reported ×2 per page 01h byte 160):
lane monitors and flags on page 11h bank 0, thresholds on page 02h.
ens5f0np0 runs at only 200 Gb/s (200000baseDR2, 2 lanes) though the NIC and the 400GBASE-DR4
module support 400 Gb/s, and the partner advertises no more than 200000baseDR2; its module is
at 72.2 °C, over its 70 °C warning (alarm 75 °C); the switch sent 52,311 pause frames.
ens5f1np1 has no link: its module reports a TX fault on lane 2 (TX power 0, bias 0).
` + opticsProvenance + `
A correct doctor must raise:
- link.speed_below_max (warning), transceiver.temperature_high (warning) and
  nic.pause_frames (info: received, totals) on ens5f0np0
- transceiver.tx_fault (critical) and link.down (warning) on ens5f1np1

It must not raise transceiver.lane_dark or transceiver.rx_power_low (every lane is lit), nor
pcie.bandwidth_below_line_rate (only one port has link).
`

const docCX6DxCopperDAC = `# cx6dx-copper-dac

A tuned dual-socket Xeon Gold 6530 (as xeon-6530-t6-healthy) with a dual-port ConnectX-6 Dx
(15b3:101d, mlx5_core, 16 GT/s x16) cabled with copper, as racks are within a few metres:
ens5f0np0 runs 40 Gb/s over a Mellanox MC2210130-003 passive 40G QSFP+ DAC (SFF-8636,
identifier 0Dh, byte 131 40GBASE-CR4, byte 147 = A0h "copper cable, unequalized", no
separable connector, flat memory); ens5f1np1 holds the QSFP28 end of a Mellanox
MCP7F00-A003R 100G-to-4x25G breakout DAC (byte 192 100GBASE-CR4/25GBASE-CR CA-L, byte 147
A0h) whose SFP28 ends are not plugged yet, so it has no link.
Both module ends report a temperature (31.2 and 29.8 °C) and zero in every "RX power" word,
as such cables do: a tool that takes a temperature for optical monitors sees four dark lanes.
` + opticsProvenance + `
A correct doctor must raise only:
- link.down (warning) on ens5f1np1

It must not raise transceiver.lane_dark, transceiver.rx_power_low, transceiver.tx_fault or
transceiver.laser_off on either port (copper carries no light: the media bytes say so), nor
fec.off (40 Gb/s runs 10 Gb/s lanes, which need no RS-FEC), nor link.speed_below_max (the
40G cable is the limit). Both modules' identity and temperature are still reported.
`

const docCX7QSFPDD8Lane = `# cx7-qsfpdd-8lane

The same tuned Xeon with a dual-port ConnectX-7 (15b3:1021, mlx5_core, 32 GT/s x16) and two
CMIS 5.0 QSFP-DD modules, both ports down.
ens5f0np0: an ACME QDD-400G-LR8 400GBASE-LR8 (eight 50G PAM4 wavelengths on one duplex LC
pair; it also advertises 2x200GBASE-LR4), configured as one data path: host lanes 1-8
(400GAUI-8) into media lanes 1-8, activated. Media lane 7 receives no light (RX LOS, RX power
0; the others -2.4 to -1.8 dBm): one wavelength dies at the peer's laser or in a mux, and an
LR8 cannot run on seven.
ens5f1np1: an ACME QDD-400G-DR4 400GBASE-DR4 whose lane 3 laser is off: TX bias 0 mA and TX
power 0, under the module's own 20 mA low-bias alarm (its flag set), while the peer's light
arrives on all four lanes and lanes 1, 2 and 4 transmit.
` + opticsProvenance + `
A correct doctor must raise:
- transceiver.lane_dark (critical) on ens5f0np0, for lane 7 of 8, naming its data path
- transceiver.laser_off (warning) on ens5f1np1, for lane 3
- link.down (warning) on both ports

It must not raise transceiver.tx_fault (no fault flag is set) or transceiver.rx_power_low.
`

const docCX5FECKernelNames = `# cx5-fec-kernel-names

The same tuned Xeon with a dual-port ConnectX-5 (15b3:1017, mlx5_core, 8 GT/s x16) and two
Finisar FTLC1157RGPL6FB1 100G CWDM4 QSFP28 modules. Its live facts were written by another
version of linerate (or by hand): linkmodes.json lists the FEC bits among the link modes under
the kernel's link-mode names ("None", "RS", "BASER") and its *_fec lists are empty.
ens5f0np0 has no link: its FEC was set to off (fec.json configured off) while the switch port
advertises 100000baseLR4_ER4 and RS; mlx5 reported no extended state. Its module is healthy
(-1.84 to -1.28 dBm).
ens5f1np1 has no link and no light: every lane of its module flags RX LOS at 0 mW (no fibre,
or the peer's port is off), and nobody named the port with --iface.
` + opticsProvenance + `
A correct doctor must raise:
- fec.mismatch (critical) on ens5f0np0: configured off, the partner advertises RS
- transceiver.lane_dark (critical) on ens5f1np1: every lane dark on a port without carrier
- link.down (warning) on both ports

It must not raise transceiver.* on ens5f0np0 or fec.mismatch on ens5f1np1 (its partner
advertises nothing).
`

const docCX7PreFECBER = `# cx7-prefec-ber

The same tuned Xeon on Linux 6.18 with a dual-port ConnectX-7 (15b3:1021, mlx5_core, 32 GT/s
x16), both ports linked at 400 Gb/s with RS(544,514) over ACME QDD-400G-DR4 modules, three
days after the driver loaded (mlx5 rx_bits_phy 1.04e17 on each).
ens5f0np0: pre-FEC BER 3.1e-5 (rx_corrected_bits_phy 3.21e12), even over its four FEC lanes
(2.9e-5 to 3.3e-5), no uncorrectable block: it works, on the FEC's margin.
ens5f1np1: pre-FEC BER 1.6e-4 (1.66e13 corrected bits), FEC lane 1 (0-based) at 5.5e-4,
past what the FEC corrects on its own: 12 uncorrectable blocks and 12 FCS errors.
fec.json holds each port's FEC histogram as the 6.18 kernel gives it
(ETHTOOL_A_FEC_STAT_HIST, IEEE 802.3ck bins 0, 1, 2, 3, 4-5, 6-8, 9-11, 12-14, 15): the
codewords of random errors at the port's BER (Poisson, 5440-bit codewords), split over the
lanes by their share of the errors, with bin 15 holding the uncorrectable ones.
` + opticsProvenance + `
A correct doctor must raise:
- fec.ber_high (warning) on ens5f0np0 and (critical) on ens5f1np1
- fec.uncorrectable (warning) and nic.phy_errors (warning) on ens5f1np1
- pcie.bandwidth_below_line_rate (warning) on ens5f0np0: 457.6 Gbit/s of PCIe for two linked
  400G ports

It must not raise any transceiver.* finding (every lane is lit and within its thresholds).
`
