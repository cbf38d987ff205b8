package c2c

import (
	"context"
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/hostfs"
)

// needTwoCPUs skips where this process may use one CPU only; CI runs on
// machines with two or more, and there the test must run.
func needTwoCPUs(t *testing.T) []int {
	t.Helper()
	allowed, err := Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if len(allowed) < 2 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: this process may use CPU %v only; the live c2c test needs two", allowed)
		}
		t.Skipf("this process may use CPU %v only; a pair needs two", allowed)
	}
	return allowed
}

// TestMeasureLive measures this machine's first two CPUs for real and
// checks the matrix is complete and sane. The bounds (> 0, < 100 µs) are
// a sanity check, not a timing assertion: a hand-off between two cores
// takes 5-250 ns on real parts and some µs on a busy VM, and nothing here
// depends on how fast this machine is.
func TestMeasureLive(t *testing.T) {
	if testing.Short() {
		// CI: runs the suite without -short, so this runs there.
		t.Skip("pins threads and spins for a moment")
	}
	allowed := needTwoCPUs(t)
	topo, err := ReadTopology(hostfs.Live())
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(topo, allowed, allowed[:2], false)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Measure(context.Background(), topo, p, Options{RoundTrips: 200, Samples: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.MatrixNs) != 2 || len(r.MatrixNs[0]) != 2 || len(r.MinNs) != 2 {
		t.Fatalf("matrix %v", r.MatrixNs)
	}
	if r.MatrixNs[0][0] != nil || r.MatrixNs[1][1] != nil {
		t.Fatal("diagonal not null")
	}
	a, b := r.MatrixNs[0][1], r.MatrixNs[1][0]
	if a == nil || b == nil || *a != *b {
		t.Fatalf("pair not measured or not symmetric: %v %v", a, b)
	}
	if *a <= 0 || *a >= 100_000 || *r.MinNs[0][1] <= 0 || *r.MinNs[0][1] > *a {
		t.Fatalf("one way %.1f ns (min %.1f): outside the sanity bounds", *a, *r.MinNs[0][1])
	}
	if len(r.Clusters) == 0 || r.Verdict == "" || r.Pairs != 1 {
		t.Fatalf("not judged: %+v", r)
	}
	doc, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"schema":"linerate.c2c/v1"`, `"matrix_ns":[[null,`, `"clusters":[[`, `"sysfs_l3_domains":`, `"agrees":`} {
		if !strings.Contains(string(doc), key) {
			t.Errorf("JSON lacks %s: %s", key, doc)
		}
	}
	t.Logf("CPUs %v: %.1f ns one way (min %.1f); %s", p.CPUs, *a, *r.MinNs[0][1], r.Verdict)
}

// TestPingPongAllocations: what a pair allocates (two threads, a channel)
// does not grow with the samples: the timed loop allocates nothing.
// (testing.AllocsPerRun cannot be used: it sets GOMAXPROCS to 1, and two
// spinning threads sharing one P hand the line over once per preemption
// tick, 10 ms, instead of once per 100 ns.)
func TestPingPongAllocations(t *testing.T) {
	allowed := needTwoCPUs(t)
	restore := quiet()
	defer restore()
	allocs := func(samples int) uint64 {
		buf := make([]time.Duration, samples)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := pingPong(allowed[0], allowed[1], 20, buf); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.Mallocs - before.Mallocs
	}
	allocs(2) // the first call may start the runtime's template thread
	small, large := allocs(2), allocs(5000)
	// The fixed part varies by some tens (the runtime makes a new thread,
	// or reuses an idle one); an allocation per sample would add 5000.
	if large > small+500 {
		t.Fatalf("%d allocations for 2 samples, %d for 5000: the loop allocates", small, large)
	}
	t.Logf("%d allocations per pair (2 samples), %d (5000 samples)", small, large)
}

// TestPingPongBadCPU: a CPU the thread cannot be pinned to fails the pair
// with the kernel's reason, and the other thread does not spin forever.
func TestPingPongBadCPU(t *testing.T) {
	allowed := needTwoCPUs(t)
	done := make(chan error, 1)
	go func() { done <- pingPong(allowed[0], maxAffinityCPU+1, 10, make([]time.Duration, 3)) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "CPU 1024") {
			t.Fatalf("error %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("pingPong hung on a CPU it could not pin")
	}
}

func TestOptions(t *testing.T) {
	for _, o := range []Options{{RoundTrips: -1}, {Samples: MaxSamples + 1}, {RoundTrips: MaxRoundTrips + 1}} {
		if err := o.fill(); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	o := Options{}
	if err := o.fill(); err != nil || o.RoundTrips != DefaultRoundTrips || o.Samples != DefaultSamples {
		t.Fatalf("defaults: %+v %v", o, err)
	}
}

func TestStallNote(t *testing.T) {
	// 301 samples × 1000 round trips × 2 hand-offs × 118 ns = 71 ms.
	ideal := 301 * 1000 * 2 * 118.0
	if n := stallNote(38900*time.Millisecond, ideal); !strings.Contains(n, "took 38.9 s where the pairs at their median speed take 0.07 s") {
		t.Errorf("note %q", n)
	}
	if n := stallNote(150*time.Millisecond, ideal); n != "" {
		t.Errorf("a quick run got a note: %q", n)
	}
	if n := stallNote(2*time.Second, 1e9); n != "" {
		t.Errorf("a run within 3× of its ideal got a note: %q", n)
	}
}
