package doctor

import (
	"runtime"
	"testing"

	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/hosttree"
	"github.com/linerate/linerate/internal/inventory"
)

// BenchmarkDoctorLargeHost runs a full doctor (inventory + rules) over a
// generated host with 512 CPUs, 8 NICs and 4,096 NIC IRQs, every port with
// live ethtool facts and a CMIS module to decode. Target: under
// 300 ms and 64 MB (docs/benchmarks.md). peak-heap-MB is the largest live
// heap seen after a run, sampled with runtime.ReadMemStats.
func BenchmarkDoctorLargeHost(b *testing.B) {
	root := b.TempDir()
	if err := hosttree.Large().Write(root); err != nil {
		b.Fatal(err)
	}
	var peak uint64
	b.ReportAllocs()
	for b.Loop() {
		fs, err := hostfs.New(root)
		if err != nil {
			b.Fatal(err)
		}
		inv, err := inventory.Collect(fs, inventory.Options{})
		if err != nil {
			b.Fatal(err)
		}
		rep, err := Diagnose(inv, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if len(rep.NICs) != 8 {
			b.Fatalf("%d NICs, want 8", len(rep.NICs))
		}
		for _, n := range rep.NICs {
			if n.Transceiver == nil || !n.Transceiver.Readable || n.Counters == nil {
				b.Fatalf("%s: no module or counters decoded", n.Interface)
			}
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
		fs.Close()
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}
