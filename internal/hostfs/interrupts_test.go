package hostfs

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestParseInterruptsRyzenX4(t *testing.T) {
	f, err := os.Open("testdata/interrupts/ryzen-9900x-mlx5.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in, err := ParseInterrupts(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.CPUs) != 12 || in.CPUs[11] != 11 {
		t.Fatalf("CPUs = %v", in.CPUs)
	}
	tests := []struct {
		irq    int
		name   string
		counts map[int]uint64
	}{
		{98, "mlx5_async0@pci:0000:01:00.0", map[int]uint64{10: 23274}},
		{99, "mlx5_comp0@pci:0000:01:00.0", map[int]uint64{0: 324, 7: 4360}},
		{102, "mlx5_comp0@pci:0000:01:00.1", map[int]uint64{}},
		{114, "mlx5_comp6@pci:0000:01:00.0", map[int]uint64{6: 10, 8: 1024467}},
	}
	for _, tt := range tests {
		got, ok := in.IRQs[tt.irq]
		if !ok {
			t.Errorf("IRQ %d missing", tt.irq)
			continue
		}
		if got.Name != tt.name {
			t.Errorf("IRQ %d name = %q, want %q", tt.irq, got.Name, tt.name)
		}
		if len(got.Counts) != len(tt.counts) {
			t.Errorf("IRQ %d counts = %v, want %v", tt.irq, got.Counts, tt.counts)
		}
		for cpu, n := range tt.counts {
			if got.Counts[cpu] != n {
				t.Errorf("IRQ %d CPU %d = %d, want %d", tt.irq, cpu, got.Counts[cpu], n)
			}
		}
	}
	if in.IRQs[99].Chip != "IR-PCI-MSIX-0000:01:00.0" || in.IRQs[99].HWIRQ != "1-edge" {
		t.Errorf("IRQ 99 chip = %q hwirq = %q", in.IRQs[99].Chip, in.IRQs[99].HWIRQ)
	}
}

func TestParseInterruptsVM(t *testing.T) {
	f, err := os.Open("testdata/interrupts/vm-virtio.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in, err := ParseInterrupts(f, func(irq int, name string) bool { return strings.HasPrefix(name, "virtio2-") })
	if err != nil {
		t.Fatal(err)
	}
	if len(in.IRQs) != 3 {
		t.Fatalf("kept %d IRQs, want virtio2's 3: %v", len(in.IRQs), in.IRQs)
	}
	if in.IRQs[38].Name != "virtio2-input.0" || in.IRQs[38].Counts[1] != 1387 {
		t.Errorf("IRQ 38 = %+v", in.IRQs[38])
	}
}

func TestParseInterruptsOfflineCPU(t *testing.T) {
	// CPU 1 offline: the columns are CPU0 CPU2 CPU3.
	text := "           CPU0       CPU2       CPU3\n 40:  1  2  3  PCI-MSI 524288-edge      eth0-rx-0\n"
	in, err := ParseInterrupts(strings.NewReader(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := in.IRQs[40].Counts; c[0] != 1 || c[2] != 2 || c[3] != 3 || in.IRQs[40].Total != 6 {
		t.Errorf("counts = %v total %d", c, in.IRQs[40].Total)
	}
	if in.IRQs[40].Name != "eth0-rx-0" {
		t.Errorf("name = %q", in.IRQs[40].Name)
	}
}

func TestParseInterruptsOldFormat(t *testing.T) {
	// 2.6-era kernels fused chip and trigger type into one field.
	text := "           CPU0       CPU1\n 45:  10  0  PCI-MSI-edge      eth2-TxRx-0\n 46:  0 0   IO-APIC-fasteoi   ehci_hcd:usb1, uhci_hcd:usb2\n"
	in, err := ParseInterrupts(strings.NewReader(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := in.IRQs[45].Name; got != "eth2-TxRx-0" {
		t.Errorf("name = %q", got)
	}
	if got := in.IRQs[46].Name; got != "ehci_hcd:usb1, uhci_hcd:usb2" {
		t.Errorf("shared IRQ name = %q", got)
	}
}

func TestParseInterruptsBad(t *testing.T) {
	for _, text := range []string{
		"",
		"garbage header\n 1: 2\n",
		"           CPU0\n 40: 99999999999999999999999 PCI-MSI 1-edge x\n",
		"           CPU0       CPU0\n 40:  1  2  PCI-MSI 1-edge x\n", // found by FuzzParseInterrupts
	} {
		if _, err := ParseInterrupts(strings.NewReader(text), nil); !errors.Is(err, ErrParse) {
			t.Errorf("ParseInterrupts(%q) error = %v, want ErrParse", text, err)
		}
	}
}

// FuzzParseInterrupts checks that no input panics or yields counts for
// CPUs the header did not name.
func FuzzParseInterrupts(f *testing.F) {
	for _, p := range []string{"testdata/interrupts/ryzen-9900x-mlx5.txt", "testdata/interrupts/vm-virtio.txt"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("           CPU0       CPU2\n 40:  1  2  PCI-MSI 524288-edge      eth0\nERR: 0\n")
	for _, s := range interruptsSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		in, err := ParseInterrupts(strings.NewReader(text), nil)
		if err != nil {
			return
		}
		named := map[int]bool{}
		for _, c := range in.CPUs {
			named[c] = true
		}
		for irq, c := range in.IRQs {
			var sum uint64
			for cpu, n := range c.Counts {
				if !named[cpu] {
					t.Fatalf("IRQ %d counted on CPU %d absent from the header", irq, cpu)
				}
				sum += n
			}
			if sum != c.Total {
				t.Fatalf("IRQ %d total %d != sum %d", irq, c.Total, sum)
			}
		}
	})
}

// TestParseInterruptsLineTooLong: a line over the bound is refused with a
// reason in plain words, not bufio's "token too long".
func TestParseInterruptsLineTooLong(t *testing.T) {
	long := " 40: " + strings.Repeat("1 ", MaxInterruptsLine/2) + "PCI-MSI 1-edge eth0\n"
	for name, text := range map[string]string{
		"header": strings.Repeat("CPU0 ", MaxInterruptsLine/5+1) + "\n",
		"irq":    "           CPU0\n" + long,
	} {
		_, err := ParseInterrupts(strings.NewReader(text), nil)
		if !errors.Is(err, ErrParse) {
			t.Errorf("%s: error %v, want ErrParse", name, err)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "token") || !strings.Contains(msg, "longer than 1 MiB") {
			t.Errorf("%s: error %q: want the limit in plain words", name, msg)
		}
	}
}

// interruptsSeeds are realistic starting points for the fuzzer: the
// ConnectX-5 lines of the 100 GbE home lab one by one (as `grep mlx` printed them, with and without the
// header), a 512-CPU host, and the odd names and layouts real kernels print.
func interruptsSeeds() []string {
	header := func(cpus ...int) string {
		var b strings.Builder
		b.WriteString("      ")
		for _, c := range cpus {
			fmt.Fprintf(&b, "     CPU%-5d", c)
		}
		return b.String() + "\n"
	}
	cpus := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	h12 := header(cpus(12)...)
	// The 100 GbE home lab (crow, Ryzen 9900X, ConnectX-5 at x4): `cat
	// /proc/interrupts | grep mlx`.
	ryzenX4 := []string{
		"  98:          0          0          0          0          0          0          0          0          0          0      23274          0  IR-PCI-MSIX-0000:01:00.0    0-edge      mlx5_async0@pci:0000:01:00.0",
		"  99:        324          0          0          0          0          0          0       4360          0          0          0          0  IR-PCI-MSIX-0000:01:00.0    1-edge      mlx5_comp0@pci:0000:01:00.0",
		" 101:          0          0          0          0          0          0          0          0          0          0          0       8563  IR-PCI-MSIX-0000:01:00.1    0-edge      mlx5_async0@pci:0000:01:00.1",
		" 114:          0          0          0          0          0          0         10          0    1024467          0          0          0  IR-PCI-MSIX-0000:01:00.0    7-edge      mlx5_comp6@pci:0000:01:00.0",
		" 117:          0          0          0          0          0          0          0          0          0          7          0     651437  IR-PCI-MSIX-0000:01:00.0   10-edge      mlx5_comp9@pci:0000:01:00.0",
		" 118:          0          0          0          0          0          0          0     417457          0          0         22          0  IR-PCI-MSIX-0000:01:00.0   11-edge      mlx5_comp10@pci:0000:01:00.0",
	}
	var seeds []string
	for _, l := range ryzenX4 {
		seeds = append(seeds, h12+l+"\n")
	}
	// The owner's own text: a shell prompt where the header would be.
	seeds = append(seeds, "root@crow:/home/jordan# cat /proc/interrupts | grep mlx\n"+strings.Join(ryzenX4, "\n")+"\n")
	// 512 CPUs (the generated large host): a full line and a line with
	// fewer counts than CPUs.
	var line strings.Builder
	line.WriteString(" 4095:")
	for i := range 512 {
		fmt.Fprintf(&line, " %10d", (i*7919)%100000)
	}
	line.WriteString("  IR-PCI-MSIX-0000:c1:00.0  511-edge      mlx5_comp511@pci:0000:c1:00.0\n")
	h512 := header(cpus(512)...)
	seeds = append(seeds,
		h512+line.String(),
		h512+" NMI:"+strings.Repeat("          1", 512)+"   Non-maskable interrupts\nERR:          0\nMIS:          0\n",
	)
	// Odd names and layouts.
	h4 := header(0, 1, 2, 3)
	for _, l := range []string{
		"  16:          0          0          0          0  IO-APIC   16-fasteoi   ehci_hcd:usb1, uhci_hcd:usb2, i801_smbus", // shared line
		"  45:         10          0          0          0  PCI-MSI-edge      eth2-TxRx-0",                                   // 2.6-era fused chip and type
		"  50:          0          0          0          0  IR-PCI-MSI 1048576-edge      i40e-0000:02:00.0:misc",             // colons in the name
		"  51:          3          0          0          0  IR-PCI-MSI 1048577-edge      i40e-ens2f0np0-TxRx-0",
		"  60:          0          0          0          0  IR-PCI-MSI 2097152-edge      12345",                            // a name of digits
		"  61:          0          0          0          0  IR-PCI-MSI 2097153-edge",                                       // no name
		"  62:          0          0          0          0  IR-PCI-MSIX-0000:05:00.4   0-edge      ens5f4d1-Rx0 (queue 0)", // spaces in the name
		"  63:          0          0          0          0  PCI-MSIX-0000:00:01.0   2-edge      virtio2-input.0",
		"  64:          0          0          0          0  IR-PCI-MSIX-0000:01:00.0    1-edge      mlx5_comp0@pci:0000:01:00.0\t",
		"  65:          0          0          0          0  ITS-MSI 0-level      nvme0q0",
		"  66:          0          0          0          0  GICv3  27 Level     arch_timer",
		"  67: 18446744073709551615          0          0          0  IO-APIC   1-edge      i8042", // uint64 max
		"  68: 18446744073709551616          0          0          0  IO-APIC   1-edge      i8042", // one past
		"  69:          1          2  IO-APIC   1-edge      short-line",
		"  70:          0          0          0          0          0          0  IR-PCI-MSI 1-edge      more-counts-than-cpus",
		" LOC:   12345678   23456789   34567890   45678901   Local timer interrupts",
		" IPI0:          0          0          0          0  Rescheduling interrupts",
		"  71:          0          0          0          0  IR-PCI-MSIX-0000:01:00.0    1-edge      ñame-ünicode-網卡",
	} {
		seeds = append(seeds, h4+l+"\n")
	}
	// Offline CPUs: CPU 1 and 3 have no column.
	seeds = append(seeds, header(0, 2, 4, 6)+"  40:          1          2          3          4  PCI-MSI 524288-edge      eth0-rx-0\n")
	return seeds
}
