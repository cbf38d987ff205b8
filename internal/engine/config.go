package engine

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/linerate/linerate/internal/hostfs"
)

// DefaultPort is the agent's TCP port.
const DefaultPort = 5301

// Bounds on a test, checked by both ends.
const (
	MaxStreams         = 128
	MaxWindow          = 1<<31 - 1 // SO_SNDBUF/SO_RCVBUF take an int
	MinInterval        = 100 * time.Millisecond
	MaxInterval        = 60 * time.Second
	DefaultMaxDuration = time.Hour
	minDuration        = 100 * time.Millisecond
	maxIntervals       = 36000 // one hour at 100 ms: a bound on the report's size
	maxCongestionName  = 15    // TCP_CA_NAME_MAX - 1
)

// Direction says which way the payload flows, seen from the client.
type Direction string

// Directions.
const (
	Send    Direction = "send"    // client to agent (iperf3's default)
	Receive Direction = "receive" // agent to client (iperf3 -R)
	Bidir   Direction = "bidir"   // both at once, Streams each way (iperf3 --bidir)
)

// Config is one test, as the client runs it.
type Config struct {
	// Peer is the agent: "host", "host:port", "[v6addr]:port".
	Peer string
	// Token authenticates both ends to each other (see package doc).
	Token []byte

	Streams   int           // parallel streams (each way for Bidir); 0 means 1
	Duration  time.Duration // measured time; 0 means 10 s
	Omit      time.Duration // warm-up before it, not counted
	Interval  time.Duration // report period; 0 means 1 s
	Direction Direction     // "" means Send

	Window     int      // SO_SNDBUF and SO_RCVBUF on both ends, bytes; 0 leaves autotuning on
	Congestion string   // TCP_CONGESTION on every data socket; "" keeps the default
	FQRate     uint64   // SO_MAX_PACING_RATE per stream, bits per second (needs the fq qdisc); 0 none
	ZeroCopy   ZeroCopy // how senders send

	// ClientCPUs and ServerCPUs pin the stream threads of each end,
	// round-robin (-A CLIENT,SERVER). Nil lets the engine choose.
	ClientCPUs, ServerCPUs []int

	// Progress, if set, is called with each event as it happens: Start,
	// then each Interval, then End. It runs on the test's control
	// goroutine: it must not block for long.
	Progress func(Event)
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Host is where telemetry and placement facts are read; nil is the
	// live host.
	Host *hostfs.FS
}

// params is a test as it crosses the wire: what the agent must know.
type params struct {
	Streams    int       `json:"streams"`
	DurationMS int64     `json:"duration_ms"`
	OmitMS     int64     `json:"omit_ms"`
	IntervalMS int64     `json:"interval_ms"`
	Direction  Direction `json:"direction"`
	Window     int       `json:"window"`
	Congestion string    `json:"congestion,omitempty"`
	FQRate     uint64    `json:"fq_rate,omitempty"`
	ZeroCopy   ZeroCopy  `json:"zerocopy,omitempty"`
	ServerCPUs []int     `json:"server_cpus,omitempty"`
}

func (p params) duration() time.Duration { return time.Duration(p.DurationMS) * time.Millisecond }
func (p params) omit() time.Duration     { return time.Duration(p.OmitMS) * time.Millisecond }
func (p params) interval() time.Duration { return time.Duration(p.IntervalMS) * time.Millisecond }

// connections is how many data connections the test has.
func (p params) connections() int {
	if p.Direction == Bidir {
		return 2 * p.Streams
	}
	return p.Streams
}

// clientSends reports whether the client writes on connection i (0-based):
// with Bidir, the first Streams connections carry client-to-agent data.
func (p params) clientSends(i int) bool {
	switch p.Direction {
	case Receive:
		return false
	case Bidir:
		return i < p.Streams
	}
	return true
}

// validate checks p against the bounds; maxDuration is the agent's.
func (p params) validate(maxDuration time.Duration) error {
	switch {
	case p.Streams < 1 || p.Streams > MaxStreams:
		return fmt.Errorf("streams %d: must be 1 to %d", p.Streams, MaxStreams)
	case p.duration() < minDuration:
		return fmt.Errorf("duration %s: must be at least %s", p.duration(), minDuration)
	case p.duration() > maxDuration:
		return fmt.Errorf("duration %s is over this agent's limit of %s (linerate serve --max-duration)", p.duration(), maxDuration)
	case p.OmitMS < 0 || p.omit() > maxDuration:
		return fmt.Errorf("omit %s: must be 0 to %s", p.omit(), maxDuration)
	case p.interval() < MinInterval || p.interval() > MaxInterval:
		return fmt.Errorf("interval %s: must be %s to %s", p.interval(), MinInterval, MaxInterval)
	case (p.omit()+p.duration())/p.interval() > maxIntervals:
		return fmt.Errorf("%s at %s intervals makes over %d reports: use a longer interval", p.omit()+p.duration(), p.interval(), maxIntervals)
	case p.Window < 0 || p.Window > MaxWindow:
		return fmt.Errorf("window %d: must be 0 to %d bytes (2 GiB - 1)", p.Window, MaxWindow)
	case len(p.ServerCPUs) > 4096:
		return fmt.Errorf("%d server CPUs: too many", len(p.ServerCPUs))
	}
	if p.Direction != Send && p.Direction != Receive && p.Direction != Bidir {
		return fmt.Errorf("direction %q: must be send, receive or bidir", p.Direction)
	}
	if _, err := ParseZeroCopy(string(p.ZeroCopy)); err != nil {
		return err
	}
	return checkCongestion(p.Congestion)
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

// params fills defaults and returns the test as the agent sees it.
func (c *Config) params() params {
	p := params{
		Streams: c.Streams, DurationMS: c.Duration.Milliseconds(), OmitMS: c.Omit.Milliseconds(),
		IntervalMS: c.Interval.Milliseconds(), Direction: c.Direction, Window: c.Window,
		Congestion: c.Congestion, FQRate: c.FQRate, ZeroCopy: c.ZeroCopy,
	}
	if p.Streams == 0 {
		p.Streams = 1
	}
	if c.Duration == 0 {
		p.DurationMS = 10_000
	}
	if c.Interval == 0 {
		p.IntervalMS = 1000
	}
	if p.Direction == "" {
		p.Direction = Send
	}
	return p
}

// schedule returns the interval boundaries of a test, relative to its
// start: warm-up intervals ending at omit, then measured ones ending at
// omit+duration; and how many of them are warm-up.
func schedule(omit, dur, iv time.Duration) ([]time.Duration, int) {
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
