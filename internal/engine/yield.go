package engine

import (
	"runtime"
	"time"
)

// yielder lets a hot loop locked to its thread (a stream, the ping-pong,
// the echo) pass through the Go scheduler every yieldEvery, at a moment
// the loop chooses. A goroutine that only makes system calls never does,
// so after 10 ms the runtime's monitor thread (sysmon) preempts it or
// takes its P away, at a moment of the runtime's choosing (for the
// ping-pong, often inside a timed round trip), and having found work,
// keeps polling every 20 µs: about 10% of another CPU, on a machine whose
// CPUs are the measurement. A yield costs two thread switches, a few µs
// per yieldEvery (under 10 ms, the runtime's limit).
type yielder struct {
	n    uint32
	last time.Time
}

const yieldEvery = 5 * time.Millisecond

func (y *yielder) tick() {
	y.n++
	if y.n%16 != 0 {
		return
	}
	if now := time.Now(); now.Sub(y.last) >= yieldEvery {
		y.last = now
		runtime.Gosched()
	}
}
