package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/result"
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

func init() {
	register(DriverInfo{Name: "perftest", Rank: 3, New: func(h Hosts, cfg TargetConfig) Driver { return &Perftest{Hosts: h, Test: cfg.PerftestTest} },
		Caps: Caps{Perftest: true}})
}

// Check finds the tool and an RDMA device.
func (d *Perftest) Check() error { return d.check(d.Test) }

// CheckParams checks the tool p asks for.
func (d *Perftest) CheckParams(p Params) error { return d.check(p.Perftest.WithDefaults().Test) }

func (d *Perftest) check(test string) error {
	test = toolserver.PerftestParams{Test: test}.WithDefaults().Test
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
// RoCE's discards and pause frames show on the Ethernet port's counters,
// which runTool reads around it as for any tool.
func (d *Perftest) Run(ctx context.Context, p Params, live func(result.Interval)) (*result.Result, error) {
	return runTool(ctx, d, d.Hosts, p, live)
}

func (d *Perftest) server(p Params) (toolserver.ToolServer, time.Duration) {
	pp := p.Perftest.WithDefaults()
	return toolserver.ToolServer{Tool: pp.Test, CPUs: p.Pinning.Server, Perftest: pp, Streams: p.Streams}, p.Duration + p.Omit
}

func (d *Perftest) client(p Params) ([]string, error) {
	return pinned(p.Pinning.Client, append(toolserver.PerftestArgs(p.Perftest.WithDefaults(), p.Streams, 0), d.Hosts.Addr())), nil
}

func (d *Perftest) notYet(err error) bool { return strings.Contains(err.Error(), "Couldn't connect") }

// measure runs the client once: its report is one interval over the test,
// the client's load its last telemetry sample.
func (d *Perftest) measure(ctx context.Context, p Params, args []string, _ toolserver.ClientAuth, _ func(result.Interval)) (measured, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &out
	smp := sample(d.FS, d.Hosts, p)
	if err := d.Hosts.StartClient(cmd); err != nil {
		smp.Stop()
		return measured{}, err
	}
	werr := cmd.Wait()
	samples := smp.Stop()
	res, perr := ParsePerftest(out.Bytes())
	if perr != nil {
		return measured{raw: out.String()}, fmt.Errorf("%s: %v (%v)", args[0], perr, werr)
	}
	run := perftestRun(res, p)
	if len(samples) > 0 {
		run.Intervals[0].CPU.Client = samples[len(samples)-1].PerCPU
	}
	return measured{run: run, raw: out.String(), atEnd: true}, nil
}

// finish puts the peer's last sample on the run's one interval (runTool
// attached its first), as the client's is its last.
func (d *Perftest) finish(r *result.Result, _ Params, _ measured, srv ServerProc, _ float64) {
	if ss, ok := srv.(sampledServer); ok {
		if smp := ss.Samples(); len(smp) > 0 {
			setServer(&r.Intervals[0], smp[len(smp)-1])
		}
	}
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
