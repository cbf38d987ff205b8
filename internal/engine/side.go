package engine

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/latency"
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

	halt  atomic.Bool // tells senders to finish
	abort atomic.Bool // tells threads that multiplex flows to end now
	wg    sync.WaitGroup

	// The threads, as the sampler sees them; rx is what receivers do
	// (RxMethod) and rxNote why it is not what was asked.
	workers []*worker
	rx      result.SkipRxCopy
	rxNote  string
	crr     *CRR
	crrErrs atomic.Uint64
	// A transaction client's latency: the interval's (iv) and the
	// measured window's (win), merged from every thread's.
	iv, win *latency.Recorder
	// Failures of threads that carry several flows.
	errMu sync.Mutex
	errs  []string

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
	txns    uint64
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
	// Transactions is a transaction test's interval: the transactions
	// this end completed (client) or answered (agent), and the client's
	// latency of them.
	Transactions *TxnSample `json:"transactions,omitempty"`
}

// TxnSample is one end's transactions over an interval. It crosses the
// agent's wire as it is (the agent's has no latency).
type TxnSample struct {
	Count   uint64       `json:"count"`
	Samples int64        `json:"samples,omitempty"`
	RTT     *latency.RTT `json:"rtt_us,omitempty"`
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
	// TCP is a sending socket's account of the interval, Rcv a
	// receiving socket's (tcpinfo.go); absent where TCP_INFO was not
	// read (Params.NoTCPInfo, a crr flow, a kernel before Linux 4.19).
	TCP *result.TCPStats `json:"tcp,omitempty"`
	Rcv *RcvTCP          `json:"rcv,omitempty"`
	// Transactions is what the flow completed or answered.
	Transactions uint64 `json:"transactions,omitempty"`
}

// NewSide prepares one end of test p over streams, whose descriptors it
// takes: Close closes them, and so does a failure here. host samples this
// end's CPUs at each boundary (nil: none); tag prefixes the thread names
// ("lrc" for the client, "lrs" for the agent).
//
// Threads 0 in p is resolved here (ThreadsFor, over the CPUs this process
// may use); a client sends the test its own resolution, so that both ends
// run the same.
func NewSide(p Params, streams []*Stream, host *telemetry.Sampler, tag string) (*Side, error) {
	if p.Threads == 0 {
		cpus, _ := AllowedCPUs()
		p.Threads = p.ThreadsFor(len(cpus))
	}
	if err := p.Check(); err != nil {
		CloseStreams(streams)
		return nil, err
	}
	snd, err := newSender(p.ZeroCopy)
	if err != nil {
		CloseStreams(streams)
		return nil, err
	}
	s := &Side{p: p, streams: streams, snd: snd, host: host, tag: tag}
	s.bounds, s.nOmit = Schedule(p.Omit, p.Duration, p.Interval)
	s.last = make([]mark, len(streams))
	s.atOmit = make([]mark, len(streams))
	s.rx, s.rxNote = RxMethod(p.SkipRxCopy)
	return s, nil
}

// SetCRR tells a crr test's Side where its connections go (the client)
// or come from (the agent, whose listeners it then owns). Call it before
// Begin.
func (s *Side) SetCRR(c CRR) { s.crr = &c }

// Params is the test as this Side runs it (Threads resolved).
func (s *Side) Params() Params { return s.p }

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

// Begin starts every thread and the interval clock.
func (s *Side) Begin() {
	reserveProcs(s.p.Threads)
	for i, st := range s.streams {
		s.last[i] = s.markOf(st) // TCP's chrono stats count from here
	}
	s.t0 = time.Now()
	s.prevAt, s.omitAt = s.t0, s.t0
	s.cpuAtOmit = cpuSeconds()
	s.userAtOmit, s.sysAt = cpuSplit()
	switch {
	case s.p.Mode != result.Stream:
		s.beginTxn()
	case s.p.OwnThreads():
		for _, st := range s.streams {
			dir := "rx"
			if st.Send {
				dir = "tx"
			}
			w := &worker{cpu: st.CPU, name: fmt.Sprintf("%s-%s-%d", s.tag, dir, st.ID), recv: !st.Send}
			s.workers = append(s.workers, w)
			st.runAs(&s.wg, s.snd, s.rx, &s.halt, w)
		}
	default:
		for k, flows := range s.byThread() {
			pt := &pollStreams{flows: flows, snd: s.snd, rx: s.rx, halt: &s.halt, abort: &s.abort,
				w: &worker{cpu: flows[0].CPU, name: fmt.Sprintf("%s-f%d", s.tag, k)}}
			for _, st := range flows {
				pt.w.recv = pt.w.recv || !st.Send
			}
			s.start(pt.w, pt.run)
		}
	}
	if s.nOmit == 0 {
		s.startForeign()
	}
}

// byThread groups the streams by the thread that carries them (Thread).
func (s *Side) byThread() [][]*Stream {
	out := make([][]*Stream, min(s.p.Threads, len(s.streams)))
	for i, st := range s.streams {
		k := Thread(i, len(out))
		out[k] = append(out[k], st)
	}
	return out
}

// start runs fn on a thread of its own, pinned to w's CPU and named, as
// a stream's thread is, and records it.
func (s *Side) start(w *worker, fn func() error) {
	s.workers = append(s.workers, w)
	s.wg.Add(1)
	goLocked(func() {
		defer s.wg.Done()
		if err := pinThread(w.cpu); err != nil {
			s.noteErr(err)
			return
		}
		nameThread(w.name)
		w.tid.Store(int32(unix.Gettid()))
		if err := fn(); err != nil {
			s.noteErr(err)
		}
	})
}

// noteErr records a thread's failure that no stream owns.
func (s *Side) noteErr(err error) {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	s.errs = append(s.errs, err.Error())
}

// beginTxn starts a transaction test's threads: the client's make
// requests, the agent's answer them.
func (s *Side) beginTxn() {
	client := len(s.streams) > 0 && s.streams[0].Send
	if client {
		s.iv, s.win = latency.NewRecorder(), latency.NewRecorder()
	}
	for k, flows := range s.byThread() {
		t := &txnThread{p: s.p, client: client, all: s.streams, t0: s.t0, halt: &s.halt, abort: &s.abort,
			errs: &s.crrErrs, crr: s.crr, ln: -1,
			w: &worker{cpu: flows[0].CPU, name: fmt.Sprintf("%s-t%d", s.tag, k)}}
		if client {
			t.w.lat = &recSwap{}
		}
		for j, st := range flows {
			f := &txnFlow{st: st, idx: st.ID - 1, ti: int32(j), fd: st.FD}
			if client {
				f.ts = make([]int64, s.p.Requests())
			}
			t.flows = append(t.flows, f)
		}
		if s.crr != nil && !client && k < len(s.crr.Listeners) {
			t.ln = s.crr.Listeners[k]
			s.crr.Listeners[k] = -1 // the thread closes it
		}
		s.start(t.w, t.run)
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
	var txns uint64
	for i, st := range s.streams {
		m := s.markOf(st)
		ss := StreamSample{
			ID: st.ID, Bytes: m.bytes - s.last[i].bytes,
			RTT: m.tcp.RTT, RTTVar: m.tcp.RTTVar, Cwnd: m.tcp.Cwnd,
			Retransmits:  m.retrans - s.last[i].retrans,
			DeliveryRate: m.tcp.DeliveryRate, RxCPU: incomingCPU(st),
			Transactions: m.txns - s.last[i].txns,
		}
		if st.Send || s.p.Mode != result.Stream {
			ss.TCP = senderStats(s.last[i].tcp, m.tcp)
		}
		if !st.Send || s.p.Mode != result.Stream {
			ss.Rcv = receiverStats(s.last[i].tcp, m.tcp)
		}
		txns += ss.Transactions
		out.Streams[i] = ss
		s.last[i] = m
	}
	if s.p.Mode != result.Stream {
		out.Transactions = s.txnSample(txns, k >= s.nOmit)
	}
	s.readThreadCPU(k == s.nOmit-1)
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
	m := mark{bytes: st.bytes.Load(), txns: st.txns.Load()}
	if s.p.NoTCPInfo || st.FD < 0 {
		return m
	}
	if ti, err := readTCPInfo(st.FD); err == nil {
		m.tcp, m.retrans = ti, ti.TotalRetrans
	}
	return m
}

// txnSample is a transaction test's interval: the transactions counted
// (txns) and, on the client, every thread's latency of the interval,
// which goes into the window's too when measured.
func (s *Side) txnSample(txns uint64, measured bool) *TxnSample {
	ts := &TxnSample{Count: txns}
	if s.iv == nil {
		return ts
	}
	s.iv.Reset()
	for _, w := range s.workers {
		if r := w.lat.take(time.Second); r != nil {
			s.iv.Merge(r)
			r.Reset()
		}
	}
	if measured {
		s.win.Merge(s.iv)
	}
	sum := s.iv.Summary()
	ts.Samples, ts.RTT = sum.Samples, &sum.RTTUs
	return ts
}

// readThreadCPU reads every thread's CPU clock at every sample, keeping
// the one at the warm-up's end (omit; without a warm-up the threads'
// clocks start with the test) and the last that could be read (a
// receiver ends, and its clock goes, when its peer's sender does).
func (s *Side) readThreadCPU(omit bool) {
	for _, w := range s.workers {
		ns, ok := threadCPU(w.tid.Load())
		if !ok {
			continue
		}
		if omit {
			w.cpuOmit = ns
		}
		w.cpuLast = ns
	}
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
	s.abort.Store(true)
	for _, st := range s.streams {
		if st.FD >= 0 {
			_ = unix.Shutdown(st.FD, unix.SHUT_RDWR)
		}
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
	// Transactions is what the flow completed (client) or answered
	// (agent) in the same window.
	Transactions uint64 `json:"transactions,omitempty"`
}

// Totals returns this end's byte counts once the stream threads ended.
func (s *Side) Totals() []StreamTotal {
	out := make([]StreamTotal, len(s.streams))
	for i, st := range s.streams {
		m := s.markOf(st)
		t := StreamTotal{ID: st.ID, Measured: s.last[i].bytes - min(s.atOmit[i].bytes, s.last[i].bytes),
			Transactions: s.last[i].txns - min(s.atOmit[i].txns, s.last[i].txns)}
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

// Errors lists what went wrong in the threads, at most one per stream.
func (s *Side) Errors() []string {
	s.errMu.Lock()
	out := append([]string(nil), s.errs...)
	s.errMu.Unlock()
	for _, st := range s.streams {
		if st.err != nil {
			out = append(out, st.err.Error())
		}
	}
	if len(out) > len(s.streams) {
		out = append(out[:len(s.streams)-1], fmt.Sprintf("and %d more errors", len(out)-len(s.streams)+1))
	}
	return out
}

// Transactions is a transaction test's account of its measured window:
// the transactions counted, the client's latency of them, and the crr
// connections that failed (and were made again).
func (s *Side) Transactions() (count uint64, lat latency.Summary, connectErrors uint64) {
	for i := range s.streams {
		count += s.last[i].txns - min(s.atOmit[i].txns, s.last[i].txns)
	}
	if s.win != nil {
		lat = s.win.Summary()
	}
	return count, lat, s.crrErrs.Load()
}

// RxCopy is what this end's receivers did of the copy: the method used
// ("" copies) and why it is not the one asked for, the bytes a zerocopy
// receiver mapped and copied, and the CPU time (s) of the threads that
// receive over the measured window.
func (s *Side) RxCopy() (method result.SkipRxCopy, note string, mapped, copied uint64, threadCPU float64) {
	for _, st := range s.streams {
		mapped += st.rx.mapped.Load()
		copied += st.rx.copied.Load()
	}
	var ns int64
	for _, w := range s.workers {
		if w.recv && w.cpuLast > w.cpuOmit {
			ns += w.cpuLast - w.cpuOmit
		}
	}
	return s.rx, s.rxNote, mapped, copied, result.Round3(float64(ns) / 1e9)
}

// ThreadCPU is the CPU time (s) of this end's stream threads over the
// measured window, by their own clocks: what this test cost when the
// process runs others beside it (MeasuredCPU counts the whole process).
func (s *Side) ThreadCPU() float64 {
	var ns int64
	for _, w := range s.workers {
		if w.cpuLast > w.cpuOmit {
			ns += w.cpuLast - w.cpuOmit
		}
	}
	return result.Round3(float64(ns) / 1e9)
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
	if s.crr != nil {
		for _, fd := range s.crr.Listeners {
			CloseFD(fd) // those no thread took
		}
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
