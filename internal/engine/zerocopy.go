package engine

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sendfileSender sends the pages of one memfd, shared by every stream of
// the test: they are only read, by the kernel.
type sendfileSender struct{ memfd int }

func newSendfileSender() (*sendfileSender, error) {
	fd, err := unix.MemfdCreate("linerate-zerocopy", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("creating a memfd for sendfile: %w", err)
	}
	buf := make([]byte, sendSize)
	fillPattern(buf)
	if _, err := unix.Pwrite(fd, buf, 0); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("filling the sendfile memfd: %w", err)
	}
	return &sendfileSender{memfd: fd}, nil
}

func (z *sendfileSender) close() { unix.Close(z.memfd) }

func (z *sendfileSender) loop(s *Stream, stop *atomic.Bool) error {
	for !stop.Load() {
		var off int64
		n, err := unix.Sendfile(s.FD, z.memfd, &off, sendSize)
		if n > 0 {
			s.bytes.Add(uint64(n))
		}
		if err != nil && err != unix.EINTR {
			return sendErr(s, stop, err)
		}
	}
	return nil
}

// The ring of a MSG_ZEROCOPY stream: blocks of sendSize it may have in
// flight, the kernel holding each until it reports it sent. A socket
// whose buffer holds more than the ring stalls on the ring, not on the
// network, so the ring is sized from the socket's send buffer when the
// stream starts: SO_SNDBUF, which is exact when the test set a window
// (-w; Linux reports twice what was asked) and the initial size under
// autotuning (which then grows up to tcp_wmem's maximum, 4 MiB by
// default). At least zcMinRing blocks (16 × 128 KiB = 2 MiB), at most
// zcMaxRing (32 MiB); a power of two, so that a block's index follows
// the kernel's 32-bit notification ids across their wrap.
const (
	zcMinRing = 16
	zcMaxRing = 256
)

// zcRingFor returns the ring size for socket fd.
func zcRingFor(fd int) int {
	snd, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
	if err != nil {
		return zcMinRing
	}
	return ringBlocks(snd)
}

// ringBlocks is the power of two of blocks that holds bufBytes, within
// [zcMinRing, zcMaxRing].
func ringBlocks(bufBytes int) int {
	n := zcMinRing
	for n < zcMaxRing && n*sendSize < bufBytes {
		n *= 2
	}
	return n
}

// msgZCSender sends with MSG_ZEROCOPY from a ring of blocks in memory of
// its own (mmap, out of the Go heap), reusing a block only after the
// kernel said it is done with it.
type msgZCSender struct{}

func (msgZCSender) loop(s *Stream, stop *atomic.Bool) error {
	ring := zcRingFor(s.FD)
	mem, err := unix.Mmap(-1, 0, ring*sendSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("stream %d: mapping zero-copy buffers: %w", s.ID, err)
	}
	fillPattern(mem)
	z := &zcState{s: s, busy: make([]bool, ring)}
	err = z.sendAll(mem, stop)
	// The kernel may still read blocks in flight: wait for them before
	// the memory goes (a bounded wait; if the peer vanished, the pages
	// stay mapped until the process exits rather than be freed under it).
	if z.drain(2 * time.Second) {
		_ = unix.Munmap(mem)
	}
	return err
}

// zcState tracks MSG_ZEROCOPY sends by the kernel's notification ids: the
// nth send that moved data has id n-1 (mod 2^32), and uses block id %
// len(busy).
type zcState struct {
	s       *Stream
	next    uint32 // id of the next send
	busy    []bool // block still referenced by the kernel; a power of two of them
	pending int
	oob     [256]byte
}

func (z *zcState) slot(id uint32) uint32 { return id % uint32(len(z.busy)) }

func (z *zcState) sendAll(mem []byte, stop *atomic.Bool) error {
	for !stop.Load() {
		slot := z.slot(z.next)
		for z.busy[slot] {
			if err := z.wait(); err != nil {
				return err
			}
		}
		block := mem[int(slot)*sendSize : int(slot+1)*sendSize]
		n, err := unix.SendmsgN(z.s.FD, block, nil, nil, unix.MSG_ZEROCOPY)
		if n > 0 {
			z.busy[slot] = true
			z.pending++
			z.next++
			z.s.bytes.Add(uint64(n))
			z.s.zc.sends.Add(1)
		}
		switch {
		case err == nil, err == unix.EINTR:
		case err == unix.ENOBUFS: // too many notifications queued: reap, retry
			if err := z.wait(); err != nil {
				return err
			}
		default:
			return sendErr(z.s, stop, err)
		}
		if err := z.reap(); err != nil {
			return err
		}
	}
	return nil
}

// wait blocks until a notification arrives (POLLERR), then reaps.
func (z *zcState) wait() error {
	fds := []unix.PollFd{{Fd: int32(z.s.FD)}}
	if _, err := unix.Poll(fds, 1000); err != nil && err != unix.EINTR {
		return fmt.Errorf("stream %d: waiting for zero-copy completions: %w", z.s.ID, err)
	}
	return z.reap()
}

// reap reads every queued notification without blocking.
func (z *zcState) reap() error {
	for z.pending > 0 {
		_, oobn, _, _, err := unix.Recvmsg(z.s.FD, nil, z.oob[:], unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
		if err == unix.EAGAIN || err == unix.EINTR {
			return nil
		}
		if err != nil {
			return fmt.Errorf("stream %d: reading zero-copy completions: %w", z.s.ID, err)
		}
		if err := z.complete(z.oob[:oobn]); err != nil {
			return err
		}
	}
	return nil
}

// complete marks the blocks of one notification free.
func (z *zcState) complete(oob []byte) error {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return fmt.Errorf("stream %d: zero-copy notification: %w", z.s.ID, err)
	}
	for _, m := range msgs {
		if len(m.Data) < int(unsafe.Sizeof(unix.SockExtendedErr{})) {
			continue
		}
		ee := (*unix.SockExtendedErr)(unsafe.Pointer(&m.Data[0]))
		if ee.Origin != unix.SO_EE_ORIGIN_ZEROCOPY {
			if ee.Errno != 0 {
				return fmt.Errorf("stream %d: socket error: %w", z.s.ID, unix.Errno(ee.Errno))
			}
			continue
		}
		n := ee.Data - ee.Info + 1 // ids Info..Data, inclusive (mod 2^32)
		for id := ee.Info; id != ee.Data+1; id++ {
			if z.busy[z.slot(id)] {
				z.busy[z.slot(id)] = false
				z.pending--
			}
		}
		z.s.zc.completions.Add(uint64(n))
		if ee.Code&unix.SO_EE_CODE_ZEROCOPY_COPIED != 0 {
			z.s.zc.copied.Add(uint64(n))
		}
	}
	return nil
}

// drain waits up to d for every send to complete and reports whether all
// did.
func (z *zcState) drain(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for z.pending > 0 && time.Now().Before(deadline) {
		if err := z.wait(); err != nil && !errors.Is(err, unix.EBADF) {
			return false
		}
	}
	return z.pending == 0
}
