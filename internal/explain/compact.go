package explain

import (
	"math"
	"slices"
	"strconv"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/result"
)

// Stored telemetry (docs/architecture.md, "Stored telemetry"). A run keeps
// per-interval samples of every CPU of both ends: 23 KB a run at 12 CPUs,
// but some 40 times more on a pair of 512-CPU hosts. On an end with more
// than compactAbove CPUs, a run keeps full samples only for the CPUs that
// matter — the test's threads' CPUs, the NIC's IRQ CPUs, the streams'
// receive CPUs, every CPU that served softirq work the explanations
// count, and every CPU busy above keepBusy% (or in softirq or hard IRQ
// above keepSoftirq%) in any interval — and folds the rest into one sample
// per domain and interval: by L3 domain where the domain holds a kept CPU
// (the neighbours of the test's work, which the explanations reason
// about), by NUMA node for the L3 domains with nothing kept, and as
// "rest" where the topology is unknown. Two 512-CPU hosts: 797 KB a run
// in full, 55 KB compacted (docs/benchmarks.md).
const (
	compactAbove = 32
	keepBusy     = 20.0 // % busy in some interval
	keepSoftirq  = 5.0  // % in softirq or in hard IRQ in some interval
)

// CompactTelemetry folds the idle, unused CPUs of each end with more than
// compactAbove sampled CPUs into per-domain totals. client and server are
// the ends' topologies (empty when unknown: then every folded CPU goes to
// one domain, "rest").
func CompactTelemetry(r *result.Result, client, server Topology) {
	for _, side := range []string{"client", "server"} {
		topo := client
		if side == "server" {
			topo = server
		}
		if sampledCPUs(r, side) <= compactAbove {
			continue
		}
		keep := keepCPUs(r, side)
		fold(r, side, keep, foldDomains(topo, keep))
	}
}

// samplesOf returns an interval's per-CPU samples of one end.
func samplesOf(iv *result.Interval, side string) map[string]result.CPUSample {
	if side == "client" {
		return iv.CPU.Client
	}
	return iv.CPU.Server
}

func sampledCPUs(r *result.Result, side string) int {
	n := 0
	for i := range r.Intervals {
		n = max(n, len(samplesOf(&r.Intervals[i], side)))
	}
	return n
}

// keepCPUs is the set of an end's CPUs whose samples stay whole.
func keepCPUs(r *result.Result, side string) map[int]bool {
	keep := map[int]bool{}
	add := func(cpus ...int) {
		for _, c := range cpus {
			if c >= 0 {
				keep[c] = true
			}
		}
	}
	host, app := r.Start.Client, r.Start.Placement.Client
	if side == "server" {
		host, app = r.Start.Server, r.Start.Placement.Server
	}
	add(app...)
	add(host.IRQCPUs...)
	for _, c := range r.Start.Connections {
		if side == "client" {
			add(c.ClientCPU)
		} else {
			add(c.ServerCPU)
		}
	}
	if side == receiver(r.Start.Direction) || r.Start.Direction == result.Bidir {
		// The receiver's softirq CPUs as the explanations pick them
		// (explain.go): buckets, placements and fairness name them.
		add(loadOf(r, side).softirqCPUs()...)
		for _, iv := range r.Intervals {
			for _, s := range iv.Streams {
				if s.RxCPU != nil {
					add(*s.RxCPU)
				}
			}
		}
	}
	busiest, top := -1, -1.0
	for i := range r.Intervals {
		for k, s := range samplesOf(&r.Intervals[i], side) {
			c, err := strconv.Atoi(k)
			if err != nil {
				continue
			}
			if s.Busy >= keepBusy || s.SoftIRQ >= keepSoftirq || s.IRQ >= keepSoftirq || s.NICIRQs > 0 {
				add(c)
			}
			if s.Busy > top {
				busiest, top = c, s.Busy
			}
		}
	}
	add(busiest) // never fold every CPU
	return keep
}

// fold replaces the samples of the CPUs not in keep by per-domain totals,
// interval by interval.
func fold(r *result.Result, side string, keep map[int]bool, domainOf func(int) string) {
	for i := range r.Intervals {
		iv := &r.Intervals[i]
		per := samplesOf(iv, side)
		groups := map[string][]int{}
		sums := map[string]*result.CPUSample{}
		for k, s := range per {
			c, err := strconv.Atoi(k)
			if err != nil || keep[c] {
				continue
			}
			d := domainOf(c)
			groups[d] = append(groups[d], c)
			t := sums[d]
			if t == nil {
				t = &result.CPUSample{}
				sums[d] = t
			}
			t.Busy += s.Busy
			t.SoftIRQ += s.SoftIRQ
			t.IRQ += s.IRQ
			t.NetRX += s.NetRX
			t.NetTX += s.NetTX
			t.NICIRQs += s.NICIRQs
			delete(per, k)
		}
		if len(groups) == 0 {
			continue
		}
		var out []result.DomainSample
		keys := make([]string, 0, len(groups))
		for d := range groups {
			slices.Sort(groups[d])
			keys = append(keys, d)
		}
		slices.SortFunc(keys, func(a, b string) int { return groups[a][0] - groups[b][0] })
		for _, d := range keys {
			n := float64(len(groups[d]))
			t := *sums[d]
			t.Busy, t.SoftIRQ, t.IRQ = round1(t.Busy/n), round1(t.SoftIRQ/n), round1(t.IRQ/n)
			out = append(out, result.DomainSample{Domain: d, CPUs: cpulist.Format(groups[d]), CPUSample: t})
		}
		if iv.CPUDomains == nil {
			iv.CPUDomains = &result.HostDomains{}
		}
		if side == "client" {
			iv.CPUDomains.Client = out
		} else {
			iv.CPUDomains.Server = out
		}
	}
}

// foldDomains names the domain a folded CPU is totalled in: its L3 domain
// if that holds a kept CPU, else its NUMA node, else its L3 domain (no
// NUMA facts), else "rest".
func foldDomains(t Topology, keep map[int]bool) func(int) string {
	busyL3 := map[int]bool{}
	for c := range keep {
		if d := t.l3Of(c); d >= 0 {
			busyL3[d] = true
		}
	}
	return func(cpu int) string {
		d := t.l3Of(cpu)
		if n := t.nodeOf(cpu); n >= 0 && (d < 0 || !busyL3[d]) {
			return "numa:" + strconv.Itoa(n)
		}
		if d >= 0 {
			return "l3:" + strconv.Itoa(d)
		}
		return "rest"
	}
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }
