package result

import "fmt"

// Direction says which way the payload flows, seen from the client.
type Direction string

// Directions.
const (
	Send    Direction = "send"    // client to agent (iperf3's default)
	Receive Direction = "receive" // agent to client (iperf3 -R)
	Bidir   Direction = "bidir"   // both at once, Streams each way (iperf3 --bidir)
)

// ZeroCopy names a way to send without copying from user memory.
type ZeroCopy string

// Zero-copy methods.
const (
	// NoZeroCopy writes from a buffer (the kernel copies it).
	NoZeroCopy ZeroCopy = ""
	// Sendfile sends a memfd's pages with sendfile(2), as iperf3 -Z does.
	// It is the default for --zerocopy: faster than MSG_ZEROCOPY in every
	// measurement in docs/benchmarks.md, and never copied by the kernel.
	Sendfile ZeroCopy = "sendfile"
	// MsgZeroCopy sends with sendmsg(MSG_ZEROCOPY) and reaps completions
	// from the socket's error queue. The kernel copies anyway when the
	// packets are delivered locally (loopback, veth) or the device cannot
	// gather; the result says how often (end.zerocopy.copied).
	MsgZeroCopy ZeroCopy = "msg_zerocopy"
)

// ParseZeroCopy accepts "", "none", "sendfile" and "msg_zerocopy" (or "msg").
func ParseZeroCopy(s string) (ZeroCopy, error) {
	switch s {
	case "", "none":
		return NoZeroCopy, nil
	case "sendfile":
		return Sendfile, nil
	case "msg", "msg_zerocopy":
		return MsgZeroCopy, nil
	}
	return "", fmt.Errorf("unknown zero-copy method %q (sendfile or msg_zerocopy)", s)
}

// Round3 rounds seconds to milliseconds, as the document's times are.
func Round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

// Mode is what a native test's flows carry.
type Mode string

// Test modes.
const (
	// Stream moves bulk data, as iperf3 does (the default).
	Stream Mode = ""
	// RR makes request/response transactions as fast as they go over
	// long-lived connections, as neper's tcp_rr does.
	RR Mode = "rr"
	// CRR makes each transaction on a new connection (connect, request,
	// response, close), as neper's tcp_crr does: a connection rate.
	CRR Mode = "crr"
)

// ParseMode accepts "", "stream", "rr" and "crr".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", "stream":
		return Stream, nil
	case "rr":
		return RR, nil
	case "crr":
		return CRR, nil
	}
	return "", fmt.Errorf("unknown test mode %q (stream, rr or crr)", s)
}

// SkipRxCopy names a way for receivers to take data without copying it
// into user memory.
type SkipRxCopy string

// Receive methods.
const (
	// RxCopy reads into a buffer (the kernel copies every byte).
	RxCopy SkipRxCopy = ""
	// MsgTrunc receives with recv(MSG_TRUNC): the kernel discards the
	// bytes without copying them, as iperf3 --skip-rx-copy does. The
	// wire and the stack are measured without the copy; the data is
	// never seen.
	MsgTrunc SkipRxCopy = "msg_trunc"
	// ZerocopyReceive maps the received pages into user memory
	// (TCP_ZEROCOPY_RECEIVE with mmap, Linux 4.18), as neper
	// --rx_zerocopy does; what the kernel cannot map (payload not in
	// whole pages) it copies, and the run says how much.
	ZerocopyReceive SkipRxCopy = "zerocopy_receive"
)

// ParseSkipRxCopy accepts "", "none", "msg_trunc" (or "trunc") and
// "zerocopy_receive" (or "zerocopy", "mmap").
func ParseSkipRxCopy(s string) (SkipRxCopy, error) {
	switch s {
	case "", "none":
		return RxCopy, nil
	case "trunc", "msg_trunc":
		return MsgTrunc, nil
	case "zerocopy", "mmap", "zerocopy_receive":
		return ZerocopyReceive, nil
	}
	return "", fmt.Errorf("unknown receive method %q (msg_trunc or zerocopy_receive)", s)
}
