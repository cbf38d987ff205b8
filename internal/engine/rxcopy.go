package engine

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/result"
)

// A receiver may skip the copy of what it reads into user memory, to
// measure the wire and the stack without it (at 100 Gbit/s and beyond
// the copy is often what a receiving core spends most on):
//
//   - MSG_TRUNC on a TCP recv(2) makes the kernel drop the bytes instead
//     of copying them, as iperf3 --skip-rx-copy does. Whether this
//     kernel honours it is tried once, on loopback (TruncSupport): a
//     kernel that ignores the flag copies, and the run says so.
//   - TCP_ZEROCOPY_RECEIVE (Linux 4.18) maps the pages holding the
//     payload into a region mmap(2)ed on the socket, as neper
//     --rx_zerocopy does. Only payload that fills whole, aligned pages
//     can be mapped (a NIC that splits headers from payload, an MTU of
//     4 KiB of payload plus headers); the rest the kernel copies into a
//     buffer given with the same call (Linux 5.11) or leaves to a read.
//     The run counts what was mapped and what copied.

// TruncSupport reports whether recv(MSG_TRUNC) on TCP skips the copy on
// this kernel, trying it once on loopback; the error says why it could
// not be tried.
func TruncSupport() (bool, error) {
	truncOnce.Do(func() { truncOK, truncErr = tryTrunc() })
	return truncOK, truncErr
}

var (
	truncOnce sync.Once
	truncOK   bool
	truncErr  error
)

// tryTrunc sends a known pattern over a loopback connection and receives
// it with MSG_TRUNC into a zeroed buffer: a kernel that skips the copy
// returns the length and leaves the buffer zero.
func tryTrunc() (bool, error) {
	a, b, err := loopbackPair()
	if err != nil {
		return false, fmt.Errorf("trying MSG_TRUNC on loopback: %w", err)
	}
	defer unix.Close(a)
	defer unix.Close(b)
	msg := []byte("linerate MSG_TRUNC probe")
	if err := writeAll(a, msg); err != nil {
		return false, fmt.Errorf("trying MSG_TRUNC on loopback: %w", err)
	}
	buf := make([]byte, len(msg))
	got := 0
	for got < len(msg) {
		n, err := recvFlags(b, buf[got:], unix.MSG_TRUNC)
		if err != nil {
			return false, fmt.Errorf("trying MSG_TRUNC on loopback: %w", err)
		}
		if n == 0 {
			return false, errors.New("trying MSG_TRUNC on loopback: the connection closed")
		}
		got += n
	}
	return bytes.Count(buf, []byte{0}) == len(buf), nil
}

// loopbackPair returns two connected blocking TCP sockets on loopback.
func loopbackPair() (int, int, error) {
	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, -1, err
	}
	defer unix.Close(ln)
	if err := unix.Bind(ln, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return -1, -1, err
	}
	if err := unix.Listen(ln, 1); err != nil {
		return -1, -1, err
	}
	sa, err := unix.Getsockname(ln)
	if err != nil {
		return -1, -1, err
	}
	c, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, -1, err
	}
	if err := unix.Connect(c, sa); err != nil {
		unix.Close(c)
		return -1, -1, err
	}
	s, _, err := unix.Accept4(ln, unix.SOCK_CLOEXEC)
	if err != nil {
		unix.Close(c)
		return -1, -1, err
	}
	return c, s, nil
}

// recvFlags is recv(2) with flags and no source address: what
// unix.Recvfrom does, without the address it would allocate for.
func recvFlags(fd int, b []byte, flags int) (int, error) {
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	n, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(p), uintptr(len(b)), uintptr(flags), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// RxMethod is what a side's receivers will do when asked for m, and, when
// that is not m, why.
func RxMethod(m result.SkipRxCopy) (result.SkipRxCopy, string) {
	switch m {
	case result.MsgTrunc:
		ok, err := TruncSupport()
		switch {
		case err != nil:
			return result.RxCopy, "MSG_TRUNC could not be tried: " + err.Error()
		case !ok:
			return result.RxCopy, "this kernel copies despite MSG_TRUNC on TCP: receivers copy"
		}
	case result.ZerocopyReceive:
		if err := zcReceiveSupport(); err != nil {
			return result.RxCopy, err.Error()
		}
	}
	return m, ""
}

// rxStats counts what a zerocopy receiver took, mapped and copied.
type rxStats struct {
	mapped, copied atomic.Uint64
}

// tcpZerocopyReceive is the kernel's struct tcp_zerocopy_receive
// (include/uapi/linux/tcp.h, Linux 5.11 and later; older kernels take a
// prefix of it).
type tcpZerocopyReceive struct {
	Address        uint64
	Length         uint32
	RecvSkipHint   uint32
	Inq            uint32
	Err            int32
	CopybufAddress uint64
	CopybufLen     int32
	Flags          uint32
	MsgControl     uint64
	MsgControllen  uint64
	MsgFlags       uint32
	Reserved       uint32
}

// zcWindow is the region one TCP_ZEROCOPY_RECEIVE call may map: a
// multiple of the page size, as neper maps one buffer per flow. zcCopy
// is the buffer it copies into what it cannot map.
const (
	zcWindow = 256 << 10
	zcCopy   = 64 << 10
)

// zcReceiveSupport tries TCP_ZEROCOPY_RECEIVE once, on loopback.
func zcReceiveSupport() error {
	zcOnce.Do(func() {
		a, b, err := loopbackPair()
		if err != nil {
			zcErr = fmt.Errorf("TCP receive zerocopy could not be tried: %w", err)
			return
		}
		defer unix.Close(a)
		defer unix.Close(b)
		z, err := newZCReceive(b)
		if err != nil {
			zcErr = err
			return
		}
		defer z.close()
		if err := writeAll(a, []byte("probe")); err != nil {
			zcErr = fmt.Errorf("TCP receive zerocopy could not be tried: %w", err)
			return
		}
		if _, err := z.call(b); err != nil {
			zcErr = fmt.Errorf("TCP receive zerocopy (TCP_ZEROCOPY_RECEIVE, Linux 4.18): %w: receivers copy", err)
		}
	})
	return zcErr
}

var (
	zcOnce sync.Once
	zcErr  error
)

// zcReceive is one socket's receive zerocopy: its mapped window and the
// buffer for what the kernel copies.
type zcReceive struct {
	mem []byte
	buf []byte
	arg tcpZerocopyReceive
	pfd [1]unix.PollFd
}

func newZCReceive(fd int) (*zcReceive, error) {
	mem, err := unix.Mmap(fd, 0, zcWindow, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("TCP receive zerocopy: mapping the socket: %w (Linux 4.18 and later)", err)
	}
	return &zcReceive{mem: mem, buf: make([]byte, zcCopy)}, nil
}

func (z *zcReceive) close() { _ = unix.Munmap(z.mem) }

// call makes one TCP_ZEROCOPY_RECEIVE and returns the bytes it mapped
// and copied; it does not block.
func (z *zcReceive) call(fd int) (mapped, error) {
	z.arg = tcpZerocopyReceive{Address: uint64(uintptr(unsafe.Pointer(&z.mem[0]))), Length: zcWindow,
		CopybufAddress: uint64(uintptr(unsafe.Pointer(&z.buf[0]))), CopybufLen: zcCopy}
	n := uint32(unsafe.Sizeof(z.arg))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.IPPROTO_TCP, unix.TCP_ZEROCOPY_RECEIVE,
		uintptr(unsafe.Pointer(&z.arg)), uintptr(unsafe.Pointer(&n)), 0)
	if e != 0 {
		return mapped{}, e
	}
	if z.arg.Err != 0 {
		return mapped{}, unix.Errno(-z.arg.Err)
	}
	m := mapped{pages: int(z.arg.Length), skip: int(z.arg.RecvSkipHint)}
	if z.arg.CopybufLen > 0 {
		m.copied = int(z.arg.CopybufLen)
	}
	return m, nil
}

// mapped is what one TCP_ZEROCOPY_RECEIVE took: bytes mapped, bytes
// copied into the buffer, and bytes it left for a read.
type mapped struct{ pages, copied, skip int }

// recv takes what is queued on fd: mapped where the kernel can, copied
// where it cannot, read (copied) when the call took nothing. It counts
// each in st and returns the bytes taken; 0 is the end of the stream.
// With block, it waits for data; without, it returns EAGAIN.
func (z *zcReceive) recv(fd int, st *rxStats, block bool) (int, error) {
	for {
		m, err := z.call(fd)
		if err != nil && err != unix.EAGAIN {
			// The call fails on a socket at its end (EIO once the
			// peer's FIN is in): a read says whether it is the end.
			n, rerr := recvFlags(fd, z.buf, unix.MSG_DONTWAIT)
			switch {
			case n > 0:
				st.copied.Add(uint64(n))
				return n, nil
			case rerr == nil:
				return 0, nil
			}
			return 0, err
		}
		if got := m.pages + m.copied; got > 0 {
			st.mapped.Add(uint64(m.pages))
			st.copied.Add(uint64(m.copied))
			return got, nil
		}
		// Nothing taken: the queue is empty, at its end, or starts
		// with what cannot be mapped (recv_skip_hint) and did not fit
		// the copy buffer. A read that does not wait says which.
		n, err := recvFlags(fd, z.buf, unix.MSG_DONTWAIT)
		switch {
		case n > 0:
			st.copied.Add(uint64(n))
			return n, nil
		case err == nil:
			return 0, nil // the end of the stream
		case err != unix.EAGAIN && err != unix.EINTR:
			return 0, err
		case !block:
			return 0, unix.EAGAIN
		}
		z.pfd[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
		if _, err := unix.Poll(z.pfd[:], -1); err != nil && err != unix.EINTR {
			return 0, err
		}
	}
}
