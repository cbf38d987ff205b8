package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/nicstats"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/telemetry"
)

// runProbe runs cfg's probe (Config.Probe) against the agent: the
// client's half of probe.go. A peer that stops answering, or goes away,
// mid-run ends the run with what was measured, said in End.Errors.
func runProbe(ctx context.Context, cfg Config) (*result.Result, error) {
	c := &client{cfg: cfg, p: cfg.EngineParams(), log: cfg.Logger, fs: cfg.Host}
	if c.fs == nil {
		c.fs = hostfs.Live()
	}
	pr := *cfg.Probe
	if pr.Kind == ProbePingPong && pr.Cooldown == 0 {
		pr.Cooldown = min(time.Second, c.p.Duration/10)
	}
	m := probeMsg{Type: msgProbe, Kind: pr.Kind, UDP: pr.UDP, Size: pr.Size, Rate: pr.Rate, DurationMS: c.p.Duration.Milliseconds(),
		OmitMS: c.p.Omit.Milliseconds(), CooldownMS: pr.Cooldown.Milliseconds(), IntervalMS: c.p.Interval.Milliseconds(), ServerCPU: -1}
	if pr.Kind == ProbeUDP {
		m.CooldownMS = 0
	}
	if err := m.validate(24 * time.Hour); err != nil { // the agent applies its own, lower bound
		return nil, err
	}
	if err := clientToken(cfg.Token); err != nil {
		return nil, err
	}
	cc, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	unwatch := context.AfterFunc(ctx, func() { cc.Close() })
	defer unwatch()
	res, err := c.probe(ctx, m, pr)
	if ctx.Err() != nil && res == nil {
		return nil, fmt.Errorf("test interrupted: %w", context.Cause(ctx))
	}
	return res, err
}

// probe is runProbe once connected.
func (c *client) probe(ctx context.Context, m probeMsg, pr ProbeTest) (*result.Result, error) {
	peer, keys, err := clientHandshake(c.ctrl, c.cfg.Token)
	if err != nil {
		return nil, err
	}
	c.peer, c.keys = *peer, keys
	local := engine.AddrPort(c.ctrl.c.LocalAddr())
	var notes []string
	c.me, notes = engine.HostFacts(c.fs, local.Addr())
	ch, err := c.placement() // no look before a probe: one thread a side
	if err != nil {
		return nil, err
	}
	if len(ch.server) > 0 {
		m.ServerCPU = ch.server[0]
	}
	if err := c.ctrl.send(m, handshakeTimeout); err != nil {
		return nil, fmt.Errorf("sending the probe request: %w", err)
	}
	acc, err := expect(c.ctrl, msgProbeAccept, setupTimeout, (*probeAcceptMsg).check)
	if err != nil {
		return nil, fmt.Errorf("the agent did not accept the test: %w", err)
	}
	fd, err := c.probeConnect(ctx, m, *acc)
	if err != nil {
		return nil, err
	}
	defer engine.CloseFD(fd)
	cpu := engine.Assign(1, ch.client)[0]
	c.res = c.startResult(acceptMsg{Port: acc.Port, Placement: []int{acc.CPU}}, []*engine.Stream{{ID: 1, Send: true, CPU: cpu}}, ch, notes)
	c.res.Start.Notes = append(c.res.Start.Notes, probeNote(m))
	if m.Kind == ProbeUDP {
		c.res.Start.Protocol, c.res.Start.Bitrate, c.res.Start.BlockSize = result.UDP, uint64(m.Rate), m.Size
	}
	return c.probeRun(ctx, m, pr, fd, cpu)
}

// probeNote describes the probe in the start section's notes.
func probeNote(m probeMsg) string {
	if m.Kind == ProbeUDP {
		return fmt.Sprintf("UDP stream: %d-byte datagrams %s", m.Size, rateText(m.Rate, "bit/s"))
	}
	proto := "TCP (TCP_NODELAY)"
	if m.UDP {
		proto = "UDP"
	}
	return fmt.Sprintf("ping-pong over %s: %d-byte messages %s, %s cool-down not counted", proto, m.Size, rateText(m.Rate, "round trips/s"),
		time.Duration(m.CooldownMS)*time.Millisecond)
}

// rateText says how fast a probe goes: "at 500 Mbit/s", or "as fast as
// possible" for 0.
func rateText(r float64, unit string) string {
	if r == 0 {
		return "as fast as possible"
	}
	return "at " + rateNumber(r, unit)
}

// rateNumber writes a rate with its unit, bit rates with an SI prefix.
// lab.Rate's String does the same in tc's units ("500mbit"), but the
// agent, reachable from the network, may not import the lab.
func rateNumber(r float64, unit string) string {
	if unit == "bit/s" { // as -b was written: 500 Mbit/s, not 5e+08 bit/s
		for _, p := range []struct {
			div    float64
			prefix string
		}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
			if r >= p.div {
				return strconv.FormatFloat(r/p.div, 'f', -1, 64) + " " + p.prefix + unit
			}
		}
	}
	return strconv.FormatFloat(r, 'f', -1, 64) + " " + unit
}

// probeConnect opens the data connection and waits for probe_ready.
func (c *client) probeConnect(ctx context.Context, m probeMsg, acc probeAcceptMsg) (int, error) {
	remote := engine.AddrPort(c.ctrl.c.RemoteAddr())
	addr := netip.AddrPortFrom(remote.Addr(), uint16(acc.Port)).String()
	pre := preamble(c.keys.data, acc.TestID, 0)
	var fd int
	stop := func() {}
	if m.Kind == ProbePingPong && !m.UDP {
		d := net.Dialer{Timeout: dialTimeout}
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return -1, fmt.Errorf("data connection to %s: %w", addr, err)
		}
		nc.SetWriteDeadline(time.Now().Add(dialTimeout))
		if _, err := nc.Write(pre); err != nil {
			nc.Close()
			return -1, fmt.Errorf("data connection: %w", err)
		}
		if fd, err = engine.Detach(nc); err != nil {
			return -1, err
		}
	} else {
		var d net.Dialer
		nc, err := d.DialContext(ctx, "udp", addr)
		if err != nil {
			return -1, fmt.Errorf("UDP socket toward %s: %w", addr, err)
		}
		if fd, err = engine.Detach(nc); err != nil {
			return -1, err
		}
		stop = repeatPreamble(fd, pre)
	}
	_, err := expect(c.ctrl, msgProbeReady, setupTimeout+dialTimeout, func(*bareMsg) error { return nil })
	stop()
	if err != nil {
		engine.CloseFD(fd)
		return -1, fmt.Errorf("waiting for the agent's data connection: %w", err)
	}
	return fd, nil
}

// repeatPreamble sends pre on fd every preambleEvery until the returned
// function is called (UDP may drop any one of them).
func repeatPreamble(fd int, pre []byte) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(preambleEvery)
		defer t.Stop()
		for {
			_, _ = unix.Write(fd, pre) // a refused one is repeated
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// probeRun runs the data path, samples both ends every interval, stops
// the agent and builds the result.
func (c *client) probeRun(ctx context.Context, m probeMsg, pr ProbeTest, fd, cpu int) (*result.Result, error) {
	length := time.Duration(m.OmitMS+m.DurationMS+m.CooldownMS) * time.Millisecond
	var pp *engine.PingPong
	var tx *engine.UDPSender
	var err error
	bounds, warm := engine.Schedule(c.p.Omit, c.p.Duration, c.p.Interval)
	if m.Kind == ProbePingPong {
		pp, err = engine.NewPingPong(fd, cpu, engine.PingPongConfig{UDP: m.UDP, Size: m.Size, Rate: m.Rate, Warmup: c.p.Omit,
			Duration: c.p.Duration, Cooldown: pr.Cooldown, Timeout: probeTimeout, Stall: probeStall, Bounds: bounds})
	} else {
		tx, err = engine.NewUDPSender(fd, cpu, engine.UDPConfig{Len: m.Size, Rate: m.Rate, Omit: c.p.Omit, Duration: c.p.Duration, Method: pr.Method})
	}
	if err != nil {
		return nil, err
	}
	c.emit(result.Event{Event: "start", Data: &c.res.Start})
	rd := newProbeReader(c.ctrl, length+2*endGrace+setupTimeout)
	nic := nicstats.Begin(c.counterIface())
	if err := c.ctrl.send(bareMsg{Type: msgStart}, handshakeTimeout); err != nil {
		return nil, fmt.Errorf("starting the test: %w", err)
	}
	done := make(chan struct{})
	var ppRes engine.PingPongResult
	var txErr error
	if pp != nil {
		pp.Start("lrc-ping")
		go func() { ppRes = pp.Wait(); close(done) }()
	} else {
		tx.Start("lrc-udp")
		go func() { txErr = tx.Wait(); close(done) }()
	}
	halt := func() {
		if pp != nil {
			pp.Halt()
		} else {
			tx.Halt()
		}
	}
	var peerErr error
	cpu0 := processCPU()
	smp := telemetry.NewSampler(c.fs, c.me.NICIRQs)
	var prev uint64
	k := 0
	var tally udpTally
	ending := false // the run ended before its last boundary: this is its last interval
	report := func(n uint64, lat *result.IntervalLatency) {
		var udp *udpTally // a UDP stream's intervals carry the stream, as iperf3 -u's do
		if pp == nil {
			udp = &tally
		}
		c.probeInterval(k, bounds, warm, smp.Sample(), n-prev, m.Size, udp, lat, rd)
		// A UDP stream's last interval waits for the receiver's totals
		// (udpLast), so that the intervals add up to the end.
		if udp == nil || !(ending || k == len(bounds)-1) {
			c.emit(result.Event{Event: "interval", Data: &c.res.Intervals[len(c.res.Intervals)-1]})
		}
		prev, k = n, k+1
	}
	// A ping-pong's loop closes its own intervals (Cuts), so that an
	// interval's round trips and percentiles are cut at one instant; a UDP
	// stream's are cut by this timer.
	var cuts <-chan engine.Cut
	var tick <-chan time.Time
	var timer *time.Timer
	t0 := time.Now()
	if pp != nil {
		cuts = pp.Cuts()
	} else {
		timer = time.NewTimer(bounds[0])
		defer timer.Stop()
		tick = timer.C
	}
	cut := func(ct engine.Cut) {
		s := pp.Summarize(ct)
		report(ct.Replies*uint64(2*m.Size), &result.IntervalLatency{Samples: s.Samples, RTTUs: s.RTTUs})
	}
	sample := func() {
		all, _, _ := tx.Sent()
		report(all*uint64(m.Size), nil)
		if k < len(bounds) {
			timer.Reset(time.Until(t0.Add(bounds[k])))
		}
	}
loop:
	for {
		select {
		case <-done:
			break loop
		case <-ctx.Done():
			halt()
			<-done
			break loop
		case err := <-rd.errc:
			peerErr = err
			halt()
			<-done
			break loop
		case ct, ok := <-cuts:
			if !ok {
				cuts = nil // closed: done follows
				continue
			}
			cut(ct)
		case <-tick:
			sample()
		}
	}
	if pp != nil {
		for ct := range pp.Cuts() { // closed before done: the last ones, the partial one too
			cut(ct)
		}
	} else if k < len(bounds) && k > 0 {
		ending = true
		sample() // the run ended early: its last, partial interval (the deferred Stop ends the timer)
	}
	var end *probeEndMsg
	if peerErr == nil && ctx.Err() == nil {
		if err := c.ctrl.send(bareMsg{Type: msgStop}, handshakeTimeout); err != nil {
			peerErr = fmt.Errorf("stopping the test: %w", err)
		} else {
			select {
			case end = <-rd.endc:
			case peerErr = <-rd.errc:
			case <-time.After(endGrace):
				peerErr = errors.New("the agent sent no totals within 10 s of the end")
			}
		}
	}
	rd.mergeLate(c.res)
	if ctx.Err() != nil {
		peerErr = fmt.Errorf("interrupted: %w", context.Cause(ctx))
	}
	if pp != nil {
		c.res.End = c.pingEnd(m, ppRes, end, peerErr)
	} else {
		c.res.End = c.udpEnd(m, tx, txErr, end, peerErr)
		if n := len(c.res.Intervals); n > 0 {
			if end != nil {
				udpLast(c.res.Intervals, c.res.End.UDP, end.Measured)
			}
			c.emit(result.Event{Event: "interval", Data: &c.res.Intervals[n-1]})
		}
	}
	c.res.End.CPU.ClientSeconds = result.Round3(max(0, processCPU()-cpu0))
	c.res.End.NICCounters = &result.NICCounters{Client: nic.End()}
	if end != nil {
		c.res.End.NICCounters.Server = end.NICCounters
	}
	c.emit(result.Event{Event: "end", Data: &c.res.End})
	return c.res, nil
}

// probeInterval adds interval k of the schedule bounds (the first warm
// of them warm-up): bytes moved by this end, both ends' CPUs; for a UDP
// stream of size-byte datagrams (udp, nil for a ping-pong), the stream
// itself, with its receiver's count over the interval.
func (c *client) probeInterval(k int, bounds []time.Duration, warm int, s telemetry.Sample, bytes uint64, size int, udp *udpTally, lat *result.IntervalLatency, rd *probeReader) {
	var from time.Duration
	if k > 0 {
		from = bounds[k-1]
	}
	to := bounds[k]
	it := result.Interval{Start: from.Seconds(), End: to.Seconds(), Omitted: k < warm, Streams: []result.StreamInterval{}}
	if !it.Omitted {
		it.Start, it.End = (from - c.p.Omit).Seconds(), (to - c.p.Omit).Seconds()
	}
	it.Sum.Bytes = bytes
	if to > from {
		it.Sum.BitsPerSecond = float64(bytes) * 8 / (to - from).Seconds()
	}
	it.Latency = lat
	it.CPU.Client, it.CPUTotal.Client = s.PerCPU, s.Total
	srv, ok := rd.take(k, min(c.p.Interval/2, 500*time.Millisecond))
	if ok {
		it.CPU.Server, it.CPUTotal.Server = srv.CPU, &srv.Total
	}
	if udp != nil {
		st := result.StreamInterval{ID: 1, Sender: senderName(true), Bytes: bytes,
			BitsPerSecond: it.Sum.BitsPerSecond, Packets: bytes / uint64(size)}
		if ok && srv.UDP != nil {
			st.UDPInterval = udp.interval(srv.UDP, it.Omitted)
		}
		it.Streams = append(it.Streams, st)
	}
	c.res.Intervals = append(c.res.Intervals, it)
}

// udpTally turns a UDP receiver's running counts, sampled at each
// boundary, into each interval's. The receiver numbers the warm-up's
// datagrams apart from the window's, so a warm-up interval counts the
// warm-up's and a measured one the window's: a datagram of the window
// that came before the agent's boundary (its clock is not the client's)
// is counted in the first measured interval, not lost to an omitted one.
// An interval whose sample did not come in time has no count, and its
// datagrams go to the next that has one.
type udpTally struct {
	warm, meas engine.UDPStats // the counts taken last
}

// interval is the interval's count given the receiver's counts at its
// end; nil where they went backward (they never do, from an honest
// agent).
func (t *udpTally) interval(c *udpCounts, omitted bool) *result.UDPInterval {
	prev, now := &t.meas, c.Measured
	if omitted {
		prev, now = &t.warm, c.Warm
	}
	if now.Packets < prev.Packets || now.Bytes < prev.Bytes || now.OutOfOrder < prev.OutOfOrder {
		return nil
	}
	d := now.Sub(*prev)
	*prev = now
	return result.NewUDPInterval(d.Packets, d.Lost, d.OutOfOrder, d.JitterMS)
}

// udpLast makes the last measured interval of a UDP stream take what its
// sample could not see: the datagrams that arrived after its boundary
// (still in flight, or queued in the socket), those the receiver's gap
// count cannot know were lost (the last ones sent), the jitter at the
// end. So the measured intervals add up to the end's received, lost and
// out-of-order datagrams (end.udp), as a reader adding them expects.
func udpLast(ivs []result.Interval, u *result.UDPSum, final engine.UDPStats) {
	last := &ivs[len(ivs)-1]
	if last.Omitted || len(last.Streams) != 1 || u == nil {
		return
	}
	var recv, ooo uint64
	var lost int64
	counted := last.Streams[0].UDPInterval != nil
	for i := range ivs[:len(ivs)-1] {
		if x := ivs[i].Streams; len(x) == 1 && x[0].UDPInterval != nil {
			counted = true
			if !ivs[i].Omitted {
				recv, lost, ooo = recv+x[0].ReceivedPackets, lost+x[0].LostPackets, ooo+x[0].OutOfOrder
			}
		}
	}
	if !counted || final.Packets < recv || final.OutOfOrder < ooo {
		// An agent that sends no counts with its samples (one older than
		// them): the last interval must not take the whole run's; or
		// one whose counts went backward: leave the sample's.
		return
	}
	last.Streams[0].UDPInterval = result.NewUDPInterval(final.Packets-recv, u.LostPackets-lost, final.OutOfOrder-ooo, final.JitterMS)
}

// pingEnd is a ping-pong's end section.
func (c *client) pingEnd(m probeMsg, r engine.PingPongResult, end *probeEndMsg, peerErr error) result.End {
	e := result.End{Seconds: r.Window.Seconds(), Streams: []result.StreamEnd{}}
	proto := "tcp"
	if m.UDP {
		proto = "udp"
	}
	l := &result.Latency{Summary: r.Latency, Protocol: proto, Size: m.Size, Sent: r.Sent, TargetRate: m.Rate, Duplicated: r.Duplicated,
		GCCycles: r.GCCycles, GCPauseUs: float64(r.GCPause) / 1e3, GCTouched: r.GCTouched, Stalled: r.Stalled}
	if r.Window > 0 {
		l.RatePerSecond = result.Round3(float64(r.Sent) / r.Window.Seconds())
	}
	e.Latency = l
	bytes := uint64(l.Samples) * uint64(2*m.Size)
	e.SumSent = result.Sum{Bytes: bytes}
	e.SumReceived = result.Received{Bytes: bytes}
	if r.Window > 0 {
		e.SumSent.BitsPerSecond = float64(bytes) * 8 / r.Window.Seconds()
		e.SumReceived.BitsPerSecond = e.SumSent.BitsPerSecond
	}
	if r.Stalled {
		e.Errors = append(e.Errors, fmt.Sprintf("the peer stopped answering (no reply for %s): the result holds the %d round trips of the first %.2f s", probeStall, l.Samples, r.Window.Seconds()))
	}
	if r.Err != nil {
		e.Errors = append(e.Errors, fmt.Sprintf("the run ended early: %v: the result holds the %d round trips of the first %.2f s", r.Err, l.Samples, r.Window.Seconds()))
	}
	if m.Rate > 0 && r.Window > 0 && l.RatePerSecond < 0.98*m.Rate {
		e.Errors = append(e.Errors, rateShortfall(l, m.Rate))
	}
	if l.GCTouched > 0 {
		e.Errors = append(e.Errors, fmt.Sprintf("%d garbage collections ran during the run (%.0f µs of pauses) and overlapped %d samples", l.GCCycles, l.GCPauseUs, l.GCTouched))
	}
	return c.peerEnd(e, end, peerErr)
}

// udpEnd is a UDP stream's end section, as iperf3 -u's end.sum.
func (c *client) udpEnd(m probeMsg, tx *engine.UDPSender, txErr error, end *probeEndMsg, peerErr error) result.End {
	_, pkts, bytes := tx.Sent()
	win := tx.Window()
	e := result.End{Seconds: win.Seconds(), Streams: []result.StreamEnd{}}
	u := &result.UDPSum{Bytes: bytes, Packets: pkts, TargetBitsPerSecond: m.Rate, Length: m.Size, Method: string(tx.Method())}
	if win > 0 {
		u.BitsPerSecond = float64(bytes) * 8 / win.Seconds()
		u.PacketsPerSecond = result.Round3(float64(pkts) / win.Seconds())
	}
	e.SumSent = result.Sum{Bytes: bytes, BitsPerSecond: u.BitsPerSecond}
	if end != nil {
		r := end.Measured
		u.ReceivedPackets, u.OutOfOrder, u.JitterMS, u.ArrivalClock = r.Packets, r.OutOfOrder, r.JitterMS, end.ArrivalClock
		// Lost: what was sent in the window and did not arrive (the
		// window's datagrams are numbered apart, so none is mistaken
		// for the warm-up's).
		u.LostPackets = max(0, int64(pkts)-int64(r.Packets))
		if pkts > 0 {
			u.LostPercent = 100 * float64(u.LostPackets) / float64(pkts)
		}
		if win > 0 {
			u.ReceivedBitsPerSecond = float64(r.Bytes) * 8 / win.Seconds()
		}
		e.SumReceived = result.Received{Bytes: r.Bytes, BitsPerSecond: u.ReceivedBitsPerSecond}
	}
	e.UDP = u
	// iperf3 -u's end.sum: the sender's rate, the receiver's loss and jitter.
	e.Sum = &result.UDPStream{Seconds: win.Seconds(), End: win.Seconds(), Bytes: bytes, BitsPerSecond: u.BitsPerSecond, JitterMS: u.JitterMS,
		LostPackets: u.LostPackets, Packets: int64(pkts), LostPercent: u.LostPercent, OutOfOrder: int64(u.OutOfOrder), Sender: true}
	// iperf3 -u's end.streams[]: the one stream, as the receiver counted it.
	st := *e.Sum
	st.Socket = 1
	e.Streams = []result.StreamEnd{{ID: 1, Sender: senderName(true), SentBytes: bytes, ReceivedBytes: e.SumReceived.Bytes, UDP: &st}}
	if txErr != nil {
		e.Errors = append(e.Errors, "the sender stopped: "+txErr.Error())
	}
	if m.Rate > 0 && u.BitsPerSecond < 0.98*m.Rate {
		e.Errors = append(e.Errors, fmt.Sprintf("the sender reached %.4g bit/s of the %.4g asked for: the path or this host's CPU cannot send faster", u.BitsPerSecond, m.Rate))
	}
	return c.peerEnd(e, end, peerErr)
}

// peerEnd adds the agent's part of the end, or why it is missing.
func (c *client) peerEnd(e result.End, end *probeEndMsg, peerErr error) result.End {
	if end != nil {
		e.CPU.ServerSeconds = end.CPUSeconds
		if end.Error != "" {
			e.Errors = append(e.Errors, "the agent: "+end.Error)
		}
	}
	if peerErr != nil {
		e.Errors = append(e.Errors, fmt.Sprintf("the agent's control connection: %v: its counts are missing, the result holds what this end measured", peerErr))
	}
	return e
}

// probeReader reads the agent's messages during a probe.
type probeReader struct {
	c    *conn
	mu   sync.Mutex
	ivs  map[int]toolSample
	late map[int]toolSample
	got  chan struct{} // a sample came
	endc chan *probeEndMsg
	errc chan error
}

func newProbeReader(c *conn, limit time.Duration) *probeReader {
	r := &probeReader{c: c, ivs: map[int]toolSample{}, late: map[int]toolSample{}, got: make(chan struct{}, 1),
		endc: make(chan *probeEndMsg, 1), errc: make(chan error, 1)}
	go r.loop(time.Now().Add(limit))
	return r
}

func (r *probeReader) loop(deadline time.Time) {
	for {
		typ, body, err := r.c.recv(time.Until(deadline))
		if err != nil {
			if isEOF(err) {
				err = errors.New("the agent went away mid-run")
			}
			r.errc <- err
			return
		}
		if typ == msgInterval {
			s, err := decode(typ, body, msgInterval, (*toolSample).check)
			if err != nil {
				r.errc <- err
				return
			}
			r.mu.Lock()
			if len(r.ivs)+len(r.late) < maxIntervals {
				r.ivs[s.Index] = *s
			}
			r.mu.Unlock()
			select {
			case r.got <- struct{}{}:
			default:
			}
			continue
		}
		m, err := decode(typ, body, msgProbeEnd, (*probeEndMsg).check)
		if err != nil {
			r.errc <- err
			return
		}
		r.endc <- m
		return
	}
}

// take returns the agent's sample k, waiting up to wait for it.
func (r *probeReader) take(k int, wait time.Duration) (toolSample, bool) {
	deadline := time.Now().Add(wait)
	for {
		r.mu.Lock()
		s, ok := r.ivs[k]
		delete(r.ivs, k)
		r.mu.Unlock()
		if ok || time.Now().After(deadline) {
			return s, ok
		}
		select {
		case <-r.got:
		case <-time.After(time.Until(deadline)):
		}
	}
}

// mergeLate fills the server's CPUs of intervals whose sample came late.
func (r *probeReader) mergeLate(res *result.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, s := range r.ivs {
		if k < len(res.Intervals) && res.Intervals[k].CPUTotal.Server == nil {
			res.Intervals[k].CPU.Server, res.Intervals[k].CPUTotal.Server = s.CPU, &s.Total
		}
	}
}

// rateShortfall says why a paced ping-pong fell short of its rate. A
// round trip has 1/rate to finish before the next is due: when the
// median takes longer, every round trip is too slow for the rate; when
// the median fits and the p99 does not, the slow tail — stalls from
// other load on the CPUs or the scheduler — cost the rate.
func rateShortfall(l *result.Latency, rate float64) string {
	budget := 1e6 / rate // µs per round trip
	s := fmt.Sprintf("the ping-pong reached %.0f round trips/s of the %g asked for", l.RatePerSecond, rate)
	p50, p99 := l.RTTUs.P50, l.RTTUs.P99
	switch {
	case p50 != nil && *p50 >= budget:
		return s + fmt.Sprintf(": a round trip (p50 %.1f µs) takes longer than the %.1f µs the rate leaves it", *p50, budget)
	case p50 != nil && p99 != nil && *p99 > budget:
		return s + fmt.Sprintf(": the median round trip (%.1f µs) fits the %.1f µs the rate leaves it, but the slow tail (p99 %.1f µs) does not: stalls, from other load on the CPUs or the scheduler, cost the rate", *p50, budget, *p99)
	case p50 != nil:
		return s + fmt.Sprintf(": round trips (p50 %.1f µs) fit the %.1f µs the rate leaves them, so the sender fell behind its schedule: the sending CPU was busy with other work", *p50, budget)
	}
	return s + ": too few round trips for a median, so the cause is unknown"
}
