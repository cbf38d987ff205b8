package engine

import (
	"slices"
	"testing"

	"github.com/linerate/linerate/internal/inventory"
)

// ryzen is the CPU of the 100 GbE home lab whose ConnectX-5 trained at
// x4: 12 CPUs in two L3 domains (CCDs), one node.
func ryzen() *inventory.CPU {
	all := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	return &inventory.CPU{Count: 12, Online: all, L3Domains: [][]int{{0, 1, 2, 3, 4, 5}, {6, 7, 8, 9, 10, 11}},
		NUMANodes: map[string][]int{"0": all}}
}

func TestCandidates(t *testing.T) {
	cpu := ryzen()
	node := 0
	irqsOn := func(cpus ...int) *inventory.NIC {
		n := &inventory.NIC{Interface: "enp1s0f0np0", NUMANode: &node}
		for i, c := range cpus {
			n.IRQs = append(n.IRQs, inventory.IRQ{IRQ: 99 + i, Effective: []int{c}})
		}
		return n
	}
	tests := []struct {
		name string
		nic  *inventory.NIC
		want []int
	}{
		// The home lab tuned: IRQs pinned to 7-11; the stream goes to 6, in their L3
		// domain but off their cores, then to the other CCD.
		{"ryzen x4 tuned", irqsOn(7, 8, 9, 10, 11), []int{6, 0, 1, 2, 3, 4, 5}},
		{"IRQs on CCD 0", irqsOn(0, 1), []int{2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
		{"no IRQs known", irqsOn(), cpu.Online},
		{"no NIC", nil, cpu.Online},
		{"IRQs everywhere", irqsOn(cpu.Online...), cpu.Online},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var irq []int
			if tt.nic != nil {
				irq = irqCPUs(tt.nic)
			}
			if got := candidates(cpu.Online, cpu, tt.nic, irq); !slices.Equal(got, tt.want) {
				t.Errorf("candidates = %v, want %v", got, tt.want)
			}
		})
	}
	// A NIC on node 1 of a two-node host keeps its streams on node 1.
	two := &inventory.CPU{Online: []int{0, 1, 2, 3}, NUMANodes: map[string][]int{"0": {0, 1}, "1": {2, 3}}}
	one := 1
	if got := candidates(two.Online, two, &inventory.NIC{NUMANode: &one}, nil); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("node-1 NIC: %v", got)
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name                string
		client, server      []int
		cands, allowed      []int
		wantClient, wantSrv []int
	}{
		{"2-CPU VM", nil, nil, []int{0, 1}, []int{0, 1}, []int{0}, []int{1}},
		{"odd", nil, nil, []int{6, 0, 1}, []int{0, 1, 6}, []int{6, 0}, []int{1}},
		{"client given", []int{1}, nil, []int{0, 1}, []int{0, 1}, []int{1}, []int{0}},
		{"server given", nil, []int{0}, []int{0, 1}, []int{0, 1}, []int{1}, []int{0}},
		{"both given", []int{0}, []int{0}, []int{0, 1}, []int{0, 1}, []int{0}, []int{0}},
		{"one candidate", nil, nil, []int{3}, []int{2, 3}, []int{2}, []int{3}},
		{"one CPU", nil, nil, []int{0}, []int{0}, []int{0}, []int{0}},
	}
	for _, tt := range tests {
		c, s := Split(tt.client, tt.server, tt.cands, tt.allowed)
		if !slices.Equal(c, tt.wantClient) || !slices.Equal(s, tt.wantSrv) {
			t.Errorf("%s: split = %v, %v; want %v, %v", tt.name, c, s, tt.wantClient, tt.wantSrv)
		}
	}
	if got := Assign(5, []int{4, 5}); !slices.Equal(got, []int{4, 5, 4, 5, 4}) {
		t.Errorf("assign = %v", got)
	}
	if got := Assign(2, nil); !slices.Equal(got, []int{-1, -1}) {
		t.Errorf("assign unpinned = %v", got)
	}
	if got := Used([]int{5, 4, 5, -1}); !slices.Equal(got, []int{5, 4}) {
		t.Errorf("used = %v", got)
	}
}
