package engine

import (
	"time"

	"github.com/linerate/linerate/internal/result"
)

// Bounds of a test that the engine itself imposes.
const (
	// MaxStreams bounds the streams of a test (each way for Bidir): one
	// pinned OS thread each.
	MaxStreams = 128
	// MaxWindow is the largest socket buffer: SO_SNDBUF/SO_RCVBUF take
	// an int.
	MaxWindow = 1<<31 - 1
)

// Params is a test as both of its ends run it.
type Params struct {
	Streams   int              // parallel streams (each way for Bidir)
	Duration  time.Duration    // measured time
	Omit      time.Duration    // warm-up before it, not counted
	Interval  time.Duration    // report period
	Direction result.Direction // which way the payload flows, seen from the client

	Window     int             // SO_SNDBUF and SO_RCVBUF on both ends, bytes; 0 leaves autotuning on
	Congestion string          // TCP_CONGESTION on every data socket; "" keeps the default
	FQRate     uint64          // SO_MAX_PACING_RATE per stream, bits per second (needs the fq qdisc); 0 none
	ZeroCopy   result.ZeroCopy // how senders send
}

// Connections is how many data connections the test has.
func (p Params) Connections() int {
	if p.Direction == result.Bidir {
		return 2 * p.Streams
	}
	return p.Streams
}

// ClientSends reports whether the client writes on connection i (0-based):
// with Bidir, the first Streams connections carry client-to-agent data.
func (p Params) ClientSends(i int) bool {
	switch p.Direction {
	case result.Receive:
		return false
	case result.Bidir:
		return i < p.Streams
	}
	return true
}

// SockOpts returns the socket options of the test's data connection i,
// on the end that sends on it when send is true.
func (p Params) SockOpts(send bool) SockOpts {
	return SockOpts{Window: p.Window, Congestion: p.Congestion, Pacing: p.FQRate / 8,
		ZeroCopy: send && p.ZeroCopy == result.MsgZeroCopy}
}

// Schedule returns the interval boundaries of a test, relative to its
// start: warm-up intervals ending at omit, then measured ones ending at
// omit+dur; and how many of them are warm-up.
func Schedule(omit, dur, iv time.Duration) ([]time.Duration, int) {
	var b []time.Duration
	for t := iv; t < omit; t += iv {
		b = append(b, t)
	}
	if omit > 0 {
		b = append(b, omit)
	}
	n := len(b)
	for t := omit + iv; t < omit+dur; t += iv {
		b = append(b, t)
	}
	return append(b, omit+dur), n
}
