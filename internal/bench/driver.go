package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/telemetry"
	"github.com/linerate/linerate/internal/toolserver"
)

// Driver makes one run with one traffic generator: the native engine, or
// an external tool (whose drivers share one lifecycle, runTool). Each
// registers itself (register) with what it can do.
type Driver interface {
	// Name is the --engine value: native, iperf3, iperf2, perftest,
	// sockperf, netperf.
	Name() string
	// Check says, before a campaign starts, whether the driver can run
	// here: an *UnavailableError when its tool or device is missing.
	Check() error
	// Run makes one run. live, if not nil, sees each interval as it
	// ends (drivers whose tool reports only at the end call it then).
	Run(ctx context.Context, p Params, live func(result.Interval)) (*result.Result, error)
}

// UnavailableError says in one line why a driver cannot run here and
// what to install; the CLI exits 2 with it.
type UnavailableError struct {
	Tool   string
	Reason string
}

func (e *UnavailableError) Error() string { return e.Reason }

// missingTool is the error for a program that is not installed.
func missingTool(prog, pkg string) error {
	return &UnavailableError{Tool: prog, Reason: fmt.Sprintf("%s is not installed: apt-get install %s (Debian/Ubuntu)", prog, pkg)}
}

// Hosts starts an external tool's two ends: the client here (or in lab
// host a), the server on the peer.
type Hosts interface {
	// Addr is the server's address as the client dials it.
	Addr() string
	// StartClient starts cmd on the client's host.
	StartClient(cmd *exec.Cmd) error
	// StartServer starts a tool server on the server's host, for a run of
	// length (the tool's duration and warm-up; whoever starts it adds its
	// own grace), and returns it with its command line.
	StartServer(ctx context.Context, t toolserver.ToolServer, length time.Duration) (ServerProc, []string, error)
	// Facts describes the two ends for the run's start section.
	Facts() (client, server result.HostInfo)
	// Iface is the client's interface toward the peer, "" when unknown;
	// NICIRQs are its interrupts (none for virtual interfaces).
	Iface() string
	NICIRQs() []int
}

// ServerProc is a tool server started on the peer.
type ServerProc interface {
	// Stop ends the server (it may have ended by itself, as iperf3 -1
	// does) and returns the CPU seconds it used and what it printed.
	Stop() (cpuSeconds float64, output string, err error)
}

// retryConnect runs try until it succeeds, fails for another reason than
// the server not listening yet, or 5 s pass: a tool server started a
// moment ago may not have bound its port.
func retryConnect(ctx context.Context, try func() error, notYet func(error) bool) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := try()
		if err == nil || !notYet(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// errBusy reports whether err is the peer refusing because it runs
// another test.
func errBusy(err error) bool {
	var pe *agent.PeerError
	return errors.As(err, &pe) && pe.Busy
}

// Caps are what a driver can run beside TCP streams, and which of bench's
// options it takes: the CLI refuses the rest before anything runs.
type Caps struct {
	// Latency runs a ping-pong (--latency); LatencyUDP one over UDP
	// (--latency --udp); UDPStream a UDP stream (--udp -b); UDPReverse
	// one the server sends (--udp -R).
	Latency, LatencyUDP, UDPStream, UDPReverse bool
	// LatencyOnly is a driver that measures round trips only: it needs
	// --latency.
	LatencyOnly bool
	// NativeOptions takes the native engine's sending options
	// (--zerocopy, --congestion, --fq-rate); Perftest perftest's
	// (--perftest-*, --rdma-device).
	NativeOptions, Perftest bool
}

// DriverInfo is a driver as the registry lists it.
type DriverInfo struct {
	// Name is its --engine value.
	Name string
	// New makes the driver of a run between hosts h (nil: native, which
	// NewTarget builds for an agent or a lab itself).
	New  func(h Hosts, cfg TargetConfig) Driver
	Caps Caps
	// Rank is its place in the CLI's list (--help, completion): the
	// native engine first, then the tools most people reach for.
	Rank int
}

// drivers are the registered drivers, in the order the CLI lists them.
var drivers []DriverInfo

// register adds a driver; each driver's file calls it from init, as
// node_exporter's collectors register themselves.
func register(d DriverInfo) { drivers = append(drivers, d) }

// Drivers lists the registered drivers by Rank.
func Drivers() []DriverInfo {
	out := slices.Clone(drivers)
	slices.SortFunc(out, func(a, b DriverInfo) int { return cmp.Or(cmp.Compare(a.Rank, b.Rank), cmp.Compare(a.Name, b.Name)) })
	return out
}

// DriverNames are the --engine values.
func DriverNames() []string {
	var out []string
	for _, d := range Drivers() {
		out = append(out, d.Name)
	}
	return out
}

// LookupDriver returns the registered driver of that --engine value.
func LookupDriver(name string) (DriverInfo, bool) {
	for _, d := range drivers {
		if d.Name == name {
			return d, true
		}
	}
	return DriverInfo{}, false
}

// tool is an external tool as runTool drives it: its driver says which
// server to start and which client to run, and how to read what the
// client printed.
type tool interface {
	Driver
	// server is the tool server to start on the peer for p, and how long
	// it must stand (the tool's length; whoever starts it adds a grace).
	server(p Params) (toolserver.ToolServer, time.Duration)
	// client is the client's command line; an error refuses p before
	// anything starts.
	client(p Params) ([]string, error)
	// notYet reports whether err means the server did not listen yet.
	notYet(err error) bool
	// measure runs the client once, with this host's telemetry beside it
	// (an interval per sample when the tool reports only at the end).
	measure(ctx context.Context, p Params, argv []string, auth toolserver.ClientAuth, live func(result.Interval)) (measured, error)
	// finish completes the run with what only the driver knows (the
	// tool's name and version, the CPU time of both processes); srv is
	// the stopped server, serverCPU its CPU seconds.
	finish(r *result.Result, p Params, m measured, srv ServerProc, serverCPU float64)
}

// measured is what one client run gave.
type measured struct {
	run *result.Result
	raw string // the tool's output as it printed it
	// clientCPU is the client process's CPU seconds (getrusage).
	clientCPU float64
	// atEnd: the tool reports at its end only, so live sees the
	// intervals then.
	atEnd bool
}

// runTool makes one run of an external tool, the lifecycle every tool
// driver shares: check the tool and p; start the server on the peer; read
// both ends' NIC counters before any payload; run the client, again while
// the server does not listen yet; stop the server; attach the peer's
// telemetry, the NIC counters' growth and the tool's command lines; let
// the driver finish; say where both ends ran.
func runTool(ctx context.Context, t tool, h Hosts, p Params, live func(result.Interval)) (*result.Result, error) {
	if err := t.Check(); err != nil {
		return nil, err
	}
	if pc, ok := t.(paramChecker); ok {
		if err := pc.CheckParams(p); err != nil {
			return nil, err
		}
	}
	argv, err := t.client(p)
	if err != nil {
		return nil, err
	}
	ctx, cancel := withTimeout(ctx, p)
	defer cancel()
	ts, length := t.server(p)
	srv, srvArgv, err := h.StartServer(ctx, ts, length)
	if err != nil {
		return nil, err
	}
	nic := beginNIC(h)
	var m measured
	err = retryConnect(ctx, func() (err error) {
		m, err = t.measure(ctx, p, argv, authOf(srv), live)
		return err
	}, t.notYet)
	srvCPU, srvOut, stopErr := srv.Stop()
	if err != nil {
		return nil, withServerOutput(err, srvOut)
	}
	// A server that ends by the stop's own signal (sockperf, netserver
	// run until stopped) is no failure.
	if stopErr != nil && !strings.Contains(stopErr.Error(), "signal") {
		return nil, stopErr
	}
	r := m.run
	r.Raw = m.raw
	if r.Tool == nil {
		r.Tool = &result.Tool{Name: t.Name()}
	}
	r.Tool.Client, r.Tool.Server = argv, srvArgv
	attachServer(r, srv)
	r.End.NICCounters = nic.end(srv)
	t.finish(r, p, m, srv, srvCPU)
	finishStart(r, p, h)
	if live != nil && m.atEnd {
		for _, iv := range r.Intervals {
			live(iv)
		}
	}
	return r, nil
}

// sample starts this host's telemetry for one client run, unless p turns
// it off (a nil Ticker samples nothing).
func sample(fs *hostfs.FS, h Hosts, p Params) *telemetry.Ticker {
	if p.NoTelemetry {
		return nil
	}
	return telemetry.Start(fsOr(fs), h.NICIRQs(), p.Interval)
}

// sampledIntervals are the intervals of a tool that reports only at its
// end: one per telemetry sample, carrying both hosts' load and nothing
// else.
func sampledIntervals(r *result.Result, p Params, samples []telemetry.Sample, h Hosts) {
	iv := p.Interval.Seconds()
	for i := range samples {
		r.Intervals = append(r.Intervals, result.Interval{Start: float64(i) * iv, End: float64(i+1) * iv, LoadOnly: true, Streams: []result.StreamInterval{}})
	}
	attach(r, samples, sameHosts(h))
}
