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
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/toolserver"
)

// netperfPort is the port the driver's netservers listen on: netperf's
// default.
const netperfPort = 12865

// netperfSelectors are the output selectors the driver asks for: the
// latencies TCP_RR reports, and the transaction rate.
var netperfSelectors = []string{"MIN_LATENCY", "MEAN_LATENCY", "P50_LATENCY", "P90_LATENCY", "P99_LATENCY", "MAX_LATENCY", "STDDEV_LATENCY", "TRANSACTION_RATE"}

// Netperf drives `netperf -t TCP_RR` for bench --latency --engine netperf
// (TCP only): netserver in the lab's host b, the client in host a, each
// pinned as asked (-T). netperf is in Debian's non-free section, so the
// driver is optional: Check says how to get it.
type Netperf struct {
	Hosts Hosts
	// FS is where telemetry is read; nil is the live host.
	FS *hostfs.FS

	once sync.Once
	err  error
}

// Name returns "netperf".
func (d *Netperf) Name() string { return "netperf" }

// Check finds netperf and netserver.
func (d *Netperf) Check() error {
	d.once.Do(func() {
		for _, p := range []string{"netperf", "netserver"} {
			if _, err := exec.LookPath(p); err != nil {
				d.err = &UnavailableError{Tool: p, Reason: p + " is not installed: it is in Debian's non-free section (apt-get install netperf with non-free enabled); --engine sockperf or the native engine measure the same round trips"}
				return
			}
		}
	})
	return d.err
}

// netperfArgs is the client's command line for p's ping-pong.
func netperfArgs(addr string, p Params) ([]string, error) {
	pr := p.Probe
	switch {
	case pr == nil || pr.Kind != agent.ProbePingPong:
		return nil, errors.New("--engine netperf runs a ping-pong: add --latency")
	case pr.UDP:
		return nil, errors.New("--engine netperf runs TCP_RR only: drop --udp, or use --engine sockperf")
	case pr.Rate > 0:
		return nil, errors.New("netperf's TCP_RR sends as fast as replies come: drop --rate")
	}
	a := []string{"netperf", "-H", addr, "-p", strconv.Itoa(netperfPort), "-t", "TCP_RR", "-l", secs(p.Duration), "-P", "0"}
	if len(p.Pinning.Client) == 1 || len(p.Pinning.Server) == 1 {
		a = append(a, "-T", cpuOrEmpty(p.Pinning.Client)+","+cpuOrEmpty(p.Pinning.Server))
	}
	return append(a, "--", "-r", strconv.Itoa(pr.Size)+","+strconv.Itoa(pr.Size), "-o", strings.Join(netperfSelectors, ",")), nil
}

func cpuOrEmpty(c []int) string {
	if len(c) == 0 {
		return ""
	}
	return strconv.Itoa(c[0])
}

func init() {
	register(DriverInfo{Name: "netperf", Rank: 5, New: func(h Hosts, _ TargetConfig) Driver { return &Netperf{Hosts: h} },
		Caps: Caps{Latency: true, LatencyOnly: true}})
}

// Run makes one netperf TCP_RR.
func (d *Netperf) Run(ctx context.Context, p Params, live func(result.Interval)) (*result.Result, error) {
	return runTool(ctx, d, d.Hosts, p, live)
}

func (d *Netperf) server(p Params) (toolserver.ToolServer, time.Duration) {
	return toolserver.ToolServer{Tool: "netserver", Port: netperfPort, Bind: d.Hosts.Addr()}, p.Duration + time.Second
}

func (d *Netperf) client(p Params) ([]string, error) { return netperfArgs(d.Hosts.Addr(), p) }

// notYet: netserver listens before it is reported started.
func (d *Netperf) notYet(error) bool { return false }

func (d *Netperf) finish(*result.Result, Params, measured, ServerProc, float64) {}

// measure runs netperf's client once; its report comes at the end.
func (d *Netperf) measure(ctx context.Context, p Params, args []string, _ toolserver.ClientAuth, _ func(result.Interval)) (measured, error) {
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
	if werr != nil {
		return measured{raw: out.String()}, fmt.Errorf("netperf: %v: %s", werr, finalLine(out.String()))
	}
	np, err := ParseNetperf(out.Bytes(), netperfSelectors)
	if err != nil {
		return measured{raw: out.String()}, err
	}
	r := &result.Result{Schema: result.Schema, RunID: time.Now().UnixMilli(), Engine: "netperf", Intervals: []result.Interval{}}
	r.Start.Streams, r.Start.Direction, r.Start.DurationS, r.Start.IntervalS = 1, result.Send, p.Duration.Seconds(), p.Interval.Seconds()
	r.Start.Connections = []result.Connection{{ID: 1, Sender: "client", ClientCPU: firstOr(p.Pinning.Client), ServerCPU: firstOr(p.Pinning.Server)}}
	l := &result.Latency{Summary: np.Latency, Protocol: "tcp", Size: p.Probe.Size}
	if np.TransactionRate != nil {
		l.RatePerSecond = *np.TransactionRate
	}
	r.End.Seconds, r.End.Latency, r.End.Streams = p.Duration.Seconds(), l, []result.StreamEnd{}
	sampledIntervals(r, p, samples, d.Hosts)
	return measured{run: r, raw: out.String(), atEnd: true}, nil
}
