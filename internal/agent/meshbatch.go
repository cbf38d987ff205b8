package agent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// udpBatch is a UDP socket that the mesh reads and writes many datagrams
// at a time (recvmmsg, sendmmsg), with the kernel's own timestamps of
// each datagram's arrival and departure (SO_TIMESTAMPING, software):
// a probe's round trip is measured from kernel to kernel, whenever the
// agent gets to read it, and an agent probing 63 peers ten times a second
// makes a few dozen system calls a second instead of thousands.
//
// The socket is the kernel's alone, never registered with Go's network
// poller, and read and written without blocking (MSG_DONTWAIT) by the one
// goroutine of the mesh: a poller would be woken by every datagram and
// every departure stamp that arrives, a thousand times a second at 63
// peers, for nothing, since the mesh reads at its ticks.
//
// Hand-written over x/sys rather than x/net's ipv4.PacketConn batches,
// which allocate per call and go through the poller; nothing here
// allocates once the socket is open (TestMeshLoopsDoNotAllocate).
type udpBatch struct {
	fd   int
	v6   bool
	port uint16

	in  batchBufs
	inN int

	out  batchBufs
	outN int
}

// batchBufs are the buffers of one direction: n datagrams of size bytes,
// their addresses and their control messages.
type batchBufs struct {
	size, oobSize int
	data, oob     []byte
	names         []byte
	msgs          []unix.Mmsghdr
	iovs          []unix.Iovec
}

const (
	batchMax     = 64
	batchNameLen = unix.SizeofSockaddrInet6
	batchOOBLen  = 256
	// batchRcvbuf holds a tick's replies of every peer, and a tick's
	// requests, until the agent reads them.
	batchRcvbuf = 1 << 20
	// The timestamps asked for: software ones, on receive and on send
	// (these come back on the error queue, with the datagram's number
	// in the socket, and without its data).
	meshTimestamping = unix.SOF_TIMESTAMPING_RX_SOFTWARE | unix.SOF_TIMESTAMPING_TX_SOFTWARE | unix.SOF_TIMESTAMPING_SOFTWARE |
		unix.SOF_TIMESTAMPING_OPT_ID | unix.SOF_TIMESTAMPING_OPT_TSONLY
)

func newBatchBufs(size int) batchBufs {
	b := batchBufs{size: size, oobSize: batchOOBLen, data: make([]byte, batchMax*size), oob: make([]byte, batchMax*batchOOBLen),
		names: make([]byte, batchMax*batchNameLen), msgs: make([]unix.Mmsghdr, batchMax), iovs: make([]unix.Iovec, batchMax)}
	for i := range batchMax {
		b.iovs[i].Base = &b.data[i*size]
		b.msgs[i].Hdr.Iov = &b.iovs[i]
		b.msgs[i].Hdr.Iovlen = 1
		b.msgs[i].Hdr.Name = &b.names[i*batchNameLen]
	}
	return b
}

// listenBatch opens a UDP socket at addr for batches of datagrams of up
// to inSize bytes in and outSize out.
func listenBatch(addr netip.AddrPort, inSize, outSize int) (*udpBatch, error) {
	family := unix.AF_INET
	var sa unix.Sockaddr = &unix.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().Unmap().As4()}
	if addr.Addr().Is6() && !addr.Addr().Is4In6() {
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Port: int(addr.Port()), Addr: addr.Addr().As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return nil, fmt.Errorf("opening a UDP socket: %w", err)
	}
	fail := func(what string, err error) (*udpBatch, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := setTimestamping(uintptr(fd), meshTimestamping); err != nil {
		return fail("asking for the kernel's timestamps", err)
	}
	// A bigger buffer if the kernel allows it; its default holds a few
	// hundred datagrams anyway.
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, batchRcvbuf)
	if err := unix.Bind(fd, sa); err != nil {
		return fail("binding "+addr.String(), err)
	}
	b := &udpBatch{fd: fd, v6: family == unix.AF_INET6, in: newBatchBufs(inSize), out: newBatchBufs(outSize)}
	if got, err := unix.Getsockname(fd); err == nil {
		switch a := got.(type) {
		case *unix.SockaddrInet4:
			b.port = uint16(a.Port)
		case *unix.SockaddrInet6:
			b.port = uint16(a.Port)
		}
	}
	return b, nil
}

// Close closes the socket; call it from the goroutine that uses it.
func (b *udpBatch) Close() error {
	if b.fd < 0 {
		return nil
	}
	err := unix.Close(b.fd)
	b.fd = -1
	return err
}

func setTimestamping(fd uintptr, flags int) error {
	return unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPING, flags)
}

// read reads the datagrams queued, up to batchMax, without waiting: from
// the error queue (the departures' timestamps) when errq. It returns how
// many it read; none is not an error.
func (b *udpBatch) read(errq bool) (int, error) {
	for i := range batchMax {
		m := &b.in.msgs[i]
		b.in.iovs[i].Len = uint64(b.in.size)
		m.Hdr.Namelen = batchNameLen
		m.Hdr.Control = &b.in.oob[i*b.in.oobSize]
		m.Hdr.Controllen = uint64(b.in.oobSize)
		m.Hdr.Flags = 0
		m.Len = 0
	}
	flags := unix.MSG_DONTWAIT
	if errq {
		flags |= unix.MSG_ERRQUEUE
	}
	b.inN = 0
	// RawSyscall: the call never blocks, and a scheduled one would wake
	// the runtime's monitor thread, which then polls at 20 µs for a
	// millisecond: more CPU than the mesh's own work, ten times a second.
	r, _, e := unix.RawSyscall6(unix.SYS_RECVMMSG, uintptr(b.fd), uintptr(unsafe.Pointer(&b.in.msgs[0])), batchMax, uintptr(flags), 0, 0)
	switch e {
	case 0:
		b.inN = int(r)
		return b.inN, nil
	case unix.EAGAIN, unix.EINTR:
		return 0, nil
	}
	return 0, e
}

// data is datagram i of the last read; from its sender; oob its control
// messages.
func (b *udpBatch) data(i int) []byte {
	return b.in.data[i*b.in.size : i*b.in.size+int(b.in.msgs[i].Len)]
}

func (b *udpBatch) oob(i int) []byte {
	return b.in.oob[i*b.in.oobSize : i*b.in.oobSize+int(b.in.msgs[i].Hdr.Controllen)]
}

func (b *udpBatch) truncated(i int) bool { return b.in.msgs[i].Hdr.Flags&unix.MSG_TRUNC != 0 }

func (b *udpBatch) from(i int) netip.AddrPort {
	return sockaddrBytes(b.in.names[i*batchNameLen:], int(b.in.msgs[i].Hdr.Namelen))
}

// sockaddrBytes reads a sockaddr_in or sockaddr_in6 as the kernel wrote it.
func sockaddrBytes(n []byte, l int) netip.AddrPort {
	if l < 2 {
		return netip.AddrPort{}
	}
	port := binary.BigEndian.Uint16(n[2:])
	switch binary.NativeEndian.Uint16(n) {
	case unix.AF_INET:
		if l >= unix.SizeofSockaddrInet4 {
			return netip.AddrPortFrom(netip.AddrFrom4([4]byte(n[4:8])), port)
		}
	case unix.AF_INET6:
		if l >= unix.SizeofSockaddrInet6 {
			return netip.AddrPortFrom(netip.AddrFrom16([16]byte(n[8:24])).Unmap(), port)
		}
	}
	return netip.AddrPort{}
}

// next returns the buffer of the next datagram to send to to, or nil when
// the batch is full.
func (b *udpBatch) next(to netip.AddrPort, size int) []byte {
	if b.outN == batchMax {
		return nil
	}
	i := b.outN
	n := b.out.names[i*batchNameLen : (i+1)*batchNameLen]
	clear(n)
	a := to.Addr()
	if b.v6 {
		binary.NativeEndian.PutUint16(n, unix.AF_INET6)
		binary.BigEndian.PutUint16(n[2:], to.Port())
		a16 := a.As16()
		copy(n[8:24], a16[:])
		b.out.msgs[i].Hdr.Namelen = unix.SizeofSockaddrInet6
	} else {
		binary.NativeEndian.PutUint16(n, unix.AF_INET)
		binary.BigEndian.PutUint16(n[2:], to.Port())
		a4 := a.Unmap().As4()
		copy(n[4:8], a4[:])
		b.out.msgs[i].Hdr.Namelen = unix.SizeofSockaddrInet4
	}
	b.out.iovs[i].Len = uint64(size)
	b.out.msgs[i].Hdr.Control = nil
	b.out.msgs[i].Hdr.Controllen = 0
	b.outN++
	return b.out.data[i*b.out.size : i*b.out.size+size]
}

// flush sends the datagrams queued and returns how many there were. A
// datagram the kernel refuses (a firewall dropping it on its way out, no
// route to its peer, a full buffer) is lost, as it would be on the wire,
// never sent again: sendmmsg stops at it (saying so at once when it is
// the first, else by sending fewer), and the rest are sent after it.
func (b *udpBatch) flush() (int, error) {
	n := b.outN
	b.outN = 0
	var first error
	for sent := 0; sent < n; {
		r, _, e := unix.RawSyscall6(unix.SYS_SENDMMSG, uintptr(b.fd), uintptr(unsafe.Pointer(&b.out.msgs[sent])), uintptr(n-sent), unix.MSG_DONTWAIT, 0, 0) // never blocks: see read
		switch {
		case e == unix.EINTR:
		case e != 0:
			if first == nil {
				first = e
			}
			sent++
		default:
			sent += int(r)
			if sent < n {
				if first == nil {
					first = errPartial
				}
				sent++ // the one it stopped at
			}
		}
	}
	return n, first
}

// errPartial: sendmmsg stopped at a datagram it could not send.
var errPartial = errors.New("a datagram was refused on its way out")

// stamps reads a datagram's control messages: its software timestamp
// (arrival, or departure on the error queue), and on the error queue its
// number in the socket (SOF_TIMESTAMPING_OPT_ID). Hand-written:
// unix.ParseSocketControlMessage allocates a slice per call.
func stamps(oob []byte) (ts int64, id uint32, haveID bool) {
	const hdr = int(unsafe.Sizeof(unix.Cmsghdr{}))
	for len(oob) >= hdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			return ts, id, haveID
		}
		d := oob[hdr:l]
		switch {
		case h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPING && len(d) >= 16:
			// struct scm_timestamping: ts[0] is the software stamp.
			ts = int64(binary.NativeEndian.Uint64(d))*1e9 + int64(binary.NativeEndian.Uint64(d[8:]))
		case (h.Level == unix.SOL_IP && h.Type == unix.IP_RECVERR || h.Level == unix.SOL_IPV6 && h.Type == unix.IPV6_RECVERR) &&
			len(d) >= int(unsafe.Sizeof(unix.SockExtendedErr{})):
			e := (*unix.SockExtendedErr)(unsafe.Pointer(&d[0]))
			if e.Origin == unix.SO_EE_ORIGIN_TIMESTAMPING {
				id, haveID = e.Data, true
			}
		}
		l = (l + 7) &^ 7
		if l >= len(oob) {
			break
		}
		oob = oob[l:]
	}
	return ts, id, haveID
}
