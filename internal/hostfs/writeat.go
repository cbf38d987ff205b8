package hostfs

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// WriteAt writes data at offset off of an existing file below the root,
// in one pwrite(2), without truncating it: a register in a PCI function's
// sysfs "config" (setpci's way of writing config space). Like WriteFile it
// never creates a file and, below a captured tree, never leaves the tree.
func (fs *FS) WriteAt(rel string, off int64, data []byte) error {
	rel = clean(rel)
	if rel == "" {
		return fmt.Errorf("writing %s: %w", fs.Display(rel), ErrIsRoot)
	}
	if off < 0 {
		return fmt.Errorf("writing %s: negative offset %d", fs.Display(rel), off)
	}
	f, err := fs.openFlags(rel, unix.O_WRONLY)
	if err != nil {
		return fmt.Errorf("writing %s: %w", fs.Display(rel), unwrapPathError(err))
	}
	n, err := f.WriteAt(data, off)
	if err == nil && n < len(data) {
		err = fmt.Errorf("short write: %d of %d bytes", n, len(data))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s at offset %#x: %w", fs.Display(rel), off, unwrapPathError(err))
	}
	return nil
}
