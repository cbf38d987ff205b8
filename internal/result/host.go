package result

// HostInfo describes one end of a test: the machine and the interface the
// test runs over.
type HostInfo struct {
	Hostname string `json:"hostname"`
	Kernel   string `json:"kernel"`
	// BootID tells two ends on the same machine apart from two machines
	// (/proc/sys/kernel/random/boot_id; network namespaces share it).
	BootID string `json:"boot_id,omitempty"`
	Iface  string `json:"iface,omitempty"`
	PCI    string `json:"pci,omitempty"`
	// NICIRQs are the interrupts of the interface's PCI function (found
	// by PCI address, as doctor finds them); IRQCPUs the CPUs they are
	// routed to.
	NICIRQs []int `json:"nic_irqs,omitempty"`
	IRQCPUs []int `json:"irq_cpus,omitempty"`
	// CPUs the engine may pin to (the process's affinity) and, in order of
	// preference, those it would pick for stream threads.
	CPUs       []int `json:"cpus"`
	Candidates []int `json:"candidates"`
	// TuneJournal is the ID of the `linerate tune --apply` journal in
	// effect on this host's network namespace when the run started (its
	// changes applied and not reverted); "" when none. The report pairs
	// runs before and after a tuning by it.
	TuneJournal string `json:"tune_journal,omitempty"`
}
