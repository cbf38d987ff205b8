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
	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/nicstats"
)

// Inventory is everything known about one host.
type Inventory struct {
	Host    Host           `json:"host"`
	CPU     CPU            `json:"cpu"`
	NICs    []NIC          `json:"nics"`
	Virtual []NIC          `json:"virtual_interfaces"`
	Sysctl  map[string]any `json:"sysctl"`
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
}

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
}

// Qdisc is the interface's root queueing discipline, from live rtnetlink
// data (nil when unknown, e.g. for a plain captured tree).
type Qdisc struct {
	Kind     string   `json:"kind"`
	RateGbps *float64 `json:"rate_gbps"`
}
