package hosttree

// HOST.md texts of the committed trees. Severities and IDs are those of
// the finding table in docs/architecture.md.

const docRyzen9900X = `# ryzen-9900x-cx5-x4

Models seed 000 ("100 GbE Lab", host crow, Ubuntu kernel 6.8.0-51): Ryzen 9 9900X (12 CPUs, SMT off, L3 domains 0-5 and 6-11), dual-port ConnectX-5 MCX516A-CCAT (15b3:1017) at 0000:01:00.0/.1 behind root port 0000:00:01.1 (32 GT/s x16).
What is wrong: the x16 card trained at 8 GT/s **x4** (card not seated; ~28 Gb/s usable), enp1s0f1np1 and its RoCE port are down, the NIC reads 74 °C, sysctls are Ubuntu defaults, governor powersave, and irqbalance (pid 812) has spread the NIC IRQs over both CCDs.
IRQs 98, 99, 101, 102 and 109-119 are the seed's /proc/interrupts lines verbatim; smp_affinity_list is the CPU with the large count.

A correct doctor must raise:
- pcie.link_downgraded (critical) and pcie.bandwidth_below_line_rate (critical) on enp1s0f0np0 (8.0 GT/s x4 of x16)
- link.down on enp1s0f1np1; rdma.port_not_active on rocep1s0f1 port 1
- nic.temperature_high (warning: 74 °C, crit 105 °C), sysctl.socket_buffers_small, cpu.governor_not_performance
- irq.spans_l3_domains (IRQs affine to 3 and 7-11, served on 0-11), irqbalance.running (info)

It must not raise: mtu.not_jumbo (MTU 9000; the down port's speed is unknown), queues.too_few (12 queues), irq.remote_numa (one node).
`

const docRyzen7950X = `# ryzen-7950x-cx5-x8-roce

Models seed 002 ("ConnectX-5 Performance Baseline", host mark1nvidia, Ubuntu kernel 6.8.0-90): Ryzen 9 7950X (32 CPUs, SMT2, L3 domains 0-7,16-23 and 8-15,24-31), single-port ConnectX-5 MCX515A-CCAT (15b3:1017) at 0000:03:00.0, RoCE device rocep3s0 ACTIVE at 100 Gb/s, fw 16.29.2002.
What is wrong: the card sits in the x8 electrical slot (root port 0000:00:01.2 is capable of 32 GT/s **x8** only), so the x16 card runs 8.0 GT/s x8 (63 Gb/s raw, ~57 Gb/s usable; the seed measured 55.9 Gb/s); MTU 1500, Ubuntu default sysctls, governor powersave, mlx5 completion IRQs one per CPU over both CCDs.
numa_node is -1 (no _PXM on this desktop board), as the kernel reports it: local_cpulist is every CPU.

A correct doctor must raise:
- pcie.link_downgraded (critical; limited by the slot: the upstream port is x8) and pcie.bandwidth_below_line_rate (critical) on enp3s0np0
- mtu.not_jumbo, sysctl.socket_buffers_small, cpu.governor_not_performance
- irq.spans_l3_domains (mlx5_comp0..31 on CPUs 0-31; mlx5_async0 affine to all)

It must not raise: irq.remote_numa (numa_node -1 means no affinity), queues.too_few (32), nic.temperature_high (58 °C), rdma.port_not_active, link.down, irqbalance.running.
`

const docXL710 = `# xeon-xl710-gen2-x4

Models seed 003 ("Maximizing 40G NIC Performance … Intel XL710", Proxmox VE, kernel 4.15.18-30-pve): 2x Xeon E5-2630 v4 (40 CPUs, HT on; node0 0-9,20-29, node1 10-19,30-39; one L3 per socket), Intel XL710 (8086:1583, i40e) at 0000:0a:00.0 on **numa_node 1**, behind root port 0000:00:03.0.
What is wrong (the state before the seed's author fixed it): the slot is PCIe Gen2 x4 (the port is capable of 5 GT/s x4 only; the card of 8 GT/s x8), about 16 Gb/s raw for a 40 GbE port; MTU 1500; one queue; both IRQs (i40e-0000:0a:00.0:misc, i40e-ens2f0np0-TxRx-0) on CPU 0 of node 0; Debian default sysctls; governor powersave.
Old-kernel formats on purpose: link speeds read "5 GT/s"/"8 GT/s" (no "PCIe" suffix; prometheus/procfs's PciDevice rejects them), MSI IRQs print as "IR-PCI-MSI 5242880-edge", and topology has no core_cpus_list or die_id (added in 5.x).

A correct doctor must raise:
- pcie.link_downgraded (critical) and pcie.bandwidth_below_line_rate (critical) on ens2f0np0
- mtu.not_jumbo, queues.too_few (1 queue), irq.remote_numa (CPU 0 is on node 0)
- sysctl.socket_buffers_small (rmem_max 212992, tcp_wmem max 4194304 < 40 Gb/s x 1 ms), cpu.governor_not_performance

It must not raise: irq.spans_l3_domains (both IRQs on CPU 0), nic.temperature_high (no hwmon), rdma.*, irqbalance.running, link.down (vmbr0 and veth100i0 are virtual and up).
`

const docT6 = `# xeon-6530-t6-healthy

Models the hardware of seed 001 (host baltazar, Ubuntu 24.04, kernel 6.11.0-19): 2x Xeon Gold 6530 (64 CPUs, HT off; node0 0-31, node1 32-63; one L3 per socket), Chelsio T62100-LP-CR (1425:6407, cxgb4) at 0000:17:00.4 on node 0 behind root port 0000:16:02.0 (host bridge pci0000:16), both ports on that one function: ens5f4 (up, 100 Gb/s, MTU 9000, 16 queues) and ens5f4d1 (dev_port 1, no link).
The tuned baseline: 8.0 GT/s x16 (the card's maximum; the 32 GT/s root port is not a downgrade), queue IRQs ens5f4-Rx0..15 pinned one per CPU on 1-16 and ens5f4d1-Rx0..7 on 17-24 (cxgb4's own names; the non-data "ens5f4" and "ens5f4-FWeventq" IRQs on CPU 0), governor performance, rmem_max/wmem_max 256 MiB, tcp_rmem/tcp_wmem max 128 MiB, fq, no irqbalance.
No hwmon under the PCI function: cxgb4 registers a thermal zone ("cxgb4"), not a hwmon device of the NIC. No RDMA device (iw_cxgb4 not loaded).

A correct doctor must raise only:
- link.down (warning) on ens5f4d1

It must not raise anything for ens5f4 (no pcie.*, mtu.*, sysctl.*, queues.*, cpu.*, irq.*, nic.*, rdma.*, irqbalance.*), nor link.down for docker0 (a virtual bridge without ports).
`
