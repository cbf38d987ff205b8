package engine

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/latency"
)

// udpPair returns two blocking UDP sockets on loopback, each connected to
// the other.
func udpPair(tb testing.TB) (a, b int) {
	tb.Helper()
	open := func() (int, *unix.SockaddrInet4) {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			tb.Fatal(err)
		}
		if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			tb.Fatal(err)
		}
		sa, err := unix.Getsockname(fd)
		if err != nil {
			tb.Fatal(err)
		}
		return fd, sa.(*unix.SockaddrInet4)
	}
	a, aa := open()
	b, ba := open()
	if err := unix.Connect(a, ba); err != nil {
		tb.Fatal(err)
	}
	if err := unix.Connect(b, aa); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { CloseFD(a); CloseFD(b) })
	return a, b
}

// tcpPair returns two connected blocking TCP sockets on loopback.
func tcpPair(tb testing.TB) (client, server int) {
	tb.Helper()
	c, s := streamPair(tb, false)
	tb.Cleanup(func() { CloseFD(c.FD); CloseFD(s.FD) })
	return c.FD, s.FD
}

// checkOrdered fails unless min ≤ p25 ≤ p50 ≤ p90 ≤ p99 ≤ max, every one
// known, and the mean lies within [min, max].
func checkOrdered(t *testing.T, r latency.RTT) {
	t.Helper()
	vals := []*float64{r.Min, r.P25, r.P50, r.P90, r.P99, r.Max}
	for i, v := range vals {
		if v == nil {
			t.Fatalf("field %d of %+v is null", i, r)
		}
		if i > 0 && *v < *vals[i-1] {
			t.Errorf("not ordered: %v", deref(vals))
		}
	}
	if r.Mean == nil || *r.Mean < *r.Min || *r.Mean > *r.Max {
		t.Errorf("mean %v outside [min, max] %v", r.Mean, deref(vals))
	}
}

func deref(vs []*float64) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = *v
	}
	return out
}

// TestPingPong runs a paced ping-pong over loopback, TCP and UDP, against
// the engine's own echo, and checks the result's shape: ordered
// percentiles, a sample count no higher than rate × duration (pacing
// never runs ahead) and not far below it, nothing dropped.
func TestPingPong(t *testing.T) {
	for _, udp := range []bool{false, true} {
		name := "tcp"
		if udp {
			name = "udp"
		}
		t.Run(name, func(t *testing.T) {
			var cfd, sfd int
			if udp {
				cfd, sfd = udpPair(t)
			} else {
				cfd, sfd = tcpPair(t)
			}
			const rate, size = 2000, 64
			e, err := NewEcho(sfd, -1, size, udp)
			if err != nil {
				t.Fatal(err)
			}
			e.Start("test-echo")
			cfg := PingPongConfig{UDP: udp, Size: size, Rate: rate, Warmup: 100 * time.Millisecond,
				Duration: 500 * time.Millisecond, Cooldown: 50 * time.Millisecond, Timeout: 200 * time.Millisecond, Stall: 3 * time.Second}
			var warm int
			cfg.Bounds, warm = Schedule(cfg.Warmup, cfg.Duration, 200*time.Millisecond)
			p, err := NewPingPong(cfd, -1, cfg)
			if err != nil {
				t.Fatal(err)
			}
			cuts := collectCuts(p)
			p.Start("test-pp")
			res := p.Wait()
			checkCuts(t, <-cuts, len(cfg.Bounds), warm, res.Latency.Samples)
			e.Halt()
			echoed, eerr := e.Wait()
			if res.Err != nil || eerr != nil || res.Stalled {
				t.Fatalf("run: %v, echo: %v, stalled %v", res.Err, eerr, res.Stalled)
			}
			l := res.Latency
			want := int64(rate * cfg.Duration.Seconds())
			t.Logf("%d samples (rate × duration %d), p50 %.1f µs, p99 %.1f µs, %d echoed, GC %d cycles touching %d",
				l.Samples, want, *l.RTTUs.P50, *l.RTTUs.P99, echoed, res.GCCycles, res.GCTouched)
			checkOrdered(t, l.RTTUs)
			// How many fit depends on how busy the machine is: at most
			// rate × duration (pacing never runs ahead), at least one.
			if l.Samples > want+1 || l.Samples == 0 {
				t.Errorf("%d samples at %d/s for %s: want 1 to %d", l.Samples, rate, cfg.Duration, want+1)
			}
			// A UDP reply later than the timeout (a descheduled echo)
			// counts as out of order: every request is one of the three.
			if d := res.Sent - l.Samples - l.Dropped - l.OutOfOrder; d != 0 || !udp && (l.Dropped != 0 || l.OutOfOrder != 0) || res.Duplicated != 0 {
				t.Errorf("sent %d, received %d, dropped %d, out of order %d, duplicated %d: a lossless echo",
					res.Sent, l.Samples, l.Dropped, l.OutOfOrder, res.Duplicated)
			}
			if echoed < uint64(l.Samples) || p.Replies() != echoed {
				t.Errorf("echoed %d, replies %d, window samples %d", echoed, p.Replies(), l.Samples)
			}
			if res.Window != cfg.Duration {
				t.Errorf("window %s, want %s", res.Window, cfg.Duration)
			}
		})
	}
}

// seenCut is a Cut as the reader saw it.
type seenCut struct {
	k       int
	replies uint64
	lat     latency.Summary
}

// collectCuts reads p's cuts as a reporter does, summarizing each at
// once, and sends them all when the run closed the channel.
func collectCuts(p *PingPong) <-chan []seenCut {
	out := make(chan []seenCut, 1)
	go func() {
		var all []seenCut
		for c := range p.Cuts() {
			all = append(all, seenCut{c.K, c.Replies, p.Summarize(c)})
		}
		out <- all
	}()
	return out
}

// checkCuts checks a whole run's intervals: one per bound, in order; each
// holds exactly the replies counted between its cut and the previous one,
// with ordered percentiles; and the measured ones (from warm on) add up
// to the window's samples, since the loop decides both from the same
// instant.
func checkCuts(t *testing.T, cuts []seenCut, bounds, warm int, window int64) {
	t.Helper()
	if len(cuts) != bounds {
		t.Fatalf("%d intervals, want %d", len(cuts), bounds)
	}
	var prev uint64
	var measured int64
	for i, c := range cuts {
		if c.k != i {
			t.Errorf("interval %d came as %d", i, c.k)
		}
		if d := int64(c.replies - prev); c.lat.Samples != d || c.replies < prev {
			t.Errorf("interval %d: %d samples, but %d replies since the last cut", i, c.lat.Samples, d)
		}
		if c.lat.Samples >= 100 { // enough for a p99
			checkOrdered(t, c.lat.RTTUs)
		}
		if i >= warm {
			measured += c.lat.Samples
		}
		prev = c.replies
	}
	if measured != window {
		t.Errorf("the measured intervals hold %d round trips, the window %d", measured, window)
	}
}

// faultyEcho echoes UDP messages on fd with faults by sequence number:
// none for multiples of drop, twice for multiples of dup, after delay for
// multiples of late. It returns when fd is shut down.
func faultyEcho(fd int, drop, dup, late uint64, delay time.Duration) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		var held []byte
		var heldAt time.Time
		for {
			n, err := unix.Read(fd, buf)
			if err != nil && !isTimeout(err) && err != unix.EINTR || n == 0 && err == nil {
				return // shut down (a read then returns 0 at once)
			}
			if held != nil && time.Since(heldAt) >= delay {
				unix.Write(fd, held)
				held = nil
			}
			if n <= 0 {
				continue
			}
			seq := seqOf(buf)
			switch {
			case seq%drop == 0:
			case seq%late == 0 && held == nil:
				held, heldAt = append([]byte(nil), buf[:n]...), time.Now()
			case seq%dup == 0:
				unix.Write(fd, buf[:n])
				unix.Write(fd, buf[:n])
			default:
				unix.Write(fd, buf[:n])
			}
		}
	}()
	return done
}

// TestPingPongUDPFaults counts what a faulty echo does: every 10th
// message dropped, every 7th answered twice, every 13th answered after
// the request's timeout (late: out of order, and not dropped after all).
func TestPingPongUDPFaults(t *testing.T) {
	cfd, sfd := udpPair(t)
	tv := unix.NsecToTimeval(int64(5 * time.Millisecond))
	if err := unix.SetsockoptTimeval(sfd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	done := faultyEcho(sfd, 10, 7, 13, 40*time.Millisecond)
	cfg := PingPongConfig{UDP: true, Size: 32, Rate: 500, Warmup: 50 * time.Millisecond, Duration: 600 * time.Millisecond,
		Timeout: 20 * time.Millisecond, Stall: 3 * time.Second}
	p, err := NewPingPong(cfd, -1, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.Start("test-pp")
	res := p.Wait()
	unix.Shutdown(sfd, unix.SHUT_RDWR)
	<-done
	if res.Err != nil || res.Stalled {
		t.Fatalf("run: %v, stalled %v", res.Err, res.Stalled)
	}
	first, last := p.win[0], p.win[1]
	var drop, dup, late int64
	for s := first; s <= last; s++ {
		switch {
		case s%10 == 0:
			drop++
		case s%13 == 0:
			late++
		case s%7 == 0:
			dup++
		}
	}
	l := res.Latency
	t.Logf("window seqs %d-%d: dropped %d (want %d), out of order %d (%d), duplicated %d (%d), samples %d",
		first, last, l.Dropped, drop, l.OutOfOrder, late, res.Duplicated, dup, l.Samples)
	// The reply to the window's last message may come after the run
	// ended: one of each kind may be missing at the edge.
	if d := l.Dropped - drop; d < 0 || d > 1 {
		t.Errorf("dropped %d, want %d", l.Dropped, drop)
	}
	if d := late - l.OutOfOrder; d < 0 || d > 1 {
		t.Errorf("out of order %d, want %d", l.OutOfOrder, late)
	}
	if d := dup - res.Duplicated; d < 0 || d > 1 {
		t.Errorf("duplicated %d, want %d", res.Duplicated, dup)
	}
	if got, want := l.Samples, res.Sent-drop-late; got < want-1 || got > want {
		t.Errorf("%d samples of %d sent: want %d (dropped and late ones are not timed)", got, res.Sent, want)
	}
}

// TestPingPongStall: a peer that stops answering mid-run ends the run
// within the stall limit, with what was measured before and the stall
// said; over TCP and UDP.
func TestPingPongStall(t *testing.T) {
	for _, udp := range []bool{false, true} {
		t.Run(map[bool]string{false: "tcp", true: "udp"}[udp], func(t *testing.T) {
			var cfd, sfd int
			if udp {
				cfd, sfd = udpPair(t)
			} else {
				cfd, sfd = tcpPair(t)
			}
			// An echo that answers for 300 ms, then goes quiet without
			// closing anything.
			go func() {
				buf := make([]byte, 64)
				t0 := time.Now()
				for time.Since(t0) < 300*time.Millisecond {
					n, err := unix.Read(sfd, buf)
					if err != nil || n <= 0 {
						return
					}
					unix.Write(sfd, buf[:n])
				}
			}()
			cfg := PingPongConfig{UDP: udp, Size: 64, Rate: 1000, Warmup: 50 * time.Millisecond, Duration: 10 * time.Second,
				Timeout: 50 * time.Millisecond, Stall: 500 * time.Millisecond}
			cfg.Bounds, _ = Schedule(cfg.Warmup, cfg.Duration, 100*time.Millisecond)
			p, err := NewPingPong(cfd, -1, cfg)
			if err != nil {
				t.Fatal(err)
			}
			cuts := collectCuts(p)
			start := time.Now()
			p.Start("test-pp")
			res := p.Wait()
			took := time.Since(start)
			// The intervals up to the stall, then the partial one it cut
			// short; none of the 10 s that did not run.
			got := <-cuts
			if n := len(got); n < 2 || n >= len(cfg.Bounds) || got[n-1].k != n-1 {
				t.Errorf("%d intervals (last %+v) of %d: want those before the stall and the partial one", n, got[len(got)-1], len(cfg.Bounds))
			}
			t.Logf("ended after %s: stalled %v, %d samples, window %s, dropped %d, err %v", took, res.Stalled, res.Latency.Samples, res.Window, res.Latency.Dropped, res.Err)
			if !res.Stalled || res.Err != nil {
				t.Errorf("stalled %v, err %v: want a stall", res.Stalled, res.Err)
			}
			if took > 5*time.Second {
				t.Errorf("took %s to notice a peer silent after 300 ms (stall limit 500 ms)", took)
			}
			if res.Latency.Samples == 0 || res.Window <= 0 || res.Window >= cfg.Duration {
				t.Errorf("%d samples over %s: want what came before the stall", res.Latency.Samples, res.Window)
			}
		})
	}
}

// TestPingPongUnpaced: rate 0 sends each request when the reply is in,
// and a rate beyond what the path does is reported as achieved (the run
// ends on time, it does not hang).
func TestPingPongUnpaced(t *testing.T) {
	for _, rate := range []float64{0, 1e9} {
		cfd, sfd := udpPair(t)
		e, _ := NewEcho(sfd, -1, MinMessage, true)
		e.Start("test-echo")
		cfg := PingPongConfig{UDP: true, Size: MinMessage, Rate: rate, Duration: 300 * time.Millisecond, Timeout: 100 * time.Millisecond, Stall: time.Second}
		p, err := NewPingPong(cfd, -1, cfg)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		p.Start("test-pp")
		res := p.Wait()
		took := time.Since(start)
		e.Halt()
		e.Wait()
		if res.Err != nil || res.Latency.Samples == 0 || took > 2*time.Second {
			t.Errorf("rate %g: %d samples in %s, err %v", rate, res.Latency.Samples, took, res.Err)
		}
		t.Logf("rate %g: %d samples in %s (%.0f/s)", rate, res.Latency.Samples, res.Window, float64(res.Latency.Samples)/res.Window.Seconds())
	}
}

// TestPingPongAllocs: the loop's round trip allocates nothing.
func TestPingPongAllocs(t *testing.T) {
	for _, udp := range []bool{false, true} {
		var cfd, sfd int
		if udp {
			cfd, sfd = udpPair(t)
		} else {
			cfd, sfd = tcpPair(t)
		}
		e, _ := NewEcho(sfd, -1, 64, udp)
		e.Start("test-echo")
		p, err := NewPingPong(cfd, -1, PingPongConfig{UDP: udp, Size: 64, Duration: time.Hour, Timeout: time.Second, Stall: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		l := p.newLoop()
		// More than gcRing round trips: the ring's look at the collector
		// is part of what is measured.
		allocs := testing.AllocsPerRun(gcRing+500, func() {
			if !l.one() {
				t.Fatal("the loop ended")
			}
		})
		e.Halt()
		e.Wait()
		if allocs != 0 {
			t.Errorf("udp %v: %.2f allocations per round trip, want 0", udp, allocs)
		}
		if l.p.rec.Count() < gcRing {
			t.Errorf("only %d round trips recorded", l.p.rec.Count())
		}
	}
}

// TestGCWatch: a collection during a sample is counted against it; a
// sample before it is not.
func TestGCWatch(t *testing.T) {
	t0 := time.Now()
	g := newGCWatch(t0)
	before := since(t0)
	g.add(0, before)
	time.Sleep(time.Millisecond)
	from := since(t0)
	runtime.GC()
	g.add(from, since(t0))
	cycles, pause, touched := g.finish()
	t.Logf("%d cycles, %s pause, %d samples touched", cycles, pause, touched)
	if cycles < 1 || pause <= 0 {
		t.Fatalf("runtime.GC ran, the watch saw %d cycles of %s", cycles, pause)
	}
	if touched != 1 {
		t.Errorf("touched %d samples, want 1 (the one around runtime.GC)", touched)
	}
}

// TestQuietGC: the collector is off inside, back as it was after, and
// nested calls restore only at the last.
func TestQuietGC(t *testing.T) {
	r1 := quietGC()
	r2 := quietGC()
	if old := setGCPercent(-1); old != -1 {
		t.Errorf("inside: GOGC %d, want off", old)
	}
	r2()
	if old := setGCPercent(-1); old != -1 {
		t.Errorf("after the inner restore: GOGC %d, want still off", old)
	}
	r1()
	r1() // twice: harmless
	if old := setGCPercent(-1); old == -1 {
		t.Error("after the last restore: the collector is still off")
	} else {
		setGCPercent(old)
	}
}

func setGCPercent(p int) int { return debug.SetGCPercent(p) }
