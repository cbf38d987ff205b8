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

// TestTempFallback: the /tmp/linerate-UID fallback is used only when it
// is the user's own private directory. Another user who made it first
// (here: a directory owned by uid 4242, a link, a mode open to others)
// gets a refusal naming it, not the user's state.
func TestTempFallback(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	fb := TempFallback()
	if filepath.Dir(fb) != tmp {
		t.Fatalf("fallback %s is not in TMPDIR %s", fb, tmp)
	}
	// Fresh: made private, accepted.
	if err := MkdirAll(filepath.Join(fb, "tune")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fb); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("fallback made as %v, %v", fi, err)
	}
	// Another user's directory, made beforehand.
	os.RemoveAll(fb)
	os.Mkdir(fb, 0o700)
	if os.Geteuid() == 0 {
		os.Chown(fb, 4242, 4242)
	} else {
		old := euid
		euid = func() int { return 4242 }
		t.Cleanup(func() { euid = old })
	}
	err := MkdirAll(filepath.Join(fb, "tune"))
	if err == nil || !strings.Contains(err.Error(), "someone else made it first") || !strings.Contains(err.Error(), fb) {
		t.Errorf("a fallback of uid 4242: %v", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("not one line: %q", err)
	}
	os.RemoveAll(fb)
	euid = os.Geteuid
	// Ours, but open to others.
	os.Mkdir(fb, 0o777)
	os.Chmod(fb, 0o777)
	if err := MkdirAll(fb); err == nil || !strings.Contains(err.Error(), "mode 0777") {
		t.Errorf("a fallback of mode 777: %v", err)
	}
	os.RemoveAll(fb)
	// A link to a directory elsewhere.
	elsewhere := t.TempDir()
	os.Symlink(elsewhere, fb)
	if err := MkdirAll(filepath.Join(fb, "x")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a fallback that is a link: %v", err)
	}
	// Outside the fallback, nothing is checked beyond creating it.
	if err := MkdirAll(filepath.Join(t.TempDir(), "a", "b")); err != nil {
		t.Errorf("an ordinary directory: %v", err)
	}
}
