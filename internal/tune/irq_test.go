package tune

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/termui"
	"github.com/linerate/linerate/internal/testutil"
)

// kernelIRQs makes a captured tree's /proc/irq behave as the kernel's: a
// write to smp_affinity_list sets effective_affinity_list to the first CPU
// written (as x86's vector allocator does), or to stray[irq] if set; a
// write for an IRQ in refuse fails with EIO, as for a managed IRQ.
type kernelIRQs struct {
	*hostfs.FS
	refuse map[int]bool
	stray  map[int]string
}

func (k *kernelIRQs) WriteFile(rel string, data []byte) error {
	var irq int
	if _, err := fmt.Sscanf(rel, "proc/irq/%d/smp_affinity_list", &irq); err != nil || !strings.HasSuffix(rel, "/smp_affinity_list") {
		return k.FS.WriteFile(rel, data)
	}
	if k.refuse[irq] {
		return fmt.Errorf("writing %s: %w", k.FS.Display(rel), unix.EIO)
	}
	if err := k.FS.WriteFile(rel, data); err != nil {
		return err
	}
	eff, ok := k.stray[irq]
	if !ok {
		cpus, err := cpulist.Parse(strings.TrimSpace(string(data)))
		if err != nil || len(cpus) == 0 {
			return fmt.Errorf("writing %s: %w", k.FS.Display(rel), unix.EINVAL)
		}
		eff = cpulist.Format(cpus[:1])
	}
	return k.FS.WriteFile(fmt.Sprintf("proc/irq/%d/effective_affinity_list", irq), []byte(eff+"\n"))
}

// withoutEffective drops effective_affinity_list files from a tree state:
// the simulated kernel rewrites them on every write, rollback included.
func withoutEffective(st map[string]string) map[string]string {
	out := map[string]string{}
	for p, v := range st {
		if !strings.HasSuffix(p, "/effective_affinity_list") {
			out[p] = v
		}
	}
	return out
}

func stepOf(t *testing.T, p *Plan, target string) Change {
	t.Helper()
	for _, c := range p.Changes {
		if c.Target == target {
			return c
		}
	}
	t.Fatalf("no step for %s in the plan", target)
	return Change{}
}

// TestIRQEffectiveAffinity: with the kernel keeping /proc/irq, an IRQ
// write is verified against effective_affinity_list. When the kernel
// routes the IRQ elsewhere than written, the step fails naming both lists
// and everything is rolled back; when it routes inside the list, all
// apply.
func TestIRQEffectiveAffinity(t *testing.T) {
	root, orig, p := ryzenX4Tree(t)
	irq113 := stepOf(t, p, "irq 113")
	if irq113.After != "9" {
		t.Fatalf("plan moves irq 113 to %q, want 9", irq113.After)
	}
	fs, _ := open(t, root)
	var restarts []string
	tg := &Target{FS: fs, KernelIRQs: true, Restart: func(s string) error { restarts = append(restarts, s); return nil },
		files: &kernelIRQs{FS: fs, stray: map[int]string{113: "3"}}}
	dir := testutil.Scratch(t)
	res, err := Apply(p, tg, ApplyOptions{JournalDir: dir})
	var se *StepError
	if !errors.As(err, &se) || se.Step != irq113.Step || se.Left != 0 {
		t.Fatalf("err %v, want a StepError at step %d (irq 113)", err, irq113.Step)
	}
	if !strings.Contains(err.Error(), "effective affinity is 3, outside the 9 written") {
		t.Errorf("error does not report the effective affinity: %v", err)
	}
	if se.RolledBack != irq113.Step-1 {
		t.Errorf("rolled back %d, want %d", se.RolledBack, irq113.Step-1)
	}
	sameTree(t, withoutEffective(orig), withoutEffective(testutil.TreeState(t, root)))
	if j, _ := Load(dir, res.Journal); j.State() != StateRolledBack {
		t.Errorf("journal state %s", j.State())
	}

	// The same plan where the kernel honours every write applies whole.
	root, _, p = ryzenX4Tree(t)
	fs, _ = open(t, root)
	tg = &Target{FS: fs, KernelIRQs: true, Restart: tg.Restart, files: &kernelIRQs{FS: fs}}
	if res, err = Apply(p, tg, ApplyOptions{JournalDir: testutil.Scratch(t)}); err != nil || res.Count(PhaseApplied) != len(p.Changes) {
		t.Fatalf("kernel honouring the writes: %v, %d of %d applied", err, res.Count(PhaseApplied), len(p.Changes))
	}
	if got := readFile(t, root, "proc/irq/113/effective_affinity_list"); got != "9\n" {
		t.Errorf("irq 113 effective %q", got)
	}
}

// TestIRQRefusedEIO: a kernel-managed IRQ refuses its new affinity with
// EIO. That step ends refused, the steps before and after it stay applied
// (no rollback), the text says "refused", and revert restores the rest.
func TestIRQRefusedEIO(t *testing.T) {
	root, orig, p := ryzenX4Tree(t)
	irq99 := stepOf(t, p, "irq 99")
	fs, _ := open(t, root)
	tg := &Target{FS: fs, KernelIRQs: true, Restart: func(string) error { return nil },
		files: &kernelIRQs{FS: fs, refuse: map[int]bool{99: true}}}
	dir := testutil.Scratch(t)
	res, err := Apply(p, tg, ApplyOptions{JournalDir: dir})
	if err != nil {
		t.Fatalf("a refused IRQ failed the apply: %v", err)
	}
	if len(res.Rollback) != 0 {
		t.Errorf("rolled back %d steps after a refusal", len(res.Rollback))
	}
	for _, s := range res.Steps {
		want := PhaseApplied
		if s.Step == irq99.Step {
			want = PhaseRefused
		}
		if s.Phase != want {
			t.Errorf("step %d (%s): %s, want %s (%s)", s.Step, s.Target, s.Phase, want, s.Reason)
		}
	}
	r99 := res.Steps[irq99.Step-1]
	if !strings.Contains(r99.Reason, "refused") || !strings.Contains(r99.Reason, "input/output error") {
		t.Errorf("irq 99's reason: %q", r99.Reason)
	}
	if got := readFile(t, root, "proc/irq/99/smp_affinity_list"); got != strings.TrimPrefix(orig["proc/irq/99/smp_affinity_list"], "file:") {
		t.Errorf("refused irq 99 now %q", got)
	}
	if got := readFile(t, root, "proc/sys/net/ipv4/tcp_rmem"); got != "4096 131072 33554432\n" {
		t.Errorf("tcp_rmem (before the refusal) %q", got)
	}
	if got := readFile(t, root, "proc/irq/111/smp_affinity_list"); got != "10\n" {
		t.Errorf("irq 111 (after the refusal) %q, want 10", got)
	}

	var out bytes.Buffer
	if err := WriteResult(&out, res, termui.Style{}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if want := fmt.Sprintf("%d applied, 1 refused, 0 skipped", len(p.Changes)-1); !strings.Contains(text, want) {
		t.Errorf("text lacks %q:\n%s", want, text)
	}
	var line string
	for l := range strings.SplitSeq(text, "\n") {
		if strings.Contains(l, "irq 99:") {
			line = l
		}
	}
	if !strings.Contains(line, "refused") || !strings.Contains(line, "kernel-managed IRQ") {
		t.Errorf("irq 99's line: %q\n%s", line, text)
	}

	j, err := Load(dir, res.Journal)
	if err != nil || j.State() != StateApplied {
		t.Fatalf("journal: %v, state %v", err, j.State())
	}
	rr, err := Revert(j, tg, RevertOptions{NetNS: p.NetNS})
	if err != nil {
		t.Fatal(err)
	}
	if rr.Count(PhaseReverted) != len(p.Changes)-1 {
		t.Errorf("reverted %d, want %d: %+v", rr.Count(PhaseReverted), len(p.Changes)-1, rr.Steps)
	}
	sameTree(t, withoutEffective(orig), withoutEffective(testutil.TreeState(t, root)))
}
