package pathmtu

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"unsafe"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

// These tests feed hand-built ICMP messages and error-queue entries to the
// matching code; they need no privileges.

const testID = 0x1234

var (
	v6Src = netip.MustParseAddr("2001:2::1")
	v6Dst = netip.MustParseAddr("2001:2::2")
	v6R   = netip.MustParseAddr("2001:2::fe")
)

func testProber(dst netip.Addr) *prober {
	return &prober{s: &socket{id: testID}, dst: dst, opts: Options{}.withDefaults(), res: &Result{}}
}

func echoReply(t *testing.T, v6 bool, id, seq, dataLen int) []byte {
	t.Helper()
	var typ icmp.Type = ipv4.ICMPTypeEchoReply
	if v6 {
		typ = ipv6.ICMPTypeEchoReply
	}
	b, err := (&icmp.Message{Type: typ, Body: &icmp.Echo{ID: id, Seq: seq, Data: make([]byte, dataLen)}}).Marshal(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// echoHeader is the first 8 bytes of one of our echo requests.
func echoHeader(v6 bool, id, seq uint16) []byte {
	b := make([]byte, 8)
	b[0] = 8
	if v6 {
		b[0] = 128
	}
	binary.BigEndian.PutUint16(b[4:], id)
	binary.BigEndian.PutUint16(b[6:], seq)
	return b
}

// quote4 is an IPv4 header from src to dst carrying ICMP, then the echo
// header: what a router quotes in an ICMP error.
func quote4(src, dst netip.Addr, echo []byte) []byte {
	h := make([]byte, 20)
	h[0], h[9] = 0x45, protoICMP
	s, d := src.As4(), dst.As4()
	copy(h[12:], s[:])
	copy(h[16:], d[:])
	return append(h, echo...)
}

func quote6(src, dst netip.Addr, echo []byte) []byte {
	h := make([]byte, 40)
	h[0], h[6] = 0x60, protoICMPv6
	s, d := src.As16(), dst.As16()
	copy(h[8:], s[:])
	copy(h[24:], d[:])
	return append(h, echo...)
}

// icmpError builds an ICMP error message with a 4-byte second word.
func icmpError(typ, code byte, word uint32, quoted []byte) []byte {
	b := make([]byte, 8, 8+len(quoted))
	b[0], b[1] = typ, code
	binary.BigEndian.PutUint32(b[4:], word)
	return append(b, quoted...)
}

func TestMatch(t *testing.T) {
	seqs := []uint16{7, 8}
	ours := echoHeader(false, testID, 8)
	tests := []struct {
		name   string
		dst    netip.Addr
		pkt    packet
		size   int
		match  bool
		ok     bool
		reason Reason
		mtu    int
		from   string
	}{
		{name: "reply", dst: addrB, pkt: packet{icmp: echoReply(t, false, testID, 7, 1472), from: addrB}, size: 1500, match: true, ok: true},
		{name: "reply to the second try", dst: addrB, pkt: packet{icmp: echoReply(t, false, testID, 8, 1472), from: addrB}, size: 1500, match: true, ok: true},
		{name: "reply fragmented", dst: addrB, pkt: packet{icmp: echoReply(t, false, testID, 7, 1473), from: addrB, fragMax: 1500}, size: 1501,
			match: true, reason: ReasonReplyFragmented, mtu: 1500, from: addrB.String()},
		{name: "other id", dst: addrB, pkt: packet{icmp: echoReply(t, false, testID+1, 7, 1472), from: addrB}, size: 1500},
		{name: "old seq", dst: addrB, pkt: packet{icmp: echoReply(t, false, testID, 6, 1472), from: addrB}, size: 1500},
		{name: "other size", dst: addrB, pkt: packet{icmp: echoReply(t, false, testID, 7, 100), from: addrB}, size: 1500},
		{name: "other host", dst: addrB, pkt: packet{icmp: echoReply(t, false, testID, 7, 1472), from: addrA}, size: 1500},
		{name: "a request", dst: addrB, pkt: packet{icmp: echoHeader(false, testID, 7), from: addrB}, size: 36},
		{name: "junk", dst: addrB, pkt: packet{icmp: []byte{0, 0, 0}, from: addrB}, size: 1500},
		{name: "frag needed", dst: addrB, pkt: packet{icmp: icmpError(3, 4, 1500, quote4(addrA, addrB, ours)), from: addrR}, size: 9000,
			match: true, reason: ReasonFragNeeded, mtu: 1500, from: addrR.String()},
		{name: "frag needed, no MTU (pre-RFC 1191 router)", dst: addrB, pkt: packet{icmp: icmpError(3, 4, 0, quote4(addrA, addrB, ours)), from: addrR}, size: 9000,
			match: true, reason: ReasonFragNeeded, from: addrR.String()},
		{name: "frag needed for another destination", dst: addrB, pkt: packet{icmp: icmpError(3, 4, 1500, quote4(addrA, addrC, ours)), from: addrR}, size: 9000},
		{name: "frag needed for another id", dst: addrB, pkt: packet{icmp: icmpError(3, 4, 1500, quote4(addrA, addrB, echoHeader(false, 1, 8))), from: addrR}, size: 9000},
		{name: "frag needed quoting UDP", dst: addrB, pkt: packet{icmp: icmpError(3, 4, 1500, func() []byte {
			b := quote4(addrA, addrB, ours)
			b[9] = 17
			return b
		}()), from: addrR}, size: 9000},
		{name: "frag needed, quote cut short", dst: addrB, pkt: packet{icmp: icmpError(3, 4, 1500, quote4(addrA, addrB, ours)[:24]), from: addrR}, size: 9000},
		{name: "host unreachable", dst: addrB, pkt: packet{icmp: icmpError(3, 1, 0, quote4(addrA, addrB, ours)), from: addrR}, size: 9000,
			match: true, reason: ReasonUnreachable, from: addrR.String()},
		{name: "time exceeded", dst: addrB, pkt: packet{icmp: icmpError(11, 0, 0, quote4(addrA, addrB, ours)), from: addrR}, size: 9000,
			match: true, reason: ReasonUnreachable, from: addrR.String()},
		{name: "v6 reply", dst: v6Dst, pkt: packet{icmp: echoReply(t, true, testID, 7, 1452), from: v6Dst}, size: 1500, match: true, ok: true},
		{name: "v6 packet too big", dst: v6Dst, pkt: packet{icmp: icmpError(2, 0, 1280, quote6(v6Src, v6Dst, echoHeader(true, testID, 7))), from: v6R}, size: 1500,
			match: true, reason: ReasonFragNeeded, mtu: 1280, from: v6R.String()},
		{name: "v6 packet too big, v4 echo type", dst: v6Dst, pkt: packet{icmp: icmpError(2, 0, 1280, quote6(v6Src, v6Dst, echoHeader(false, testID, 7))), from: v6R}, size: 1500},
		{name: "v6 unreachable", dst: v6Dst, pkt: packet{icmp: icmpError(1, 3, 0, quote6(v6Src, v6Dst, echoHeader(true, testID, 7))), from: v6R}, size: 1500,
			match: true, reason: ReasonUnreachable, from: v6R.String()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, match := testProber(tt.dst).match(tt.pkt, tt.size, seqs)
			if match != tt.match {
				t.Fatalf("match = %v; want %v (%+v)", match, tt.match, o)
			}
			if !match {
				return
			}
			if o.ok != tt.ok || o.fail.Reason != tt.reason || o.fail.MTU != tt.mtu || o.fail.From != tt.from {
				t.Errorf("outcome %+v; want ok %v, reason %q, MTU %d, from %q", o, tt.ok, tt.reason, tt.mtu, tt.from)
			}
			if !o.ok && (o.fail.Size != tt.size || o.fail.Detail == "") {
				t.Errorf("failure %+v; want size %d and a detail", o.fail, tt.size)
			}
		})
	}
}

// cmsg builds one control message.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = level, typ
	h.SetLen(unix.CmsgLen(len(data)))
	copy(b[unix.CmsgLen(0):], data)
	return b
}

// extErr builds a sock_extended_err with an offender address.
func extErr(errno unix.Errno, origin, typ, code uint8, info uint32, off netip.Addr) []byte {
	b := make([]byte, 16)
	binary.NativeEndian.PutUint32(b[0:], uint32(errno))
	b[4], b[5], b[6] = origin, typ, code
	binary.NativeEndian.PutUint32(b[8:], info)
	switch {
	case off.Is4():
		sa := make([]byte, 16)
		binary.NativeEndian.PutUint16(sa, unix.AF_INET)
		a := off.As4()
		copy(sa[4:], a[:])
		b = append(b, sa...)
	case off.Is6():
		sa := make([]byte, 28)
		binary.NativeEndian.PutUint16(sa, unix.AF_INET6)
		a := off.As16()
		copy(sa[8:], a[:])
		b = append(b, sa...)
	default:
		b = append(b, make([]byte, 16)...) // AF_UNSPEC
	}
	return b
}

func TestMatchQueued(t *testing.T) {
	seqs := []uint16{3}
	tests := []struct {
		name    string
		dst     netip.Addr
		level   int32
		typ     int32
		ee      []byte
		payload []byte
		match   bool
		reason  Reason
		mtu     int
		from    string
	}{
		{name: "frag needed", dst: addrB, level: unix.SOL_IP, typ: unix.IP_RECVERR,
			ee: extErr(unix.EMSGSIZE, unix.SO_EE_ORIGIN_ICMP, 3, 4, 1500, addrR), payload: echoHeader(false, testID, 3),
			match: true, reason: ReasonFragNeeded, mtu: 1500, from: addrR.String()},
		{name: "host unreachable", dst: addrB, level: unix.SOL_IP, typ: unix.IP_RECVERR,
			ee: extErr(unix.EHOSTUNREACH, unix.SO_EE_ORIGIN_ICMP, 3, 1, 0, addrA), payload: echoHeader(false, testID, 3),
			match: true, reason: ReasonUnreachable, from: addrA.String()},
		{name: "another seq", dst: addrB, level: unix.SOL_IP, typ: unix.IP_RECVERR,
			ee: extErr(unix.EMSGSIZE, unix.SO_EE_ORIGIN_ICMP, 3, 4, 1500, addrR), payload: echoHeader(false, testID, 4)},
		{name: "local origin is the sender's business", dst: addrB, level: unix.SOL_IP, typ: unix.IP_RECVERR,
			ee: extErr(unix.EMSGSIZE, unix.SO_EE_ORIGIN_LOCAL, 0, 0, 1500, netip.Addr{}), payload: nil},
		{name: "v6 packet too big", dst: v6Dst, level: unix.SOL_IPV6, typ: unix.IPV6_RECVERR,
			ee: extErr(unix.EMSGSIZE, unix.SO_EE_ORIGIN_ICMP6, 2, 0, 1400, v6R), payload: echoHeader(true, testID, 3),
			match: true, reason: ReasonFragNeeded, mtu: 1400, from: v6R.String()},
		{name: "not an error message", dst: addrB, level: unix.SOL_IP, typ: unix.IP_RECVFRAGSIZE,
			ee: extErr(unix.EMSGSIZE, unix.SO_EE_ORIGIN_ICMP, 3, 4, 1500, addrR), payload: echoHeader(false, testID, 3)},
		{name: "truncated", dst: addrB, level: unix.SOL_IP, typ: unix.IP_RECVERR,
			ee: []byte{1, 2, 3}, payload: echoHeader(false, testID, 3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, err := sockaddr(tt.dst)
			if err != nil {
				t.Fatal(err)
			}
			q, ok := parseQueued(tt.payload, cmsg(tt.level, tt.typ, tt.ee), name)
			var o outcome
			match := false
			if ok {
				o, match = testProber(tt.dst).matchQueued(q, 9000, seqs)
			}
			if match != tt.match {
				t.Fatalf("match = %v; want %v (%+v, %+v)", match, tt.match, q, o)
			}
			if match && (o.fail.Reason != tt.reason || o.fail.MTU != tt.mtu || o.fail.From != tt.from) {
				t.Errorf("outcome %+v; want reason %q, MTU %d, from %q", o, tt.reason, tt.mtu, tt.from)
			}
		})
	}
	if _, ok := parseQueued(nil, []byte{1, 2}, nil); ok {
		t.Error("parseQueued(garbage control message) ok")
	}
}

func TestFragSize(t *testing.T) {
	v := make([]byte, 4)
	binary.NativeEndian.PutUint32(v, 1500)
	for _, tt := range []struct {
		name string
		oob  []byte
		want int
	}{
		{"none", nil, 0},
		{"v4", cmsg(unix.SOL_IP, unix.IP_RECVFRAGSIZE, v), 1500},
		{"v6", cmsg(unix.SOL_IPV6, unix.IPV6_RECVFRAGSIZE, v), 1500},
		{"other", cmsg(unix.SOL_IP, unix.IP_TTL, v), 0},
		{"short", cmsg(unix.SOL_IP, unix.IP_RECVFRAGSIZE, v[:2]), 0},
		{"garbage", []byte{1, 2, 3}, 0},
	} {
		if got := fragSize(tt.oob); got != tt.want {
			t.Errorf("%s: fragSize = %d; want %d", tt.name, got, tt.want)
		}
	}
}
