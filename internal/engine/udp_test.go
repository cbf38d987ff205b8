package engine

import (
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

// TestUDPAllocs: sending and receiving a burst allocate nothing.
func TestUDPAllocs(t *testing.T) {
	tx, rx := udpPair(t)
	s, _ := NewUDPSender(tx, -1, UDPConfig{Len: 200, Duration: time.Hour, Method: UDPSendmmsg})
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
