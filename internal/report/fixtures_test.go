package report

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/bench"
	"github.com/linerate/linerate/internal/c2c"
	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/explain"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/hosttree"
	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/result"
)

// The fixtures under testdata are recorded once and committed: the golden
// tests read them, so that a change in doctor or in the generators below
// does not silently move every golden file. Rewrite them with
//
//	go test ./internal/report -run TestWriteFixtures -fixtures
var writeFixtures = flag.Bool("fixtures", false, "rewrite testdata/*.dataset.json from the generators")

func TestWriteFixtures(t *testing.T) {
	if !*writeFixtures {
		// CI: only rewrites the recorded datasets when asked; the tests read them.
		t.Skip("run with -fixtures to rewrite the recorded datasets")
	}
	for name, ds := range map[string]Dataset{"seed000": homeLab(t), "seed002": roceBaseline(t)} {
		b, err := json.Marshal(ds)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("testdata", name+".dataset.json"), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// loadFixture reads a recorded dataset.
func loadFixture(t testing.TB, name string) Dataset {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".dataset.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ds Dataset
	if err := json.Unmarshal(b, &ds); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	// The recorded runs carry no command: bench writes them, from the
	// run's start section, as it does for a stored run without params.
	for i := range ds.Runs {
		if r := &ds.Runs[i]; r.Command == "" {
			r.Command = bench.RunCommand(&r.Result, r.Label)
		}
	}
	return ds
}

// diagnose writes a host tree and runs doctor on it, as
// `linerate doctor --root DIR --json` does.
func diagnose(t testing.TB, h *hosttree.Host) doctor.Report {
	t.Helper()
	dir := t.TempDir()
	if err := h.Write(dir); err != nil {
		t.Fatal(err)
	}
	fs, err := hostfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	inv, err := inventory.Collect(fs, inventory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := doctor.Diagnose(inv, doctor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Round-trip through JSON: the report reads what doctor --json wrote.
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var out doctor.Report
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// reseated is crow, the 100 GbE home lab's host whose ConnectX-5 trained
// at x4, after its owner pressed the card home: the
// same host, its ConnectX-5 trained at x16, the NIC cooled to 45 °C by the
// fan tied to its heatsink.
func reseated(hostname string) *hosttree.Host {
	h := hosttree.Ryzen9900XCX5x4()
	h.Hostname = hostname
	for i := range h.NICs {
		h.NICs[i].PCI.CurWidth = 16
		h.NICs[i].Bridge.CurWidth = 16
		if h.NICs[i].Hwmon != nil {
			h.NICs[i].Hwmon.Input, h.NICs[i].Hwmon.Highest = 45000, 45000
		}
	}
	return h
}

// The home lab's iperf3 per-second rates (Gbit/s) and retransmits, verbatim:
// the worst, better and best runs, and 40 s of the run pinned with -A 6,6
// after the IRQs were moved to CPUs 7-11.
var (
	seedWorst  = []float64{64.2, 64.7, 64.7, 64.7, 64.6, 64.6, 64.7, 65.0, 64.4, 64.5}
	seedBetter = []float64{95.7, 83.7, 83.6, 83.8, 83.7, 83.6, 83.9, 83.6, 83.6, 83.8}
	seedBest   = []float64{97.1, 98.9, 98.8, 98.9, 98.9, 98.8, 99.0, 98.9, 98.9, 99.0}
	seedPinned = []float64{93.6, 99.0, 95.7, 98.6, 99.0, 98.8, 98.9, 97.9, 99.0, 97.1,
		98.5, 99.0, 99.0, 98.6, 96.9, 99.0, 98.3, 99.0, 99.0, 98.9,
		99.0, 98.5, 99.0, 98.9, 99.0, 97.9, 98.9, 98.9, 98.3, 98.7,
		99.0, 98.9, 99.0, 98.2, 98.6, 99.0, 99.0, 98.7, 98.6, 98.2}
	retrWorst  = []uint64{7, 4, 13, 0, 0, 0, 0, 0, 0, 0}
	retrBetter = []uint64{49, 0, 0, 0, 0, 0, 15, 0, 0, 0}
	retrBest   = []uint64{124, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	retrPinned = []uint64{24, 0, 11, 1, 0, 1, 1, 2, 1, 3, 2, 0, 0, 2, 14, 6, 3, 1, 0, 0,
		0, 1, 0, 0, 0, 2, 1, 1, 1, 0, 0, 0, 0, 1, 2, 0, 0, 12, 1, 4}
)

// loadCPU is a CPU's load in a synthetic run: busy, softirq, irq (%).
type loadCPU struct {
	cpu                 int
	busy, softirq, hirq float64
}

// runSpec describes one synthetic run.
type runSpec struct {
	id                     int64
	engine, label, tune    string
	streams                int
	rates                  []float64
	retr                   []uint64
	clientCPUs, serverCPUs []int
	source                 string
	clientHot, serverHot   []loadCPU
	clientIRQ, serverIRQ   []int
	nCPU                   int
}

// wobble is a small deterministic variation in [-1, 1] from two integers.
func wobble(a, b int64) float64 {
	x := math.Sin(float64(a)*12.9898+float64(b)*78.233) * 43758.5453
	return 2*(x-math.Floor(x)) - 1
}

// makeRun builds a linerate.bench/v1 result from a spec.
func makeRun(s runSpec) Run {
	start := time.Date(2025, 1, 18, 20, 0, 0, 0, time.UTC).Add(time.Duration(s.id) * time.Minute)
	host := func(name string, irq []int) result.HostInfo {
		return result.HostInfo{Hostname: name, Kernel: "6.8.0-51-generic", Iface: "enp1s0f0np0", PCI: "0000:01:00.0",
			NICIRQs: []int{98, 99, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119}, IRQCPUs: irq,
			CPUs: seq(0, s.nCPU-1), Candidates: seq(0, s.nCPU-1)}
	}
	res := result.Result{Schema: result.Schema, RunID: s.id, Engine: s.engine,
		Start: result.Start{Peer: "192.168.88.3", Port: 5201, Timestamp: start, Streams: s.streams, DurationS: float64(len(s.rates)),
			IntervalS: 1, Direction: result.Send, Placement: result.Placement{Client: s.clientCPUs, Server: s.serverCPUs, Source: s.source},
			Window: result.Window{Granted: 425984}, Congestion: "cubic",
			Client: host("crow", s.clientIRQ), Server: host("vulture", s.serverIRQ)}}
	var bytes, retr uint64
	var sum float64
	for i, g := range s.rates {
		bps := g * 1e9
		b := uint64(bps / 8)
		r := s.retr[i%len(s.retr)]
		iv := result.Interval{Start: float64(i), End: float64(i + 1),
			Sum: result.Sum{Bytes: b, BitsPerSecond: bps, Retransmits: r},
			CPU: result.HostCPUs{Client: cpuSamples(s.id, i, s.nCPU, s.clientHot), Server: cpuSamples(s.id+1000, i, s.nCPU, s.serverHot)}}
		for k := 1; k <= s.streams; k++ {
			iv.Streams = append(iv.Streams, result.StreamInterval{ID: k, Sender: "client", Bytes: b / uint64(s.streams),
				BitsPerSecond: bps / float64(s.streams), RTTus: uint32(40 + 10*k), CwndBytes: 8 << 20, Retransmits: r / uint64(s.streams)})
		}
		res.Intervals = append(res.Intervals, iv)
		bytes, retr, sum = bytes+b, retr+r, sum+bps
	}
	mean := sum / float64(len(s.rates))
	res.End = result.End{Seconds: float64(len(s.rates)),
		SumSent:     result.Sum{Bytes: bytes, BitsPerSecond: mean, Retransmits: retr},
		SumReceived: result.Received{Bytes: bytes, BitsPerSecond: mean},
		CPU:         result.EndCPU{ClientSeconds: busySeconds(s.clientHot, s.clientCPUs, len(s.rates)), ServerSeconds: busySeconds(s.serverHot, s.serverCPUs, len(s.rates))}}
	return Run{Result: res, Label: s.label, TuneID: s.tune}
}

// cpuSamples gives every CPU a little background load and the hot CPUs
// theirs, each varying a little per interval.
func cpuSamples(run int64, iv, n int, hot []loadCPU) map[string]result.CPUSample {
	m := map[string]result.CPUSample{}
	for c := 0; c < n; c++ {
		w := wobble(run*131+int64(c), int64(iv))
		m[strconv.Itoa(c)] = result.CPUSample{Busy: round1(1.2 + 0.8*w), SoftIRQ: round1(0.1 + 0.1*w)}
	}
	for _, h := range hot {
		w := wobble(run*17+int64(h.cpu), int64(iv)+7)
		m[strconv.Itoa(h.cpu)] = result.CPUSample{Busy: round1(math.Min(100, h.busy+1.5*w)),
			SoftIRQ: round1(math.Max(0, h.softirq+1.2*w)), IRQ: round1(math.Max(0, h.hirq+0.3*w))}
	}
	return m
}

// busySeconds is the CPU time the benchmark's own threads used: the busy
// share of their CPUs less softirq, which the kernel charges to no process.
func busySeconds(hot []loadCPU, app []int, secs int) float64 {
	total := 0.0
	for _, h := range hot {
		for _, a := range app {
			if a == h.cpu {
				total += (h.busy - h.softirq - h.hirq) / 100
			}
		}
	}
	return round1(total*float64(secs)*100) / 100
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

func seq(a, b int) []int {
	var out []int
	for i := a; i <= b; i++ {
		out = append(out, i)
	}
	return out
}

// shift offsets rates by a small per-run amount, as repeated runs of one
// bucket differ.
func shift(rates []float64, id int64, by float64) []float64 {
	out := make([]float64, len(rates))
	for i, r := range rates {
		out[i] = round1(r + by*wobble(id, int64(i)) + 0.75*by*wobble(id, 99))
	}
	return out
}

// summarize builds a campaign point from runs, as bench would: median,
// min, max and the order-statistic 95% interval of the median.
func summarize(streams int, placement string, runs []Run, buckets []Bucket) Point {
	var vals []float64
	var ids []int64
	for i := range runs {
		vals = append(vals, math.Round(runGbps(&runs[i].Result)*100)/100)
		ids = append(ids, runs[i].Result.RunID)
	}
	sorted := append([]float64(nil), vals...)
	sortFloats(sorted)
	p := Point{Streams: streams, Placement: placement, RunIDs: ids, Runs: len(ids), MedianGbps: median(vals),
		MinGbps: sorted[0], MaxGbps: sorted[len(sorted)-1], Buckets: buckets}
	if n := len(sorted); n >= 5 {
		// Ranks of a 95% interval for the median: n/2 ± 0.98·√n.
		k := int(math.Floor(float64(n)/2 - 0.98*math.Sqrt(float64(n))))
		p.CI95Gbps = &[2]float64{sorted[max(k, 0)], sorted[min(n-1-k, n-1)]}
	}
	return p
}

func sortFloats(v []float64) {
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && v[j] < v[j-1]; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
}

// bucketOf builds a bucket of runs whose receiver's softirq ran on
// softirq, as bench would, named as the story names it.
func bucketOf(name string, softirq int, runs []Run) Bucket {
	var vals []float64
	var ids []int64
	for i := range runs {
		vals = append(vals, math.Round(runGbps(&runs[i].Result)*100)/100)
		ids = append(ids, runs[i].Result.RunID)
	}
	return Bucket{Name: name, RunIDs: ids, MedianGbps: median(vals), MinGbps: slices.Min(vals), MaxGbps: slices.Max(vals), Softirq: []int{softirq}}
}

// homeLab is the story of the 100 GbE home lab after the card was
// reseated (the fixture "seed000"): nine iperf3 runs in three buckets, a tune on vulture, five pinned runs and a
// stream sweep.
func homeLab(t testing.TB) Dataset {
	crow, vulture := diagnose(t, reseated("crow")), diagnose(t, reseated("vulture"))
	irqBefore := []int{3, 7, 8, 9, 10, 11}
	irqAfter := []int{7, 8, 9, 10, 11}
	clientHot := func(busy float64) []loadCPU { return []loadCPU{{3, busy, 9, 0.4}} }
	type bucketSpec struct {
		name    string
		softirq int // the receiver's softirq CPU
		rates   []float64
		retr    []uint64
		server  int
		hot     []loadCPU
		ids     []int64
	}
	specs := []bucketSpec{
		// worst: vulture's CPU 7 ran both the receiving thread and the NIC's softirq.
		{"worst", 7, seedWorst, retrWorst, 7,
			[]loadCPU{{7, 100, 57, 3.1}}, []int64{1, 4, 8}},
		// better: receiver on CPU 2 (L3 0-5), softirq on CPU 9 (L3 6-11): every packet crossed CCDs.
		{"better", 9, seedBetter, retrBetter, 2,
			[]loadCPU{{2, 88, 3, 0.2}, {9, 63, 58, 3.4}}, []int64{2, 6, 9}},
		// best: receiver on CPU 10, softirq on CPU 8: apart, but in one L3 domain.
		{"best", 8, seedBest, retrBest, 10,
			[]loadCPU{{10, 81, 2, 0.2}, {8, 60, 56, 3.3}}, []int64{3, 5, 7}},
	}
	byID := map[int64]Run{}
	var buckets []Bucket
	for _, sp := range specs {
		var runs []Run
		for _, id := range sp.ids {
			r := makeRun(runSpec{id: id, engine: "iperf3", label: "baseline", streams: 1, rates: shift(sp.rates, id, 0.2), retr: sp.retr,
				clientCPUs: []int{3}, serverCPUs: []int{sp.server}, source: "auto", clientHot: clientHot(60 + 0.3*sp.rates[5]),
				serverHot: sp.hot, clientIRQ: irqBefore, serverIRQ: irqBefore, nCPU: 12})
			byID[id], runs = r, append(runs, r)
		}
		buckets = append(buckets, bucketOf(sp.name, sp.softirq, runs))
	}
	var all []Run
	for id := int64(1); id <= 9; id++ {
		all = append(all, byID[id])
	}
	baseline := Campaign{Command: "linerate bench 192.168.88.3 --engine iperf3 -t 10 --repeat 9 --label baseline",
		Summary: explain.Summary{Schema: CampaignSchema, Label: "baseline", Points: []Point{summarize(1, "auto", all, buckets)},
			Explanation: []string{
				fmt.Sprintf("The 9 runs fall into three buckets, %.1f, %.1f and %.1f Gbit/s, with nothing in between: placement, not noise.",
					buckets[0].MedianGbps, buckets[1].MedianGbps, buckets[2].MedianGbps),
				"worst (runs 1, 4, 8): vulture's CPU 7 was 100% busy, 57% of it in softirq: the receiving thread and the NIC's interrupts shared one core.",
				"better (runs 2, 6, 9): the receiver ran on CPU 2 in L3 domain 0-5 while softirq ran on CPU 9 in 6-11; data crossed the CCDs.",
				"best (runs 3, 5, 7): receiver and softirq on different CPUs of L3 domain 6-11.",
				"Pin the NIC's IRQs inside one L3 domain and the application on another core of it: linerate tune --iface enp1s0f0np0 --app-cpus 6 --apply, then bench with -A 6/6.",
			}},
	}
	baseline.Best = &Best{Streams: 1, Placement: "auto", MedianGbps: baseline.Points[0].MedianGbps}

	var pinned []Run
	for k := 0; k < 5; k++ {
		id := int64(10 + k)
		off := []int{0, 10, 20, 30, 5}[k]
		r := makeRun(runSpec{id: id, engine: "native", label: "pinned", tune: "vulture-1", streams: 1,
			rates: seedPinned[off : off+10], retr: retrPinned[off : off+10],
			clientCPUs: []int{6}, serverCPUs: []int{6}, source: "user",
			clientHot: []loadCPU{{6, 92, 8, 0.3}}, serverHot: []loadCPU{{6, 84, 3, 0.2}, {8, 58, 55, 3.2}},
			clientIRQ: irqBefore, serverIRQ: irqAfter, nCPU: 12})
		pinned = append(pinned, r)
	}
	pinnedC := Campaign{Command: "linerate bench 192.168.88.3 -t 10 --repeat 5 -A 6/6 --label pinned",
		Summary: explain.Summary{Schema: CampaignSchema, Label: "pinned", Points: []Point{summarize(1, "6/6", pinned, nil)}},
	}
	pp := pinnedC.Points[0]
	pinnedC.Explanation = []string{fmt.Sprintf("The 5 runs agree within %.1f Gbit/s: one bucket. vulture's CPU 6 ran the receiver, CPU 8 its softirq, both in L3 domain 6-11.", pp.MaxGbps-pp.MinGbps)}
	pinnedC.Best = &Best{Streams: 1, Placement: "6/6", MedianGbps: pinnedC.Points[0].MedianGbps}

	sweep := Campaign{Command: "linerate bench 192.168.88.3 -t 10 --sweep-streams 1,2,4,8 --repeat 3 --label sweep",
		Summary: explain.Summary{Schema: CampaignSchema, Label: "sweep"}}
	var sweepRuns []Run
	id := int64(15)
	for _, n := range []int{1, 2, 4, 8} {
		var runs []Run
		level := map[int]float64{1: 98.65, 2: 98.85, 4: 98.8, 8: 98.55}[n]
		for k := 0; k < 3; k++ {
			rates := make([]float64, 10)
			for i := range rates {
				rates[i] = round1(level + 0.35*wobble(id, int64(i)))
			}
			app := seq(6, 6+min(n, 4)-1)
			var hot []loadCPU
			for _, c := range app {
				hot = append(hot, loadCPU{c, 40 + 52/float64(n), 3, 0.2})
			}
			r := makeRun(runSpec{id: id, engine: "native", label: "sweep", tune: "vulture-1", streams: n, rates: rates,
				retr:       []uint64{uint64(4 * n), 0, uint64(n), 0, 0, 0, uint64(n / 2), 0, 0, 0},
				clientCPUs: app, serverCPUs: app, source: "auto", clientHot: hot,
				serverHot: append(append([]loadCPU{}, hot...), loadCPU{8, 58, 55, 3.2}),
				clientIRQ: irqBefore, serverIRQ: irqAfter, nCPU: 12})
			runs, sweepRuns = append(runs, r), append(sweepRuns, r)
			id++
		}
		sweep.Points = append(sweep.Points, summarize(n, "auto", runs, nil))
	}
	bestSweep := sweep.Points[0]
	for _, p := range sweep.Points {
		if p.MedianGbps > bestSweep.MedianGbps {
			bestSweep = p
		}
	}
	sweep.Explanation = []string{fmt.Sprintf("One stream already reaches %.1f%% of the 99.00 Gbit/s ceiling; more streams add retransmits, not throughput.",
		100*sweep.Points[0].MedianGbps/99.0)}
	sweep.Best = &Best{Streams: bestSweep.Streams, Placement: bestSweep.Placement, MedianGbps: bestSweep.MedianGbps}

	runs := append(append(all, pinned...), sweepRuns...)
	return Dataset{
		Title: "100 GbE lab: crow → vulture, ConnectX-5 at x16",
		Synthetic: "Hosts are test trees modelled on the 100 GbE home lab whose ConnectX-5 trained at x4 (crow after its card was reseated at x16; vulture a copy of it). " +
			"The runs are synthetic: their per-second rates and retransmits are the iperf3 output its owner published, the per-CPU samples are invented to match what its owner saw in htop and /proc/interrupts. " +
			"The core-to-core matrix is the one its owner measured on vulture with core-to-core-latency (means, not medians).",
		Hosts:     []doctor.Report{crow, vulture},
		Runs:      runs,
		Campaigns: []Campaign{baseline, pinnedC, sweep},
		Tunes:     []TuneJournal{vultureTune()},
		C2C:       []c2c.Result{ryzenX4C2C(vulture.CPU.L3Domains)},
		Tools:     []Tool{{"iperf3", "3.16 (cJSON 1.7.15)"}},
		Linerate:  "dev",
	}
}

// vultureTune is the journal of `linerate tune --iface enp1s0f0np0
// --app-cpus 6 --apply` on vulture: what the home lab's owner did by hand
// with mlnx-tools and sysctl, recorded as changes.
func vultureTune() TuneJournal {
	j := TuneJournal{ID: "vulture-1", Host: "vulture", Profile: "throughput", Applied: "2025-01-18T20:12:00Z"}
	add := func(kind, target, before, after, finding, cmd string) {
		j.Changes = append(j.Changes, TuneChange{Kind: kind, Target: target, Before: before, After: after, Finding: finding, Command: cmd})
	}
	for _, k := range []string{"net.core.rmem_max", "net.core.wmem_max"} {
		add("sysctl", k, "212992", "33554432", "sysctl.socket_buffers_small", "sysctl -w "+k+"=33554432")
	}
	add("sysctl", "net.ipv4.tcp_rmem", "4096 131072 6291456", "4096 131072 33554432", "sysctl.socket_buffers_small", "sysctl -w net.ipv4.tcp_rmem='4096 131072 33554432'")
	add("sysctl", "net.ipv4.tcp_wmem", "4096 16384 4194304", "4096 16384 33554432", "sysctl.socket_buffers_small", "sysctl -w net.ipv4.tcp_wmem='4096 16384 33554432'")
	add("governor", "cpu0-11", "powersave", "performance", "cpu.governor_not_performance", "cpupower -c 0-11 frequency-set -g performance")
	add("irqbalance", "/etc/default/irqbalance", "", `IRQBALANCE_ARGS="--banirq=98 --banirq=99 --banirq=109 … --banirq=119"`, "irqbalance.running", "systemctl restart irqbalance")
	for _, q := range []struct{ irq, before, after int }{{98, 10, 7}, {109, 8, 8}, {111, 3, 10}, {113, 7, 7}, {116, 10, 10}, {119, 8, 8}} {
		if q.before == q.after {
			continue
		}
		add("irq", fmt.Sprintf("irq %d", q.irq), strconv.Itoa(q.before), strconv.Itoa(q.after), "irq.spans_l3_domains",
			fmt.Sprintf("echo %d > /proc/irq/%d/smp_affinity_list", q.after, q.irq))
	}
	return j
}

// roceBaseline is the ConnectX-5 RoCE baseline report (the fixture
// "seed002"): doctor of the x8 host and the perftest
// numbers the lab published.
func roceBaseline(t testing.TB) Dataset {
	host := diagnose(t, hosttree.Ryzen7950XCX5x8RoCE())
	bw := func(test string, peak, avg, rate float64) PerftestResult {
		return PerftestResult{Test: test, Host: "mark1amd", Device: "rocep5s0", SizeBytes: 1048576, Iterations: 5000,
			PeakGbps: peak, AverageGbps: avg, MsgRateMpps: rate,
			Server:  test + " --size=1048576 --iters=5000 --report_gbits -d rocep3s0",
			Command: test + " --size=1048576 --iters=5000 --report_gbits -d rocep5s0 10.0.0.1"}
	}
	lat := func(test string, l Latency) PerftestResult {
		return PerftestResult{Test: test, Host: "mark1amd", Device: "rocep5s0", SizeBytes: 8, Iterations: 10000, Latency: &l,
			Server:  test + " --size=8 --iters=10000 -d rocep3s0",
			Command: test + " --size=8 --iters=10000 -d rocep5s0 10.0.0.1"}
	}
	perf := []PerftestResult{
		bw("ib_write_bw", 55.87, 55.86, 0.006660),
		bw("ib_read_bw", 55.97, 55.97, 0.006672),
		bw("ib_send_bw", 55.88, 55.88, 0.006661),
		lat("ib_write_lat", Latency{MinUs: 0.93, MaxUs: 3.52, TypicalUs: 0.99, AvgUs: 1.00, P99Us: 1.15, P999Us: 1.40}),
		lat("ib_send_lat", Latency{MinUs: 0.89, MaxUs: 5.14, TypicalUs: 0.92, AvgUs: 0.92, P99Us: 0.95, P999Us: 1.40}),
	}
	// The warning every test printed on the lab's hosts (in the report).
	for i := range perf {
		perf[i].Warnings = []string{"Conflicting CPU frequency values detected: 5529.980000 != 600.000000. CPU Frequency is not max."}
	}
	return Dataset{
		Title:     "ConnectX-5 performance baseline, Mark 1 lab",
		Synthetic: "The host is a test tree modelled on mark1nvidia of the ConnectX-5 RoCE baseline report; the perftest numbers are those the report published.",
		Hosts:     []doctor.Report{host},
		Perftest:  perf,
		Tools:     []Tool{{"perftest", "39.0-1"}},
		Linerate:  "dev",
	}
}
