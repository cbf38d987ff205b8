package pathmtu

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// sockKind is the kind of ICMP socket a probe uses.
type sockKind int

const (
	// kindRaw is a raw ICMP socket (CAP_NET_RAW). It sees every ICMP
	// message, including routers' errors, and sets the echo identifier.
	kindRaw sockKind = iota
	// kindPing is an ICMP datagram ("ping") socket, open to the groups in
	// net.ipv4.ping_group_range. The kernel owns the echo identifier and
	// delivers only replies to it; errors arrive on the error queue.
	kindPing
)

func (k sockKind) String() string {
	if k == kindPing {
		return "ping"
	}
	return "raw"
}

// socket is one ICMP socket with the options a DF probe needs.
type socket struct {
	pc   net.PacketConn
	rc   syscall.RawConn
	kind sockKind
	v6   bool
	id   uint16        // the echo identifier replies carry
	sa   unix.Sockaddr // the destination
	buf  []byte        // receive buffer: the largest IP packet
	oob  []byte        // control messages
	ebuf []byte        // error-queue payload: the quoted start of a packet
	eoob []byte        // error-queue control messages
}

// openSocket opens the first kind of socket that works, on the calling
// goroutine's thread (and so in its network namespace).
func openSocket(dst netip.Addr, kinds []sockKind) (*socket, error) {
	sa, err := sockaddr(dst)
	if err != nil {
		return nil, err
	}
	// Each kind's error is kept (wrapped, on one line) so that the
	// message says what was tried and how it failed.
	var verbs []string
	var errs []any
	denied := 0
	for _, k := range kinds {
		s, err := open(k, dst.Is6())
		if err == nil {
			s.sa = sa
			return s, nil
		}
		verbs = append(verbs, k.String()+" socket: %w")
		errs = append(errs, err)
		if errors.Is(err, os.ErrPermission) {
			denied++
		}
	}
	tried := strings.Join(verbs, "; ")
	if denied == len(kinds) {
		return nil, fmt.Errorf("pathmtu: %w ("+tried+")", append([]any{ErrPermission}, errs...)...)
	}
	return nil, fmt.Errorf("pathmtu: no ICMP socket ("+tried+")", errs...)
}

// open opens one socket of kind k.
func open(k sockKind, v6 bool) (*socket, error) {
	s := &socket{kind: k, v6: v6, buf: make([]byte, maxMTU+1), oob: make([]byte, 512),
		ebuf: make([]byte, 512), eoob: make([]byte, 512)}
	var err error
	if k == kindRaw {
		err = s.openRaw()
	} else {
		err = s.openPing()
	}
	if err != nil {
		return nil, err
	}
	sc, ok := s.pc.(syscall.Conn)
	if !ok {
		s.pc.Close()
		return nil, fmt.Errorf("%T has no file descriptor", s.pc)
	}
	if s.rc, err = sc.SyscallConn(); err != nil {
		s.pc.Close()
		return nil, err
	}
	return s, nil
}

func (s *socket) openRaw() error {
	network, laddr := "ip4:icmp", "0.0.0.0"
	if s.v6 {
		network, laddr = "ip6:ipv6-icmp", "::"
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = s.setOptions(int(fd)) }); err != nil {
			return err
		}
		return serr
	}}
	pc, err := lc.ListenPacket(context.Background(), network, laddr)
	if err != nil {
		return err
	}
	s.pc = pc
	// Replies are matched on an identifier of our choosing; other raw
	// sockets and ping(8) pick theirs, and a collision only means both
	// ignore a few foreign replies by sequence number.
	s.id = uint16(rand.Uint32())
	return nil
}

// openPing opens an ICMP datagram socket by hand, as x/net/icmp does: the
// net package has no network name for it.
func (s *socket) openPing() error {
	family, proto := unix.AF_INET, unix.IPPROTO_ICMP
	var local unix.Sockaddr = &unix.SockaddrInet4{}
	if s.v6 {
		family, proto, local = unix.AF_INET6, unix.IPPROTO_ICMPV6, &unix.SockaddrInet6{}
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return os.NewSyscallError("socket", err)
	}
	if err := s.setOptions(fd); err != nil {
		unix.Close(fd)
		return err
	}
	// Binding picks the identifier (the socket's "port"); the kernel
	// writes it into every request and delivers only replies that carry it.
	if err := unix.Bind(fd, local); err != nil {
		unix.Close(fd)
		return os.NewSyscallError("bind", err)
	}
	name, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return os.NewSyscallError("getsockname", err)
	}
	switch a := name.(type) {
	case *unix.SockaddrInet4:
		s.id = uint16(a.Port)
	case *unix.SockaddrInet6:
		s.id = uint16(a.Port)
	}
	f := os.NewFile(uintptr(fd), "icmp-ping")
	pc, err := net.FilePacketConn(f) // duplicates fd
	f.Close()
	if err != nil {
		return err
	}
	s.pc = pc
	return nil
}

// setOptions sets don't-fragment, extended error reporting and, where the
// kernel has it (4.13+), reporting of reassembled replies.
func (s *socket) setOptions(fd int) error {
	level, mtuDisc, do, recvErr, fragSize := unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO, unix.IP_RECVERR, unix.IP_RECVFRAGSIZE
	if s.v6 {
		level, mtuDisc, do, recvErr, fragSize = unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, unix.IPV6_PMTUDISC_DO, unix.IPV6_RECVERR, unix.IPV6_RECVFRAGSIZE
	}
	// PMTUDISC_DO sets DF (for IPv6: never fragment locally) and makes
	// an oversized send fail with EMSGSIZE, as `ping -M do` does.
	if err := unix.SetsockoptInt(fd, level, mtuDisc, do); err != nil {
		return os.NewSyscallError("setsockopt MTU_DISCOVER", err)
	}
	// RECVERR queues each error with the MTU the kernel or router
	// reported and a copy of the echo header that caused it.
	if err := unix.SetsockoptInt(fd, level, recvErr, 1); err != nil {
		return os.NewSyscallError("setsockopt RECVERR", err)
	}
	// Without RECVFRAGSIZE a fragmented reply looks like a pass; that is
	// the best an old kernel can do, so its absence is no error.
	_ = unix.SetsockoptInt(fd, level, fragSize, 1)
	if s.kind == kindRaw && !s.v6 {
		// Pass only the ICMP types a probe reads (echo reply, destination
		// unreachable, time exceeded, parameter problem): a busy host's
		// other ICMP never reaches this socket. Best effort.
		const icmpFilter = 1 // ICMP_FILTER, linux/icmp.h; a set bit drops that type
		const want = 1<<0 | 1<<3 | 1<<11 | 1<<12
		_ = unix.SetsockoptInt(fd, unix.SOL_RAW, icmpFilter, ^want)
	}
	return nil
}

// sockaddr converts a destination to a socket address.
func sockaddr(dst netip.Addr) (unix.Sockaddr, error) {
	if dst.Is4() {
		return &unix.SockaddrInet4{Addr: dst.As4()}, nil
	}
	sa := &unix.SockaddrInet6{Addr: dst.As16()}
	if z := dst.Zone(); z != "" {
		ifi, err := net.InterfaceByName(z)
		if err != nil {
			return nil, fmt.Errorf("pathmtu: zone of %v: %w", dst, err)
		}
		sa.ZoneId = uint32(ifi.Index)
	}
	return sa, nil
}

func (s *socket) close() error {
	return s.pc.Close()
}

// send hands one ICMP message to the kernel.
func (s *socket) send(b []byte) error {
	var serr error
	err := s.rc.Write(func(fd uintptr) bool {
		serr = unix.Sendto(int(fd), b, 0, s.sa)
		return serr != unix.EAGAIN && serr != unix.EINTR
	})
	if err != nil {
		return err
	}
	if serr != nil {
		return os.NewSyscallError("sendto", serr)
	}
	return nil
}

// packet is one received ICMP message.
type packet struct {
	icmp []byte     // the ICMP message, IP header removed
	from netip.Addr // its sender
	// fragMax is the largest fragment's size when the packet arrived in
	// fragments and was reassembled; 0 when it arrived whole.
	fragMax int
}

// recv reads one ICMP message, waiting until the read deadline. An error
// may be os.ErrDeadlineExceeded, or the errno of an ICMP error the kernel
// reported on the socket (see asyncErr).
func (s *socket) recv() (packet, error) {
	var n, oobn int
	var from unix.Sockaddr
	var rerr error
	err := s.rc.Read(func(fd uintptr) bool {
		n, oobn, _, from, rerr = unix.Recvmsg(int(fd), s.buf, s.oob, 0)
		return rerr != unix.EAGAIN && rerr != unix.EINTR
	})
	if err != nil {
		return packet{}, err
	}
	if rerr != nil {
		return packet{}, os.NewSyscallError("recvmsg", rerr)
	}
	p := packet{icmp: s.buf[:n], from: addrOf(from), fragMax: fragSize(s.oob[:oobn])}
	if s.kind == kindRaw && !s.v6 {
		// Raw IPv4 sockets deliver the IP header; raw IPv6 and ping
		// sockets do not.
		if n < 20 || s.buf[0]>>4 != 4 || int(s.buf[0]&0x0f)*4 > n {
			return packet{}, nil // not an IPv4 packet: nothing to match
		}
		p.icmp = s.buf[int(s.buf[0]&0x0f)*4 : n]
	}
	return p, nil
}

// asyncErr reports whether err is how the kernel hands an ICMP error to
// the socket (sk_err: the next recvmsg fails with it once). The detail is
// on the error queue.
func asyncErr(err error) bool {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	switch errno {
	case unix.EMSGSIZE, unix.EHOSTUNREACH, unix.ENETUNREACH, unix.ECONNREFUSED,
		unix.EPROTO, unix.ENOPROTOOPT, unix.EACCES, unix.EPERM, unix.EOPNOTSUPP,
		unix.EHOSTDOWN, unix.ENONET, unix.ETIMEDOUT:
		return true
	}
	return false
}

// queued is one entry of the socket's error queue.
type queued struct {
	errno  syscall.Errno
	origin uint8 // unix.SO_EE_ORIGIN_*
	typ    uint8 // ICMP type, for ICMP origins
	code   uint8
	info   uint32     // the MTU, for EMSGSIZE
	from   netip.Addr // the offender: the router or host that sent the ICMP error
	dst    netip.Addr // the original destination
	echo   []byte     // the start of the message that caused it (ICMP origins)
}

// drainErrors reads the whole error queue without blocking and clears a
// pending socket error, so that it cannot surface on the next send.
func (s *socket) drainErrors() []queued {
	var out []queued
	buf, oob := s.ebuf, s.eoob
	_ = s.rc.Control(func(fd uintptr) {
		// Bounded: the queue is drained in one go and a hostile flood of
		// ICMP errors cannot keep this loop running.
		for range 256 {
			n, oobn, _, from, err := unix.Recvmsg(int(fd), buf, oob, unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
			if err != nil {
				break
			}
			if q, ok := parseQueued(buf[:n], oob[:oobn], from); ok {
				out = append(out, q)
			}
		}
		_, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ERROR)
	})
	return out
}

// parseQueued reads an error-queue message: its IP_RECVERR (IPV6_RECVERR)
// control message holds a sock_extended_err followed by the offender's
// address, the payload is the start of the offending packet above IP.
func parseQueued(payload, oob []byte, name unix.Sockaddr) (queued, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return queued{}, false
	}
	for _, m := range msgs {
		if !(m.Header.Level == unix.SOL_IP && m.Header.Type == unix.IP_RECVERR) &&
			!(m.Header.Level == unix.SOL_IPV6 && m.Header.Type == unix.IPV6_RECVERR) {
			continue
		}
		const eeLen = 16 // sizeof(struct sock_extended_err)
		d := m.Data
		if len(d) < eeLen {
			continue
		}
		q := queued{
			errno:  syscall.Errno(binary.NativeEndian.Uint32(d[0:4])),
			origin: d[4],
			typ:    d[5],
			code:   d[6],
			info:   binary.NativeEndian.Uint32(d[8:12]),
			from:   offender(d[eeLen:]),
			dst:    addrOf(name),
			echo:   append([]byte(nil), payload...),
		}
		return q, true
	}
	return queued{}, false
}

// offender reads the sockaddr_in or sockaddr_in6 after a sock_extended_err
// (SO_EE_OFFENDER); the zero Addr when absent (family AF_UNSPEC).
func offender(b []byte) netip.Addr {
	if len(b) < 2 {
		return netip.Addr{}
	}
	switch binary.NativeEndian.Uint16(b[0:2]) {
	case unix.AF_INET:
		if len(b) >= 8 {
			return netip.AddrFrom4([4]byte(b[4:8]))
		}
	case unix.AF_INET6:
		if len(b) >= 24 {
			return netip.AddrFrom16([16]byte(b[8:24])).Unmap()
		}
	}
	return netip.Addr{}
}

// fragSize finds the IP_RECVFRAGSIZE (IPV6_RECVFRAGSIZE) control message,
// which the kernel adds only to a reply it reassembled from fragments.
func fragSize(oob []byte) int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, m := range msgs {
		if (m.Header.Level == unix.SOL_IP && m.Header.Type == unix.IP_RECVFRAGSIZE ||
			m.Header.Level == unix.SOL_IPV6 && m.Header.Type == unix.IPV6_RECVFRAGSIZE) && len(m.Data) >= 4 {
			return int(int32(binary.NativeEndian.Uint32(m.Data[:4])))
		}
	}
	return 0
}

// addrOf returns a socket address's IP; the zero Addr for anything else.
func addrOf(sa unix.Sockaddr) netip.Addr {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrFrom4(a.Addr)
	case *unix.SockaddrInet6:
		return netip.AddrFrom16(a.Addr).Unmap()
	}
	return netip.Addr{}
}

// setDeadline bounds the next recv.
func (s *socket) setDeadline(t time.Time) error {
	return s.pc.SetReadDeadline(t)
}
