package engine

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/result"
)

// sides connects p's flows over loopback and returns both ends' Sides,
// the client's and the agent's, as package agent would make them: the
// client's streams send where p.ClientSends says, the agent's the other
// way; flows on thread k go to CPU -1 (unpinned).
func sides(t testing.TB, p Params) (client, agent *Side) {
	t.Helper()
	var cs, as []*Stream
	n := p.Connections()
	for i := range n {
		var cfd, afd = -1, -1
		if p.Mode != result.CRR {
			c, a := streamPair(t, false)
			cfd, afd = c.FD, a.FD
		}
		send := p.ClientSends(i)
		cs = append(cs, &Stream{ID: i + 1, Send: send, CPU: -1, FD: cfd})
		as = append(as, &Stream{ID: i + 1, Send: !send, CPU: -1, FD: afd})
	}
	var err error
	if client, err = NewSide(p, cs, nil, "tc"); err != nil {
		t.Fatal(err)
	}
	if agent, err = NewSide(p, as, nil, "ta"); err != nil {
		t.Fatal(err)
	}
	if p.Mode == result.CRR {
		lns, port, err := ListenCRR(netip.MustParseAddr("127.0.0.1"), agent.p.Threads)
		if err != nil {
			t.Fatal(err)
		}
		adm := func() Admission { return &testAdmission{} }
		agent.SetCRR(CRR{Listeners: lns, Client: netip.MustParseAddr("127.0.0.1"), NewAdmission: adm})
		client.SetCRR(CRR{Peer: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)), NewAdmission: adm})
	}
	t.Cleanup(func() { client.Close(); agent.Close() })
	return client, agent
}

// testAdmission is a proof without a key: the flow and the connection's
// number, and a magic word. Package agent's proof is keyed.
type testAdmission struct{}

func (testAdmission) Len() int { return 12 }
func (testAdmission) Sign(dst []byte, flow int, seq uint32) {
	binary.LittleEndian.PutUint32(dst, 0x4c524352)
	binary.LittleEndian.PutUint32(dst[4:], uint32(flow))
	binary.LittleEndian.PutUint32(dst[8:], seq)
}
func (testAdmission) Verify(b []byte) (int, uint32, bool) {
	return int(binary.LittleEndian.Uint32(b[4:])), binary.LittleEndian.Uint32(b[8:]), binary.LittleEndian.Uint32(b) == 0x4c524352
}

// drive runs both ends through their schedule as the agent protocol
// does: the client samples at its boundaries, the agent at the same
// moments, then both stop and drain.
func drive(t *testing.T, client, agent *Side) (cs, as []Sample) {
	t.Helper()
	agent.Begin()
	client.Begin()
	for !client.Done() {
		due, _ := client.Due()
		time.Sleep(time.Until(due))
		cs = append(cs, client.Sample())
		if client.Done() {
			client.Halt()
			agent.EndNow()
		}
		as = append(as, agent.Sample())
	}
	agent.Halt()
	client.Finish(5 * time.Second)
	agent.Finish(5 * time.Second)
	for _, e := range append(client.Errors(), agent.Errors()...) {
		t.Errorf("thread error: %s", e)
	}
	return cs, as
}

func short(p Params) Params {
	p.Duration, p.Omit, p.Interval = 600*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	if p.Direction == "" {
		p.Direction = result.Send
	}
	return p
}

// TestPollStreams carries several streams each way on two threads: every
// flow moves bytes in every measured interval, the sampler's per-flow
// counts sum to what the receivers counted, the senders' intervals carry
// TCP's account and the receivers' theirs.
func TestPollStreams(t *testing.T) {
	p := short(Params{Streams: 3, Direction: result.Bidir, Threads: 2})
	client, agent := sides(t, p)
	if client.p.OwnThreads() {
		t.Fatal("2 threads for 6 connections: the flows should share them")
	}
	cs, as := drive(t, client, agent)
	if len(cs) != 4 || len(as) != 4 {
		t.Fatalf("%d and %d samples; want 4 (1 warm-up, 3 measured)", len(cs), len(as))
	}
	for k, smp := range cs {
		for i, ss := range smp.Streams {
			if !smp.Omitted && ss.Bytes == 0 {
				t.Errorf("interval %d: flow %d moved nothing", k, ss.ID)
			}
			send := p.ClientSends(i)
			if send && (ss.TCP == nil || ss.TCP.BusyUs == 0) {
				t.Errorf("interval %d: sending flow %d has no TCP account (or was never busy): %+v", k, ss.ID, ss.TCP)
			}
			if !send && (ss.Rcv == nil || ss.Rcv.Space == nil || ss.TCP != nil) {
				t.Errorf("interval %d: receiving flow %d: rcv %+v, tcp %+v", k, ss.ID, ss.Rcv, ss.TCP)
			}
		}
	}
	checkTotals(t, client, agent)
}

// checkTotals: every byte a sender wrote reached its receiver once both
// ends drained, flow by flow.
func checkTotals(t *testing.T, client, agent *Side) {
	t.Helper()
	for i := range client.streams {
		c, a := client.streams[i], agent.streams[i]
		snd, rcv := c, a
		if !c.Send {
			snd, rcv = a, c
		}
		if snd.bytes.Load() == 0 || snd.bytes.Load() != rcv.bytes.Load() {
			t.Errorf("flow %d: %d bytes sent, %d received", c.ID, snd.bytes.Load(), rcv.bytes.Load())
		}
	}
}

// TestPollStreamsSkipCopy receives with MSG_TRUNC and with TCP receive
// zerocopy on shared threads, and on a thread per stream: the bytes all
// arrive, counted, and the zerocopy receiver says how it took them.
func TestPollStreamsSkipCopy(t *testing.T) {
	for _, m := range []result.SkipRxCopy{result.MsgTrunc, result.ZerocopyReceive} {
		for _, threads := range []int{1, 2} {
			p := short(Params{Streams: 2, Threads: threads, SkipRxCopy: m})
			client, agent := sides(t, p)
			drive(t, client, agent)
			checkTotals(t, client, agent)
			method, note, mapped, copied, cpu := agent.RxCopy()
			t.Logf("%s, %d threads: method %q (%s), %d mapped, %d copied, %.3f s receiver CPU", m, threads, method, note, mapped, copied, cpu)
			if method != m {
				t.Errorf("%s: the receivers did %q: %s", m, method, note)
			}
			if m == result.ZerocopyReceive && mapped+copied != agent.streams[0].bytes.Load()+agent.streams[1].bytes.Load() {
				t.Errorf("zerocopy: %d mapped + %d copied, %d received", mapped, copied, agent.streams[0].bytes.Load()+agent.streams[1].bytes.Load())
			}
			if cpu <= 0 {
				t.Errorf("no receiver thread CPU time measured")
			}
		}
	}
}

// TestTruncSupport: this kernel skips the copy with MSG_TRUNC (Linux has
// since long before the engine's oldest supported kernel); the probe
// would say otherwise.
func TestTruncSupport(t *testing.T) {
	ok, err := TruncSupport()
	if err != nil || !ok {
		t.Fatalf("MSG_TRUNC on TCP: %v, %v", ok, err)
	}
	if m, note := RxMethod(result.MsgTrunc); m != result.MsgTrunc || note != "" {
		t.Errorf("RxMethod(msg_trunc) = %q, %q", m, note)
	}
}

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
