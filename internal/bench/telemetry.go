package bench

import (
	"strconv"
	"sync"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/hostfs"
)

// sampler reads this host's per-CPU load once per interval while an
// external tool runs: /proc/stat tick deltas, NET_RX/NET_TX softirq counts
// and the NIC's interrupts per CPU, in the engine's CPUSample shape so
// every driver's runs explain alike.
//
// It mirrors the engine's own sampler, which the engine keeps unexported;
// a reading that fails is skipped (its fields stay zero) rather than
// ending the run.
type sampler struct {
	fs      *hostfs.FS
	irqs    map[int]bool
	every   time.Duration
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	samples []cpuSample
}

type cpuSample struct {
	per   map[string]engine.CPUSample
	total engine.CPUSample
}

// reading is one read of the counters.
type reading struct {
	stat *hostfs.CPUStat
	soft *hostfs.Softirqs
	irq  map[int]uint64 // NIC interrupts by CPU
}

// startSampler starts sampling every d; Stop ends it.
func startSampler(fs *hostfs.FS, nicIRQs []int, d time.Duration) *sampler {
	s := &sampler{fs: fs, irqs: map[int]bool{}, every: d, stop: make(chan struct{}), done: make(chan struct{})}
	for _, q := range nicIRQs {
		s.irqs[q] = true
	}
	prev := s.read()
	go func() {
		defer close(s.done)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				now := s.read()
				s.mu.Lock()
				s.samples = append(s.samples, diff(prev, now))
				s.mu.Unlock()
				prev = now
			}
		}
	}()
	return s
}

// Stop ends sampling and returns the samples, one per elapsed interval.
func (s *sampler) Stop() []cpuSample {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples
}

// sample returns sample i if it has been taken (for live display).
func (s *sampler) sample(i int) (cpuSample, bool) {
	if s == nil {
		return cpuSample{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < 0 || i >= len(s.samples) {
		return cpuSample{}, false
	}
	return s.samples[i], true
}

func (s *sampler) read() reading {
	var r reading
	r.stat, _ = s.fs.CPUStat()
	r.soft, _ = s.fs.Softirqs()
	if len(s.irqs) > 0 {
		if in, err := s.fs.Interrupts(func(irq int, _ string) bool { return s.irqs[irq] }); err == nil {
			r.irq = map[int]uint64{}
			for _, q := range in.IRQs {
				for cpu, n := range q.Counts {
					r.irq[cpu] += n
				}
			}
		}
	}
	return r
}

// diff turns two readings into the load between them.
func diff(a, b reading) cpuSample {
	out := cpuSample{per: map[string]engine.CPUSample{}}
	if a.stat != nil && b.stat != nil {
		for cpu, t := range b.stat.PerCPU {
			if p, ok := a.stat.PerCPU[cpu]; ok {
				out.per[strconv.Itoa(cpu)] = loadPct(p, t)
			}
		}
		out.total = loadPct(a.stat.All, b.stat.All)
	}
	if a.soft != nil && b.soft != nil {
		for _, cpu := range b.soft.CPUs {
			k := strconv.Itoa(cpu)
			c := out.per[k]
			c.NetRX = grow(a.soft.Counts["NET_RX"][cpu], b.soft.Counts["NET_RX"][cpu])
			c.NetTX = grow(a.soft.Counts["NET_TX"][cpu], b.soft.Counts["NET_TX"][cpu])
			out.per[k] = c
			out.total.NetRX += c.NetRX
			out.total.NetTX += c.NetTX
		}
	}
	for cpu, n := range b.irq {
		k := strconv.Itoa(cpu)
		c := out.per[k]
		c.NICIRQs = grow(a.irq[cpu], n)
		out.per[k] = c
		out.total.NICIRQs += c.NICIRQs
	}
	return out
}

func loadPct(a, b hostfs.CPUTimes) engine.CPUSample {
	dt := float64(grow(a.Total(), b.Total()))
	if dt == 0 {
		return engine.CPUSample{}
	}
	pct := func(x, y uint64) float64 { return float64(int(1000*float64(grow(x, y))/dt+0.5)) / 10 }
	return engine.CPUSample{Busy: pct(a.Busy(), b.Busy()), SoftIRQ: pct(a.SoftIRQ, b.SoftIRQ), IRQ: pct(a.IRQ, b.IRQ)}
}

// grow is b-a for a counter; one that went back counts as zero.
func grow(a, b uint64) uint64 {
	if b < a {
		return 0
	}
	return b - a
}

// attach puts samples on a run's intervals, by position: the sampler and
// the tool both start their clocks at the tool's start (the tool's first
// interval begins when its connections are up, a few milliseconds later).
// With both ends on one machine the same samples describe the server.
func attach(r *Run, samples []cpuSample, sameMachine bool) {
	for i := range r.Intervals {
		if i >= len(samples) {
			break
		}
		iv := &r.Intervals[i]
		iv.CPU.Client = samples[i].per
		total := samples[i].total
		iv.CPUTotal.Client = total
		if sameMachine {
			iv.CPU.Server = samples[i].per
			iv.CPUTotal.Server = &total
		}
	}
}
