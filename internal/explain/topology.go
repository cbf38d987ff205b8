package explain

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/linerate/linerate/internal/cpulist"
)

// Topology is how explanations name CPUs: the L3 (last-level cache)
// domains and NUMA nodes of doctor's inventory.
type Topology struct {
	L3Domains [][]int          `json:"l3_domains"`
	NUMANodes map[string][]int `json:"numa_nodes"`
}

// doctorFacts is the part of a linerate.doctor/v1 document bench reads.
type doctorFacts struct {
	CPU  Topology `json:"cpu"`
	NICs []struct {
		Interface string `json:"interface"`
		Limits    struct {
			TCPGoodput *float64 `json:"tcp_goodput_gbps"`
		} `json:"limits"`
	} `json:"nics"`
}

// TopologyFromDoctor reads the CPU topology out of a doctor report; an
// empty or unreadable report gives an empty topology (explanations then
// name CPUs only).
func TopologyFromDoctor(doc json.RawMessage) Topology {
	var d doctorFacts
	if len(doc) == 0 || json.Unmarshal(doc, &d) != nil {
		return Topology{}
	}
	return d.CPU
}

// CeilingFromDoctor returns the TCP goodput ceiling doctor computed for
// interface iface (the line rate's goodput at the MTU, or the PCIe link,
// or a shaping qdisc's rate — a tbf in the lab), or nil when unknown.
// With iface empty and a single NIC in the report, that NIC's.
func CeilingFromDoctor(doc json.RawMessage, iface string) *float64 {
	var d doctorFacts
	if len(doc) == 0 || json.Unmarshal(doc, &d) != nil {
		return nil
	}
	for _, n := range d.NICs {
		if n.Interface == iface || iface == "" && len(d.NICs) == 1 {
			return n.Limits.TCPGoodput
		}
	}
	return nil
}

// l3Of returns the index of the L3 domain holding cpu, or -1.
func (t Topology) l3Of(cpu int) int {
	for i, d := range t.L3Domains {
		if slices.Contains(d, cpu) {
			return i
		}
	}
	return -1
}

// nodeOf returns the NUMA node holding cpu, or -1.
func (t Topology) nodeOf(cpu int) int {
	for k, cpus := range t.NUMANodes {
		if slices.Contains(cpus, cpu) {
			n, err := strconv.Atoi(k)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// domains returns the distinct L3 domains of cpus, sorted (unknown left
// out).
func (t Topology) domains(cpus []int) []int {
	var out []int
	for _, c := range cpus {
		if d := t.l3Of(c); d >= 0 && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	sort.Ints(out)
	return out
}

func (t Topology) nodes(cpus []int) []int {
	var out []int
	for _, c := range cpus {
		if n := t.nodeOf(c); n >= 0 && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out
}

// domainName writes "L3 domain 1 (CPUs 6-11)".
func (t Topology) domainName(d int) string {
	return fmt.Sprintf("L3 domain %d (CPUs %s)", d, cpulist.Format(t.L3Domains[d]))
}

// cpusName writes "CPU 6" or "CPUs 7-10".
func cpusName(cpus []int) string {
	s := slices.Clone(cpus)
	slices.Sort(s)
	if len(s) == 1 {
		return fmt.Sprintf("CPU %d", s[0])
	}
	return "CPUs " + cpulist.Format(s)
}
