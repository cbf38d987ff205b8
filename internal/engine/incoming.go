package engine

import "golang.org/x/sys/unix"

// incomingCPU is the CPU whose NET_RX softirq last handed the socket's
// receive path a packet (SO_INCOMING_CPU, Linux 3.19): with RSS or RPS,
// the CPU that serves the flow's receive queue. nil for a sending stream
// (its socket sees only ACKs) and where the kernel does not say.
func incomingCPU(st *Stream) *int {
	if st.Send {
		return nil
	}
	cpu, err := unix.GetsockoptInt(st.FD, unix.SOL_SOCKET, unix.SO_INCOMING_CPU)
	if err != nil || cpu < 0 {
		return nil
	}
	return &cpu
}
