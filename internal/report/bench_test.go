package report

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"

	"github.com/linerate/linerate/internal/explain"
)

// thousandRuns is the home lab's hosts with a --repeat 1000 campaign in three
// buckets, a tune and the runs after it: 1,000 runs of 10 intervals with
// per-CPU samples of both 12-CPU hosts.
func thousandRuns(tb testing.TB) Dataset {
	seed := loadFixture(tb, "seed000")
	ds := Dataset{Title: "1,000 runs (synthetic)", Synthetic: "benchmark data", Hosts: seed.Hosts, Tunes: seed.Tunes, Linerate: "dev"}
	names, softirq := []string{"worst", "better", "best"}, []int{7, 9, 8}
	rates := [][]float64{seedWorst, seedBetter, seedBest}
	hot := [][]loadCPU{{{7, 100, 57, 3}}, {{2, 88, 3, 0.2}, {9, 63, 58, 3.4}}, {{10, 81, 2, 0.2}, {8, 60, 56, 3.3}}}
	buckets := make([][]Run, 3)
	var all []Run
	for id := int64(1); id <= 1000; id++ {
		k := int(id*7) % 3
		tune := ""
		if id > 700 {
			k, tune = 2, "vulture-1"
		}
		r := makeRun(runSpec{id: id, engine: "native", label: "repeat", tune: tune, streams: 1, rates: shift(rates[k], id, 0.3),
			retr: retrBest, clientCPUs: []int{3}, serverCPUs: []int{hot[k][0].cpu}, source: "auto",
			clientHot: []loadCPU{{3, 85, 9, 0.4}}, serverHot: hot[k], clientIRQ: []int{3, 7, 8, 9, 10, 11}, serverIRQ: []int{7, 8, 9, 10, 11}, nCPU: 12})
		buckets[k] = append(buckets[k], r)
		all = append(all, r)
	}
	var bks []Bucket
	for k, runs := range buckets {
		bks = append(bks, bucketOf(names[k], softirq[k], runs))
	}
	ds.Runs = all
	ds.Campaigns = []Campaign{{Summary: explain.Summary{Schema: CampaignSchema, Label: "repeat", Points: []Point{summarize(1, "auto", all, bks)},
		Explanation: []string{"three buckets"}}}}
	return ds
}

// BenchmarkReport1000 builds and writes the HTML report of 1,000 runs.
// Target (issue 7): under 2 s and 5 MB. The html-bytes metric is the
// file's size.
func BenchmarkReport1000(b *testing.B) {
	ds := thousandRuns(b)
	var size int
	b.ReportAllocs()
	for b.Loop() {
		m, err := Build(ds)
		if err != nil {
			b.Fatal(err)
		}
		var w bytes.Buffer
		if err := WriteHTML(&w, m); err != nil {
			b.Fatal(err)
		}
		size = w.Len()
	}
	b.ReportMetric(float64(size), "html-bytes")
}

// BenchmarkReport1000Markdown writes the same report as Markdown and SVG
// files.
func BenchmarkReport1000Markdown(b *testing.B) {
	ds := thousandRuns(b)
	dir := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		m, err := Build(ds)
		if err != nil {
			b.Fatal(err)
		}
		if err := WriteMarkdown(filepath.Join(dir, "r.md"), m); err != nil {
			b.Fatal(err)
		}
	}
}

// TestThousandRunsRender keeps the benchmark's dataset valid: it must
// build, and its HTML must stay under 5 MB.
func TestThousandRunsRender(t *testing.T) {
	if testing.Short() {
		// CI: runs the suite without -short, so this runs there.
		t.Skip("1,000 runs")
	}
	m, err := Build(thousandRuns(t))
	if err != nil {
		t.Fatal(err)
	}
	var n countWriter
	if err := WriteHTML(&n, m); err != nil {
		t.Fatal(err)
	}
	if n > 5<<20 {
		t.Errorf("report of 1,000 runs is %d bytes, over 5 MB", n)
	}
}

type countWriter int

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)
