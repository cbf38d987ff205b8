package engine

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/result"
)

// TestRR runs 10 rr flows on 2 threads each end: every flow completes
// transactions in every measured interval, the client's latency is
// ordered and counted, and the agent answered at least every transaction
// the client completed.
func TestRR(t *testing.T) {
	for _, depth := range []int{1, 4} {
		p := short(Params{Mode: result.RR, Streams: 10, Threads: 2, Size: 64, Depth: depth})
		client, agent := sides(t, p)
		cs, as := drive(t, client, agent)
		checkTxns(t, cs, as)
		count, lat, _ := client.Transactions()
		if count == 0 || lat.Samples == 0 {
			t.Fatalf("depth %d: %d transactions, %d latency samples", depth, count, lat.Samples)
		}
		checkOrdered(t, lat.RTTUs)
		for i := range client.streams {
			if c, a := client.streams[i].txns.Load(), agent.streams[i].txns.Load(); c == 0 || a < c {
				t.Errorf("depth %d: flow %d: client completed %d, agent answered %d", depth, i+1, c, a)
			}
		}
		t.Logf("depth %d: %d transactions in the window, p50 %.1f µs", depth, count, *lat.RTTUs.P50)
	}
}

// checkTxns: every measured interval's flows completed transactions, the
// interval's count is its flows' sum, and the client's intervals have
// latency samples.
func checkTxns(t *testing.T, cs, as []Sample) {
	t.Helper()
	for k, smp := range cs {
		var sum uint64
		for _, ss := range smp.Streams {
			sum += ss.Transactions
			if !smp.Omitted && ss.Transactions == 0 {
				t.Errorf("interval %d: flow %d completed nothing", k, ss.ID)
			}
		}
		if smp.Transactions == nil || smp.Transactions.Count != sum {
			t.Fatalf("interval %d: transactions %+v, flows sum to %d", k, smp.Transactions, sum)
		}
		if !smp.Omitted && (smp.Transactions.Samples == 0 || smp.Transactions.RTT == nil || smp.Transactions.RTT.P50 == nil) {
			t.Errorf("interval %d: no latency: %+v", k, smp.Transactions)
		}
	}
	for k, smp := range as {
		if smp.Transactions == nil || smp.Transactions.RTT != nil {
			t.Errorf("agent interval %d: %+v; want a count and no latency", k, smp.Transactions)
		}
	}
}

// TestCRR makes a connection per transaction over 4 flows on 2 threads:
// every flow completes transactions, each answered once, none failed.
func TestCRR(t *testing.T) {
	p := short(Params{Mode: result.CRR, Streams: 4, Threads: 2, Size: 32})
	client, agent := sides(t, p)
	cs, as := drive(t, client, agent)
	checkTxns(t, cs, as)
	count, lat, errs := client.Transactions()
	if count == 0 || lat.Samples == 0 || errs != 0 {
		t.Fatalf("%d transactions, %d latency samples, %d connect errors", count, lat.Samples, errs)
	}
	checkOrdered(t, lat.RTTUs)
	for i := range client.streams {
		if c, a := client.streams[i].txns.Load(), agent.streams[i].txns.Load(); c == 0 || a < c || agent.streams[i].seq.Load() < uint32(c) {
			t.Errorf("flow %d: client completed %d, agent answered %d over %d connections", i+1, c, a, agent.streams[i].seq.Load())
		}
	}
	t.Logf("%d transactions in the window, p50 %.1f µs", count, *lat.RTTUs.P50)
}

// TestCRRRefuses: the agent's crr threads answer nothing to a connection
// whose proof does not hold, or that replays one the flow has used, and
// count nothing for it.
func TestCRRRefuses(t *testing.T) {
	p := short(Params{Mode: result.CRR, Streams: 1, Threads: 1, Size: 8})
	p.Duration = 5 * time.Second
	_, agent := sides(t, p)
	agent.streams[0].seq.Store(5) // the flow has made 5 connections
	sa, err := unix.Getsockname(agent.crr.Listeners[0])
	if err != nil {
		t.Fatal(err)
	}
	port := sa.(*unix.SockaddrInet4).Port
	agent.Begin()
	defer func() { agent.Shutdown(); agent.Finish(time.Second) }()
	for _, c := range []struct {
		name  string
		proof func([]byte)
	}{
		{"wrong magic", func(b []byte) { testAdmission{}.Sign(b, 0, 6); b[0] ^= 1 }},
		{"replayed", func(b []byte) { testAdmission{}.Sign(b, 0, 5) }},
		{"no such flow", func(b []byte) { testAdmission{}.Sign(b, 7, 9) }},
	} {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Connect(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: port}); err != nil {
			t.Fatal(err)
		}
		msg := make([]byte, 12+8)
		c.proof(msg)
		writeAll(fd, msg)
		tv := unix.NsecToTimeval(int64(2 * time.Second))
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		n, err := unix.Read(fd, make([]byte, 8))
		unix.Close(fd)
		if n > 0 {
			t.Errorf("%s: answered %d bytes", c.name, n)
		}
		if err != nil && err != unix.ECONNRESET {
			t.Errorf("%s: %v; want the connection closed", c.name, err)
		}
	}
	if n := agent.streams[0].txns.Load(); n != 0 {
		t.Errorf("%d transactions counted", n)
	}
}

// TestTxnAllocs: a round of a transaction client's loop allocates
// nothing, rr and crr (the agent's rounds run meanwhile and count too:
// AllocsPerRun reads the process's allocations).
func TestTxnAllocs(t *testing.T) {
	for _, mode := range []result.Mode{result.RR, result.CRR} {
		p := short(Params{Mode: mode, Streams: 4, Threads: 1, Size: 16, Depth: 1})
		p.Duration = time.Hour
		client, agent := sides(t, p)
		agent.Begin()
		client.t0 = time.Now()
		th := &txnThread{p: client.p, client: true, all: client.streams, t0: client.t0, halt: &client.halt,
			abort: &client.abort, errs: &client.crrErrs, crr: client.crr, ln: -1, w: &worker{lat: &recSwap{}}}
		for j, st := range client.streams {
			th.flows = append(th.flows, &txnFlow{st: st, idx: j, ti: int32(j), fd: st.FD, ts: make([]int64, 1)})
		}
		if err := th.prepare(); err != nil {
			t.Fatal(err)
		}
		for range 100 { // connections and buffers settle
			th.round()
		}
		allocs := testing.AllocsPerRun(2000, func() { th.round() })
		var done uint64
		for _, f := range th.flows {
			done += f.done
		}
		th.abort.Store(true)
		th.round()
		th.e.close()
		agent.Shutdown()
		agent.Finish(2 * time.Second)
		if allocs != 0 {
			t.Errorf("%s: %.2f allocations per round, want 0", mode, allocs)
		}
		if done < 1000 {
			t.Errorf("%s: only %d transactions in 2100 rounds", mode, done)
		}
	}
}

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
