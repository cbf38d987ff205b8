package statedir

import (
	"os"
	"path/filepath"
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
