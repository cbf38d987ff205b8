package hostfs

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxLinks bounds symbolic-link hops during resolution, as the kernel's
// MAXSYMLINKS does.
const maxLinks = 40

func (fs *FS) open(rel string) (*os.File, error) {
	return fs.openRegular(rel, unix.O_RDONLY)
}

// ErrNotRegular reports a file of a captured tree that is not a regular
// file (a FIFO, a socket, a device): reading one could block forever or
// reach a device of the machine reading the tree, writing one could do
// worse.
var ErrNotRegular = errors.New("not a regular file (a FIFO, socket or device in a captured tree)")

// ErrLinked reports a file of a captured tree with more than one hard
// link: a write to it would also change a file elsewhere, possibly outside
// the tree.
var ErrLinked = errors.New("a file with more than one hard link (a write would change another file too)")

// openRegular opens a file to read or write. Below a captured tree the
// open does not block (O_NONBLOCK: a FIFO with no writer would hold the
// open, and the read, forever) and what it opened must be a regular file;
// one opened for writing must also have one link only. The live root opens
// sysfs and procfs as they are: their attributes are regular files that
// the kernel serves, and the live host is not untrusted input.
func (fs *FS) openRegular(rel string, flags int) (*os.File, error) {
	if fs.IsLive() {
		return fs.openFlags(rel, flags)
	}
	write := flags&(unix.O_WRONLY|unix.O_RDWR) != 0
	if write {
		flags |= unix.O_NOFOLLOW
	}
	f, err := fs.openFlags(rel, flags|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "stat", Path: fs.Display(rel), Err: err}
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFDIR:
		f.Close()
		return nil, &os.PathError{Op: "open", Path: fs.Display(rel), Err: unix.EISDIR}
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		f.Close()
		return nil, &os.PathError{Op: "open", Path: fs.Display(rel), Err: ErrNotRegular}
	case write && st.Nlink != 1:
		f.Close()
		return nil, &os.PathError{Op: "open", Path: fs.Display(rel), Err: ErrLinked}
	}
	return f, nil
}

func (fs *FS) openDir(rel string) (*os.File, error) {
	return fs.openFlags(rel, unix.O_RDONLY|unix.O_DIRECTORY)
}

// openFlags opens rel below the root. The live root needs no jail; a
// captured tree is opened with openat2(RESOLVE_IN_ROOT) so that no link in
// it can lead outside, or by our own walk where the kernel lacks openat2.
// A recording FS always walks, because the walk is what records links.
func (fs *FS) openFlags(rel string, flags int) (*os.File, error) {
	flags |= unix.O_CLOEXEC | unix.O_NOCTTY
	if fs.IsLive() && fs.rec == nil {
		return openFile("/"+rel, "/"+rel, flags)
	}
	if fs.rec == nil && fs.useOpenat2() {
		how := &unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
		fd, err := unix.Openat2(fs.rootFD, rel, how)
		// EAGAIN: a rename anywhere on the system while a ".." (sysfs
		// links are full of them) was resolved; openat2(2) says retry.
		for try := 0; err == unix.EAGAIN && try < 100; try++ {
			fd, err = unix.Openat2(fs.rootFD, rel, how)
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: fs.Display(rel), Err: err}
		}
		return os.NewFile(uintptr(fd), fs.Display(rel)), nil
	}
	c, err := fs.resolve(rel)
	if flags&unix.O_NOFOLLOW != 0 && rel != "" {
		// The final component is not followed, as openat2 does with
		// O_NOFOLLOW: resolve its directory only.
		dir, base := path.Split(rel)
		c, err = fs.resolve(strings.TrimSuffix(dir, "/"))
		c = path.Join(c, base)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: fs.Display(rel), Err: unwrapPathError(err)}
	}
	if fs.IsLive() {
		return openFile(filepath.Join(fs.root, c), fs.Display(rel), flags|unix.O_NOFOLLOW)
	}
	return fs.openBeneath(c, fs.Display(rel), flags)
}

// openBeneath opens the canonical path c (no link on its way, as resolve
// returns it) one component at a time from the root, each with O_NOFOLLOW:
// a link swapped into the tree between resolve and the open is refused
// instead of followed, where opening the whole path by name would follow
// it out of the tree.
func (fs *FS) openBeneath(c, display string, flags int) (*os.File, error) {
	dir, err := unix.Open(fs.root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: display, Err: err}
	}
	parts := split(c)
	if len(parts) == 0 {
		defer unix.Close(dir)
		fd, err := unix.Openat(dir, ".", flags, 0)
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: display, Err: err}
		}
		return os.NewFile(uintptr(fd), display), nil
	}
	for _, p := range parts[:len(parts)-1] {
		next, err := unix.Openat(dir, p, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(dir)
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: display, Err: err}
		}
		dir = next
	}
	defer unix.Close(dir)
	fd, err := unix.Openat(dir, parts[len(parts)-1], flags|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: display, Err: err}
	}
	return os.NewFile(uintptr(fd), display), nil
}

// openFile opens p, naming the file display in errors and os.File.Name.
func openFile(p, display string, flags int) (*os.File, error) {
	fd, err := unix.Open(p, flags, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: display, Err: err}
	}
	return os.NewFile(uintptr(fd), display), nil
}

// unwrapPathError strips the on-disk path from a resolution error so that
// messages name only the host path.
func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (fs *FS) useOpenat2() bool {
	fs.once.Do(func() {
		fd, err := unix.Open(fs.root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			fs.rootErr = err
			return
		}
		fs.rootFD = fd
		// Probe openat2 on the root itself; ENOSYS means a kernel before 5.6.
		probe, err := unix.Openat2(fd, ".", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT})
		if err == nil {
			unix.Close(probe)
			fs.openat2 = true
		}
	})
	return fs.openat2
}

// resolve walks rel one component at a time below the root, following
// symbolic links as if the root were "/": ".." stops at the root and an
// absolute target starts again from it. It returns the canonical
// root-relative path. Links met on the way are recorded.
func (fs *FS) resolve(rel string) (string, error) {
	if fs.IsLive() && fs.rec == nil {
		p, err := filepath.EvalSymlinks("/" + rel)
		if err != nil {
			return "", err
		}
		return strings.TrimPrefix(p, "/"), nil
	}
	parts := split(rel)
	cur := ""
	hops := 0
	for len(parts) > 0 {
		p := parts[0]
		parts = parts[1:]
		switch p {
		case "", ".":
			continue
		case "..":
			cur = parent(cur)
			continue
		}
		next := path.Join(cur, p)
		full := filepath.Join(fs.root, next)
		fi, err := os.Lstat(full)
		if err != nil {
			return "", err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		hops++
		if hops > maxLinks {
			return "", &os.PathError{Op: "resolve", Path: fs.Display(rel), Err: syscall.ELOOP}
		}
		target, err := os.Readlink(full)
		if err != nil {
			return "", err
		}
		if fs.rec != nil {
			fs.rec.link(next, target)
		}
		if strings.HasPrefix(target, "/") {
			cur = ""
		}
		parts = append(split(target), parts...)
	}
	return cur, nil
}

func split(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func parent(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// IsNotExist reports whether err says a file is missing, through any
// wrapping.
func IsNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }

// IsPermission reports whether err says the caller may not read a file,
// which for sysfs and procfs usually means "run as root".
func IsPermission(err error) bool { return errors.Is(err, os.ErrPermission) }
