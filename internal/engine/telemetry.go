package engine

import (
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

// hostSampler turns successive reads of /proc/stat, /proc/softirqs and
// /proc/interrupts into per-interval CPUSamples. A source that cannot be
// read is left out (its fields stay zero) and reported once.
type hostSampler struct {
	fs    *hostfs.FS
	irqs  map[int]bool // the NIC's IRQs; empty for virtual interfaces
	stat  *hostfs.CPUStat
	soft  *hostfs.Softirqs
	irqBy map[int]uint64 // NIC interrupts served so far, by CPU
	notes []string
	noted map[string]bool
}

func newHostSampler(fs *hostfs.FS, nicIRQs []int) *hostSampler {
	h := &hostSampler{fs: fs, irqs: map[int]bool{}, noted: map[string]bool{}}
	for _, q := range nicIRQs {
		h.irqs[q] = true
	}
	h.sample() // the baseline
	return h
}

// note records a failure once.
func (h *hostSampler) note(err error) {
	if s := err.Error(); !h.noted[s] {
		h.noted[s] = true
		h.notes = append(h.notes, s)
	}
}

// sample returns the load since the previous call, per CPU (keyed by CPU
// number, as in the JSON) and for the host.
func (h *hostSampler) sample() (map[string]CPUSample, CPUSample) {
	per := map[string]CPUSample{}
	var total CPUSample
	if st, err := h.fs.CPUStat(); err != nil {
		h.note(err)
	} else {
		if h.stat != nil {
			for cpu, t := range st.PerCPU {
				if p, ok := h.stat.PerCPU[cpu]; ok {
					per[strconv.Itoa(cpu)] = loadOf(p, t)
				}
			}
			total = loadOf(h.stat.All, st.All)
		}
		h.stat = st
	}
	h.sampleSoftirqs(per, &total)
	h.sampleIRQs(per, &total)
	return per, total
}

func (h *hostSampler) sampleSoftirqs(per map[string]CPUSample, total *CPUSample) {
	s, err := h.fs.Softirqs()
	if err != nil {
		h.note(err)
		return
	}
	if h.soft != nil {
		for _, cpu := range s.CPUs {
			k := strconv.Itoa(cpu)
			c := per[k]
			c.NetRX = delta(h.soft.Counts["NET_RX"][cpu], s.Counts["NET_RX"][cpu])
			c.NetTX = delta(h.soft.Counts["NET_TX"][cpu], s.Counts["NET_TX"][cpu])
			per[k] = c
			total.NetRX += c.NetRX
			total.NetTX += c.NetTX
		}
	}
	h.soft = s
}

func (h *hostSampler) sampleIRQs(per map[string]CPUSample, total *CPUSample) {
	if len(h.irqs) == 0 {
		return
	}
	in, err := h.fs.Interrupts(func(irq int, _ string) bool { return h.irqs[irq] })
	if err != nil {
		h.note(err)
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
			c := per[k]
			c.NICIRQs = delta(h.irqBy[cpu], n)
			per[k] = c
			total.NICIRQs += c.NICIRQs
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
