package engine

import (
	"testing"

	"github.com/linerate/linerate/internal/result"
)

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
