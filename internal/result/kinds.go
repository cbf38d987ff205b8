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
