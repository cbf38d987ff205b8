package hosttree

// roceProvenance says where the RoCE trees' RDMA, DCB, ECN and PCIe facts
// come from; every RoCE tree's HOST.md ends with it.
const roceProvenance = `
Provenance: no RDMA device was at hand, so the RoCE facts are built from the kernel's own
formats: the GID table, gid_attrs/types and ndevs, counters/ and hw_counters/ as
drivers/infiniband/core/sysfs.c and mlx5's hw counters name them
(Documentation/ABI/stable/sysfs-class-infiniband); the ECN switches as MLNX_OFED's mlx5
lays out ecn/roce_np/enable/<prio> and ecn/roce_rp/enable/<prio> (upstream mlx5 has no
such files); DCB in linerate/dcb/<iface>/ieee.json as DCB_CMD_IEEE_GET returns it from
mlx5 (no apptrust operation; in DSCP trust the APP table lists all 64 DSCPs, priority
dscp>>3); per-priority counters as mlx5's ethtool -S names them (rx_prio3_pause, …);
PCIe config space with the ACS extended capability at 0x100 and MRRS in Device Control
bits 14:12; IOMMU groups as sys/kernel/iommu_groups/<n>/{type,devices/}.
`

const roceSetup = `Two Xeon Gold 6334 (16 CPUs, node0 0-7, node1 8-15), Ubuntu kernel 6.8.0-90. A ConnectX-6 Dx
(15b3:101d, 16 GT/s x16, 100 GbE, RoCE device rocep51s0 on enp51s0np0, 192.168.100.11)
at 0000:33:00.0 and an NVIDIA A100 (10de:20f1, class 0x030200) at 0000:34:00.0, both
behind one Broadcom PEX switch (upstream port 0000:31:00.0, downstream ports 0000:32:00.0
and 0000:32:04.0) on root port 0000:30:02.0 (node 0).`

const docRoCEHealthy = `# roce-healthy

` + roceSetup + `
Set up for lossless RoCE as NVIDIA's guides do: PFC on priority 3 (1,822 PFC frames
received, 96 sent), ECN (roce_np and roce_rp) on every priority, DSCP trust with DSCP 26
on priority 3, RoCE v2 GIDs for the link-local and the IPv4 address, MTU 9000 (RoCE
active MTU 4096), MRRS 4096, IOMMU groups of type identity (iommu=pt), ACS off on the
switch's downstream ports (the root port's ACS is on, which GPUDirect between the GPU and
the NIC never crosses), GPU and NIC one switch apart (PIX), no RDMA error counters.

A correct doctor raises nothing: no roce.*, rdma.*, pcie.*, gpu.*, iommu.* finding, and
nothing else either.
` + roceProvenance

const docRoCEPFCOff = `# roce-pfc-off

` + roceSetup + `
What is wrong: PFC is enabled on no priority (mlx5's default) and ECN is off on every
priority: RoCE v2 runs on priority 3 (DSCP 26) over a lossy fabric with no congestion
control; drops turn into go-back-N retransmissions.

A correct doctor must raise roce.pfc_off (critical) and roce.ecn_off (warning) on
enp51s0np0, and no other finding.
` + roceProvenance

const docRoCEECNOff = `# roce-ecn-off

` + roceSetup + `
What is wrong: the ECN reaction point is off on priority 3 (ecn/roce_rp/enable/3 reads 0):
the NIC ignores the CNPs its peers send and keeps its rate through congestion, leaning on
PFC alone.

A correct doctor must raise roce.ecn_off (warning) on enp51s0np0, and no other finding.
` + roceProvenance

const docRoCETrustPCP = `# roce-trust-pcp

` + roceSetup + `
What is wrong: the APP table holds no DSCP mapping, so mlx5 trusts PCP: untagged RoCE
arrives as priority 0 whatever DSCP the switches mark, while PFC protects priority 3.

A correct doctor must raise roce.trust_mismatch (warning) on enp51s0np0, and no other
finding.
` + roceProvenance

const docRoCEV1Only = `# roce-v1-gid-only

` + roceSetup + `
What is wrong: the GID table holds only RoCE v1 entries (for fe80::bace:f6ff:fea1:73c and
192.168.100.11): RoCE v1 is not routable and most fabrics carry only v2.

A correct doctor must raise roce.no_v2_gid (warning) on enp51s0np0, and no other finding.
` + roceProvenance

const docRoCEMTU1500 = `# roce-mtu-1500

` + roceSetup + `
What is wrong: the netdev MTU is 1500, so RoCE's active MTU is 1024 (1500 less 96 bytes of
RoCE headers is 1404: the largest IB MTU not above it is 1024).

A correct doctor must raise roce.mtu_small (warning) and mtu.not_jumbo (warning) on
enp51s0np0, and no other finding.
` + roceProvenance

const docRDMAErrors = `# rdma-errors

` + roceSetup + `
What is wrong: the port's hw_counters show retransmission: out_of_sequence 18,234,
packet_seq_err 912, local_ack_timeout_err 37.

A correct doctor must raise rdma.errors (warning; totals since the driver loaded, not
growth during a bench) on enp51s0np0, and no other finding.
` + roceProvenance

const docMRRS512 = `# pcie-mrrs-512

` + roceSetup + `
What is wrong: the NIC's Max_Read_Request_Size is 512 bytes (Device Control bits 14:12 =
2), where NVIDIA recommends 4096 for 100 Gb/s and faster RDMA NICs.

A correct doctor must raise pcie.mrrs_small (info) on enp51s0np0, and no other finding.
` + roceProvenance

const docACSRedirect = `# gpu-acs-redirect

` + roceSetup + `
What is wrong: the switch's downstream ports 0000:32:00.0 and 0000:32:04.0 have ACS
Source Validation, Request Redirect, Completion Redirect and Upstream Forwarding on
(ACS control 0x001d, what Linux enables when an IOMMU is on): GPUDirect RDMA between the
GPU and the NIC goes up to the root complex instead of across the switch.

A correct doctor must raise pcie.acs_redirect (warning) for the GPU 0000:34:00.0 and
enp51s0np0, and no other finding.
` + roceProvenance

const docGPUNICFar = `# gpu-nic-far

` + roceSetup + `
What is wrong: the GPU sits on the other socket, at 0000:b1:00.0 below root port
0000:b0:02.0 on node 1: GPUDirect RDMA from it to the only RDMA NIC crosses the socket
interconnect (nvidia-smi topo -m: SYS).

A correct doctor must raise gpu.nic_far (warning) for the GPU 0000:b1:00.0, and no other
finding.
` + roceProvenance

const docIOMMUTranslated = `# iommu-translated

` + roceSetup + `
What is wrong: the IOMMU translates the NIC's DMA (its IOMMU group's type is DMA-FQ, the
default of an IOMMU without iommu=pt): every RDMA page the NIC touches goes through the
IOTLB.

A correct doctor must raise iommu.translated (info) on enp51s0np0, and no other finding.
` + roceProvenance
