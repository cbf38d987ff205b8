package tune

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/statedir"
)

// syncFile makes a file's (or a directory's) contents durable. Tests
// replace it to see what a crash at any instant would leave on disk.
var syncFile = func(f *os.File) error { return f.Sync() }

// openUnnamed opens an unnamed file in dir (O_TMPFILE). Tests replace it
// to take the fallback of filesystems without O_TMPFILE.
var openUnnamed = func(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir, "(unnamed)")), nil
}

// journalWriter appends records to one journal file, syncing those that
// must survive a crash.
type journalWriter struct {
	f    *os.File
	name string // for messages: the journal's path
}

// newJournal is a journal file being born: written and synced before it
// has its name.
type newJournal struct {
	f   *os.File
	tmp string // the hidden temporary file's path, when not unnamed
}

// createJournal creates journal ID for plan p in dir, born whole: the
// header is written and synced in an unnamed file (or, where the
// filesystem has no O_TMPFILE, a hidden temporary file) with reserve
// bytes of room set aside, then linked under its name — never over an
// existing journal: two journals of the same microsecond get "-2", "-3" —
// and the directory synced. It is locked (flock) until closed, so that a
// revert cannot run on it meanwhile. Any failure leaves no file behind.
func createJournal(dir string, p *Plan, now time.Time, reserve int64) (*journalWriter, string, error) {
	if err := statedir.PrivateDir(dir); err != nil {
		return nil, "", fmt.Errorf("tune journals: %w", err)
	}
	nj, err := openNew(dir)
	if err != nil {
		return nil, "", fmt.Errorf("creating the tune journal: %w (set LINERATE_STATE_DIR to a writable directory)", err)
	}
	w, id, err := nj.finish(dir, p, now, reserve)
	if err != nil {
		nj.discard()
		return nil, "", err
	}
	return w, id, nil
}

func openNew(dir string) (*newJournal, error) {
	f, err := openUnnamed(dir)
	if err == nil {
		return &newJournal{f: f}, nil
	}
	if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EINVAL) {
		return nil, err
	}
	sweepTemps(dir)
	tmp := filepath.Join(dir, fmt.Sprintf(".%d.%d%s.tmp", os.Getpid(), time.Now().UnixNano(), journalExt))
	f, err = os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	return &newJournal{f: f, tmp: tmp}, nil
}

// sweepTemps removes hidden temporary journals that a process killed while
// creating one left (only where the filesystem has no O_TMPFILE): older
// than a minute, when a header takes microseconds.
func sweepTemps(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), journalExt+".tmp") {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > time.Minute {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

func (nj *newJournal) finish(dir string, p *Plan, now time.Time, reserve int64) (*journalWriter, string, error) {
	if err := unix.Flock(int(nj.f.Fd()), unix.LOCK_EX); err != nil {
		return nil, "", fmt.Errorf("locking the tune journal: %w", err)
	}
	w := &journalWriter{f: nj.f, name: "a new journal in " + dir}
	base := now.UTC().Format("20060102T150405.000000Z")
	for n := 1; n <= 100; n++ {
		id := base
		if n > 1 {
			id = fmt.Sprintf("%s-%d", base, n)
		}
		hdr := record{Schema: JournalSchema, ID: id, Time: now.UTC().Format(time.RFC3339Nano), Host: p.Host, Root: p.Root,
			NetNS: p.NetNS, Profile: p.Profile, Planned: len(p.Changes), Interfaces: p.Interfaces}
		// The header names the ID: rewritten for each name tried.
		if err := nj.f.Truncate(0); err != nil {
			return nil, "", fmt.Errorf("writing the tune journal: %w", err)
		}
		if _, err := nj.f.Seek(0, 0); err != nil {
			return nil, "", fmt.Errorf("writing the tune journal: %w", err)
		}
		if err := w.append(hdr); err != nil {
			return nil, "", noRoom(err, dir)
		}
		// After the header: the truncate above would give the room back.
		if err := reserveSpace(nj.f, dir, reserve); err != nil {
			return nil, "", err
		}
		path := filepath.Join(dir, id+journalExt)
		err := nj.link(path)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("creating the tune journal %s: %w", path, err)
		}
		nj.f, w.name = nil, path // the journal is the writer's now
		if err := syncDir(dir); err != nil {
			w.close()
			os.Remove(path)
			return nil, "", err
		}
		return w, id, nil
	}
	return nil, "", fmt.Errorf("creating the tune journal: 100 journals already start at %s", base)
}

// link gives the new journal its name, failing with fs.ErrExist (as
// link(2) does) rather than replace a journal.
func (nj *newJournal) link(path string) error {
	if nj.tmp != "" {
		if err := os.Link(nj.tmp, path); err != nil {
			return err
		}
		os.Remove(nj.tmp)
		nj.tmp = ""
		return nil
	}
	// linkat of /proc/self/fd/N with AT_SYMLINK_FOLLOW names an unnamed
	// file without the CAP_DAC_READ_SEARCH that AT_EMPTY_PATH wants.
	err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(nj.f.Fd())), unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW)
	if errors.Is(err, unix.ENOENT) { // no /proc
		err = unix.Linkat(int(nj.f.Fd()), "", unix.AT_FDCWD, path, unix.AT_EMPTY_PATH)
	}
	if err != nil {
		return &fs.PathError{Op: "link", Path: path, Err: err}
	}
	return nil
}

// discard closes a journal that never got its name, and removes the
// temporary file if there is one: an unnamed file vanishes by itself.
func (nj *newJournal) discard() {
	if nj.f != nil {
		nj.f.Close()
	}
	if nj.tmp != "" {
		os.Remove(nj.tmp)
	}
}

// reserveSpace sets n bytes aside for the journal past its end
// (fallocate, keeping the size), so that a disk too full to hold the
// whole journal refuses the apply before its first change rather than
// in the middle. Filesystems without fallocate go without.
func reserveSpace(f *os.File, dir string, n int64) error {
	if n <= 0 {
		return nil
	}
	err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, n)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return nil
	}
	if err != nil {
		return noRoom(fmt.Errorf("reserving %d KiB for the tune journal: %w", (n+1023)>>10, err), dir)
	}
	return nil
}

// noRoom says what to do about a full disk: nothing has changed yet.
func noRoom(err error, dir string) error {
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
		return fmt.Errorf("%v: the filesystem of %s is full; nothing was changed: free space there or set LINERATE_STATE_DIR to another directory", err, dir)
	}
	return err
}

// journalReserve is the room Apply sets aside for the journal of p: each
// step's records (the change twice, a prior value and the value written,
// up to a page each as procfs and sysfs files are, and the records of a
// revert) and the events.
func journalReserve(p *Plan) int64 {
	n := int64(4096)
	for _, c := range p.Changes {
		b, _ := json.Marshal(c)
		n += 2*int64(len(b)) + 3*4096
	}
	return n
}

// openJournal opens an existing journal j to append to it, locked: a
// journal an apply still writes, or another revert holds, is an error. A
// last line cut short is cut off first, so that the next record starts a
// line of its own; being cut short, it never was a record.
func openJournal(j *Journal) (*journalWriter, error) {
	f, err := os.OpenFile(j.Path, os.O_RDWR|os.O_APPEND|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the tune journal: %w", err)
	}
	w := &journalWriter{f: f, name: j.Path}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); errors.Is(err, unix.EWOULDBLOCK) {
		f.Close()
		return nil, fmt.Errorf("journal %s is in use by a running linerate tune (apply or revert): wait for it to end, then run this again", j.ID)
	} else if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking the tune journal %s: %w", j.Path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("opening the tune journal: %w", err)
	}
	if fi.Size() != j.size {
		f.Close()
		return nil, fmt.Errorf("journal %s changed while it was read (%d bytes, then %d): run this again", j.ID, j.size, fi.Size())
	}
	if j.whole < j.size {
		err = f.Truncate(j.whole)
		j.size = j.whole
	} else if j.needNL {
		_, err = f.Write([]byte{'\n'})
		j.size++
		j.whole = j.size
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("repairing the end of the tune journal %s: %w", j.Path, err)
	}
	j.needNL = false
	return w, nil
}

// append writes one record. The header and each step's journaled record
// (its prior value) are synced to disk before append returns: they must
// survive a crash that happens after the change. Later records are not:
// a step whose "applied" or "reverted" record is lost still reads as
// journaled, and revert then compares the live value with both the prior
// and tune's value, which gives the same answer.
func (w *journalWriter) append(r record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding a journal record: %w", err)
	}
	fi, err := w.f.Stat()
	if err != nil {
		return fmt.Errorf("writing the tune journal (%s): %w", w.name, err)
	}
	if _, err := w.f.Write(append(b, '\n')); err != nil {
		// A write cut short (a full disk) would leave half a line for
		// the next record to run into: take it back.
		w.f.Truncate(fi.Size())
		return fmt.Errorf("writing the tune journal (%s): %w", w.name, bareErr(err))
	}
	if r.Schema == "" && r.Phase != PhaseJournaled {
		return nil
	}
	if err := syncFile(w.f); err != nil {
		return fmt.Errorf("syncing the tune journal (%s): %w", w.name, err)
	}
	return nil
}

// bareErr drops the file name from a write error: the message names the
// journal already.
func bareErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// close gives back the room reserved past the journal's end, and closes
// it (which drops its lock).
func (w *journalWriter) close() error {
	if fi, err := w.f.Stat(); err == nil {
		w.f.Truncate(fi.Size())
	}
	return w.f.Close()
}

// syncDir makes a new directory entry durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	defer d.Close()
	if err := syncFile(d); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}
