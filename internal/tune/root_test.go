package tune

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/osthread"
	"github.com/linerate/linerate/internal/testbin"
	"github.com/linerate/linerate/internal/testutil"
)

// needRoot skips a test without root, and fails it when CI=true.
func needRoot(t *testing.T, why string) {
	t.Helper()
	testbin.NeedRoot(t, why)
}

// tinyFS mounts a tmpfs of size bytes (mode 0700) for the test and
// returns a journal directory on it (STATE/tune, STATE the mount).
func tinyFS(t *testing.T, size int) (state, dir string) {
	t.Helper()
	needRoot(t, "mounting a tmpfs")
	base, err := os.MkdirTemp("", "linerate-tune-fs-")
	if err != nil {
		t.Fatal(err)
	}
	state = filepath.Join(base, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", state, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Fatalf("mounting a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		unix.Unmount(state, unix.MNT_DETACH)
		os.RemoveAll(base)
	})
	dir = filepath.Join(state, "tune")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return state, dir
}

// fill fills the filesystem of dir with the file dir/../fill, then gives
// back leave bytes, and returns the file's path.
func fill(t *testing.T, state string, leave int64) string {
	t.Helper()
	p := filepath.Join(state, "fill")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	fi, _ := f.Stat()
	if err := f.Truncate(max(0, fi.Size()-leave)); err != nil {
		t.Fatal(err)
	}
	if got := freeBytes(t, state); got != leave {
		t.Fatalf("%d bytes free, want %d", got, leave)
	}
	return p
}

func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

// TestApplyFullDisk: with the state directory on a full filesystem, or on
// one with room for the header but not for the whole journal, the apply
// is refused before its first change, with one line saying why and what
// to do, and leaves no file behind — with O_TMPFILE and without.
func TestApplyFullDisk(t *testing.T) {
	for _, tc := range []struct {
		name    string
		leave   int64
		unnamed bool
		header  bool // the header's write fails, else the reservation
	}{
		{"full", 0, true, true},
		{"full, no O_TMPFILE", 0, false, true},
		{"room for the header, not the journal", 8 << 10, true, false},
		{"room for the header, not the journal, no O_TMPFILE", 8 << 10, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.unnamed {
				noTmpfile(t)
			}
			root, orig, p := ryzenX4Tree(t)
			state, dir := tinyFS(t, 256<<10)
			fill(t, state, tc.leave)
			var restarts []string
			res, err := Apply(p, treeTarget(t, root, &restarts), ApplyOptions{JournalDir: dir})
			want := fmt.Sprintf("reserving %d KiB for the tune journal: no space left on device: the filesystem of %s is full; nothing was changed: free space there or set LINERATE_STATE_DIR to another directory",
				(journalReserve(p)+1023)>>10, dir)
			if tc.header {
				want = fmt.Sprintf("writing the tune journal (a new journal in %s): no space left on device: the filesystem of %s is full; nothing was changed: free space there or set LINERATE_STATE_DIR to another directory", dir, dir)
			}
			if err == nil || err.Error() != want || res != nil {
				t.Fatalf("Apply: %v, %+v\nwant %s", err, res, want)
			}
			sameTree(t, orig, testutil.TreeState(t, root))
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("left %s behind", entries[0].Name())
			}
			if len(restarts) != 0 {
				t.Errorf("restarted %v", restarts)
			}
		})
	}
}

// TestCreateJournalHeaderNoRoom: without a reservation (a filesystem
// without fallocate), a full disk fails the header's write; the journal
// never gets its name and no temporary file is left.
func TestCreateJournalHeaderNoRoom(t *testing.T) {
	for _, unnamed := range []bool{true, false} {
		t.Run(fmt.Sprintf("unnamed=%v", unnamed), func(t *testing.T) {
			if !unnamed {
				noTmpfile(t)
			}
			state, dir := tinyFS(t, 64<<10)
			fill(t, state, 0)
			_, _, err := createJournal(dir, &Plan{Root: "/"}, time.Now(), 0)
			if err == nil || err.Error() != "writing the tune journal (a new journal in "+dir+"): no space left on device: the filesystem of "+dir+" is full; nothing was changed: free space there or set LINERATE_STATE_DIR to another directory" {
				t.Errorf("createJournal: %v", err)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("left %s behind", entries[0].Name())
			}
		})
	}
}

// TestApplyReservation: the room set aside for a journal is held while
// the apply runs, and given back when it ends: the filesystem then holds
// the journal's own pages, not the reservation.
func TestApplyReservation(t *testing.T) {
	root, _, p := ryzenX4Tree(t)
	state, dir := tinyFS(t, 4<<20)
	before := freeBytes(t, state)
	var restarts []string
	held := func(step int, ph Phase) {
		if used := before - freeBytes(t, state); step == 1 && used < journalReserve(p) {
			t.Errorf("%d bytes in use at step 1, less than the %d reserved", used, journalReserve(p))
		}
	}
	res, err := Apply(p, treeTarget(t, root, &restarts), ApplyOptions{JournalDir: dir, AfterStep: held})
	if err != nil {
		t.Fatal(err)
	}
	size := fileSize(t, filepath.Join(dir, res.Journal+journalExt))
	if used, pages := before-freeBytes(t, state), (size+4095)/4096*4096; used != pages {
		t.Errorf("%d bytes in use after the apply, want the journal's %d (%d bytes); %d were reserved", used, pages, size, journalReserve(p))
	}
}

// TestRevertFullDisk: a revert on a full disk restores every value though
// it cannot journal them, says so (though its closing record fits), and
// leaves whole lines; once there is
// room, reverting again finds every value restored and says so in the
// journal.
func TestRevertFullDisk(t *testing.T) {
	a := &appliedTree{}
	a.root, a.orig, a.p = ryzenX4Tree(t)
	state, dir := tinyFS(t, 1<<20)
	a.dir = dir
	var restarts []string
	a.tg = treeTarget(t, a.root, &restarts)
	res, err := Apply(a.p, a.tg, ApplyOptions{JournalDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	full := fill(t, state, 0)
	// The journal's last page has room left, which a full disk does not
	// take: use all but 30 bytes of it with a record that changes nothing
	// (step 1 read back again), so that no step's record fits (39 bytes
	// at least) but the closing event (21) does.
	path := filepath.Join(dir, res.Journal+journalExt)
	slack := 4096 - fileSize(t, path)%4096
	rec := `{"step":1,"phase":"applied","now":"` + strings.Repeat("x", int(slack)-30-len(`{"step":1,"phase":"applied","now":""}`+"\n")) + `"}` + "\n"
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(rec); err != nil {
		t.Fatal(err)
	}
	f.Close()
	j, err := Load(dir, res.Journal)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := Revert(j, a.tg, RevertOptions{NetNS: a.p.NetNS})
	if err == nil || !errors.Is(err, unix.ENOSPC) || !strings.HasPrefix(err.Error(), "writing the tune journal ("+j.Path+"): ") {
		t.Errorf("Revert on a full disk: %v", err)
	}
	if rr.Count(PhaseReverted) != len(a.p.Changes) {
		t.Errorf("%d of %d restored", rr.Count(PhaseReverted), len(a.p.Changes))
	}
	sameTree(t, a.orig, testutil.TreeState(t, a.root))
	wholeLines(t, j.Path)
	if lines := journalLines(t, j.Path); lines[len(lines)-1] != `{"event":"reverted"}` {
		t.Errorf("the journal ends %q, want the closing event", lines[len(lines)-1])
	}
	os.Remove(full)
	if j, err = Load(dir, res.Journal); err != nil {
		t.Fatal(err)
	}
	rr, err = Revert(j, a.tg, RevertOptions{NetNS: a.p.NetNS})
	if err != nil {
		t.Errorf("second revert: %v", err)
	}
	for _, s := range rr.Steps {
		if s.Phase != PhaseReverted || s.Reason != "already at its prior value" {
			t.Errorf("second revert: %+v", s)
		}
	}
	if j, _ = Load(dir, res.Journal); j.State() != StateReverted {
		t.Errorf("journal %s", j.State())
	}
	wholeLines(t, j.Path)
}

// TestVethChannelsAndRings: the live Devices on a real veth (in a network
// namespace of the test's own): channel counts read as ethtool -l shows
// them, set (ethtool -L rx/tx), journaled, read back and reverted; rings,
// which veth does not have, refused cleanly (ErrNotSupported), with the
// channels set before them rolled back.
func TestVethChannelsAndRings(t *testing.T) {
	needRoot(t, "network namespaces")
	dir := journalDir(t)
	err := osthread.Throwaway(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("unshare: %w", err)
		}
		v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "lr-ch0", NumTxQueues: 4, NumRxQueues: 4}, PeerName: "lr-ch1"}
		if err := netlink.LinkAdd(v); err != nil {
			return fmt.Errorf("adding a veth: %w", err)
		}
		tg, err := NewTarget(hostfs.Live())
		if err != nil {
			return err
		}
		defer tg.Close()
		return checkVeth(t, tg, dir)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkVeth runs on the namespace's thread, where t.Fatal must not be
// called (it would end the thread's goroutine, not the test): fatal
// failures are returned.
func checkVeth(t *testing.T, tg *Target, dir string) error {
	const iface = "lr-ch0"
	dev := tg.Devices
	ch, err := dev.Channels(iface)
	if err != nil || ch != (Channels{RX: 4, TX: 4, MaxRX: 4, MaxTX: 4}) {
		return fmt.Errorf("channels of a new veth: %+v, %v", ch, err)
	}
	ch.RX, ch.TX = 2, 3
	if err := dev.SetChannels(iface, ch); err != nil {
		return fmt.Errorf("SetChannels: %v", err)
	}
	if got, _ := dev.Channels(iface); got != (Channels{RX: 2, TX: 3, MaxRX: 4, MaxTX: 4}) {
		t.Errorf("channels after SetChannels rx 2 tx 3: %+v", got)
	}
	ch.RX = 9
	if err := dev.SetChannels(iface, ch); err == nil || !strings.Contains(err.Error(), "setting the channels (ethtool -L) of lr-ch0: ") {
		t.Errorf("SetChannels rx 9 of 4: %v", err)
	}
	// The MTU, over rtnetlink: set, read back, put back; an MTU the driver
	// refuses says so.
	if mtu, err := dev.MTU(iface); err != nil || mtu != 1500 {
		t.Errorf("MTU of a new veth: %d, %v", mtu, err)
	}
	if err := dev.SetMTU(iface, 9000); err != nil {
		t.Errorf("SetMTU 9000: %v", err)
	}
	if mtu, _ := dev.MTU(iface); mtu != 9000 {
		t.Errorf("MTU after SetMTU 9000: %d", mtu)
	}
	if err := dev.SetMTU(iface, 1<<20); err == nil || !strings.Contains(err.Error(), "setting the MTU of lr-ch0 to 1048576: ") {
		t.Errorf("SetMTU 1048576: %v", err)
	}
	if err := dev.SetMTU(iface, 1500); err != nil {
		t.Errorf("SetMTU 1500: %v", err)
	}
	for _, err := range []error{func() error { _, err := dev.MTU("lr-none0"); return err }(), dev.SetMTU("lr-none0", 1500)} {
		if err == nil || !strings.Contains(err.Error(), "MTU of lr-none0") {
			t.Errorf("MTU of a missing link: %v", err)
		}
	}
	// Setting the counts a NIC has already sends nothing and succeeds.
	if err := dev.SetChannels(iface, Channels{RX: 2, TX: 3, MaxRX: 4, MaxTX: 4}); err != nil {
		t.Errorf("SetChannels to the current counts: %v", err)
	}
	if _, err := dev.Channels("lr-none0"); err == nil || !strings.Contains(err.Error(), "reading the channels (ethtool -l) of lr-none0: ") {
		t.Errorf("Channels of a missing link: %v", err)
	}
	if err := dev.SetChannels("lr-none0", Channels{RX: 1}); err == nil {
		t.Error("SetChannels of a missing link: no error")
	}
	if _, err := dev.Rings(iface); !errors.Is(err, ErrNotSupported) || err.Error() != "reading the ring sizes (ethtool -g) of lr-ch0: not supported by the driver" {
		t.Errorf("Rings: %v", err)
	}
	if err := dev.SetRings(iface, Rings{RX: 256, TX: 256}); !errors.Is(err, ErrNotSupported) || err.Error() != "setting the ring sizes (ethtool -G) of lr-ch0: not supported by the driver" {
		t.Errorf("SetRings: %v", err)
	}

	// Journaled: channels to rx 1 tx 1, then rings, which fail; the
	// channels go back to rx 2 tx 3.
	chStep := Change{Step: 1, Kind: KindChannels, Target: iface, Interface: iface, Before: "rx 2 tx 3", After: "rx 1 tx 1", LiveOnly: true}
	p := &Plan{Host: "veth", Root: "/", Profile: Throughput, Changes: []Change{chStep,
		{Step: 2, Kind: KindRings, Target: iface, Interface: iface, Before: "rx 0", After: "rx 256", LiveOnly: true}}}
	res, err := Apply(p, tg, ApplyOptions{JournalDir: dir, AfterStep: func(step int, ph Phase) {
		if step == 1 && ph == PhaseApplied {
			if got, _ := dev.Channels(iface); got.RX != 1 || got.TX != 1 {
				t.Errorf("channels after step 1: %+v", got)
			}
		}
	}})
	var se *StepError
	if !errors.As(err, &se) || se.Step != 2 || se.RolledBack != 1 || !errors.Is(err, ErrNotSupported) ||
		!strings.Contains(err.Error(), "step 2 of 2 (lr-ch0 rx 0 → rx 256) failed: reading the value before: reading the ring sizes (ethtool -g) of lr-ch0: not supported by the driver; rolled back 1 applied step(s)") {
		return fmt.Errorf("apply: %v", err)
	}
	if got, _ := dev.Channels(iface); got.RX != 2 || got.TX != 3 {
		t.Errorf("channels after the rollback: %+v, want rx 2 tx 3", got)
	}
	if res.Steps[0].Value != "rx 1 tx 1 other 0 combined 0" {
		t.Errorf("step 1 read back %q", res.Steps[0].Value)
	}

	// Alone, applied and reverted.
	p.Changes = p.Changes[:1]
	res, err = Apply(p, tg, ApplyOptions{JournalDir: dir})
	if err != nil {
		return err
	}
	if got, _ := dev.Channels(iface); got.RX != 1 || got.TX != 1 {
		t.Errorf("channels after apply: %+v", got)
	}
	j, err := Load(dir, res.Journal)
	if err != nil {
		return err
	}
	if j.Steps[0].Prior != "rx 2 tx 3 other 0 combined 0" || j.Steps[0].Want != "rx 1 tx 1 other 0 combined 0" {
		t.Errorf("journaled prior %q, value written %q", j.Steps[0].Prior, j.Steps[0].Want)
	}
	if _, err := Revert(j, tg, RevertOptions{}); err != nil {
		return err
	}
	if got, _ := dev.Channels(iface); got.RX != 2 || got.TX != 3 {
		t.Errorf("channels after revert: %+v, want rx 2 tx 3", got)
	}
	return nil
}
