package hostfs

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// ErrIsRoot reports an attempt to write the root directory itself.
var ErrIsRoot = errors.New("the root itself is not a file")

// WriteFile replaces the contents of an existing file below the root with
// data, in one write(2) as sysfs and procfs want it. It never creates a
// file: a missing one is an error (IsNotExist), so a typo cannot leave
// litter in /proc's neighbours or in a captured tree.
//
// Below a captured tree the file is opened with openat2(RESOLVE_IN_ROOT |
// RESOLVE_NO_MAGICLINKS), so no link in the tree can lead the write
// outside it; kernels without openat2 (before 5.6), and recording FSs, get
// the same jail from our own walk, which then opens every component with
// openat and O_NOFOLLOW. The final component is never a link, and the file
// must be a regular file of one link (ErrNotRegular, ErrLinked), opened
// without blocking: a FIFO, a device or a hard link to a file elsewhere in
// a tree someone else can write is refused. The live root writes to the
// path as given.
//
// Writes to a sysfs or procfs attribute fail with the kernel's error
// (EINVAL for a value it rejects, EIO for an IRQ whose affinity the kernel
// manages); the error wraps it, so errors.Is(err, unix.EIO) works.
func (fs *FS) WriteFile(rel string, data []byte) error {
	rel = clean(rel)
	if rel == "" {
		return fmt.Errorf("writing %s: %w", fs.Display(rel), ErrIsRoot)
	}
	// Below a captured tree the file is truncated only once it is known to
	// be a regular file of one link that this call opened itself
	// (openRegular): O_TRUNC at the open would already have cut a file
	// hard-linked from outside the tree.
	flags := unix.O_WRONLY
	if fs.IsLive() {
		flags |= unix.O_TRUNC
	}
	f, err := fs.openRegular(rel, flags)
	if err != nil {
		return fmt.Errorf("writing %s: %w", fs.Display(rel), unwrapPathError(err))
	}
	if !fs.IsLive() {
		if err := f.Truncate(0); err != nil {
			f.Close()
			return fmt.Errorf("writing %s: %w", fs.Display(rel), unwrapPathError(err))
		}
	}
	n, err := f.Write(data)
	if err == nil && n < len(data) {
		err = fmt.Errorf("short write: %d of %d bytes", n, len(data))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", fs.Display(rel), unwrapPathError(err))
	}
	return nil
}
