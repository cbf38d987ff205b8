package explain

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/store"
)

// big512Topology is a pair of 256-core sockets with SMT off, as two AMD
// EPYC 9754s would show it: 32 L3 domains of 16 CPUs, two NUMA nodes.
func big512Topology() Topology {
	t := Topology{NUMANodes: map[string][]int{}}
	for d := range 32 {
		var cpus []int
		for c := d * 16; c < (d+1)*16; c++ {
			cpus = append(cpus, c)
		}
		t.L3Domains = append(t.L3Domains, cpus)
		node := strconv.Itoa(d / 16)
		t.NUMANodes[node] = append(t.NUMANodes[node], cpus...)
	}
	return t
}

// gen512Run makes a 10-interval, 8-stream run between two 512-CPU hosts:
// the stream threads on CPUs 16-23 of each end, the receiver's NIC IRQs
// on CPUs 0-7 with their softirq there (or, with softirqOnApp, on the
// application's CPUs, the slow case of the x4 home lab), a foreign process
// holding CPU 300 of the server at 96%, and the other 500-odd CPUs of
// each end near idle, with the small noise real idle CPUs show.
func gen512Run(rng *rand.Rand, softirqOnApp bool) *result.Result {
	const ncpu, streams = 512, 8
	gbps := 96.0
	if softirqOnApp {
		gbps = 61.0
	}
	r := &result.Result{Schema: result.Schema, Engine: "native"}
	app := []int{16, 17, 18, 19, 20, 21, 22, 23}
	irq := []int{0, 1, 2, 3, 4, 5, 6, 7}
	r.Start = result.Start{Streams: streams, DurationS: 10, IntervalS: 1, Direction: result.Send,
		Placement: result.Placement{Client: app, Server: app, Source: "auto"},
		Client:    result.HostInfo{BootID: "left", IRQCPUs: irq}, Server: result.HostInfo{BootID: "right", IRQCPUs: irq}}
	for i := range streams {
		r.Start.Connections = append(r.Start.Connections, result.Connection{ID: i + 1, Sender: "client", ClientCPU: app[i], ServerCPU: app[i]})
	}
	host := func(receiver bool) map[string]result.CPUSample {
		per := make(map[string]result.CPUSample, ncpu)
		for c := range ncpu {
			s := result.CPUSample{Busy: round1(rng.Float64() * 3), SoftIRQ: round1(rng.Float64() * 0.5), NetRX: uint64(rng.IntN(20)), NetTX: uint64(rng.IntN(3))}
			switch {
			case c >= 16 && c < 24:
				s.Busy = round1(70 + rng.Float64()*25)
				if receiver && softirqOnApp {
					s.SoftIRQ, s.NetRX = round1(40+rng.Float64()*8), uint64(40000+rng.IntN(5000))
				}
			case c < 8 && receiver && !softirqOnApp:
				s.Busy, s.SoftIRQ = round1(45+rng.Float64()*10), round1(40+rng.Float64()*8)
				s.NetRX, s.NICIRQs = uint64(40000+rng.IntN(5000)), uint64(30000+rng.IntN(3000))
			case c == 300 && receiver:
				s.Busy = 96
			}
			per[strconv.Itoa(c)] = s
		}
		return per
	}
	for i := range 10 {
		iv := result.Interval{Start: float64(i), End: float64(i + 1)}
		for id := 1; id <= streams; id++ {
			rx := irq[id-1]
			if softirqOnApp {
				rx = app[id-1]
			}
			b := uint64(gbps / streams * 1e9 / 8 * (0.95 + rng.Float64()*0.1))
			iv.Streams = append(iv.Streams, result.StreamInterval{ID: id, Sender: "client", Bytes: b, BitsPerSecond: float64(b) * 8,
				RTTus: uint32(30 + rng.IntN(20)), CwndBytes: 3 << 20, RxCPU: &rx})
			iv.Sum.Bytes += b
		}
		iv.Sum.BitsPerSecond = float64(iv.Sum.Bytes) * 8
		iv.CPU.Client, iv.CPU.Server = host(false), host(true)
		iv.CPUTotal.Client = result.CPUSample{Busy: 2.5}
		iv.CPUTotal.Server = &result.CPUSample{Busy: 2.9}
		r.Intervals = append(r.Intervals, iv)
	}
	r.End = result.End{Seconds: 10, SumSent: result.Sum{BitsPerSecond: gbps * 1e9}, SumReceived: result.Received{BitsPerSecond: gbps * 1e9}}
	for id := 1; id <= streams; id++ {
		b := uint64(gbps / streams * 1e9 / 8 * 10)
		r.End.Streams = append(r.End.Streams, result.StreamEnd{ID: id, Sender: "client", SentBytes: b, ReceivedBytes: b})
	}
	return r
}

func clone(t testing.TB, r *result.Result) *result.Result {
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var c result.Result
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func jsonSize(t testing.TB, r *result.Result) int {
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// TestCompactKeepsWhatExplanationsUse compacts seven 512-CPU runs in two
// buckets (softirq on the IRQ CPUs, or on the application's) and checks
// that the campaign's summary and explanation are the same with full
// samples and compacted ones, that the CPUs that matter keep every
// sample, and that the folded CPUs' domain totals are their sums.
func TestCompactKeepsWhatExplanationsUse(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	topo := big512Topology()
	var full, small []Outcome
	for i := range 7 {
		r := gen512Run(rng, i%3 == 0)
		full = append(full, Outcome{ID: int64(i + 1), Run: r})
		c := clone(t, r)
		CompactTelemetry(c, topo, topo)
		small = append(small, Outcome{ID: int64(i + 1), Run: c})
	}
	spec := designOf("native", "198.18.0.2", []int{8}, nil, nil)
	a, b := Summarize(spec, full, topo, nil), Summarize(spec, small, topo, nil)
	if !reflect.DeepEqual(a, b) {
		ja, _ := json.MarshalIndent(a, "", " ")
		jb, _ := json.MarshalIndent(b, "", " ")
		t.Fatalf("summaries differ:\nfull %s\ncompact %s", ja, jb)
	}
	if len(a.Explanation) < 3 || len(a.Points[0].Buckets) != 2 {
		t.Fatalf("the runs should fall into two explained buckets: %q", a.Explanation)
	}
	for i := range full {
		fr, cr := full[i].Run, small[i].Run
		for _, side := range []string{"client", "server"} {
			lf, lc := loadOf(fr, side), loadOf(cr, side)
			for c := range lc.busy {
				if lc.busy[c] != lf.busy[c] || lc.softirq[c] != lf.softirq[c] || lc.netRX[c] != lf.netRX[c] {
					t.Errorf("run %d %s CPU %d: compacted load differs", i+1, side, c)
				}
			}
		}
		for j := range cr.Intervals {
			iv, fiv := &cr.Intervals[j], &fr.Intervals[j]
			for _, c := range []int{0, 7, 16, 23, 300} {
				if _, ok := iv.CPU.Server[strconv.Itoa(c)]; !ok {
					t.Fatalf("run %d interval %d: server CPU %d folded", i+1, j, c)
				}
			}
			if iv.CPUDomains == nil || len(iv.CPUDomains.Server) == 0 || len(iv.CPUDomains.Client) == 0 {
				t.Fatalf("run %d interval %d: no domain totals", i+1, j)
			}
			// Every CPU is either kept or in exactly one domain, and the
			// domain's counts are the sums of its CPUs'.
			seen := len(iv.CPU.Server)
			for _, d := range iv.CPUDomains.Server {
				cpus := mustCPUs(t, d.CPUs)
				seen += len(cpus)
				var netRX uint64
				for _, c := range cpus {
					netRX += fiv.CPU.Server[strconv.Itoa(c)].NetRX
				}
				if netRX != d.NetRX {
					t.Errorf("domain %s: net_rx %d, sum of its CPUs %d", d.Domain, d.NetRX, netRX)
				}
			}
			if seen != 512 {
				t.Errorf("run %d interval %d: %d server CPUs accounted for, want 512", i+1, j, seen)
			}
		}
	}
	if fs, cs := jsonSize(t, full[0].Run), jsonSize(t, small[0].Run); cs*10 > fs {
		t.Errorf("compacted run is %d bytes against %d: want less than a tenth", cs, fs)
	}
}

// TestCompactLeavesSmallHosts: up to 32 CPUs, every sample stays.
func TestCompactLeavesSmallHosts(t *testing.T) {
	r := clone(t, syntheticRun(64.6, map[int][2]float64{6: {92, 41}}))
	c := clone(t, r)
	CompactTelemetry(c, ryzenX4Topology(), ryzenX4Topology())
	if !reflect.DeepEqual(r, c) {
		t.Error("a 12-CPU run was changed")
	}
}

// TestCompactKeepsBusyForeignCPU: a CPU the test did not use but that
// was busy (another process) keeps its samples, and the fairness of a
// run is the same compacted.
func TestCompactKeepsFairness(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	r := clone(t, gen512Run(rng, false))
	// Streams 7 and 8 share CPU 6 and get half as much.
	six := 6
	for i := range r.Intervals {
		iv := &r.Intervals[i]
		iv.Streams[7].RxCPU = &six
		for _, k := range []int{6, 7} {
			iv.Streams[k].Bytes /= 2
		}
	}
	for _, k := range []int{6, 7} {
		r.End.Streams[k].ReceivedBytes /= 2
	}
	c := clone(t, r)
	CompactTelemetry(c, big512Topology(), big512Topology())
	fa, fb := FairnessOf(r), FairnessOf(c)
	if fa == nil || !reflect.DeepEqual(fa, fb) {
		t.Fatalf("fairness differs:\n%+v\n%+v", fa, fb)
	}
	if _, ok := c.Intervals[0].CPU.Server["300"]; !ok {
		t.Error("the foreign process's CPU 300 was folded")
	}
}

func mustCPUs(t testing.TB, s string) []int {
	var out []int
	var lo, hi int
	for _, part := range splitComma(s) {
		if n, _ := fmt.Sscanf(part, "%d-%d", &lo, &hi); n == 2 {
			for c := lo; c <= hi; c++ {
				out = append(out, c)
			}
			continue
		}
		if _, err := fmt.Sscanf(part, "%d", &lo); err != nil {
			t.Fatalf("bad CPU list %q", s)
		}
		out = append(out, lo)
	}
	return out
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

// BenchmarkRecords512 measures what a 512-CPU run costs to store: its
// JSON size with full samples and compacted (bytes/run), and the time to
// compact one. With LINERATE_RECORDS_DIR set, it also writes full.db and
// compact.db there, 1000 such runs each, for scripts/bench-records.sh to
// size and to run `linerate report --last 1000` on.
func BenchmarkRecords512(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	topo := big512Topology()
	base := gen512Run(rng, false)
	b.Run("compact", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			r := clone(b, base)
			b.StartTimer()
			CompactTelemetry(r, topo, topo)
		}
		c := clone(b, base)
		CompactTelemetry(c, topo, topo)
		b.ReportMetric(float64(jsonSize(b, base)), "full-bytes/run")
		b.ReportMetric(float64(jsonSize(b, c)), "compact-bytes/run")
	})
	dir := os.Getenv("LINERATE_RECORDS_DIR")
	if dir == "" {
		return
	}
	for _, kind := range []string{"full", "compact"} {
		path := filepath.Join(dir, kind+".db")
		_ = os.Remove(path)
		db, err := store.Open(context.Background(), path)
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(7, 8))
		start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		for i := range 1000 {
			r := gen512Run(rng, i%4 == 0)
			r.Start.Peer, r.Start.Timestamp = "198.18.0.2", start.Add(time.Duration(i)*time.Minute)
			if kind == "compact" {
				CompactTelemetry(r, topo, topo)
			}
			doc, err := json.Marshal(r)
			if err != nil {
				b.Fatal(err)
			}
			sr := &store.Run{StartedAt: r.Start.Timestamp, Label: "big", Engine: "native", Peer: "198.18.0.2", Streams: 8,
				DurationS: r.End.Seconds, Gbps: r.Gbps(), Params: json.RawMessage(`{"streams":8}`), Result: doc}
			if err := db.AddRun(context.Background(), sr); err != nil {
				b.Fatal(err)
			}
		}
		db.Close()
	}
}
