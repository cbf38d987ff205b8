package placement

import (
	"slices"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/inventory"
)

func ip(v int) *int { return &v }

// ryzen9900x is seed 000's CPU: 12 cores, SMT off, two CCDs.
func ryzen9900x() *inventory.CPU {
	all := cpulist.MustParse("0-11")
	return &inventory.CPU{Online: all, L3Domains: [][]int{cpulist.MustParse("0-5"), cpulist.MustParse("6-11")},
		NUMANodes: map[string][]int{"0": all}}
}

// epyc is two NUMA nodes of one L3 domain each, with SMT siblings n and n+8.
func epyc() *inventory.CPU {
	n0, n1 := cpulist.MustParse("0-3,8-11"), cpulist.MustParse("4-7,12-15")
	var sib [][]int
	for c := range 8 {
		sib = append(sib, []int{c, c + 8})
	}
	return &inventory.CPU{Online: cpulist.MustParse("0-15"), L3Domains: [][]int{n0, n1}, SMTSiblings: sib,
		NUMANodes: map[string][]int{"0": n0, "1": n1}}
}

func nicOn(node int, irqCPUs ...int) *inventory.NIC {
	n := &inventory.NIC{Interface: "eth0", NUMANode: ip(node)}
	for i, c := range irqCPUs {
		n.IRQs = append(n.IRQs, inventory.IRQ{IRQ: 100 + i, Affinity: []int{c}, Effective: []int{c}})
	}
	return n
}

func TestPlace(t *testing.T) {
	tests := []struct {
		name      string
		cpu       *inventory.CPU
		req       Request
		irq, app  string
		noteMatch string
	}{
		{"seed 000 with the app on 6", ryzen9900x(), Request{NIC: nicOn(0, 3, 7, 8), AppCPUs: []int{6}}, "7-11", "6", ""},
		{"seed 000 free: the domain most IRQs use", ryzen9900x(), Request{NIC: nicOn(0, 3, 7, 8)}, "7-11", "6", ""},
		{"free, IRQs mostly on CCD 0", ryzen9900x(), Request{NIC: nicOn(0, 1, 2, 9)}, "1-5", "0", ""},
		{"SMT: the app keeps a whole core", epyc(), Request{NIC: nicOn(1)}, "5-7,13-15", "4,12", ""},
		{"app on the remote node: locality wins", epyc(), Request{NIC: nicOn(1), AppCPUs: []int{0}}, "5-7,13-15", "4,12", "not on eth0's NUMA node"},
		{"--irq-cpus as given", ryzen9900x(), Request{NIC: nicOn(0), IRQCPUs: []int{10, 11}}, "10-11", "6-9", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, notes := Place(tt.cpu, tt.req)
			if got := cpulist.Format(p.IRQCPUs); got != tt.irq {
				t.Errorf("IRQ CPUs %s, want %s", got, tt.irq)
			}
			if got := cpulist.Format(p.AppCPUs); got != tt.app {
				t.Errorf("app CPUs %s, want %s", got, tt.app)
			}
			if tt.noteMatch != "" && !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, tt.noteMatch) }) {
				t.Errorf("notes %q lack %q", notes, tt.noteMatch)
			}
			if len(cpulist.Intersect(p.IRQCPUs, p.AppCPUs)) > 0 && len(tt.req.IRQCPUs) == 0 {
				t.Errorf("IRQs %v share the application's CPUs %v", p.IRQCPUs, p.AppCPUs)
			}
		})
	}
}

func TestRoundRobin(t *testing.T) {
	irqs := []inventory.IRQ{{IRQ: 119}, {IRQ: 99}, {IRQ: 109}}
	got := RoundRobin(irqs, []int{7, 8})
	if got[99] != 7 || got[109] != 8 || got[119] != 7 {
		t.Errorf("RoundRobin = %v", got)
	}
}

// TestLocalCPUs: the kernel's local_cpulist first (its online CPUs), then
// the NUMA node, then every online CPU.
func TestLocalCPUs(t *testing.T) {
	cpu := epyc()
	cpu.Online = cpulist.MustParse("0-14") // CPU 15 offline
	tests := []struct {
		name string
		nic  *inventory.NIC
		want string
	}{
		{"local_cpulist", &inventory.NIC{NUMANode: ip(0), LocalCPUs: cpulist.MustParse("4-7,12-15")}, "4-7,12-14"},
		{"local_cpulist all offline", &inventory.NIC{NUMANode: ip(0), LocalCPUs: []int{15}}, "0-3,8-11"},
		{"node", nicOn(1), "4-7,12-15"},
		{"node unknown", nicOn(-1), "0-14"},
		{"nothing", &inventory.NIC{}, "0-14"},
	}
	for _, tt := range tests {
		if got := cpulist.Format(LocalCPUs(cpu, tt.nic)); got != tt.want {
			t.Errorf("%s: LocalCPUs = %s, want %s", tt.name, got, tt.want)
		}
	}
}
