package pathmtu

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"slices"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

// ICMP protocol numbers for icmp.ParseMessage.
const (
	protoICMP   = 1
	protoICMPv6 = 58
)

// Probe sends echo requests with don't-fragment set whose IP packet is mtu
// bytes long (ICMP payload mtu−28 for IPv4, mtu−48 for IPv6) to dst and
// reports whether one crossed both ways unfragmented. If none did, it
// searches down to MinIPv4MTU (MinIPv6MTU) for the largest size that does,
// recording why each failing size failed (see search for the order).
//
// A raw ICMP socket is used when the process may open one, else an ICMP
// datagram socket; with neither the error wraps ErrPermission. The
// sockets are opened on the calling goroutine's thread, in its network
// namespace. A cancelled ctx stops the probe with the partial Result.
func Probe(ctx context.Context, dst netip.Addr, mtu int, opts Options) (Result, error) {
	return probe(ctx, dst, mtu, opts, []sockKind{kindRaw, kindPing})
}

// probe is Probe with the socket kinds to try, so that tests can exercise
// the ping socket as root.
func probe(ctx context.Context, dst netip.Addr, mtu int, opts Options, kinds []sockKind) (Result, error) {
	dst = dst.Unmap()
	res := Result{Dst: dst, Size: mtu, Failures: []Failure{}}
	if err := checkArgs(dst, mtu); err != nil {
		return res, err
	}
	s, err := openSocket(dst, kinds)
	if err != nil {
		return res, err
	}
	defer s.close()
	res.Socket = s.kind.String()

	// Wake a waiting read when ctx ends; wait checks ctx after every read.
	stop := context.AfterFunc(ctx, func() { _ = s.setDeadline(time.Unix(1, 0)) })
	defer stop()

	p := &prober{s: s, dst: dst, opts: opts.withDefaults(), seq: uint16(rand.Uint32()), res: &res}
	if err := search(ctx, mtu, minMTU(dst), p.try, &res); err != nil {
		return res, fmt.Errorf("pathmtu: probing %v at %d bytes: %w", dst, mtu, err)
	}
	return res, nil
}

// prober sends and matches the echo requests of one Probe.
type prober struct {
	s    *socket
	dst  netip.Addr
	opts Options
	seq  uint16 // the last sequence number used
	res  *Result
}

// ipHeader is the IP header the kernel puts before our ICMP message.
func (p *prober) ipHeader() int {
	if p.dst.Is4() {
		return 20
	}
	return 40
}

// try sends up to opts.Tries echo requests of the given IP packet size,
// one at a time, each waiting opts.Timeout. A reply to any of them passes
// the size; an error the kernel or a router reports fails it at once.
func (p *prober) try(ctx context.Context, size int) (outcome, error) {
	dataLen := size - p.ipHeader() - 8 // 8: ICMP echo header
	var seqs []uint16
	for range p.opts.Tries {
		if err := ctx.Err(); err != nil {
			return outcome{}, err
		}
		// Clear the error queue and any pending socket error before
		// sending: a pending error would fail the send on a ping socket.
		// An entry for an earlier try of this size that came too late
		// still counts; entries for earlier sizes are stale.
		for _, q := range p.s.drainErrors() {
			if o, ok := p.matchQueued(q, size, seqs); ok {
				return o, nil
			}
		}
		p.seq++
		seqs = append(seqs, p.seq)
		msg, err := p.echo(p.seq, dataLen)
		if err != nil {
			return outcome{}, err
		}
		p.res.Probes++
		if err := p.s.send(msg); err != nil {
			if o, ok := p.sendFailed(size, err); ok {
				return o, nil
			}
			continue // transient (ENOBUFS): a lost try
		}
		o, done, err := p.wait(ctx, size, seqs, time.Now().Add(p.opts.Timeout))
		if err != nil || done {
			return o, err
		}
	}
	return fail(size, ReasonTimeout, 0, netip.Addr{}, fmt.Sprintf(
		"no reply to %d echo requests of %d bytes (%v each)", p.opts.Tries, size, p.opts.Timeout)), nil
}

// echo builds an echo request with dataLen bytes of payload.
func (p *prober) echo(seq uint16, dataLen int) ([]byte, error) {
	data := make([]byte, dataLen)
	for i := range data {
		data[i] = byte(i) // a recognisable, incompressible-enough pattern
	}
	var typ icmp.Type = ipv4.ICMPTypeEcho
	if p.dst.Is6() {
		// The kernel computes the ICMPv6 checksum (it covers the
		// pseudo-header, which it knows and we do not yet).
		typ = ipv6.ICMPTypeEchoRequest
	}
	m := icmp.Message{Type: typ, Body: &icmp.Echo{ID: int(p.s.id), Seq: int(seq), Data: data}}
	b, err := m.Marshal(nil)
	if err != nil {
		return nil, fmt.Errorf("building echo request: %w", err)
	}
	return b, nil
}

// sendFailed turns a send error into a failure of the size, or reports
// ok == false for a transient error worth another try.
func (p *prober) sendFailed(size int, err error) (outcome, bool) {
	if errors.Is(err, unix.ENOBUFS) {
		return outcome{}, false
	}
	if errors.Is(err, unix.EMSGSIZE) {
		// With IP_RECVERR the kernel queues the route's MTU with the
		// error (SO_EE_ORIGIN_LOCAL, ee_info).
		mtu := 0
		for _, q := range p.s.drainErrors() {
			if q.origin == unix.SO_EE_ORIGIN_LOCAL && q.errno == unix.EMSGSIZE {
				mtu = int(q.info)
			}
		}
		detail := fmt.Sprintf("EMSGSIZE: the local route's MTU is smaller than %d", size)
		if mtu > 0 {
			detail = fmt.Sprintf("EMSGSIZE: the local route's MTU is %d", mtu)
		}
		return fail(size, ReasonLocalMTU, mtu, netip.Addr{}, detail), true
	}
	return fail(size, ReasonUnreachable, 0, netip.Addr{}, "send: "+err.Error()), true
}

// wait reads until a reply or an error for one of seqs arrives (done), or
// the deadline passes (not done).
func (p *prober) wait(ctx context.Context, size int, seqs []uint16, deadline time.Time) (outcome, bool, error) {
	for {
		if err := ctx.Err(); err != nil {
			return outcome{}, false, err
		}
		if !time.Now().Before(deadline) {
			return outcome{}, false, nil
		}
		if err := p.s.setDeadline(deadline); err != nil {
			return outcome{}, false, err
		}
		pkt, err := p.s.recv()
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			continue // the loop checks ctx and the deadline
		case err != nil && asyncErr(err):
			for _, q := range p.s.drainErrors() {
				if o, ok := p.matchQueued(q, size, seqs); ok {
					return o, true, nil
				}
			}
			continue
		case err != nil:
			return outcome{}, false, fmt.Errorf("reading ICMP: %w", err)
		}
		if o, ok := p.match(pkt, size, seqs); ok {
			return o, true, nil
		}
	}
}

// match reads a received ICMP message: a reply to one of seqs, or an ICMP
// error quoting one of them. Anything else is someone else's and ignored.
func (p *prober) match(pkt packet, size int, seqs []uint16) (outcome, bool) {
	if len(pkt.icmp) < 8 || pkt.from != p.dst.WithZone("") && !isError(pkt.icmp[0], p.dst.Is6()) {
		return outcome{}, false
	}
	proto := protoICMP
	if p.dst.Is6() {
		proto = protoICMPv6
	}
	m, err := icmp.ParseMessage(proto, pkt.icmp)
	if err != nil {
		return outcome{}, false
	}
	if m.Type == ipv4.ICMPTypeEchoReply || m.Type == ipv6.ICMPTypeEchoReply {
		e, ok := m.Body.(*icmp.Echo)
		if !ok || uint16(e.ID) != p.s.id || !slices.Contains(seqs, uint16(e.Seq)) ||
			len(e.Data) != size-p.ipHeader()-8 {
			return outcome{}, false
		}
		if pkt.fragMax > 0 {
			return fail(size, ReasonReplyFragmented, pkt.fragMax, pkt.from, fmt.Sprintf(
				"the request got through but the reply came back in fragments of up to %d bytes: the path back carries less than %d",
				pkt.fragMax, size)), true
		}
		return outcome{ok: true}, true
	}

	// An ICMP error quotes the start of the packet that caused it: the IP
	// header and at least 8 bytes above it, our echo header.
	var quoted []byte
	switch b := m.Body.(type) {
	case *icmp.DstUnreach:
		quoted = b.Data
	case *icmp.PacketTooBig:
		quoted = b.Data
	case *icmp.TimeExceeded:
		quoted = b.Data
	case *icmp.ParamProb:
		quoted = b.Data
	default:
		return outcome{}, false
	}
	echo, dst, ok := innerEcho(quoted, p.dst.Is6())
	if !ok || dst != p.dst.WithZone("") || !p.ours(echo, seqs) {
		return outcome{}, false
	}
	switch {
	case m.Type == ipv4.ICMPTypeDestinationUnreachable && m.Code == 4:
		// RFC 1191: the next-hop MTU is in the low 16 bits of the
		// header's second word; 0 from routers older than that.
		mtu := int(binary.BigEndian.Uint16(pkt.icmp[6:8]))
		return fragNeeded(size, mtu, pkt.from), true
	case m.Type == ipv6.ICMPTypePacketTooBig:
		return fragNeeded(size, m.Body.(*icmp.PacketTooBig).MTU, pkt.from), true
	}
	return fail(size, ReasonUnreachable, 0, pkt.from, fmt.Sprintf("ICMP %v (code %d) from %v", m.Type, m.Code, pkt.from)), true
}

// matchQueued reads an error-queue entry for one of seqs.
func (p *prober) matchQueued(q queued, size int, seqs []uint16) (outcome, bool) {
	if q.origin != unix.SO_EE_ORIGIN_ICMP && q.origin != unix.SO_EE_ORIGIN_ICMP6 {
		return outcome{}, false
	}
	if q.dst.IsValid() && q.dst != p.dst.WithZone("") || !p.ours(q.echo, seqs) {
		return outcome{}, false
	}
	if q.origin == unix.SO_EE_ORIGIN_ICMP && q.typ == 3 && q.code == 4 ||
		q.origin == unix.SO_EE_ORIGIN_ICMP6 && q.typ == 2 {
		return fragNeeded(size, int(q.info), q.from), true
	}
	return fail(size, ReasonUnreachable, 0, q.from, fmt.Sprintf(
		"ICMP error type %d code %d from %v: %v", q.typ, q.code, q.from, q.errno)), true
}

// ours reports whether b starts with one of our echo requests.
func (p *prober) ours(b []byte, seqs []uint16) bool {
	if len(b) < 8 {
		return false
	}
	want := byte(ipv4.ICMPTypeEcho)
	if p.dst.Is6() {
		want = byte(ipv6.ICMPTypeEchoRequest)
	}
	return b[0] == want && binary.BigEndian.Uint16(b[4:6]) == p.s.id &&
		slices.Contains(seqs, binary.BigEndian.Uint16(b[6:8]))
}

// isError reports whether an ICMP type is an error message, which comes
// from a router rather than the destination.
func isError(typ byte, v6 bool) bool {
	if v6 {
		return typ < 128
	}
	return typ == 3 || typ == 11 || typ == 12
}

// innerEcho finds the ICMP header inside the datagram an ICMP error
// quotes, and the datagram's destination. Only a plain IPv4 header or an
// IPv6 header directly followed by ICMPv6 is understood, which is what our
// own echo requests look like.
func innerEcho(b []byte, v6 bool) (echo []byte, dst netip.Addr, ok bool) {
	if !v6 {
		if len(b) < 20 || b[0]>>4 != 4 || b[9] != protoICMP {
			return nil, netip.Addr{}, false
		}
		ihl := int(b[0]&0x0f) * 4
		if ihl < 20 || len(b) < ihl+8 {
			return nil, netip.Addr{}, false
		}
		return b[ihl:], netip.AddrFrom4([4]byte(b[16:20])), true
	}
	if len(b) < 48 || b[0]>>4 != 6 || b[6] != protoICMPv6 {
		return nil, netip.Addr{}, false
	}
	return b[40:], netip.AddrFrom16([16]byte(b[24:40])), true
}

// fragNeeded is the failure for a router's "fragmentation needed" or
// "packet too big".
func fragNeeded(size, mtu int, from netip.Addr) outcome {
	detail := fmt.Sprintf("%v: fragmentation needed, no next-hop MTU given", from)
	if mtu > 0 {
		detail = fmt.Sprintf("%v: fragmentation needed, next-hop MTU %d", from, mtu)
	}
	return fail(size, ReasonFragNeeded, mtu, from, detail)
}

// fail builds a failed outcome.
func fail(size int, r Reason, mtu int, from netip.Addr, detail string) outcome {
	f := Failure{Size: size, Reason: r, MTU: mtu, Detail: detail}
	if from.IsValid() {
		f.From = from.String()
	}
	return outcome{fail: f}
}
