package agent

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/result"
)

// DefaultPort is the agent's TCP port.
const DefaultPort = 5301

// Bounds on a test, checked by both ends.
const (
	MinInterval        = 100 * time.Millisecond
	MaxInterval        = 60 * time.Second
	DefaultMaxDuration = time.Hour
	minDuration        = 100 * time.Millisecond
	maxIntervals       = 36000 // one hour at 100 ms: a bound on the report's size
	maxCongestionName  = 15    // TCP_CA_NAME_MAX - 1
)

// Config is one test, as the client runs it.
type Config struct {
	// Peer is the agent: "host", "host:port", "[v6addr]:port".
	Peer string
	// Token authenticates both ends to each other (see package doc).
	Token []byte

	Streams   int              // parallel streams (each way for Bidir); 0 means 1
	Duration  time.Duration    // measured time; 0 means 10 s
	Omit      time.Duration    // warm-up before it, not counted
	Interval  time.Duration    // report period; 0 means 1 s
	Direction result.Direction // "" means Send

	Window     int             // SO_SNDBUF and SO_RCVBUF on both ends, bytes; 0 leaves autotuning on
	Congestion string          // TCP_CONGESTION on every data socket; "" keeps the default
	FQRate     uint64          // SO_MAX_PACING_RATE per stream, bits per second (needs the fq qdisc); 0 none
	ZeroCopy   result.ZeroCopy // how senders send

	// Mode, Size, Depth, Threads, SkipRxCopy and NoTCPInfo are
	// engine.Params's: transactions instead of streams, the flows'
	// threads, how receivers take their data.
	Mode       result.Mode
	Size       int
	Depth      int
	Threads    int
	SkipRxCopy result.SkipRxCopy
	NoTCPInfo  bool

	// ClientCPUs and ServerCPUs pin the stream threads of each end,
	// round-robin (-A CLIENT,SERVER). Nil lets the engine choose.
	ClientCPUs, ServerCPUs []int

	// Progress, if set, is called with each event as it happens: Start,
	// then each Interval, then End. It runs on the test's control
	// goroutine: it must not block for long.
	Progress func(result.Event)
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Host is where telemetry and placement facts are read; nil is the
	// live host.
	Host *hostfs.FS
	// Probe, when set, makes the test a ping-pong or a UDP stream
	// (probe.go) instead of TCP streams; Streams, Direction, Window and
	// the stream options do not apply.
	Probe *ProbeTest
}

// Params returns the test with its defaults filled in.
func (c *Config) Params() engine.Params {
	p := engine.Params{Streams: c.Streams, Duration: c.Duration, Omit: c.Omit, Interval: c.Interval,
		Direction: c.Direction, Window: c.Window, Congestion: c.Congestion, FQRate: c.FQRate, ZeroCopy: c.ZeroCopy,
		Mode: c.Mode, Size: c.Size, Depth: c.Depth, Threads: c.Threads, SkipRxCopy: c.SkipRxCopy, NoTCPInfo: c.NoTCPInfo}
	if p.Streams == 0 {
		p.Streams = 1
	}
	if p.Duration == 0 {
		p.Duration = 10 * time.Second
	}
	if p.Interval == 0 {
		p.Interval = time.Second
	}
	if p.Direction == "" {
		p.Direction = result.Send
	}
	if p.Mode != result.Stream && p.Size == 0 {
		p.Size = 1 // neper's default request and response
	}
	return p
}

// newRequest writes p (with its defaults filled) as a request.
func newRequest(p engine.Params, serverCPUs []int) requestMsg {
	return requestMsg{Type: msgRequest, Streams: p.Streams, DurationMS: p.Duration.Milliseconds(),
		OmitMS: p.Omit.Milliseconds(), IntervalMS: p.Interval.Milliseconds(), Direction: p.Direction,
		Window: p.Window, Congestion: p.Congestion, FQRate: p.FQRate, ZeroCopy: p.ZeroCopy, ServerCPUs: serverCPUs,
		Mode: p.Mode, Size: p.Size, Depth: p.Depth, Threads: p.Threads, SkipRxCopy: p.SkipRxCopy, NoTCPInfo: p.NoTCPInfo}
}

// params is the request as the engine runs it; validate it first.
func (r requestMsg) params() engine.Params {
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	return engine.Params{Streams: r.Streams, Duration: ms(r.DurationMS), Omit: ms(r.OmitMS), Interval: ms(r.IntervalMS),
		Direction: r.Direction, Window: r.Window, Congestion: r.Congestion, FQRate: r.FQRate, ZeroCopy: r.ZeroCopy,
		Mode: r.Mode, Size: r.Size, Depth: r.Depth, Threads: r.Threads, SkipRxCopy: r.SkipRxCopy, NoTCPInfo: r.NoTCPInfo}
}

// checkCongestion accepts what the kernel could name a congestion
// control: lower-case letters, digits and '_', at most 15 bytes.
func checkCongestion(s string) error {
	if len(s) > maxCongestionName {
		return fmt.Errorf("congestion control %q: longer than %d bytes", s, maxCongestionName)
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return fmt.Errorf("congestion control %q: not a kernel module name", s)
		}
	}
	return nil
}
