package engine

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/linerate/linerate/internal/hostfs"
)

// startResult fills what is known once the data connections are open.
func (c *client) startResult(acc acceptMsg, streams []*stream, source string, notes []string) *Result {
	now := time.Now()
	res := &Result{Schema: Schema, RunID: now.UnixMilli(), Engine: "native", Intervals: []Interval{}}
	st := &res.Start
	st.Peer, st.Port, st.Timestamp = c.cfg.Peer, acc.Port, now.UTC().Round(time.Millisecond)
	if h, _, err := net.SplitHostPort(c.cfg.Peer); err == nil {
		st.Peer = h
	}
	st.Streams, st.Direction = c.p.Streams, c.p.Direction
	st.DurationS, st.OmitS, st.IntervalS = c.p.duration().Seconds(), c.p.omit().Seconds(), c.p.interval().Seconds()
	st.Congestion, st.FQRate, st.ZeroCopy = c.p.Congestion, c.p.FQRate, c.p.ZeroCopy
	st.Client, st.Server = c.me, c.peer
	st.Notes = notes
	mine := make([]int, len(streams))
	for i, s := range streams {
		mine[i] = s.cpu
		srv := -1
		if i < len(acc.Placement) {
			srv = acc.Placement[i]
		}
		st.Connections = append(st.Connections, Connection{ID: s.id, Sender: senderName(s.send), ClientCPU: s.cpu, ServerCPU: srv})
	}
	st.Placement = Placement{Client: used(mine), Server: used(acc.Placement), Source: source}
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
func (c *client) finishStart(streams []*stream, server SockBufs) {
	st := &c.res.Start
	st.Window.Requested = c.p.Window
	st.Window.Client = sockBufs(c.fs, streams[0].fd, c.p.Window)
	st.Window.Server = server
	w := &st.Window
	switch c.p.Direction {
	case Send:
		w.Granted = min(w.Client.Sndbuf, w.Server.Rcvbuf)
	case Receive:
		w.Granted = min(w.Server.Sndbuf, w.Client.Rcvbuf)
	default:
		w.Granted = min(w.Client.Sndbuf, w.Server.Rcvbuf, w.Server.Sndbuf, w.Client.Rcvbuf)
	}
	for _, end := range []struct {
		name string
		b    SockBufs
	}{{"client", w.Client}, {"server", w.Server}} {
		for _, cap := range end.b.CappedBy {
			st.Notes = append(st.Notes, fmt.Sprintf("window: asked for %d bytes, the %s's kernel capped it at %s: raise it there (sysctl -w %s=%d)",
				c.p.Window, end.name, cap, sysctlKey(cap), c.p.Window))
		}
	}
}

// merge joins this end's and the agent's sample of one interval. Bytes
// are the client's; the TCP fields come from whichever end sends.
func (c *client) merge(mine sideSample, theirs *sideSample) Interval {
	iv := Interval{Start: mine.Start, End: mine.End, Omitted: mine.Omitted,
		Streams: make([]StreamInterval, len(mine.Streams))}
	secs := mine.End - mine.Start
	iv.CPU.Client = mine.CPU
	iv.CPUTotal.Client = mine.Total
	iv.CPU.Server = map[string]CPUSample{}
	if theirs != nil {
		iv.CPU.Server = theirs.CPU
		total := theirs.Total
		iv.CPUTotal.Server = &total
	}
	for i, ms := range mine.Streams {
		send := c.p.clientSends(i)
		tcp := ms
		if !send {
			tcp = streamSample{}
			if theirs != nil && i < len(theirs.Streams) {
				tcp = theirs.Streams[i]
			}
		}
		si := StreamInterval{ID: ms.ID, Sender: senderName(send), Bytes: ms.Bytes,
			BitsPerSecond: bps(ms.Bytes, secs), RTTus: tcp.RTT, RTTVarUs: tcp.RTTVar, CwndBytes: tcp.Cwnd,
			Retransmits: uint64(tcp.Retransmits), DeliveryRateBps: float64(tcp.DeliveryRate) * 8}
		iv.Streams[i] = si
		iv.Sum.Bytes += si.Bytes
		iv.Sum.Retransmits += si.Retransmits
	}
	iv.Sum.BitsPerSecond = bps(iv.Sum.Bytes, secs)
	return iv
}

// totals computes the measured bytes of each stream. A receiver's count is
// what arrived beyond the bytes its sender wrote during the warm-up: the
// two ends' clocks differ, byte offsets in one TCP stream do not.
func (c *client) totals(em *endMsg) End {
	mine := c.side.totals()
	e := End{Seconds: round3(c.side.prevAt.Sub(c.side.omitAt).Seconds())}
	for i, m := range mine {
		var theirs streamTotal
		if i < len(em.Streams) {
			theirs = em.Streams[i]
		}
		snd, rcv := m, theirs
		if !c.p.clientSends(i) {
			snd, rcv = theirs, m
		}
		se := StreamEnd{ID: m.ID, Sender: senderName(c.p.clientSends(i)),
			SentBytes: snd.Sent - min(snd.SentOmit, snd.Sent), ReceivedBytes: rcv.Received - min(snd.SentOmit, rcv.Received),
			Retransmits: uint64(snd.Retrans)}
		e.Streams = append(e.Streams, se)
		e.SumSent.Bytes += se.SentBytes
		e.SumSent.Retransmits += se.Retransmits
		e.SumReceived.Bytes += se.ReceivedBytes
	}
	e.SumSent.BitsPerSecond = bps(e.SumSent.Bytes, e.Seconds)
	e.SumReceived.BitsPerSecond = bps(e.SumReceived.Bytes, e.Seconds)
	e.CPU = EndCPU{ClientSeconds: c.side.measuredCPU(), ServerSeconds: em.CPUSeconds}
	e.Errors = append(c.side.errors(), em.Errors...)
	if c.p.ZeroCopy != NoZeroCopy {
		e.ZeroCopy = &ZCReport{Method: c.p.ZeroCopy}
		e.ZeroCopy.Sends, e.ZeroCopy.Completions, e.ZeroCopy.Copied = c.side.zeroCopy()
		e.ZeroCopy.Sends += em.ZCSends
		e.ZeroCopy.Completions += em.ZCCompletions
		e.ZeroCopy.Copied += em.ZCCopied
	}
	return e
}

func bps(bytes uint64, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(int64(float64(bytes) * 8 / secs))
}

// sockBufs reads the buffers a data socket got and, when a window was
// asked for, which sysctl capped it: Linux grants min(asked, *mem_max)
// and reports twice that.
func sockBufs(fs *hostfs.FS, fd int, window int) SockBufs {
	snd, rcv, err := bufSizes(fd)
	if err != nil {
		return SockBufs{}
	}
	b := SockBufs{Sndbuf: snd, Rcvbuf: rcv}
	if window > 0 && snd < 2*window {
		b.CappedBy = append(b.CappedBy, sysctlValue(fs, "net.core.wmem_max"))
	}
	if window > 0 && rcv < 2*window {
		b.CappedBy = append(b.CappedBy, sysctlValue(fs, "net.core.rmem_max"))
	}
	return b
}

// sysctlValue returns "key=value", or the key alone if unreadable.
func sysctlValue(fs *hostfs.FS, key string) string {
	v, err := fs.ReadInt("proc/sys/" + strings.ReplaceAll(key, ".", "/"))
	if err != nil {
		return key
	}
	return key + "=" + strconv.FormatInt(v, 10)
}

func sysctlKey(kv string) string {
	k, _, _ := strings.Cut(kv, "=")
	return k
}
