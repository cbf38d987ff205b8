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
	"strings"
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
		return TempFallback()
	}
	return filepath.Join(home, ".local", "state", "linerate")
}

// TempFallback is where state goes when the user has no home directory:
// /tmp/linerate-UID. Its name is predictable, so anyone may have made it
// first: MkdirAll checks it before anything goes in.
func TempFallback() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("linerate-%d", os.Geteuid()))
}

// Sub returns Dir()/name, creating it (mode 0700) if needed.
func Sub(name string) (string, error) {
	d := filepath.Join(Dir(), name)
	if err := MkdirAll(d); err != nil {
		return "", err
	}
	return d, nil
}

// MkdirAll creates dir and its parents (mode 0700) if needed. When dir is
// in TempFallback, that directory must be the user's own, a real
// directory (not a link) that no one else can enter: one another user made
// in /tmp beforehand would otherwise silently hold the user's state.
func MkdirAll(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating state directory %s: %w (set LINERATE_STATE_DIR to a writable directory)", dir, err)
	}
	fb := TempFallback()
	if rel, err := filepath.Rel(fb, dir); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil
	}
	return checkFallback(fb)
}

// checkFallback checks the /tmp fallback directory: a directory, not a
// symbolic link, owned by the user, with no permission for anyone else.
func checkFallback(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("checking state directory %s: %w", dir, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir():
		return fmt.Errorf("%s is not a directory but a %s: someone may have planted it; remove it, or set LINERATE_STATE_DIR to a directory of your own", dir, fi.Mode().Type())
	case !ok || int(st.Uid) != euid():
		return fmt.Errorf("%s belongs to uid %d, not you (uid %d): someone else made it first; remove it, or set LINERATE_STATE_DIR to a directory of your own", dir, ownerOf(st), euid())
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%s has mode %04o: others may enter it; run chmod 700 %s, or set LINERATE_STATE_DIR to a directory of your own", dir, fi.Mode().Perm(), dir)
	}
	return nil
}

func ownerOf(st *syscall.Stat_t) int {
	if st == nil {
		return -1
	}
	return int(st.Uid)
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
