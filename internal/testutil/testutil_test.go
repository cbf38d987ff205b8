package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestCopyTree: a copy keeps files and links (as links), a change to the
// copy leaves the original alone, and TreeState tells the two apart.
func TestCopyTree(t *testing.T) {
	src := filepath.Join(t.TempDir(), "host")
	if err := os.MkdirAll(filepath.Join(src, "sys/class/net"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "sys/mtu"), []byte("9000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../mtu", filepath.Join(src, "sys/class/net/eth0")); err != nil {
		t.Fatal(err)
	}
	dst := CopyTree(t, src)
	if filepath.Base(dst) != "host" {
		t.Errorf("copy named %s, want host", filepath.Base(dst))
	}
	want := map[string]string{".": "dir", "sys": "dir", "sys/class": "dir", "sys/class/net": "dir",
		"sys/mtu": "file:9000\n", "sys/class/net/eth0": "link:../../mtu"}
	if got := TreeState(t, dst); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("copy = %v\nwant %v", got, want)
	}
	if err := os.WriteFile(filepath.Join(dst, "sys/mtu"), []byte("1500\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(TreeState(t, src)) != fmt.Sprint(want) {
		t.Error("changing the copy changed the original")
	}
	if TreeState(t, dst)["sys/mtu"] != "file:1500\n" {
		t.Error("TreeState does not see the change")
	}
}

// TestBuffer: concurrent writes all land, whole (run with -race).
func TestBuffer(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 100 {
				fmt.Fprintf(&b, "%d\n", i)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 800 {
		t.Errorf("%d lines, want 800", n)
	}
}
