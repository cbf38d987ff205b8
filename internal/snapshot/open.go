package snapshot

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/hostfs"
)

// Open extracts the snapshot at path into a fresh temporary directory and
// returns an FS over it, and a cleanup that closes the FS and removes the
// directory. The caller must call cleanup when done with the FS.
//
// Open writes nothing outside that directory. It refuses, with an error
// matching ErrUnsafe, an archive holding an absolute or unclean path, a
// ".." component, an entry below a symbolic link, a link whose target
// leaves the root or is absolute, a hard link, a device or FIFO, a
// duplicate path, or more than MaxEntries entries or files over the size
// bounds. A file that is not a snapshot (not gzip, truncated, missing or
// unreadable metadata) gives an error matching ErrNotSnapshot; a snapshot
// of another format version, an error saying so. On any error the
// temporary directory is already gone.
func Open(path string) (*hostfs.FS, func() error, error) {
	return open(path, defaultLimits())
}

func open(path string, l limits) (_ *hostfs.FS, _ func() error, err error) {
	a, err := openArchive(path, l)
	if err != nil {
		return nil, nil, err
	}
	defer a.close()

	dir, err := os.MkdirTemp("", "linerate-snapshot-*")
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	// Nothing half-extracted is left behind.
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	x, err := newExtractor(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	defer x.close()

	if err := a.extract(x); err != nil {
		return nil, nil, err
	}
	fs, err := hostfs.New(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	cleanup := func() error {
		cerr := fs.Close()
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("removing extracted snapshot: %w", err)
		}
		return cerr
	}
	return fs, cleanup, nil
}

// extract reads every entry, checks it and writes it below x. Links are
// created last, once every target is known to stay inside the root, so
// that no entry is ever written through one.
func (a *archive) extract(x *extractor) error {
	t := newTree(a.l.entries)
	var links []item
	var total int64
	sawMeta := false
	for n := 1; ; n++ {
		h, err := a.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if n > a.l.entries {
			return refuse(a.path, unsafe("archive has more than %d entries", a.l.entries))
		}
		name := h.Name
		var k kind
		switch h.Typeflag {
		case tar.TypeDir:
			k, name = kindDir, strings.TrimSuffix(name, "/")
		case tar.TypeReg:
			k = kindFile
		case tar.TypeSymlink:
			k = kindLink
		case tar.TypeLink:
			return refuse(a.path, unsafe("entry %s is a hard link", show(name)))
		case tar.TypeChar:
			return refuse(a.path, unsafe("entry %s is a character device", show(name)))
		case tar.TypeBlock:
			return refuse(a.path, unsafe("entry %s is a block device", show(name)))
		case tar.TypeFifo:
			return refuse(a.path, unsafe("entry %s is a FIFO", show(name)))
		default:
			return refuse(a.path, unsafe("entry %s has unsupported type %q", show(name), h.Typeflag))
		}
		if err := t.add(name, k, h.Linkname); err != nil {
			return refuse(a.path, err)
		}
		switch k {
		case kindDir:
			if _, err := x.dir(name); err != nil {
				return fmt.Errorf("snapshot %s: extracting %s: %w", a.path, show(name), err)
			}
		case kindLink:
			links = append(links, item{name: name, kind: k, target: h.Linkname})
		case kindFile:
			if h.Size < 0 || h.Size > a.l.file {
				return refuse(a.path, unsafe("entry %s is %d bytes, over the limit of %d bytes per file", show(name), h.Size, a.l.file))
			}
			if total += h.Size; total > a.l.total {
				return refuse(a.path, unsafe("files total more than %d bytes uncompressed", a.l.total))
			}
			if name == MetaPath {
				// Check the format before extracting the rest: Write puts
				// the metadata first.
				b, err := a.readMeta(h)
				if err != nil {
					return err
				}
				if _, err := parseMeta(a.path, b); err != nil {
					return err
				}
				sawMeta = true
				if err := x.writeFile(name, bytes.NewReader(b), int64(len(b))); err != nil {
					return fmt.Errorf("snapshot %s: extracting %s: %w", a.path, show(name), err)
				}
				continue
			}
			rr := &readErr{r: a.tr}
			if err := x.writeFile(name, rr, h.Size); err != nil {
				if rr.err != nil {
					return a.wrap(rr.err)
				}
				return fmt.Errorf("snapshot %s: extracting %s: %w", a.path, show(name), err)
			}
		}
	}
	if err := a.finish(); err != nil {
		return err
	}
	if !sawMeta {
		return notSnapshot(a.path, fmt.Errorf("no %s in it", MetaPath))
	}
	if !t.kinds["sys"].isDir() && !t.kinds["proc"].isDir() {
		return notSnapshot(a.path, errors.New("it holds neither sys/ nor proc/"))
	}
	for _, it := range links {
		if err := x.symlink(it.name, it.target); err != nil {
			return fmt.Errorf("snapshot %s: extracting %s: %w", a.path, show(it.name), err)
		}
	}
	return nil
}

// readErr remembers an error from the archive side of a copy, to tell a
// broken archive from a full disk.
type readErr struct {
	r   io.Reader
	err error
}

func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		r.err = err
	}
	return n, err
}

// archive is an open snapshot file being read entry by entry.
type archive struct {
	path   string
	l      limits
	f      *os.File
	stream *boundedReader
	tr     *tar.Reader
}

// openArchive opens path and reads the gzip header. The size bound is
// checked before any decompression.
func openArchive(path string, l limits) (*archive, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("snapshot %s is not a regular file: give a .tar.gz made by linerate snapshot", path)
	}
	if fi.Size() > l.archive {
		f.Close()
		return nil, refuse(path, unsafe("archive is %d bytes, over the limit of %d bytes compressed", fi.Size(), l.archive))
	}
	// Bound the read too: the file may grow after the Stat.
	zr, err := gzip.NewReader(bufio.NewReader(io.LimitReader(f, l.archive)))
	if err != nil {
		f.Close()
		return nil, notSnapshot(path, describe(err))
	}
	a := &archive{path: path, l: l, f: f, stream: &boundedReader{r: zr, left: l.stream()}}
	a.tr = tar.NewReader(a.stream)
	return a, nil
}

func (a *archive) close() { a.f.Close() }

// next returns the next header, or io.EOF at the end of the archive.
func (a *archive) next() (*tar.Header, error) {
	h, err := a.tr.Next()
	if errors.Is(err, tar.ErrInsecurePath) {
		// Only with GODEBUG=tarinsecurepath=0; the header is valid and
		// our own checks refuse the name with a clearer message.
		err = nil
	}
	if err == io.EOF {
		return nil, io.EOF
	}
	if err != nil {
		return nil, a.wrap(err)
	}
	return h, nil
}

// readMeta reads the metadata entry into memory.
func (a *archive) readMeta(h *tar.Header) ([]byte, error) {
	if h.Size > maxMetaSize {
		return nil, notSnapshot(a.path, fmt.Errorf("%s is %d bytes, over the limit of %d", MetaPath, h.Size, maxMetaSize))
	}
	b, err := io.ReadAll(a.tr)
	if err != nil {
		return nil, a.wrap(err)
	}
	return b, nil
}

// finish reads the rest of the gzip stream, which verifies its checksum
// and length: the tar end marker alone does not prove that the file is
// whole.
func (a *archive) finish() error {
	if _, err := io.Copy(io.Discard, a.stream); err != nil {
		return a.wrap(err)
	}
	return nil
}

// wrap names the cause of a read error.
func (a *archive) wrap(err error) error {
	if errors.Is(err, errStreamTooLarge) {
		return refuse(a.path, unsafe("archive unpacks to more than %d bytes", a.l.stream()))
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, gzip.ErrChecksum) {
		// A gzip stream that starts well and breaks off was most likely a
		// snapshot cut short in the copy: say that, not "not a snapshot".
		return fmt.Errorf("%s is truncated or damaged (%v): copy it again whole (as it stands it is %w)", a.path, describe(err), ErrNotSnapshot)
	}
	return notSnapshot(a.path, describe(err))
}

// describe turns a decoding error into words a user can act on.
func describe(err error) error {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("truncated: unexpected end of file")
	case errors.Is(err, gzip.ErrHeader):
		return errors.New("not gzip data")
	case errors.Is(err, gzip.ErrChecksum):
		return errors.New("corrupt: gzip checksum mismatch")
	}
	return err
}

// errStreamTooLarge is what boundedReader returns past its limit.
var errStreamTooLarge = errors.New("uncompressed archive over the size limit")

// boundedReader fails once more than its limit was read: a reader that
// stops silently would make a bomb look like a truncated file.
type boundedReader struct {
	r    io.Reader
	left int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One more byte decides between the end and too large.
		var one [1]byte
		n, err := io.ReadFull(b.r, one[:])
		if n > 0 {
			return 0, errStreamTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// extractor writes below a root directory it holds open. Every path
// component is opened relative to its parent with O_NOFOLLOW and every
// file created with O_EXCL, so that even a link planted in the tree by
// someone else is never followed, and nothing is overwritten.
type extractor struct {
	root int
	// The last directory opened: entries come sorted, so consecutive
	// files mostly share it.
	cached   string
	cachedFD int
}

func newExtractor(dir string) (*extractor, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return &extractor{root: fd, cachedFD: -1}, nil
}

func (x *extractor) close() {
	x.drop()
	unix.Close(x.root)
}

func (x *extractor) drop() {
	if x.cachedFD >= 0 {
		unix.Close(x.cachedFD)
	}
	x.cached, x.cachedFD = "", -1
}

// dir returns a descriptor of the directory rel ("" for the root),
// creating what is missing. The descriptor belongs to x.
func (x *extractor) dir(rel string) (int, error) {
	if rel == "" {
		return x.root, nil
	}
	if x.cachedFD >= 0 && rel == x.cached {
		return x.cachedFD, nil
	}
	start, rest := x.root, rel
	if x.cachedFD >= 0 && strings.HasPrefix(rel, x.cached+"/") {
		start, rest = x.cachedFD, rel[len(x.cached)+1:]
	}
	cur := start
	for c := range strings.SplitSeq(rest, "/") {
		next, err := openDirAt(cur, c)
		if cur != start {
			unix.Close(cur)
		}
		if err != nil {
			return -1, err
		}
		cur = next
	}
	x.drop()
	x.cached, x.cachedFD = rel, cur
	return cur, nil
}

// openDirAt opens (making it if missing) the directory name in dirfd,
// refusing a link in its place.
func openDirAt(dirfd int, name string) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(dirfd, name, flags, 0)
	if err == unix.ENOENT {
		if err := unix.Mkdirat(dirfd, name, 0o755); err != nil && err != unix.EEXIST {
			return -1, &os.PathError{Op: "mkdir", Path: name, Err: err}
		}
		fd, err = unix.Openat(dirfd, name, flags, 0)
	}
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return fd, nil
}

// writeFile creates name, which must not exist, with size bytes from r.
func (x *extractor) writeFile(name string, r io.Reader, size int64) error {
	parent, base := path.Split(name)
	pfd, err := x.dir(strings.TrimSuffix(parent, "/"))
	if err != nil {
		return err
	}
	fd, err := unix.Openat(pfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return &os.PathError{Op: "create", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	n, err := io.Copy(f, io.LimitReader(r, size))
	if err == nil && n < size {
		err = io.ErrUnexpectedEOF
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// symlink creates the link name pointing at target.
func (x *extractor) symlink(name, target string) error {
	parent, base := path.Split(name)
	pfd, err := x.dir(strings.TrimSuffix(parent, "/"))
	if err != nil {
		return err
	}
	if err := unix.Symlinkat(target, pfd, base); err != nil {
		return &os.PathError{Op: "symlink", Path: name, Err: err}
	}
	return nil
}
