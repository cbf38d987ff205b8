package engine

import (
	"runtime"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/result"
)

// BenchmarkRR measures rr transactions over loopback in one process: 10
// flows on 2 threads each end, thread k of both ends on the k-th allowed
// CPU (as the agent places a transaction test on one machine), 1-byte
// requests and responses; b.N transactions. Compare with neper's tcp_rr
// -F 10 -T 2 on loopback (scripts/bench-neper.sh compares them in a lab).
func BenchmarkRR(b *testing.B) { benchTxn(b, result.RR, 10, 2) }

// BenchmarkCRR is BenchmarkRR with a connection per transaction, 1 flow
// on 1 thread (neper's tcp_crr defaults).
func BenchmarkCRR(b *testing.B) { benchTxn(b, result.CRR, 1, 1) }

func benchTxn(b *testing.B, mode result.Mode, flows, threads int) {
	cpus, err := AllowedCPUs()
	if err != nil {
		b.Fatal(err)
	}
	p := Params{Mode: mode, Streams: flows, Threads: threads, Size: 1, Direction: result.Send,
		Duration: time.Hour, Interval: time.Hour}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	client, agent := sides(b, p)
	for i, st := range client.streams {
		st.CPU = cpus[Thread(i, threads)%len(cpus)]
		agent.streams[i].CPU = st.CPU
	}
	agent.Begin()
	b.ResetTimer()
	start := time.Now()
	client.Begin()
	count := func() (n uint64) {
		for _, st := range client.streams {
			n += st.txns.Load()
		}
		return n
	}
	for count() < uint64(b.N) {
		time.Sleep(20 * time.Millisecond)
	}
	got, secs := count(), time.Since(start).Seconds()
	b.StopTimer()
	b.ReportMetric(float64(got)/secs, "tx/s")
	client.Halt()
	agent.Halt()
	client.Finish(2 * time.Second)
	agent.Shutdown()
	agent.Finish(2 * time.Second)
}
