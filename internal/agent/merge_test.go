package agent

import (
	"testing"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/result"
)

// TestTCPAccount: every measured interval of a native stream run carries
// TCP's account of each stream, from its sender's socket (busy time,
// cwnd) with its receiver's fields (rcv_space, rcv_wnd), whichever end
// sends; the limited times are parts of the busy time.
func TestTCPAccount(t *testing.T) {
	for _, dir := range []result.Direction{result.Send, result.Receive} {
		res := run(t, Config{Test: Test{Params: engine.Params{Streams: 2, Direction: dir}}})
		for k, iv := range res.Intervals {
			for _, st := range iv.Streams {
				tcp := st.TCP
				if tcp == nil {
					t.Fatalf("%s: interval %d stream %d: no tcp block", dir, k, st.ID)
				}
				if tcp.BusyUs == 0 || tcp.SndCwnd == 0 || tcp.RwndLimitedUs+tcp.SndbufLimitedUs > tcp.BusyUs {
					t.Errorf("%s: interval %d stream %d: %+v", dir, k, st.ID, *tcp)
				}
				if tcp.RcvSpace == nil || tcp.RcvWnd == nil || tcp.RcvRTTUs == nil {
					t.Errorf("%s: interval %d stream %d: no receiver fields (the agent's sample came?)", dir, k, st.ID)
				}
				if tcp.BusyUs > uint64((iv.End-iv.Start)*1e6)+20_000 {
					t.Errorf("%s: interval %d of %.3f s: busy %d µs", dir, k, iv.End-iv.Start, tcp.BusyUs)
				}
			}
		}
		if rc := res.End.RxCopy; rc == nil || rc.Method != result.RxCopy || rc.ReceiverThreadCPUSeconds <= 0 || rc.ReceiverCPUSecondsPerGB <= 0 {
			t.Errorf("%s: end.rx_copy %+v", dir, rc)
		}
	}
}

// TestNoTCPInfo: a run asked not to read TCP_INFO has no tcp blocks and
// still counts its bytes.
func TestNoTCPInfo(t *testing.T) {
	res := run(t, Config{Test: Test{Params: engine.Params{Streams: 1, NoTCPInfo: true}}})
	for k, iv := range res.Intervals {
		if iv.Streams[0].TCP != nil || iv.Streams[0].RTTus != 0 {
			t.Errorf("interval %d: %+v", k, iv.Streams[0])
		}
	}
	if res.End.SumReceived.Bytes == 0 {
		t.Error("nothing received")
	}
}

// TestTransactions runs rr and crr through the agent: end.transactions
// counts the client's window, its latency is ordered, the agent answered
// at least as many as the client completed (over its own window, which
// ends later), both ends' CPU per transaction is known, and every
// interval says its transactions.
func TestTransactions(t *testing.T) {
	for _, mode := range []result.Mode{result.RR, result.CRR} {
		t.Run(string(mode), func(t *testing.T) {
			res := run(t, Config{Test: Test{Params: engine.Params{Mode: mode, Streams: 6, Threads: 2, Size: 100, Omit: 250 * time.Millisecond}}})
			tx := res.End.Transactions
			if tx == nil {
				t.Fatalf("no end.transactions: %+v", res.End)
			}
			t.Logf("%s: %d transactions, %.0f/s, p50 %v µs, server %d, CPU µs/transaction %+v, connect errors %d", mode, tx.Count, tx.PerSecond, ptrVal(tx.RTTUs.P50), tx.ServerCount, tx.CPUUsPerTransaction, tx.ConnectErrors)
			if tx.Count == 0 || tx.Samples == 0 || tx.RTTUs.P50 == nil || tx.RTTUs.Min == nil || *tx.RTTUs.Min > *tx.RTTUs.P50 {
				t.Errorf("%+v", tx)
			}
			if tx.Mode != mode || tx.Flows != 6 || tx.Threads != 2 || tx.Size != 100 || tx.Depth != 1 {
				t.Errorf("shape %+v", tx)
			}
			if tx.CPUUsPerTransaction.Client <= 0 || tx.CPUUsPerTransaction.Server <= 0 {
				t.Errorf("CPU per transaction %+v", tx.CPUUsPerTransaction)
			}
			if mode == result.CRR && tx.ConnectErrors != 0 {
				t.Errorf("%d connections failed on loopback", tx.ConnectErrors)
			}
			var sum uint64
			for k, iv := range res.Intervals {
				if iv.Transactions == nil {
					t.Fatalf("interval %d: no transactions", k)
				}
				var flows uint64
				for _, st := range iv.Streams {
					flows += st.Transactions
				}
				if flows != iv.Transactions.Count {
					t.Errorf("interval %d: flows sum to %d, interval says %d", k, flows, iv.Transactions.Count)
				}
				if !iv.Omitted {
					sum += iv.Transactions.Count
				}
			}
			if sum != tx.Count {
				t.Errorf("measured intervals sum to %d, end.transactions.count %d", sum, tx.Count)
			}
			if res.Start.Mode != mode || res.Start.Size != 100 || res.Start.Depth != 1 {
				t.Errorf("start %+v", res.Start)
			}
		})
	}
}

func ptrVal(p *float64) float64 {
	if p == nil {
		return -1
	}
	return *p
}

// TestSkipRxCopy runs a stream with --skip-rx-copy both ways through the
// agent: end.rx_copy says what the receivers did, and the bytes arrived.
func TestSkipRxCopy(t *testing.T) {
	for _, m := range []result.SkipRxCopy{result.MsgTrunc, result.ZerocopyReceive} {
		res := run(t, Config{Test: Test{Params: engine.Params{Streams: 1, SkipRxCopy: m}}})
		rc := res.End.RxCopy
		if rc == nil || rc.Asked != m || rc.Method != m || rc.ReceiverThreadCPUSeconds <= 0 {
			t.Errorf("%s: end.rx_copy %+v", m, rc)
			continue
		}
		if m == result.ZerocopyReceive && rc.MappedBytes+rc.CopiedBytes < res.End.SumReceived.Bytes {
			t.Errorf("%s: %d mapped + %d copied, %d received in the window", m, rc.MappedBytes, rc.CopiedBytes, res.End.SumReceived.Bytes)
		}
		if res.End.SumReceived.Bytes == 0 || res.Start.SkipRxCopy != m {
			t.Errorf("%s: %d bytes received, start.skip_rx_copy %q", m, res.End.SumReceived.Bytes, res.Start.SkipRxCopy)
		}
		t.Logf("%s: %+v", m, *rc)
	}
}
