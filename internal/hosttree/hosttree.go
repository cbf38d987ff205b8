// Package hosttree writes fake but faithful /sys and /proc trees: the files
// linerate reads, with the kernel's own file names, link layout and value
// formats (Documentation/ABI/testing/sysfs-*, Documentation/filesystems/proc.rst,
// kernel/irq/proc.c, arch/x86/kernel/cpu/proc.c, drivers/pci/pci-sysfs.c,
// net/core/net-sysfs.c, drivers/infiniband/core/sysfs.c, drivers/hwmon).
//
// A Host describes one machine; Host.Write lays it out below a directory that
// then reads like "/" (sys/… and proc/…). Trees returns the hosts committed
// under testdata/hosts, modelled on real hosts' published output; Large returns a
// 512-CPU, 8-NIC host for benchmarks.
//
// Hand-written: no library writes sysfs trees. Formats that changed across
// kernel versions (PCIe link speed strings, MSI interrupt chip names, CPU
// topology files) follow Host.Kernel.
package hosttree

import (
	"github.com/linerate/linerate/internal/dcb"
	"github.com/linerate/linerate/internal/ethtool"
)

// Host describes one machine as /sys and /proc show it.
type Host struct {
	// Hostname is proc/sys/kernel/hostname.
	Hostname string
	// Kernel is proc/sys/kernel/osrelease ("6.8.0-51-generic"). Its version
	// also selects the formats of that kernel (see the package comment).
	Kernel string
	// Processor holds the facts shared by every CPU (model, caches, cpufreq).
	Processor Processor
	// CPUs lists the logical CPUs; CPU i must have ID i. Topology builds
	// them in Linux's numbering.
	CPUs []CPU
	// NICs are the network PCI functions, each with its upstream bridge.
	NICs []NIC
	// Virtual are interfaces without a device (lo, veth, bridges), written
	// under sys/devices/virtual/net.
	Virtual []NetIface
	// IRQs are interrupts of other devices (timer, acpi, nvme, …). NIC IRQs
	// belong in NIC.IRQs.
	IRQs []IRQ
	// Sysctls maps dotted keys ("net.core.rmem_max") to the value exactly as
	// the kernel prints it, without the trailing newline ("4096\t131072\t6291456").
	Sysctls map[string]string
	// Processes maps a PID to its comm (proc/<pid>/comm).
	Processes map[int]string
	// NrIRQs is the kernel's nr_irqs; it sets the width of the IRQ-number
	// column of proc/interrupts. Zero means 4096.
	NrIRQs int
	// GPUs are the display and 3D controllers.
	GPUs []GPU
	// IOMMU, when set, puts every PCI function in an IOMMU group of its own
	// (sys/kernel/iommu_groups/N) whose type file holds it: "identity"
	// (passthrough, iommu=pt), "DMA" or "DMA-FQ" (translated).
	IOMMU string
}

// Processor holds what /proc/cpuinfo and sysfs report alike for every CPU.
type Processor struct {
	// VendorID is "AuthenticAMD" or "GenuineIntel".
	VendorID string
	// ModelName is the "model name" line ("AMD Ryzen 9 9900X 12-Core Processor").
	ModelName string
	// Family, Model and Stepping are the CPUID signature.
	Family, Model, Stepping int
	// Microcode is the "microcode" line ("0xb404023").
	Microcode string
	// Flags is the "flags" line.
	Flags string
	// Bugs is the "bugs" line.
	Bugs string
	// BogoMIPS is the "bogomips" line ("8782.59").
	BogoMIPS string
	// CPUIDLevel is the "cpuid level" line.
	CPUIDLevel int
	// AddressSizes is the "address sizes" line ("48 bits physical, 48 bits virtual").
	AddressSizes string
	// PowerManagement is the rest of the "power management:" line, each
	// flag preceded by a space (" ts ttp tm hwpstate").
	PowerManagement string
	// TLBSize is AMD's "TLB size" line ("3584 4K pages"); empty omits it.
	TLBSize string
	// Caches are index0…index3 of cpuN/cache: L1d, L1i, L2, L3.
	Caches [4]Cache
	// CPUInfoCache is the "cache size" line ("1024 KB").
	CPUInfoCache string
	// ScalingDriver is cpufreq/scaling_driver ("amd-pstate-epp", "intel_pstate").
	ScalingDriver string
	// AvailableGovernors is cpufreq/scaling_available_governors.
	AvailableGovernors string
	// MinFreqKHz and MaxFreqKHz are cpuinfo_min_freq and cpuinfo_max_freq.
	MinFreqKHz, MaxFreqKHz int
}

// Cache describes one cache level as cpuN/cache/indexK shows it.
type Cache struct {
	// Level is 1, 2 or 3.
	Level int
	// Type is "Data", "Instruction" or "Unified".
	Type string
	// SizeKB is the size in KiB; the size file reads "<SizeKB>K".
	SizeKB int
	// Ways is ways_of_associativity.
	Ways int
}

// CPU is one logical CPU.
type CPU struct {
	// ID is the Linux CPU number.
	ID int
	// Package is topology/physical_package_id (the socket).
	Package int
	// Core is topology/core_id (sparse on many parts).
	Core int
	// CoreIndex numbers physical cores across the machine; it is the id of
	// the core's private L1 and L2 caches.
	CoreIndex int
	// Die is topology/die_id.
	Die int
	// Node is the NUMA node.
	Node int
	// L3 is the id of the L3 cache (one per CCX or socket); CPUs with the
	// same L3 share it.
	L3 int
	// Siblings are the SMT threads of the core, this CPU included.
	Siblings []int
	// APICID is the "apicid" of /proc/cpuinfo.
	APICID int
	// Governor is cpufreq/scaling_governor.
	Governor string
	// CurFreqKHz is cpufreq/scaling_cur_freq.
	CurFreqKHz int
}

// NIC is one network PCI function with its interfaces, interrupts and
// sensors, below its upstream bridge (root port).
type NIC struct {
	// PCI is the function itself (class 0x020000).
	PCI PCIDevice
	// Bridge is the upstream port (class 0x060400). Functions of one card
	// name the same bridge.
	Bridge PCIDevice
	// LocalCPUs is local_cpulist; nil means the CPUs of PCI.NUMANode, or
	// every CPU when that is -1.
	LocalCPUs []int
	// Interfaces are the netdevs of the function (cxgb4 puts both ports on
	// one function).
	Interfaces []NetIface
	// IRQs are the function's MSI-X vectors, listed in msi_irqs.
	IRQs []IRQ
	// Hwmon is the sensor registered on the function, if any.
	Hwmon *Hwmon
	// RDMA are the InfiniBand/RoCE devices of the function.
	RDMA []RDMADevice
	// Switch are the PCIe switch ports between Bridge and the function,
	// from the top (an upstream port, then a downstream port, …); a GPU
	// naming the same ports sits behind the same switch.
	Switch []PCIDevice
}

// GPU is a display or 3D controller (class 0x0300xx or 0x0302xx) below
// its root port and any switch ports, written as NIC functions are.
type GPU struct {
	PCI    PCIDevice
	Bridge PCIDevice
	Switch []PCIDevice
}

// PCIDevice is a PCI function as sysfs and its config space show it.
type PCIDevice struct {
	// BDF is the address, "0000:01:00.0".
	BDF string
	// Vendor, Device, SubsystemVendor and SubsystemDevice are the IDs.
	Vendor, Device, SubsystemVendor, SubsystemDevice uint16
	// Class is the 24-bit class code (0x020000 Ethernet, 0x060400 PCI bridge).
	Class uint32
	// Revision is the revision ID.
	Revision uint8
	// Driver is the bound driver ("mlx5_core", "pcieport").
	Driver string
	// NUMANode is numa_node; -1 means no affinity.
	NUMANode int
	// LegacyIRQ is the irq file (the INTx line).
	LegacyIRQ int
	// MaxSpeed and CurSpeed are the link speeds in GT/s (2.5, 5, 8, 16, 32, 64).
	MaxSpeed, CurSpeed float64
	// MaxWidth and CurWidth are the link widths in lanes.
	MaxWidth, CurWidth int
	// MPSSupported, MPS and MRRS are the max payload size supported (DevCap)
	// and the programmed max payload and max read request sizes (DevCtl),
	// in bytes. Zero means 256, 256 and 512.
	MPSSupported, MPS, MRRS int
	// MultiFunction sets the multi-function bit of the header type.
	MultiFunction bool
	// Port is the port number in LnkCap (root ports).
	Port int
	// Config writes a 4096-byte config file (type-0 header for endpoints,
	// type-1 for bridges) matching the fields above.
	Config bool
	// PortType is the PCI Express Device/Port Type of a bridge: 4 root
	// port (the default for NIC.Bridge), 5 switch upstream port, 6 switch
	// downstream port.
	PortType int
	// ACS, when set, adds an ACS extended capability at 0x100 with these
	// capability and control bits (hostfs.ACS* names them).
	ACS *ACS
}

// NetIface is a network interface as sys/class/net/<name> shows it.
type NetIface struct {
	// Name is the interface name.
	Name string
	// Kind is "" for a device's netdev, or "loopback", "veth" or "bridge"
	// for a virtual interface.
	Kind string
	// Address is the MAC address ("b8:3f:d2:ba:a6:a6").
	Address string
	// Ifindex is the interface index; Iflink is the peer's (zero means Ifindex).
	Ifindex, Iflink int
	// MTU is the MTU.
	MTU int
	// Speed is the speed in Mb/s, -1 for unknown (running, no carrier); 0
	// omits the file, as for interfaces without ethtool link settings (lo).
	Speed int
	// Duplex is "full", "half" or "unknown"; empty omits the file.
	Duplex string
	// Operstate is "up", "down", "unknown", …
	Operstate string
	// Carrier is the carrier file.
	Carrier bool
	// CarrierChanges is carrier_changes (up and down counts follow from it).
	CarrierChanges int
	// DevID and DevPort are dev_id and dev_port.
	DevID, DevPort int
	// Flags are the IFF_* flags (0x1003: UP, BROADCAST, MULTICAST).
	Flags uint32
	// TxQueueLen is tx_queue_len.
	TxQueueLen int
	// Type is the ARPHRD type; zero means 1 (Ethernet).
	Type int
	// PhysPortName is phys_port_name; empty omits the file (the kernel
	// returns EOPNOTSUPP when the driver has none).
	PhysPortName string
	// NameAssignType is name_assign_type; zero omits the file (EINVAL for
	// NET_NAME_UNKNOWN).
	NameAssignType int
	// RxQueues and TxQueues are the numbers of queues/rx-N and queues/tx-N.
	RxQueues, TxQueues int
	// Ports are the members of a bridge (brif/).
	Ports []string
	// Master is the bridge this interface is a port of.
	Master string
	// Ethtool are the live ethtool facts (link modes, FEC, module pages,
	// counters) written under linerate/ethtool/<Name>/ as `linerate
	// snapshot` records them; nil writes none.
	Ethtool *ethtool.Facts
	// ECN writes MLNX_OFED mlx5's ecn/roce_np/enable/<prio> and
	// ecn/roce_rp/enable/<prio>; nil writes none (upstream drivers).
	ECN *ECN
	// DCB is what rtnetlink's DCB messages gave, written under
	// linerate/dcb/<Name>/ as `linerate snapshot` records it; nil writes
	// none.
	DCB *dcb.Reading
}

// ECN is the per-priority congestion notification switches of an mlx5
// port: NP (notification point: the receiver sends CNPs) and RP (reaction
// point: the sender slows down on CNPs).
type ECN struct {
	NP, RP [8]bool
}

// ACS is an ACS capability's capability and control registers.
type ACS struct {
	Cap, Ctl uint16
}

// IRQ is one interrupt line of /proc/interrupts and its /proc/irq/N directory.
type IRQ struct {
	// Num is the Linux IRQ number.
	Num int
	// Name is the action name, the last column of /proc/interrupts.
	Name string
	// MSIX is the PCI function whose MSI-X vector this is; Chip and HWIRQ
	// are then derived from it and Vector the way Host.Kernel prints them.
	// NIC IRQs default to their NIC's address.
	MSIX string
	// Vector is the MSI-X table index.
	Vector int
	// Chip is the irq chip column ("IR-IO-APIC") when MSIX is empty.
	Chip string
	// HWIRQ is the hardware IRQ column when MSIX is empty.
	HWIRQ int
	// Handler is "edge" (the default) or "fasteoi".
	Handler string
	// Counts are the per-CPU counts; CPUs not present count zero.
	Counts map[int]uint64
	// Affinity is smp_affinity_list; nil means every CPU.
	Affinity []int
	// Effective is effective_affinity_list; nil means the first CPU of Affinity.
	Effective []int
	// Hint is affinity_hint; nil is an empty mask.
	Hint []int
	// Node is the node file. NIC IRQs take their NIC's numa_node instead.
	Node int
}

// Hwmon is a hwmon device with one temperature channel, in millidegrees
// Celsius.
type Hwmon struct {
	// Index is K of hwmonK.
	Index int
	// Name is the name file ("mlx5").
	Name string
	// Label is temp1_label; empty omits it.
	Label string
	// Input, Crit and Highest are temp1_input, temp1_crit and temp1_highest
	// (zero omits crit and highest).
	Input, Crit, Highest int
}

// RDMADevice is an InfiniBand/RoCE device (sys/class/infiniband/<name>).
type RDMADevice struct {
	// Name is the device name ("rocep1s0f0").
	Name string
	// FWVer, BoardID and HCAType are fw_ver, board_id and hca_type.
	FWVer, BoardID, HCAType string
	// NodeGUID and SysImageGUID are "0c42:a103:00a8:2c2a"-style GUIDs;
	// an empty SysImageGUID repeats NodeGUID.
	NodeGUID, SysImageGUID string
	// NodeType is node_type; empty means "1: CA".
	NodeType string
	// Ports are the device's ports.
	Ports []RDMAPort
}

// RDMAPort is one port of an RDMA device.
type RDMAPort struct {
	// Num is the port number (from 1).
	Num int
	// State is "4: ACTIVE", "1: DOWN", …
	State string
	// PhysState is "5: LinkUp", "3: Disabled", …
	PhysState string
	// Rate is "100 Gb/sec (4X EDR)".
	Rate string
	// LinkLayer is "Ethernet" or "InfiniBand".
	LinkLayer string
	// Netdev is the interface behind GID 0 (gid_attrs/ndevs/0).
	Netdev string
	// GIDs is the GID table. Nil, with a Netdev, gives what mlx5 puts
	// there for a netdev without IP addresses: the link-local GID as RoCE
	// v1 (index 0) and v2 (index 1). Empty entries are not written (the
	// kernel answers EINVAL for their types and ndevs).
	GIDs []GIDEntry
	// Counters and HWCounters are counters/ and hw_counters/ by name.
	Counters, HWCounters map[string]uint64
}

// GIDEntry is one GID table entry.
type GIDEntry struct {
	Index int
	// Addr is the address the GID holds: an IPv6 address, or an IPv4
	// address for the IPv4-mapped GIDs of RoCE v2.
	Addr string
	// Type is "IB/RoCE v1" or "RoCE v2".
	Type   string
	Netdev string
}
