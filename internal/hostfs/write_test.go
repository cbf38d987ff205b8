package hostfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTree builds a tree with files to write and links that try to lead
// a write outside it, next to a file outside the tree that must survive.
func writeTree(t *testing.T) (root, outside string) {
	t.Helper()
	top := t.TempDir()
	root = filepath.Join(top, "root")
	outside = filepath.Join(top, "outside")
	mk := func(p, data string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ln := func(p, target string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	mk(filepath.Join(outside, "secret"), "keep\n")
	mk(filepath.Join(root, "proc/sys/net/core/rmem_max"), "212992\n")
	mk(filepath.Join(root, "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"), "powersave\n")
	ln(filepath.Join(root, "sys/bus/cpu/devices/cpu0"), "../../../devices/system/cpu/cpu0")
	// Relative and absolute links aimed outside, as a directory and as the
	// final component.
	ln(filepath.Join(root, "sys/escape"), "../../../../../../../../"+strings.TrimPrefix(outside, "/"))
	ln(filepath.Join(root, "sys/absolute"), outside)
	ln(filepath.Join(root, "sys/secret-link"), filepath.Join(outside, "secret"))
	return root, outside
}

// writers returns the FS over root twice: once on the openat2 path, once
// on the walk that kernels before 5.6 use (a recording FS always walks).
func writers(t *testing.T, root string) map[string]*FS {
	t.Helper()
	a, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	b.Record()
	t.Cleanup(func() { a.Close(); b.Close() })
	return map[string]*FS{"openat2": a, "walk": b}
}

func TestWriteFile(t *testing.T) {
	root, outside := writeTree(t)
	for name, fs := range writers(t, root) {
		t.Run(name, func(t *testing.T) {
			if err := fs.WriteFile("proc/sys/net/core/rmem_max", []byte("33554432\n")); err != nil {
				t.Fatal(err)
			}
			if err := fs.WriteFile("proc/sys/net/core/rmem_max", []byte("7\n")); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(filepath.Join(root, "proc/sys/net/core/rmem_max")); string(b) != "7\n" {
				t.Errorf("rmem_max holds %q, want the shorter value alone", b)
			}
			// Through a link inside the tree.
			if err := fs.WriteFile("sys/bus/cpu/devices/cpu0/cpufreq/scaling_governor", []byte("performance\n")); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(filepath.Join(root, "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")); string(b) != "performance\n" {
				t.Errorf("governor holds %q", b)
			}
			for _, rel := range []string{"sys/escape/secret", "sys/absolute/secret", "sys/secret-link", "../outside/secret", "/../../outside/secret"} {
				err := fs.WriteFile(rel, []byte("pwned\n"))
				if err == nil {
					t.Errorf("%s: write succeeded", rel)
				}
				if !strings.Contains(err.Error(), "/") || strings.Contains(err.Error(), root) {
					t.Errorf("%s: error %q should name the host path, not the tree's", rel, err)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "keep\n" {
				t.Fatalf("a write left the root: outside file holds %q", b)
			}
		})
	}
}

func TestWriteFileNeverCreates(t *testing.T) {
	root, _ := writeTree(t)
	for name, fs := range writers(t, root) {
		t.Run(name, func(t *testing.T) {
			err := fs.WriteFile("proc/sys/net/core/wmem_max", []byte("1\n"))
			if !IsNotExist(err) {
				t.Errorf("missing file: err %v, want not-exist", err)
			}
			if _, err := os.Lstat(filepath.Join(root, "proc/sys/net/core/wmem_max")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("WriteFile created a file: %v", err)
			}
			if err := fs.WriteFile("proc/sys", []byte("1\n")); err == nil {
				t.Error("writing a directory succeeded")
			}
			if err := fs.WriteFile("/", []byte("1\n")); !errors.Is(err, ErrIsRoot) {
				t.Errorf("writing the root: %v", err)
			}
		})
	}
}

func TestWriteFileLive(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "value")
	if err := os.WriteFile(p, []byte("old value\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := Live()
	defer fs.Close()
	if err := fs.WriteFile(strings.TrimPrefix(p, "/"), []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new\n" {
		t.Errorf("live write left %q", b)
	}
	if err := fs.WriteFile(strings.TrimPrefix(p, "/")+"-missing", []byte("x")); !IsNotExist(err) {
		t.Errorf("live write of a missing file: %v", err)
	}
}
