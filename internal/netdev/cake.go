package netdev

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// cake's attributes inside TCA_OPTIONS (include/uapi/linux/pkt_sched.h,
// enum TCA_CAKE_*). Neither vishvananda/netlink (it returns cake as a
// GenericQdisc without its options) nor x/sys/unix has them, so the few
// this package reads are written out here.
const (
	tcaCakeBaseRate64 = 2  // u64, bytes per second; 0 is unlimited
	tcaCakeOverhead   = 6  // s32, bytes added to each packet
	tcaCakeRaw        = 12 // flag: count the packet as it comes, no compensation
)

// readCake fills in the cake qdiscs of qs (link index) with their
// bandwidth and overhead, from a raw RTM_GETQDISC dump: the library
// parses the typed qdiscs but drops cake's options.
func readCake(index int, qs []Qdisc) error {
	req := nl.NewNetlinkRequest(unix.RTM_GETQDISC, unix.NLM_F_DUMP)
	req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(index)})
	msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWQDISC)
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return fmt.Errorf("dumping qdisc options: %w", err)
	}
	for _, m := range msgs {
		if len(m) < nl.SizeofTcMsg {
			continue
		}
		tc := nl.DeserializeTcMsg(m)
		if int(tc.Ifindex) != index {
			continue
		}
		attrs, err := parseAttrs(m[tc.Len():])
		if err != nil {
			return fmt.Errorf("parsing a qdisc message: %w", err)
		}
		kind, opts := "", []byte(nil)
		for _, a := range attrs {
			switch a.typ {
			case nl.TCA_KIND:
				kind = cString(a.value)
			case nl.TCA_OPTIONS:
				opts = a.value
			}
		}
		if kind != "cake" {
			continue
		}
		rate, overhead, err := parseCake(opts)
		if err != nil {
			return err
		}
		handle := HandleString(tc.Handle)
		for i := range qs {
			if qs[i].Kind == "cake" && qs[i].Handle == handle {
				qs[i].RateBitsPerSec, qs[i].OverheadBytes = rate, overhead
			}
		}
	}
	return nil
}

// parseCake reads cake's bandwidth (bits per second, 0 when unlimited)
// and its overhead: nil in raw mode, where cake counts the packet as the
// qdisc sees it, else the bytes it counts beyond the IP packet.
func parseCake(opts []byte) (rate uint64, overhead *int, err error) {
	attrs, err := parseAttrs(opts)
	if err != nil {
		return 0, nil, fmt.Errorf("parsing cake's options: %w", err)
	}
	raw, ov := false, (*int)(nil)
	for _, a := range attrs {
		switch a.typ {
		case tcaCakeBaseRate64:
			if len(a.value) < 8 {
				return 0, nil, fmt.Errorf("cake's bandwidth attribute is %d bytes, not 8", len(a.value))
			}
			bps := binary.NativeEndian.Uint64(a.value)
			if bps > 1<<61 { // beyond any link: refuse rather than overflow
				return 0, nil, fmt.Errorf("cake's bandwidth %d bytes/s is out of range", bps)
			}
			rate = bps * 8
		case tcaCakeOverhead:
			if len(a.value) < 4 {
				return 0, nil, fmt.Errorf("cake's overhead attribute is %d bytes, not 4", len(a.value))
			}
			v := int(int32(binary.NativeEndian.Uint32(a.value)))
			ov = &v
		case tcaCakeRaw:
			raw = true
		}
	}
	if raw {
		ov = nil
	}
	return rate, ov, nil
}

// attr is one netlink attribute: its type (flags masked off) and value.
type attr struct {
	typ   uint16
	value []byte
}

// maxAttrs bounds the attributes read from one buffer: a qdisc's options
// hold a few dozen.
const maxAttrs = 256

// parseAttrs splits b into netlink attributes (a 4-byte header of length
// and type, the value, padding to 4 bytes). Hand-written: the library's
// nl.ParseRouteAttr panics when the last attribute's padding runs past
// the buffer. A length shorter than the header or past the buffer is an
// error; the last attribute's padding may be missing.
func parseAttrs(b []byte) ([]attr, error) {
	var out []attr
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b[0:2]))
		if l < 4 || l > len(b) {
			return nil, fmt.Errorf("a netlink attribute of %d bytes in %d", l, len(b))
		}
		if len(out) == maxAttrs {
			return nil, fmt.Errorf("more than %d netlink attributes", maxAttrs)
		}
		// The top two bits of the type are flags (NLA_F_NESTED,
		// NLA_F_NET_BYTEORDER).
		out = append(out, attr{typ: binary.NativeEndian.Uint16(b[2:4]) &^ (1<<15 | 1<<14), value: b[4:l]})
		b = b[min((l+3)&^3, len(b)):]
	}
	return out, nil
}

// cString is a NUL-terminated netlink string.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
