package hostfs

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestParseInterruptsSeed000(t *testing.T) {
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
