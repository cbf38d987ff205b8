package tune

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/termui"
	"github.com/linerate/linerate/internal/testutil"
)

// noColour is the style of a terminal without colours.
var noColour = termui.Style{}

// appliedTree is the x4 home lab's plan applied to a copy of its tree, with its
// journal in a directory of its own.
type appliedTree struct {
	root string
	orig map[string]string
	p    *Plan
	dir  string
	tg   *Target
	res  *Result
	path string // the journal
}

// journalDir returns a new journal directory laid out as linerate's
// (STATE/tune, both 0700), so that tests may change both.
func journalDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join(testutil.Scratch(t), "state", "tune")
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

func applyRyzenX4(t *testing.T) *appliedTree {
	t.Helper()
	a := &appliedTree{dir: journalDir(t)}
	a.root, a.orig, a.p = ryzenX4Tree(t)
	var restarts []string
	a.tg = treeTarget(t, a.root, &restarts)
	res, err := Apply(a.p, a.tg, ApplyOptions{JournalDir: a.dir})
	if err != nil {
		t.Fatal(err)
	}
	a.res, a.path = res, filepath.Join(a.dir, res.Journal+journalExt)
	return a
}

// journalLines returns the journal's lines, each with its newline.
func journalLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
}

// wholeLines fails the test unless every line of the journal is a record
// ending in a newline.
func wholeLines(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		t.Errorf("%s does not end in a newline", path)
	}
	for i, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var r record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Errorf("line %d is not a record: %q", i+1, l)
		}
	}
}

func writeJournal(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestJournalCutMidLine: a journal cut in the middle of a line (step 6's
// journaled record) is read up to its last whole line, listed as damaged
// with what it holds, and reverted as far as it goes; the revert cuts the
// torn tail off, so its own records are whole lines.
func TestJournalCutMidLine(t *testing.T) {
	a := applyRyzenX4(t)
	lines := journalLines(t, a.path)
	// header; steps 1-5 (journaled, applied); then half of step 6's.
	half := lines[11][:len(lines[11])/2]
	writeJournal(t, a.path, strings.Join(lines[:11], "")+half)
	j, err := Load(a.dir, a.res.Journal)
	if err != nil {
		t.Fatal(err)
	}
	wantDamage := fmt.Sprintf("its last line is cut off (%d bytes; a write was cut short), so it was read up to line 11", len(half))
	if j.Damage != wantDamage || len(j.Steps) != 5 || j.Applied() != 5 || j.Pending() != 5 || j.State() != StateIncomplete {
		t.Fatalf("cut journal: damage %q, %d steps, %d applied, %d pending, %s", j.Damage, len(j.Steps), j.Applied(), j.Pending(), j.State())
	}
	var out strings.Builder
	all, err := List(a.dir)
	if err != nil || len(all) != 1 {
		t.Fatalf("List: %v, %d journals", err, len(all))
	}
	WriteList(&out, all, noColour)
	if want := "damaged: " + wantDamage + "; it holds 5 step(s) (5 applied, 0 journaled without a read-back), 0 event(s): revert restores what those prove"; !strings.Contains(out.String(), want) {
		t.Errorf("list:\n%s\nwant %q", out.String(), want)
	}
	rr, err := Revert(j, a.tg, RevertOptions{NetNS: a.p.NetNS})
	if err != nil || rr.Count(PhaseReverted) != 5 {
		t.Fatalf("revert: %v, %+v", err, rr)
	}
	for _, c := range a.p.Changes {
		got := "file:" + readFile(t, a.root, hostRel(c.Path))
		if c.Step <= 5 && got != a.orig[hostRel(c.Path)] {
			t.Errorf("step %d (%s): %q, want the prior %q", c.Step, c.Target, got, a.orig[hostRel(c.Path)])
		}
		if c.Step == 6 && got == a.orig[hostRel(c.Path)] {
			t.Errorf("step 6 (%s) was restored, but its record is lost", c.Target)
		}
	}
	wholeLines(t, a.path)
	if j, err = Load(a.dir, a.res.Journal); err != nil || j.Damage != "" || j.State() != StateReverted {
		t.Errorf("after revert: %v, damage %q, state %s", err, j.Damage, j.State())
	}
}

// TestJournalLastRecordWithoutNewline: a last record whole but for its
// newline is a record; revert adds the newline before its own.
func TestJournalLastRecordWithoutNewline(t *testing.T) {
	a := applyRyzenX4(t)
	lines := journalLines(t, a.path)
	n := len(lines) - 1 // the last line, the "applied" event, loses its newline
	writeJournal(t, a.path, strings.Join(lines[:n], "")+strings.TrimSuffix(lines[n], "\n"))
	j, err := Load(a.dir, a.res.Journal)
	if err != nil || j.Damage != "" || j.State() != StateApplied || !j.needNL {
		t.Fatalf("%v, damage %q, state %s", err, j.Damage, j.State())
	}
	if _, err := Revert(j, a.tg, RevertOptions{NetNS: a.p.NetNS}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, a.orig, testutil.TreeState(t, a.root))
	wholeLines(t, a.path)
}

// TestJournalDamagedLine: a line that is not a record (a block of zeros
// where step 3's journaled record was) damages the journal, not the rest
// of it: every other step is reverted; step 3, whose prior value is
// lost, is left as tune set it.
func TestJournalDamagedLine(t *testing.T) {
	a := applyRyzenX4(t)
	lines := journalLines(t, a.path)
	lines[5] = strings.Repeat("\x00", len(lines[5])-1) + "\n" // step 3, journaled
	writeJournal(t, a.path, strings.Join(lines, ""))
	j, err := Load(a.dir, a.res.Journal)
	if err != nil {
		t.Fatal(err)
	}
	want := "line 6 is not a record; step(s) 3: records without the change they are about (not reverted)"
	if j.Damage != want || len(j.Steps) != len(a.p.Changes)-1 || j.State() != StateApplied {
		t.Fatalf("damage %q (want %q), %d steps, %s", j.Damage, want, len(j.Steps), j.State())
	}
	rr, err := Revert(j, a.tg, RevertOptions{NetNS: a.p.NetNS})
	if err != nil || rr.Count(PhaseReverted) != len(a.p.Changes)-1 {
		t.Fatalf("revert: %v, %d reverted", err, rr.Count(PhaseReverted))
	}
	if got := readFile(t, a.root, "proc/sys/net/ipv4/tcp_rmem"); got != "4096 131072 33554432\n" {
		t.Errorf("tcp_rmem (step 3) %q: with its prior lost it stays as tune set it", got)
	}
	st := testutil.TreeState(t, a.root)
	st["proc/sys/net/ipv4/tcp_rmem"] = a.orig["proc/sys/net/ipv4/tcp_rmem"]
	sameTree(t, a.orig, st)
}

// TestJournalHeaderless: an empty journal and one without a header are
// listed as damaged, hold nothing, and neither blocks revert --last (Last)
// nor another journal; Load says what to do with them.
func TestJournalHeaderless(t *testing.T) {
	a := applyRyzenX4(t)
	empty := filepath.Join(a.dir, "29990101T000000.000000Z.jsonl")
	junk := filepath.Join(a.dir, "29990101T000000.000001Z.jsonl")
	writeJournal(t, empty, "")
	writeJournal(t, junk, "garbage\n")
	all, err := List(a.dir)
	if err != nil || len(all) != 3 {
		t.Fatalf("List: %v, %d journals", err, len(all))
	}
	for i, want := range []string{"no " + JournalSchema + " header; line 1 is not a record", "an empty file"} {
		if all[i].State() != StateDamaged || all[i].Damage != want || all[i].Pending() != 0 {
			t.Errorf("%s: %s, damage %q (want %q)", all[i].ID, all[i].State(), all[i].Damage, want)
		}
	}
	j, err := Last(a.dir, a.p.NetNS)
	if err != nil || j.ID != a.res.Journal {
		t.Fatalf("Last: %v %v, want %s", j, err, a.res.Journal)
	}
	_, err = Load(a.dir, "29990101T000000.000000Z")
	want := "journal " + empty + " is damaged (an empty file): it has no header, which a journal gets before any change, so nothing was changed under it; remove it (rm " + empty + ")"
	if err == nil || err.Error() != want {
		t.Errorf("Load of an empty journal: %v\nwant %s", err, want)
	}
	var out strings.Builder
	WriteList(&out, all, noColour)
	if !strings.Contains(out.String(), "damaged: an empty file: nothing was changed under it (a journal gets its header before any change); remove it: rm "+empty) {
		t.Errorf("list:\n%s", out.String())
	}
	if _, err := Revert(j, a.tg, RevertOptions{NetNS: a.p.NetNS}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, a.orig, testutil.TreeState(t, a.root))
}

// rewriteStep1 rewrites the journaled record of step 1 with edit.
func rewriteStep1(t *testing.T, path string, edit func(*record)) {
	t.Helper()
	lines := journalLines(t, path)
	var r record
	if err := json.Unmarshal([]byte(lines[1]), &r); err != nil || r.Step != 1 || r.Phase != PhaseJournaled {
		t.Fatalf("line 2 is not step 1's journaled record: %v %s", err, lines[1])
	}
	edit(&r)
	b, _ := json.Marshal(r)
	lines[1] = string(b) + "\n"
	writeJournal(t, path, strings.Join(lines, ""))
}

// TestJournalRefusesHostilePaths: a journal whose step names a path its
// kind never writes, or a root that is not a clean absolute directory, is
// refused on load, listed as refused with nothing in it, and skipped by
// Last.
func TestJournalRefusesHostilePaths(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*record)
		why  string
	}{
		{"passwd as a sysctl", func(r *record) { r.Change.Path, r.Change.Target = "/etc/passwd", "etc.passwd" },
			`step 1: a sysctl change names "/etc/passwd", which is not a net sysctl (/proc/sys/net/…)`},
		{"dot-dot in a sysctl", func(r *record) { r.Change.Path = "/proc/sys/net/../../../etc/passwd" },
			`step 1: a sysctl change names "/proc/sys/net/../../../etc/passwd", which is not a net sysctl (/proc/sys/net/…)`},
		{"a sysctl shown as another", func(r *record) { r.Change.Target = "net.core.wmem_max" },
			`step 1: a sysctl change shows "net.core.wmem_max" but writes /proc/sys/net/core/rmem_max`},
		{"a governor out of cpufreq", func(r *record) {
			r.Change.Kind, r.Change.Target, r.Change.Path = KindGovernor, "cpu0", "/sys/devices/system/cpu/cpu0/cpufreq/../../../../../etc/shadow"
		}, `step 1: a governor change names "/sys/devices/system/cpu/cpu0/cpufreq/../../../../../etc/shadow", which is not a cpufreq scaling_governor`},
		{"an IRQ out of /proc/irq", func(r *record) {
			r.Change.Kind, r.Change.Target, r.Change.Path = KindIRQ, "irq 99", "/proc/irq/99/../../../etc/passwd"
		}, `step 1: an IRQ change names "/proc/irq/99/../../../etc/passwd", which is not an IRQ's smp_affinity_list`},
		{"irqbalance as passwd", func(r *record) {
			r.Change.Kind, r.Change.Target, r.Change.Path = KindIRQBalance, "/etc/passwd", "/etc/passwd"
		},
			`step 1: an irqbalance change names "/etc/passwd", which is not irqbalance's configuration (/etc/default/irqbalance or /etc/sysconfig/irqbalance)`},
		{"an MTU with a file", func(r *record) {
			r.Change.Kind, r.Change.Target, r.Change.Interface = KindMTU, "eth0", "eth0"
		}, `step 1: a mtu change names a file ("/proc/sys/net/core/rmem_max"): it is made over netlink or ethtool`},
		{"channels of a path", func(r *record) {
			r.Change.Kind, r.Change.Path, r.Change.Target, r.Change.Interface = KindChannels, "", "../x", "../x"
		}, `step 1: a channels change names "../x", which is not an interface name`},
		{"an unknown kind", func(r *record) { r.Change.Kind = "shell" },
			`step 1: unknown kind of change "shell" (a journal from a newer linerate?)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := applyRyzenX4(t)
			rewriteStep1(t, a.path, tc.edit)
			_, err := Load(a.dir, a.res.Journal)
			want := "journal " + a.path + " refused: " + tc.why + "; a journal tune wrote never does that: check who wrote it, then remove it"
			if err == nil || err.Error() != want {
				t.Fatalf("Load: %v\nwant %s", err, want)
			}
			all, err := List(a.dir)
			if err != nil || len(all) != 1 || all[0].State() != StateRefused || len(all[0].Steps) != 0 || all[0].Pending() != 0 {
				t.Errorf("List: %v %+v", err, all)
			}
			if _, err := Last(a.dir, a.p.NetNS); !errors.Is(err, ErrNoJournal) {
				t.Errorf("Last: %v, want no journal", err)
			}
		})
	}
	for _, root := range []string{"", "relative/tree", "/x/../etc"} {
		a := applyRyzenX4(t)
		lines := journalLines(t, a.path)
		var h record
		json.Unmarshal([]byte(lines[0]), &h)
		h.Root = root
		b, _ := json.Marshal(h)
		lines[0] = string(b) + "\n"
		writeJournal(t, a.path, strings.Join(lines, ""))
		if _, err := Load(a.dir, a.res.Journal); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("refused: its root %q is not an absolute directory", root)) {
			t.Errorf("root %q: %v", root, err)
		}
	}
}

// TestJournalNamingPasswdWritesNothing: a journal whose step would put a
// chosen "prior" into the tree's etc/passwd — the value there now being
// the one it claims tune wrote, so an unchecked revert would write — is
// refused, and the file keeps its bytes and its mtime. Reverting a
// Journal made by hand, past Load, fails the step and writes nothing too.
func TestJournalNamingPasswdWritesNothing(t *testing.T) {
	root := copyTree(t, "ryzen-9900x-cx5-x4")
	const passwd = "root:x:0:0:root:/root:/bin/bash\n"
	writeFile(t, root, "etc/passwd", passwd)
	then := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(root, "etc/passwd"), then, then); err != nil {
		t.Fatal(err)
	}
	dir := testutil.Scratch(t)
	p := &Plan{Host: "crow", Root: root, Profile: Throughput}
	w, id, err := createJournal(dir, p, time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	c := Change{Step: 1, Kind: KindSysctl, Target: "etc.passwd", Path: "/etc/passwd", Before: "x", After: "y"}
	prior, want := "root::0:0:root:/root:/bin/bash\n", passwd
	if err := w.append(record{Step: 1, Phase: PhaseJournaled, Change: &c, Prior: &prior, Want: &want}); err != nil {
		t.Fatal(err)
	}
	w.append(record{Event: eventApplied})
	w.close()

	if _, err := Load(dir, id); err == nil || !strings.Contains(err.Error(), `refused: step 1: a sysctl change names "/etc/passwd"`) {
		t.Errorf("Load: %v", err)
	}
	if _, err := Last(dir, 0); !errors.Is(err, ErrNoJournal) {
		t.Errorf("Last: %v", err)
	}
	fsys, _ := open(t, root)
	j := &Journal{ID: id, Root: root, Path: filepath.Join(dir, id+journalExt), Steps: []*JournalStep{{Change: c, Prior: prior, Want: want, Phase: PhaseApplied, journaled: true}}}
	j.size = fileSize(t, j.Path)
	j.whole = j.size
	rr, err := Revert(j, &Target{FS: fsys}, RevertOptions{})
	if !errors.Is(err, ErrRevertIncomplete) || rr.Count(PhaseRevertFailed) != 1 || !strings.Contains(rr.Steps[0].Reason, "which is not a net sysctl") {
		t.Errorf("Revert past Load: %v %+v", err, rr)
	}
	if got := readFile(t, root, "etc/passwd"); got != passwd {
		t.Errorf("etc/passwd is now %q", got)
	}
	if fi, err := os.Stat(filepath.Join(root, "etc/passwd")); err != nil || !fi.ModTime().Equal(then) {
		t.Errorf("etc/passwd's mtime is %v, was %v (%v)", fi.ModTime(), then, err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestJournalOwnerAndMode: a journal, or its directory, or the directory
// holding that, that someone other than root could have written is
// refused with one line naming it and the fix.
func TestJournalOwnerAndMode(t *testing.T) {
	a := applyRyzenX4(t)
	load := func() string {
		_, err := Load(a.dir, a.res.Journal)
		if err == nil {
			return ""
		}
		return err.Error()
	}
	if err := os.Chmod(a.path, 0o620); err != nil {
		t.Fatal(err)
	}
	if got, want := load(), "journal "+a.path+" refused: "+a.path+" is writable by group or others (mode 0620): anyone could have changed it; check it, then chmod go-w "+a.path+" (or set LINERATE_STATE_DIR to a directory only you can write)"; got != want {
		t.Errorf("group-writable journal: %s\nwant %s", got, want)
	}
	if all, err := List(a.dir); err != nil || all[0].State() != StateRefused {
		t.Errorf("List: %v", err)
	}
	os.Chmod(a.path, 0o600)
	if got := load(); got != "" {
		t.Fatalf("a 0600 journal: %s", got)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(a.path, 1000, 1000); err != nil {
			t.Fatal(err)
		}
		if got := load(); !strings.Contains(got, a.path+" is owned by uid 1000, not root: someone else may have written it; check it, then chown 0 "+a.path) {
			t.Errorf("a journal owned by uid 1000: %s", got)
		}
		os.Chown(a.path, 0, 0)
	}
	link := filepath.Join(a.dir, "29990101T000000.000000Z.jsonl")
	if err := os.Symlink(a.path, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(a.dir, "29990101T000000.000000Z"); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Errorf("a link: %v", err)
	}
	os.Remove(link)
	for _, tc := range []struct {
		dir  string
		mode fs.FileMode
		bad  bool
	}{
		{a.dir, 0o770, true},
		{a.dir, 0o755, false},
		{filepath.Dir(a.dir), 0o777, true},
		{filepath.Dir(a.dir), 0o777 | fs.ModeSticky, false},
	} {
		fi, _ := os.Stat(tc.dir)
		if err := os.Chmod(tc.dir, tc.mode); err != nil {
			t.Fatal(err)
		}
		_, err := List(a.dir)
		if tc.bad && (err == nil || !strings.Contains(err.Error(), fmt.Sprintf("tune journals: %s is writable by group or others (mode %04o)", tc.dir, tc.mode.Perm()))) {
			t.Errorf("%s %v: List: %v", tc.dir, tc.mode, err)
		}
		if !tc.bad && err != nil {
			t.Errorf("%s %v: %v", tc.dir, tc.mode, err)
		}
		if _, _, err := createJournal(a.dir, a.p, time.Now(), 0); tc.bad != (err != nil) {
			t.Errorf("%s %v: createJournal: %v", tc.dir, tc.mode, err)
		}
		os.Chmod(tc.dir, fi.Mode())
	}
}

// TestCreateJournalSameMicrosecond: two journals started in the same
// microsecond get two files, the second "-2", each with its own header;
// the first is never replaced. Both with O_TMPFILE and with the hidden
// temporary file of filesystems without it, which leaves nothing behind.
func TestCreateJournalSameMicrosecond(t *testing.T) {
	for _, unnamed := range []bool{true, false} {
		t.Run(fmt.Sprintf("unnamed=%v", unnamed), func(t *testing.T) {
			if !unnamed {
				noTmpfile(t)
			}
			dir := testutil.Scratch(t)
			now := time.Date(2025, 1, 20, 15, 30, 12, 123456789, time.UTC)
			p := &Plan{Host: "crow", Root: "/", NetNS: 7, Profile: Throughput}
			w1, id1, err := createJournal(dir, p, now, 0)
			if err != nil {
				t.Fatal(err)
			}
			w2, id2, err := createJournal(dir, p, now, 0)
			if err != nil {
				t.Fatal(err)
			}
			if id1 != "20250120T153012.123456Z" || id2 != "20250120T153012.123456Z-2" {
				t.Fatalf("IDs %s and %s", id1, id2)
			}
			if err := w1.append(record{Event: eventApplied}); err != nil {
				t.Fatal(err)
			}
			w1.close()
			w2.close()
			for _, id := range []string{id1, id2} {
				j, err := Load(dir, id)
				if err != nil || j.Damage != "" || j.NetNS != 7 {
					t.Errorf("%s: %v, damage %q", id, err, j.Damage)
				}
			}
			if j, _ := Load(dir, id1); len(j.Events) != 1 {
				t.Errorf("the first journal lost its record: %+v", j.Events)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 2 {
				t.Errorf("%d files in the directory, want the two journals", len(entries))
			}
		})
	}
}

// noTmpfile makes createJournal take the path of filesystems without
// O_TMPFILE for the rest of the test.
func noTmpfile(t *testing.T) {
	old := openUnnamed
	openUnnamed = func(dir string) (*os.File, error) {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: unix.EOPNOTSUPP}
	}
	t.Cleanup(func() { openUnnamed = old })
}

// FuzzJournal reads arbitrary bytes as a journal file: never a panic; a
// refused or headerless journal holds nothing; every step held names a
// path its kind may write; the whole lines end where a newline does.
func FuzzJournal(f *testing.F) {
	hdr := `{"schema":"linerate.tune-journal/v1","id":"20250120T153012.123456Z","time":"2025-01-20T15:30:12.123456Z","host":"crow","root":"/","netns":4026531840,"profile":"throughput","planned":2}` + "\n"
	step := `{"step":1,"phase":"journaled","change":{"step":1,"kind":"sysctl","target":"net.core.rmem_max","path":"/proc/sys/net/core/rmem_max","before":"212992","after":"33554432","source":"x","command":"y"},"prior":"212992\n","want":"33554432\n"}` + "\n"
	for _, seed := range []string{
		"", "\n", "garbage\n", hdr, hdr + step, hdr + step + `{"step":1,"phase":"applied","now":"33554432\n"}` + "\n" + `{"event":"applied"}` + "\n",
		hdr + step[:40], hdr + strings.Replace(step, "/proc/sys/net/core/rmem_max", "/etc/passwd", 1),
		hdr + `{"step":2,"phase":"applied"}` + "\n", strings.Replace(hdr, `"root":"/"`, `"root":"x/.."`, 1) + step,
		hdr + strings.Replace(step, `"kind":"sysctl"`, `"kind":"mtu"`, 1),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		j := &Journal{ID: "20250120T153012.123456Z", Events: []string{}, Steps: []*JournalStep{}}
		j.size = int64(len(b))
		recs, damage := parseRecords(j, b)
		build(j, recs, damage)
		_, _ = j.State(), j.Holds()
		if (j.Refused != "" || j.headerless) && (len(j.Steps) != 0 || j.Pending() != 0) {
			t.Fatalf("a refused or headerless journal holds %d steps", len(j.Steps))
		}
		for _, s := range j.Steps {
			if err := checkChange(&s.Change); err != nil {
				t.Fatalf("step %d kept: %v", s.Change.Step, err)
			}
		}
		if j.whole < 0 || j.whole > j.size || (j.whole > 0 && b[j.whole-1] != '\n' && !j.needNL) {
			t.Fatalf("whole lines end at %d of %d", j.whole, j.size)
		}
		if j.whole < j.size && strings.Contains(string(b[j.whole:]), "\n") {
			t.Fatalf("the cut-off tail %q holds a newline", b[j.whole:])
		}
	})
}

// TestJournalDeviceKinds: a journal's channel and ring steps name an
// interface, not a file; Load trusts them by that name, and refuses a
// name the kernel would not give an interface, a target that is not the
// interface, or a path.
func TestJournalDeviceKinds(t *testing.T) {
	for _, tc := range []struct {
		c   Change
		why string
	}{
		{Change{Kind: KindChannels, Target: "lr-doctor0", Interface: "lr-doctor0", Before: "rx 1 tx 1", After: "rx 2 tx 2"}, ""},
		{Change{Kind: KindRings, Target: "ens5f1np1", Interface: "ens5f1np1", Before: "rx 512", After: "rx 8192"}, ""},
		{Change{Kind: KindRings, Target: "eth0", Interface: "eth1"}, `a rings change names "eth1", which is not an interface name`},
		{Change{Kind: KindChannels, Target: "abcdefghijklmnop", Interface: "abcdefghijklmnop"}, "not an interface name"},
		{Change{Kind: KindChannels, Target: "a b", Interface: "a b"}, "not an interface name"},
		{Change{Kind: KindRings, Target: "..", Interface: ".."}, "not an interface name"},
		{Change{Kind: KindRings, Target: "eth0", Interface: "eth0", Path: "/sys/class/net/eth0"}, "it is made over netlink or ethtool"},
	} {
		err := checkChange(&tc.c)
		if (tc.why == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.why)) {
			t.Errorf("%+v: %v, want %q", tc.c, err, tc.why)
		}
	}
	// The longest name the kernel takes (15 bytes) is one.
	c := Change{Kind: KindChannels, Target: "abcdefghijklmno", Interface: "abcdefghijklmno"}
	if err := checkChange(&c); err != nil {
		t.Errorf("15 bytes: %v", err)
	}
}

// TestActive: the journal in effect is the newest applied one of the
// namespace; none after its revert, none in another namespace.
func TestActive(t *testing.T) {
	a := applyRyzenX4(t)
	j, err := Active(a.dir, a.p.NetNS)
	if err != nil || j == nil || j.ID != a.res.Journal {
		t.Fatalf("Active = %+v, %v; want %s", j, err, a.res.Journal)
	}
	if j, err := Active(a.dir, a.p.NetNS+1); err != nil || j != nil {
		t.Errorf("another namespace: %+v, %v", j, err)
	}
	if _, err := Revert(j, a.tg, RevertOptions{NetNS: a.p.NetNS}); err != nil {
		t.Fatal(err)
	}
	if j, err := Active(a.dir, a.p.NetNS); err != nil || j != nil {
		t.Errorf("after revert: %+v, %v", j, err)
	}
	if _, err := Active(filepath.Join(a.dir, "nosuch"), a.p.NetNS); err != nil {
		t.Errorf("no directory: %v (no journal yet is not an error)", err)
	}
}
