package engine

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SockOpts are the per-socket settings of a test (Params.SockOpts).
type SockOpts struct {
	Window     int    // SO_SNDBUF and SO_RCVBUF; 0 leaves autotuning on
	Congestion string // TCP_CONGESTION; "" keeps the default
	Pacing     uint64 // SO_MAX_PACING_RATE in bytes per second; 0 none
	ZeroCopy   bool   // SO_ZEROCOPY, for MSG_ZEROCOPY sends
	NoDelay    bool   // TCP_NODELAY
}

// Apply sets the options on fd. The window must be set before connect on
// the client (so the window scale covers it); the agent sets it on
// accepted sockets, where Linux has already chosen a window scale from
// the largest buffer the sysctls allow.
func (o SockOpts) Apply(fd int) error {
	if o.Window > 0 {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, o.Window); err != nil {
			return fmt.Errorf("setting SO_SNDBUF to %d: %w", o.Window, err)
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, o.Window); err != nil {
			return fmt.Errorf("setting SO_RCVBUF to %d: %w", o.Window, err)
		}
	}
	if o.Congestion != "" {
		if err := congestionLoaded(availableCongestionPath, o.Congestion); err != nil {
			return err
		}
		if err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, o.Congestion); err != nil {
			return fmt.Errorf("congestion control %q: %w (is it in net.ipv4.tcp_allowed_congestion_control?)", o.Congestion, err)
		}
	}
	if o.Pacing > 0 {
		if err := unix.SetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, o.Pacing); err != nil {
			return fmt.Errorf("setting SO_MAX_PACING_RATE: %w", err)
		}
	}
	if o.ZeroCopy {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ZEROCOPY, 1); err != nil {
			return fmt.Errorf("enabling SO_ZEROCOPY: %w (MSG_ZEROCOPY needs Linux 4.14)", err)
		}
	}
	if o.NoDelay {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
			return fmt.Errorf("setting TCP_NODELAY: %w", err)
		}
	}
	return nil
}

// availableCongestionPath lists the congestion controls the kernel has
// registered (built in or loaded).
const availableCongestionPath = "/proc/sys/net/ipv4/tcp_available_congestion_control"

// CheckCongestion refuses a congestion control this host's kernel has not
// registered (congestionLoaded): the agent checks a request with it before
// it accepts the test.
func CheckCongestion(name string) error {
	return congestionLoaded(availableCongestionPath, name)
}

// congestionLoaded refuses a congestion control the kernel has not
// registered. With CAP_NET_ADMIN, TCP_CONGESTION of an unknown name makes
// the kernel load the module tcp_NAME: a peer that chooses the name (a
// client asking the agent for a test) would pick which module a root
// process loads into the kernel. Only what is already there is used.
func congestionLoaded(list, name string) error {
	b, err := os.ReadFile(list)
	if err != nil {
		return fmt.Errorf("congestion control %q: reading the kernel's list: %w", name, err)
	}
	have := strings.Fields(string(b))
	if slices.Contains(have, name) {
		return nil
	}
	return fmt.Errorf("congestion control %q is not loaded on this host (net.ipv4.tcp_available_congestion_control: %s): load it first with 'modprobe tcp_%s' (linerate does not make the kernel load modules)",
		name, strings.Join(have, " "), name)
}

// Control adapts Apply to net.Dialer.Control.
func (o SockOpts) Control(_, _ string, rc syscall.RawConn) error {
	var err error
	if cerr := rc.Control(func(fd uintptr) { err = o.Apply(int(fd)) }); cerr != nil {
		return cerr
	}
	return err
}

// bufSizes reads SO_SNDBUF and SO_RCVBUF.
func bufSizes(fd int) (snd, rcv int, err error) {
	if snd, err = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF); err != nil {
		return 0, 0, fmt.Errorf("reading SO_SNDBUF: %w", err)
	}
	if rcv, err = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF); err != nil {
		return 0, 0, fmt.Errorf("reading SO_RCVBUF: %w", err)
	}
	return snd, rcv, nil
}

// Detach takes a connection out of Go's poller: it duplicates the
// descriptor, closes the net.Conn (which also removes it from epoll) and
// makes the duplicate blocking. The stream's thread then sleeps in the
// kernel when the socket is full or empty, as iperf3's does, instead of
// parking and being woken through the poller.
func Detach(c net.Conn) (int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		c.Close()
		return -1, fmt.Errorf("%T has no file descriptor", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		c.Close()
		return -1, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(f uintptr) { fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		derr = err
	}
	c.Close()
	if derr != nil {
		return -1, fmt.Errorf("duplicating the socket: %w", derr)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("making the socket blocking: %w", err)
	}
	return fd, nil
}

// pinThread binds the calling OS thread to cpu (-1: leave it). The caller
// must have locked its goroutine to the thread.
func pinThread(cpu int) error {
	if cpu < 0 {
		return nil
	}
	set := unix.NewCPUSet(cpu + 1)
	set.Set(cpu)
	if err := unix.SchedSetaffinityDynamic(0, set); err != nil {
		return fmt.Errorf("pinning a stream thread to CPU %d: %w", cpu, err)
	}
	return nil
}

// nameThread names the calling OS thread (at most 15 bytes), so that top
// -H, htop and /proc/PID/task/TID/comm show which stream it carries.
func nameThread(name string) {
	p, err := unix.BytePtrFromString(name)
	if err != nil {
		return
	}
	_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(p)), 0, 0, 0) // cosmetic
}

// AllowedCPUs returns the CPUs this process may run on: the calling
// thread's affinity. Only stream threads are pinned, and they run nothing
// but their stream, so any other goroutine sees the process's mask.
func AllowedCPUs() ([]int, error) {
	for n := 1024; n <= 1<<20; n *= 4 {
		set := unix.NewCPUSet(n)
		err := unix.SchedGetaffinityDynamic(0, set)
		if errors.Is(err, unix.EINVAL) {
			continue // the kernel's mask is larger
		}
		if err != nil {
			return nil, fmt.Errorf("reading the CPU affinity: %w", err)
		}
		var cpus []int
		for c := range n {
			if set.IsSet(c) {
				cpus = append(cpus, c)
			}
		}
		return cpus, nil
	}
	return nil, errors.New("reading the CPU affinity: mask too large")
}

// CloseFD closes a descriptor the engine owns; -1 is no descriptor.
func CloseFD(fd int) {
	if fd >= 0 {
		_ = unix.Close(fd)
	}
}
