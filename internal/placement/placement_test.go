package placement

import (
	"slices"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/inventory"
)

func ip(v int) *int { return &v }

// ryzen9900x is the CPU of the 100 GbE home lab whose ConnectX-5
// trained at x4: 12 cores, SMT off, two CCDs.
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
		{"ryzen x4 with the app on 6", ryzen9900x(), Request{NIC: nicOn(0, 3, 7, 8), AppCPUs: []int{6}}, "7-11", "6", ""},
		{"ryzen x4 free: the domain most IRQs use", ryzen9900x(), Request{NIC: nicOn(0, 3, 7, 8)}, "7-11", "6", ""},
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

// TestMoves: IRQs already on the chosen CPUs stay; the others go to the
// least loaded CPU, lowest first (the x4 home lab's first plan moved 13
// IRQs where one was misplaced).
func TestMoves(t *testing.T) {
	irqs := []inventory.IRQ{
		{IRQ: 119, Affinity: []int{7}}, {IRQ: 99, Affinity: []int{7}}, {IRQ: 109, Affinity: []int{8}},
		{IRQ: 111, Affinity: []int{3}}, {IRQ: 98, Affinity: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
		{IRQ: 120, Affinity: []int{8, 9}}, {IRQ: 121},
	}
	got := Moves(irqs, []int{7, 8, 9})
	// Kept: 99 and 119 on 7, 109 on 8, 120 on 8-9 (no load counted for a
	// multi-CPU mask). Moved in IRQ order: 98 → 9 (load 0), 111 → 8 (7
	// and 8 and 9 now hold 2, 1, 1: 8 is the lowest of the least), 121 → 9.
	want := map[int]int{98: 9, 111: 8, 121: 9}
	if len(got) != len(want) {
		t.Fatalf("Moves = %v; want %v", got, want)
	}
	for irq, cpu := range want {
		if got[irq] != cpu {
			t.Errorf("Moves = %v; want %v", got, want)
		}
	}
	if got := Moves(irqs, nil); len(got) != 0 {
		t.Errorf("Moves to no CPU = %v", got)
	}
	// Unsorted CPUs: ties still go to the lowest.
	if got := Moves([]inventory.IRQ{{IRQ: 1, Affinity: []int{0}}}, []int{9, 8}); got[1] != 8 {
		t.Errorf("Moves with CPUs 9,8 = %v; want 8", got)
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
