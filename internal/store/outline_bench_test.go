package store

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkRunsListing lists 1000 stored runs whose documents are about
// 30 KB (the median of the ConnectX-5 RoCE baseline report's runs, with
// their intervals and per-CPU telemetry), as history and the metrics
// scrape do: each listing builds every run's outline (kind, rate and the
// kind's figures) from its document with SQLite's JSON functions.
func BenchmarkRunsListing(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "results.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	cpu := `{"busy":50.5,"softirq":10.25,"irq":1.5,"net_rx":12345,"net_tx":678}`
	var per []string
	for c := range 12 {
		per = append(per, fmt.Sprintf("%q:%s", fmt.Sprint(c), cpu))
	}
	iv := `{"start":0,"end":1,"sum":{"bytes":1234567890,"bits_per_second":9.5e9},"cpu":{"client":{` + strings.Join(per, ",") + `},"server":{` + strings.Join(per, ",") + `}}}`
	ivs := strings.TrimSuffix(strings.Repeat(iv+",", 14), ",")
	doc := json.RawMessage(`{"schema":"linerate.bench/v1","start":{"streams":1},"intervals":[` + ivs + `],"end":{"seconds":10}}`)
	for i := range 1000 {
		r := sampleRun(float64(i))
		r.Result = doc
		if err := s.AddRun(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		runs, err := s.Runs(ctx, Query{})
		if err != nil || len(runs) != 1000 {
			b.Fatalf("%d runs, %v", len(runs), err)
		}
	}
	b.ReportMetric(float64(len(doc)), "doc-bytes")
}
