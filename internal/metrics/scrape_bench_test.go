package metrics

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/hosttree"
)

// largeLive writes the large benchmark host (512 CPUs, 8 NICs with a
// CMIS module each, 4,096 NIC IRQs: the host scripts/bench-doctor.sh
// times) and returns a Live over it whose clock moves past the TTL at
// every call when fresh is set.
func largeLive(b *testing.B, fresh bool) *Live {
	b.Helper()
	dir := b.TempDir() + "/host"
	if err := hosttree.Large().Write(dir); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	l := &Live{FS: openTreeAt(b, dir), NoStore: true, now: func() time.Time {
		if fresh {
			now = now.Add(DefaultTTL)
		}
		return now
	}}
	s := l.Snapshot() // warm the page cache
	if s.Report == nil || len(s.Report.NICs) != 8 {
		b.Fatalf("large host: %v", s.doctorErr)
	}
	return l
}

// BenchmarkScrapeLarge is one scrape that collects: inventory and doctor
// over the large host, module pages decoded, and the exposition encoded.
func BenchmarkScrapeLarge(b *testing.B) {
	l := largeLive(b, true)
	reg := NewRegistry(NewCollector(l.Snapshot, "bench"))
	b.ReportAllocs()
	for b.Loop() {
		if err := Encode(io.Discard, reg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScrapeLargeCached is a scrape within the TTL: the exposition
// of the cached collection only.
func BenchmarkScrapeLargeCached(b *testing.B) {
	l := largeLive(b, false)
	reg := NewRegistry(NewCollector(l.Snapshot, "bench"))
	var buf bytes.Buffer
	if err := Encode(&buf, reg); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := Encode(io.Discard, reg); err != nil {
			b.Fatal(err)
		}
	}
	// After the loop: b.Loop's first call resets reported metrics.
	b.ReportMetric(float64(buf.Len()), "exposition-bytes")
	b.ReportMetric(float64(bytes.Count(buf.Bytes(), []byte("\nlinerate_"))), "series")
}
