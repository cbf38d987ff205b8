// Package snapshot writes and reads the archives made by `linerate
// snapshot`: a gzip'd tar of exactly the /sys and /proc files doctor read
// on one host (as a recording hostfs.FS saw them), plus a small metadata
// file, so that `linerate doctor --root FILE.tar.gz` gives the same answer
// on any other machine.
//
// A snapshot is data from elsewhere, so reading one is defensive: Open
// extracts into a fresh temporary directory and refuses, before anything
// reaches the disk, every entry that could write or point outside it
// (absolute paths, "..", writes through symbolic links, links leaving the
// root, hard links, devices, FIFOs) and every archive over the size bounds
// below. Write enforces the same rules, so that an archive linerate wrote
// is always one it will read.
package snapshot

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/linerate/linerate/internal/hostfs"
)

// FormatVersion is the archive format this package writes and reads. A
// change that an older reader would misread gets a new version.
const FormatVersion = 1

// MetaPath is where an archive holds its Meta, as JSON.
const MetaPath = "linerate/snapshot.json"

// Bounds on what Open extracts (and Write produces). They are far above
// what doctor reads on a real host, and low enough that a hostile or
// corrupt archive cannot fill the disk or memory.
const (
	// MaxEntries bounds the number of tar entries, directories included,
	// and the directories their names imply. A doctor run on a 512-CPU
	// host with 4,096 IRQs records some 50,000.
	MaxEntries = 200_000

	// MaxNameLen bounds an entry's name and a link's target, in bytes.
	// The longest paths doctor reads (a NIC behind a few PCIe switches)
	// are some 200 bytes; tar itself would take 1 MiB.
	MaxNameLen = 1024

	// MaxDepth bounds the components of an entry's name: each is a
	// directory to make. sysfs paths doctor reads are 12 deep or so.
	MaxDepth = 48

	// MaxFileSize bounds one file. The largest file doctor reads is
	// /proc/interrupts: about 25 MB on a 512-CPU host with 4,096 IRQs.
	MaxFileSize = 64 << 20

	// MaxTotalSize bounds the sum of all file sizes, uncompressed.
	MaxTotalSize = 256 << 20

	// MaxArchiveSize bounds the compressed archive file. sysfs and
	// procfs text compresses about tenfold.
	MaxArchiveSize = 64 << 20
)

// maxMetaSize bounds the metadata file, which Open and ReadMeta hold in
// memory to parse.
const maxMetaSize = 1 << 20

// ErrNotSnapshot reports a file that is not a linerate snapshot at all:
// not gzip, not tar, truncated, or without readable metadata.
var ErrNotSnapshot = errors.New("not a linerate snapshot")

// ErrUnsafe reports an archive entry that Open refuses to extract because
// it could write or point outside the extraction directory, is of a kind
// a snapshot never holds, or exceeds a size bound.
var ErrUnsafe = errors.New("unsafe snapshot entry")

// Meta describes a snapshot: where and when it was taken, and by what.
type Meta struct {
	Format   int       `json:"format"`           // FormatVersion; set by Write
	Created  time.Time `json:"created"`          // also every entry's mtime
	Hostname string    `json:"hostname"`         // the captured host
	Version  string    `json:"linerate_version"` // the linerate that wrote it
	Command  []string  `json:"command"`          // the command line that wrote it
	Kernel   string    `json:"kernel"`           // uname -r of the captured host
}

// limits are the bounds in force. Open and Write use the exported
// constants; tests lower them to reach the bounds cheaply.
type limits struct {
	entries int
	file    int64
	total   int64
	archive int64
}

func defaultLimits() limits {
	return limits{entries: MaxEntries, file: MaxFileSize, total: MaxTotalSize, archive: MaxArchiveSize}
}

// stream bounds the uncompressed tar stream: the file data plus a
// generous 4 KiB of headers (PAX records for long sysfs paths) per entry.
// Without it a small gzip of zeros would take minutes to read through.
func (l limits) stream() int64 { return l.total + int64(l.entries)*4096 + 1<<20 }

// Write writes entries (as a recording hostfs.FS returns them) and meta
// as a gzip'd tar. Directories are written with mode 0755, files with
// 0644 and their recorded bytes (nil Data gives an empty placeholder),
// links with their recorded target; missing parents are added as
// directories. The output depends only on its arguments: entries are
// sorted, every mtime is meta.Created and no owner names are written.
//
// Write refuses what Open would refuse (see ErrUnsafe), so an archive it
// writes always reads back.
func Write(w io.Writer, entries []hostfs.Entry, meta Meta) error {
	return write(w, entries, meta, defaultLimits())
}

// WriteFile writes a snapshot to path atomically: into a temporary file
// in the same directory, then renamed over path. The file has mode 0600,
// as it may hold details of the host that its owner did not mean to share.
func WriteFile(path string, entries []hostfs.Entry, meta Meta) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	// CreateTemp already uses 0600; say so explicitly, as it is the point.
	if err := f.Chmod(0o600); err != nil {
		return fail(err)
	}
	if err := Write(f, entries, meta); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	return nil
}

// item is one archive entry to write.
type item struct {
	name   string
	kind   kind
	data   []byte
	target string
}

func write(w io.Writer, entries []hostfs.Entry, meta Meta, l limits) error {
	meta.Format = FormatVersion
	mtime := meta.Created.Truncate(time.Second)
	if meta.Created.IsZero() {
		mtime = time.Unix(0, 0)
	}
	mj, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return fmt.Errorf("writing snapshot: metadata: %w", err)
	}
	mj = append(mj, '\n')

	// Validate with the rules Open applies. The metadata goes in first so
	// that a recorded entry cannot take its place.
	tr := newTree(l.entries)
	if err := tr.add(MetaPath, kindFile, ""); err != nil {
		return fmt.Errorf("writing snapshot: %w", err)
	}
	var items []item
	var total int64
	for _, e := range entries {
		if e.Path == "" || e.Path == "." {
			continue // the root itself, recorded when it was listed
		}
		it := item{name: e.Path, data: e.Data, target: e.Link}
		switch {
		case e.Link != "" && (e.Dir || e.Data != nil):
			return fmt.Errorf("writing snapshot: entry %s is both a link and a directory or file", show(e.Path))
		case e.Link != "":
			it.kind = kindLink
		case e.Dir && e.Data != nil:
			return fmt.Errorf("writing snapshot: entry %s is both a directory and a file", show(e.Path))
		case e.Dir:
			it.kind = kindDir
		default:
			it.kind = kindFile
			if int64(len(e.Data)) > l.file {
				return fmt.Errorf("writing snapshot: %s is %d bytes, over the limit of %d bytes per file", show(e.Path), len(e.Data), l.file)
			}
			total += int64(len(e.Data))
			if total > l.total {
				return fmt.Errorf("writing snapshot: files total more than %d bytes", l.total)
			}
		}
		if err := tr.add(it.name, it.kind, it.target); err != nil {
			return fmt.Errorf("writing snapshot: %w", err)
		}
		items = append(items, it)
	}
	for name, k := range tr.kinds {
		if k == kindImplicitDir && name != "linerate" {
			items = append(items, item{name: name, kind: kindDir})
		}
	}
	if len(tr.kinds) > l.entries {
		return fmt.Errorf("writing snapshot: %d entries, over the limit of %d", len(tr.kinds), l.entries)
	}
	// Plain string order puts every parent before its children ("a" sorts
	// before "a/…"), which is all a reader needs.
	slices.SortFunc(items, func(a, b item) int { return strings.Compare(a.name, b.name) })
	// The metadata goes first, so that ReadMeta finds it at once. A
	// recorded "linerate" directory would otherwise come twice.
	items = slices.DeleteFunc(items, func(it item) bool { return it.name == "linerate" })
	items = slices.Insert(items, 0,
		item{name: "linerate", kind: kindDir},
		item{name: MetaPath, kind: kindFile, data: mj})

	cw := &countingWriter{w: w, limit: l.archive}
	zw := gzip.NewWriter(cw)
	tw := tar.NewWriter(zw)
	for _, it := range items {
		h := &tar.Header{Name: it.name, ModTime: mtime}
		switch it.kind {
		case kindDir:
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, it.name+"/", 0o755
		case kindLink:
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, it.target, 0o777
		default:
			h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, int64(len(it.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("writing snapshot: %s: %w", show(it.name), err)
		}
		if len(it.data) > 0 {
			if _, err := tw.Write(it.data); err != nil {
				return fmt.Errorf("writing snapshot: %s: %w", show(it.name), err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("writing snapshot: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("writing snapshot: %w", err)
	}
	return nil
}

// errArchiveTooLarge is what countingWriter returns past its limit.
var errArchiveTooLarge = errors.New("compressed archive over the size limit")

// countingWriter fails once more than limit bytes went through it, so
// that Write never produces an archive larger than Open accepts.
type countingWriter struct {
	w     io.Writer
	n     int64
	limit int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.n+int64(len(p)) > c.limit {
		return 0, fmt.Errorf("%w (%d bytes)", errArchiveTooLarge, c.limit)
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ReadMeta returns a snapshot's metadata without extracting it.
func ReadMeta(path string) (Meta, error) {
	return readMeta(path, defaultLimits())
}

func readMeta(path string, l limits) (Meta, error) {
	a, err := openArchive(path, l)
	if err != nil {
		return Meta{}, err
	}
	defer a.close()
	for n := 1; ; n++ {
		h, err := a.next()
		if err == io.EOF {
			return Meta{}, notSnapshot(path, fmt.Errorf("no %s in it", MetaPath))
		}
		if err != nil {
			return Meta{}, err
		}
		if n > l.entries {
			return Meta{}, refuse(path, unsafe("archive has more than %d entries", l.entries))
		}
		if h.Name != MetaPath {
			continue
		}
		if h.Typeflag != tar.TypeReg {
			return Meta{}, notSnapshot(path, fmt.Errorf("%s is not a regular file", MetaPath))
		}
		b, err := a.readMeta(h)
		if err != nil {
			return Meta{}, err
		}
		return parseMeta(path, b)
	}
}

// parseMeta decodes and checks the metadata file.
func parseMeta(path string, b []byte) (Meta, error) {
	var m Meta
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&m); err != nil {
		return Meta{}, notSnapshot(path, fmt.Errorf("%s: %w", MetaPath, err))
	}
	if m.Format != FormatVersion {
		who := "which one, it does not say"
		if m.Version != "" {
			who = show(m.Version)
		}
		return Meta{}, fmt.Errorf("snapshot %s: format version %d is not supported (this linerate reads version %d): read it with the linerate that wrote it (%s)",
			path, m.Format, FormatVersion, who)
	}
	return m, nil
}

// notSnapshot is the error for a file that is not a linerate snapshot.
func notSnapshot(path string, cause error) error {
	return fmt.Errorf("%s is %w (%w)", path, ErrNotSnapshot, cause)
}

// refuse wraps a refusal (an unsafe entry, a bound) with the file name and
// the likely fix.
func refuse(path string, err error) error {
	return fmt.Errorf("snapshot %s: %w: refusing to extract (was this archive made by linerate snapshot?)", path, err)
}

// unsafeError is a refusal; it matches ErrUnsafe.
type unsafeError struct{ msg string }

func (e *unsafeError) Error() string        { return e.msg }
func (e *unsafeError) Is(target error) bool { return target == ErrUnsafe }

func unsafe(format string, args ...any) error {
	return &unsafeError{msg: fmt.Sprintf(format, args...)}
}

// show renders a name from an archive for a one-line message: quoted when
// it holds anything unprintable (a newline could forge a second line), and
// shortened when long.
func show(s string) string {
	const limit = 160
	if len(s) > limit {
		s = s[:limit] + "…"
	}
	if q := strconv.Quote(s); q[1:len(q)-1] != s {
		return q
	}
	return s
}
