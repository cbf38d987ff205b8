package telemetry

import (
	"testing"

	"github.com/linerate/linerate/internal/hostfs"
)

// BenchmarkSample measures one telemetry sample of this host: reading
// /proc/stat and /proc/softirqs and computing the per-CPU deltas.
func BenchmarkSample(b *testing.B) {
	s := NewSampler(hostfs.Live(), nil)
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Sample()
	}
}
