// Package inventory turns what hostfs reads into typed facts about a host:
// its CPUs (L3 domains, NUMA nodes, governors), every NIC backed by a PCI
// device (PCIe link, queues, IRQs, temperature, RDMA ports), the virtual
// interfaces, and the net sysctls that bound TCP throughput.
//
// Facts only: judging them is package doctor's work. A fact that could not
// be read is null (nil) in JSON, and Inventory.Notes says why — "unknown"
// is always an answer, a guess never is. JSON names follow the
// linerate.doctor/v1 contract (docs/schema/doctor-v1.schema.json).
package inventory

import (
	"github.com/linerate/linerate/internal/dcb"
	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/nicstats"
)

// Inventory is everything known about one host.
type Inventory struct {
	Host    Host  `json:"host"`
	CPU     CPU   `json:"cpu"`
	NICs    []NIC `json:"nics"`
	Virtual []NIC `json:"virtual_interfaces"`
	// GPUs are the display and 3D controllers (PCI class 0x0300, 0x0302)
	// with their PCIe distance to every PCI NIC.
	GPUs   []GPU          `json:"gpus"`
	Sysctl map[string]any `json:"sysctl"`
	// Notes are facts that could not be read, each with its reason
	// ("PCIe MPS of 0000:01:00.0 needs root (config space)").
	Notes []string `json:"notes"`
}

// Host identifies the machine.
type Host struct {
	Hostname   string     `json:"hostname"`
	Kernel     string     `json:"kernel"`
	IRQBalance IRQBalance `json:"irqbalance"`
}

// IRQBalance says whether the irqbalance daemon runs; it rewrites manual
// IRQ affinity at its next pass.
type IRQBalance struct {
	Running bool  `json:"running"`
	PIDs    []int `json:"pids,omitempty"`
}

// CPU describes the processors and their topology.
type CPU struct {
	Count   int    `json:"count"`
	Online  []int  `json:"online"`
	Model   string `json:"model,omitempty"`
	Sockets int    `json:"sockets,omitempty"`
	// L3Domains groups CPUs sharing a last-level cache (a CCD/CCX on AMD,
	// a socket on most Intel parts), from cache/index*/shared_cpu_list.
	L3Domains [][]int `json:"l3_domains"`
	// SMTSiblings groups hardware threads of one core (thread_siblings_list),
	// for cores with more than one thread.
	SMTSiblings [][]int `json:"smt_siblings"`
	// NUMANodes maps node number to its CPUs.
	NUMANodes map[string][]int `json:"numa_nodes"`
	// Governors maps each cpufreq governor to the CPUs running it; empty
	// where the kernel exposes no cpufreq (many VMs).
	Governors     map[string][]int `json:"governors"`
	ScalingDriver string           `json:"scaling_driver,omitempty"`
}

// NIC is one network interface. Physical NICs are backed by a PCI function;
// virtual ones (veth, bridge, loopback) have no PCI fields.
type NIC struct {
	Interface string `json:"interface"`
	// Kind is "pci" for a PCI-backed NIC, else the link kind ("veth",
	// "bridge", "loopback", "virtual").
	Kind      string     `json:"kind"`
	PCI       string     `json:"pci,omitempty"`
	Driver    string     `json:"driver,omitempty"`
	VendorID  string     `json:"vendor_id,omitempty"`
	DeviceID  string     `json:"device_id,omitempty"`
	Model     string     `json:"model,omitempty"`
	NUMANode  *int       `json:"numa_node"`
	LocalCPUs []int      `json:"local_cpus,omitempty"`
	MTU       *int       `json:"mtu"`
	SpeedMbps *int       `json:"speed_mbps"`
	Operstate string     `json:"operstate"`
	Queues    Queues     `json:"queues"`
	PCIe      *PCIe      `json:"pcie,omitempty"`
	IRQs      []IRQ      `json:"irqs"`
	TempC     *float64   `json:"temperature_c"`
	TempCritC *float64   `json:"temperature_crit_c"`
	RDMA      []RDMAPort `json:"rdma"`
	Qdisc     *Qdisc     `json:"qdisc"`
	// DefaultRoute is set when a default route leaves through this
	// interface (live rtnetlink data; false when unknown).
	DefaultRoute bool `json:"default_route,omitempty"`
	// Ports lists the interfaces sharing this NIC's card (same PCI bus
	// and device, any function), itself included.
	CardPorts []string `json:"card_ports,omitempty"`
	// Link, FEC, Transceiver, Counters, Channels and Rings are live
	// ethtool facts (package ethtool), nil where not read: a captured tree
	// holds them under linerate/ethtool/<iface>/.
	Link        *Link              `json:"link"`
	FEC         *FEC               `json:"fec"`
	Transceiver *Transceiver       `json:"transceiver"`
	Counters    *nicstats.Counters `json:"counters"`
	Channels    *ethtool.Channels  `json:"channels"`
	Rings       *ethtool.Rings     `json:"rings"`
	// DCB is the port's DCB configuration (rtnetlink DCB_CMD_IEEE_GET, or
	// linerate/dcb/<iface>/ieee.json in a tree); nil where not read or the
	// driver has none (Notes say which).
	DCB *dcb.IEEE `json:"dcb"`
	// ECN is mlx5's per-priority congestion notification switches; nil
	// where the driver has none (upstream mlx5, other drivers).
	ECN *ECN `json:"ecn"`
	// PriorityCounters are the driver's per-priority counters from
	// ethtool -S (mlx5's rx_prio3_pause as "3": {"rx_pause": n}), by
	// priority; absent where the driver has none.
	PriorityCounters map[string]map[string]uint64 `json:"priority_counters,omitempty"`
	// IOMMU is the IOMMU group of the PCI function; nil without an IOMMU.
	IOMMU *IOMMU `json:"iommu"`
}

// ECN holds a port's ECN switches per priority: np (notification point:
// the receiver sends CNPs) and rp (reaction point: the sender slows down
// on CNPs); an entry is null where its file could not be read.
type ECN struct {
	NP [8]*bool `json:"np"`
	RP [8]*bool `json:"rp"`
}

// On reports whether both ECN switches are on for priority p, and
// whether that is known.
func (e *ECN) On(p int) (on, known bool) {
	if e == nil || p < 0 || p >= 8 || e.NP[p] == nil || e.RP[p] == nil {
		return false, false
	}
	return *e.NP[p] && *e.RP[p], true
}

// IOMMU is a function's IOMMU group and how the IOMMU treats its DMA:
// "identity" (passthrough, iommu=pt), "DMA" or "DMA-FQ" (translated),
// "blocked", "unmanaged" (a VFIO user owns it).
type IOMMU struct {
	Group int    `json:"group"`
	Type  string `json:"type"`
}

// Translated reports whether the IOMMU translates the function's DMA.
func (m *IOMMU) Translated() bool { return m != nil && (m.Type == "DMA" || m.Type == "DMA-FQ") }

// Queues counts the kernel's receive and transmit queues
// (/sys/class/net/IF/queues/rx-N, tx-N).
type Queues struct {
	RX int `json:"rx"`
	TX int `json:"tx"`
}

// PCIe is a function's link: what it can do, what it trained at, and what
// its upstream port (the slot) can do. Speeds in GT/s; nil = not reported.
type PCIe struct {
	Reported   bool     `json:"reported"`
	MaxGTs     *float64 `json:"max_gts"`
	MaxWidth   *int     `json:"max_width"`
	CurGTs     *float64 `json:"cur_gts"`
	CurWidth   *int     `json:"cur_width"`
	RawGbps    *float64 `json:"raw_gbps"`
	EffGbps    *float64 `json:"effective_gbps"`
	Downgraded bool     `json:"downgraded"`
	// MPS is the Max_Payload_Size in use (from config space, root only);
	// MPSAssumed is set when the effective rate used 256 instead.
	MPS        *int      `json:"mps_bytes"`
	MRRS       *int      `json:"mrrs_bytes"`
	MPSAssumed bool      `json:"mps_assumed"`
	Upstream   *Upstream `json:"upstream,omitempty"`
}

// Upstream is the port above a function: a root port or switch
// downstream port, i.e. the slot.
type Upstream struct {
	PCI      string   `json:"pci"`
	MaxGTs   *float64 `json:"max_gts"`
	MaxWidth *int     `json:"max_width"`
}

// IRQ is one interrupt of a NIC, found by PCI address (msi_irqs).
type IRQ struct {
	IRQ  int    `json:"irq"`
	Name string `json:"name"`
	// Affinity is smp_affinity_list: the CPUs the IRQ may be sent to.
	Affinity []int `json:"affinity"`
	// Effective is effective_affinity_list: where the kernel actually
	// routes it (x86 picks one CPU of the mask). Nil before kernel 4.13.
	Effective []int `json:"effective_affinity"`
	// Counts are interrupts served per CPU since boot (zeros omitted),
	// keyed by CPU number as in /proc/interrupts.
	Counts map[string]uint64 `json:"counts"`
	Total  uint64            `json:"total"`
}

// RDMAPort is one port of an RDMA device on the NIC's PCI function.
type RDMAPort struct {
	Device    string  `json:"device"`
	Port      int     `json:"port"`
	State     string  `json:"state"`
	PhysState string  `json:"phys_state"`
	RateGbps  float64 `json:"rate_gbps"`
	LinkLayer string  `json:"link_layer"`
	Firmware  string  `json:"firmware,omitempty"`
	// HCAType and BoardID identify the adapter ("MT4125", "MT_0000000359").
	HCAType string `json:"hca_type,omitempty"`
	BoardID string `json:"board_id,omitempty"`
	// Netdev is the interface RoCE runs on (the GID table's, else the NIC's).
	Netdev string `json:"netdev,omitempty"`
	// GIDs are the GID table's entries in use.
	GIDs []GID `json:"gids"`
	// ActiveMTU is RoCE's active MTU: the largest IB MTU (256 … 4096) not
	// above the netdev's MTU less 96 bytes of RoCE headers; nil for
	// InfiniBand ports (sysfs does not show theirs) or an unknown MTU.
	ActiveMTU *int `json:"active_mtu"`
	// Counters and HWCounters are counters/ (IB PMA) and hw_counters/
	// (the driver's: out_of_sequence, np_cnp_sent, …) by name; nil where
	// the directory is absent.
	Counters   map[string]uint64 `json:"counters"`
	HWCounters map[string]uint64 `json:"hw_counters"`
}

// GID is one GID table entry in use.
type GID struct {
	Index int `json:"index"`
	// Type is "RoCE v2", "IB/RoCE v1", or "" where the kernel gives none.
	Type string `json:"type"`
	Ndev string `json:"ndev"`
	// Address is the GID as an address (IPv4 for the IPv4-mapped GIDs
	// RoCE v2 makes of an interface's IPv4 addresses); GID as the kernel
	// prints it.
	Address string `json:"address"`
	GID     string `json:"gid"`
}

// RoCEv2 reports whether the port has a RoCE v2 GID.
func (p RDMAPort) RoCEv2() bool {
	for _, g := range p.GIDs {
		if g.Type == "RoCE v2" {
			return true
		}
	}
	return false
}

// GPU is a display or 3D controller (PCI class 0x0300 or 0x0302).
type GPU struct {
	PCI      string `json:"pci"`
	Vendor   string `json:"vendor"`
	VendorID string `json:"vendor_id"`
	DeviceID string `json:"device_id"`
	Class    string `json:"class"`
	Model    string `json:"model"`
	Driver   string `json:"driver,omitempty"`
	NUMANode *int   `json:"numa_node"`
	// NICs is the GPU's distance to every PCI NIC, nearest first.
	NICs []GPUNIC `json:"nics"`
}

// GPUNIC is the PCIe route between a GPU and a NIC, named as
// `nvidia-smi topo -m` names it: PIX (at most one PCIe switch), PXB
// (several switches, no host bridge), PHB (through a PCIe host bridge),
// NODE (between host bridges of one NUMA node), SYS (across the socket
// interconnect).
type GPUNIC struct {
	Interface string `json:"interface"`
	PCI       string `json:"pci"`
	Distance  string `json:"distance"`
	// RDMA is set when the NIC has an RDMA device.
	RDMA bool `json:"rdma"`
	// Bridges are the PCIe bridges on the route, from the GPU's upstream
	// port to the NIC's, with their ACS control.
	Bridges []PathBridge `json:"bridges"`
}

// PathBridge is a bridge on a GPU–NIC route.
type PathBridge struct {
	PCI string `json:"pci"`
	// PeerToPeer marks the bridges a peer-to-peer transfer crosses below
	// the route's common switch: where ACS redirect sends it up instead.
	PeerToPeer bool `json:"peer_to_peer"`
	// ACS is the bridge's ACS control; nil where it has no ACS capability
	// or its config space could not be read (Notes say which).
	ACS *ACSState `json:"acs"`
}

// ACSState is a bridge's ACS control register.
type ACSState struct {
	Control string   `json:"control"`
	Enabled []string `json:"enabled"`
	// Redirect: request or completion redirect is on.
	Redirect bool `json:"redirect"`
}

// Qdisc is the interface's root queueing discipline and what caps its
// egress, from live rtnetlink data (nil when unknown, e.g. for a plain
// captured tree).
type Qdisc struct {
	Kind string `json:"kind"` // the root qdisc's
	// RateGbps is the rate the interface's egress is shaped to: the
	// shaper's, unless it caps each flow only; null when none.
	RateGbps *float64 `json:"rate_gbps"`
	// Shaper is the qdisc or class that sets the cap (netdev.Link.Shaper),
	// nil when none does.
	Shaper *Shaper `json:"shaper,omitempty"`
}

// Shaper is what caps an interface's egress.
type Shaper struct {
	Kind     string  `json:"kind"`   // tbf, htb, fq, cake
	Handle   string  `json:"handle"` // the qdisc's, or the htb class's ("1:10")
	RateGbps float64 `json:"rate_gbps"`
	// PerFlow is set for fq's maxrate: it caps each flow, not the link.
	PerFlow bool `json:"per_flow,omitempty"`
	// OverheadBytes is what the shaper counts of each packet beyond the
	// IP packet when it says so (cake's overhead); nil when it counts the
	// packet as the qdisc sees it, MAC header included.
	OverheadBytes *int `json:"overhead_bytes,omitempty"`
	// Detail names it as tc does: "tbf 1: rate 1gbit".
	Detail string `json:"detail"`
	// DeclaredLineRate is set when the interface's alias declares this
	// rate as the line rate the shaper stands in for (linerate's lab).
	DeclaredLineRate bool `json:"declared_line_rate,omitempty"`
}
