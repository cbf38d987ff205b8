package c2c

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/osthread"
)

// line holds the ping-pong word on a cache line of its own: 128 bytes of
// padding on each side keep every other variable off its line and off the
// neighbour line that Intel's adjacent-line prefetcher fetches with it.
type line struct {
	_ [128]byte
	v atomic.Uint32
	_ [128]byte
}

// maxAffinityCPU is the highest CPU unix.CPUSet can name.
const maxAffinityCPU = 1023

// pin binds the calling OS thread to cpu.
func pin(cpu int) error {
	if cpu < 0 || cpu > maxAffinityCPU {
		return fmt.Errorf("CPU %d: beyond the %d CPUs an affinity mask here can name", cpu, maxAffinityCPU+1)
	}
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pinning a thread to CPU %d: %w", cpu, err)
	}
	return nil
}

var errPeerFailed = errors.New("the other thread could not start")

// pingPong measures the hand-off between CPUs a and b: a thread pinned to
// a and one pinned to b take turns flipping one word with compare-and-swap
// (a: 0→1, b: 1→0), as core-to-core-latency's "CAS" bench does. One
// sample is roundTrips round trips timed on a's thread; the first sample
// warms the line and the threads and is discarded, then len(out) samples
// are written to out, each the time of roundTrips round trips.
//
// Each thread is locked to an OS thread that osthread throws away after,
// so their affinity never reaches other goroutines. The loop allocates
// nothing; the caller turns the GC off around it.
func pingPong(a, b, roundTrips int, out []time.Duration) error {
	var l line
	var ready atomic.Int32
	var abort atomic.Bool
	total := (len(out) + 1) * roundTrips // b's flips: one per round trip
	start := func(cpu int) error {
		if err := pin(cpu); err != nil {
			abort.Store(true)
			return err
		}
		ready.Add(1)
		for ready.Load() < 2 { // both pinned before the first flip
			if abort.Load() {
				return errPeerFailed
			}
		}
		return nil
	}
	pong := make(chan error, 1)
	go func() {
		pong <- osthread.Throwaway(func() error {
			if err := start(b); err != nil {
				return err
			}
			for range total {
				for !l.v.CompareAndSwap(1, 0) {
				}
			}
			return nil
		})
	}()
	pingErr := osthread.Throwaway(func() error {
		if err := start(a); err != nil {
			return err
		}
		for s := -1; s < len(out); s++ {
			t0 := time.Now()
			for range roundTrips {
				for !l.v.CompareAndSwap(0, 1) {
				}
			}
			for l.v.Load() != 0 { // the last answer closes the last round trip
			}
			if s >= 0 {
				out[s] = time.Since(t0)
			}
		}
		return nil
	})
	pongErr := <-pong
	for _, err := range []error{pingErr, pongErr} {
		if err != nil && !errors.Is(err, errPeerFailed) {
			return err
		}
	}
	return errors.Join(pingErr, pongErr)
}

// quiet holds the runtime still while pairs are measured: the GC off (a
// collection would stop both threads mid-sample) and at least three Ps, so
// that the two spinning threads each keep one and the rest of the program
// (the main goroutine, timers) has a third. It returns what restores both.
func quiet() (restore func()) {
	runtime.GC() // start from a clean heap: nothing to collect for a while
	gc := debug.SetGCPercent(-1)
	procs := runtime.GOMAXPROCS(0)
	if procs < 3 {
		runtime.GOMAXPROCS(3)
	}
	return func() {
		runtime.GOMAXPROCS(procs)
		debug.SetGCPercent(gc)
	}
}

// pairStats are one pair's one-way times in ns: the median and the
// minimum of its samples.
type pairStats struct {
	median, min float64
}

// measure ping-pongs one pair into buf (reused across pairs) and returns
// its one-way times: a sample of roundTrips round trips is 2·roundTrips
// hand-offs. Sorting buf happens after the timed loop.
func measure(a, b, roundTrips int, buf []time.Duration) (pairStats, error) {
	if err := pingPong(a, b, roundTrips, buf); err != nil {
		return pairStats{}, err
	}
	slices.Sort(buf)
	n := len(buf)
	med := float64(buf[n/2])
	if n%2 == 0 {
		med = float64(buf[n/2-1]+buf[n/2]) / 2
	}
	hops := float64(2 * roundTrips)
	return pairStats{median: med / hops, min: float64(buf[0]) / hops}, nil
}
