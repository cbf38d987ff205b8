// Package gap turns TCP's own account of a run into named shares of the
// gigabits it missed: end.gap of a linerate.bench/v1 document and
// points[].gap of a campaign (result.Gap).
//
// # The model
//
// The sending socket's TCP_INFO (intervals[].streams[].tcp) splits each
// stream's time into four parts that do not overlap (Linux's chrono
// stats, cumulative since 4.10; busy_us includes the two limited times):
//
//	idle     = interval − busy_us         nothing queued: the writer did not write
//	sndbuf   = sndbuf_limited_us          the send buffer was full
//	rwnd     = rwnd_limited_us            the receiver's window was full
//	inflight = busy_us − rwnd − sndbuf    data in flight, cwnd (or pacing) set the pace
//
// Summed over the measured intervals of every stream, each part is given
// to the cause the run's other evidence names — the doctor reports of
// both ends (their socket_buffers_small finding, the sender's qdisc), the
// NIC and qdisc counters that grew, the per-CPU load of the threads'
// CPUs (end.foreign), the retransmits — and a part no evidence names is
// left unaccounted. The rules, in order (the first that holds decides):
//
//	sndbuf   → sender_buffer, always (the kernel says so)
//	rwnd     → receiver_window when the receiver's buffer is below the
//	           path's need (doctor); receiver_cpu when the receiver's
//	           thread's CPU was ≥ 90% busy with ≥ 25% of it other work;
//	           receiver_window otherwise
//	inflight → pacing when --fq-rate was asked and the run reached ≥ 80%
//	           of it, or the sender's egress qdisc caps each flow (fq's
//	           maxrate) and the run reached ≥ 80% of streams × that
//	           cap (not path_rate: the link would carry more flows);
//	           path_rate when the sender's interface is shaped
//	           (a tbf/htb rate in doctor's qdisc, or link.shaped) or its
//	           qdisc dropped; nic_drops when a NIC's drop counters grew;
//	           with retransmitted bytes ≥ 0.1% of those sent: receiver_cpu
//	           when the receiver's CPU was saturated by shared load as
//	           above (a receiver that cannot run lets its socket backlog
//	           overflow), network otherwise; sender_buffer when the
//	           sender's buffer is below the need, receiver_window when
//	           the receiver's is (without loss the congestion window
//	           grows until a buffer caps what is in flight); sender_cpu
//	           when the sender's CPU was saturated; unaccounted otherwise
//	idle     → sender_buffer when the sender's buffer is below the need
//	           (a small buffer drains between two wake-ups of its
//	           writer); app_limited when -b asked a rate; else the cause
//	           of ≥ 50% of the busy time (a writer held back by it sleeps
//	           on the socket and wakes late); sender_cpu when the
//	           sender's CPU was saturated; app_limited when the kernel
//	           marked most samples app-limited; unaccounted otherwise
//
// A share is a part's time over the run's stream-time. Where the ceiling
// is known (a NIC's line rate or PCIe goodput from doctor, without the
// shaper, which is a cause here and not the ceiling) the missing
// gigabits are ceiling − goodput and each cause's Gbit/s is its share of
// them. Where it is not (a lab's veth has no line rate) the shares stand
// alone, as shares of the run's time.
//
// Worked numbers, from the lab on a 2-CPU machine shared with other
// work: tcp_rmem max 64 KiB on the receiver, one stream, 3 s: busy 1788
// ms of 3001, rwnd-limited 1360 ms, sndbuf-limited 0; the receiver's
// doctor names tcp_rmem below need, so rwnd → receiver_window (0.453);
// in flight 428 ms with 55 retransmits of 9 KB in 1.1 GB sent (0.04%,
// below 0.1%) → receiver_window (0.143); idle 1213 ms follows the busy
// time's dominant cause (rwnd and in flight, all of it) →
// receiver_window (0.404). Dominant receiver_window at 1.0.
package gap

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/limits"
	"github.com/linerate/linerate/internal/nicstats"
	"github.com/linerate/linerate/internal/result"
)

// The causes, as end.gap names them.
const (
	SenderBuffer   = "sender_buffer"
	ReceiverWindow = "receiver_window"
	Network        = "network"
	PathRate       = "path_rate"
	SenderCPU      = "sender_cpu"
	ReceiverCPU    = "receiver_cpu"
	NICDrops       = "nic_drops"
	Pacing         = "pacing"
	AppLimited     = "app_limited"
)

// Causes returns every cause, in the order shares of equal size are
// listed.
func Causes() []string {
	return []string{SenderBuffer, ReceiverWindow, Network, PathRate, SenderCPU, ReceiverCPU, NICDrops, Pacing, AppLimited}
}

// The model's thresholds (see the package comment).
const (
	cpuSaturated  = 90.0  // % of a CPU busy (the thread's own and other work)
	cpuShared     = 25.0  // % of that CPU other work
	lossMaterial  = 0.001 // retransmitted bytes over bytes sent
	pacingReached = 0.8   // goodput over the --fq-rate asked
	dominantBusy  = 0.5   // share of busy time a cause needs for idle time to follow it
	defaultMSS    = 1448  // when the run did not record its MSS
)

// Doctors are the doctor reports (linerate.doctor/v1) of a run's two
// ends, as bench stores them; either may be empty.
type Doctors struct {
	Client, Server json.RawMessage
}

// doctorNIC is the part of a doctor report's NIC the model reads.
type doctorNIC struct {
	Interface string `json:"interface"`
	Kind      string `json:"kind"`
	MTU       *int   `json:"mtu"`
	SpeedMbps *int   `json:"speed_mbps"`
	Qdisc     *struct {
		Kind     string   `json:"kind"`
		RateGbps *float64 `json:"rate_gbps"`
		Shaper   *struct {
			Kind     string  `json:"kind"`
			RateGbps float64 `json:"rate_gbps"`
			PerFlow  bool    `json:"per_flow"`
			Detail   string  `json:"detail"`
			// DeclaredLineRate: the shaper stands in for the NIC's
			// line rate (linerate's lab): the ceiling, not a cause.
			DeclaredLineRate bool `json:"declared_line_rate"`
		} `json:"shaper"`
	} `json:"qdisc"`
	Limits struct {
		PCIe       *float64 `json:"pcie_gbps"`
		TCPGoodput *float64 `json:"tcp_goodput_gbps"`
	} `json:"limits"`
}

// lineRate reports whether the NIC's shaper stands in for its line rate
// (linerate's lab declares it so): then it is the ceiling, and no cause.
func (n doctorNIC) lineRate() bool {
	return n.Qdisc != nil && n.Qdisc.Shaper != nil && n.Qdisc.Shaper.DeclaredLineRate
}

// doctor is the part of a doctor report the model reads.
type doctor struct {
	NICs     []doctorNIC `json:"nics"`
	Findings []struct {
		ID       string `json:"id"`
		Subject  string `json:"subject"`
		Summary  string `json:"summary"`
		Evidence struct {
			BelowNeed map[string]float64 `json:"below_need"`
			Needed    map[string]float64 `json:"needed_bytes"`
			PerFlow   bool               `json:"per_flow"` // link.shaped's
			RateGbps  float64            `json:"rate_gbps"`
			Qdisc     string             `json:"qdisc"`
			Detail    string             `json:"detail"`
		} `json:"evidence"`
	} `json:"findings"`
}

func parseDoctor(raw json.RawMessage) doctor {
	var d doctor
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &d) // an unreadable report is one that says nothing
	}
	return d
}

// smallBuffer returns the first buffer limit of the report's
// sysctl.socket_buffers_small finding whose name holds word ("wmem",
// "rmem"), with the size it has and the size it needs; ok false when
// none.
func (d doctor) smallBuffer(word string) (key string, have, need float64, ok bool) {
	for _, f := range d.Findings {
		if f.ID != "sysctl.socket_buffers_small" {
			continue
		}
		keys := make([]string, 0, len(f.Evidence.BelowNeed))
		for k := range f.Evidence.BelowNeed {
			if strings.Contains(k, word) {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			continue
		}
		slices.Sort(keys) // net.core.* before net.ipv4.*; tcp_* is the one autotuning reads
		k := keys[len(keys)-1]
		return k, f.Evidence.BelowNeed[k], f.Evidence.Needed[k], true
	}
	return "", 0, 0, false
}

// shaper is a rate-limiting root qdisc on an interface.
type shaper struct {
	iface, kind string
	gbps        float64
	detail      string // as tc names it: "fq 2: maxrate 1gbit (each flow)"
}

// shaped returns the shaper on iface (or, with iface unknown, on the
// report's only NIC), from a link.shaped finding or the NIC's qdisc. A
// cap on each flow (fq's maxrate) is not one: see paced.
func (d doctor) shaped(iface string) *shaper {
	for _, n := range d.NICs {
		if (n.Interface == iface || iface == "" && len(d.NICs) == 1) && n.Qdisc != nil && n.Qdisc.RateGbps != nil && !n.lineRate() {
			return &shaper{iface: n.Interface, kind: n.Qdisc.Kind, gbps: *n.Qdisc.RateGbps}
		}
	}
	for _, f := range d.Findings {
		if f.ID == "link.shaped" && (f.Subject == iface || iface == "") && !f.Evidence.PerFlow {
			return &shaper{iface: f.Subject, kind: "qdisc"}
		}
	}
	return nil
}

// paced returns the per-flow cap on iface (or on the report's only
// NIC): fq's maxrate, from the NIC's qdisc.shaper or a link.shaped
// finding that says per_flow; nil when none. It paces each flow of a
// run, whatever the link could carry: the flow's rate, not the path's.
func (d doctor) paced(iface string) *shaper {
	for _, n := range d.NICs {
		if (n.Interface == iface || iface == "" && len(d.NICs) == 1) && n.Qdisc != nil {
			if s := n.Qdisc.Shaper; s != nil && s.PerFlow && s.RateGbps > 0 {
				return &shaper{iface: n.Interface, kind: s.Kind, gbps: s.RateGbps, detail: s.Detail}
			}
		}
	}
	for _, f := range d.Findings {
		if f.ID == "link.shaped" && (f.Subject == iface || iface == "") && f.Evidence.PerFlow && f.Evidence.RateGbps > 0 {
			return &shaper{iface: f.Subject, kind: f.Evidence.Qdisc, gbps: f.Evidence.RateGbps, detail: f.Evidence.Detail}
		}
	}
	return nil
}

// ceiling is the TCP goodput ceiling of iface without a shaper: doctor's
// when no qdisc shapes it; with one, the goodput of the NIC's reported
// speed at its MTU (limits.TCPFrame) under its PCIe ceiling — a virtual
// interface's speed is a placeholder, so it has none. nil when unknown.
func (d doctor) ceiling(iface string) *float64 {
	for _, n := range d.NICs {
		if n.Interface != iface && (iface != "" || len(d.NICs) != 1) {
			continue
		}
		if n.Qdisc == nil || n.Qdisc.RateGbps == nil || n.lineRate() {
			return n.Limits.TCPGoodput // a declared line rate is doctor's ceiling already
		}
		if n.Kind != "pci" || n.SpeedMbps == nil || n.MTU == nil {
			return nil
		}
		f, err := limits.TCPFrame(*n.MTU, limits.Stack{})
		if err != nil {
			return nil
		}
		g := float64(f.Goodput(limits.Gbps(float64(*n.SpeedMbps) / 1000)))
		if p := n.Limits.PCIe; p != nil && *p < g {
			g = *p
		}
		return &g
	}
	return nil
}

// cpuLoad is the load of the CPUs a side's threads ran on, over the run
// (end.foreign): the busiest of them.
type cpuLoad struct {
	known       bool
	cpu         int
	own, other  float64 // % of the CPU
	topName     string  // the busiest other process on it
	topPID      int
	topPinned   bool
	topCPUShare float64
}

func (l cpuLoad) busy() float64 { return l.own + l.other }

// saturated: the CPU was ≥ 90% busy and ≥ 25% of it other work.
func (l cpuLoad) saturated() bool {
	return l.known && l.busy() >= cpuSaturated && l.other >= cpuShared
}

func (l cpuLoad) String() string {
	s := fmt.Sprintf("CPU %d %.0f%% busy (the test's thread %.0f%%, other work %.0f%%)", l.cpu, l.busy(), l.own, l.other)
	if l.topName != "" {
		pin := ""
		if l.topPinned {
			pin = ", pinned there"
		}
		s += fmt.Sprintf("; busiest other: %s (pid %d, %.0f%% of a CPU%s)", l.topName, l.topPID, l.topCPUShare, pin)
	}
	return s
}

func loadOf(f *result.Foreign, cpus []int) cpuLoad {
	var best cpuLoad
	if f == nil {
		return best
	}
	for _, c := range cpus {
		k := strconv.Itoa(c)
		l := cpuLoad{known: true, cpu: c, own: f.Own[k], other: f.CPU[k]}
		if !best.known || l.busy() > best.busy() {
			best = l
		}
	}
	for _, p := range f.Top {
		if best.known && p.CPU == best.cpu {
			best.topName, best.topPID, best.topPinned, best.topCPUShare = p.Name, p.PID, p.Pinned, p.CPUPct
			break
		}
	}
	return best
}

// facts is what the rules read of one run.
type facts struct {
	total, busy, rwnd, sndbuf float64 // stream-µs over the measured intervals
	appLimited, samples       int     // stream-intervals the kernel marked app-limited, of all
	streams                   int     // the sender's streams (the most in one interval)

	retransBytes, sentBytes float64
	goodput                 float64 // Gbit/s
	fqRate, bitrate         float64 // bit/s asked
	qdiscDrops              uint64
	nicDrops                map[string]uint64 // drop causes that grew, both ends

	sndSmall, rcvSmall       bool
	sndKey, rcvKey           string
	sndHave, sndNeed         float64
	rcvHave, rcvNeed         float64
	shaper                   *shaper
	pacer                    *shaper // a per-flow cap on the sender's interface
	senderCPU, receiverCPU   cpuLoad
	senderSide, receiverSide string
}

// dropCauses are the NIC counter causes that are frames lost.
var dropCauses = []nicstats.Cause{nicstats.RXNoBuffer, nicstats.RXNICBuffer, nicstats.PHYErrors,
	nicstats.FECUncorrectable, nicstats.RXDropped, nicstats.TXDropped}

func factsOf(r *result.Result, docs Doctors) (facts, bool) {
	var f facts
	f.senderSide, f.receiverSide = "client", "server"
	sendDoc, recvDoc := docs.Client, docs.Server
	sendStart, sendCPUs, recvCPUs := r.Start.Client, r.Start.Placement.Client, r.Start.Placement.Server
	sendForeign, recvForeign := r.End.Foreign.Client, r.End.Foreign.Server
	if r.Start.Direction == result.Receive {
		f.senderSide, f.receiverSide = "server", "client"
		sendDoc, recvDoc = recvDoc, sendDoc
		sendStart, sendCPUs, recvCPUs = r.Start.Server, recvCPUs, sendCPUs
		sendForeign, recvForeign = recvForeign, sendForeign
	}
	for _, iv := range r.Intervals {
		if iv.Omitted {
			continue
		}
		span := (iv.End - iv.Start) * 1e6
		if span <= 0 {
			continue
		}
		n := 0
		for _, s := range iv.Streams {
			t := s.TCP
			if t == nil || s.Sender != "" && s.Sender != f.senderSide {
				continue // with --bidir, the client's streams: the doctor reports' sides are theirs
			}
			n++
			busy := math.Min(float64(t.BusyUs), span) // chrono stats tick in jiffies: a read may overshoot its interval
			rwnd := math.Min(float64(t.RwndLimitedUs), busy)
			f.total += span
			f.busy += busy
			f.rwnd += rwnd
			f.sndbuf += math.Min(float64(t.SndbufLimitedUs), busy-rwnd)
			f.samples++
			if t.AppLimited {
				f.appLimited++
			}
			f.sentBytes += float64(s.Bytes)
			f.retransBytes += float64(t.Retrans)
		}
		f.streams = max(f.streams, n)
	}
	if f.samples == 0 {
		return f, false
	}
	mss := float64(r.Start.MSS)
	if mss <= 0 {
		mss = defaultMSS
	}
	f.retransBytes *= mss
	f.goodput = r.Gbps()
	f.fqRate, f.bitrate = float64(r.Start.FQRate), float64(r.Start.Bitrate)

	sd, rd := parseDoctor(sendDoc), parseDoctor(recvDoc)
	f.sndKey, f.sndHave, f.sndNeed, f.sndSmall = sd.smallBuffer("wmem")
	f.rcvKey, f.rcvHave, f.rcvNeed, f.rcvSmall = rd.smallBuffer("rmem")
	f.shaper = sd.shaped(sendStart.Iface)
	f.pacer = sd.paced(sendStart.Iface)
	f.senderCPU, f.receiverCPU = loadOf(sendForeign, sendCPUs), loadOf(recvForeign, recvCPUs)
	if nc := r.End.NICCounters; nc != nil {
		send, recv := nc.Client, nc.Server
		if f.senderSide == "server" {
			send, recv = recv, send
		}
		f.qdiscDrops = send.Grew()[string(nicstats.QdiscDrops)]
		f.nicDrops = map[string]uint64{}
		for _, d := range []*result.NICDelta{send, recv} {
			g := d.Grew()
			for _, c := range dropCauses {
				f.nicDrops[string(c)] += g[string(c)]
			}
		}
		maps.DeleteFunc(f.nicDrops, func(_ string, v uint64) bool { return v == 0 })
	}
	return f, true
}

// pacedToCap reports whether a per-flow cap on the sender's interface
// held the run: its goodput reached ≥ 80% of streams × the cap. A run
// well below it was held by something else, which the other rules name.
func (f facts) pacedToCap() bool {
	return f.pacer != nil && f.streams > 0 && f.goodput >= pacingReached*float64(f.streams)*f.pacer.gbps
}

// name is the shaper as tc names it, or its kind.
func (s *shaper) name() string {
	if s.detail != "" {
		return s.detail
	}
	return s.kind + " maxrate"
}

func (f facts) lossRatio() float64 {
	if f.sentBytes == 0 {
		return 0
	}
	return f.retransBytes / f.sentBytes
}

// part is a cause's time and the sentences that gave it.
type part struct {
	us       float64
	evidence []string
}

// account is a run's time by cause ("" is unaccounted).
type account map[string]*part

func (a account) add(cause string, us float64, why ...string) {
	if us <= 0 {
		return
	}
	p := a[cause]
	if p == nil {
		p = &part{}
		a[cause] = p
	}
	p.us += us
	for _, w := range why {
		if !slices.Contains(p.evidence, w) {
			p.evidence = append(p.evidence, w)
		}
	}
}

func pct(part, whole float64) string {
	return fmt.Sprintf("%.0f%%", 100*part/whole)
}

func ms(us float64) string { return fmt.Sprintf("%.0f ms", us/1000) }

// assign applies the rules to one run's facts.
func assign(f facts) account {
	a := account{}
	sndbuf, rwnd := f.sndbuf, f.rwnd
	inflight := f.busy - f.rwnd - f.sndbuf
	idle := f.total - f.busy
	sndWhy := fmt.Sprintf("%s max %s on the sender is below the %s the path needs (doctor: sysctl.socket_buffers_small)",
		f.sndKey, bytesText(f.sndHave), bytesText(f.sndNeed))
	rcvWhy := fmt.Sprintf("%s max %s on the receiver is below the %s the path needs (doctor: sysctl.socket_buffers_small)",
		f.rcvKey, bytesText(f.rcvHave), bytesText(f.rcvNeed))

	a.add(SenderBuffer, sndbuf, fmt.Sprintf("the send buffer was full %s of %s of stream time (%s)", ms(sndbuf), ms(f.total), pct(sndbuf, f.total)))

	rwndWhy := fmt.Sprintf("the receiver's window held the sender %s of %s of stream time (%s)", ms(rwnd), ms(f.total), pct(rwnd, f.total))
	switch {
	case f.rcvSmall:
		a.add(ReceiverWindow, rwnd, rwndWhy, rcvWhy)
	case f.receiverCPU.saturated():
		a.add(ReceiverCPU, rwnd, rwndWhy, "the receiver's "+f.receiverCPU.String())
	default:
		a.add(ReceiverWindow, rwnd, rwndWhy)
	}

	inWhy := fmt.Sprintf("data in flight, neither window nor buffer full, %s of %s of stream time (%s)", ms(inflight), ms(f.total), pct(inflight, f.total))
	loss := f.lossRatio()
	lossWhy := fmt.Sprintf("%.0f KB retransmitted of %.0f MB sent (%.2f%%)", f.retransBytes/1e3, f.sentBytes/1e6, 100*loss)
	switch {
	case f.fqRate > 0 && f.goodput*1e9 >= pacingReached*f.fqRate:
		a.add(Pacing, inflight, inWhy, fmt.Sprintf("the run asked --fq-rate %.2f Gbit/s and reached %.2f", f.fqRate/1e9, f.goodput))
	case f.pacedToCap():
		p := f.pacer
		a.add(Pacing, inflight, inWhy, fmt.Sprintf("the sender's %s paces each flow: %s caps a flow at %s Gbit/s; %d stream(s) reached %.2f Gbit/s, %s of %d × %s",
			p.iface, p.name(), trim(p.gbps), f.streams, f.goodput, pct(f.goodput, float64(f.streams)*p.gbps), f.streams, trim(p.gbps)))
	case f.shaper != nil || f.qdiscDrops > 0:
		why := []string{inWhy}
		if s := f.shaper; s != nil {
			if s.gbps > 0 {
				why = append(why, fmt.Sprintf("the sender's %s is shaped by a %s qdisc to %s Gbit/s; the run got %.2f", s.iface, s.kind, trim(s.gbps), f.goodput))
			} else {
				why = append(why, fmt.Sprintf("the sender's %s is shaped (doctor: link.shaped)", s.iface))
			}
		}
		if f.qdiscDrops > 0 {
			why = append(why, fmt.Sprintf("the sender's qdisc dropped %d packets during the run", f.qdiscDrops))
		}
		a.add(PathRate, inflight, why...)
	case len(f.nicDrops) > 0:
		var ds []string
		for _, c := range slices.Sorted(maps.Keys(f.nicDrops)) {
			ds = append(ds, fmt.Sprintf("%s %d", c, f.nicDrops[c]))
		}
		a.add(NICDrops, inflight, inWhy, "NIC drop counters grew: "+strings.Join(ds, ", "))
	case loss >= lossMaterial && f.receiverCPU.saturated():
		a.add(ReceiverCPU, inflight, inWhy, lossWhy+", with no NIC or qdisc drops", "the receiver's "+f.receiverCPU.String())
	case loss >= lossMaterial:
		a.add(Network, inflight, inWhy, lossWhy)
	case f.sndSmall:
		a.add(SenderBuffer, inflight, inWhy, sndWhy)
	case f.rcvSmall:
		// Without loss the congestion window grows until something
		// else caps what is in flight: here the receiver's small window.
		a.add(ReceiverWindow, inflight, inWhy, lossWhy+": the receiver's window, not loss, capped what was in flight", rcvWhy)
	case f.senderCPU.saturated():
		a.add(SenderCPU, inflight, inWhy, "the sender's "+f.senderCPU.String())
	default:
		a.add("", inflight, inWhy+": no loss, shaper, drops or small buffer to name")
	}

	idleWhy := fmt.Sprintf("the sending socket had nothing queued %s of %s of stream time (%s)", ms(idle), ms(f.total), pct(idle, f.total))
	if idle <= 0 {
		return a
	}
	if f.sndSmall {
		a.add(SenderBuffer, idle, idleWhy, sndWhy)
		return a
	}
	if f.bitrate > 0 {
		a.add(AppLimited, idle, idleWhy, fmt.Sprintf("the run asked -b %.2f Gbit/s", f.bitrate/1e9))
		return a
	}
	if c, share := busiest(a, f.busy); c != "" && share >= dominantBusy {
		a.add(c, idle, idleWhy, fmt.Sprintf("%s held %s of the busy time: a writer it holds back sleeps on the socket and wakes late", c, pct(share, 1)))
		return a
	}
	if f.senderCPU.saturated() {
		a.add(SenderCPU, idle, idleWhy, "the sender's "+f.senderCPU.String())
		return a
	}
	if 2*f.appLimited > f.samples {
		a.add(AppLimited, idle, idleWhy, fmt.Sprintf("the kernel marked %d of %d samples app-limited", f.appLimited, f.samples))
		return a
	}
	a.add("", idle, idleWhy+": the sender's CPU was not saturated and no limit held most of the busy time")
	return a
}

// busiest returns the named cause with the most of the busy time so far,
// and its share of busy.
func busiest(a account, busy float64) (string, float64) {
	best, most := "", 0.0
	for _, c := range Causes() {
		if p := a[c]; p != nil && p.us > most {
			best, most = c, p.us
		}
	}
	if busy <= 0 {
		return "", 0
	}
	return best, most / busy
}

// Of is the gap of one run, or nil when the run has no TCP account (not
// the native engine, UDP, a transaction or ping-pong run).
func Of(r *result.Result, docs Doctors) *result.Gap {
	return OfRuns([]*result.Result{r}, []Doctors{docs})
}

// OfRuns is the gap of a campaign point: its runs' time by cause, added
// up (docs[i] are run i's ends; a shorter docs leaves the rest without).
func OfRuns(runs []*result.Result, docs []Doctors) *result.Gap {
	total := account{}
	var stream, goodput float64
	var ceiling *float64
	n := 0
	var fixFacts *facts
	for i, r := range runs {
		if r == nil || r.Error != "" || r.Start.Protocol == result.UDP || r.Start.Mode != "" {
			continue
		}
		var d Doctors
		if i < len(docs) {
			d = docs[i]
		}
		f, ok := factsOf(r, d)
		if !ok {
			continue
		}
		n++
		stream += f.total
		goodput += f.goodput
		for c, p := range assign(f) {
			total.add(c, p.us, p.evidence...)
		}
		if ceiling == nil {
			iface, doc := r.Start.Client.Iface, d.Client
			if f.senderSide == "server" {
				iface, doc = r.Start.Server.Iface, d.Server
			}
			ceiling = parseDoctor(doc).ceiling(iface)
		}
		if fixFacts == nil {
			fixFacts = &f
		}
	}
	if n == 0 || stream <= 0 {
		return nil
	}
	g := &result.Gap{MeasuredGbps: round(goodput/float64(n), 2), Shares: []result.GapShare{}}
	var missing float64
	if ceiling != nil && *ceiling > 0 {
		c := round(*ceiling, 2)
		missing = math.Max(0, c-g.MeasuredGbps)
		m := round(missing, 2)
		g.CeilingGbps, g.MissingGbps = &c, &m
	}
	accounted := 0.0
	for _, c := range Causes() {
		p := total[c]
		if p == nil {
			continue
		}
		sh := round(p.us/stream, 3)
		if sh == 0 {
			continue
		}
		s := result.GapShare{Cause: c, Share: sh, Evidence: p.evidence}
		if g.MissingGbps != nil {
			v := round(sh*missing, 2)
			s.Gbps = &v
		}
		g.Shares = append(g.Shares, s)
		accounted += sh
	}
	slices.SortStableFunc(g.Shares, func(a, b result.GapShare) int { return cmp.Compare(b.Share, a.Share) })
	g.UnaccountedShare = round(math.Max(0, 1-accounted), 3)
	if len(g.Shares) > 0 {
		g.Dominant = g.Shares[0].Cause
		g.Fix = fixFor(g.Dominant, *fixFacts)
	}
	return g
}

// fixFor is the one line that removes cause, from f's evidence.
func fixFor(cause string, f facts) string {
	switch cause {
	case SenderBuffer:
		if f.sndSmall {
			return fmt.Sprintf("%s max %s on the sender (%s) is below the %s the path needs — `linerate tune --apply` there raises it, journaled", f.sndKey, bytesText(f.sndHave), f.senderSide, bytesText(f.sndNeed))
		}
		return fmt.Sprintf("the sender's (%s) send buffer filled: raise net.ipv4.tcp_wmem max (`linerate doctor` on it sizes it; `linerate tune --apply` applies it, journaled)", f.senderSide)
	case ReceiverWindow:
		if f.rcvSmall {
			return fmt.Sprintf("%s max %s on the receiver (%s) is below the %s the path needs — `linerate tune --apply` there raises it, journaled", f.rcvKey, bytesText(f.rcvHave), f.receiverSide, bytesText(f.rcvNeed))
		}
		return fmt.Sprintf("the receiver's (%s) window filled: check its net.ipv4.tcp_rmem max with `linerate doctor` there", f.receiverSide)
	case PathRate:
		if s := f.shaper; s != nil && s.gbps > 0 {
			return fmt.Sprintf("the sender's %s is shaped to %s Gbit/s by %s: if that is not meant, remove it (`tc qdisc del dev %s root`)", s.iface, trim(s.gbps), s.kind, s.iface)
		}
		return "the sender's qdisc dropped under a rate limit: `tc -s qdisc show` on the sender shows which"
	case ReceiverCPU:
		return fmt.Sprintf("give the receiver's (%s) thread a CPU of its own: %s; pick a quiet one with -A or stop the other work", f.receiverSide, f.receiverCPU)
	case SenderCPU:
		return fmt.Sprintf("give the sender's (%s) thread a CPU of its own: %s; pick a quiet one with -A or stop the other work", f.senderSide, f.senderCPU)
	case Network:
		return "the path lost packets: read both ends' counters (`linerate doctor --iface IF`) and the switch ports between them"
	case NICDrops:
		return "a NIC dropped frames: `linerate doctor --iface IF` on both ends names the counter and its fix (rings, channels, IRQ placement)"
	case Pacing:
		if f.fqRate <= 0 && f.pacer != nil {
			p := f.pacer
			return fmt.Sprintf("the sender's %s paces each flow to %s Gbit/s (%s): if that is not meant, remove it (`tc qdisc del dev %s root`), or raise its maxrate", p.iface, trim(p.gbps), p.name(), p.iface)
		}
		return "the run asked a pacing rate (--fq-rate): drop it to measure the path"
	case AppLimited:
		return "the sender wrote less than the path takes (-b, or an application that paces itself)"
	}
	return ""
}

func round(x float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(x*p) / p
}

func trim(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// bytesText writes a buffer size as doctor does: 64 KiB, 2.4 MiB.
func bytesText(b float64) string {
	switch {
	case b >= 1<<20:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", b/(1<<20)), ".0") + " MiB"
	case b >= 1<<10:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", b/(1<<10)), ".0") + " KiB"
	}
	return fmt.Sprintf("%.0f B", b)
}

// Merge is the gap of runs whose gaps alone are known (a report holds
// the runs' documents, not their doctor reports): each cause's share is
// its mean over the gaps, a run weighing as much as another (OfRuns,
// which weighs them by their stream time, is the same for runs of one
// length); the ceiling and the fix are the first gap's that has them.
// nil when no gap is given.
func Merge(gaps []*result.Gap) *result.Gap {
	var in []*result.Gap
	for _, g := range gaps {
		if g != nil {
			in = append(in, g)
		}
	}
	switch len(in) {
	case 0:
		return nil
	case 1:
		return in[0]
	}
	n := float64(len(in))
	share := map[string]float64{}
	evidence := map[string][]string{}
	out := &result.Gap{Shares: []result.GapShare{}}
	var measured, missing float64
	for _, g := range in {
		measured += g.MeasuredGbps
		if g.MissingGbps != nil {
			missing += *g.MissingGbps
		}
		if out.CeilingGbps == nil && g.CeilingGbps != nil {
			c := *g.CeilingGbps
			out.CeilingGbps = &c
		}
		for _, s := range g.Shares {
			share[s.Cause] += s.Share / n
			if evidence[s.Cause] == nil {
				evidence[s.Cause] = s.Evidence
			}
		}
	}
	out.MeasuredGbps = round(measured/n, 2)
	if out.CeilingGbps != nil {
		m := round(math.Max(0, *out.CeilingGbps-out.MeasuredGbps), 2)
		out.MissingGbps = &m
	}
	accounted := 0.0
	for _, c := range Causes() {
		sh := round(share[c], 3)
		if sh == 0 {
			continue
		}
		s := result.GapShare{Cause: c, Share: sh, Evidence: evidence[c]}
		if out.MissingGbps != nil {
			v := round(sh**out.MissingGbps, 2)
			s.Gbps = &v
		}
		out.Shares = append(out.Shares, s)
		accounted += sh
	}
	slices.SortStableFunc(out.Shares, func(a, b result.GapShare) int { return cmp.Compare(b.Share, a.Share) })
	out.UnaccountedShare = round(math.Max(0, 1-accounted), 3)
	if len(out.Shares) > 0 {
		out.Dominant = out.Shares[0].Cause
		for _, g := range in {
			if g.Dominant == out.Dominant && g.Fix != "" {
				out.Fix = g.Fix
				break
			}
		}
	}
	return out
}
