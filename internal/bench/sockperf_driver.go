package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/toolserver"
)

// sockperfPort is the port the driver's sockperf servers listen on:
// sockperf's default.
const sockperfPort = 11111

// Sockperf drives `sockperf ping-pong` for bench --latency --engine
// sockperf: a server on the peer (started by the agent or in the lab
// host, pinned as asked), the client here with --full-rtt so that its
// figures are round trips like the native engine's. sockperf has its
// own warm-up and cool-down (400 ms each), outside its measured window.
type Sockperf struct {
	Hosts Hosts
	// FS is where telemetry is read; nil is the live host.
	FS *hostfs.FS

	once sync.Once
	err  error
}

// Name returns "sockperf".
func (d *Sockperf) Name() string { return "sockperf" }

// Check finds sockperf.
func (d *Sockperf) Check() error {
	d.once.Do(func() {
		if _, err := exec.LookPath("sockperf"); err != nil {
			d.err = missingTool("sockperf", "sockperf")
		}
	})
	return d.err
}

// sockperfArgs is the client's command line for p's ping-pong.
func sockperfArgs(addr string, p Params) ([]string, error) {
	pr := p.Probe
	if pr == nil || pr.Kind != agent.ProbePingPong {
		return nil, errors.New("--engine sockperf runs a ping-pong: add --latency")
	}
	if len(p.Pinning.Client) > 1 || len(p.Pinning.Server) > 1 {
		return nil, errors.New("sockperf's ping-pong is one thread per end: give one CPU per side in -A")
	}
	a := []string{"sockperf", "ping-pong", "-i", addr, "-p", strconv.Itoa(sockperfPort), "-t", strconv.Itoa(sockperfSeconds(p.Duration)),
		"-m", strconv.Itoa(pr.Size), "--full-rtt"}
	if !pr.UDP {
		a = append(a, "--tcp")
	}
	if pr.Rate > 0 {
		a = append(a, "--mps", strconv.FormatFloat(pr.Rate, 'f', 0, 64))
	} else {
		a = append(a, "--mps", "max")
	}
	if c := p.Pinning.Client; len(c) == 1 {
		cpu := cpulist.Format(c)
		a = append(a, "--sender-affinity", cpu, "--receiver-affinity", cpu)
	}
	return a, nil
}

// sockperfWarmup and sockperfCooldown are what sockperf 3.x leaves out
// of its -t at the start and at the end (its "Warm up time=400 msec"; a
// -t 4 run measures 3.55 s).
const (
	sockperfWarmup   = 400 * time.Millisecond
	sockperfCooldown = 50 * time.Millisecond
)

// sockperfSeconds is the -t that gives sockperf a measured window of at
// least d: sockperf takes whole seconds only, and its warm-up and
// cool-down are inside its -t, so a -t 3 run measured 2.55 s. The window
// measured is cut to d from its log (ParseSockperfLog), as the native
// engine measures d after its warm-up.
func sockperfSeconds(d time.Duration) int {
	need := d + sockperfWarmup + sockperfCooldown + 100*time.Millisecond // a margin for the clock's edges
	return int((need + time.Second - 1) / time.Second)
}

func init() {
	register(DriverInfo{Name: "sockperf", Rank: 4, New: func(h Hosts, _ TargetConfig) Driver { return &Sockperf{Hosts: h} },
		Caps: Caps{Latency: true, LatencyUDP: true, LatencyOnly: true}})
}

// Run makes one sockperf ping-pong.
func (d *Sockperf) Run(ctx context.Context, p Params, live func(result.Interval)) (*result.Result, error) {
	return runTool(ctx, d, d.Hosts, p, live)
}

// server is sockperf's server, pinned as asked; it stands for the
// client's whole -t and a grace.
func (d *Sockperf) server(p Params) (toolserver.ToolServer, time.Duration) {
	return toolserver.ToolServer{Tool: "sockperf", Port: sockperfPort, Bind: d.Hosts.Addr(),
		CPUs: p.Pinning.Server, TCP: p.Probe == nil || !p.Probe.UDP}, time.Duration(sockperfSeconds(p.Duration))*time.Second + 2*time.Second
}

func (d *Sockperf) client(p Params) ([]string, error) { return sockperfArgs(d.Hosts.Addr(), p) }

func (d *Sockperf) notYet(err error) bool {
	e := err.Error()
	return strings.Contains(e, "Connection refused") || strings.Contains(e, "connect socket") || strings.Contains(e, "No messages were received")
}

// finish records both processes' CPU time (getrusage of the client, the
// server's as the tool server measured it): sockperf reports none.
func (d *Sockperf) finish(r *result.Result, _ Params, m measured, _ ServerProc, serverCPU float64) {
	r.End.CPU = result.EndCPU{ClientSeconds: m.clientCPU, ServerSeconds: serverCPU}
}

// measure runs sockperf's client once, with its log of every message in a
// private directory, sampling this host beside it; its report comes at the
// end. The samples start when sockperf's warm-up ends, so that sample k
// stands beside interval k of the window the log gives.
func (d *Sockperf) measure(ctx context.Context, p Params, args []string, _ toolserver.ClientAuth, _ func(result.Interval)) (measured, error) {
	dir, err := os.MkdirTemp("", "linerate-sockperf-")
	if err != nil {
		return measured{}, fmt.Errorf("making a directory for sockperf's log: %w", err)
	}
	defer os.RemoveAll(dir)
	logPath := filepath.Join(dir, "full-log.csv")
	cmd := toolserver.Command(ctx, append(slices.Clip(args), "--full-log", logPath))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := d.Hosts.StartClient(cmd); err != nil {
		return measured{}, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	exited := false
	select {
	case werr = <-done:
		exited = true
	case <-time.After(sockperfWarmup):
	}
	smp := sample(d.FS, d.Hosts, p)
	if !exited {
		werr = <-done
	}
	samples := smp.Stop()
	sp, err := ParseSockperf(out.Bytes())
	if err != nil {
		return measured{raw: out.String()}, err
	}
	if werr != nil {
		return measured{raw: out.String()}, fmt.Errorf("sockperf client: %v: %s", werr, finalLine(out.String()))
	}
	lg, lerr := readSockperfLog(logPath, p)
	run := sockperfRun(sp, lg, lerr, p)
	attach(run, samples, sameHosts(d.Hosts))
	attachUnread(run, smp.Unread(), sameHosts(d.Hosts))
	return measured{run: run, raw: out.String(), atEnd: true, clientCPU: toolserver.ProcessCPU(cmd)}, nil
}

// readSockperfLog reads the window of p's length from sockperf's log.
func readSockperfLog(path string, p Params) (*SockperfLog, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseSockperfLog(f, p.Duration, p.Interval, p.Probe.Size)
}

// sockperfRun turns sockperf's report into a run. With its log (lg) the
// run is the window of -t seconds after sockperf's warm-up, interval by
// interval, as a native run is; without (lerr says why), it is
// sockperf's own summary of its window, and no interval is made up.
func sockperfRun(sp *SockperfResult, lg *SockperfLog, lerr error, p Params) *result.Result {
	r := &result.Result{Schema: result.Schema, RunID: time.Now().UnixMilli(), Engine: "sockperf", Intervals: []result.Interval{},
		Tool: &result.Tool{Name: "sockperf", Version: sp.Version}}
	st := &r.Start
	st.Peer, st.Port, st.Streams, st.Direction = sp.Address, sp.Port, 1, result.Send
	st.DurationS, st.OmitS, st.IntervalS = p.Duration.Seconds(), sockperfWarmup.Seconds(), p.Interval.Seconds()
	st.Connections = []result.Connection{{ID: 1, Sender: "client", ClientCPU: firstOr(p.Pinning.Client), ServerCPU: firstOr(p.Pinning.Server)}}
	st.Notes = append(st.Notes, fmt.Sprintf("sockperf %s ping-pong over %s: %d-byte messages; its 400 ms warm-up and 50 ms cool-down are not counted", sp.Version, sp.Protocol, p.Probe.Size))
	proto := strings.ToLower(sp.Protocol)
	if proto == "" {
		proto = map[bool]string{false: "tcp", true: "udp"}[p.Probe.UDP]
	}
	l := &result.Latency{Summary: sp.Latency, Protocol: proto, Size: p.Probe.Size, Sent: sp.SentMessages, TargetRate: p.Probe.Rate, Duplicated: sp.Duplicated}
	r.End.Seconds = sp.ValidSeconds
	switch {
	case lg != nil:
		l.Summary = lg.Latency
		l.Dropped, l.OutOfOrder = sp.Latency.Dropped, sp.Latency.OutOfOrder
		l.Sent = lg.Latency.Samples
		r.End.Seconds = lg.Seconds
		r.Intervals = lg.Intervals
		st.Notes = append(st.Notes, fmt.Sprintf("sockperf ran -t %d (whole seconds, warm-up and cool-down inside): the figures are the round trips it logged (--full-log) in the %g s after its warm-up; its drop and reorder counts, and its own summary (raw output), cover all %.2f s it measured",
			sockperfSeconds(p.Duration), p.Duration.Seconds(), sp.ValidSeconds))
	default:
		st.Notes = append(st.Notes, fmt.Sprintf("sockperf's log of each message could not be read (%v): the figures are sockperf's summary of the %.2f s it measured, and there are no per-interval figures", lerr, sp.ValidSeconds))
	}
	if p.Pinning.Auto() {
		st.Notes = append(st.Notes, "sockperf ran unpinned (the scheduler placed both ends), where the native engine's auto placement pins each end to a CPU of its own (on one machine, two different CPUs): round trips move with the placement as much as with the tool, so compare engines with the same -A (e.g. -A 0,1)")
	}
	if r.End.Seconds > 0 {
		l.RatePerSecond = result.Round3(float64(l.Samples) / r.End.Seconds)
		bytes := uint64(l.Samples) * uint64(2*p.Probe.Size)
		r.End.SumSent = result.Sum{Bytes: bytes, BitsPerSecond: float64(bytes) * 8 / r.End.Seconds}
		r.End.SumReceived = result.Received{Bytes: bytes, BitsPerSecond: r.End.SumSent.BitsPerSecond}
	}
	r.End.Latency, r.End.Streams = l, []result.StreamEnd{}
	r.End.Errors = append(r.End.Errors, sp.Warnings...)
	return r
}

func firstOr(cpus []int) int {
	if len(cpus) == 0 {
		return -1
	}
	return cpus[0]
}
