package hosttree

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/hostfs"
)

// ryzenX4Interrupts are the mlx5 lines of `cat /proc/interrupts | grep
// mlx` on the 100 GbE home lab whose ConnectX-5 trained at x4, verbatim.
const ryzenX4Interrupts = `
  98:          0          0          0          0          0          0          0          0          0          0      23274          0  IR-PCI-MSIX-0000:01:00.0    0-edge      mlx5_async0@pci:0000:01:00.0
  99:        324          0          0          0          0          0          0       4360          0          0          0          0  IR-PCI-MSIX-0000:01:00.0    1-edge      mlx5_comp0@pci:0000:01:00.0
 101:          0          0          0          0          0          0          0          0          0          0          0       8563  IR-PCI-MSIX-0000:01:00.1    0-edge      mlx5_async0@pci:0000:01:00.1
 102:          0          0          0          0          0          0          0          0          0          0          0          0  IR-PCI-MSIX-0000:01:00.1    1-edge      mlx5_comp0@pci:0000:01:00.1
 109:          0          2          0          0          0          0          0          0     395218          0          0          0  IR-PCI-MSIX-0000:01:00.0    2-edge      mlx5_comp1@pci:0000:01:00.0
 110:          0          0          2          0          0          0          0          0          0     416057          0          0  IR-PCI-MSIX-0000:01:00.0    3-edge      mlx5_comp2@pci:0000:01:00.0
 111:          0          0          0          2          0          0          0          0          0          0          0          0  IR-PCI-MSIX-0000:01:00.0    4-edge      mlx5_comp3@pci:0000:01:00.0
 112:          0          0          0          0          2          0          0          0          0          0          0         12  IR-PCI-MSIX-0000:01:00.0    5-edge      mlx5_comp4@pci:0000:01:00.0
 113:          0          0          0          0          0          2          0         12          0          0          0          0  IR-PCI-MSIX-0000:01:00.0    6-edge      mlx5_comp5@pci:0000:01:00.0
 114:          0          0          0          0          0          0         10          0    1024467          0          0          0  IR-PCI-MSIX-0000:01:00.0    7-edge      mlx5_comp6@pci:0000:01:00.0
 115:          0          0          0          0          0          0          0          2          0     399417          0          0  IR-PCI-MSIX-0000:01:00.0    8-edge      mlx5_comp7@pci:0000:01:00.0
 116:          0          0          0          0          0          0          0          0          2          0     770067          0  IR-PCI-MSIX-0000:01:00.0    9-edge      mlx5_comp8@pci:0000:01:00.0
 117:          0          0          0          0          0          0          0          0          0          7          0     651437  IR-PCI-MSIX-0000:01:00.0   10-edge      mlx5_comp9@pci:0000:01:00.0
 118:          0          0          0          0          0          0          0     417457          0          0         22          0  IR-PCI-MSIX-0000:01:00.0   11-edge      mlx5_comp10@pci:0000:01:00.0
 119:          0          0          0          0          0          0          0          0     146064          0          0          2  IR-PCI-MSIX-0000:01:00.0   12-edge      mlx5_comp11@pci:0000:01:00.0
`

// snapshot reads a written tree: path → "F:"+content or "L:"+link target.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	snap := make(map[string]string)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			snap[rel] = "L:" + target
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			snap[rel] = "F:" + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	return snap
}

func diffSnapshots(t *testing.T, what string, want, got map[string]string) {
	t.Helper()
	n := 0
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok && !yield(k) {
				return
			}
		}
	}) {
		w, wok := want[p]
		g, gok := got[p]
		if wok && gok && w == g {
			continue
		}
		if n++; n > 10 {
			t.Errorf("%s: more differences left out", what)
			return
		}
		switch {
		case !gok:
			t.Errorf("%s: %s missing", what, p)
		case !wok:
			t.Errorf("%s: %s unexpected", what, p)
		default:
			t.Errorf("%s: %s differs:\nwant %q\n got %q", what, p, trim(w), trim(g))
		}
	}
}

func trim(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

func readFile(t *testing.T, root, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, p))
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return string(b)
}

func TestWriteCrow(t *testing.T) {
	root := t.TempDir()
	if err := Ryzen9900XCX5x4().Write(root); err != nil {
		t.Fatal(err)
	}
	const dev0 = "sys/class/net/enp1s0f0np0/device/"
	files := []struct{ path, want string }{
		{"proc/sys/kernel/hostname", "crow\n"},
		{"proc/sys/kernel/osrelease", "6.8.0-51-generic\n"},
		{"proc/sys/net/ipv4/tcp_rmem", "4096\t131072\t6291456\n"},
		{"proc/sys/net/ipv4/tcp_wmem", "4096\t16384\t4194304\n"},
		{"proc/sys/net/core/rmem_max", "212992\n"},
		{"proc/sys/net/core/default_qdisc", "fq_codel\n"},
		{"proc/812/comm", "irqbalance\n"},
		{"proc/irq/119/smp_affinity", "100\n"},
		{"proc/irq/119/smp_affinity_list", "8\n"},
		{"proc/irq/119/effective_affinity_list", "8\n"},
		{"proc/irq/119/node", "0\n"},
		{"proc/irq/98/smp_affinity_list", "10\n"},
		{"proc/irq/102/smp_affinity_list", "0\n"},
		{"proc/irq/0/smp_affinity_list", "0\n"},
		{"proc/irq/8/smp_affinity_list", "0-11\n"},
		{"proc/irq/8/smp_affinity", "fff\n"},
		{"sys/devices/system/cpu/online", "0-11\n"},
		{"sys/devices/system/cpu/cpu7/topology/core_id", "9\n"},
		{"sys/devices/system/cpu/cpu7/topology/core_cpus_list", "7\n"},
		{"sys/devices/system/cpu/cpu7/topology/die_id", "0\n"},
		{"sys/devices/system/cpu/cpu7/cache/index3/shared_cpu_list", "6-11\n"},
		{"sys/devices/system/cpu/cpu7/cache/index3/shared_cpu_map", "fc0\n"},
		{"sys/devices/system/cpu/cpu7/cache/index3/id", "1\n"},
		{"sys/devices/system/cpu/cpu2/cache/index3/shared_cpu_list", "0-5\n"},
		{"sys/devices/system/cpu/cpu0/cache/index0/type", "Data\n"},
		{"sys/devices/system/cpu/cpu0/cache/index1/type", "Instruction\n"},
		{"sys/devices/system/cpu/cpu0/cache/index2/size", "1024K\n"},
		{"sys/devices/system/cpu/cpu0/cache/index3/size", "32768K\n"},
		{"sys/devices/system/cpu/cpu0/cache/index3/level", "3\n"},
		{"sys/devices/system/cpu/cpu5/cpufreq/scaling_governor", "powersave\n"},
		{"sys/devices/system/cpu/cpu5/cpufreq/scaling_driver", "amd-pstate-epp\n"},
		{"sys/devices/system/node/online", "0\n"},
		{"sys/devices/system/node/node0/cpulist", "0-11\n"},
		{"sys/class/net/enp1s0f0np0/mtu", "9000\n"},
		{"sys/class/net/enp1s0f0np0/speed", "100000\n"},
		{"sys/class/net/enp1s0f0np0/operstate", "up\n"},
		{"sys/class/net/enp1s0f0np0/flags", "0x1003\n"},
		{"sys/class/net/enp1s0f0np0/ifindex", "4\n"},
		{"sys/class/net/enp1s0f0np0/address", "b8:3f:d2:ba:a6:a6\n"},
		{"sys/class/net/enp1s0f0np0/queues/rx-11/rps_cpus", "000\n"},
		{"sys/class/net/enp1s0f0np0/queues/tx-11/xps_cpus", "000\n"},
		{"sys/class/net/enp1s0f1np1/speed", "-1\n"},
		{"sys/class/net/enp1s0f1np1/duplex", "unknown\n"},
		{"sys/class/net/enp1s0f1np1/operstate", "down\n"},
		{"sys/class/net/enp1s0f1np1/carrier", "0\n"},
		{"sys/class/net/lo/operstate", "unknown\n"},
		{"sys/class/net/lo/type", "772\n"},
		{dev0 + "vendor", "0x15b3\n"},
		{dev0 + "device", "0x1017\n"},
		{dev0 + "class", "0x020000\n"},
		{dev0 + "numa_node", "0\n"},
		{dev0 + "local_cpulist", "0-11\n"},
		{dev0 + "max_link_speed", "8.0 GT/s PCIe\n"},
		{dev0 + "max_link_width", "16\n"},
		{dev0 + "current_link_speed", "8.0 GT/s PCIe\n"},
		{dev0 + "current_link_width", "4\n"},
		{dev0 + "msi_irqs/98", "msix\n"},
		{dev0 + "msi_irqs/119", "msix\n"},
		{"sys/bus/pci/devices/0000:01:00.1/msi_irqs/102", "msix\n"},
		{"sys/bus/pci/devices/0000:00:01.1/max_link_speed", "32.0 GT/s PCIe\n"},
		{"sys/bus/pci/devices/0000:00:01.1/max_link_width", "16\n"},
		{"sys/bus/pci/devices/0000:00:01.1/current_link_width", "4\n"},
		{"sys/bus/pci/devices/0000:00:01.1/class", "0x060400\n"},
		{"sys/class/hwmon/hwmon3/name", "mlx5\n"},
		{"sys/class/hwmon/hwmon3/temp1_input", "74000\n"},
		{"sys/class/hwmon/hwmon3/temp1_crit", "105000\n"},
		{"sys/class/hwmon/hwmon3/temp1_highest", "74000\n"},
		{"sys/class/hwmon/hwmon3/temp1_label", "sensor0\n"},
		{"sys/class/infiniband/rocep1s0f0/ports/1/state", "4: ACTIVE\n"},
		{"sys/class/infiniband/rocep1s0f0/ports/1/rate", "100 Gb/sec (4X EDR)\n"},
		{"sys/class/infiniband/rocep1s0f0/ports/1/gid_attrs/ndevs/0", "enp1s0f0np0\n"},
		{"sys/class/infiniband/rocep1s0f0/node_guid", "b83f:d203:00ba:a6a6\n"},
		{"sys/class/infiniband/rocep1s0f1/ports/1/state", "1: DOWN\n"},
		{"sys/class/infiniband/rocep1s0f1/ports/1/phys_state", "3: Disabled\n"},
		{"sys/class/infiniband/rocep1s0f1/ports/1/link_layer", "Ethernet\n"},
	}
	for _, f := range files {
		if got := readFile(t, root, f.path); got != f.want {
			t.Errorf("%s = %q, want %q", f.path, got, f.want)
		}
	}
	links := []struct{ path, want string }{
		{"sys/class/net/enp1s0f0np0", "../../devices/pci0000:00/0000:00:01.1/0000:01:00.0/net/enp1s0f0np0"},
		{"sys/class/net/lo", "../../devices/virtual/net/lo"},
		{"sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/net/enp1s0f0np0/device", "../../../0000:01:00.0"},
		{"sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/driver", "../../../../bus/pci/drivers/mlx5_core"},
		{"sys/devices/pci0000:00/0000:00:01.1/driver", "../../../bus/pci/drivers/pcieport"},
		{"sys/bus/pci/devices/0000:01:00.0", "../../../devices/pci0000:00/0000:00:01.1/0000:01:00.0"},
		{"sys/bus/pci/devices/0000:00:01.1", "../../../devices/pci0000:00/0000:00:01.1"},
		{"sys/class/hwmon/hwmon3", "../../devices/pci0000:00/0000:00:01.1/0000:01:00.0/hwmon/hwmon3"},
		{"sys/class/infiniband/rocep1s0f0", "../../devices/pci0000:00/0000:00:01.1/0000:01:00.0/infiniband/rocep1s0f0"},
		{"sys/devices/system/cpu/cpu0/cpufreq", "../cpufreq/policy0"},
	}
	for _, l := range links {
		got, err := os.Readlink(filepath.Join(root, l.path))
		if err != nil || got != l.want {
			t.Errorf("link %s = %q (%v), want %q", l.path, got, err, l.want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "sys/bus/pci/drivers/mlx5_core")); err != nil {
		t.Errorf("driver directory: %v", err)
	}
	interrupts := readFile(t, root, "proc/interrupts")
	for line := range strings.SplitSeq(strings.Trim(ryzenX4Interrupts, "\n"), "\n") {
		if !strings.Contains(interrupts, "\n"+line+"\n") {
			t.Errorf("proc/interrupts lacks the owner's line\n%s", line)
		}
	}
	header := strings.SplitN(interrupts, "\n", 2)[0]
	if want := strings.Repeat(" ", 12) + "CPU0       CPU1"; !strings.HasPrefix(header, want) {
		t.Errorf("header %q does not start with %q", header, want)
	}
	for _, l := range []string{" ERR:          0\n", " MIS:          0\n", "  Local timer interrupts\n"} {
		if !strings.Contains(interrupts, l) {
			t.Errorf("proc/interrupts lacks %q", l)
		}
	}
	if !strings.Contains(readFile(t, root, "proc/cpuinfo"), "processor\t: 11\nvendor_id\t: AuthenticAMD\n") {
		t.Error("proc/cpuinfo lacks CPU 11")
	}
}

// TestTrees writes every committed tree twice and checks that the two
// writes are identical, that they match testdata/hosts, that every link
// resolves inside the tree, that no directory is empty (git would drop
// it), that config space agrees with the sysfs link attributes, and that
// every /proc/interrupts line has one count per CPU.
func TestTrees(t *testing.T) {
	committed := filepath.Join("..", "..", "testdata", "hosts")
	for _, tr := range Trees() {
		t.Run(tr.Name, func(t *testing.T) {
			a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
			for _, dir := range []string{a, b} {
				if err := tr.Host.Write(dir); err != nil {
					t.Fatal(err)
				}
			}
			snapA := snapshot(t, a)
			diffSnapshots(t, "second write", snapA, snapshot(t, b))
			if _, err := os.Stat(filepath.Join(committed, tr.Name)); err == nil {
				want := snapshot(t, filepath.Join(committed, tr.Name))
				if doc, ok := want["HOST.md"]; !ok || doc != "F:"+tr.Doc {
					t.Errorf("testdata/hosts/%s/HOST.md is out of date: run gentrees", tr.Name)
				}
				delete(want, "HOST.md")
				diffSnapshots(t, "testdata/hosts/"+tr.Name+" (run gentrees)", want, snapA)
			} else {
				t.Logf("testdata/hosts/%s not found; not compared", tr.Name)
			}
			checkLinks(t, a)
			checkNoEmptyDirs(t, a)
			for _, nic := range tr.Host.NICs {
				checkConfig(t, a, nic.PCI.BDF)
				checkConfig(t, a, nic.Bridge.BDF)
			}
			checkInterrupts(t, readFile(t, a, "proc/interrupts"), len(tr.Host.CPUs))
		})
	}
}

func TestTreesReadme(t *testing.T) {
	p := filepath.Join("..", "..", "testdata", "hosts", "README.md")
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: testdata/hosts not generated")
		}
		t.Skip("testdata/hosts not generated")
	}
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != treesReadme {
		t.Error("testdata/hosts/README.md is out of date: run gentrees")
	}
}

// checkLinks resolves every symbolic link as if root were "/" and fails
// on links that dangle or leave the tree.
func checkLinks(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return err
		}
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		resolved := filepath.Join(filepath.Dir(p), target)
		if rel, err := filepath.Rel(root, resolved); err != nil || strings.HasPrefix(rel, "..") {
			t.Errorf("link %s -> %s leaves the tree", p, target)
			return nil
		}
		if _, err := os.Stat(resolved); err != nil {
			t.Errorf("link %s -> %s dangles: %v", p, target, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func checkNoEmptyDirs(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return err
		}
		if len(entries) == 0 {
			t.Errorf("empty directory %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkConfig walks the capability list of a function's config space to
// the PCI Express capability and compares LnkCap and LnkSta with the
// sysfs link attributes.
func checkConfig(t *testing.T, root, bdf string) {
	t.Helper()
	dir := filepath.Join(root, "sys/bus/pci/devices", bdf)
	cfg, err := os.ReadFile(filepath.Join(dir, "config"))
	if err != nil {
		t.Fatalf("%s: %v", bdf, err)
	}
	if len(cfg) != 4096 {
		t.Fatalf("%s: config is %d bytes", bdf, len(cfg))
	}
	le16 := func(off int) uint16 { return binary.LittleEndian.Uint16(cfg[off:]) }
	vendor, _ := strconv.ParseUint(strings.TrimSpace(readFile(t, dir, "vendor")), 0, 16)
	if uint64(le16(0)) != vendor {
		t.Errorf("%s: config vendor %#x, sysfs %#x", bdf, le16(0), vendor)
	}
	if le16(6)&0x10 == 0 {
		t.Errorf("%s: capability list bit not set", bdf)
	}
	class := strings.TrimSpace(readFile(t, dir, "class"))
	wantHeader := byte(0)
	if class == "0x060400" {
		wantHeader = 1
	}
	if cfg[0x0e]&0x7f != wantHeader {
		t.Errorf("%s: header type %#x for class %s", bdf, cfg[0x0e], class)
	}
	off, seen := int(cfg[0x34]), 0
	for off != 0 && cfg[off] != 0x10 && seen < 48 {
		off, seen = int(cfg[off+1]), seen+1
	}
	if off == 0 || cfg[off] != 0x10 {
		t.Fatalf("%s: no PCI Express capability", bdf)
	}
	speeds := map[uint16]string{1: "2.5", 2: "5", 3: "8", 4: "16", 5: "32", 6: "64"}
	gts := func(attr string) string {
		f, err := strconv.ParseFloat(strings.Fields(readFile(t, dir, attr))[0], 64)
		if err != nil {
			t.Fatalf("%s: %s: %v", bdf, attr, err)
		}
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	width := func(attr string) uint16 {
		n, _ := strconv.Atoi(strings.TrimSpace(readFile(t, dir, attr)))
		return uint16(n)
	}
	lnkCap, lnkSta := le16(off+0x0c), le16(off+0x12)
	if got, want := speeds[lnkCap&0xf], gts("max_link_speed"); got != want {
		t.Errorf("%s: LnkCap speed %s GT/s, max_link_speed %s", bdf, got, want)
	}
	if got, want := lnkCap>>4&0x3f, width("max_link_width"); got != want {
		t.Errorf("%s: LnkCap width x%d, max_link_width %d", bdf, got, want)
	}
	if got, want := speeds[lnkSta&0xf], gts("current_link_speed"); got != want {
		t.Errorf("%s: LnkSta speed %s GT/s, current_link_speed %s", bdf, got, want)
	}
	if got, want := lnkSta>>4&0x3f, width("current_link_width"); got != want {
		t.Errorf("%s: LnkSta width x%d, current_link_width %d", bdf, got, want)
	}
	devCtl := le16(off + 0x08)
	if mps, mrrs := 128<<(devCtl>>5&7), 128<<(devCtl>>12&7); mps < 128 || mrrs < mps {
		t.Errorf("%s: DevCtl MPS %d MRRS %d", bdf, mps, mrrs)
	}
}

// checkInterrupts parses /proc/interrupts loosely, as a reader would: the
// header has one column per CPU, every numbered line has that many counts
// followed by at least a chip and a name, ERR and MIS have one number.
func checkInterrupts(t *testing.T, text string, ncpu int) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	if !sc.Scan() || len(strings.Fields(sc.Text())) != ncpu {
		t.Fatalf("header has %d columns, want %d", len(strings.Fields(sc.Text())), ncpu)
	}
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || !strings.HasSuffix(f[0], ":") {
			t.Errorf("bad line %q", trim(sc.Text()))
			continue
		}
		label := strings.TrimSuffix(f[0], ":")
		if label == "ERR" || label == "MIS" {
			if len(f) != 2 {
				t.Errorf("%s line has %d fields", label, len(f))
			}
			continue
		}
		if len(f) < 1+ncpu+1 {
			t.Errorf("line %s has %d fields for %d CPUs", label, len(f), ncpu)
			continue
		}
		for _, c := range f[1 : 1+ncpu] {
			if _, err := strconv.ParseUint(c, 10, 64); err != nil {
				t.Errorf("line %s: count %q", label, c)
				break
			}
		}
		if _, err := strconv.Atoi(label); err == nil && len(f) < 1+ncpu+3 {
			t.Errorf("IRQ %s: no chip, hwirq and name", label)
		}
	}
}

// TestOldKernelFormats checks the formats of the 4.15 host: link speeds
// without "PCIe", the global PCI-MSI chip with computed hwirqs, no
// core_cpus_list or die_id.
func TestOldKernelFormats(t *testing.T) {
	root := t.TempDir()
	if err := XeonXL710Gen2x4().Write(root); err != nil {
		t.Fatal(err)
	}
	const dev = "sys/class/net/ens2f0np0/device/"
	files := []struct{ path, want string }{
		{dev + "max_link_speed", "8 GT/s\n"},
		{dev + "current_link_speed", "5 GT/s\n"},
		{dev + "current_link_width", "4\n"},
		{dev + "numa_node", "1\n"},
		{dev + "local_cpulist", "10-19,30-39\n"},
		{dev + "local_cpus", "ff,c00ffc00\n"},
		{"sys/bus/pci/devices/0000:00:03.0/max_link_speed", "5 GT/s\n"},
		{"sys/bus/pci/devices/0000:00:03.0/max_link_width", "4\n"},
		{"proc/irq/46/smp_affinity", "00,00000001\n"},
		{"proc/irq/46/node", "1\n"},
		{"sys/devices/system/cpu/cpu25/topology/thread_siblings_list", "5,25\n"},
		{"sys/devices/system/cpu/cpu15/topology/core_id", "8\n"},
		{"sys/devices/system/cpu/cpu15/cache/index3/shared_cpu_list", "10-19,30-39\n"},
		{"sys/devices/system/node/node1/cpulist", "10-19,30-39\n"},
		{"sys/class/net/ens2f0np0/queues/rx-0/rps_cpus", "00,00000000\n"},
		{"sys/class/net/vmbr0/brif/veth100i0/state", "3\n"},
		{"proc/sys/net/core/default_qdisc", "pfifo_fast\n"},
	}
	for _, f := range files {
		if got := readFile(t, root, f.path); got != f.want {
			t.Errorf("%s = %q, want %q", f.path, got, f.want)
		}
	}
	for _, p := range []string{"sys/devices/system/cpu/cpu0/topology/core_cpus_list", "sys/devices/system/cpu/cpu0/topology/die_id"} {
		if _, err := os.Stat(filepath.Join(root, p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s exists on a 4.15 kernel (%v)", p, err)
		}
	}
	interrupts := readFile(t, root, "proc/interrupts")
	for _, want := range []string{
		"  IR-PCI-MSI 5242880-edge      i40e-0000:0a:00.0:misc\n",
		"  IR-PCI-MSI 5242881-edge      i40e-ens2f0np0-TxRx-0\n",
		"  IR-PCI-MSI 512000-edge      ahci[0000:00:1f.2]\n",
	} {
		if !strings.Contains(interrupts, want) {
			t.Errorf("proc/interrupts lacks %q", want)
		}
	}
}

func TestKernelMask(t *testing.T) {
	tests := []struct {
		cpus  []int
		nbits int
		want  string
	}{
		{[]int{11}, 12, "800"},
		{[]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 12, "fff"},
		{nil, 12, "000"},
		{[]int{0}, 40, "00,00000001"},
		{[]int{8, 9, 10, 11}, 64, "00000000,00000f00"},
		{[]int{31}, 32, "80000000"},
		{[]int{32}, 33, "1,00000000"},
		{[]int{0}, 1, "1"},
		{[]int{511}, 512, "80000000" + strings.Repeat(",00000000", 15)},
	}
	for _, tt := range tests {
		if got := kernelMask(tt.cpus, tt.nbits); got != tt.want {
			t.Errorf("kernelMask(%v, %d) = %q, want %q", tt.cpus, tt.nbits, got, tt.want)
		}
	}
}

func TestLinkSpeed(t *testing.T) {
	tests := []struct {
		kernel string
		gts    float64
		want   string
	}{
		{"4.15.18-30-pve", 2.5, "2.5 GT/s"},
		{"4.15.18-30-pve", 5, "5 GT/s"},
		{"4.15.18-30-pve", 8, "8 GT/s"},
		{"4.17.0", 5, "5.0 GT/s PCIe"},
		{"6.8.0-51-generic", 8, "8.0 GT/s PCIe"},
		{"6.11.0-19-generic", 16, "16.0 GT/s PCIe"},
		{"6.11.0-19-generic", 32, "32.0 GT/s PCIe"},
	}
	for _, tt := range tests {
		h := &Host{Kernel: tt.kernel}
		if got := h.linkSpeed(tt.gts); got != tt.want {
			t.Errorf("kernel %s, %g GT/s = %q, want %q", tt.kernel, tt.gts, got, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(h *Host)
		want   string
	}{
		{"duplicate IRQ", func(h *Host) { h.NICs[0].IRQs[1].Num = h.NICs[0].IRQs[0].Num }, "IRQ 98 given twice"},
		{"CPU numbering", func(h *Host) { h.CPUs[3].ID = 7 }, "has ID 7"},
		{"affinity", func(h *Host) { h.NICs[0].IRQs[0].Affinity = []int{12} }, "names CPU 12 of 12"},
		{"counts", func(h *Host) { h.NICs[0].IRQs[0].Counts = map[int]uint64{40: 1} }, "names CPU 40 of 12"},
		{"BDF", func(h *Host) { h.NICs[0].PCI.BDF = "01:00.0" }, "want DDDD:BB:DD.F"},
		{"speed", func(h *Host) { h.NICs[0].Bridge.MaxSpeed = 4 }, "no PCIe link speed of 4 GT/s"},
		{"interface", func(h *Host) { h.NICs[1].Interfaces[0].Name = "enp1s0f0np0" }, "interface enp1s0f0np0 given twice"},
		{"ifindex", func(h *Host) { h.Virtual[0].Ifindex = 4 }, "ifindex 4 given twice"},
		{"kernel", func(h *Host) { h.Kernel = "" }, "hostname and kernel are required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := Ryzen9900XCX5x4()
			tt.change(h)
			err := h.Write(t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Write error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestTreeConflicts(t *testing.T) {
	tr := newTree()
	tr.attr("a/b", "1")
	tr.attr("a/b", "1") // same content: fine
	tr.attr("a/b", "2")
	tr.link("a/c", "x")
	tr.link("a/c", "y")
	tr.attr("a/c/d", "3")
	err := tr.write(t.TempDir())
	for _, want := range []string{"a/b: written twice", "a/c: linked to both", "a/c: is a file or link but a/c/d"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	root := t.TempDir()
	ok := newTree()
	ok.attr("x/y", "1")
	if err := ok.write(root); err != nil {
		t.Fatal(err)
	}
	if err := ok.write(root); err == nil {
		t.Error("second write over an existing tree succeeded")
	}
}

// TestLarge checks the shape of the benchmark host and renders its
// /proc/interrupts (writing the whole tree is left to the benchmark).
func TestLarge(t *testing.T) {
	h := Large()
	if err := h.validate(); err != nil {
		t.Fatal(err)
	}
	l3 := make(map[int]int)
	for _, c := range h.CPUs {
		l3[c.L3]++
	}
	nicIRQs := 0
	for _, nic := range h.NICs {
		nicIRQs += len(nic.IRQs)
	}
	checks := []struct {
		what      string
		got, want int
	}{
		{"CPUs", len(h.CPUs), 512},
		{"NUMA nodes", len(h.nodes()), 2},
		{"L3 domains", len(l3), 64},
		{"CPUs in L3 domain 0", l3[0], 8},
		{"NICs", len(h.NICs), 8},
		{"NIC IRQs", nicIRQs, 4096},
		{"queues of a NIC", h.NICs[7].Interfaces[0].RxQueues, 64},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.what, c.got, c.want)
		}
	}
	text := string(h.interrupts(h.irqs()))
	mlx := 0
	for line := range strings.SplitSeq(text, "\n") {
		if strings.Contains(line, " IR-PCI-MSIX-") && strings.Contains(line, "mlx5_") {
			mlx++
		}
	}
	if mlx != 4096 {
		t.Errorf("proc/interrupts has %d mlx5 lines, want 4096", mlx)
	}
	checkInterrupts(t, text, 512)
	if !strings.Contains(text, "CPU511     \n") {
		t.Error("header lacks CPU511")
	}
}

func BenchmarkWriteLarge(b *testing.B) {
	h := Large()
	base := b.TempDir()
	for i := 0; b.Loop(); i++ {
		dir := filepath.Join(base, strconv.Itoa(i))
		if err := h.Write(dir); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

func BenchmarkInterruptsLarge(b *testing.B) {
	h := Large()
	irqs := h.irqs()
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		buf.Write(h.interrupts(irqs))
	}
	b.SetBytes(int64(buf.Len()))
}

// TestReadThroughHostfs reads the committed trees the way linerate does,
// through hostfs (links resolved inside the root).
func TestReadThroughHostfs(t *testing.T) {
	committed := filepath.Join("..", "..", "testdata", "hosts")
	tests := []struct {
		tree, path, want string
	}{
		{"ryzen-9900x-cx5-x4", "sys/class/net/enp1s0f0np0/device/current_link_width", "4"},
		{"ryzen-9900x-cx5-x4", "sys/class/net/enp1s0f0np0/device/driver/0000:01:00.1/net/enp1s0f1np1/operstate", "down"},
		{"ryzen-9900x-cx5-x4", "sys/class/hwmon/hwmon3/device/net/enp1s0f0np0/mtu", "9000"},
		{"ryzen-9900x-cx5-x4", "sys/devices/system/cpu/cpu11/cpufreq/scaling_governor", "powersave"},
		{"ryzen-7950x-cx5-x8-roce", "sys/class/infiniband/rocep3s0/device/numa_node", "-1"},
		{"ryzen-7950x-cx5-x8-roce", "sys/class/net/enp3s0np0/device/local_cpulist", "0-31"},
		{"ryzen-7950x-cx5-x8-roce", "sys/devices/system/cpu/cpu16/topology/thread_siblings_list", "0,16"},
		{"ryzen-7950x-cx5-x8-roce", "sys/devices/system/cpu/cpu24/cache/index3/shared_cpu_list", "8-15,24-31"},
		{"xeon-xl710-gen2-x4", "sys/class/net/vmbr0/brif/veth100i0/state", "3"},
		{"xeon-xl710-gen2-x4", "sys/class/net/veth100i0/master/operstate", "up"},
		{"xeon-6530-t6-healthy", "sys/class/net/ens5f4d1/device/net/ens5f4/mtu", "9000"},
		{"xeon-6530-t6-healthy", "sys/class/net/ens5f4d1/dev_port", "1"},
		{"xeon-6530-t6-healthy", "sys/bus/pci/devices/0000:16:02.0/current_link_speed", "8.0 GT/s PCIe"},
	}
	for _, tt := range tests {
		root := filepath.Join(committed, tt.tree)
		if _, err := os.Stat(root); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI=true: testdata/hosts not generated: %v", err)
			}
			t.Skipf("testdata/hosts not generated: %v", err)
		}
		fsys, err := hostfs.New(root)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fsys.ReadString(tt.path)
		if err != nil || got != tt.want {
			t.Errorf("%s: %s = %q (%v), want %q", tt.tree, tt.path, got, err, tt.want)
		}
		fsys.Close()
	}
	fsys, err := hostfs.New(filepath.Join(committed, "ryzen-9900x-cx5-x4"))
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	procs, err := fsys.FindProcesses("irqbalance")
	if err != nil || len(procs) != 1 || procs[0].PID != 812 {
		t.Errorf("FindProcesses(irqbalance) = %v, %v; want pid 812", procs, err)
	}
	dev, err := fsys.Resolve("sys/class/net/enp1s0f0np0/device")
	if want := "sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0"; err != nil || dev != want {
		t.Errorf("Resolve = %q, %v; want %q", dev, err, want)
	}
}
