package hosttree

import (
	"slices"
	"strconv"
)

// resolvedIRQ is an IRQ with its chip, hardware number and affinities
// filled in.
type resolvedIRQ struct {
	IRQ
	chip  string
	hwirq int
}

// irqs returns every IRQ of the host, NIC IRQs included, sorted by number.
func (h *Host) irqs() []resolvedIRQ {
	var out []resolvedIRQ
	add := func(q IRQ, nic *NIC) {
		if nic != nil {
			if q.MSIX == "" {
				q.MSIX = nic.PCI.BDF
			}
			q.Node = nic.PCI.NUMANode
		}
		r := resolvedIRQ{IRQ: q, chip: q.Chip, hwirq: q.HWIRQ}
		if q.MSIX != "" {
			a, _ := parseBDF(q.MSIX) // validated
			if h.atLeast(6, 2) {
				// Per-device MSI domains (Linux 6.2): the chip is named
				// after the device and the hwirq is the vector index.
				r.chip, r.hwirq = "IR-PCI-MSIX-"+q.MSIX, q.Vector
			} else {
				// Before 6.2: one global PCI-MSI domain whose hwirq is
				// pci_msi_domain_calc_hwirq(): domain<<27 | requester ID<<11 | index.
				r.chip, r.hwirq = "IR-PCI-MSI", a.domain<<27|a.devID()<<11|q.Vector
			}
		}
		if r.Handler == "" {
			r.Handler = "edge"
		}
		if r.Affinity == nil {
			r.Affinity = h.allCPUs()
		}
		if r.Effective == nil {
			r.Effective = r.Affinity[:1]
		}
		out = append(out, r)
	}
	for _, q := range h.IRQs {
		add(q, nil)
	}
	for i := range h.NICs {
		for _, q := range h.NICs[i].IRQs {
			add(q, &h.NICs[i])
		}
	}
	slices.SortFunc(out, func(a, b resolvedIRQ) int { return a.Num - b.Num })
	return out
}

// addIRQs writes /proc/interrupts and /proc/irq.
func (h *Host) addIRQs(t *tree) {
	nr := h.nrCPUs()
	irqs := h.irqs()
	t.attr("proc/irq/default_smp_affinity", kernelMask(h.allCPUs(), nr))
	for _, q := range irqs {
		d := "proc/irq/" + strconv.Itoa(q.Num) + "/"
		t.attr(d+"smp_affinity", kernelMask(q.Affinity, nr))
		t.attr(d+"smp_affinity_list", list(q.Affinity))
		t.attr(d+"effective_affinity", kernelMask(q.Effective, nr))
		t.attr(d+"effective_affinity_list", list(q.Effective))
		t.attr(d+"affinity_hint", kernelMask(q.Hint, nr))
		t.attr(d+"node", strconv.Itoa(q.Node))
	}
	t.file("proc/interrupts", h.interrupts(irqs))
}

// archLine is one of the x86 per-CPU counters that close /proc/interrupts
// (arch/x86/kernel/irq.c arch_show_interrupts).
type archLine struct {
	name, desc string
	count      func(cpu int) uint64
	single     bool // ERR and MIS print one number
}

func archLines() []archLine {
	zero := func(int) uint64 { return 0 }
	return []archLine{
		{name: "NMI", desc: "Non-maskable interrupts", count: func(c int) uint64 { return uint64(40 + c%7) }},
		{name: "LOC", desc: "Local timer interrupts", count: func(c int) uint64 { return uint64(2104877 + (c*7919)%99991) }},
		{name: "SPU", desc: "Spurious interrupts", count: zero},
		{name: "PMI", desc: "Performance monitoring interrupts", count: func(c int) uint64 { return uint64(40 + c%7) }},
		{name: "IWI", desc: "IRQ work interrupts", count: func(c int) uint64 { return uint64(12 + (c*13)%41) }},
		{name: "RTR", desc: "APIC ICR read retries", count: zero},
		{name: "RES", desc: "Rescheduling interrupts", count: func(c int) uint64 { return uint64(5113 + (c*131)%3001) }},
		{name: "CAL", desc: "Function call interrupts", count: func(c int) uint64 { return uint64(20947 + (c*17)%9001) }},
		{name: "TLB", desc: "TLB shootdowns", count: func(c int) uint64 { return uint64(311 + (c*29)%701) }},
		{name: "TRM", desc: "Thermal event interrupts", count: zero},
		{name: "THR", desc: "Threshold APIC interrupts", count: zero},
		{name: "DFR", desc: "Deferred Error APIC interrupts", count: zero},
		{name: "MCE", desc: "Machine check exceptions", count: zero},
		{name: "MCP", desc: "Machine check polls", count: func(int) uint64 { return 48 }},
		{name: "ERR", single: true},
		{name: "MIS", single: true},
		{name: "PIN", desc: "Posted-interrupt notification event", count: zero},
		{name: "NPI", desc: "Nested posted-interrupt event", count: zero},
		{name: "PIW", desc: "Posted-interrupt wakeup event", count: zero},
	}
}

// interrupts renders /proc/interrupts exactly as kernel/irq/proc.c
// show_interrupts prints it: a header of CPU columns indented by prec+8,
// then per IRQ "%*d: ", "%10u " per CPU, " %8s" chip, " %*lu" hwirq,
// "-%-8s" handler and "  %s" action name, where prec is the number of
// digits of nr_irqs (at least 3).
func (h *Host) interrupts(irqs []resolvedIRQ) []byte {
	nr := h.nrCPUs()
	nrIRQs := h.NrIRQs
	if nrIRQs == 0 {
		nrIRQs = 4096
	}
	prec := 3
	for j := 1000; prec < 10 && j <= nrIRQs; j *= 10 {
		prec++
	}
	b := make([]byte, 0, (len(irqs)+24)*(nr*11+80))
	b = appendPad(b, "", prec+8)
	for c := range nr {
		b = appendPadRight(b, "CPU"+strconv.Itoa(c), 11)
	}
	b = append(b, '\n')
	var num [24]byte
	counts := func(f func(int) uint64) {
		for c := range nr {
			b = appendPad(b, string(strconv.AppendUint(num[:0], f(c), 10)), 10)
			b = append(b, ' ')
		}
	}
	for _, q := range irqs {
		b = appendPad(b, strconv.Itoa(q.Num), prec)
		b = append(b, ": "...)
		counts(func(c int) uint64 { return q.Counts[c] })
		b = append(b, ' ')
		b = appendPad(b, q.chip, 8)
		b = append(b, ' ')
		b = appendPad(b, strconv.Itoa(q.hwirq), prec)
		b = append(b, '-')
		b = appendPadRight(b, q.Handler, 8)
		b = append(b, "  "...)
		b = append(b, q.Name...)
		b = append(b, '\n')
	}
	for _, l := range archLines() {
		b = appendPad(b, l.name, prec)
		b = append(b, ": "...)
		if l.single {
			b = appendPad(b, "0", 10)
			b = append(b, '\n')
			continue
		}
		counts(l.count)
		b = append(b, "  "...)
		b = append(b, l.desc...)
		b = append(b, '\n')
	}
	return b
}

// appendPad appends s right-aligned in width (printf "%*s").
func appendPad(b []byte, s string, width int) []byte {
	for range width - len(s) {
		b = append(b, ' ')
	}
	return append(b, s...)
}

// appendPadRight appends s left-aligned in width (printf "%-*s").
func appendPadRight(b []byte, s string, width int) []byte {
	b = append(b, s...)
	for range width - len(s) {
		b = append(b, ' ')
	}
	return b
}
