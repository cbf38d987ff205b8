package engine

import (
	"net"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/result"
)

// BlockSize is the bytes one write of a sending stream asks for (iperf3's
// blksize).
const BlockSize = sendSize

// cpuSplit is the user and the system CPU time of this process, in
// seconds.
func cpuSplit() (user, system float64) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return float64(ru.Utime.Nano()) / 1e9, float64(ru.Stime.Nano()) / 1e9
}

// MeasuredCPUSplit is MeasuredCPU split into user and system time.
func (s *Side) MeasuredCPUSplit() (user, system float64) {
	u, y := cpuSplit()
	return result.Round3(u - s.userAtOmit), result.Round3(y - s.sysAt)
}

// SockInfo is what iperf3 reports of a connected TCP socket: both
// addresses ("host:port"), its MSS and its congestion control ("" and 0
// for what the kernel would not say).
type SockInfo struct {
	Local, Remote string
	MSS           int
	Congestion    string
}

// ReadSockInfo reads fd's SockInfo.
func ReadSockInfo(fd int) SockInfo {
	var si SockInfo
	if sa, err := unix.Getsockname(fd); err == nil {
		si.Local = sockaddrString(sa)
	}
	if sa, err := unix.Getpeername(fd); err == nil {
		si.Remote = sockaddrString(sa)
	}
	if mss, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_MAXSEG); err == nil {
		si.MSS = mss
	}
	if cc, err := unix.GetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION); err == nil {
		si.Congestion = cc
	}
	return si
}

func sockaddrString(sa unix.Sockaddr) string {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return net.JoinHostPort(net.IP(a.Addr[:]).String(), strconv.Itoa(a.Port))
	case *unix.SockaddrInet6:
		return net.JoinHostPort(net.IP(a.Addr[:]).String(), strconv.Itoa(a.Port))
	}
	return ""
}
