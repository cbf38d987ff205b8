package engine

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/telemetry"
)

// Side is one end's half of a running test: its stream threads, its
// interval clock and its samples. Client and agent run the same code.
// A Side is driven from one goroutine (its stream threads aside).
type Side struct {
	p       Params
	streams []*Stream // connection i is stream id i+1
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
	userAtOmit, sysAt  float64 // cpuAtOmit split (cpusplit.go)

	// The other load on this end's CPUs over the measured window
	// (WatchForeign): tracked from the warm-up's end to the last sample.
	fgFS    *hostfs.FS
	fg      *telemetry.ForeignTracker
	foreign *telemetry.Foreign
	fgErr   error
}

// mark is a stream's counters at one instant.
type mark struct {
	bytes   uint64
	retrans uint32
	tcp     tcpInfo
}

// Sample is what one end measured over one interval. It crosses the
// agent's wire as it is (the interval message).
type Sample struct {
	Index   int                         `json:"index"`
	Start   float64                     `json:"start"` // seconds, from the start of the phase (warm-up or measured)
	End     float64                     `json:"end"`
	Omitted bool                        `json:"omitted"`
	Streams []StreamSample              `json:"streams"`
	CPU     map[string]result.CPUSample `json:"cpu"`
	Total   result.CPUSample            `json:"total"`
}

// StreamSample is one stream over one interval, from one end's socket.
type StreamSample struct {
	ID           int    `json:"id"`
	Bytes        uint64 `json:"bytes"`
	RTT          uint32 `json:"rtt_us"`
	RTTVar       uint32 `json:"rttvar_us"`
	Cwnd         uint64 `json:"cwnd_bytes"`
	Retransmits  uint32 `json:"retransmits"`
	DeliveryRate uint64 `json:"delivery_rate"`    // bytes per second
	RxCPU        *int   `json:"rx_cpu,omitempty"` // a receiving stream's softirq CPU (incomingCPU)
}

// NewSide prepares one end of test p over streams, whose descriptors it
// takes: Close closes them, and so does a failure here. host samples this
// end's CPUs at each boundary (nil: none); tag prefixes the thread names
// ("lrc" for the client, "lrs" for the agent).
func NewSide(p Params, streams []*Stream, host *telemetry.Sampler, tag string) (*Side, error) {
	snd, err := newSender(p.ZeroCopy)
	if err != nil {
		CloseStreams(streams)
		return nil, err
	}
	s := &Side{p: p, streams: streams, snd: snd, host: host, tag: tag}
	s.bounds, s.nOmit = Schedule(p.Omit, p.Duration, p.Interval)
	s.last = make([]mark, len(streams))
	s.atOmit = make([]mark, len(streams))
	return s, nil
}

// CloseStreams closes the descriptors of streams no Side took.
func CloseStreams(streams []*Stream) {
	for _, s := range streams {
		CloseFD(s.FD)
	}
}

// WatchForeign makes the Side measure, over its measured window, the
// load on this host's CPUs that is not this process's (Foreign), reading
// fs. Call it before Begin.
func (s *Side) WatchForeign(fs *hostfs.FS) { s.fgFS = fs }

// Begin starts every stream thread and the interval clock.
func (s *Side) Begin() {
	reserveProcs(len(s.streams))
	s.t0 = time.Now()
	s.prevAt, s.omitAt = s.t0, s.t0
	s.cpuAtOmit = cpuSeconds()
	s.userAtOmit, s.sysAt = cpuSplit()
	for _, st := range s.streams {
		dir := "rx"
		if st.Send {
			dir = "tx"
		}
		st.run(&s.wg, s.snd, &s.halt, fmt.Sprintf("%s-%s-%d", s.tag, dir, st.ID))
	}
	if s.nOmit == 0 {
		s.startForeign()
	}
}

func (s *Side) startForeign() {
	if s.fgFS != nil {
		s.fg = telemetry.StartForeign(s.fgFS, os.Getpid())
	}
}

// Foreign is the other load on this end's CPUs over the measured window,
// once the last interval is sampled; nil and why when it is unknown (nil,
// nil without WatchForeign).
func (s *Side) Foreign() (*telemetry.Foreign, error) { return s.foreign, s.fgErr }

// Due returns when the next interval ends, and false after the last.
func (s *Side) Due() (time.Time, bool) {
	if s.next >= len(s.bounds) {
		return time.Time{}, false
	}
	return s.t0.Add(s.bounds[s.next]), true
}

// Done reports whether every interval has been sampled.
func (s *Side) Done() bool { return s.next >= len(s.bounds) }

// Halt tells the senders to finish; Finish waits for them.
func (s *Side) Halt() { s.halt.Store(true) }

// EndNow makes the next Sample the last: the other end stopped the test
// (the agent's clock may be a little behind the client's).
func (s *Side) EndNow() {
	if !s.Done() {
		s.next = len(s.bounds) - 1
	}
}

// MeasuredSeconds is the length of the measured window so far: from the
// end of the warm-up to the last sample.
func (s *Side) MeasuredSeconds() float64 { return result.Round3(s.prevAt.Sub(s.omitAt).Seconds()) }

// Sample ends the current interval now and returns what it measured.
func (s *Side) Sample() Sample {
	now := time.Now()
	k := s.next
	s.next++
	out := Sample{Index: k, Omitted: k < s.nOmit, Streams: make([]StreamSample, len(s.streams))}
	phase := s.omitAt
	if out.Omitted {
		phase = s.t0
	}
	out.Start = result.Round3(s.prevAt.Sub(phase).Seconds())
	out.End = result.Round3(now.Sub(phase).Seconds())
	for i, st := range s.streams {
		m := s.markOf(st)
		out.Streams[i] = StreamSample{
			ID: st.ID, Bytes: m.bytes - s.last[i].bytes,
			RTT: m.tcp.RTT, RTTVar: m.tcp.RTTVar, Cwnd: m.tcp.Cwnd,
			Retransmits:  m.retrans - s.last[i].retrans,
			DeliveryRate: m.tcp.DeliveryRate, RxCPU: incomingCPU(st),
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
		s.userAtOmit, s.sysAt = cpuSplit()
		s.startForeign()
	}
	s.prevAt = now
	if s.Done() && s.fg != nil {
		s.foreign, s.fgErr = s.fg.Stop()
		s.fg = nil
	}
	return out
}

// markOf reads a stream's counters. TCP_INFO may fail once the peer has
// gone; the byte count never does.
func (s *Side) markOf(st *Stream) mark {
	m := mark{bytes: st.bytes.Load()}
	if ti, err := readTCPInfo(st.FD); err == nil {
		m.tcp, m.retrans = ti, ti.TotalRetrans
	}
	return m
}

// Moved is how many bytes every stream of this end has moved so far. Unlike
// Sample it may be called from any goroutine: the client and the agent
// watch it to notice a path that stopped carrying anything.
func (s *Side) Moved() uint64 {
	var n uint64
	for _, st := range s.streams {
		n += st.bytes.Load()
	}
	return n
}

// Finish tells the senders to stop and waits up to grace for every stream
// thread to end (receivers end when their peer's sender does). Threads
// still running then have their sockets shut down, which ends them.
func (s *Side) Finish(grace time.Duration) {
	s.halt.Store(true)
	ch := make(chan struct{})
	go func() { s.wg.Wait(); close(ch) }()
	select {
	case <-ch:
		return
	case <-time.After(grace):
	}
	s.Shutdown()
	<-ch
}

// Shutdown ends every stream at once (an aborted test).
func (s *Side) Shutdown() {
	s.halt.Store(true)
	for _, st := range s.streams {
		_ = unix.Shutdown(st.FD, unix.SHUT_RDWR)
	}
}

// StreamTotal is one end's byte counts of one stream at the end of a
// test. It crosses the agent's wire as it is (the end message).
type StreamTotal struct {
	ID       int    `json:"id"`
	Sent     uint64 `json:"sent"`      // bytes written, if this end sends
	SentOmit uint64 `json:"sent_omit"` // bytes written during the warm-up
	Received uint64 `json:"received"`  // bytes read, if this end receives
	Retrans  uint32 `json:"retrans"`   // retransmitted segments after the warm-up, if this end sends
	// Measured is the bytes this end moved (sent or read) in its own
	// measured window, from its warm-up mark to its last sample: the sum
	// of its measured intervals' counts, by its own clock.
	Measured uint64 `json:"measured"`
}

// Totals returns this end's byte counts once the stream threads ended.
func (s *Side) Totals() []StreamTotal {
	out := make([]StreamTotal, len(s.streams))
	for i, st := range s.streams {
		m := s.markOf(st)
		t := StreamTotal{ID: st.ID, Measured: s.last[i].bytes - min(s.atOmit[i].bytes, s.last[i].bytes)}
		if st.Send {
			t.Sent, t.SentOmit = m.bytes, s.atOmit[i].bytes
			t.Retrans = m.retrans - s.atOmit[i].retrans
		} else {
			t.Received = m.bytes
		}
		out[i] = t
	}
	return out
}

// MeasuredCPU is the CPU time this process used since the warm-up ended.
func (s *Side) MeasuredCPU() float64 { return result.Round3(cpuSeconds() - s.cpuAtOmit) }

// Errors lists what went wrong in the stream threads.
func (s *Side) Errors() []string {
	var out []string
	for _, st := range s.streams {
		if st.err != nil {
			out = append(out, st.err.Error())
		}
	}
	return out
}

// ZeroCopy sums the MSG_ZEROCOPY counters of this end's senders.
func (s *Side) ZeroCopy() (sends, completions, copied uint64) {
	for _, st := range s.streams {
		sends += st.zc.sends.Load()
		completions += st.zc.completions.Load()
		copied += st.zc.copied.Load()
	}
	return sends, completions, copied
}

// Close closes the sockets; every thread must have ended (Finish).
func (s *Side) Close() {
	CloseStreams(s.streams)
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

// newSender returns the sender for a zero-copy method.
func newSender(z result.ZeroCopy) (sender, error) {
	switch z {
	case result.Sendfile:
		return newSendfileSender()
	case result.MsgZeroCopy:
		return msgZCSender{}, nil
	}
	return copySender{}, nil
}
