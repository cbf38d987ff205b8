package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/rdmastats"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/telemetry"
)

// protoVersion is the control protocol's version; both ends must agree.
// Version 2 added session keys (every frame after the handshake is
// MACed), data preambles bound to them, and tool-server credentials.
const protoVersion = 2

// The messages of the protocol, in one place: each type, who sends it,
// and the bounds its reader checks (the check and validate methods below
// the structs). To add a message: a constant and a line here, a struct
// with its bounds, a seed in FuzzMessages.
//
//	type           sender  when                     bounds checked by the reader
//	hello          client  first                    version
//	challenge      agent   after hello              nonce: 32 bytes
//	auth           client  after challenge          nonce: 32 bytes (first of all), MAC
//	welcome        agent   after auth               MAC over the nonces and the host facts
//	request        client  a native test            requestMsg.validate: every field (milliseconds, CPUs, caps), then engine.Params.Check
//	accept         agent   after request            acceptMsg.check: port, test ID, one CPU per connection, per-CPU load
//	ready          agent   data connections in      readyMsg.check: buffer sizes, sysctl names
//	start, stop    client  the test's clock         none (type only)
//	interval       agent   every interval           intervalMsg.check: index, one sample per connection, CPU count, RX CPUs, TCP accounts (checkTCP), no latency
//	end            agent   after stop               endMsg.check: one total per connection, errors, window, other load, unread sources, NIC counters (checkNIC), receive method
//	tool           client  a tool session           toolMsg.check: description size, milliseconds
//	tool_started   agent   after tool               toolStartedMsg.check: argv and credentials sizes
//	tool_end       agent   after stop               toolEndMsg.check: output size, NIC counters (checkNIC), RDMA counters (checkRDMA)
//	doctor         client  a doctor report          none (type only)
//	doctor_report  agent   after doctor             doctorReportMsg.check: the report is JSON
//	error, busy    either  instead of the answer    reason shown at most maxReason bytes
//	relay          client  a test from the agent    relayMsg.validate: a request's bounds; peer an IP address and port (relay.go)
//	relay_start    agent   the relayed test began   relayStartMsg.check: streams, connections, notes, host facts
//	relay_interval agent   every interval           relayIntervalMsg.check: index, one stream per connection, CPU count, finite
//	relay_end      agent   the relayed test ended   relayEndMsg.check: interval count, streams, errors, finite
//	bye            client  after welcome            none (type only): the client only wanted the handshake
//
// Every frame is bounded before it is read (frame.go): 4 KiB before
// authentication, 1 MiB after, 16 MiB for a doctor report the client
// asked for; a test of n connections reads its interval and end frames
// with a bound of intervalFrame(n). A crr test's connections carry the
// proof of crr.go.
const (
	msgHello        = "hello"
	msgChallenge    = "challenge"
	msgAuth         = "auth"
	msgWelcome      = "welcome"
	msgRequest      = "request"
	msgAccept       = "accept"
	msgBusy         = "busy"
	msgError        = "error"
	msgReady        = "ready"
	msgStart        = "start"
	msgInterval     = "interval"
	msgStop         = "stop"
	msgEnd          = "end"
	msgTool         = "tool"
	msgToolStarted  = "tool_started"
	msgToolEnd      = "tool_end"
	msgDoctor       = "doctor"
	msgDoctorReport = "doctor_report"
)

// messageTypes lists every type; any other is refused as it is read.
var messageTypes = map[string]bool{
	msgHello: true, msgChallenge: true, msgAuth: true, msgWelcome: true, msgRequest: true,
	msgAccept: true, msgBusy: true, msgError: true, msgReady: true, msgStart: true,
	msgInterval: true, msgStop: true, msgEnd: true, msgTool: true, msgToolStarted: true,
	msgToolEnd: true, msgDoctor: true, msgDoctorReport: true,
	msgRelay: true, msgRelayStart: true, msgRelayInterval: true, msgRelayEnd: true, msgBye: true,
}

// Bounds of the messages' contents.
const (
	maxReason     = 1 << 10   // of an error's reason, as shown
	maxCPUs       = 1 << 16   // CPU numbers (the kernel's NR_CPUS is at most 8192)
	maxCPUMap     = 8192      // CPUs in one sample
	maxErrorText  = 4 << 10   // of one stream error in an end message
	maxToolSpec   = 4 << 10   // of a tool server description
	maxToolArgs   = 64        // arguments of a tool server's command line
	maxToolArg    = 4 << 10   // bytes of one argument
	maxToolAuth   = 16 << 10  // of a tool server's credentials (a public key)
	maxToolOutput = 64 << 10  // of a tool server's output sent back (its tail)
	maxSeconds    = 2 * 86400 // of a measured window (the client allows tests of 24 h)
	maxProcName   = 64        // of a process name (comm is 15 bytes)
	maxNICName    = 128       // of an interface, driver, cause or counter name in NIC counters
	maxNICCauses  = 32        // causes in one end's NIC counters (nicstats has 11)
	maxNICSources = 64        // counters behind one cause (a driver's per-priority counters)
	maxRDMAPort   = 255       // an RDMA port number (the kernel's is a u8)
	maxRDMAFiles  = 512       // counters in one of an RDMA port's counters/ and hw_counters/ (mlx5 has under 100)
)

// PeerError is a refusal or failure the other end reported ("busy",
// "error" messages).
type PeerError struct {
	Busy   bool   // the agent is running another test
	Reason string // the peer's own words
}

func (e *PeerError) Error() string {
	if e.Busy {
		return "the agent is busy running another test (" + e.Reason + "); try again when it ends"
	}
	return "the peer refused: " + e.Reason
}

type helloMsg struct {
	Type    string `json:"type"`
	Version int    `json:"version"`
}

type challengeMsg struct {
	Type    string `json:"type"`
	Version int    `json:"version"`
	Nonce   []byte `json:"nonce"`
	// Node is the agent's node, when it holds a node key (nodekey.go).
	Node string `json:"node,omitempty"`
}

type authMsg struct {
	Type  string `json:"type"`
	Nonce []byte `json:"nonce"`
	MAC   []byte `json:"mac"`
	// Ticket, from a relaying agent: the MAC is under its key.
	Ticket *relayTicket `json:"ticket,omitempty"`
	// Mesh, for a mesh's control or a mesh peer's test (meshkeys.go).
	Mesh *meshAuth `json:"mesh,omitempty"`
}

type welcomeMsg struct {
	Type string          `json:"type"`
	MAC  []byte          `json:"mac"`
	Host json.RawMessage `json:"host"` // result.HostInfo, as the MAC covers it
}

type errorMsg struct {
	Type   string `json:"type"`
	Reason string `json:"reason"`
}

// bareMsg is a message with nothing but its type ("start", "stop",
// "doctor").
type bareMsg struct {
	Type string `json:"type"`
}

// requestMsg is a test as it crosses the wire: what the agent must know.
// The agent checks every field against its bounds (validate) before it
// becomes an engine.Params.
type requestMsg struct {
	Type string `json:"type"`
	testWire
	ServerCPUs []int `json:"server_cpus,omitempty"`
}

// validate checks r against the bounds; maxDuration is the agent's. Times
// are checked as the integers of milliseconds they are on the wire,
// before any becomes a time.Duration (which a large one would overflow).
func (r requestMsg) validate(maxDuration time.Duration) error {
	maxMS := maxDuration.Milliseconds()
	if r.Streams < 1 || r.Streams > engine.MaxFlows {
		return fmt.Errorf("streams %d: must be 1 to %d", r.Streams, engine.MaxFlows)
	}
	if r.Threads < 0 || r.Threads > engine.MaxThreads {
		return fmt.Errorf("threads %d: must be 0 (the agent chooses) to %d", r.Threads, engine.MaxThreads)
	}
	if r.Size < 0 || r.Size > engine.MaxSize || r.Depth < 0 || r.Depth > engine.MaxDepth {
		return fmt.Errorf("size %d, depth %d: must be up to %d bytes and %d requests", r.Size, r.Depth, engine.MaxSize, engine.MaxDepth)
	}
	if _, err := result.ParseMode(string(r.Mode)); err != nil {
		return err
	}
	if _, err := result.ParseSkipRxCopy(string(r.SkipRxCopy)); err != nil {
		return err
	}
	if r.DurationMS < minDuration.Milliseconds() {
		return fmt.Errorf("duration %d ms: must be at least %s", r.DurationMS, minDuration)
	}
	if r.DurationMS > maxMS {
		return fmt.Errorf("duration %s is over this agent's limit of %s (linerate serve --max-duration)", msText(r.DurationMS), maxDuration)
	}
	if r.OmitMS < 0 || r.OmitMS > maxMS {
		return fmt.Errorf("omit %d ms: must be 0 to %s", r.OmitMS, maxDuration)
	}
	if r.IntervalMS < MinInterval.Milliseconds() || r.IntervalMS > MaxInterval.Milliseconds() {
		return fmt.Errorf("interval %d ms: must be %s to %s", r.IntervalMS, MinInterval, MaxInterval)
	}
	if (r.OmitMS+r.DurationMS)/r.IntervalMS > maxIntervals {
		return fmt.Errorf("%s at %s intervals makes over %d reports: use a longer interval", msText(r.OmitMS+r.DurationMS), msText(r.IntervalMS), maxIntervals)
	}
	if r.Window < 0 || r.Window > engine.MaxWindow {
		return fmt.Errorf("window %d: must be 0 to %d bytes (2 GiB - 1)", r.Window, engine.MaxWindow)
	}
	if len(r.ServerCPUs) > engine.MaxFlows {
		return fmt.Errorf("%d server CPUs: at most one per connection (%d)", len(r.ServerCPUs), engine.MaxFlows)
	}
	for _, c := range r.ServerCPUs {
		if c < 0 || c >= maxCPUs {
			return fmt.Errorf("server CPU %d: out of range", c)
		}
	}
	if r.Direction != result.Send && r.Direction != result.Receive && r.Direction != result.Bidir {
		return fmt.Errorf("direction %q: must be send, receive or bidir", r.Direction)
	}
	if _, err := result.ParseZeroCopy(string(r.ZeroCopy)); err != nil {
		return err
	}
	if err := checkCongestion(r.Congestion); err != nil {
		return err
	}
	// Every integer is in range: the test's shape (streams on threads,
	// each mode's options) in the engine's own terms.
	return r.params().Check()
}

// msText writes milliseconds from the wire as a duration, or as
// milliseconds when a Duration would overflow.
func msText(ms int64) string {
	if ms > int64(math.MaxInt64/time.Millisecond) || ms < 0 {
		return fmt.Sprintf("%d ms", ms)
	}
	return (time.Duration(ms) * time.Millisecond).String()
}

type acceptMsg struct {
	Type      string `json:"type"`
	Port      int    `json:"port"`
	TestID    []byte `json:"test_id"`   // names the test in the data preambles (data.go)
	Placement []int  `json:"placement"` // the agent's CPU for each connection, in stream order; -1 unpinned
	// Load is the agent's per-CPU busy share (%) just before the test, as
	// it placed its threads by it; absent when it could not look.
	Load map[string]float64 `json:"load,omitempty"`
	// Why says how the look changed the agent's own placement
	// (engine.BusyWhy), "" when it did not or the client placed it.
	Why string `json:"why,omitempty"`
}

// check bounds an accept for a test of n connections.
func (m acceptMsg) check(n int) error {
	if m.Port < 1 || m.Port > 65535 {
		return fmt.Errorf("%w: accept names port %d", errBadMessage, m.Port)
	}
	if len(m.TestID) != testIDSize {
		return fmt.Errorf("%w: accept's test ID of %d bytes", errBadMessage, len(m.TestID))
	}
	if len(m.Placement) != n {
		return fmt.Errorf("%w: accept places %d connections of %d", errBadMessage, len(m.Placement), n)
	}
	for _, c := range m.Placement {
		if c < -1 || c >= maxCPUs {
			return fmt.Errorf("%w: accept places a connection on CPU %d", errBadMessage, c)
		}
	}
	if len(m.Why) > maxErrorText {
		return fmt.Errorf("%w: accept with a placement note of %d bytes", errBadMessage, len(m.Why))
	}
	return checkShares("accept's load", m.Load, 100)
}

// checkShares bounds a per-CPU map of percentages: at most maxCPUMap
// CPUs, each a CPU number, each share 0 to most.
func checkShares(what string, m map[string]float64, most float64) error {
	if len(m) > maxCPUMap {
		return fmt.Errorf("%w: %s of %d CPUs", errBadMessage, what, len(m))
	}
	for k, v := range m {
		if c, err := strconv.Atoi(k); err != nil || c < 0 || c >= maxCPUs || v < 0 || v > most {
			return fmt.Errorf("%w: %s: CPU %.10q at %g%%", errBadMessage, what, k, v)
		}
	}
	return nil
}

type readyMsg struct {
	Type   string          `json:"type"`
	Window result.SockBufs `json:"window"`
}

func (m readyMsg) check() error {
	w := m.Window
	if w.Sndbuf < 0 || w.Rcvbuf < 0 || len(w.CappedBy) > 2 {
		return fmt.Errorf("%w: ready's buffers %+v", errBadMessage, w)
	}
	for _, s := range w.CappedBy {
		if len(s) > 64 {
			return fmt.Errorf("%w: ready names a sysctl of %d bytes", errBadMessage, len(s))
		}
	}
	return nil
}

type intervalMsg struct {
	Type string `json:"type"`
	engine.Sample
}

// check bounds an interval of a test of n connections.
func (m intervalMsg) check(n int) error {
	if m.Index < 0 || m.Index > maxIntervals {
		return fmt.Errorf("%w: interval index %d", errBadMessage, m.Index)
	}
	if len(m.Streams) != n {
		return fmt.Errorf("%w: interval of %d streams, the test has %d", errBadMessage, len(m.Streams), n)
	}
	if len(m.CPU) > maxCPUMap {
		return fmt.Errorf("%w: interval of %d CPUs", errBadMessage, len(m.CPU))
	}
	for _, st := range m.Streams {
		if c := st.RxCPU; c != nil && (*c < 0 || *c >= maxCPUs) {
			return fmt.Errorf("%w: interval names RX CPU %d", errBadMessage, *c)
		}
		if err := checkTCP(st.TCP); err != nil {
			return err
		}
	}
	if tx := m.Transactions; tx != nil && (tx.RTT != nil || tx.Samples != 0) {
		return fmt.Errorf("%w: the agent's interval carries latency samples", errBadMessage)
	}
	return nil
}

// Bounds of a stream's TCP account over one interval: the chrono stats
// grow by at most the interval (the longest, and as much again for the
// kernel's jiffies and the two ends' clocks), the limited times are
// parts of the busy time, and no rate is above 10^15 bit/s.
const (
	maxIntervalUs = 2 * 60 * 1_000_000
	maxRateBps    = 1e15
)

// checkTCP bounds a sender's TCP account of one interval.
func checkTCP(t *result.TCPStats) error {
	if t == nil {
		return nil
	}
	if t.BusyUs > maxIntervalUs || t.RwndLimitedUs > t.BusyUs || t.SndbufLimitedUs > t.BusyUs-t.RwndLimitedUs {
		return fmt.Errorf("%w: interval with %d µs busy, %d rwnd- and %d sndbuf-limited", errBadMessage, t.BusyUs, t.RwndLimitedUs, t.SndbufLimitedUs)
	}
	if !(t.DeliveryRateBps >= 0 && t.DeliveryRateBps <= maxRateBps && t.PacingRateBps >= 0 && t.PacingRateBps <= maxRateBps) {
		return fmt.Errorf("%w: interval with a delivery rate of %g and a pacing rate of %g bit/s", errBadMessage, t.DeliveryRateBps, t.PacingRateBps)
	}
	return nil
}

// intervalFrame bounds an interval or end frame of a test of n
// connections: room for a large host's CPUs (maxFrame) and some 600
// bytes a connection more, a stream's sample with its TCP account and
// its total being about 450.
func intervalFrame(n int) int { return min(maxFrame+n*600, maxDoctorFrame) }

type endMsg struct {
	Type       string               `json:"type"`
	Streams    []engine.StreamTotal `json:"streams"`
	CPUSeconds float64              `json:"cpu_seconds"`
	Errors     []string             `json:"errors,omitempty"`
	// CPUSeconds split into user and system time (absent from agents
	// before they were sent).
	CPUUser   float64 `json:"cpu_user_seconds,omitempty"`
	CPUSystem float64 `json:"cpu_system_seconds,omitempty"`
	// MSG_ZEROCOPY counters of the agent's senders.
	ZCSends       uint64 `json:"zc_sends,omitempty"`
	ZCCompletions uint64 `json:"zc_completions,omitempty"`
	ZCCopied      uint64 `json:"zc_copied,omitempty"`
	// NICCounters is how the agent's NIC counters grew during the test,
	// on the interface holding its address (docs/architecture.md, "NIC
	// counters during a run").
	NICCounters *result.NICDelta `json:"nic_counters,omitempty"`
	// Seconds is the agent's measured window, by its own clock: its
	// receivers' counts (engine.StreamTotal.Measured) are over it.
	Seconds float64 `json:"seconds"`
	// Foreign is the other load on the agent's CPUs over the window;
	// ForeignNote says why it is absent.
	Foreign     *telemetry.Foreign `json:"foreign,omitempty"`
	ForeignNote string             `json:"foreign_note,omitempty"`
	// Unread are the agent's telemetry sources it could not read, and why.
	Unread map[string]string `json:"unread,omitempty"`
	// What the agent's receivers did of the copy (engine.Side.RxCopy):
	// the method used, why it is not the one asked, the bytes a zerocopy
	// receiver mapped and copied, the receiving threads' CPU seconds.
	RxMethod result.SkipRxCopy `json:"rx_method,omitempty"`
	// Shared says another client's test ran on the agent beside this
	// one: CPUSeconds is then this test's threads' CPU time, not the
	// process's, and the split into user and system time is absent.
	Shared      bool    `json:"shared,omitempty"`
	RxNote      string  `json:"rx_note,omitempty"`
	RxMapped    uint64  `json:"rx_mapped,omitempty"`
	RxCopied    uint64  `json:"rx_copied,omitempty"`
	RxThreadCPU float64 `json:"rx_thread_cpu_seconds,omitempty"`
}

// check bounds an end of a test of n connections.
func (m endMsg) check(n int) error {
	if len(m.Streams) != n {
		return fmt.Errorf("%w: end of %d streams, the test has %d", errBadMessage, len(m.Streams), n)
	}
	if len(m.Errors) > n {
		return fmt.Errorf("%w: end with %d errors for %d streams", errBadMessage, len(m.Errors), n)
	}
	if m.CPUSeconds < 0 || m.CPUUser < 0 || m.CPUSystem < 0 {
		return fmt.Errorf("%w: end with %g CPU seconds (%g user, %g system)", errBadMessage, m.CPUSeconds, m.CPUUser, m.CPUSystem)
	}
	for _, e := range m.Errors {
		if len(e) > maxErrorText {
			return fmt.Errorf("%w: end with an error of %d bytes", errBadMessage, len(e))
		}
	}
	if m.Seconds < 0 || m.Seconds > maxSeconds {
		return fmt.Errorf("%w: end with a window of %g s", errBadMessage, m.Seconds)
	}
	if len(m.ForeignNote) > maxErrorText || len(m.RxNote) > maxErrorText {
		return fmt.Errorf("%w: end with a note of %d bytes", errBadMessage, max(len(m.ForeignNote), len(m.RxNote)))
	}
	if _, err := result.ParseSkipRxCopy(string(m.RxMethod)); err != nil || m.RxThreadCPU < 0 || m.RxThreadCPU > maxSeconds*engine.MaxThreads {
		return fmt.Errorf("%w: end with receive method %.20q, %g s of receiving threads", errBadMessage, m.RxMethod, m.RxThreadCPU)
	}
	if len(m.Unread) > 3 {
		return fmt.Errorf("%w: end with %d unread sources", errBadMessage, len(m.Unread))
	}
	for src, why := range m.Unread {
		if src != telemetry.SrcStat && src != telemetry.SrcSoftirqs && src != telemetry.SrcInterrupts || len(why) > maxErrorText {
			return fmt.Errorf("%w: end with unread source %.20q", errBadMessage, src)
		}
	}
	if err := checkForeign(m.Foreign); err != nil {
		return err
	}
	return checkNIC(m.NICCounters)
}

// checkForeign bounds the agent's other-load report.
func checkForeign(f *telemetry.Foreign) error {
	if f == nil {
		return nil
	}
	if f.PID < 0 || f.Seconds < 0 || f.Seconds > maxSeconds || len(f.Top) > telemetry.MaxTop {
		return fmt.Errorf("%w: end's other load: pid %d, %g s, %d processes", errBadMessage, f.PID, f.Seconds, len(f.Top))
	}
	if err := checkShares("end's own load", f.Own, 100); err != nil {
		return err
	}
	if err := checkShares("end's other load", f.CPU, 100); err != nil {
		return err
	}
	if err := checkShares("end's run delay", f.Wait, 100); err != nil {
		return err
	}
	for _, p := range f.Top {
		if p.PID < 0 || len(p.Name) > maxProcName || p.CPUPct < 0 || p.CPUPct > 100*maxCPUMap || p.CPU < -1 || p.CPU >= maxCPUs {
			return fmt.Errorf("%w: end's other load names process %d (%.20q) at %g%% on CPU %d", errBadMessage, p.PID, p.Name, p.CPUPct, p.CPU)
		}
	}
	return nil
}

// checkNIC bounds an end's NIC counters: names, how many causes and
// counters, the reason they were not read.
func checkNIC(d *result.NICDelta) error {
	if d == nil {
		return nil
	}
	if len(d.Interface) > maxNICName || len(d.Driver) > maxNICName {
		return fmt.Errorf("%w: NIC counters of an interface or driver named in %d and %d bytes", errBadMessage, len(d.Interface), len(d.Driver))
	}
	if len(d.NotRead) > maxErrorText {
		return fmt.Errorf("%w: NIC counters not read, for a reason of %d bytes", errBadMessage, len(d.NotRead))
	}
	if len(d.Deltas) > maxNICCauses || len(d.Sources) > maxNICCauses {
		return fmt.Errorf("%w: NIC counters of %d causes", errBadMessage, max(len(d.Deltas), len(d.Sources)))
	}
	for c := range d.Deltas {
		if len(c) > maxNICName {
			return fmt.Errorf("%w: a NIC counter cause of %d bytes", errBadMessage, len(c))
		}
	}
	for c, src := range d.Sources {
		if len(c) > maxNICName || len(src) > maxNICSources {
			return fmt.Errorf("%w: NIC counter cause of %d bytes with %d counters", errBadMessage, len(c), len(src))
		}
		for n := range src {
			if len(n) > maxNICName {
				return fmt.Errorf("%w: a NIC counter named in %d bytes", errBadMessage, len(n))
			}
		}
	}
	return nil
}

// foreignOrNote is the end message's other load, or the note of why there
// is none.
func foreignOrNote(f *telemetry.Foreign, err error) (*telemetry.Foreign, string) {
	if err != nil {
		return nil, err.Error()
	}
	return f, ""
}

type toolMsg struct {
	Type       string          `json:"type"`
	Server     json.RawMessage `json:"server"`
	DurationMS int64           `json:"duration_ms"`
	IntervalMS int64           `json:"interval_ms"`
}

// check bounds a tool request; maxDur is the agent's.
func (m toolMsg) check(maxDur time.Duration) error {
	if len(m.Server) == 0 || len(m.Server) > maxToolSpec {
		return fmt.Errorf("tool server description of %d bytes (1 to %d)", len(m.Server), maxToolSpec)
	}
	if m.DurationMS < minDuration.Milliseconds() || m.DurationMS > maxDur.Milliseconds() {
		return fmt.Errorf("duration %d ms: this agent allows %s to %s (its --max-duration)", m.DurationMS, minDuration, maxDur)
	}
	if m.IntervalMS < MinInterval.Milliseconds() || m.IntervalMS > MaxInterval.Milliseconds() {
		return fmt.Errorf("interval %d ms: %s to %s", m.IntervalMS, MinInterval, MaxInterval)
	}
	return nil
}

type toolStartedMsg struct {
	Type string   `json:"type"`
	Argv []string `json:"argv"`
	// Auth is what the client needs to use the server, besides what both
	// ends derive from the session (ToolStart.Auth); opaque to the agent.
	Auth json.RawMessage `json:"auth,omitempty"`
}

func (m toolStartedMsg) check() error {
	if len(m.Argv) == 0 || len(m.Argv) > maxToolArgs || len(m.Auth) > maxToolAuth {
		return fmt.Errorf("%w: tool_started with %d arguments, %d bytes of credentials", errBadMessage, len(m.Argv), len(m.Auth))
	}
	for _, a := range m.Argv {
		if len(a) > maxToolArg {
			return fmt.Errorf("%w: tool_started with an argument of %d bytes", errBadMessage, len(a))
		}
	}
	return nil
}

type toolEndMsg struct {
	Type       string  `json:"type"`
	CPUSeconds float64 `json:"cpu_seconds"`
	Output     string  `json:"output"`
	Error      string  `json:"error,omitempty"`
	// NICCounters is how the agent's NIC counters grew while its tool
	// server ran.
	NICCounters *result.NICDelta `json:"nic_counters,omitempty"`
	// RDMA is how the RDMA counters of the port the tool server used
	// grew while it ran: only for a server on an RDMA device (perftest).
	RDMA *result.RDMAEnd `json:"rdma,omitempty"`
}

func (m toolEndMsg) check() error {
	if len(m.Output) > maxToolOutput || len(m.Error) > maxErrorText || m.CPUSeconds < 0 {
		return fmt.Errorf("%w: tool_end with %d bytes of output, %d of error, %g CPU seconds", errBadMessage, len(m.Output), len(m.Error), m.CPUSeconds)
	}
	if err := checkNIC(m.NICCounters); err != nil {
		return err
	}
	return checkRDMA(m.RDMA)
}

// checkRDMA bounds one end's RDMA counters as a peer sent them: the
// names, the number of counters, the priorities (0 to 7, each with at
// most the driver's rx/tx pause, discards and pause duration).
func checkRDMA(d *result.RDMAEnd) error {
	if d == nil {
		return nil
	}
	if len(d.Device) > maxNICName || len(d.Netdev) > maxNICName || d.Port < 0 || d.Port > maxRDMAPort {
		return fmt.Errorf("%w: RDMA counters of a device named in %d bytes, a netdev in %d, port %d", errBadMessage, len(d.Device), len(d.Netdev), d.Port)
	}
	if len(d.NotRead) > maxErrorText {
		return fmt.Errorf("%w: RDMA counters not read, for a reason of %d bytes", errBadMessage, len(d.NotRead))
	}
	for _, m := range []map[string]uint64{d.HWCounters, d.Counters} {
		if len(m) > maxRDMAFiles {
			return fmt.Errorf("%w: %d RDMA counters in one directory, over %d", errBadMessage, len(m), maxRDMAFiles)
		}
		for n := range m {
			if len(n) > maxNICName {
				return fmt.Errorf("%w: an RDMA counter named in %d bytes", errBadMessage, len(n))
			}
		}
	}
	if len(d.Priority) > 8 {
		return fmt.Errorf("%w: RDMA counters of %d priorities (there are 8)", errBadMessage, len(d.Priority))
	}
	for p, m := range d.Priority {
		if len(p) != 1 || p[0] < '0' || p[0] > '7' || len(m) > rdmastats.PriorityNames {
			return fmt.Errorf("%w: priority %.16q with %d counters (priorities are 0 to 7, each with at most %d)", errBadMessage, p, len(m), rdmastats.PriorityNames)
		}
		for n := range m {
			if len(n) > maxNICName {
				return fmt.Errorf("%w: a priority counter named in %d bytes", errBadMessage, len(n))
			}
		}
	}
	return nil
}

// toolSample is one interval of the agent's host while its tool runs.
type toolSample struct {
	Type  string                         `json:"type"`
	Index int                            `json:"index"`
	CPU   map[string]telemetry.CPUSample `json:"cpu"`
	Total telemetry.CPUSample            `json:"total"`
	// UDP is a UDP probe's receiver counts so far (the agent's), absent
	// in any other test and from an agent that predates it.
	UDP *udpCounts `json:"udp,omitempty"`
}

// udpCounts is a UDP receiver's running counts, of the warm-up and of
// the measured window.
type udpCounts struct {
	Warm     engine.UDPStats `json:"warm"`
	Measured engine.UDPStats `json:"measured"`
}

func (m toolSample) check() error {
	if m.Index < 0 || len(m.CPU) > maxCPUMap {
		return fmt.Errorf("%w: tool interval %d of %d CPUs", errBadMessage, m.Index, len(m.CPU))
	}
	if u := m.UDP; u != nil {
		for _, j := range []float64{u.Warm.JitterMS, u.Measured.JitterMS} {
			if math.IsNaN(j) || math.IsInf(j, 0) || j < 0 {
				return fmt.Errorf("%w: tool interval %d with a UDP jitter of %g ms", errBadMessage, m.Index, j)
			}
		}
	}
	return nil
}

type doctorReportMsg struct {
	Type   string          `json:"type"`
	Report json.RawMessage `json:"report"`
	Host   result.HostInfo `json:"host"`
}

func (m doctorReportMsg) check() error {
	if !json.Valid(m.Report) {
		return fmt.Errorf("%w: the agent's doctor report is not JSON", errBadMessage)
	}
	return nil
}

// messageType returns the "type" of a frame body, which must be one of
// the protocol's.
func messageType(body []byte) (string, error) {
	var env struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return "", fmt.Errorf("%w: not a JSON object: %v", errBadMessage, err)
	}
	if env.Type == "" {
		return "", fmt.Errorf("%w: no \"type\"", errBadMessage)
	}
	if !messageTypes[env.Type] {
		return "", fmt.Errorf("%w: unknown type %.40q", errBadMessage, env.Type)
	}
	return env.Type, nil
}

// errBadMessage is a frame that is not a message of the protocol.
var errBadMessage = errors.New("malformed message")

// decodeAs decodes body (of type typ) into v if typ is want. "error" and
// "busy" become a *PeerError; other types are protocol errors.
func decodeAs(typ string, body []byte, want string, v any) error {
	if typ == want {
		if err := json.Unmarshal(body, v); err != nil {
			return fmt.Errorf("%w: %s: %v", errBadMessage, typ, err)
		}
		return nil
	}
	if typ == msgError || typ == msgBusy {
		var m errorMsg
		_ = json.Unmarshal(body, &m) // a reason we cannot read is still a refusal
		r := m.Reason
		if len(r) > maxReason {
			r = r[:maxReason] + "…"
		}
		return &PeerError{Busy: typ == msgBusy, Reason: r}
	}
	return fmt.Errorf("%w: got %q, want %q", errBadMessage, typ, want)
}

// decode decodes body (of type typ) as a message of type want and checks
// its bounds: what every reader of the peer's messages goes through.
func decode[T any](typ string, body []byte, want string, check func(*T) error) (*T, error) {
	m := new(T)
	if err := decodeAs(typ, body, want, m); err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(m); err != nil {
			return nil, err
		}
	}
	return m, nil
}
