// Package telemetry samples a host's per-CPU load while a test runs:
// /proc/stat tick deltas (busy, irq and softirq time), NET_RX/NET_TX
// softirq counts from /proc/softirqs, and the interrupts of the NIC under
// test from /proc/interrupts, per CPU and for the whole host.
//
// The native engine samples at its own interval boundaries (Sampler.Sample);
// external tools (iperf3, iperf2, perftest) and the agent's tool servers
// are sampled by a Ticker beside them. Both produce the same CPUSample, so
// every driver's runs can be explained alike.
package telemetry

import (
	"maps"
	"math"
	"strconv"

	"github.com/linerate/linerate/internal/hostfs"
)

// CPUSample is the load of one CPU, or of a whole host, over an interval:
// percentages from /proc/stat tick deltas (USER_HZ, so 10 ticks per CPU in
// a 100 ms interval: coarse, but the kernel's own accounting), and counts
// from /proc/softirqs and /proc/interrupts.
type CPUSample struct {
	Busy    float64 `json:"busy"`    // % of the time not idle (user, system, irq, softirq, steal)
	SoftIRQ float64 `json:"softirq"` // % in softirq (NET_RX/NET_TX processing, mostly)
	IRQ     float64 `json:"irq"`     // % in hard interrupt handlers
	NetRX   uint64  `json:"net_rx"`  // NET_RX softirqs run
	NetTX   uint64  `json:"net_tx"`  // NET_TX softirqs run
	NICIRQs uint64  `json:"nic_irqs"`
}

// Sample is one interval's load: per CPU, keyed by CPU number as the JSON
// documents key it, and for the whole host.
type Sample struct {
	PerCPU map[string]CPUSample `json:"cpu"`
	Total  CPUSample            `json:"total"`
}

// Sampler turns successive reads of /proc/stat, /proc/softirqs and
// /proc/interrupts into per-interval samples. A source that cannot be
// read is left out of the samples and noted (Notes, Unread): its fields
// are unknown for the run, and readers must say so rather than read the
// zeros; telemetry never ends a test. A Sampler is not safe for
// concurrent use.
type Sampler struct {
	fs    *hostfs.FS
	irqs  map[int]bool // the NIC's IRQs; empty for virtual interfaces
	stat  *hostfs.CPUStat
	soft  *hostfs.Softirqs
	irqBy map[int]uint64 // NIC interrupts served so far, by CPU
	notes []string
	noted map[string]bool
	// unread maps a source that failed ("proc/stat", "proc/softirqs",
	// "proc/interrupts") to why: what it measures is unknown, not zero.
	unread map[string]string
}

// NewSampler reads the counters of fs once, as the baseline of the first
// sample. nicIRQs are the interrupts to count (the NIC under test's, found
// by PCI address); none for a virtual interface.
func NewSampler(fs *hostfs.FS, nicIRQs []int) *Sampler {
	h := &Sampler{fs: fs, irqs: map[int]bool{}, noted: map[string]bool{}, unread: map[string]string{}}
	for _, q := range nicIRQs {
		h.irqs[q] = true
	}
	h.Sample() // the baseline
	return h
}

// Notes are the sources that could not be read, one sentence each.
func (h *Sampler) Notes() []string { return h.notes }

// Sources the sampler reads, as Unread names them.
const (
	SrcStat       = "proc/stat"       // busy, irq and softirq time per CPU
	SrcSoftirqs   = "proc/softirqs"   // NET_RX and NET_TX softirq counts
	SrcInterrupts = "proc/interrupts" // the NIC's interrupts
)

// Unread maps each source that could not be read, at any sample, to the
// reason (the last error): the fields it feeds are unknown for the run,
// not zero. Nil when every read worked.
func (h *Sampler) Unread() map[string]string {
	if len(h.unread) == 0 {
		return nil
	}
	return maps.Clone(h.unread)
}

// note records a failure of source src once.
func (h *Sampler) note(src string, err error) {
	h.unread[src] = err.Error()
	if s := err.Error(); !h.noted[s] {
		h.noted[s] = true
		h.notes = append(h.notes, s)
	}
}

// Sample returns the load since the previous call (or since NewSampler).
func (h *Sampler) Sample() Sample {
	out := Sample{PerCPU: map[string]CPUSample{}}
	if st, err := h.fs.CPUStat(); err != nil {
		h.note(SrcStat, err)
	} else {
		if h.stat != nil {
			for cpu, t := range st.PerCPU {
				if p, ok := h.stat.PerCPU[cpu]; ok {
					out.PerCPU[strconv.Itoa(cpu)] = loadOf(p, t)
				}
			}
			out.Total = loadOf(h.stat.All, st.All)
		}
		h.stat = st
	}
	h.sampleSoftirqs(&out)
	h.sampleIRQs(&out)
	return out
}

func (h *Sampler) sampleSoftirqs(out *Sample) {
	s, err := h.fs.Softirqs()
	if err != nil {
		h.note(SrcSoftirqs, err)
		return
	}
	if h.soft != nil {
		for _, cpu := range s.CPUs {
			k := strconv.Itoa(cpu)
			c := out.PerCPU[k]
			c.NetRX = delta(h.soft.Counts["NET_RX"][cpu], s.Counts["NET_RX"][cpu])
			c.NetTX = delta(h.soft.Counts["NET_TX"][cpu], s.Counts["NET_TX"][cpu])
			out.PerCPU[k] = c
			out.Total.NetRX += c.NetRX
			out.Total.NetTX += c.NetTX
		}
	}
	h.soft = s
}

func (h *Sampler) sampleIRQs(out *Sample) {
	if len(h.irqs) == 0 {
		return
	}
	in, err := h.fs.Interrupts(func(irq int, _ string) bool { return h.irqs[irq] })
	if err != nil {
		h.note(SrcInterrupts, err)
		return
	}
	now := map[int]uint64{}
	for _, q := range in.IRQs {
		for cpu, n := range q.Counts {
			now[cpu] += n
		}
	}
	if h.irqBy != nil {
		for cpu, n := range now {
			k := strconv.Itoa(cpu)
			c := out.PerCPU[k]
			c.NICIRQs = delta(h.irqBy[cpu], n)
			out.PerCPU[k] = c
			out.Total.NICIRQs += c.NICIRQs
		}
	}
	h.irqBy = now
}

// loadOf turns two readings of a CPU's ticks into percentages.
func loadOf(a, b hostfs.CPUTimes) CPUSample {
	dt := float64(delta(a.Total(), b.Total()))
	if dt == 0 {
		return CPUSample{}
	}
	pct := func(x, y uint64) float64 { return round1(100 * float64(delta(x, y)) / dt) }
	return CPUSample{
		Busy:    pct(a.Busy(), b.Busy()),
		SoftIRQ: pct(a.SoftIRQ, b.SoftIRQ),
		IRQ:     pct(a.IRQ, b.IRQ),
	}
}

// delta is b-a for counters that only grow; a counter that went back (a
// CPU hot-plugged, a wrap) counts as zero rather than as 2^64.
func delta(a, b uint64) uint64 {
	if b < a {
		return 0
	}
	return b - a
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }
