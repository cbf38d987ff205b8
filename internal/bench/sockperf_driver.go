package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
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
	a := []string{"sockperf", "ping-pong", "-i", addr, "-p", strconv.Itoa(sockperfPort), "-t", secs(p.Duration),
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

func init() {
	register(DriverInfo{Name: "sockperf", Rank: 4, New: func(h Hosts, _ TargetConfig) Driver { return &Sockperf{Hosts: h} },
		Caps: Caps{Latency: true, LatencyUDP: true, LatencyOnly: true}})
}

// Run makes one sockperf ping-pong.
func (d *Sockperf) Run(ctx context.Context, p Params, live func(result.Interval)) (*result.Result, error) {
	return runTool(ctx, d, d.Hosts, p, live)
}

// server is sockperf's server, pinned as asked; sockperf's own warm-up and
// cool-down come on top of -t.
func (d *Sockperf) server(p Params) (toolserver.ToolServer, time.Duration) {
	return toolserver.ToolServer{Tool: "sockperf", Port: sockperfPort, Bind: d.Hosts.Addr(),
		CPUs: p.Pinning.Server, TCP: p.Probe == nil || !p.Probe.UDP}, p.Duration + 2*time.Second
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

// measure runs sockperf's client once, sampling this host beside it; its
// report comes at the end.
func (d *Sockperf) measure(ctx context.Context, p Params, args []string, _ toolserver.ClientAuth, _ func(result.Interval)) (measured, error) {
	cmd := toolserver.Command(ctx, args)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	smp := sample(d.FS, d.Hosts, p)
	if err := d.Hosts.StartClient(cmd); err != nil {
		smp.Stop()
		return measured{}, err
	}
	werr := cmd.Wait()
	samples := smp.Stop()
	sp, err := ParseSockperf(out.Bytes())
	if err != nil {
		return measured{raw: out.String()}, err
	}
	if werr != nil {
		return measured{raw: out.String()}, fmt.Errorf("sockperf client: %v: %s", werr, finalLine(out.String()))
	}
	run := sockperfRun(sp, p)
	sampledIntervals(run, p, samples, d.Hosts)
	return measured{run: run, raw: out.String(), atEnd: true, clientCPU: toolserver.ProcessCPU(cmd)}, nil
}

// sockperfRun turns sockperf's report into a run.
func sockperfRun(sp *SockperfResult, p Params) *result.Result {
	r := &result.Result{Schema: result.Schema, RunID: time.Now().UnixMilli(), Engine: "sockperf", Intervals: []result.Interval{}}
	st := &r.Start
	st.Peer, st.Port, st.Streams, st.Direction = sp.Address, sp.Port, 1, result.Send
	st.DurationS, st.OmitS, st.IntervalS = p.Duration.Seconds(), 0.4, p.Interval.Seconds()
	st.Connections = []result.Connection{{ID: 1, Sender: "client", ClientCPU: firstOr(p.Pinning.Client), ServerCPU: firstOr(p.Pinning.Server)}}
	st.Notes = append(st.Notes, fmt.Sprintf("sockperf %s ping-pong over %s: %d-byte messages; its 400 ms warm-up and cool-down are not counted", sp.Version, sp.Protocol, p.Probe.Size))
	proto := strings.ToLower(sp.Protocol)
	if proto == "" {
		proto = map[bool]string{false: "tcp", true: "udp"}[p.Probe.UDP]
	}
	l := &result.Latency{Summary: sp.Latency, Protocol: proto, Size: p.Probe.Size, Sent: sp.SentMessages, TargetRate: p.Probe.Rate, Duplicated: sp.Duplicated}
	if sp.ValidSeconds > 0 {
		l.RatePerSecond = result.Round3(float64(sp.ReceivedMessages) / sp.ValidSeconds)
	}
	r.End.Seconds, r.End.Latency, r.End.Streams = sp.ValidSeconds, l, []result.StreamEnd{}
	r.End.Errors = append(r.End.Errors, sp.Warnings...)
	return r
}

func firstOr(cpus []int) int {
	if len(cpus) == 0 {
		return -1
	}
	return cpus[0]
}
