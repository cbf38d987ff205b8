package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/bench"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/explain"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/store"
	"github.com/linerate/linerate/internal/toolserver"
)

type benchFlags struct {
	duration, omit, interval seconds
	streams                  int
	affinity                 string
	reverse, bidir           bool
	window                   string
	zerocopy                 string
	congestion               string
	fqRate                   string
	json, jsonStream         bool
	verbose                  bool
	tokenFile                string
	port                     int

	engine     string
	repeat     int
	sweep      string
	placements string
	label      string
	db         string
	noStore    bool
	perftest   toolserver.PerftestParams

	// labClient makes this process the client of a lab run: the test
	// comes on stdin (bench.RunLabClient).
	labClient bool

	// Latency and UDP tests (bench --latency, bench --udp).
	latency   bool
	udp       bool
	size      int
	rate      string
	udpRate   string
	udpLen    int
	omitGiven bool

	// Transactions, many flows on few threads, the receiver's copy.
	txnFlags
}

func newBenchCmd(env *cliEnv) *cobra.Command {
	return benchCommand(func(cmd *cobra.Command, peer string, f benchFlags) error { return runBench(cmd, env, peer, f) })
}

// benchCommand is `linerate bench` with its flags, calling run with what
// they parsed to (a test parses a command line with it as the CLI does).
func benchCommand(run func(cmd *cobra.Command, peer string, f benchFlags) error) *cobra.Command {
	f := benchFlags{duration: seconds(10 * time.Second), interval: seconds(time.Second)}
	cmd := &cobra.Command{
		Use:   "bench PEER",
		Short: "Measure throughput to a peer: one run, or repeats, sweeps and placements, with per-CPU telemetry of both ends",
		Long: `bench measures TCP throughput between this host and PEER and samples, every
interval, the per-CPU busy/irq/softirq load, NET_RX/NET_TX softirqs and NIC
interrupts of both hosts, whatever moves the bytes:

  --engine native    linerate's own engine (default): N streams, each on its own
                     thread pinned to a CPU, TCP_INFO per stream
  --engine iperf3    iperf3 (-J, or --json-stream where it has it)
  --engine iperf2    iperf 2 (enhanced CSV)
  --engine perftest  ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat,
                     ib_send_lat (needs an RDMA device on both ends)
  --engine sockperf  sockperf ping-pong, with --latency (the agent starts its
                     server only with serve --allow-sockperf)
  --engine netperf   netperf TCP_RR, with --latency, in a lab (Debian non-free)

--latency measures round trips instead: one message at a time over TCP
(TCP_NODELAY) or UDP (--udp), --size bytes at --rate per second, both ends
pinned, warm-up (-O, default 0.4 s) and cool-down not counted; end.latency
holds min, p25, p50, p90, p99, p99.9, p99.99, max, mean and stdev in µs.
--udp alone sends UDP at -b bits per second (-l bytes per datagram) and
reports loss, jitter and packets per second as iperf3 -u does.

--rr makes request/response transactions as fast as they go over --flows
connections on --threads threads per end (epoll), --size bytes each way
(default 1), --depth outstanding per flow; --crr a new connection per
transaction. end.transactions holds transactions/s, latency per transaction
and each end's CPU per transaction. -P N --threads T carries N streams on
T threads; --skip-rx-copy receives without copying (MSG_TRUNC).

PEER is HOST or HOST:PORT, where 'linerate serve' runs (it also starts the
iperf3/iperf2/perftest server there, pinned as asked), or lab:NAME to run
between the two hosts of a lab ('linerate lab up --name NAME').

One run prints lines like iperf3's. --repeat, --sweep-streams and
--placements make a campaign: every stream count crossed with every
placement, each repeated, interleaved round by round; it ends with each
point's median, min, max and 95% interval (order statistics of the runs,
distribution-free: 6 runs or more), its share of the path's
goodput ceiling (from doctor), the CPU cost per Gbit/s, and, when repeats
split into buckets or placements differ, what differed between them in
plain words, with the command that reproduces the best point.

Every run is stored, with its parameters, both hosts' doctor reports,
intervals and telemetry, in the results database (--db, default
` + store.DefaultPath() + `): 'linerate history', 'linerate compare' and
'linerate report' read it. --no-store keeps nothing.

The token comes from --token-file or $` + agent.TokenEnv + `. Without -A, the native
engine picks the CPUs (local to the NIC, off the CPUs serving its
interrupts) and says which. Results go to stdout, diagnostics to stderr.
Exit status: 0 it ran, 2 it could not.`,
		Example: `  linerate bench 192.168.15.102 -t 30 -P 4
  linerate bench 192.168.15.102 -A 6,6 --zerocopy --json
  linerate bench 192.168.15.102 --repeat 10 -A 6,6 --label baseline
  linerate bench 192.168.15.102 --sweep-streams 1,2,4,8,16 --engine iperf3
  linerate bench 192.168.15.102 --placements "6,6;0,0;6,7" --repeat 5
  linerate bench lab:demo -t 10 --reverse
  linerate bench 192.168.15.102 --latency --rate 10k -A 6,6 -t 10
  linerate bench 192.168.15.102 --latency --udp --engine sockperf -A 6,6
  linerate bench 192.168.15.102 --udp -b 1G -l 1472
  linerate bench lab:demo --rr --flows 10 --threads 2
  linerate bench 192.168.15.102 --crr --sweep-flows 1,10,100 --repeat 3
  linerate bench 192.168.15.102 -P 100 --threads 2 --skip-rx-copy`,
		Args: exactArgs("PEER"),
		RunE: func(cmd *cobra.Command, args []string) error { return run(cmd, args[0], f) },
	}
	fl := cmd.Flags()
	fl.VarP(&f.duration, "time", "t", "measured time: seconds (10) or a duration (1m30s)")
	fl.VarP(&f.omit, "omit", "O", "warm-up before measuring, not counted")
	fl.VarP(&f.interval, "interval", "i", "report interval, 100ms to 60s")
	fl.IntVarP(&f.streams, "streams", "P", 1, "parallel streams (each way with --bidir), 1 to 128")
	fl.StringVarP(&f.affinity, "affinity", "A", "", "pin stream threads: CLIENT_CPUS,SERVER_CPUS (0,1 or 0-3,4-7), CLIENT/SERVER (0,2/1,3) or CLIENT")
	fl.BoolVarP(&f.reverse, "reverse", "R", false, "the agent sends, the client receives")
	fl.BoolVar(&f.bidir, "bidir", false, "send both ways at once")
	fl.StringVarP(&f.window, "window", "w", "", "socket buffers (SO_SNDBUF/SO_RCVBUF) on both ends, e.g. 4M; default autotuning")
	fl.StringVarP(&f.zerocopy, "zerocopy", "Z", "", "send without copying: sendfile (the default) or msg_zerocopy (native engine)")
	fl.Lookup("zerocopy").NoOptDefVal = string(result.Sendfile)
	fl.StringVarP(&f.congestion, "congestion", "C", "", "TCP congestion control, e.g. bbr or cubic (native engine)")
	fl.StringVar(&f.fqRate, "fq-rate", "", "pace each stream (SO_MAX_PACING_RATE, needs the fq qdisc), bits/s: 10G, 500M (native engine)")
	fl.BoolVarP(&f.json, "json", "J", false, "print the linerate.bench/v1 document of a run, or the linerate.campaign/v1 document of a campaign")
	fl.BoolVar(&f.jsonStream, "json-stream", false, `print one JSON object per event as it happens ({"event": …, "data": …}; one native run)`)
	fl.BoolVarP(&f.verbose, "verbose", "V", false, "a line per stream too, and the agent's log")
	fl.StringVar(&f.tokenFile, "token-file", "", "read the agent's token from this file (mode 600); default $"+agent.TokenEnv)
	fl.IntVarP(&f.port, "port", "p", agent.DefaultPort, "the agent's port, unless PEER names one")
	fl.StringVar(&f.engine, "engine", "native", "what moves the bytes: "+strings.Join(bench.DriverNames(), ", "))
	fl.IntVar(&f.repeat, "repeat", 1, "run each point N times (interleaved round by round)")
	fl.StringVar(&f.sweep, "sweep-streams", "", "stream counts to sweep, e.g. 1,2,4,8,16 (instead of -P)")
	fl.StringVar(&f.placements, "placements", "", `-A pairs to compare, separated by ';', e.g. "6,6;0,0;6,7" (instead of -A)`)
	fl.StringVar(&f.label, "label", "", "a label stored with every run (history, compare and report select by it)")
	fl.StringVar(&f.db, "db", "", "the results database (default "+store.DefaultPath()+")")
	fl.BoolVar(&f.noStore, "no-store", false, "store nothing")
	fl.StringVar(&f.perftest.Test, "perftest-test", "", "perftest tool: ib_write_bw (default), ib_read_bw, ib_send_bw, ib_write_lat, ib_send_lat")
	fl.IntVar(&f.perftest.Size, "perftest-size", 0, "perftest message size in bytes (default 1 MiB for bandwidth, 8 for latency)")
	fl.IntVar(&f.perftest.Iters, "perftest-iters", 0, "perftest iterations (default 5000 for bandwidth, 10000 for latency)")
	fl.StringVar(&f.perftest.Device, "rdma-device", "", "RDMA device for perftest (-d), e.g. rocep3s0")
	fl.IntVar(&f.perftest.GID, "gid-index", 0, "RoCE GID index for perftest (-x)")
	fl.BoolVar(&f.latency, "latency", false, "measure round trips: a ping-pong of one message at a time (TCP_NODELAY, or UDP with --udp), end.latency")
	fl.BoolVarP(&f.udp, "udp", "u", false, "UDP: with --latency a UDP ping-pong; alone a UDP stream at -b (loss, jitter, packets per second, as iperf3 -u)")
	fl.IntVar(&f.size, "size", 64, "--latency: message bytes (14 to 65507); --rr/--crr: request and response bytes (default 1, up to 1M)")
	fl.StringVar(&f.rate, "rate", "", "--latency: round trips per second, e.g. 10000 or 10k (default: as fast as replies come)")
	fl.StringVarP(&f.udpRate, "bitrate", "b", "1M", "--udp: target bits per second, e.g. 1G or 500M; 0 unlimited")
	fl.IntVarP(&f.udpLen, "length", "l", 1460, "--udp: datagram payload bytes (16 to 65507)")
	addTxnFlags(cmd, &f.txnFlags)
	fl.BoolVar(&f.labClient, bench.LabClientFlag, false, "the client of a lab run: read the test on stdin (linerate runs itself so in a lab host)")
	fl.MarkHidden(bench.LabClientFlag)
	// -P's long name is --streams in every command; iperf3's --parallel
	// is kept, hidden, for a release (fleet's "at once" is --concurrent).
	fl.SetNormalizeFunc(aliases(map[string]string{"parallel": "streams"}))
	return cmd
}

func runBench(cmd *cobra.Command, env *cliEnv, peer string, f benchFlags) error {
	if f.labClient {
		return runLabClient(cmd, env, peer)
	}
	spec, err := f.spec(cmd, peer)
	if err != nil {
		return err
	}
	p := spec.Run
	if f.json && f.jsonStream {
		return errors.New("--json and --json-stream both own stdout: pick one")
	}
	if f.jsonStream && (spec.IsCampaign() || spec.Driver != "native") {
		return errors.New("--json-stream shows one native run as it happens: use --json for campaigns and other engines")
	}
	if err := f.checkEngine(p); err != nil {
		return err
	}
	if err := checkAffinity(peer, f.affinity, p.Pinning.Client, p.Pinning.Server); err != nil {
		return err
	}
	if err := checkBenchPeer(cmd.Context(), peer, f.port); err != nil {
		return err
	}
	tcfg := bench.TargetConfig{Peer: peer, Driver: f.engine, Port: f.port, Interval: p.Interval,
		PerftestTest: f.perftestTest(), NoFacts: f.noStore && !spec.IsCampaign()}
	if f.verbose {
		tcfg.Stderr = env.stderr
	}
	if !strings.HasPrefix(peer, bench.LabPrefix) {
		if tcfg.Token, err = benchToken(f.tokenFile); err != nil {
			return err
		}
	}
	ctx, stop := interruptible(cmd)
	defer stop()
	target, err := bench.NewTarget(ctx, tcfg)
	if err != nil {
		return err
	}
	for _, n := range target.Notes {
		fmt.Fprintf(env.stderr, "linerate: note: %s\n", n)
	}
	c := &bench.Campaign{Spec: spec, Driver: target.Driver, ClientDoctor: target.ClientDoctor, ServerDoctor: target.ServerDoctor,
		Iface: target.Iface, ClientTune: target.ClientTune, ServerTune: target.ServerTune}
	if !f.noStore {
		c.Store, err = store.Open(ctx, f.db)
		var dmg *store.DamagedError
		switch {
		case errors.As(err, &dmg):
			// Measure anyway: each run is kept in a file beside the
			// damaged database, and the last line says where.
			c.Unstored, c.UnstoredErr = dmg.Path, err
		case err != nil:
			return err
		default:
			defer c.Store.Close()
		}
	}
	if spec.IsCampaign() {
		return runCampaign(ctx, env, c, f)
	}
	return runOne(ctx, env, c, f, target)
}

// runCampaign runs many runs: a progress line per run (a status line with
// the ETA on a terminal), then the summary.
func runCampaign(ctx context.Context, env *cliEnv, c *bench.Campaign, f benchFlags) error {
	progress := env.stdout
	if f.json {
		progress = env.stderr // stdout holds the document only
	}
	c.Reporter = bench.NewTextReporter(progress, isTerminal(progress)).ForProbe(c.Spec.Run.Probe).ForMode(c.Spec.Run.Mode)
	sum, _, err := c.Run(ctx)
	if err != nil {
		if sum != nil && len(sum.Points) > 0 && !f.json {
			fmt.Fprintln(env.stdout, "\nwhat finished before the error:")
			explain.WriteSummary(env.stdout, sum)
		}
		return err
	}
	if f.json {
		return encodeJSON(env.stdout, sum)
	}
	if c.Store != nil {
		fmt.Fprintf(env.stdout, "\n%d runs stored in %s (linerate history --campaign %d; linerate report --last %d -o report.html)\n",
			len(c.Spec.Order()), c.Store.Path(), sum.CampaignID, len(c.Spec.Order()))
	}
	return explain.WriteSummary(env.stdout, sum)
}

// runOne makes one run with issue 4's output: iperf3-like lines, the
// bench/v1 document, or the event stream.
func runOne(ctx context.Context, env *cliEnv, c *bench.Campaign, f benchFlags, target *bench.Target) error {
	if n, ok := target.Driver.(*bench.Native); ok {
		switch {
		case f.jsonStream:
			n.Base.Progress = bench.JSONStreamProgress(env.stdout)
		case !f.json:
			n.Base.Progress = bench.ProbeTextProgress(env.stdout, f.verbose, c.Spec.Run.Probe)
		}
	} else if !f.json {
		c.Reporter = bench.NewTextReporter(env.stdout, false).ForProbe(c.Spec.Run.Probe)
	}
	_, outs, err := c.Run(ctx)
	var failed *bench.FailedRun
	if f.jsonStream {
		// The end event, written once the run is analysed: its gap
		// and fairness are in it. A run cut short keeps what it measured.
		enc := json.NewEncoder(env.stdout)
		switch {
		case errors.As(err, &failed):
			_ = enc.Encode(result.Event{Event: "end", Data: &failed.Run.End})
		case len(outs) > 0:
			_ = enc.Encode(result.Event{Event: "end", Data: &outs[0].Run.End})
		}
		if err != nil {
			_ = enc.Encode(result.Event{Event: "error", Data: err.Error()})
		}
		return err
	}
	if errors.As(err, &failed) {
		// Cut short: its intervals were shown as they came; what it
		// measured is kept, marked with the reason.
		switch {
		case f.json:
			_ = encodeJSON(env.stdout, failed.Run)
		case failed.ID != 0:
			fmt.Fprintf(env.stdout, "stored as run %d in %s, marked failed\n", failed.ID, c.Store.Path())
		}
	}
	if err != nil && len(outs) == 0 {
		return err
	}
	run := outs[0].Run
	if err != nil { // the run is whole; the database did not take it
		if f.json {
			_ = encodeJSON(env.stdout, run)
		}
		return err
	}
	if f.json {
		return encodeJSON(env.stdout, run)
	}
	if run.Perftest != nil {
		bench.WritePerftest(env.stdout, run)
	} else if _, native := target.Driver.(*bench.Native); !native && (run.End.Latency != nil || run.End.UDP != nil) {
		bench.WriteToolProbe(env.stdout, run)
	} else if !native {
		fmt.Fprintf(env.stdout, "%s: %.2f Gbit/s received, %.2f Gbit/s sent, %d retransmits\n",
			c.Driver.Name(), run.Gbps(), run.End.SumSent.BitsPerSecond/1e9, run.End.SumSent.Retransmits)
	}
	for _, l := range explain.GapLines(run.End.Gap) { // the explanation leads with the dominant limit
		fmt.Fprintln(env.stdout, l)
	}
	if run.Fairness != nil {
		fmt.Fprintf(env.stdout, "Streams: %s\n", run.Fairness.Explanation)
	}
	if c.Store != nil {
		fmt.Fprintf(env.stdout, "stored as run %d in %s\n", outs[0].ID, c.Store.Path())
	}
	return nil
}

// spec turns the flags into the campaign to run: its parameters are built
// here, once, and every run of it, every driver and the agent's wire take
// them as they are.
func (f benchFlags) spec(cmd *cobra.Command, peer string) (bench.Spec, error) {
	f.omitGiven = cmd.Flags().Changed("omit")
	if err := f.checkTxn(cmd); err != nil {
		return bench.Spec{}, err
	}
	if err := f.checkProbe(cmd); err != nil {
		return bench.Spec{}, err
	}
	p, err := f.params()
	if err != nil {
		return bench.Spec{}, err
	}
	if err := f.txnParams(cmd, &p); err != nil {
		return bench.Spec{}, err
	}
	if f.repeat < 1 || f.repeat > 10000 {
		return bench.Spec{}, fmt.Errorf("--repeat %d: must be 1 to 10000", f.repeat)
	}
	s := bench.Spec{Driver: f.engine, Peer: peer, Label: f.label, Repeat: f.repeat, Run: p}
	if f.sweep != "" {
		if s.Streams, err = bench.ParseStreams(f.sweep); err != nil {
			return s, err
		}
	}
	if f.sweep != "" && f.streams != 1 {
		return s, errors.New("-P and --sweep-streams: give the stream counts in --sweep-streams only")
	}
	if f.sweepFlows != "" {
		if s.Streams, err = bench.ParseFlows(f.sweepFlows); err != nil {
			return s, err
		}
	}
	if f.engine == "native" {
		if err := checkShape(s); err != nil {
			return s, err
		}
	}
	if f.noStore && (f.db != "" || f.label != "") {
		return s, errors.New("--no-store keeps nothing: drop --db and --label, or --no-store")
	}
	if f.placements != "" {
		if f.affinity != "" {
			return s, errors.New("-A and --placements: give the placements to compare in --placements only")
		}
		if s.Placements, err = bench.ParsePlacements(f.placements); err != nil {
			return s, err
		}
	}
	return s, nil
}

// perftestTest is the perftest tool the flags ask for: --perftest-test,
// or ib_write_lat for --latency ("" leaves the driver's default).
func (f benchFlags) perftestTest() string {
	if f.perftest.Test == "" && f.latency {
		return "ib_write_lat"
	}
	return f.perftest.Test
}

// checkEngine refuses flags the chosen driver cannot honour, before
// anything runs: what each can do is what it registered (bench.Caps).
func (f benchFlags) checkEngine(p bench.Params) error {
	d, ok := bench.LookupDriver(f.engine)
	if !ok {
		return fmt.Errorf("--engine %q: choose one of %s", f.engine, strings.Join(bench.DriverNames(), ", "))
	}
	c := d.Caps
	switch {
	case c.LatencyOnly && !f.latency:
		return fmt.Errorf("--engine %s measures latency: add --latency", f.engine)
	case f.latency && !c.Latency:
		return fmt.Errorf("--latency runs with --engine %s, not %s", driversWith(func(c bench.Caps) bool { return c.Latency }), f.engine)
	case f.latency && f.udp && !c.LatencyUDP:
		return fmt.Errorf("--latency --udp (a ping-pong over UDP) runs with --engine %s, not %s", driversWith(func(c bench.Caps) bool { return c.LatencyUDP }), f.engine)
	case f.udp && !f.latency && !c.UDPStream:
		return fmt.Errorf("--udp (a UDP stream at -b) runs with --engine %s, not %s", driversWith(func(c bench.Caps) bool { return c.UDPStream }), f.engine)
	case !c.Perftest && f.perftest != (toolserver.PerftestParams{}):
		return errors.New("--perftest-* and --rdma-device are for --engine perftest")
	case c.NativeOptions:
		return nil
	case p.ZeroCopy != "":
		return fmt.Errorf("--zerocopy is the native engine's: drop it for --engine %s", f.engine)
	case p.Mode != result.Stream || p.Threads != 0 || p.SkipRxCopy != result.RxCopy:
		return fmt.Errorf("--rr, --crr, --threads and --skip-rx-copy are the native engine's: drop them for --engine %s", f.engine)
	case p.Congestion != "" || p.FQRate != 0:
		return fmt.Errorf("--congestion and --fq-rate are the native engine's: drop them for --engine %s", f.engine)
	}
	return nil
}

// driversWith names the drivers that can: "native or sockperf".
func driversWith(can func(bench.Caps) bool) string {
	var names []string
	for _, d := range bench.Drivers() {
		if can(d.Caps) {
			names = append(names, d.Name)
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// params turns the flags into one run's parameters.
func (f benchFlags) params() (bench.Params, error) {
	var p bench.Params
	p.Streams, p.Duration, p.Omit = f.streams, time.Duration(f.duration), time.Duration(f.omit)
	p.Interval, p.Direction, p.Congestion = time.Duration(f.interval), result.Send, f.congestion
	p.Perftest = f.perftest
	switch {
	case f.reverse && f.bidir:
		return p, errors.New("--reverse and --bidir: pick one")
	case f.reverse:
		p.Direction = result.Receive
	case f.bidir:
		p.Direction = result.Bidir
	}
	maxP := engine.MaxStreams
	if f.threads > 0 && f.threads < f.streams {
		maxP = engine.MaxFlows // flows that share threads are bounded as connections
	}
	if f.streams < 1 || f.streams > maxP {
		return p, fmt.Errorf("-P %d: must be 1 to %d (up to %d with --threads fewer than the streams)", f.streams, maxP, engine.MaxFlows)
	}
	// Checked here, before any connection: the agent would refuse them
	// only once the test is set up.
	if f.duration == 0 {
		return p, errors.New("-t 0: give a measured time above 0, e.g. -t 10 (a run never goes on forever, as iperf3's -t 0 does)")
	}
	if iv := time.Duration(f.interval); iv < agent.MinInterval || iv > agent.MaxInterval {
		return p, fmt.Errorf("-i %s: must be %s to %s", iv, agent.MinInterval, agent.MaxInterval)
	}
	var err error
	if f.affinity != "" {
		if p.Pinning, err = agent.ParsePinning(f.affinity); err != nil {
			return p, err
		}
	}
	if p.ZeroCopy, err = result.ParseZeroCopy(f.zerocopy); err != nil {
		return p, fmt.Errorf("--zerocopy: %w", err)
	}
	if f.window != "" {
		w, err := parseSize(f.window, 1024)
		if err != nil || w > engine.MaxWindow {
			return p, fmt.Errorf("--window %q: give bytes with an optional K, M or G (powers of 1024), at most 2G-1", f.window)
		}
		p.Window = int(w)
	}
	if p.Probe, err = f.probe(); err != nil {
		return p, err
	}
	if f.latency && !f.omitGiven {
		p.Omit = 400 * time.Millisecond // sockperf's warm-up
	}
	if f.fqRate != "" {
		r, err := parseSize(f.fqRate, 1000)
		if err != nil {
			return p, fmt.Errorf("--fq-rate %q: give bits per second with an optional K, M, G or T (powers of 1000)", f.fqRate)
		}
		p.FQRate = r
	}
	return p, nil
}

// benchToken reads the token from the file, or from $LINERATE_TOKEN.
func benchToken(file string) ([]byte, error) {
	if file != "" {
		return agent.ReadTokenFile(file)
	}
	if v, ok := os.LookupEnv(agent.TokenEnv); ok {
		return agent.CheckToken([]byte(v))
	}
	return nil, fmt.Errorf("no token: pass --token-file FILE or set %s, with the token the agent was started with (its --token-file; make one with 'linerate serve --new-token-file FILE')", agent.TokenEnv)
}

// parseSize reads a number with an optional K, M, G or T multiplier.
func parseSize(s string, base float64) (uint64, error) {
	s = strings.TrimSpace(s)
	mult := 1.0
	if s != "" {
		switch strings.ToUpper(s[len(s)-1:]) {
		case "K":
			mult = base
		case "M":
			mult = base * base
		case "G":
			mult = base * base * base
		case "T":
			mult = base * base * base * base
		}
		if mult != 1 {
			s = s[:len(s)-1]
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || math.IsInf(v*mult, 0) || v*mult > math.MaxInt64 {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	return uint64(math.Round(v * mult)), nil
}

// seconds is a flag holding a duration written as seconds ("10", "0.5",
// as iperf3 takes them) or as a Go duration ("1m30s").
type seconds time.Duration

func (s *seconds) String() string { return time.Duration(*s).String() }
func (s *seconds) Type() string   { return "duration" }
func (s *seconds) Set(v string) error {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f < 0 || f > 1e6 {
			return fmt.Errorf("%q: out of range", v)
		}
		*s = seconds(time.Duration(f * float64(time.Second)))
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return fmt.Errorf("%q: give seconds (10) or a duration (1m30s)", v)
	}
	*s = seconds(d)
	return nil
}

// runLabClient is `linerate bench ADDR --lab-client`, which a lab run
// starts in host a: the test on stdin, the token in $LINERATE_TOKEN, each
// event a JSON line on stdout.
func runLabClient(cmd *cobra.Command, env *cliEnv, peer string) error {
	tok, err := benchToken("")
	if err != nil {
		return err
	}
	ctx, stop := interruptible(cmd)
	defer stop()
	return bench.RunLabClient(ctx, peer, env.stdin, env.stdout, tok)
}
