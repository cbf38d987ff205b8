package engine

import (
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Echo is the agent's half of a ping-pong: it writes back every message
// as it arrives, on its own thread pinned to one CPU, with the garbage
// collector off, until the client closes the connection (TCP) or Halt
// (UDP, or an aborted test).
type Echo struct {
	fd   int
	cpu  int
	size int
	udp  bool
	halt atomic.Bool
	n    atomic.Uint64
	done <-chan error
}

// echoPoll is how often a UDP echo waiting for a datagram looks whether
// it was halted.
const echoPoll = 100 * time.Millisecond

// NewEcho prepares the echo of size-byte messages over fd (blocking,
// Detach; a UDP socket connected to the client). The caller keeps the
// descriptor and closes it after Wait.
func NewEcho(fd, cpu, size int, udp bool) (*Echo, error) {
	if size < MinMessage || size > MaxMessage {
		return nil, fmt.Errorf("message size %d: must be %d to %d bytes", size, MinMessage, MaxMessage)
	}
	if udp {
		tv := unix.NsecToTimeval(echoPoll.Nanoseconds())
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			return nil, fmt.Errorf("setting the socket's receive timeout: %w", err)
		}
	} else if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
		return nil, fmt.Errorf("setting TCP_NODELAY: %w", err)
	}
	return &Echo{fd: fd, cpu: cpu, size: size, udp: udp}, nil
}

// Start runs the echo on its thread, named name.
func (e *Echo) Start(name string) {
	e.done = onPinnedThread(e.cpu, name, func() error {
		restore := quietGC()
		defer restore()
		if e.udp {
			return e.udpLoop()
		}
		return e.tcpLoop()
	})
}

// Halt ends the echo: at once for TCP (the socket is shut down), within
// echoPoll for UDP.
func (e *Echo) Halt() {
	e.halt.Store(true)
	if !e.udp {
		_ = unix.Shutdown(e.fd, unix.SHUT_RDWR)
	}
}

// Echoed returns the messages echoed so far.
func (e *Echo) Echoed() uint64 { return e.n.Load() }

// Wait waits for the echo to end and returns the messages it echoed and
// what ended it abnormally (nil: the client closed, or Halt).
func (e *Echo) Wait() (uint64, error) {
	err := <-e.done
	return e.n.Load(), err
}

func (e *Echo) tcpLoop() error {
	buf := make([]byte, e.size)
	var y yielder
	for {
		for off := 0; off < len(buf); {
			n, err := unix.Read(e.fd, buf[off:])
			switch {
			case err == unix.EINTR:
				continue
			case n == 0 && err == nil, e.halt.Load():
				return nil // the client is done
			case err != nil:
				return fmt.Errorf("echo: receiving: %w", err)
			}
			off += n
		}
		if err := writeAll(e.fd, buf); err != nil {
			if e.halt.Load() {
				return nil
			}
			return fmt.Errorf("echo: sending: %w", err)
		}
		e.n.Add(1)
		y.tick()
	}
}

func (e *Echo) udpLoop() error {
	buf := make([]byte, MaxMessage)
	var y yielder
	for !e.halt.Load() {
		n, err := unix.Read(e.fd, buf)
		switch {
		case err == unix.EINTR || isTimeout(err):
			continue
		case err == unix.ECONNREFUSED:
			continue // an ICMP error from the client's side: it may be done
		case err != nil:
			return fmt.Errorf("echo: receiving: %w", err)
		case n != e.size:
			continue // not a message of this test (a repeated preamble)
		}
		if _, err := unix.Write(e.fd, buf[:n]); err != nil && err != unix.ECONNREFUSED && err != unix.EINTR {
			return fmt.Errorf("echo: sending: %w", err)
		}
		e.n.Add(1)
		y.tick()
	}
	return nil
}

// writeAll writes b whole to a blocking descriptor.
func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}
