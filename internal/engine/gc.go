package engine

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// A latency run measures microseconds, and a garbage collection stops
// every goroutine for tens of them (and slows the rest while it marks).
// So the collector is off while a ping-pong runs (quietGC), and the
// samples a collection touched anyway are counted (gcWatch): a result
// says how many of its samples a pause could have inflated, not just
// that there were pauses.

// gcHeadroom is how far the process's memory may grow while the collector
// is off before the runtime collects anyway: other goroutines (the
// control connection, telemetry) allocate a little every interval, and a
// run of an hour must not grow without bound.
const gcHeadroom = 256 << 20

var gcQuiet struct {
	sync.Mutex
	depth   int
	percent int
	limit   int64
}

// quietGC turns the garbage collector off until the returned function is
// called, with a soft memory limit gcHeadroom above what the process
// holds now. Calls nest (an agent and a client in one process): the
// collector comes back when the last one ends.
func quietGC() (restore func()) {
	gcQuiet.Lock()
	defer gcQuiet.Unlock()
	if gcQuiet.depth == 0 {
		gcQuiet.limit = debug.SetMemoryLimit(-1) // reads it
		gcQuiet.percent = debug.SetGCPercent(-1)
		debug.SetMemoryLimit(min(gcQuiet.limit, runtimeMemory()+gcHeadroom))
	}
	gcQuiet.depth++
	var once sync.Once
	return func() {
		once.Do(func() {
			gcQuiet.Lock()
			defer gcQuiet.Unlock()
			gcQuiet.depth--
			if gcQuiet.depth == 0 {
				debug.SetGCPercent(gcQuiet.percent)
				debug.SetMemoryLimit(gcQuiet.limit)
			}
		})
	}
}

// runtimeMemory is what the runtime's memory limit counts now.
func runtimeMemory() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return math.MaxInt64 / 2
	}
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

// gcRing is how many samples gcWatch keeps between two looks at the
// collector's count: at most one runtime/metrics read per gcRing samples
// on the hot path.
const gcRing = 4096

// span is one sample's interval, in nanoseconds since the run's start.
type span struct{ from, to int64 }

// gcWatch counts the samples whose interval overlaps a garbage
// collection's stop-the-world pause, without allocating: it keeps the
// intervals of the last two rings of samples and, each time a ring
// fills, asks whether a collection ended since it last looked; if so, it
// reads the pauses' end times and lengths (debug.ReadGCStats, into
// slices allocated up front) and counts the kept samples they overlap.
//
// A cycle's pause is recorded as its total stop-the-world time ending at
// its end (runtime/debug's PauseEnd), so the interval compared is
// [end − pause, end]: the two short pauses of a cycle seen as one, at its
// end. Keeping two rings covers a cycle that ends after the ring holding
// its first pause was checked.
type gcWatch struct {
	t0       time.Time
	cur, old *[gcRing]span
	n        int // samples in cur
	nOld     int
	a, b     [gcRing]span
	cycles   []metrics.Sample
	lastGC   uint64 // collections counted when last looked
	firstGC  uint64
	stats    debug.GCStats
	seenEnd  int64 // the newest pause end already counted, ns since the Unix epoch
	touched  int64
	pauses   int64
	pauseSum time.Duration
}

func newGCWatch(t0 time.Time) *gcWatch {
	g := &gcWatch{t0: t0, cycles: []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}}
	g.cur, g.old = &g.a, &g.b
	g.stats.Pause = make([]time.Duration, 0, 512)
	g.stats.PauseEnd = make([]time.Time, 0, 512)
	g.lastGC = g.numGC()
	g.firstGC = g.lastGC
	g.seenEnd = time.Now().UnixNano()
	return g
}

func (g *gcWatch) numGC() uint64 {
	metrics.Read(g.cycles)
	if g.cycles[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return g.cycles[0].Value.Uint64()
}

// add keeps one sample's interval (nanoseconds since t0).
func (g *gcWatch) add(from, to int64) {
	g.cur[g.n] = span{from, to}
	g.n++
	if g.n == gcRing {
		g.look()
		g.cur, g.old = g.old, g.cur
		g.nOld, g.n = gcRing, 0
	}
}

// look counts the kept samples that the collections ended since the last
// look overlap.
func (g *gcWatch) look() {
	n := g.numGC()
	if n == g.lastGC {
		return
	}
	g.lastGC = n
	debug.ReadGCStats(&g.stats)
	newest := g.seenEnd
	base := g.t0.UnixNano()
	for i, end := range g.stats.PauseEnd {
		e := end.UnixNano()
		if e <= g.seenEnd {
			break // most recent first: the rest were seen
		}
		newest = max(newest, e)
		p := g.stats.Pause[i]
		g.pauses++
		g.pauseSum += p
		from, to := e-int64(p)-base, e-base
		g.touched += overlapping(g.old[:g.nOld], from, to) + overlapping(g.cur[:g.n], from, to)
	}
	g.seenEnd = newest
}

func overlapping(spans []span, from, to int64) int64 {
	var n int64
	for _, s := range spans {
		if s.from <= to && s.to >= from {
			n++
		}
	}
	return n
}

// finish looks one last time and returns the collections that ran since
// the watch began, their total pause, and the samples they touched.
func (g *gcWatch) finish() (cycles int64, pause time.Duration, touched int64) {
	g.look()
	return int64(g.lastGC - g.firstGC), g.pauseSum, g.touched
}
