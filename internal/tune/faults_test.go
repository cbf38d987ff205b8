package tune

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/linerate/linerate/internal/testutil"
	"golang.org/x/sys/unix"
)

// durableJournal stands in for syncFile and remembers how much of each
// file was synced: what a crash at this instant would leave on disk.
type durableJournal struct {
	synced map[uint64]int64 // inode → size at its last sync
}

func watchSyncs(t *testing.T) *durableJournal {
	t.Helper()
	d := &durableJournal{synced: map[uint64]int64{}}
	old := syncFile
	syncFile = func(f *os.File) error {
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			d.synced[fi.Sys().(*syscall.Stat_t).Ino] = fi.Size()
		}
		return f.Sync()
	}
	t.Cleanup(func() { syncFile = old })
	return d
}

// onDisk returns the only journal in dir as a crash now would leave it:
// its synced part.
func (d *durableJournal) onDisk(t *testing.T, dir string) *Journal {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*"+journalExt))
	if len(paths) != 1 {
		t.Fatalf("%d journals in %s, want 1", len(paths), dir)
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(paths[0])
	n := d.synced[fi.Sys().(*syscall.Stat_t).Ino]
	j := &Journal{ID: strings.TrimSuffix(filepath.Base(paths[0]), journalExt), Path: paths[0], Events: []string{}, Steps: []*JournalStep{}}
	j.size = n
	recs, damage := parseRecords(j, b[:n])
	build(j, recs, damage)
	return j
}

// proves reports whether j holds a journaled record of c with prior as
// its prior value.
func proves(j *Journal, c Change, prior string) bool {
	for _, s := range j.Steps {
		if s.Change.Step == c.Step && s.journaled && s.Prior == prior {
			return true
		}
	}
	return false
}

// checkingFiles is a root whose writes first check that the journal on
// disk (synced) holds the value being replaced.
type checkingFiles struct {
	rootFiles
	check func(rel string)
}

func (c *checkingFiles) WriteFile(rel string, data []byte) error {
	c.check(rel)
	return c.rootFiles.WriteFile(rel, data)
}

// checkingDevices is Devices whose sets first check the journal likewise.
type checkingDevices struct {
	*fakeDevices
	check func(kind Kind, iface string)
}

func (c *checkingDevices) SetChannels(iface string, ch Channels) error {
	c.check(KindChannels, iface)
	return c.fakeDevices.SetChannels(iface, ch)
}

func (c *checkingDevices) SetRings(iface string, r Rings) error {
	c.check(KindRings, iface)
	return c.fakeDevices.SetRings(iface, r)
}

func (c *checkingDevices) SetMTU(iface string, mtu int) error {
	c.check(KindMTU, iface)
	return c.fakeDevices.SetMTU(iface, mtu)
}

// TestApplyJournalsBeforeChange: at every write Apply makes — files and
// driver settings — the journal as a crash would leave it (only what was
// synced) already holds the step's prior value, which is the value being
// replaced; and at the AfterStep hook of a journaled step the value is
// still the prior. So a kill or a power cut at any instant leaves a
// journal that can restore every change made.
func TestApplyJournalsBeforeChange(t *testing.T) {
	for _, tree := range []string{"ryzen-9900x-cx5-x4", "xeon-xl710-gen2-x4"} {
		t.Run(tree, func(t *testing.T) {
			root := copyTree(t, tree)
			writeFile(t, root, "etc/default/irqbalance", debianIRQBalance)
			dev := xl710()
			p := plan(t, root, dev, Options{AppCPUs: appCPUs(tree), MTU: 9000})
			dir := journalDir(t)
			d := watchSyncs(t)
			fsys, _ := open(t, root)
			byPath, byDev := map[string]Change{}, map[string]Change{}
			for _, c := range p.Changes {
				byPath[hostRel(c.Path)] = c
				byDev[string(c.Kind)+" "+c.Interface] = c
			}
			checked := 0
			files := &checkingFiles{rootFiles: fsys}
			files.check = func(rel string) {
				checked++
				c, ok := byPath[rel]
				cur, err := fsys.ReadFile(rel)
				if !ok || err != nil {
					t.Fatalf("a write to %s, which no step changes (%v)", rel, err)
				}
				if !proves(d.onDisk(t, dir), c, string(cur)) {
					t.Errorf("step %d (%s): written before its prior %q was on disk", c.Step, c.Target, cur)
				}
			}
			devs := &checkingDevices{fakeDevices: dev}
			devs.check = func(k Kind, iface string) {
				checked++
				c := byDev[string(k)+" "+iface]
				o, _ := (&Target{Devices: dev}).opFor(c)
				cur, _ := o.read()
				if !proves(d.onDisk(t, dir), c, cur) {
					t.Errorf("step %d (%s %s): set before its prior %q was on disk", c.Step, k, iface, cur)
				}
			}
			tg := &Target{FS: fsys, Devices: devs, files: files, Restart: func(string) error { return nil }}
			hooked := 0
			after := func(step int, ph Phase) {
				if ph != PhaseJournaled {
					return
				}
				hooked++
				c := p.Changes[step-1]
				o, _ := tg.opFor(c)
				cur, _ := o.read()
				if j := d.onDisk(t, dir); !proves(j, c, cur) {
					t.Errorf("step %d (%s): at its journaled hook the value is %q, which the journal does not hold as its prior", step, c.Target, cur)
				}
			}
			res, err := Apply(p, tg, ApplyOptions{JournalDir: dir, AfterStep: after})
			if err != nil {
				t.Fatal(err)
			}
			// The x4 home lab: 5 sysctls, 12 governors, irqbalance, IRQ
			// 111; the XL710 host: more, with the devices.
			if n := res.Count(PhaseApplied); checked != n || hooked != n || n < 19 {
				t.Errorf("%d writes checked, %d hooks, %d steps applied", checked, hooked, n)
			}
		})
	}
}

func appCPUs(tree string) []int {
	if tree == "ryzen-9900x-cx5-x4" {
		return []int{6}
	}
	return nil
}

// faultyFiles makes chosen writes fail or land wrong: fail[rel] is the
// error of each write to rel (one per call, "" for none, the last
// repeating); wrong[rel] is what lands instead of what was written.
type faultyFiles struct {
	rootFiles
	fail  map[string][]error
	wrong map[string]string
}

func (f *faultyFiles) WriteFile(rel string, data []byte) error {
	if errs := f.fail[rel]; len(errs) > 0 {
		err := errs[0]
		if len(errs) > 1 {
			f.fail[rel] = errs[1:]
		}
		if err != nil {
			return err
		}
	}
	if w, ok := f.wrong[rel]; ok {
		data = []byte(w)
	}
	return f.rootFiles.WriteFile(rel, data)
}

// TestRevertFailures: each way a revert can fail for one step leaves the
// other steps restored, the step revert_failed with its reason, the
// journal partly reverted, and an error saying to run it again; which,
// once the fault is gone, restores the rest.
func TestRevertFailures(t *testing.T) {
	eio := fmt.Errorf("writing /proc/sys/net/core/rmem_max: %w", unix.EIO)
	for _, tc := range []struct {
		name   string
		fault  func(a *appliedTree, f *faultyFiles)
		reason string
	}{
		{"the write fails", func(a *appliedTree, f *faultyFiles) { f.fail["proc/sys/net/core/rmem_max"] = []error{eio} },
			`restoring "212992": writing /proc/sys/net/core/rmem_max: input/output error`},
		{"the read-back differs", func(a *appliedTree, f *faultyFiles) { f.wrong["proc/sys/net/core/rmem_max"] = "4096\n" },
			`restoring "212992": read back "4096"`},
		{"the value cannot be read", func(a *appliedTree, f *faultyFiles) {
			p := filepath.Join(a.root, "proc/sys/net/core/rmem_max")
			os.Rename(p, p+".away")
			os.Mkdir(p, 0o755)
		}, `reading it: open /proc/sys/net/core/rmem_max: is a directory`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := applyRyzenX4(t)
			f := &faultyFiles{rootFiles: a.tg.FS, fail: map[string][]error{}, wrong: map[string]string{}}
			tc.fault(a, f)
			tg := &Target{FS: a.tg.FS, files: f, Restart: a.tg.Restart}
			j, err := Load(a.dir, a.res.Journal)
			if err != nil {
				t.Fatal(err)
			}
			rr, err := Revert(j, tg, RevertOptions{NetNS: a.p.NetNS})
			want := fmt.Sprintf("journal %s: 1 step(s) failed: some values could not be restored (run linerate tune revert %s again once fixed)", j.ID, j.ID)
			if !errors.Is(err, ErrRevertIncomplete) || err.Error() != want {
				t.Errorf("err %v\nwant %s", err, want)
			}
			n := len(a.p.Changes)
			if rr.Count(PhaseReverted) != n-1 || rr.Count(PhaseRevertFailed) != 1 {
				t.Errorf("%d reverted, %d failed of %d", rr.Count(PhaseReverted), rr.Count(PhaseRevertFailed), n)
			}
			last := rr.Steps[len(rr.Steps)-1] // step 1, rmem_max, comes last
			if last.Step != 1 || last.Phase != PhaseRevertFailed || last.Reason != tc.reason {
				t.Errorf("step 1: %s %q\nwant %q", last.Phase, last.Reason, tc.reason)
			}
			if j, _ = Load(a.dir, a.res.Journal); j.State() != StatePartlyReverted || j.Pending() != 1 {
				t.Errorf("journal %s, %d pending", j.State(), j.Pending())
			}
			// The fault gone, the revert again restores the rest (forced:
			// a read-back that differed left a value that is neither
			// tune's nor the prior, which revert alone leaves).
			p := filepath.Join(a.root, "proc/sys/net/core/rmem_max")
			if _, err := os.Stat(p + ".away"); err == nil {
				os.Remove(p)
				os.Rename(p+".away", p)
			}
			rr, err = Revert(j, a.tg, RevertOptions{NetNS: a.p.NetNS, Force: true})
			if err != nil || rr.Count(PhaseReverted) != 1 {
				t.Errorf("second revert: %v %+v", err, rr.Steps)
			}
			sameTree(t, a.orig, testutil.TreeState(t, a.root))
			if j, _ = Load(a.dir, a.res.Journal); j.State() != StateReverted {
				t.Errorf("journal %s after the second revert", j.State())
			}
		})
	}
}

// TestRevertNeedsLive: a driver setting cannot be reverted without the
// live NIC: the step fails, saying so.
func TestRevertNeedsLive(t *testing.T) {
	root := copyTree(t, "xeon-xl710-gen2-x4")
	dev := xl710()
	p := plan(t, root, dev, Options{MTU: 9000})
	fsys, _ := open(t, root)
	dir := journalDir(t)
	res, err := Apply(p, &Target{FS: fsys, Devices: dev}, ApplyOptions{JournalDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	j, _ := Load(dir, res.Journal)
	rr, err := Revert(j, &Target{FS: fsys}, RevertOptions{NetNS: p.NetNS})
	if !errors.Is(err, ErrRevertIncomplete) || rr.Count(PhaseRevertFailed) != 3 {
		t.Fatalf("%v, %d failed", err, rr.Count(PhaseRevertFailed))
	}
	for _, s := range rr.Steps {
		if s.Phase == PhaseRevertFailed && (s.Reason != errNeedsLive.Error() || !map[Kind]bool{KindMTU: true, KindChannels: true, KindRings: true}[s.Kind]) {
			t.Errorf("%+v", s)
		}
	}
}

// TestRollbackFailures: a step fails; rolling back, one earlier step
// cannot be restored (its write fails) and another was changed by someone
// else meanwhile (left alone). The error counts both and names the
// journal; the journal is partly rolled back; the rest is restored.
func TestRollbackFailures(t *testing.T) {
	root := copyTree(t, "xeon-xl710-gen2-x4")
	orig := testutil.TreeState(t, root)
	dev := xl710()
	p := plan(t, root, dev, Options{})
	dev.failSet = "rings"
	fsys, _ := open(t, root)
	eio := fmt.Errorf("writing /proc/sys/net/core/wmem_max: %w", unix.EIO)
	f := &faultyFiles{rootFiles: fsys, fail: map[string][]error{"proc/sys/net/core/wmem_max": {nil, eio}}, wrong: map[string]string{}}
	tg := &Target{FS: fsys, Devices: dev, files: f}
	meddle := func(step int, ph Phase) {
		if step == 3 && ph == PhaseApplied {
			writeFile(t, root, "proc/sys/net/core/rmem_max", "999\n") // someone else
		}
	}
	dir := journalDir(t)
	res, err := Apply(p, tg, ApplyOptions{JournalDir: dir, AfterStep: meddle})
	var se *StepError
	if !errors.As(err, &se) || se.Change.Kind != KindRings || se.Left != 2 {
		t.Fatalf("err %v, want a StepError at the rings step with 2 left", err)
	}
	want := fmt.Sprintf("step %d of %d (%s) failed: fake driver error; rolled back %d applied step(s), 2 could not be restored (see linerate tune list; journal %s)",
		se.Step, len(p.Changes), se.Change.Label(), se.Step-3, res.Journal)
	if err.Error() != want {
		t.Errorf("err %s\nwant %s", err, want)
	}
	phases := map[string]Phase{}
	for _, r := range res.Rollback {
		phases[r.Target] = r.Phase
	}
	if phases["net.core.wmem_max"] != PhaseRevertFailed || phases["net.core.rmem_max"] != PhaseLeft {
		t.Errorf("rollback %+v", res.Rollback)
	}
	j, _ := Load(dir, res.Journal)
	if j.State() != statePartlyRolledBak || j.Pending() != 2 {
		t.Errorf("journal %s, %d pending", j.State(), j.Pending())
	}
	st := testutil.TreeState(t, root)
	if st["proc/sys/net/core/wmem_max"] == orig["proc/sys/net/core/wmem_max"] || st["proc/sys/net/core/rmem_max"] != "file:999\n" {
		t.Errorf("wmem_max %q, rmem_max %q", st["proc/sys/net/core/wmem_max"], st["proc/sys/net/core/rmem_max"])
	}
	st["proc/sys/net/core/wmem_max"], st["proc/sys/net/core/rmem_max"] = orig["proc/sys/net/core/wmem_max"], orig["proc/sys/net/core/rmem_max"]
	sameTree(t, orig, st)
	if dev.ch["ens2f0np0"] != xl710().ch["ens2f0np0"] {
		t.Errorf("channels after rollback %+v", dev.ch)
	}
}

// TestApplyJournalFails: the journal cannot be synced at step 3 (a disk
// error): Apply stops before that step's change and rolls back steps 1
// and 2; the tree is as before.
func TestApplyJournalFails(t *testing.T) {
	a := &appliedTree{dir: journalDir(t)}
	a.root, a.orig, a.p = ryzenX4Tree(t)
	old := syncFile
	t.Cleanup(func() { syncFile = old })
	n := 0
	syncFile = func(f *os.File) error {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			if n++; n == 4 { // the header, steps 1 and 2, then step 3
				return fmt.Errorf("sync %s: %w", f.Name(), unix.EIO)
			}
		}
		return f.Sync()
	}
	var restarts []string
	res, err := Apply(a.p, treeTarget(t, a.root, &restarts), ApplyOptions{JournalDir: a.dir})
	var se *StepError
	if !errors.As(err, &se) || se.Step != 3 || se.RolledBack != 2 || !strings.Contains(err.Error(), "syncing the tune journal") || !errors.Is(err, unix.EIO) {
		t.Fatalf("err %v", err)
	}
	if res.Steps[2].Phase != PhaseFailed || len(res.Steps) != 3 {
		t.Errorf("steps %+v", res.Steps)
	}
	sameTree(t, a.orig, testutil.TreeState(t, a.root))
}

// TestRevertWhileApplying: a journal an apply is still writing is locked:
// a revert of it meanwhile is refused with a line saying so, and changes
// nothing; once the apply ends, it reverts.
func TestRevertWhileApplying(t *testing.T) {
	a := &appliedTree{dir: journalDir(t)}
	a.root, a.orig, a.p = ryzenX4Tree(t)
	var restarts []string
	a.tg = treeTarget(t, a.root, &restarts)
	tried := false
	during := func(step int, ph Phase) {
		if step != 2 || ph != PhaseApplied {
			return
		}
		tried = true
		j, err := Last(a.dir, a.p.NetNS)
		if err != nil {
			t.Fatal(err)
		}
		before := testutil.TreeState(t, a.root)
		_, err = Revert(j, a.tg, RevertOptions{NetNS: a.p.NetNS})
		if want := "journal " + j.ID + " is in use by a running linerate tune (apply or revert): wait for it to end, then run this again"; err == nil || err.Error() != want {
			t.Errorf("revert during the apply: %v\nwant %s", err, want)
		}
		sameTree(t, before, testutil.TreeState(t, a.root))
	}
	res, err := Apply(a.p, a.tg, ApplyOptions{JournalDir: a.dir, AfterStep: during})
	if err != nil || !tried {
		t.Fatalf("apply: %v (hook reached: %v)", err, tried)
	}
	j, _ := Load(a.dir, res.Journal)
	if _, err := Revert(j, a.tg, RevertOptions{NetNS: a.p.NetNS}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, a.orig, testutil.TreeState(t, a.root))
}
