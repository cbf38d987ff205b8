package engine

import (
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/result"
)

// BenchmarkStream measures the hot loop: one stream over loopback, the
// sender pinned to the first allowed CPU and the receiver to the second
// (as `-A 0,1`), one write (sendSize) per op. Compare with
// scripts/bench-engine.sh, which runs iperf3 on the same path.
func BenchmarkStream(b *testing.B) {
	for _, m := range []result.ZeroCopy{result.NoZeroCopy, result.Sendfile, result.MsgZeroCopy} {
		name := string(m)
		if m == result.NoZeroCopy {
			name = "copy"
		}
		b.Run(name, func(b *testing.B) { benchStream(b, m) })
	}
}

func benchStream(b *testing.B, m result.ZeroCopy) {
	cpus, err := AllowedCPUs()
	if err != nil {
		b.Fatal(err)
	}
	txCPU, rxCPU := cpus[0], cpus[len(cpus)-1]
	tx, rx := streamPair(b, m == result.MsgZeroCopy)
	tx.CPU, rx.CPU = txCPU, rxCPU
	snd, err := newSender(m)
	if err != nil {
		b.Fatal(err)
	}
	if z, ok := snd.(*sendfileSender); ok {
		defer z.close()
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	reserveProcs(2)
	var wg sync.WaitGroup
	var stop atomic.Bool
	rx.run(&wg, snd, &stop, "bench-rx")
	b.SetBytes(sendSize)
	b.ResetTimer()
	target := uint64(b.N) * sendSize
	start := time.Now()
	tx.run(&wg, snd, &stop, "bench-tx")
	// Poll rarely: each wake-up runs a thread on one of the CPUs being
	// measured. The rate is computed from what moved, not from b.N.
	for rx.bytes.Load() < target {
		time.Sleep(50 * time.Millisecond)
	}
	got, secs := rx.bytes.Load(), time.Since(start).Seconds()
	b.StopTimer()
	b.ReportMetric(float64(got)*8/secs/1e9, "Gbit/s")
	stop.Store(true)
	wg.Wait()
	CloseFD(tx.FD)
	CloseFD(rx.FD)
	if tx.err != nil || rx.err != nil {
		b.Fatal(tx.err, rx.err)
	}
	if c := tx.zc.copied.Load(); c > 0 {
		b.ReportMetric(float64(c)/float64(tx.zc.completions.Load()), "copied/send")
	}
}

// streamPair connects two detached sockets over loopback.
func streamPair(tb testing.TB, zerocopy bool) (tx, rx *Stream) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	d := net.Dialer{Control: SockOpts{ZeroCopy: zerocopy}.Control}
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		tb.Fatal(err)
	}
	cfd, err := Detach(c)
	if err != nil {
		tb.Fatal(err)
	}
	sfd, err := Detach(s)
	if err != nil {
		tb.Fatal(err)
	}
	return &Stream{ID: 1, Send: true, FD: cfd, CPU: -1}, &Stream{ID: 1, FD: sfd, CPU: -1}
}
