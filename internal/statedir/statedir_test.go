package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDir(t *testing.T) {
	t.Setenv("LINERATE_STATE_DIR", "/x/y")
	if Dir() != "/x/y" {
		t.Errorf("override ignored: %s", Dir())
	}
	t.Setenv("LINERATE_STATE_DIR", "")
	want := "/var/lib/linerate"
	if os.Geteuid() != 0 {
		t.Setenv("XDG_STATE_HOME", "/xdg")
		want = "/xdg/linerate"
	}
	if Dir() != want {
		t.Errorf("Dir() = %s, want %s", Dir(), want)
	}
}

func TestSub(t *testing.T) {
	base := t.TempDir()
	t.Setenv("LINERATE_STATE_DIR", base)
	d, err := Sub("lab")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(d)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 || d != filepath.Join(base, "lab") {
		t.Errorf("Sub = %s, %v, %v", d, fi, err)
	}
	t.Setenv("LINERATE_STATE_DIR", "/proc/forbidden")
	if _, err := Sub("lab"); err == nil {
		t.Error("an unwritable state directory was accepted")
	}
}

// TestPrivate: state that someone other than the user (or root) could
// have written is refused, with one line naming it and the fix; a sticky
// directory writable by all (like /tmp) passes.
func TestPrivate(t *testing.T) {
	dir := t.TempDir()
	me := os.Geteuid()
	for _, tc := range []struct {
		mode os.FileMode
		uid  int // as whom linerate runs
		want string
	}{
		{0o700, me, ""},
		{0o755, me, ""},
		{0o775, me, dir + " is writable by group or others (mode 0775): anyone could have changed it; check it, then chmod go-w " + dir + " (or set LINERATE_STATE_DIR to a directory only you can write)"},
		{0o702, me, dir + " is writable by group or others (mode 0702)"},
		{0o777 | os.ModeSticky, me, ""},
	} {
		if err := os.Chmod(dir, tc.mode); err != nil {
			t.Fatal(err)
		}
		euid = func() int { return tc.uid }
		fi, _ := os.Stat(dir)
		err := Private(dir, fi)
		euid = os.Geteuid
		if got := fmt.Sprint(err); (tc.want == "") != (err == nil) || !strings.HasPrefix(got, tc.want) {
			t.Errorf("mode %v as uid %d: %v\nwant %s", tc.mode, tc.uid, err, tc.want)
		}
	}
	os.Chmod(dir, 0o700)
	// Owners: as root, the directory is given to uid 1234.
	owner := me
	if me == 0 {
		owner = 1234
		if err := os.Chown(dir, owner, owner); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		uid  int
		want string
	}{
		{owner, ""},
		{owner + 1, fmt.Sprintf("%s is owned by uid %d, not uid %d (you) or root: someone else may have written it; check it, then chown %d %s (or set LINERATE_STATE_DIR to a directory of your own)", dir, owner, owner+1, owner+1, dir)},
	} {
		euid = func() int { return tc.uid }
		fi, _ := os.Stat(dir)
		err := Private(dir, fi)
		euid = os.Geteuid
		if fmt.Sprint(err) != tc.want && !(tc.want == "" && err == nil) {
			t.Errorf("owned by %d, as uid %d: %v\nwant %s", owner, tc.uid, err, tc.want)
		}
	}
	if me == 0 {
		fi, _ := os.Stat(dir)
		if err := Private(dir, fi); err == nil || err.Error() != fmt.Sprintf("%s is owned by uid 1234, not root: someone else may have written it; check it, then chown 0 %s (or set LINERATE_STATE_DIR to a directory of your own)", dir, dir) {
			t.Errorf("owned by 1234, as root: %v", err)
		}
		os.Chown(dir, 0, 0)
	}
	if err := PrivateDir(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing directory: %v", err)
	}
	f := filepath.Join(dir, "file")
	os.WriteFile(f, nil, 0o600)
	if err := PrivateDir(f); err == nil || err.Error() != f+" is not a directory (set LINERATE_STATE_DIR to a directory)" {
		t.Errorf("a file: %v", err)
	}
}
