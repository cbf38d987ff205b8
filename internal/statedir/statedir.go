// Package statedir says where linerate keeps state that must outlive one
// command: lab records, tune journals, the result database.
//
// Decision (docs/architecture.md, "State"): $LINERATE_STATE_DIR wins; otherwise root
// uses /var/lib/linerate (journals must survive a reboot to be reverted),
// and other users $XDG_STATE_HOME/linerate (~/.local/state/linerate).
//
// What is kept here decides what linerate does as root later (tune revert
// writes the values a journal names), so Private refuses state that
// someone other than the user, or root, could have written.
package statedir

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Dir returns the state directory, without creating it.
func Dir() string {
	if d := os.Getenv("LINERATE_STATE_DIR"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/var/lib/linerate"
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "linerate")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), fmt.Sprintf("linerate-%d", os.Geteuid()))
	}
	return filepath.Join(home, ".local", "state", "linerate")
}

// Sub returns Dir()/name, creating it (mode 0700) if needed.
func Sub(name string) (string, error) {
	d := filepath.Join(Dir(), name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", fmt.Errorf("creating state directory %s: %w (set LINERATE_STATE_DIR to a writable directory)", d, err)
	}
	return d, nil
}

// euid is the effective user ID Private checks owners against; tests set
// it to check what a user other than root is told.
var euid = os.Geteuid

// Private checks that a file or directory of linerate's state, described
// by fi (from Stat, or Stat of an open file), could only have been written
// by the user running linerate or by root: owned by one of them (by root
// when running as root) and not writable by group or others. A directory
// writable by others passes only with the sticky bit (like /tmp), where
// others cannot rename or remove what is ours. The error is one line that
// names the path and the fix.
func Private(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: cannot tell who owns it: refusing it", path)
	}
	me := euid()
	if st.Uid != 0 && int(st.Uid) != me {
		owner := "root"
		if me != 0 {
			owner = fmt.Sprintf("uid %d (you) or root", me)
		}
		return fmt.Errorf("%s is owned by uid %d, not %s: someone else may have written it; check it, then chown %d %s (or set LINERATE_STATE_DIR to a directory of your own)",
			path, st.Uid, owner, me, path)
	}
	perm := fi.Mode().Perm()
	switch {
	case perm&0o022 == 0:
		return nil
	case fi.IsDir() && fi.Mode()&fs.ModeSticky != 0:
		return nil // like /tmp: others cannot rename or remove what is ours
	}
	return fmt.Errorf("%s is writable by group or others (mode %04o): anyone could have changed it; check it, then chmod go-w %s (or set LINERATE_STATE_DIR to a directory only you can write)",
		path, perm, path)
}

// PrivateDir checks dir (Private) and the directory holding it, which
// could otherwise swap dir for another.
func PrivateDir(dir string) error {
	for _, p := range []string{dir, filepath.Dir(dir)} {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory (set LINERATE_STATE_DIR to a directory)", p)
		}
		if err := Private(p, fi); err != nil {
			return err
		}
	}
	return nil
}
