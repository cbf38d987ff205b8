package hostfs

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within runs fn and fails the test if it has not returned after d: the
// attacks below used to block forever, so a hang is the failure to catch
// (the bound is a generous contract, not a measurement).
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s still blocked after %s", what, d)
	}
}

// TestFIFOInTree: a FIFO where a captured tree should hold a file is
// refused at once, for reading (whole, streamed, as a CPU list) and for
// writing, on both ways of opening; it used to block the open forever.
func TestFIFOInTree(t *testing.T) {
	root, _ := writeTree(t)
	fifo := filepath.Join(root, "proc/sys/kernel/hostname")
	os.MkdirAll(filepath.Dir(fifo), 0o755)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, fs := range writers(t, root) {
		t.Run(name, func(t *testing.T) {
			within(t, 10*time.Second, "reading a FIFO", func() {
				if _, err := fs.ReadString("proc/sys/kernel/hostname"); !errors.Is(err, ErrNotRegular) {
					t.Errorf("ReadString: %v, want ErrNotRegular", err)
				}
				if _, err := fs.Open("proc/sys/kernel/hostname", 1<<20); !errors.Is(err, ErrNotRegular) {
					t.Errorf("Open: %v, want ErrNotRegular", err)
				}
				if _, err := fs.ReadCPUList("proc/sys/kernel/hostname"); !errors.Is(err, ErrNotRegular) {
					t.Errorf("ReadCPUList: %v, want ErrNotRegular", err)
				}
			})
			within(t, 10*time.Second, "writing a FIFO", func() {
				if err := fs.WriteFile("proc/sys/kernel/hostname", []byte("x\n")); err == nil {
					t.Error("a write to a FIFO succeeded")
				}
			})
		})
	}
}

// TestWriteRefusesHardLink: tune --root on a tree someone else can write
// must not write through a hard link to a file outside the tree: the
// write is refused and the outside file keeps its bytes (O_TRUNC at the
// open would already have emptied it).
func TestWriteRefusesHardLink(t *testing.T) {
	root, outside := writeTree(t)
	target := filepath.Join(root, "proc/sys/net/core/wmem_max")
	if err := os.Link(filepath.Join(outside, "secret"), target); err != nil {
		t.Fatal(err)
	}
	for name, fs := range writers(t, root) {
		t.Run(name, func(t *testing.T) {
			err := fs.WriteFile("proc/sys/net/core/wmem_max", []byte("1\n"))
			if !errors.Is(err, ErrLinked) || !strings.Contains(err.Error(), "/proc/sys/net/core/wmem_max") {
				t.Errorf("write through a hard link: %v", err)
			}
			if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "keep\n" {
				t.Errorf("the file outside the tree now holds %q", b)
			}
			// A link as the final component is not written through
			// either, even one that stays in the tree.
			os.Symlink("rmem_max", filepath.Join(root, "proc/sys/net/core/alias"))
			if err := fs.WriteFile("proc/sys/net/core/alias", []byte("1\n")); err == nil {
				t.Error("a write through a final symbolic link succeeded")
			}
			os.Remove(filepath.Join(root, "proc/sys/net/core/alias"))
		})
	}
}

// TestOpenBeneathRefusesSwappedLink: the walk used before openat2 opens
// the resolved path component by component with O_NOFOLLOW, so a
// directory swapped for a link after resolution is refused, not followed
// out of the tree.
func TestOpenBeneathRefusesSwappedLink(t *testing.T) {
	root, outside := writeTree(t)
	fs, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	// "sys/escape" is a link out of the tree: as if resolve had seen a
	// directory there a moment before.
	for _, flags := range []int{syscall.O_RDONLY, syscall.O_WRONLY} {
		f, err := fs.openBeneath("sys/escape/secret", "/sys/escape/secret", flags)
		if err == nil {
			f.Close()
			t.Errorf("flags %#x: opened a file through a link out of the tree", flags)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "keep\n" {
		t.Errorf("outside file changed: %q", b)
	}
	// The same walk opens what is really there.
	f, err := fs.openBeneath("proc/sys/net/core/rmem_max", "/proc/sys/net/core/rmem_max", syscall.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// TestCPUListFanOut: two hundred IRQ affinity links to one large CPU list
// cost one read and one parse, and every reader still gets the list.
func TestCPUListFanOut(t *testing.T) {
	root := t.TempDir()
	big := strings.TrimSuffix(strings.Repeat("0-4095,", 4), ",") // 4× one host's CPUs: at the parse budget's edge
	os.MkdirAll(filepath.Join(root, "proc/irq"), 0o755)
	os.WriteFile(filepath.Join(root, "proc/big.list"), []byte(big+"\n"), 0o644)
	const links = 200
	for i := range links {
		d := filepath.Join(root, "proc/irq", strconv.Itoa(i))
		os.Mkdir(d, 0o755)
		os.Symlink("../../big.list", filepath.Join(d, "smp_affinity_list"))
	}
	fs, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	for i := range links {
		cpus, err := fs.ReadCPUList("proc/irq/" + strconv.Itoa(i) + "/smp_affinity_list")
		if err != nil || len(cpus) != 4096 {
			t.Fatalf("IRQ %d: %d CPUs, %v", i, len(cpus), err)
		}
		cpus[0] = -1 // each caller owns its copy
	}
	if n := len(fs.lists); n != 1 {
		t.Errorf("%d lists parsed, want the one file once", n)
	}
	if got := fs.spent.Load(); got != int64(len(big)+1) {
		t.Errorf("read %d bytes, want the list's %d once", got, len(big)+1)
	}
	// A list over MaxCPUListSize is refused, and so is a list whose
	// ranges expand past the parse budget, naming the file.
	os.WriteFile(filepath.Join(root, "proc/huge.list"), []byte(strings.Repeat("1,", MaxCPUListSize)), 0o644)
	if _, err := fs.ReadCPUList("proc/huge.list"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a list over %d bytes: %v", MaxCPUListSize, err)
	}
	os.WriteFile(filepath.Join(root, "proc/wide.list"), []byte(strings.Repeat("0-8191,", 5)+"0"), 0o644)
	if _, err := fs.ReadCPUList("proc/wide.list"); !errors.Is(err, ErrParse) || !strings.Contains(err.Error(), "/proc/wide.list") {
		t.Errorf("a list past the parse budget: %v", err)
	}
}

// TestTreeReadBudget: a captured tree cannot make one FS read without
// end: past its budget every read fails with ErrReadBudget, in one line.
func TestTreeReadBudget(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "proc"), 0o755)
	os.WriteFile(filepath.Join(root, "proc/file"), make([]byte, 1000), 0o644)
	fs, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	fs.limit = 10_500
	for i := range 10 {
		if _, err := fs.ReadFile("proc/file"); err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
	}
	_, err = fs.ReadFile("proc/file")
	if !errors.Is(err, ErrReadBudget) || strings.Contains(err.Error(), "\n") {
		t.Errorf("the 11th read: %v, want ErrReadBudget", err)
	}
	if _, err := fs.ReadFile("proc/file"); !errors.Is(err, ErrReadBudget) {
		t.Errorf("a read after the budget: %v", err)
	}
	// The live host has no such budget.
	if Live().budget(MaxTreeRead+1) != nil {
		t.Error("the live host has a read budget")
	}
}
