package telemetry

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/linerate/linerate/internal/hostfs"
)

// TestSampler feeds the sampler two readings of a captured /proc and
// checks the per-CPU deltas, including the NIC's interrupts.
func TestSampler(t *testing.T) {
	root := t.TempDir()
	write := func(name, data string) {
		p := filepath.Join(root, "proc", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("stat", "cpu  0 0 0 200 0 0 0 0 0 0\ncpu0 0 0 0 100 0 0 0 0 0 0\ncpu1 0 0 0 100 0 0 0 0 0 0\nintr 0\n")
	write("softirqs", "       CPU0       CPU1\n NET_TX: 1 1\n NET_RX: 10 10\n")
	write("interrupts", "       CPU0       CPU1\n 99:  5  7  IR-PCI-MSIX-0000:01:00.0  1-edge  mlx5_comp0@pci:0000:01:00.0\n 100: 1 1  IR-PCI-MSIX-0000:02:00.0  1-edge  other\n")
	fs, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	h := NewSampler(fs, []int{99})
	// 100 ticks later: CPU 0 was busy (60 user, 30 softirq, 10 idle), CPU 1 idle.
	write("stat", "cpu  60 0 0 310 0 0 30 0 0 0\ncpu0 60 0 0 110 0 0 30 0 0 0\ncpu1 0 0 0 200 0 0 0 0 0 0\nintr 0\n")
	write("softirqs", "       CPU0       CPU1\n NET_TX: 3 1\n NET_RX: 5010 10\n")
	write("interrupts", "       CPU0       CPU1\n 99:  4005  7  IR-PCI-MSIX-0000:01:00.0  1-edge  mlx5_comp0@pci:0000:01:00.0\n 100: 900 900  IR-PCI-MSIX-0000:02:00.0  1-edge  other\n")
	smp := h.Sample()
	per, total := smp.PerCPU, smp.Total
	want0 := CPUSample{Busy: 90, SoftIRQ: 30, NetRX: 5000, NetTX: 2, NICIRQs: 4000}
	if per["0"] != want0 {
		t.Errorf("cpu0 = %+v, want %+v", per["0"], want0)
	}
	if per["1"] != (CPUSample{}) {
		t.Errorf("cpu1 = %+v, want idle", per["1"])
	}
	if total.Busy != 45 || total.NICIRQs != 4000 {
		t.Errorf("total = %+v", total)
	}
	if len(h.Notes()) != 0 {
		t.Errorf("notes: %v", h.Notes())
	}
	// A source that goes missing is noted once, and the rest still works.
	os.Remove(filepath.Join(root, "proc", "softirqs"))
	h.Sample()
	h.Sample()
	if len(h.Notes()) != 1 {
		t.Errorf("notes: %v", h.Notes())
	}
}
