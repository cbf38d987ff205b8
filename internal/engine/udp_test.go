package engine

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"time"
)

// TestUDPStream sends a paced UDP stream over loopback and checks what
// the receiver counted: every datagram of the window arrived (loopback
// at 20 Mbit/s drops none), the warm-up was counted apart, nothing out
// of order, and the sender's window count is the receiver's.
func TestUDPStream(t *testing.T) {
	for _, m := range []UDPMethod{UDPWrite, UDPSendmmsg, UDPGSO} {
		t.Run(string(m), func(t *testing.T) {
			tx, rx := udpPair(t)
			r, err := NewUDPReceiver(rx, -1, 1000)
			if err != nil {
				t.Fatal(err)
			}
			r.Start("test-udp-rx")
			s, err := NewUDPSender(tx, -1, UDPConfig{Len: 1000, Rate: 20e6, Omit: 100 * time.Millisecond, Duration: 400 * time.Millisecond, Method: m})
			if err != nil {
				t.Fatal(err)
			}
			s.Start("test-udp-tx")
			if err := s.Wait(); err != nil {
				t.Fatal(err)
			}
			r.Halt()
			if err := r.Wait(); err != nil {
				t.Fatal(err)
			}
			all, meas, measBytes := s.Sent()
			warm, got := r.Stats()
			t.Logf("%s (used %s): sent %d (%d in the window), received warm %+v, window %+v, window %s", m, s.Method(), all, meas, warm, got, s.Window())
			// 20 Mbit/s of 1000-byte datagrams for 0.4 s: 1000 datagrams.
			if meas == 0 || meas > 1001 {
				t.Errorf("%d datagrams sent in the window: want at most 1001 (pacing never runs ahead)", meas)
			}
			if got.Packets != meas || got.Bytes != measBytes || got.Lost != 0 || got.OutOfOrder != 0 {
				t.Errorf("received %+v of %d datagrams (%d bytes) sent: want all, none lost", got, meas, measBytes)
			}
			if warm.Packets == 0 || warm.Packets+got.Packets != all {
				t.Errorf("warm-up %d + window %d datagrams, sent %d", warm.Packets, got.Packets, all)
			}
			if got.JitterMS < 0 {
				t.Errorf("jitter %g ms", got.JitterMS)
			}
		})
	}
}

// TestUDPLossCount: the receiver counts gaps in the sequence as lost
// and a late datagram takes one back, as iperf3 does.
func TestUDPLossCount(t *testing.T) {
	var p phaseStats
	for _, seq := range []uint64{1, 2, 5, 3, 6, 7, 10} {
		p.add(seq, 100, 0)
	}
	// Missing 3, 4, 8, 9 at first (4), 3 came late (−1): 3 lost, 1 out of order.
	if p.lost != 3 || p.ooo != 1 || p.packets != 7 || p.bytes != 700 {
		t.Errorf("lost %d, out of order %d, packets %d, bytes %d; want 3, 1, 7, 700", p.lost, p.ooo, p.packets, p.bytes)
	}
	var q phaseStats
	q.add(4, 10, 0) // the first datagram seen is the 4th: 3 lost before it
	if q.lost != 3 {
		t.Errorf("first seen 4: lost %d, want 3", q.lost)
	}
}

// TestUDPJitter: transit times alternating by 1 ms converge on iperf3's
// jitter estimate (J += (|D| − J)/16) toward 1 ms.
func TestUDPJitter(t *testing.T) {
	var p phaseStats
	for i := range uint64(200) {
		p.add(i+1, 100, float64(i%2)*1e6)
	}
	if ms := p.jitter / 1e6; ms < 0.99 || ms > 1.0 {
		t.Errorf("jitter %.4f ms, want ~1 ms", ms)
	}
}

// TestUDPRateBeyondPath: a target far beyond what loopback carries ends
// on time and sends what it can (the achieved rate is what is reported).
func TestUDPRateBeyondPath(t *testing.T) {
	tx, rx := udpPair(t)
	r, _ := NewUDPReceiver(rx, -1, 1400)
	r.Start("test-udp-rx")
	s, err := NewUDPSender(tx, -1, UDPConfig{Len: 1400, Rate: 1e15, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s.Start("test-udp-tx")
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	r.Halt()
	r.Wait()
	_, meas, _ := s.Sent()
	_, got := r.Stats()
	t.Logf("sent %d in %s, received %d, lost %d", meas, took, got.Packets, got.Lost)
	if took > 3*time.Second || meas == 0 || got.Packets == 0 {
		t.Errorf("took %s, sent %d, received %d", took, meas, got.Packets)
	}
}

// TestUDPAllocs: sending and receiving a burst allocate nothing, paced
// (stamps from the schedule) or not (stamps spread over the batch).
func TestUDPAllocs(t *testing.T) {
	for _, rate := range []float64{0, 1e9} {
		t.Run(fmt.Sprint("rate=", rate), func(t *testing.T) {
			tx, rx := udpPair(t)
			s, _ := NewUDPSender(tx, -1, UDPConfig{Len: 200, Rate: rate, Duration: time.Hour, Method: UDPSendmmsg})
			r, _ := NewUDPReceiver(rx, -1, 200)
			sl, rl := s.newLoop(), r.newLoop()
			allocs := testing.AllocsPerRun(500, func() {
				if _, err := sl.burst(); err != nil {
					t.Fatal(err)
				}
				if _, err := rl.batch(); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%.2f allocations per burst, want 0", allocs)
			}
			if _, got := r.Stats(); got.Packets+r.warm.packets.Load() == 0 {
				t.Error("nothing received")
			}
		})
	}
}

// TestUDPBatchStamps: the datagrams of one batch (one sendmmsg, or one
// GSO buffer) each carry their own send time, the pacer's schedule, and
// the receiver's RFC 3550 jitter is computed datagram by datagram. A
// batch that leaves 10 ms late arrives at once (a GSO buffer even with
// one receive timestamp), so its transit times step by the datagram's
// time at the rate (100 µs here) and the jitter climbs toward it; with
// one stamp for the batch they would be equal and the jitter near zero.
func TestUDPBatchStamps(t *testing.T) {
	const size, rate = 1000, 80e6 // 100 µs per datagram
	const pkt = size * 8 * 1e9 / rate
	for _, m := range []UDPMethod{UDPSendmmsg, UDPGSO} {
		t.Run(string(m), func(t *testing.T) {
			tx, rx := udpPair(t)
			s, err := NewUDPSender(tx, -1, UDPConfig{Len: size, Rate: rate, Duration: time.Hour, Method: m})
			if err != nil {
				t.Fatal(err)
			}
			r, err := NewUDPReceiver(rx, -1, size)
			if err != nil {
				t.Fatal(err)
			}
			sl, rl := s.newLoop(), r.newLoop()
			// Start 10 ms back: 100 datagrams are due, one batch of 64 goes.
			sl.t0, sl.wall0 = sl.t0.Add(-10*time.Millisecond), sl.wall0-int64(10*time.Millisecond)
			if _, err := sl.burst(); err != nil {
				t.Fatal(err)
			}
			sent := int(s.all.Load())
			if sent < 32 {
				t.Fatalf("one burst sent %d datagrams, want a batch (64)", sent)
			}
			for i := range sent {
				b := sl.buf[i*size:]
				seq, ts := binary.LittleEndian.Uint64(b), int64(binary.LittleEndian.Uint64(b[8:]))
				want := sl.wall0 + int64(float64(i)*pkt)
				if seq&^measuredBit != uint64(i+1) || ts < want-1 || ts > want+1 {
					t.Fatalf("datagram %d: sequence %d, stamped %d ns after the start, want %d and %.0f (the schedule)", i, seq&^measuredBit, ts-sl.wall0, i+1, float64(i)*pkt)
				}
			}
			deadline := time.Now().Add(5 * time.Second)
			for rl.meas.packets < uint64(sent) && time.Now().Before(deadline) {
				if _, err := rl.batch(); err != nil {
					t.Fatal(err)
				}
			}
			_, got := r.Stats()
			// The jitter after n datagrams whose transits step by pkt:
			// pkt × (1 − (15/16)^(n−1)), less what their arrivals were
			// spread; half the datagram's time is far above a shared stamp's.
			full := pkt * (1 - math.Pow(15.0/16, float64(sent-1))) / 1e6
			t.Logf("%s (used %s): %d datagrams in one batch, received %+v, kernel timestamps %v; a steady %.0f µs step gives %.4f ms",
				m, s.Method(), sent, got, r.KernelTimestamps(), pkt/1e3, full)
			if got.Packets != uint64(sent) || got.Lost != 0 {
				t.Fatalf("received %+v of %d", got, sent)
			}
			if got.JitterMS < full/2 {
				t.Errorf("jitter %.4f ms over a batch whose send times step by %.0f µs: want at least %.4f ms", got.JitterMS, pkt/1e3, full/2)
			}
		})
	}
}

// TestUDPUnpacedStamps: an unpaced stream's batch spreads its send
// times evenly over the time since the previous batch, ending at the
// batch's own clock reading: no two datagrams share one, none is later
// than the batch.
func TestUDPUnpacedStamps(t *testing.T) {
	const size = 200
	tx, _ := udpPair(t)
	s, err := NewUDPSender(tx, -1, UDPConfig{Len: size, Duration: time.Hour, Method: UDPSendmmsg})
	if err != nil {
		t.Fatal(err)
	}
	l := s.newLoop()
	time.Sleep(time.Millisecond) // the first batch stands for the time since the start
	before := time.Now().UnixNano()
	l.stamp(udpBatch)
	after := time.Now().UnixNano()
	prev := l.wall0 - 1
	for i := range udpBatch {
		ts := int64(binary.LittleEndian.Uint64(l.buf[i*size+8:]))
		if ts <= prev || ts > after {
			t.Fatalf("datagram %d stamped %d ns after the start, the one before %d ns, the batch at %d–%d ns", i, ts-l.wall0, prev-l.wall0, before-l.wall0, after-l.wall0)
		}
		prev = ts
	}
	if prev < before {
		t.Errorf("the batch's last datagram stamped %d ns after the start, before the batch's clock reading (%d ns)", prev-l.wall0, before-l.wall0)
	}
}

// TestUDPBounds: lengths and rates out of range are refused.
func TestUDPBounds(t *testing.T) {
	for _, c := range []UDPConfig{{Len: 8, Duration: time.Second}, {Len: MaxDatagram + 1, Duration: time.Second},
		{Len: 100, Rate: -1, Duration: time.Second}, {Len: 100}} {
		if _, err := NewUDPSender(-1, -1, c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if _, err := NewUDPReceiver(-1, -1, 4); err == nil {
		t.Error("receiver of 4-byte datagrams accepted")
	}
}
