package inventory

import (
	"bufio"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/cpulist"
)

const cpuDir = "sys/devices/system/cpu"

func (c *collector) cpu() CPU {
	cpu := CPU{L3Domains: [][]int{}, SMTSiblings: [][]int{}, NUMANodes: map[string][]int{}, Governors: map[string][]int{}}
	cpu.Online = c.onlineCPUs()
	cpu.Count = len(cpu.Online)
	cpu.Model = c.cpuModel()

	domains := map[string][]int{}
	packages := map[int]bool{}
	// A CPU already seen in a domain or package shares it: skip its files.
	// On a 512-CPU host this saves about a thousand reads.
	inDomain, inPackage, inCore := map[int]bool{}, map[int]bool{}, map[int]bool{}
	for _, n := range cpu.Online {
		dir := fmt.Sprintf("%s/cpu%d", cpuDir, n)
		if !inCore[n] {
			if sib, err := c.fs.ReadCPUList(dir + "/topology/thread_siblings_list"); err == nil && len(sib) > 1 {
				cpu.SMTSiblings = append(cpu.SMTSiblings, sib)
				markAll(inCore, sib)
			}
		}
		if !inDomain[n] {
			if l3, ok := c.l3Of(dir); ok {
				domains[cpulist.Format(l3)] = l3
				markAll(inDomain, l3)
			}
		}
		if !inPackage[n] {
			if p, err := c.fs.ReadInt(dir + "/topology/physical_package_id"); err == nil {
				packages[int(p)] = true
				if sib, err := c.fs.ReadCPUList(dir + "/topology/core_siblings_list"); err == nil {
					markAll(inPackage, sib)
				}
			}
		}
		if g, err := c.fs.ReadString(dir + "/cpufreq/scaling_governor"); err == nil && g != "" {
			cpu.Governors[g] = append(cpu.Governors[g], n)
		}
	}
	if d, err := c.fs.ReadString(fmt.Sprintf("%s/cpu%d/cpufreq/scaling_driver", cpuDir, first(cpu.Online))); err == nil {
		cpu.ScalingDriver = d
	}
	if len(cpu.Governors) == 0 && cpu.Count > 0 {
		c.note("CPU governors: no cpufreq in %s (a VM, or no cpufreq driver loaded)", c.fs.Display(cpuDir))
	}
	cpu.Sockets = len(packages)
	for _, d := range domains {
		cpu.L3Domains = append(cpu.L3Domains, d)
	}
	slices.SortFunc(cpu.L3Domains, func(a, b []int) int { return a[0] - b[0] })
	if len(cpu.L3Domains) == 0 && cpu.Count > 0 {
		c.note("L3 domains: no level-3 cache in %s/cpu*/cache", c.fs.Display(cpuDir))
	}
	cpu.NUMANodes = c.numaNodes(cpu.Online)
	return cpu
}

func markAll(m map[int]bool, cpus []int) {
	for _, c := range cpus {
		m[c] = true
	}
}

func first(s []int) int {
	if len(s) == 0 {
		return 0
	}
	return s[0]
}

// onlineCPUs reads cpu/online, or lists cpuN directories on kernels or
// trees without it.
func (c *collector) onlineCPUs() []int {
	cpus, err := c.fs.ReadCPUList(cpuDir + "/online")
	if err == nil {
		return cpus
	}
	c.noteErr("online CPUs", err)
	names, err := c.fs.ReadDir(cpuDir)
	if err != nil {
		c.noteErr("CPU list", err)
		return []int{}
	}
	cpus = []int{}
	for _, n := range names {
		if v, ok := strings.CutPrefix(n, "cpu"); ok {
			if id, err := strconv.Atoi(v); err == nil {
				cpus = append(cpus, id)
			}
		}
	}
	slices.Sort(cpus)
	return cpus
}

// cpuModel returns the first model name in /proc/cpuinfo. The file is
// streamed and left early: on big hosts it runs to megabytes.
func (c *collector) cpuModel() string {
	r, err := c.fs.Open("proc/cpuinfo", 64<<20)
	if err != nil {
		c.noteErr("CPU model", err)
		return ""
	}
	defer r.Close()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name", "Model", "cpu model":
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// l3Of returns the CPUs sharing cpu's level-3 cache. index3 is L3 on
// every x86 and most arm64 parts, so it is tried first; the others only
// when index3 is not level 3.
func (c *collector) l3Of(dir string) ([]int, bool) {
	try := func(idx string) ([]int, bool) {
		lvl, err := c.fs.ReadInt(dir + "/cache/" + idx + "/level")
		if err != nil || lvl != 3 {
			return nil, false
		}
		l, err := c.fs.ReadCPUList(dir + "/cache/" + idx + "/shared_cpu_list")
		if err != nil {
			c.noteErr("L3 sharing", err)
			return nil, false
		}
		return l, len(l) > 0
	}
	if l, ok := try("index3"); ok {
		return l, true
	}
	names, err := c.fs.ReadDir(dir + "/cache")
	if err != nil {
		return nil, false
	}
	for _, n := range names {
		if strings.HasPrefix(n, "index") && n != "index3" {
			if l, ok := try(n); ok {
				return l, true
			}
		}
	}
	return nil, false
}

// numaNodes reads node*/cpulist. A kernel without NUMA support has no
// node directory; every CPU is then on node 0, and a note says so.
func (c *collector) numaNodes(online []int) map[string][]int {
	const nodeDir = "sys/devices/system/node"
	nodes := map[string][]int{}
	names, err := c.fs.ReadDir(nodeDir)
	if err != nil {
		c.noteErr("NUMA nodes", err)
	}
	for _, n := range names {
		id, ok := strings.CutPrefix(n, "node")
		if _, err := strconv.Atoi(id); !ok || err != nil {
			continue
		}
		cpus, err := c.fs.ReadCPUList(nodeDir + "/" + n + "/cpulist")
		if err != nil {
			c.noteErr("CPUs of NUMA "+n, err)
			continue
		}
		if len(cpus) > 0 {
			nodes[id] = cpus
		}
	}
	if len(nodes) == 0 && len(online) > 0 {
		c.note("NUMA: no node in %s; all CPUs counted on node 0", c.fs.Display(nodeDir))
		nodes["0"] = online
	}
	return nodes
}

// NodeOf returns the NUMA node holding cpu, or -1.
func (cpu *CPU) NodeOf(n int) int {
	for k, cpus := range cpu.NUMANodes {
		if cpulist.Contains(cpus, n) {
			id, _ := strconv.Atoi(k)
			return id
		}
	}
	return -1
}

// L3Of returns the index in L3Domains of the domain holding cpu, or -1.
func (cpu *CPU) L3Of(n int) int {
	for i, d := range cpu.L3Domains {
		if cpulist.Contains(d, n) {
			return i
		}
	}
	return -1
}

// CoreOf returns cpu with its SMT siblings (just cpu on a core with one
// thread, or where siblings are unknown).
func (cpu *CPU) CoreOf(n int) []int {
	for _, s := range cpu.SMTSiblings {
		if cpulist.Contains(s, n) {
			return s
		}
	}
	return []int{n}
}

// NodeCPUs returns the CPUs of NUMA node n (nil if unknown).
func (cpu *CPU) NodeCPUs(n int) []int { return cpu.NUMANodes[strconv.Itoa(n)] }
