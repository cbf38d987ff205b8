// Package hostfs is the one place that reads /sys and /proc. Every read is
// relative to a root: the live "/" or a captured tree (a directory holding
// sys/ and proc/, such as an unpacked `linerate snapshot`). Paths given to
// it are root-relative and slash-separated ("sys/class/net/eth0/mtu").
//
// Reads are bounded (sysfs attributes are a few bytes; a larger value is an
// error, not an allocation) and, below a captured tree, never leave the
// tree: symbolic links resolve as if the tree were "/" (openat2 with
// RESOLVE_IN_ROOT, or an equivalent walk on kernels before 5.6).
//
// An FS can record what it reads (see Recorder), which is how `linerate
// snapshot` captures exactly the files doctor reads.
package hostfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/cpulist"
)

// MaxFileSize bounds ReadFile. sysfs attributes are at most a page; procfs
// files read whole through ReadFile are small. Large procfs files
// (/proc/interrupts on a big host) are streamed with Open.
const MaxFileSize = 1 << 20

// ErrTooLarge reports a file larger than the bound its reader allows.
var ErrTooLarge = errors.New("file larger than the allowed bound")

// MaxCPUListSize bounds a CPU list file (ReadCPUList). sysfs serves an
// attribute in one page; 64 KiB is sixteen of them, and more than the
// longest list 8192 CPUs can need ("0,2,4,…,8190" is 20 KB).
const MaxCPUListSize = 64 << 10

// MaxTreeRead bounds the bytes one FS reads from a captured tree over its
// life. A snapshot holds at most 256 MiB of files and doctor reads each
// about once; a tree whose links send every reader to one large file
// would otherwise cost work without end for a few kilobytes of archive.
const MaxTreeRead = 1 << 30

// ErrReadBudget reports a captured tree that made its FS read more than
// MaxTreeRead bytes.
var ErrReadBudget = fmt.Errorf("the captured tree made linerate read more than %d MiB, its budget for one tree (links sending many readers to the same large file?)", MaxTreeRead>>20)

// ErrParse reports a value that does not follow the kernel's format.
var ErrParse = errors.New("unexpected value")

// FS reads files below a root directory.
type FS struct {
	root string // absolute and clean; "/" for the live host
	rec  *Recorder

	once     sync.Once
	openat2  bool // kernel supports openat2 (checked once)
	rootFD   int
	rootErr  error
	closeMux sync.Mutex

	// Below a captured tree: the bytes read so far (MaxTreeRead), and the
	// CPU lists parsed, by file, so that however many links lead to one
	// list it is parsed once.
	spent  atomic.Int64
	limit  int64 // MaxTreeRead when 0; tests lower it
	listMu sync.Mutex
	lists  map[fileID]cpuListRead
}

// fileID names a file's content by device and inode, whatever path
// reached it, and by its size and modification time: tune --root writes
// the tree it reads (an IRQ's affinity, then its effective affinity read
// back), so a file written since it was parsed is parsed again.
type fileID struct {
	dev, ino, size uint64
	mtime          unix.Timespec
}

// cpuListRead is a CPU list file as ReadCPUList read it: the CPUs, or the
// error of reading or parsing it, without the path (each caller's path
// goes into its own error).
type cpuListRead struct {
	cpus []int
	err  error
}

// Live returns an FS over the running host's "/".
func Live() *FS { return &FS{root: "/"} }

// New returns an FS over the captured tree at root, which must be a
// directory holding sys/ or proc/.
func New(root string) (*FS, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("host root %s: %w", root, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("host root: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("host root %s is not a directory (give a captured tree or a .tar.gz snapshot)", root)
	}
	if abs == "/" {
		return Live(), nil
	}
	if !isDir(filepath.Join(abs, "sys")) && !isDir(filepath.Join(abs, "proc")) {
		return nil, fmt.Errorf("host root %s holds neither sys/ nor proc/: give the top of a captured tree", root)
	}
	return &FS{root: abs}, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// IsLive reports whether the FS reads the running host.
func (fs *FS) IsLive() bool { return fs.root == "/" }

// Root returns the absolute root directory.
func (fs *FS) Root() string { return fs.root }

// Path returns the on-disk path of a root-relative path, for libraries
// that take a mount point (prometheus/procfs). It does not resolve links.
func (fs *FS) Path(rel string) string { return filepath.Join(fs.root, clean(rel)) }

// Display returns the path as messages show it: the path on the host the
// tree describes ("/sys/class/net/eth0/mtu"), whatever the root. Messages
// about a snapshot are then the same on every machine that reads it.
func (fs *FS) Display(rel string) string { return "/" + clean(rel) }

// Close releases the root directory descriptor, if one was opened.
func (fs *FS) Close() error {
	fs.closeMux.Lock()
	defer fs.closeMux.Unlock()
	if fs.rootFD > 0 {
		err := unix.Close(fs.rootFD)
		fs.rootFD = -1
		return err
	}
	return nil
}

func clean(rel string) string {
	c := path.Clean("/" + filepath.ToSlash(rel))
	return strings.TrimPrefix(c, "/")
}

// ReadFile reads a whole file of at most MaxFileSize bytes.
func (fs *FS) ReadFile(rel string) ([]byte, error) {
	return fs.readFile(clean(rel), MaxFileSize)
}

func (fs *FS) readFile(rel string, limit int) ([]byte, error) {
	f, err := fs.open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := fs.readAll(f, limit)
	if err != nil {
		return nil, err
	}
	if fs.rec != nil {
		fs.rec.file(fs.canonical(rel), data)
	}
	return data, nil
}

// readAll reads f whole (readBounded), counting what it read against a
// captured tree's budget.
func (fs *FS) readAll(f *os.File, limit int) ([]byte, error) {
	if err := fs.budget(0); err != nil {
		return nil, fmt.Errorf("reading %s: %w", f.Name(), err)
	}
	data, err := readBounded(f, limit)
	n := len(data)
	if errors.Is(err, ErrTooLarge) {
		n = limit
	}
	if berr := fs.budget(n); berr != nil && err == nil {
		err = fmt.Errorf("reading %s: %w", f.Name(), berr)
	}
	if err != nil {
		return nil, err
	}
	return data, nil
}

// budget counts n bytes read against a captured tree's MaxTreeRead and
// fails once it is spent; the live host has no such budget.
func (fs *FS) budget(n int) error {
	if fs.IsLive() {
		return nil
	}
	limit := fs.limit
	if limit == 0 {
		limit = MaxTreeRead
	}
	if fs.spent.Add(int64(n)) > limit {
		return ErrReadBudget
	}
	return nil
}

// readBounded reads until EOF or until more than limit bytes arrived.
// It reads with read(2) directly: broken hwmon drivers answer EAGAIN, and
// that must end the read with an error rather than spin.
func readBounded(f *os.File, limit int) ([]byte, error) {
	buf := make([]byte, 0, 512)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf))
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > limit {
			return nil, fmt.Errorf("reading %s: %w (%d bytes)", f.Name(), ErrTooLarge, limit)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return buf, nil
		}
	}
}

// ReadString reads a file and trims surrounding white space.
func (fs *FS) ReadString(rel string) (string, error) {
	b, err := fs.ReadFile(rel)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// ReadInt reads a file holding one decimal (or 0x-prefixed hex) integer.
func (fs *FS) ReadInt(rel string) (int64, error) {
	s, err := fs.ReadString(rel)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("%w in %s: %q is not an integer", ErrParse, fs.Display(rel), short(s))
	}
	return v, nil
}

// ReadCPUList reads a file in the kernel's CPU list notation, of at most
// MaxCPUListSize bytes. Below a captured tree each file is read and parsed
// once, however many paths (links) lead to it: the same list behind ten
// thousand IRQs' affinity links costs one parse.
func (fs *FS) ReadCPUList(rel string) ([]int, error) {
	rel = clean(rel)
	if fs.IsLive() {
		b, err := fs.readFile(rel, MaxCPUListSize)
		if err != nil {
			return nil, err
		}
		return fs.parseCPUList(rel, parseList(b))
	}
	f, err := fs.open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, fmt.Errorf("reading %s: %w", fs.Display(rel), err)
	}
	id := fileID{dev: st.Dev, ino: st.Ino, size: uint64(st.Size), mtime: st.Mtim}
	fs.listMu.Lock()
	r, seen := fs.lists[id]
	fs.listMu.Unlock()
	if !seen {
		b, err := fs.readAll(f, MaxCPUListSize)
		if err != nil {
			r = cpuListRead{err: err}
		} else {
			r = parseList(b)
		}
		fs.listMu.Lock()
		if fs.lists == nil {
			fs.lists = map[fileID]cpuListRead{}
		}
		fs.lists[id] = r
		fs.listMu.Unlock()
		if err == nil && fs.rec != nil {
			fs.rec.file(fs.canonical(rel), b)
		}
	}
	if r.err != nil && !errors.Is(r.err, cpulist.ErrSyntax) {
		return nil, r.err
	}
	return fs.parseCPUList(rel, r)
}

// parseList parses a CPU list file's bytes.
func parseList(b []byte) cpuListRead {
	cpus, err := cpulist.Parse(strings.TrimSpace(string(b)))
	return cpuListRead{cpus: cpus, err: err}
}

// parseCPUList returns a parsed list to a caller: its own copy, or the
// parse error naming the caller's path.
func (fs *FS) parseCPUList(rel string, r cpuListRead) ([]int, error) {
	if r.err != nil {
		return nil, fmt.Errorf("%w in %s: %v", ErrParse, fs.Display(rel), r.err)
	}
	return slices.Clone(r.cpus), nil
}

func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// ReadDir lists the names in a directory, sorted.
func (fs *FS) ReadDir(rel string) ([]string, error) {
	rel = clean(rel)
	f, err := fs.openDir(rel)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", fs.Display(rel), err)
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", fs.Display(rel), err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	slices.Sort(names)
	if fs.rec != nil {
		fs.recordListing(fs.canonical(rel), entries)
	}
	return names, nil
}

// recordListing records a listed directory and the names in it, so that a
// replay lists the same names: subdirectories as directories, links with
// their targets, files as placeholders until (unless) they are read.
func (fs *FS) recordListing(dir string, entries []os.DirEntry) {
	fs.rec.dir(dir)
	for _, e := range entries {
		p := path.Join(dir, e.Name())
		switch {
		case e.Type()&os.ModeSymlink != 0:
			if t, err := os.Readlink(filepath.Join(fs.root, p)); err == nil {
				fs.rec.link(p, t)
			}
		case e.IsDir():
			fs.rec.dir(p)
		default:
			fs.rec.placeholder(p)
		}
	}
}

// Readlink returns the target of a symbolic link (the link itself is not
// followed; links on the way to it are).
func (fs *FS) Readlink(rel string) (string, error) {
	rel = clean(rel)
	dir, base := path.Split(rel)
	cdir, err := fs.resolve(strings.TrimSuffix(dir, "/"))
	if err != nil {
		return "", fmt.Errorf("reading link %s: %w", fs.Display(rel), unwrapPathError(err))
	}
	p := path.Join(cdir, base)
	t, err := os.Readlink(filepath.Join(fs.root, p))
	if err != nil {
		return "", fmt.Errorf("reading link %s: %w", fs.Display(rel), unwrapPathError(err))
	}
	if fs.rec != nil {
		fs.rec.link(p, t)
	}
	return t, nil
}

// Resolve returns the canonical root-relative path of rel, with every
// symbolic link followed inside the root ("sys/class/net/eth0" gives
// "sys/devices/pci0000:00/0000:00:03.0/virtio2/net/eth0").
func (fs *FS) Resolve(rel string) (string, error) {
	c, err := fs.resolve(clean(rel))
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", fs.Display(rel), unwrapPathError(err))
	}
	fs.recordTarget(c)
	return c, nil
}

// recordTarget makes a replay find what a resolution ended at, even when
// nothing below it is read: a directory as a directory, else a placeholder.
func (fs *FS) recordTarget(c string) {
	if fs.rec == nil {
		return
	}
	if fi, err := os.Stat(filepath.Join(fs.root, c)); err == nil && fi.IsDir() {
		fs.rec.dir(c)
	} else if err == nil {
		fs.rec.placeholder(c)
	}
}

// Exists reports whether rel names an existing file or directory.
func (fs *FS) Exists(rel string) bool {
	c, err := fs.resolve(clean(rel))
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(fs.root, c))
	if err == nil {
		fs.recordTarget(c)
	}
	return err == nil
}

// Open opens a file for streaming, for large procfs files. Reading more
// than limit bytes from it returns ErrTooLarge. A recording FS keeps a
// copy of what was read.
func (fs *FS) Open(rel string, limit int64) (io.ReadCloser, error) {
	rel = clean(rel)
	f, err := fs.open(rel)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", fs.Display(rel), err)
	}
	s := &stream{f: f, left: limit, name: fs.Display(rel)}
	if fs.rec != nil {
		s.rec, s.path = fs.rec, fs.canonical(rel)
	}
	return s, nil
}

type stream struct {
	f    *os.File
	left int64
	name string
	rec  *Recorder
	path string
	copy []byte
}

func (s *stream) Read(p []byte) (int, error) {
	if s.left <= 0 {
		// One more byte would exceed the bound: tell EOF from too large.
		var one [1]byte
		if n, _ := s.f.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("reading %s: %w", s.name, ErrTooLarge)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > s.left {
		p = p[:s.left]
	}
	n, err := s.f.Read(p)
	s.left -= int64(n)
	if s.rec != nil {
		s.copy = append(s.copy, p[:n]...)
	}
	if err != nil && err != io.EOF {
		err = fmt.Errorf("reading %s: %w", s.name, err)
	}
	return n, err
}

func (s *stream) Close() error {
	if s.rec != nil {
		s.rec.file(s.path, s.copy)
		s.rec = nil
	}
	return s.f.Close()
}

// canonical resolves rel for the recorder; when resolution fails the
// read already failed too, so rel itself is good enough.
func (fs *FS) canonical(rel string) string {
	c, err := fs.resolve(rel)
	if err != nil {
		return rel
	}
	return c
}

// Process is one running process found by FindProcesses.
type Process struct {
	PID  int
	Comm string
}

// FindProcesses lists processes whose comm (/proc/PID/comm) is one of
// names. A recording FS records only the matching processes, so a
// snapshot does not carry the names of everything running on the host.
func (fs *FS) FindProcesses(names ...string) ([]Process, error) {
	f, err := fs.openDir("proc")
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", fs.Display("proc"), err)
	}
	entries, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", fs.Display("proc"), err)
	}
	var out []Process
	for _, e := range entries {
		pid, err := strconv.Atoi(e)
		if err != nil {
			continue
		}
		rel := "proc/" + e + "/comm"
		cf, err := fs.open(rel)
		if err != nil {
			continue // the process exited, or is not ours to read
		}
		b, err := readBounded(cf, 64)
		cf.Close()
		if err != nil {
			continue
		}
		comm := strings.TrimSpace(string(b))
		if slices.Contains(names, comm) {
			out = append(out, Process{PID: pid, Comm: comm})
			if fs.rec != nil {
				fs.rec.file(rel, b)
			}
		}
	}
	slices.SortFunc(out, func(a, b Process) int { return a.PID - b.PID })
	return out, nil
}

// RecordDir, on a recording FS, records the regular files directly in
// dir. Inventory calls it after a library (prometheus/procfs) read that
// directory through its own file calls, which the FS does not see. Read
// errors are ignored here, as the library ignores them.
func (fs *FS) RecordDir(rel string) {
	if fs.rec == nil {
		return
	}
	rel = clean(rel)
	f, err := fs.openDir(rel)
	if err != nil {
		return
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return
	}
	dir := fs.canonical(rel)
	fs.recordListing(dir, entries)
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		p := path.Join(dir, e.Name())
		if cf, err := fs.open(p); err == nil {
			if b, err := readBounded(cf, MaxFileSize); err == nil {
				fs.rec.file(p, b)
			}
			cf.Close()
		}
	}
}
