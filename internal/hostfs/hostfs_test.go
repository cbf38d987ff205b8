package hostfs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tree builds a small sysfs-like tree with the link shapes sysfs uses,
// plus links that try to leave the root.
func tree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	mk := func(p, data string) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ln := func(p, target string) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, full); err != nil {
			t.Fatal(err)
		}
	}
	dev := "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0"
	mk(dev+"/net/eth0/mtu", "9000\n")
	mk(dev+"/current_link_speed", "8.0 GT/s PCIe\n")
	mk(dev+"/numa_node", "garbage\n")
	mk(dev+"/big", strings.Repeat("x", MaxFileSize+1))
	mk("proc/interrupts", "           CPU0\n 99:  5  mlx5_comp0\n")
	mk("proc/100/comm", "irqbalance\n")
	mk("proc/101/comm", "sshd\n")
	mk("etc-outside/secret", "no\n")
	ln("sys/class/net/eth0", "../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/net/eth0")
	ln(dev+"/net/eth0/device", "../../../0000:01:00.0")
	ln("sys/class/net/escape", "../../../../../../../../etc-outside")
	ln("sys/class/net/absolute", "/etc-outside")
	ln("sys/class/net/loop", "loop")
	return root
}

func TestReadThroughLinks(t *testing.T) {
	fs, err := New(tree(t))
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	v, err := fs.ReadInt("sys/class/net/eth0/mtu")
	if err != nil || v != 9000 {
		t.Fatalf("mtu = %d, %v", v, err)
	}
	s, err := fs.ReadString("/sys/class/net/eth0/device/current_link_speed")
	if err != nil || s != "8.0 GT/s PCIe" {
		t.Fatalf("link speed = %q, %v", s, err)
	}
	c, err := fs.Resolve("sys/class/net/eth0/device")
	if err != nil || c != "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0" {
		t.Fatalf("Resolve = %q, %v", c, err)
	}
}

func TestLinksStayInRoot(t *testing.T) {
	root := tree(t)
	fs, _ := New(root)
	// "../.." beyond the root stops at the root, so the escape lands on
	// the tree's own etc-outside, not the host's.
	c, err := fs.Resolve("sys/class/net/escape/secret")
	if err != nil || c != "etc-outside/secret" {
		t.Fatalf("escape resolved to %q, %v", c, err)
	}
	c, err = fs.Resolve("sys/class/net/absolute/secret")
	if err != nil || c != "etc-outside/secret" {
		t.Fatalf("absolute link resolved to %q, %v", c, err)
	}
	if _, err := fs.ReadFile("sys/class/net/loop/x"); err == nil {
		t.Fatal("a link loop was read")
	}
	// The same through the walk used when recording (and before openat2).
	fs.Record()
	if b, err := fs.ReadFile("sys/class/net/absolute/secret"); err != nil || string(b) != "no\n" {
		t.Fatalf("walked read = %q, %v", b, err)
	}
}

func TestBadValues(t *testing.T) {
	fs, _ := New(tree(t))
	dev := "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0"
	if _, err := fs.ReadInt(dev + "/numa_node"); !errors.Is(err, ErrParse) {
		t.Errorf("garbage int: %v", err)
	}
	if _, err := fs.ReadFile(dev + "/big"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversized file: %v", err)
	}
	if _, err := fs.ReadFile(dev + "/missing"); !IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := fs.ReadFile(dev + "/missing"); err == nil || !strings.Contains(err.Error(), "0000:01:00.0/missing") {
		t.Errorf("error does not name the path: %v", err)
	}
}

func TestOpenBound(t *testing.T) {
	fs, _ := New(tree(t))
	r, err := fs.Open("proc/interrupts", 10)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := io.ReadAll(r); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("stream over bound: %v", err)
	}
	r2, _ := fs.Open("proc/interrupts", 1000)
	b, err := io.ReadAll(r2)
	r2.Close()
	if err != nil || !strings.Contains(string(b), "mlx5_comp0") {
		t.Fatalf("stream = %q, %v", b, err)
	}
}

func TestNewRejects(t *testing.T) {
	if _, err := New(t.TempDir()); err == nil {
		t.Error("an empty directory was accepted as a host root")
	}
	if _, err := New(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Error("a missing directory was accepted")
	}
}

func TestRecord(t *testing.T) {
	fs, _ := New(tree(t))
	rec := fs.Record()
	if _, err := fs.ReadString("sys/class/net/eth0/mtu"); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.ReadDir("sys/class/net"); err != nil {
		t.Fatal(err)
	}
	procs, err := fs.FindProcesses("irqbalance")
	if err != nil || len(procs) != 1 || procs[0].PID != 100 {
		t.Fatalf("FindProcesses = %v, %v", procs, err)
	}
	var files, links []string
	for _, e := range rec.Entries() {
		switch {
		case e.Link != "":
			links = append(links, e.Path)
		case !e.Dir:
			files = append(files, e.Path)
		}
	}
	for _, want := range []string{"sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/net/eth0/mtu", "proc/100/comm"} {
		if !slices.Contains(files, want) {
			t.Errorf("recorded files %v lack %s", files, want)
		}
	}
	if slices.Contains(files, "proc/101/comm") {
		t.Error("a process that did not match was recorded")
	}
	if !slices.Contains(links, "sys/class/net/eth0") {
		t.Errorf("recorded links %v lack sys/class/net/eth0", links)
	}
}

func TestLive(t *testing.T) {
	fs := Live()
	if _, err := fs.ReadString("proc/sys/kernel/osrelease"); err != nil {
		t.Fatal(err)
	}
	names, err := fs.ReadDir("sys/class/net")
	if err != nil || !slices.Contains(names, "lo") {
		t.Fatalf("ReadDir(sys/class/net) = %v, %v", names, err)
	}
}
