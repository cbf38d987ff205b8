package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/telemetry"
	"github.com/linerate/linerate/internal/toolserver"
)

// Perftest drives linux-rdma/perftest's ib_* tools. They need an RDMA
// device on both ends (hardware, or Soft-RoCE for functional tests).
type Perftest struct {
	Hosts Hosts
	FS    *hostfs.FS
	Test  string // the tool, for Check; Run uses Params.Perftest.Test
}

// Name returns "perftest".
func (d *Perftest) Name() string { return "perftest" }

// Check finds the tool and an RDMA device.
func (d *Perftest) Check() error {
	test := toolserver.PerftestParams{Test: d.Test}.WithDefaults().Test
	if !slices.Contains(toolserver.PerftestTools, test) {
		return fmt.Errorf("perftest tool %q: linerate runs %s", test, strings.Join(toolserver.PerftestTools, ", "))
	}
	// The device first: without one, installing perftest would not help.
	if err := checkRDMA(fsOr(d.FS)); err != nil {
		return err
	}
	if _, err := exec.LookPath(test); err != nil {
		return missingTool(test, "perftest")
	}
	return nil
}

// checkRDMA finds an RDMA device under /sys/class/infiniband.
func checkRDMA(fs *hostfs.FS) error {
	devs, err := fs.ReadDir("sys/class/infiniband")
	if err != nil && !os.IsNotExist(err) && !hostfs.IsNotExist(err) {
		return fmt.Errorf("listing RDMA devices: %w", err)
	}
	if len(devs) == 0 {
		return &UnavailableError{Tool: "perftest", Reason: "no RDMA device here (/sys/class/infiniband is empty; 'linerate doctor' lists RDMA ports): the perftest driver needs one on both ends"}
	}
	return nil
}

// Run makes one perftest run: the server on the peer, the client here.
func (d *Perftest) Run(ctx context.Context, p Params, live func(result.Interval)) (*result.Result, error) {
	d.Test = p.Perftest.WithDefaults().Test
	if err := d.Check(); err != nil {
		return nil, err
	}
	ctx, cancel := withTimeout(ctx, p)
	defer cancel()
	pp := p.Perftest.WithDefaults()
	srv, srvArgv, err := d.Hosts.StartServer(ctx, toolserver.ToolServer{Tool: pp.Test, CPUs: p.Pinning.Server, Perftest: pp, Streams: p.Streams}, p.Duration+p.Omit)
	if err != nil {
		return nil, err
	}
	args := pinned(p.Pinning.Client, append(toolserver.PerftestArgs(pp, p.Streams, 0), d.Hosts.Addr()))
	// Both ends' NIC counters, before any payload: RoCE's discards and
	// pause frames show on the Ethernet port's counters, beside the host's.
	nic := beginNIC(d.Hosts)
	var out bytes.Buffer
	var res *result.Perftest
	var smp *telemetry.Ticker
	if !p.NoTelemetry {
		smp = telemetry.Start(fsOr(d.FS), d.Hosts.NICIRQs(), p.Interval)
	}
	_, err = retryConnect(ctx, func() (*result.Result, error) {
		out.Reset()
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := d.Hosts.StartClient(cmd); err != nil {
			return nil, err
		}
		werr := cmd.Wait()
		var perr error
		if res, perr = ParsePerftest(out.Bytes()); perr != nil {
			return nil, fmt.Errorf("%s: %v (%v)", args[0], perr, werr)
		}
		return nil, nil
	}, func(err error) bool { return strings.Contains(err.Error(), "Couldn't connect") })
	samples := smp.Stop()
	_, srvOut, _ := srv.Stop()
	if err != nil {
		return nil, withServerOutput(err, srvOut)
	}
	run := perftestRun(res, p)
	run.End.NICCounters = nic.end(srv)
	run.Raw = out.String()
	run.Tool = &result.Tool{Name: "perftest", Client: args, Server: srvArgv}
	if len(samples) > 0 {
		run.Intervals[0].CPU.Client = samples[len(samples)-1].PerCPU
	}
	if ss, ok := srv.(sampledServer); ok {
		if smp := ss.Samples(); len(smp) > 0 {
			setServer(&run.Intervals[0], smp[len(smp)-1])
		}
	}
	finishStart(run, p, d.Hosts)
	if live != nil {
		live(run.Intervals[0])
	}
	return run, nil
}

// perftestRun shapes a perftest result as a bench/v1 run: one interval
// over the test, the average bandwidth as goodput.
func perftestRun(res *result.Perftest, p Params) *result.Result {
	r := &result.Result{Schema: result.Schema, Engine: "perftest", Perftest: res}
	r.Start = result.Start{Peer: "", Streams: max(p.Streams, 1), Direction: result.Send}
	bps := 0.0
	if res.BWAverageGbps != nil {
		bps = *res.BWAverageGbps * 1e9
	}
	secs := 0.0
	if bps > 0 {
		secs = float64(res.MsgBytes) * float64(res.Iterations) * 8 / bps
	}
	bytes := uint64(res.MsgBytes) * uint64(max(res.Iterations, 0))
	r.Start.DurationS = secs
	r.Intervals = []result.Interval{{Start: 0, End: secs, Sum: result.Sum{Bytes: bytes, BitsPerSecond: bps}}}
	r.End = result.End{Seconds: secs, SumSent: result.Sum{Bytes: bytes, BitsPerSecond: bps},
		SumReceived: result.Received{Bytes: bytes, BitsPerSecond: bps}}
	return r
}
