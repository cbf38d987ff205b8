package engine

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/telemetry"
)

// side is one end's half of a running test: its stream threads, its
// interval clock and its samples. Client and agent run the same code.
type side struct {
	p       params
	streams []*stream // connection i is stream id i+1
	snd     sender
	host    *telemetry.Sampler
	tag     string // thread name prefix: "lrc" (client) or "lrs" (agent)

	bounds []time.Duration // interval ends, relative to t0
	nOmit  int             // how many of them are warm-up
	next   int             // index of the next boundary to sample

	halt atomic.Bool // tells senders to finish
	wg   sync.WaitGroup

	t0, omitAt, prevAt time.Time
	last, atOmit       []mark
	cpuAtOmit          float64
}

// mark is a stream's counters at one instant.
type mark struct {
	bytes   uint64
	retrans uint32
	tcp     tcpInfo
}

// sideSample is what one end measured over one interval.
type sideSample struct {
	Index   int                  `json:"index"`
	Start   float64              `json:"start"` // seconds, from the start of the phase (warm-up or measured)
	End     float64              `json:"end"`
	Omitted bool                 `json:"omitted"`
	Streams []streamSample       `json:"streams"`
	CPU     map[string]CPUSample `json:"cpu"`
	Total   CPUSample            `json:"total"`
}

// streamSample is one stream over one interval, from one end's socket.
type streamSample struct {
	ID           int    `json:"id"`
	Bytes        uint64 `json:"bytes"`
	RTT          uint32 `json:"rtt_us"`
	RTTVar       uint32 `json:"rttvar_us"`
	Cwnd         uint64 `json:"cwnd_bytes"`
	Retransmits  uint32 `json:"retransmits"`
	DeliveryRate uint64 `json:"delivery_rate"` // bytes per second
}

func newSide(p params, streams []*stream, snd sender, host *telemetry.Sampler, tag string) *side {
	s := &side{p: p, streams: streams, snd: snd, host: host, tag: tag}
	s.bounds, s.nOmit = schedule(p.omit(), p.duration(), p.interval())
	s.last = make([]mark, len(streams))
	s.atOmit = make([]mark, len(streams))
	return s
}

// begin starts every stream thread and the interval clock.
func (s *side) begin() {
	reserveProcs(len(s.streams))
	s.t0 = time.Now()
	s.prevAt, s.omitAt = s.t0, s.t0
	s.cpuAtOmit = cpuSeconds()
	for _, st := range s.streams {
		dir := "rx"
		if st.send {
			dir = "tx"
		}
		st.run(&s.wg, s.snd, &s.halt, fmt.Sprintf("%s-%s-%d", s.tag, dir, st.id))
	}
}

// due returns when the next interval ends, and false after the last.
func (s *side) due() (time.Time, bool) {
	if s.next >= len(s.bounds) {
		return time.Time{}, false
	}
	return s.t0.Add(s.bounds[s.next]), true
}

// done reports whether every interval has been sampled.
func (s *side) done() bool { return s.next >= len(s.bounds) }

// sample ends the current interval now and returns what it measured.
func (s *side) sample() sideSample {
	now := time.Now()
	k := s.next
	s.next++
	out := sideSample{Index: k, Omitted: k < s.nOmit, Streams: make([]streamSample, len(s.streams))}
	phase := s.omitAt
	if out.Omitted {
		phase = s.t0
	}
	out.Start = round3(s.prevAt.Sub(phase).Seconds())
	out.End = round3(now.Sub(phase).Seconds())
	for i, st := range s.streams {
		m := s.markOf(st)
		out.Streams[i] = streamSample{
			ID: st.id, Bytes: m.bytes - s.last[i].bytes,
			RTT: m.tcp.RTT, RTTVar: m.tcp.RTTVar, Cwnd: m.tcp.Cwnd,
			Retransmits:  m.retrans - s.last[i].retrans,
			DeliveryRate: m.tcp.DeliveryRate,
		}
		s.last[i] = m
	}
	if s.host != nil {
		smp := s.host.Sample()
		out.CPU, out.Total = smp.PerCPU, smp.Total
	}
	if k == s.nOmit-1 { // the warm-up ends here: what follows is measured
		copy(s.atOmit, s.last)
		s.omitAt, s.cpuAtOmit = now, cpuSeconds()
	}
	s.prevAt = now
	return out
}

// markOf reads a stream's counters. TCP_INFO may fail once the peer has
// gone; the byte count never does.
func (s *side) markOf(st *stream) mark {
	m := mark{bytes: st.bytes.Load()}
	if ti, err := readTCPInfo(st.fd); err == nil {
		m.tcp, m.retrans = ti, ti.TotalRetrans
	}
	return m
}

// finish tells the senders to stop and waits up to grace for every stream
// thread to end (receivers end when their peer's sender does). Threads
// still running then have their sockets shut down, which ends them.
func (s *side) finish(grace time.Duration) {
	s.halt.Store(true)
	ch := make(chan struct{})
	go func() { s.wg.Wait(); close(ch) }()
	select {
	case <-ch:
		return
	case <-time.After(grace):
	}
	s.shutdown()
	<-ch
}

// shutdown ends every stream at once (an aborted test).
func (s *side) shutdown() {
	s.halt.Store(true)
	for _, st := range s.streams {
		_ = unix.Shutdown(st.fd, unix.SHUT_RDWR)
	}
}

// totals returns this end's byte counts once the stream threads ended.
func (s *side) totals() []streamTotal {
	out := make([]streamTotal, len(s.streams))
	for i, st := range s.streams {
		m := s.markOf(st)
		t := streamTotal{ID: st.id}
		if st.send {
			t.Sent, t.SentOmit = m.bytes, s.atOmit[i].bytes
			t.Retrans = m.retrans - s.atOmit[i].retrans
		} else {
			t.Received = m.bytes
		}
		out[i] = t
	}
	return out
}

// measuredCPU is the CPU time this process used since the warm-up ended.
func (s *side) measuredCPU() float64 { return round3(cpuSeconds() - s.cpuAtOmit) }

// errors lists what went wrong in the stream threads.
func (s *side) errors() []string {
	var out []string
	for _, st := range s.streams {
		if st.err != nil {
			out = append(out, st.err.Error())
		}
	}
	return out
}

// zeroCopy sums the MSG_ZEROCOPY counters of this end's senders.
func (s *side) zeroCopy() (sends, completions, copied uint64) {
	for _, st := range s.streams {
		sends += st.zc.sends.Load()
		completions += st.zc.completions.Load()
		copied += st.zc.copied.Load()
	}
	return sends, completions, copied
}

// closeAll closes the sockets; every thread must have ended.
func (s *side) closeAll() {
	for _, st := range s.streams {
		unix.Close(st.fd)
	}
	if z, ok := s.snd.(*sendfileSender); ok {
		z.close()
	}
}

// cpuSeconds is the user and system CPU time of this process.
func cpuSeconds() float64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

// newSender returns the sender for a zero-copy method.
func newSender(z ZeroCopy) (sender, error) {
	switch z {
	case Sendfile:
		return newSendfileSender()
	case MsgZeroCopy:
		return msgZCSender{}, nil
	}
	return copySender{}, nil
}
