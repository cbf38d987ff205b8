package agent

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/linerate/linerate/internal/cpulist"
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

// Test is a test as it is asked of the agent's client: the test both
// ends run (engine.Params), where each end's threads go, and, instead of
// TCP streams, a probe. bench's parameters embed it and the client's
// Config does; the engine's part crosses the wire as it is (testWire).
type Test struct {
	engine.Params
	// Pinning pins the stream threads of each end (-A); nil sides let
	// the engine choose.
	Pinning Pinning `json:"placement"`
	// Probe, when set, makes the test a ping-pong or a UDP stream
	// (probe.go) instead of TCP streams; Streams, Direction, Window and
	// the stream options do not apply.
	Probe *ProbeTest `json:"probe,omitempty"`
}

// Config is one test, as the client runs it.
type Config struct {
	// Peer is the agent: "host", "host:port", "[v6addr]:port".
	Peer string
	// Token authenticates both ends to each other (see package doc).
	Token []byte
	// Test is the test; a zero field takes its default (EngineParams).
	Test
	// Apart, where both ends share a kernel and neither is pinned, gives
	// the ends disjoint CPUs by one fixed rule (engine.Split of the
	// candidates) instead of the free CPUs of the moment: a fleet's tests
	// are compared with each other, and two ends on the one free CPU run
	// at half the speed of their neighbours.
	Apart bool

	// Progress, if set, is called with each event as it happens: Start,
	// then each Interval, then End. It runs on the test's control
	// goroutine: it must not block for long.
	Progress func(result.Event)
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Host is where telemetry and placement facts are read; nil is the
	// live host.
	Host *hostfs.FS
}

// EngineParams returns the test as the engine runs it, its defaults
// filled in: 1 stream, 10 s, 1 s intervals, send.
func (t *Test) EngineParams() engine.Params {
	p := t.Params
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

// testWire is a test as the request and relay messages carry it: the
// engine's parameters by their own JSON names, so that a parameter added
// to the engine travels without a line here, and the times as integer
// milliseconds, which validate checks before any becomes a Duration (a
// large one would overflow).
type testWire struct {
	engine.Params
	DurationMS int64 `json:"duration_ms"`
	OmitMS     int64 `json:"omit_ms"`
	IntervalMS int64 `json:"interval_ms"`
}

// wireTest writes p (with its defaults filled) for the wire.
func wireTest(p engine.Params) testWire {
	return testWire{Params: p, DurationMS: p.Duration.Milliseconds(), OmitMS: p.Omit.Milliseconds(), IntervalMS: p.Interval.Milliseconds()}
}

// params is the test as the engine runs it; validate it first.
func (w testWire) params() engine.Params {
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	p := w.Params
	p.Duration, p.Omit, p.Interval = ms(w.DurationMS), ms(w.OmitMS), ms(w.IntervalMS)
	return p
}

// newRequest writes p (with its defaults filled) as a request.
func newRequest(p engine.Params, serverCPUs []int) requestMsg {
	return requestMsg{Type: msgRequest, testWire: wireTest(p), ServerCPUs: serverCPUs}
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

// Pinning is where each end's stream threads run, round-robin over the
// CPUs given (-A CLIENT,SERVER); a nil side lets that end choose. (Where
// the threads did run is the run's start.placement.)
type Pinning struct {
	Client []int `json:"client,omitempty"`
	Server []int `json:"server,omitempty"`
}

// Auto reports whether nothing was asked for either end.
func (p Pinning) Auto() bool { return p.Client == nil && p.Server == nil }

// String writes the -A form: "6,7" or "0-3,4-7" when each side is one CPU
// or one range, "0,2/1,3" when a side lists several (a comma would be
// ambiguous), "6," (client only), or "auto".
func (p Pinning) String() string {
	if p.Auto() {
		return "auto"
	}
	c, s := cpulist.Format(p.Client), cpulist.Format(p.Server)
	if strings.Contains(c, ",") || strings.Contains(s, ",") {
		return c + "/" + s
	}
	return c + "," + s
}

// ParsePinning reads -A: "C,S" (iperf3's form: one CPU or range per end,
// "0,1" or "0-3,4-7"), "C/S" (CPU lists with commas: "0,2/1,3"), "C" or
// "C," (the client's only), ",S" or "/S" (the server's only); "auto" or ""
// asks for nothing. An empty side is nil: that end chooses.
func ParsePinning(s string) (Pinning, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "auto" {
		return Pinning{}, nil
	}
	var c, sv string
	switch {
	case strings.Contains(s, "/"):
		c, sv, _ = strings.Cut(s, "/")
	case strings.Count(s, ",") == 1:
		c, sv, _ = strings.Cut(s, ",")
	case strings.Count(s, ",") > 1:
		return Pinning{}, fmt.Errorf("-A %q: ambiguous: write CLIENT/SERVER when a side lists several CPUs, e.g. 0,2/1,3", s)
	default:
		c = s
	}
	var p Pinning
	var err error
	if p.Client, err = optionalCPUs(c); err != nil {
		return Pinning{}, fmt.Errorf("-A client CPUs: %w", err)
	}
	if p.Server, err = optionalCPUs(sv); err != nil {
		return Pinning{}, fmt.Errorf("-A server CPUs: %w", err)
	}
	return p, nil
}

func optionalCPUs(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	return cpulist.Parse(s)
}
