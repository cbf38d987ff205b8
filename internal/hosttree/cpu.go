package hosttree

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// Topology describes a machine's processors in the terms Linux numbers them
// by, and builds its CPUs.
type Topology struct {
	// Sockets, CoresPerSocket and ThreadsPerCore give the shape.
	Sockets, CoresPerSocket, ThreadsPerCore int
	// CoresPerL3 is the number of cores sharing an L3 (a CCX on AMD, the
	// whole socket on most Intel parts).
	CoresPerL3 int
	// CoreIDs are the core_id values of a socket's cores, in order; nil
	// means 0…CoresPerSocket-1. Many parts number cores sparsely.
	CoreIDs []int
	// Governor is every CPU's scaling_governor.
	Governor string
	// FreqsKHz are scaling_cur_freq values, given to the CPUs in turn.
	FreqsKHz []int
}

// CPUs numbers the CPUs as Linux does on x86: the first thread of every
// core of every socket first (socket 0's cores, then socket 1's), then the
// second threads in the same order. NUMA node = socket.
func (tp Topology) CPUs() []CPU {
	threads := max(1, tp.ThreadsPerCore)
	cores := tp.Sockets * tp.CoresPerSocket
	coreIDs := tp.CoreIDs
	if coreIDs == nil {
		coreIDs = make([]int, tp.CoresPerSocket)
		for i := range coreIDs {
			coreIDs[i] = i
		}
	}
	maxCore := 0
	for _, c := range coreIDs {
		maxCore = max(maxCore, c)
	}
	pkgShift := bits.Len(uint(maxCore)) + 1 // one bit for the thread
	perL3 := max(1, tp.CoresPerL3)
	cpus := make([]CPU, 0, cores*threads)
	for th := range threads {
		for s := range tp.Sockets {
			for c := range tp.CoresPerSocket {
				id := th*cores + s*tp.CoresPerSocket + c
				core := s*tp.CoresPerSocket + c
				sib := make([]int, threads)
				for k := range threads {
					sib[k] = k*cores + core
				}
				freq := 0
				if len(tp.FreqsKHz) > 0 {
					freq = tp.FreqsKHz[id%len(tp.FreqsKHz)]
				}
				cpus = append(cpus, CPU{
					ID:         id,
					Package:    s,
					Core:       coreIDs[c],
					CoreIndex:  core,
					Node:       s,
					L3:         core / perL3,
					Siblings:   sib,
					APICID:     s<<pkgShift | coreIDs[c]<<1 | th,
					Governor:   tp.Governor,
					CurFreqKHz: freq,
				})
			}
		}
	}
	return cpus
}

// group returns the CPUs for which key gives the same value as for c.
func (h *Host) group(c CPU, key func(CPU) int) []int {
	var out []int
	k := key(c)
	for _, o := range h.CPUs {
		if key(o) == k {
			out = append(out, o.ID)
		}
	}
	return out
}

// addCPUs writes sys/devices/system/cpu: the CPU lists, each CPU's
// topology and caches (Documentation/ABI/stable/sysfs-devices-system-cpu,
// Documentation/admin-guide/cputopology.rst) and a cpufreq policy per CPU.
func (h *Host) addCPUs(t *tree) {
	nr := h.nrCPUs()
	all := list(h.allCPUs())
	base := "sys/devices/system/cpu/"
	t.attr(base+"online", all)
	t.attr(base+"possible", all)
	t.attr(base+"present", all)
	t.attr(base+"offline", "")
	t.attr(base+"isolated", "")
	t.attr(base+"kernel_max", "8191")
	p := h.Processor
	epp := strings.HasSuffix(p.ScalingDriver, "-epp") || p.ScalingDriver == "intel_pstate"
	for _, c := range h.CPUs {
		dir := fmt.Sprintf("%scpu%d/", base, c.ID)
		pkg := h.group(c, func(o CPU) int { return o.Package })
		a := func(name, v string) { t.attr(dir+name, v) }
		a("topology/physical_package_id", strconv.Itoa(c.Package))
		a("topology/core_id", strconv.Itoa(c.Core))
		a("topology/thread_siblings_list", list(c.Siblings))
		a("topology/thread_siblings", kernelMask(c.Siblings, nr))
		a("topology/core_siblings_list", list(pkg))
		a("topology/core_siblings", kernelMask(pkg, nr))
		if h.atLeast(5, 2) {
			a("topology/die_id", strconv.Itoa(c.Die))
		}
		if h.atLeast(5, 4) {
			// core_cpus and package_cpus supersede thread_siblings and
			// core_siblings (cputopology.rst); die_cpus and cluster_cpus
			// are left out.
			a("topology/core_cpus_list", list(c.Siblings))
			a("topology/core_cpus", kernelMask(c.Siblings, nr))
			a("topology/package_cpus_list", list(pkg))
			a("topology/package_cpus", kernelMask(pkg, nr))
		}
		for i, cache := range p.Caches {
			if cache.Level == 0 {
				continue
			}
			shared, id := c.Siblings, c.CoreIndex
			if cache.Level == 3 {
				shared, id = h.group(c, func(o CPU) int { return o.L3 }), c.L3
			}
			d := fmt.Sprintf("cache/index%d/", i)
			a(d+"level", strconv.Itoa(cache.Level))
			a(d+"type", cache.Type)
			a(d+"size", strconv.Itoa(cache.SizeKB)+"K")
			a(d+"id", strconv.Itoa(id))
			a(d+"shared_cpu_list", list(shared))
			a(d+"shared_cpu_map", kernelMask(shared, nr))
			a(d+"ways_of_associativity", strconv.Itoa(cache.Ways))
		}
		if p.ScalingDriver == "" {
			continue
		}
		policy := fmt.Sprintf("policy%d", c.ID)
		t.link(dir+"cpufreq", "../cpufreq/"+policy)
		pd := base + "cpufreq/" + policy + "/"
		pa := func(name, v string) { t.attr(pd+name, v) }
		pa("affected_cpus", strconv.Itoa(c.ID))
		pa("related_cpus", strconv.Itoa(c.ID))
		pa("scaling_driver", p.ScalingDriver)
		pa("scaling_governor", c.Governor)
		pa("scaling_available_governors", p.AvailableGovernors)
		pa("cpuinfo_max_freq", strconv.Itoa(p.MaxFreqKHz))
		pa("cpuinfo_min_freq", strconv.Itoa(p.MinFreqKHz))
		pa("scaling_max_freq", strconv.Itoa(p.MaxFreqKHz))
		pa("scaling_min_freq", strconv.Itoa(p.MinFreqKHz))
		pa("scaling_cur_freq", strconv.Itoa(c.CurFreqKHz))
		if epp {
			pref := "balance_performance"
			if c.Governor == "performance" {
				pref = "performance"
			}
			pa("energy_performance_preference", pref)
			pa("energy_performance_available_preferences", "default performance balance_performance balance_power power ")
		}
	}
}

// addCPUInfo writes /proc/cpuinfo as arch/x86/kernel/cpu/proc.c prints it.
func (h *Host) addCPUInfo(t *tree) {
	p := h.Processor
	var b strings.Builder
	for _, c := range h.CPUs {
		pkg := h.group(c, func(o CPU) int { return o.Package })
		cores := 0
		for _, o := range pkg {
			if h.CPUs[o].Siblings[0] == o {
				cores++
			}
		}
		mhz := c.CurFreqKHz
		fmt.Fprintf(&b, "processor\t: %d\n", c.ID)
		fmt.Fprintf(&b, "vendor_id\t: %s\n", p.VendorID)
		fmt.Fprintf(&b, "cpu family\t: %d\n", p.Family)
		fmt.Fprintf(&b, "model\t\t: %d\n", p.Model)
		fmt.Fprintf(&b, "model name\t: %s\n", p.ModelName)
		fmt.Fprintf(&b, "stepping\t: %d\n", p.Stepping)
		fmt.Fprintf(&b, "microcode\t: %s\n", p.Microcode)
		fmt.Fprintf(&b, "cpu MHz\t\t: %d.%03d\n", mhz/1000, mhz%1000)
		fmt.Fprintf(&b, "cache size\t: %s\n", p.CPUInfoCache)
		fmt.Fprintf(&b, "physical id\t: %d\n", c.Package)
		fmt.Fprintf(&b, "siblings\t: %d\n", len(pkg))
		fmt.Fprintf(&b, "core id\t\t: %d\n", c.Core)
		fmt.Fprintf(&b, "cpu cores\t: %d\n", cores)
		fmt.Fprintf(&b, "apicid\t\t: %d\n", c.APICID)
		fmt.Fprintf(&b, "initial apicid\t: %d\n", c.APICID)
		b.WriteString("fpu\t\t: yes\nfpu_exception\t: yes\n")
		fmt.Fprintf(&b, "cpuid level\t: %d\n", p.CPUIDLevel)
		b.WriteString("wp\t\t: yes\n")
		fmt.Fprintf(&b, "flags\t\t: %s\n", p.Flags)
		fmt.Fprintf(&b, "bugs\t\t: %s\n", p.Bugs)
		fmt.Fprintf(&b, "bogomips\t: %s\n", p.BogoMIPS)
		if p.TLBSize != "" {
			fmt.Fprintf(&b, "TLB size\t: %s\n", p.TLBSize)
		}
		b.WriteString("clflush size\t: 64\ncache_alignment\t: 64\n")
		fmt.Fprintf(&b, "address sizes\t: %s\n", p.AddressSizes)
		fmt.Fprintf(&b, "power management:%s\n\n", p.PowerManagement)
	}
	t.file("proc/cpuinfo", []byte(b.String()))
}
