package tune

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/testutil"
	"golang.org/x/sys/unix"
)

// ryzenX4Tree returns a copy of the tree of the 100 GbE home lab whose
// ConnectX-5 trained at x4, with Debian's irqbalance configuration, its state, and the plan for --app-cpus 6 --irq-cpus 8-10.
// --irq-cpus makes six IRQs move (those not on 8-10 already: 99, 111, 112,
// 113, 117, 118), each to the CPU of 8-10 holding the fewest so far:
// 99 → 9, 111 → 10, 112 → 8, 113 → 9, 117 → 10, 118 → 8.
func ryzenX4Tree(t *testing.T) (root string, orig map[string]string, p *Plan) {
	t.Helper()
	root = copyTree(t, "ryzen-9900x-cx5-x4")
	writeFile(t, root, "etc/default/irqbalance", debianIRQBalance)
	orig = testutil.TreeState(t, root)
	p = plan(t, root, nil, Options{AppCPUs: []int{6}, IRQCPUs: []int{8, 9, 10}})
	return root, orig, p
}

func treeTarget(t *testing.T, root string, restarts *[]string) *Target {
	t.Helper()
	fs, _ := open(t, root)
	return &Target{FS: fs, Restart: func(s string) error { *restarts = append(*restarts, s); return nil }}
}

// TestApplyRevertTree applies the x4 home lab's plan to a copy of its tree and
// reverts it: every file must be back byte for byte.
func TestApplyRevertTree(t *testing.T) {
	root, orig, p := ryzenX4Tree(t)
	ib := changesOf(p, KindIRQBalance)
	if len(ib) != 1 || ib[0].Path != "/etc/default/irqbalance" || ib[0].Before != "IRQBALANCE_ARGS unset" {
		t.Fatalf("irqbalance change %+v", ib)
	}
	var restarts []string
	tg := treeTarget(t, root, &restarts)
	dir := testutil.Scratch(t)
	res, err := Apply(p, tg, ApplyOptions{JournalDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if res.Count(PhaseApplied) != len(p.Changes) {
		t.Errorf("%d of %d applied: %+v", res.Count(PhaseApplied), len(p.Changes), res.Steps)
	}
	for rel, want := range map[string]string{
		"proc/irq/99/smp_affinity_list":                         "9\n",
		"proc/irq/118/smp_affinity_list":                        "8\n",
		"proc/irq/119/smp_affinity_list":                        "8\n", // already on 8-10: left
		"proc/sys/net/ipv4/tcp_rmem":                            "4096 131072 33554432\n",
		"sys/devices/system/cpu/cpu6/cpufreq/scaling_governor":  "performance\n",
		"proc/irq/101/smp_affinity_list":                        strings.TrimPrefix(orig["proc/irq/101/smp_affinity_list"], "file:"),
		"sys/devices/system/cpu/cpu11/cpufreq/scaling_governor": "performance\n",
	} {
		if got := readFile(t, root, rel); got != want {
			t.Errorf("%s: %q, want %q", rel, got, want)
		}
	}
	conf := readFile(t, root, "etc/default/irqbalance")
	if !strings.HasPrefix(conf, debianIRQBalance) || !strings.Contains(conf, `IRQBALANCE_ARGS="--banirq=98 --banirq=99 --banirq=109`) {
		t.Errorf("irqbalance configuration:\n%s", conf)
	}
	if len(restarts) != 1 || restarts[0] != "irqbalance" {
		t.Errorf("restarts %v, want irqbalance once", restarts)
	}
	j, err := Load(dir, res.Journal)
	if err != nil {
		t.Fatal(err)
	}
	if j.State() != StateApplied || j.Root != root || j.Host != "crow" || j.Profile != Throughput || j.NetNS != p.NetNS {
		t.Errorf("journal %+v, state %s", j, j.State())
	}

	rr, err := Revert(j, tg, RevertOptions{NetNS: p.NetNS})
	if err != nil {
		t.Fatal(err)
	}
	if rr.Count(PhaseReverted) != len(p.Changes) || rr.Steps[0].Step != len(p.Changes) {
		t.Errorf("revert %+v: want every step, last first", rr.Steps)
	}
	sameTree(t, orig, testutil.TreeState(t, root))
	if len(restarts) != 2 {
		t.Errorf("restarts %v: reverting irqbalance's file restarts it too", restarts)
	}
	if j, _ = Load(dir, res.Journal); j.State() != StateReverted || j.Pending() != 0 {
		t.Errorf("journal after revert: %s, %d pending", j.State(), j.Pending())
	}
	if _, err := Last(dir, p.NetNS); err == nil {
		t.Error("Last found a reverted journal")
	}
}

// TestRevertChangedBehind changes values after tune did: revert leaves
// them and says so; --force restores them.
func TestRevertChangedBehind(t *testing.T) {
	root, orig, p := ryzenX4Tree(t)
	var restarts []string
	tg := treeTarget(t, root, &restarts)
	dir := testutil.Scratch(t)
	if _, err := Apply(p, tg, ApplyOptions{JournalDir: dir}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, "proc/sys/net/core/rmem_max", "1234\n")
	writeFile(t, root, "proc/irq/112/smp_affinity_list", "0-11\n")
	j, err := Last(dir, p.NetNS)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := Revert(j, tg, RevertOptions{NetNS: p.NetNS})
	if err != nil {
		t.Fatal(err)
	}
	if rr.Count(PhaseLeft) != 2 {
		t.Fatalf("left %d, want 2: %+v", rr.Count(PhaseLeft), rr.Steps)
	}
	for _, s := range rr.Steps {
		if s.Phase == PhaseLeft && !strings.Contains(s.Reason, "changed since by someone else") {
			t.Errorf("left without saying why: %+v", s)
		}
	}
	if got := readFile(t, root, "proc/sys/net/core/rmem_max"); got != "1234\n" {
		t.Errorf("rmem_max %q: someone else's value must be left alone", got)
	}
	if j, _ = Load(dir, j.ID); j.State() != StatePartlyReverted || j.Pending() != 2 {
		t.Errorf("journal %s with %d pending", j.State(), j.Pending())
	}
	// Without --force nothing more happens; with it, the tree is whole.
	if rr, _ = Revert(j, tg, RevertOptions{NetNS: p.NetNS}); rr.Count(PhaseLeft) != 2 {
		t.Errorf("second revert: %+v", rr.Steps)
	}
	j, _ = Last(dir, p.NetNS)
	rr, err = Revert(j, tg, RevertOptions{NetNS: p.NetNS, Force: true})
	if err != nil || rr.Count(PhaseReverted) != 2 || !rr.Steps[0].Forced {
		t.Errorf("forced revert: %v %+v", err, rr.Steps)
	}
	sameTree(t, orig, testutil.TreeState(t, root))
}

// TestApplyRollsBack fails a step half-way: everything applied before it
// is restored, the tree byte for byte, the NIC's settings too.
func TestApplyRollsBack(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dev   func(*fakeDevices)
		fails Kind
	}{
		{"set fails", func(f *fakeDevices) { f.failSet = "rings" }, KindRings},
		{"read-back differs", func(f *fakeDevices) { f.clamp = true }, KindChannels},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := copyTree(t, "xeon-xl710-gen2-x4")
			orig := testutil.TreeState(t, root)
			dev, before := xl710(), xl710()
			p := plan(t, root, dev, Options{})
			tc.dev(dev)
			fs, _ := open(t, root)
			dir := testutil.Scratch(t)
			res, err := Apply(p, &Target{FS: fs, Devices: dev}, ApplyOptions{JournalDir: dir})
			var se *StepError
			if !errors.As(err, &se) || se.Change.Kind != tc.fails || se.Left != 0 {
				t.Fatalf("err %v, want a StepError at the %s step", err, tc.fails)
			}
			if se.RolledBack != se.Step-1 || !strings.Contains(err.Error(), fmt.Sprintf("step %d of %d", se.Step, len(p.Changes))) {
				t.Errorf("%v: rolled back %d", err, se.RolledBack)
			}
			if len(res.Rollback) == 0 {
				t.Error("no rollback reported")
			}
			sameTree(t, orig, testutil.TreeState(t, root))
			if dev.ch["ens2f0np0"] != before.ch["ens2f0np0"] || dev.rings["ens2f0np0"] != before.rings["ens2f0np0"] {
				t.Errorf("NIC after rollback: %+v %+v, want %+v %+v", dev.ch, dev.rings, before.ch, before.rings)
			}
			j, _ := Load(dir, res.Journal)
			if j.State() != StateRolledBack {
				t.Errorf("journal state %s", j.State())
			}
		})
	}
}

// TestApplyLiveOnlyBelowTree: queue changes need the live NIC; below a
// tree they are skipped and said to be.
func TestApplyLiveOnlyBelowTree(t *testing.T) {
	root := copyTree(t, "xeon-xl710-gen2-x4")
	p := plan(t, root, nil, Options{MTU: 9000})
	fs, _ := open(t, root)
	res, err := Apply(p, &Target{FS: fs}, ApplyOptions{JournalDir: testutil.Scratch(t)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Count(PhaseSkipped) != 2 || res.Count(PhaseApplied) != len(p.Changes)-2 {
		t.Errorf("applied %d, skipped %d of %d", res.Count(PhaseApplied), res.Count(PhaseSkipped), len(p.Changes))
	}
}

// TestApplyDevices applies and reverts driver settings through Devices.
func TestApplyDevices(t *testing.T) {
	root := copyTree(t, "xeon-xl710-gen2-x4")
	dev := xl710()
	p := plan(t, root, dev, Options{MTU: 9000})
	fs, _ := open(t, root)
	tg := &Target{FS: fs, Devices: dev}
	dir := testutil.Scratch(t)
	res, err := Apply(p, tg, ApplyOptions{JournalDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if dev.mtu["ens2f0np0"] != 9000 || dev.ch["ens2f0np0"].Combined != 8 || dev.ch["ens2f0np0"].Other != 1 || dev.rings["ens2f0np0"].RX != 4096 {
		t.Errorf("NIC after apply: %+v %+v %+v", dev.mtu, dev.ch, dev.rings)
	}
	j, _ := Load(dir, res.Journal)
	if _, err := Revert(j, tg, RevertOptions{NetNS: p.NetNS}); err != nil {
		t.Fatal(err)
	}
	if want := xl710(); dev.mtu["ens2f0np0"] != 1500 || dev.ch["ens2f0np0"] != want.ch["ens2f0np0"] || dev.rings["ens2f0np0"] != want.rings["ens2f0np0"] {
		t.Errorf("NIC after revert: %+v %+v %+v", dev.mtu, dev.ch, dev.rings)
	}
}

func TestRevertOtherNamespace(t *testing.T) {
	j := &Journal{ID: "20250120T153012.123456Z", Root: "/", NetNS: 4026532246}
	_, err := Revert(j, &Target{}, RevertOptions{NetNS: 4026531840})
	if err == nil || !strings.Contains(err.Error(), "network namespace 4026532246") {
		t.Errorf("err %v", err)
	}
}

func TestRefusedIRQ(t *testing.T) {
	eio := fmt.Errorf("writing /proc/irq/40/smp_affinity_list: %w", unix.EIO)
	if !refused(Change{Kind: KindIRQ}, eio) || refused(Change{Kind: KindSysctl}, eio) || refused(Change{Kind: KindIRQ}, unix.ENOSPC) {
		t.Error("only an IRQ's EIO or EPERM is a refusal")
	}
}
