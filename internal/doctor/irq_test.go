package doctor

import (
	"slices"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/placement"
)

// TestAffinityFixArgs: the tune command names --app-cpus only when given.
func TestAffinityFixArgs(t *testing.T) {
	v := &nicView{NIC: &inventory.NIC{Interface: "eth0", IRQs: []inventory.IRQ{{IRQ: 40}}}}
	pl := placement.Placement{IRQCPUs: []int{7}, AppCPUs: []int{6}}
	fx := affinityFix(v, pl, nil, false)
	if got := Quote(fx[len(fx)-1].Command); got != "linerate tune --iface eth0 --apply" {
		t.Errorf("no app CPUs: %q", got)
	}
	fx = affinityFix(v, pl, []int{6}, false)
	if got := Quote(fx[len(fx)-1].Command); got != "linerate tune --iface eth0 --app-cpus 6 --apply" {
		t.Errorf("app CPU 6: %q", got)
	}
}

// twoNodes returns the healthy host split into NUMA nodes 0 (0-5) and 1
// (6-11), its NIC on node 0.
func twoNodes() *inventory.Inventory {
	inv := healthy()
	inv.CPU.NUMANodes = map[string][]int{"0": cpulist.MustParse("0-5"), "1": cpulist.MustParse("6-11")}
	return inv
}

// TestRemoteNUMACount: only the IRQs routed off the node are counted.
func TestRemoteNUMACount(t *testing.T) {
	inv := twoNodes()
	for i := range inv.NICs[0].IRQs[:4] {
		q := &inv.NICs[0].IRQs[i]
		q.Affinity, q.Effective, q.Counts = []int{i}, []int{i}, map[string]uint64{itoa(i): 1000}
	}
	f := find(run(t, inv, Options{}), "irq.remote_numa")
	if len(f) != 1 || !strings.HasPrefix(f[0].Summary, "1 of 5 IRQs of enp1s0f0np0 (NUMA node 0, CPUs 0-5) are routed to CPU 11") ||
		!slices.Equal(f[0].Evidence["irqs"].([]int), []int{104}) {
		t.Errorf("%+v", f)
	}
}

// TestAppCPUDefaultMask: an IRQ with the default all-CPU mask and no
// effective affinity counts on the application's CPU only if served
// there.
func TestAppCPUDefaultMask(t *testing.T) {
	inv := healthy()
	q := &inv.NICs[0].IRQs[0]
	q.Affinity, q.Effective = cpulist.MustParse("0-11"), nil
	if f := find(run(t, inv, Options{AppCPUs: []int{3}}), "irq.on_app_cpu"); len(f) != 0 {
		t.Errorf("default mask, served on 7: %+v", f)
	}
	q.Counts = map[string]uint64{"3": 1000}
	if f := find(run(t, inv, Options{AppCPUs: []int{3}}), "irq.on_app_cpu"); len(f) != 1 {
		t.Errorf("default mask, served on 3: %+v", f)
	}
}
