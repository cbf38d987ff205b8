package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/explain"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/rdmastats"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/toolserver"
)

// Perftest drives linux-rdma/perftest's ib_* tools. They need an RDMA
// device on both ends (hardware, or Soft-RoCE for functional tests).
type Perftest struct {
	Hosts Hosts
	FS    *hostfs.FS
	// ServerFS is the server end's host, when this process can read it
	// (tests give each end a tree of its own). Nil: a lab's server shares
	// FS (its namespaces share one kernel); an agent's is not read.
	ServerFS *hostfs.FS
	Test     string // the tool, for Check; Run uses Params.Perftest.Test
}

// Name returns "perftest".
func (d *Perftest) Name() string { return "perftest" }

func init() {
	register(DriverInfo{Name: "perftest", Rank: 3, New: func(h Hosts, cfg TargetConfig) Driver { return &Perftest{Hosts: h, Test: cfg.PerftestTest} },
		Caps: Caps{Perftest: true, Latency: true}})
}

// Check finds the tool and an RDMA device.
func (d *Perftest) Check() error { return d.check(d.Test) }

// CheckParams checks the tool p asks for: a latency tool for a latency
// run (--latency), a bandwidth tool otherwise.
func (d *Perftest) CheckParams(p Params) error {
	pp := perftestParams(p)
	if lat := strings.HasSuffix(pp.Test, "_lat"); latencyRun(p) != lat {
		want := "a bandwidth tool (ib_write_bw, ib_read_bw, ib_send_bw)"
		if latencyRun(p) {
			want = "a latency tool (ib_write_lat, ib_send_lat)"
		}
		return fmt.Errorf("--perftest-test %s: this run needs %s", pp.Test, want)
	}
	return d.check(pp.Test)
}

// latencyRun reports whether p asks for round trips (--latency).
func latencyRun(p Params) bool { return p.Probe != nil && p.Probe.Kind == agent.ProbePingPong }

// perftestParams are the perftest tool and message of p: ib_write_lat
// for a latency run that names no tool, else p's with their defaults.
func perftestParams(p Params) toolserver.PerftestParams {
	pp := p.Perftest
	if pp.Test == "" && latencyRun(p) {
		pp.Test = "ib_write_lat"
	}
	return pp.WithDefaults()
}

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
	pp := perftestParams(p)
	return toolserver.ToolServer{Tool: pp.Test, CPUs: p.Pinning.Server, Perftest: pp, Streams: p.Streams}, p.Duration + p.Omit
}

func (d *Perftest) client(p Params) ([]string, error) {
	return pinned(p.Pinning.Client, append(toolserver.PerftestArgs(perftestParams(p), p.Streams, 0), d.Hosts.Addr())), nil
}

func (d *Perftest) notYet(err error) bool { return strings.Contains(err.Error(), "Couldn't connect") }

// measure runs the client once, with both ends' RDMA counters read
// before it starts and after it ends: its report is one interval over the
// test, the client's load its last telemetry sample.
func (d *Perftest) measure(ctx context.Context, p Params, args []string, _ toolserver.ClientAuth, _ func(result.Interval)) (measured, error) {
	var out bytes.Buffer
	cmd := toolserver.Command(ctx, args)
	cmd.Stdout, cmd.Stderr = &out, &out
	rdma := d.beginRDMA(p)
	smp := sample(d.FS, d.Hosts, p)
	if err := d.Hosts.StartClient(cmd); err != nil {
		smp.Stop()
		return measured{}, err
	}
	werr := cmd.Wait()
	samples := smp.Stop()
	counted := rdma.end()
	res, perr := ParsePerftest(out.Bytes())
	if perr != nil {
		return measured{raw: out.String()}, fmt.Errorf("%s: %v (%v)", args[0], perr, werr)
	}
	run := perftestRun(res, p)
	run.End.RDMA = counted
	if len(samples) > 0 {
		run.Intervals[0].CPU.Client = samples[len(samples)-1].PerCPU
	}
	return measured{run: run, raw: out.String(), atEnd: true}, nil
}

// finish puts the peer's last sample on the run's one interval (runTool
// attached its first), as the client's is its last; takes the server
// end's RDMA counters from the stopped server when this process did not
// read them (the agent read them around its tool server), and judges the
// run by both ends' counters.
func (d *Perftest) finish(r *result.Result, _ Params, _ measured, srv ServerProc, _ float64) {
	if ss, ok := srv.(sampledServer); ok {
		if smp := ss.Samples(); len(smp) > 0 {
			setServer(&r.Intervals[0], smp[len(smp)-1])
		}
	}
	x := r.End.RDMA
	if x == nil {
		return
	}
	if x.Server == nil {
		x.Server = serverRDMA(srv)
	}
	var bw *float64
	if r.Perftest != nil {
		bw = r.Perftest.BWAverageGbps
	}
	explain.JudgeRDMA(x, bw)
}

// rdmaServer is a tool server that read its own end's RDMA counters (one
// the agent ran).
type rdmaServer interface {
	RDMA() *result.RDMAEnd
}

// RDMA is how the RDMA counters of the agent's end grew while its tool
// server ran (known once the server stopped); nil when it did not say.
func (s agentServer) RDMA() *result.RDMAEnd { return s.ts.RDMA() }

// serverRDMA is the server end's RDMA counters as srv read them, or why
// there are none.
func serverRDMA(srv ServerProc) *result.RDMAEnd {
	const fix = "; read them on the peer around the run with 'rdma statistic show'"
	rs, ok := srv.(rdmaServer)
	if !ok {
		return &result.RDMAEnd{NotRead: "this process does not read the server's host" + fix}
	}
	if e := rs.RDMA(); e != nil {
		return e
	}
	return &result.RDMAEnd{NotRead: "the agent did not read its RDMA counters (an agent older than this linerate)" + fix}
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

// rdmaSpans are both ends' RDMA ports read before a run; server nil is
// an end this process does not read (the agent reads its own).
type rdmaSpans struct {
	client, server *rdmastats.Span
}

// beginRDMA reads both ends' RDMA counters before a run: the client's
// here (the device asked for, else the port of the interface the test
// leaves by), the server's where this process can read it (ServerFS, or
// a lab's one kernel).
func (d *Perftest) beginRDMA(p Params) *rdmaSpans {
	dev := p.Perftest.Device
	s := &rdmaSpans{client: rdmastats.Begin(fsOr(d.FS), dev, d.Hosts.Iface())}
	_, lab := d.Hosts.(labNICHosts)
	switch {
	case d.ServerFS != nil:
		s.server = rdmastats.Begin(d.ServerFS, dev, "")
	case lab:
		s.server = rdmastats.Begin(fsOr(d.FS), dev, "")
	}
	return s
}

// end reads both ends again: the counters' growth, and the client port's
// rate and PCIe ceiling.
func (s *rdmaSpans) end() *result.RDMA {
	r := &result.RDMA{Client: s.client.End()}
	s.client.Ceilings(r)
	if s.server != nil {
		r.Server = s.server.End()
	}
	return r
}

// WritePerftest writes a perftest run for people: the bandwidth or the
// latency percentiles as perftest reported them (latencies of writes and
// sends are half the round trip), then what the RDMA counters and the
// port's ceilings say.
func WritePerftest(w io.Writer, r *result.Result) {
	pt := r.Perftest
	if pt == nil {
		return
	}
	tool := "perftest"
	if r.Tool != nil && len(r.Tool.Client) > 0 {
		tool = r.Tool.Client[0]
	}
	switch {
	case pt.BWAverageGbps != nil:
		fmt.Fprintf(w, "%s: %s bytes × %d: average %.2f Gbit/s", tool, strconv.FormatInt(pt.MsgBytes, 10), pt.Iterations, *pt.BWAverageGbps)
		if pt.BWPeakGbps != nil {
			fmt.Fprintf(w, ", peak %.2f Gbit/s", *pt.BWPeakGbps)
		}
		fmt.Fprintln(w)
	default:
		fmt.Fprintf(w, "%s: %s bytes × %d, latency in µs:", tool, strconv.FormatInt(pt.MsgBytes, 10), pt.Iterations)
		for _, f := range []struct {
			name string
			v    *float64
		}{{"min", pt.TMinUs}, {"typical", pt.TTypicalUs}, {"avg", pt.TAvgUs}, {"p99", pt.P99Us}, {"p99.9", pt.P999Us}, {"max", pt.TMaxUs}} {
			if f.v != nil {
				fmt.Fprintf(w, " %s %.2f", f.name, *f.v)
			}
		}
		fmt.Fprintln(w)
	}
	if x := r.End.RDMA; x != nil {
		for _, s := range x.Explanation {
			fmt.Fprintln(w, s)
		}
	}
}
