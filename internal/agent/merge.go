package agent

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/result"
)

// startResult fills what is known once the data connections are open.
func (c *client) startResult(acc acceptMsg, streams []*engine.Stream, ch choice, notes []string) *result.Result {
	now := time.Now()
	res := &result.Result{Schema: result.Schema, RunID: now.UnixMilli(), Engine: "native", Intervals: []result.Interval{}}
	st := &res.Start
	st.Peer, st.Port, st.Timestamp = c.cfg.Peer, acc.Port, now.UTC().Round(time.Millisecond)
	if h, _, err := net.SplitHostPort(c.cfg.Peer); err == nil {
		st.Peer = h
	}
	st.Streams, st.Direction = c.p.Streams, c.p.Direction
	st.DurationS, st.OmitS, st.IntervalS = c.p.Duration.Seconds(), c.p.Omit.Seconds(), c.p.Interval.Seconds()
	st.Congestion, st.FQRate, st.ZeroCopy = c.p.Congestion, c.p.FQRate, c.p.ZeroCopy
	st.Mode, st.Size, st.SkipRxCopy = c.p.Mode, c.p.Size, c.p.SkipRxCopy
	if c.p.Mode != result.Stream {
		st.Depth = c.p.Requests()
	}
	if !c.p.OwnThreads() {
		st.Threads = c.p.Threads
	}
	st.Client, st.Server = c.me, c.peer
	st.Notes = notes
	st.LoadBefore = result.HostLoads{Client: engine.LoadKeys(c.load), Server: acc.Load}
	if c.loadNote != "" {
		st.Notes = append(st.Notes, "client: "+c.loadNote)
	}
	if acc.Load == nil && (c.load != nil || c.loadNote != "") { // this run looked (a probe does not)
		st.Notes = append(st.Notes, "server: CPU load before the run unknown: the agent could not look at its CPUs")
	}
	if ch.why != "" {
		st.Notes = append(st.Notes, "placement: "+ch.why)
	}
	if acc.Why != "" { // the agent placed its threads by its own look
		st.Notes = append(st.Notes, "placement: server: "+acc.Why)
	}
	mine := make([]int, len(streams))
	for i, s := range streams {
		mine[i] = s.CPU
		srv := -1
		if i < len(acc.Placement) {
			srv = acc.Placement[i]
		}
		si := engine.ReadSockInfo(s.FD)
		st.Connections = append(st.Connections, result.Connection{ID: s.ID, Sender: senderName(s.Send), ClientCPU: s.CPU, ServerCPU: srv,
			Local: si.Local, Remote: si.Remote})
		if i == 0 {
			// The agent's sockets run what --congestion asked for (every
			// data socket gets it), or a default this end cannot read.
			st.MSS, st.SenderCongestion, st.ReceiverCongestion = si.MSS, si.Congestion, c.p.Congestion
			if !s.Send {
				st.SenderCongestion, st.ReceiverCongestion = c.p.Congestion, si.Congestion
			}
		}
	}
	st.BlockSize = engine.BlockSize
	st.Placement = result.Placement{Client: engine.Used(mine), Server: engine.Used(acc.Placement), Source: ch.source}
	return res
}

func senderName(clientSends bool) string {
	if clientSends {
		return "client"
	}
	return "server"
}

// finishStart adds the socket buffers both ends got, and says when a
// kernel capped them.
func (c *client) finishStart(streams []*engine.Stream, server result.SockBufs) {
	st := &c.res.Start
	st.Window.Requested = c.p.Window
	st.Window.Client = engine.Buffers(c.fs, streams[0].FD, c.p.Window)
	st.Window.Server = server
	w := &st.Window
	switch c.p.Direction {
	case result.Send:
		w.Granted = min(w.Client.Sndbuf, w.Server.Rcvbuf)
	case result.Receive:
		w.Granted = min(w.Server.Sndbuf, w.Client.Rcvbuf)
	default:
		w.Granted = min(w.Client.Sndbuf, w.Server.Rcvbuf, w.Server.Sndbuf, w.Client.Rcvbuf)
	}
	for _, end := range []struct {
		name string
		b    result.SockBufs
	}{{"client", w.Client}, {"server", w.Server}} {
		for _, cap := range end.b.CappedBy {
			st.Notes = append(st.Notes, fmt.Sprintf("window: asked for %d bytes, the %s's kernel capped it at %s: raise it there (sysctl -w %s=%d)",
				c.p.Window, end.name, cap, sysctlKey(cap), c.p.Window))
		}
	}
}

// merge joins this end's and the agent's sample of one interval. Bytes
// are the client's; the TCP fields come from whichever end sends.
func (c *client) merge(mine engine.Sample, theirs *engine.Sample) result.Interval {
	iv := result.Interval{Start: mine.Start, End: mine.End, Omitted: mine.Omitted,
		Streams: make([]result.StreamInterval, len(mine.Streams))}
	secs := mine.End - mine.Start
	iv.CPU.Client = mine.CPU
	iv.CPUTotal.Client = mine.Total
	iv.CPU.Server = map[string]result.CPUSample{}
	if theirs != nil {
		iv.CPU.Server = theirs.CPU
		total := theirs.Total
		iv.CPUTotal.Server = &total
	}
	for i, ms := range mine.Streams {
		send := c.p.ClientSends(i)
		var peer *engine.StreamSample
		if theirs != nil && i < len(theirs.Streams) {
			peer = &theirs.Streams[i]
		}
		tcp := ms // the sender's TCP_INFO
		if !send {
			tcp = engine.StreamSample{}
			if peer != nil {
				tcp = *peer
			}
		}
		si := result.StreamInterval{ID: ms.ID, Sender: senderName(send), Bytes: ms.Bytes,
			BitsPerSecond: bps(ms.Bytes, secs), RTTus: tcp.RTT, RTTVarUs: tcp.RTTVar, CwndBytes: tcp.Cwnd,
			Retransmits: uint64(tcp.Retransmits), DeliveryRateBps: float64(tcp.DeliveryRate) * 8,
			Transactions: ms.Transactions}
		si.TCP = c.tcpOf(send, ms, peer)
		if peer != nil {
			b := peer.Bytes
			si.PeerBytes = &b
		}
		si.RxCPU = receiverCPU(send, ms, theirs, i)
		iv.Streams[i] = si
		iv.Sum.Bytes += si.Bytes
		iv.Sum.Retransmits += si.Retransmits
	}
	iv.Sum.BitsPerSecond = bps(iv.Sum.Bytes, secs)
	if tx := mine.Transactions; tx != nil {
		it := &result.IntervalTransactions{Count: tx.Count, PerSecond: perSecond(tx.Count, secs)}
		if tx.RTT != nil {
			it.RTTUs = *tx.RTT
		}
		iv.Transactions = it
	}
	return iv
}

// tcpOf is a stream's TCP account over an interval: the sending socket's,
// with the receiving socket's rcv_* fields. Both ends of a transaction
// flow send; its account is the client's socket's own.
func (c *client) tcpOf(send bool, mine engine.StreamSample, peer *engine.StreamSample) *result.TCPStats {
	snd, rcv := &mine, peer
	if c.p.Mode != result.Stream {
		rcv = &mine
	} else if !send {
		snd, rcv = peer, &mine
	}
	if snd == nil || snd.TCP == nil {
		return nil
	}
	t := *snd.TCP
	if rcv != nil {
		rcv.Rcv.Fill(&t)
	}
	return &t
}

func perSecond(n uint64, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(n) / secs
}

// totals computes the measured bytes of each stream: the sender's count
// (written after its warm-up mark: the byte offset in the TCP stream, so
// no clock is involved) and the receiver's, over the receiver's own
// window by its own clock (engine.StreamTotal.Measured: its per-interval
// counts from its warm-up mark to its last sample). Each side cuts its
// warm-up by its own clock; what was queued or in flight at the edges of
// the window is in the sender's count and not the receiver's.
func (c *client) totals(em *endMsg) result.End {
	mine := c.side.Totals()
	e := result.End{Seconds: c.side.MeasuredSeconds()}
	var rcvClient, rcvServer uint64 // bytes received by each end, over its own window
	for i, m := range mine {
		var theirs engine.StreamTotal
		if i < len(em.Streams) {
			theirs = em.Streams[i]
		}
		snd, rcv := m, theirs
		if !c.p.ClientSends(i) {
			snd, rcv = theirs, m
			rcvClient += m.Measured
		} else {
			rcvServer += theirs.Measured
		}
		se := result.StreamEnd{ID: m.ID, Sender: senderName(c.p.ClientSends(i)),
			SentBytes: snd.Sent - min(snd.SentOmit, snd.Sent), ReceivedBytes: rcv.Measured,
			Retransmits: uint64(snd.Retrans)}
		e.Streams = append(e.Streams, se)
		e.SumSent.Bytes += se.SentBytes
		e.SumSent.Retransmits += se.Retransmits
		e.SumReceived.Bytes += se.ReceivedBytes
	}
	e.SumSent.BitsPerSecond = bps(e.SumSent.Bytes, e.Seconds)
	switch c.p.Direction {
	case result.Receive:
		e.SumReceived.Seconds = e.Seconds
		e.SumReceived.BitsPerSecond = bps(rcvClient, e.Seconds)
	case result.Bidir: // each end's bytes over its own window
		e.SumReceived.Seconds = em.Seconds
		e.SumReceived.BitsPerSecond = bps(rcvServer, em.Seconds) + bps(rcvClient, e.Seconds)
	default:
		e.SumReceived.Seconds = em.Seconds
		e.SumReceived.BitsPerSecond = bps(rcvServer, em.Seconds)
	}
	e.CPU = result.EndCPU{ClientSeconds: c.side.MeasuredCPU(), ServerSeconds: em.CPUSeconds,
		ServerUserSeconds: em.CPUUser, ServerSystemSeconds: em.CPUSystem}
	e.CPU.ClientUserSeconds, e.CPU.ClientSystemSeconds = c.side.MeasuredCPUSplit()
	e.Errors = append(c.side.Errors(), em.Errors...)
	if c.p.ZeroCopy != result.NoZeroCopy {
		e.ZeroCopy = &result.ZCReport{Method: c.p.ZeroCopy}
		e.ZeroCopy.Sends, e.ZeroCopy.Completions, e.ZeroCopy.Copied = c.side.ZeroCopy()
		e.ZeroCopy.Sends += em.ZCSends
		e.ZeroCopy.Completions += em.ZCCompletions
		e.ZeroCopy.Copied += em.ZCCopied
	}
	e.Unread = result.HostUnread{Client: c.smp.Unread(), Server: em.Unread}
	c.otherLoad(&e, em)
	if em.Shared {
		e.Foreign.Notes = append(e.Foreign.Notes, SharedNote)
	}
	if c.p.Mode != result.Stream {
		e.Transactions = c.transactions(e, em)
	} else {
		e.RxCopy = c.rxCopy(em, rcvClient, rcvServer)
	}
	return e
}

// transactions is end.transactions: the client's count and latency over
// its window, the agent's count over its own, both ends' CPU time per
// transaction.
func (c *client) transactions(e result.End, em *endMsg) *result.Transactions {
	count, lat, cerrs := c.side.Transactions()
	t := &result.Transactions{Mode: c.p.Mode, Count: count, PerSecond: perSecond(count, e.Seconds),
		Samples: lat.Samples, RTTUs: lat.RTTUs, Notes: lat.Notes, Size: c.p.Size, Depth: c.p.Requests(),
		Flows: c.p.Streams, Threads: c.p.Threads, ConnectErrors: cerrs}
	for _, st := range em.Streams {
		t.ServerCount += st.Transactions
	}
	if count > 0 {
		t.CPUUsPerTransaction.Client = e.CPU.ClientSeconds * 1e6 / float64(count)
	}
	if t.ServerCount > 0 {
		t.CPUUsPerTransaction.Server = e.CPU.ServerSeconds * 1e6 / float64(t.ServerCount)
	}
	return t
}

// rxCopy is end.rx_copy: what the receiving ends did of the copy, and
// their receiving threads' CPU time per 10^9 bytes received (rcvClient,
// rcvServer: what each end received over its window).
func (c *client) rxCopy(em *endMsg, rcvClient, rcvServer uint64) *result.RxCopyReport {
	r := &result.RxCopyReport{Asked: c.p.SkipRxCopy}
	type end struct {
		method result.SkipRxCopy
		note   string
		bytes  uint64
	}
	var ends []end
	if rcvServer > 0 || c.p.Direction != result.Receive {
		ends = append(ends, end{em.RxMethod, em.RxNote, rcvServer})
		r.MappedBytes += em.RxMapped
		r.CopiedBytes += em.RxCopied
		r.ReceiverThreadCPUSeconds += em.RxThreadCPU
	}
	if c.p.Direction != result.Send {
		m, note, mapped, copied, cpu := c.side.RxCopy()
		ends = append(ends, end{m, note, rcvClient})
		r.MappedBytes += mapped
		r.CopiedBytes += copied
		r.ReceiverThreadCPUSeconds += cpu
	}
	var bytes uint64
	for i, e := range ends {
		bytes += e.bytes
		if i == 0 || e.method == r.Method {
			r.Method = e.method
		} else {
			r.Method = result.RxCopy
		}
		if e.note != "" && !strings.Contains(r.Note, e.note) {
			r.Note = strings.TrimPrefix(r.Note+"; "+e.note, "; ")
		}
	}
	r.ReceiverThreadCPUSeconds = result.Round3(r.ReceiverThreadCPUSeconds)
	if bytes > 0 {
		r.ReceiverCPUSecondsPerGB = r.ReceiverThreadCPUSeconds / (float64(bytes) / 1e9)
	}
	return r
}

// SharedNote is end.foreign.notes' line for a test the agent ran beside
// another client's (serve --max-clients).
const SharedNote = "server: another client's test ran on the agent at the same time (serve --max-clients): the server's CPU time is this test's threads' only, and the other test's load is in neither end's other load"

// otherLoad puts both ends' other load on the end: with both ends on one
// machine, each end's report counts the other end's threads and process
// as foreign, and they are taken out.
func (c *client) otherLoad(e *result.End, em *endMsg) {
	mine, err := c.side.Foreign()
	var notes []string
	if err != nil {
		notes = append(notes, "client: "+err.Error())
	}
	if em.ForeignNote != "" {
		notes = append(notes, "server: "+em.ForeignNote)
	}
	theirs := em.Foreign
	// One process holding both ends (a test) counts both in its own.
	if c.me.BootID != "" && c.me.BootID == c.peer.BootID && mine != nil && theirs != nil && mine.PID != theirs.PID {
		m, t := *mine, *theirs // Without changes what it is given: keep the reports apart
		m.CPU, t.CPU = maps.Clone(mine.CPU), maps.Clone(theirs.CPU)
		m.Top, t.Top = slices.Clone(mine.Top), slices.Clone(theirs.Top)
		m.Without(theirs)
		t.Without(mine)
		mine, theirs = &m, &t
	}
	e.Foreign = result.HostForeign{Client: mine, Server: theirs, Notes: notes}
}

func bps(bytes uint64, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(int64(float64(bytes) * 8 / secs))
}

// sysctlKey is the key of a "key=value" the engine reported.
func sysctlKey(kv string) string {
	k, _, _ := strings.Cut(kv, "=")
	return k
}

// receiverCPU is the softirq CPU of stream i's receiving socket, from the
// sample of the end that receives it.
func receiverCPU(clientSends bool, mine engine.StreamSample, theirs *engine.Sample, i int) *int {
	if !clientSends {
		return mine.RxCPU
	}
	if theirs != nil && i < len(theirs.Streams) {
		return theirs.Streams[i].RxCPU
	}
	return nil
}
