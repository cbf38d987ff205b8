package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/fleet"
	"github.com/linerate/linerate/internal/fleet/launch"
	"github.com/linerate/linerate/internal/fleet/runner"
	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/store"
)

type fleetFlags struct {
	hostsFile, labName, k8s string
	slurm                   bool
	only                    []string
	pattern                 string
	design                  string
	partners                int
	seed                    int64
	plan                    bool
	duration                seconds
	streams                 int
	concurrent              bool
	threshold               float64
	retests                 int
	label                   string
	tokenFile               string
	sshConfig               string
	port                    int
	db                      string
	json                    bool
	// engine is what runs each test: native (the agents) or perftest
	// (ib_write_bw, in a lab's hosts); thresholdSet says --threshold was
	// given.
	engine       string
	thresholdSet bool
	// latency makes the perftest engine's tests ib_write_lat.
	latency bool
}

func newFleetCmd(env *cliEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "The pair matrix across many hosts: which host or path is the slow one",
	}
	cmd.AddCommand(newFleetRunCmd(env))
	return cmd
}

func newFleetRunCmd(env *cliEnv) *cobra.Command {
	f := fleetFlags{duration: seconds(10 * time.Second), streams: 1, threshold: fleet.DefaultThresholdPct, retests: fleet.DefaultRetests, port: agent.DefaultPort}
	cmd := &cobra.Command{
		Use:   "run (--hosts FILE | --lab NAME | --slurm | --k8s SERVICE) [--design all|sampled] [--partners K] [--pattern pairs|ring|star:HOST|incast:HOST] [--concurrent] [-t DUR] [-P N] [--threshold PCT] [--engine native|perftest [--latency]] [--plan] [--json]",
		Short: "Run the pair matrix across hosts, and blame the slow host or path",
		Long: `run tests pairs of hosts in both directions and blames the slow host or path.

Designs (--design):
  all       every pair, in the rounds of the circle method (n-1 rounds of n/2
            disjoint pairs, n rounds for odd n; each round runs its pairs one
            way, then the other): n(n-1) tests. The default up to 16 hosts.
  sampled   each host with K partners (--partners, default 4): a random
            regular graph drawn with --seed (recorded), K rounds, nK tests;
            then each suspect against hosts already proven good, until it is
            cleared or blamed. The default beyond 16 hosts.
By default one test runs at a time, which isolates each link; --concurrent
runs each leg's disjoint tests at once, which loads the fabric as real jobs
do and takes one test time per leg. --plan prints the schedule, the number
of tests and the time the run will take, and runs nothing.

--pattern incast:HOST is fan-in: every other host sends to HOST at once, in one
leg (2 to 64 senders), as storage and all-reduce traffic do to a NIC. The
result is each sender's goodput and its share of the fair share (a sender
below --threshold percent of it is short, named with how much less it got),
their sum at the receiver, Jain's fairness index across the senders, the
senders' retransmits and the receiver's NIC and qdisc drops over the run.
Nobody is blamed and nothing is tried again: in incast the shares are the
point. The agents fleet run starts give HOST's 'serve --max-clients' the
number of senders; agents running already (--token-file, --k8s) must have
been started so, or the senders they refuse say so.

With --engine perftest each test is ib_write_bw (RDMA), its server and client
started in the two hosts of a lab (--lab only: the agents run no perftest
client), and ClusterKit's rule for RDMA is the default: a test below 93% of the
fleet's best test is bad (--threshold changes the percentage). With --latency
each test is ib_write_lat, and a test above 2.1 times the fleet's best typical
latency is bad; the matrix shows each direction's typical latency, the document
its typical and 99th-percentile latencies. The RDMA matrix's bad pairs are
re-tested as ClusterKit does, by halving: a host in two or more bad pairs is a
suspect; each round re-tests the half of the suspects with the most bad pairs
against hosts known good, and blames or clears each of them, until no bad pair
is left unexplained (a bad pair whose two ends were cleared is its path's).

A test below --threshold percent (default 90) of the fleet's median test is
slow and is tried again (--retests, in a leg of its own, at once with other
re-tests under --concurrent). Every test places its threads by one rule:
where two hosts share a kernel (a lab), never both ends on one CPU. A test
whose own record shows contention (both ends on one CPU, or a CPU its
threads needed busy with other work) is tried again and, if it stays slow
that way, is inconclusive: reported, never blamed. A host slow with most of
its partners when it sends is blamed on its send side (or receive side, or
both); a slow test no host explains, tried again twice more, is blamed on
its path. A test that fails (an unreachable host, an agent that died) is
recorded with its reason and the run goes on. Exit status 1 when a host or
a path is blamed.

The hosts come from one of:
  --hosts FILE    one host per line: NAME ADDRESS [SSH-TARGET] ('#' comments);
                  agents are started over ssh (your ~/.ssh/config applies)
  --lab NAME      a lab of many hosts ('linerate lab up --name NAME --hosts 6')
  --slurm         the nodes of this Slurm allocation (salloc/sbatch -N K);
                  agents are started with srun
  --k8s SERVICE   the agents of a Kubernetes headless Service (the DaemonSet in
                  deploy/kubernetes); needs --token-file
--only NAME,… keeps some of them (the pair of a slow path, to test it again).

Each test is a normal native bench stored in the results database with the
fleet's --label; 'linerate report --fleet FILE' draws the --json output.
Progress goes to standard error, also with --json.

The agents: with --hosts, --lab and --slurm, fleet run starts 'linerate serve'
on every host (copying the binary over ssh where it is missing; srun runs it
from the same path on every node) with a token made for this run alone, which
goes to each agent through its launcher's standard input, and stops them all
when the run ends, Ctrl-C included. With --token-file (and --k8s) the agents
run already with that token. The controller runs no test itself: it asks the
agent of each test's first host to test toward the second host's agent and to
stream the result back (one test at a time per agent, each bounded by the
agent). A host whose agent does not start or dies is marked failed with the
reason, and the run goes on without it.`,
		Example: `  linerate lab up --name rack --hosts 6 && linerate fleet run --lab rack
  linerate fleet run --hosts hosts.txt --concurrent -t 10 -P 4 --json > fleet.json
  linerate fleet run --hosts big.txt --design sampled --partners 4 --concurrent --plan
  salloc -N 16 linerate fleet run --slurm --concurrent
  linerate fleet run --lab rack --pattern incast:h06 -t 5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.thresholdSet = cmd.Flags().Changed("threshold")
			return runFleet(cmd, env, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.hostsFile, "hosts", "", "a host list: NAME ADDRESS [SSH-TARGET] per line")
	fl.StringVar(&f.labName, "lab", "", "a lab of many hosts")
	fl.BoolVar(&f.slurm, "slurm", false, "the nodes of this Slurm allocation")
	fl.StringVar(&f.k8s, "k8s", "", "a Kubernetes headless Service of agents")
	fl.StringSliceVar(&f.only, "only", nil, "only these hosts of the list, by name (comma-separated, 2 or more)")
	fl.StringVar(&f.pattern, "pattern", fleet.PatternPairs, "pairs (every pair), ring, star:HOST (design all), or incast:HOST (every other host sends to HOST at once)")
	fl.StringVar(&f.design, "design", "", "all (every pair) or sampled (--partners each); default all up to 16 hosts, sampled beyond")
	fl.IntVar(&f.partners, "partners", 0, "partners of each host in the sampled design (default 4)")
	fl.Int64Var(&f.seed, "seed", 0, "the sampled design's random seed (default: drawn, and printed)")
	fl.BoolVar(&f.plan, "plan", false, "print the schedule, the number of tests and the time it will take; run nothing")
	fl.VarP(&f.duration, "time", "t", "length of each test (seconds, or a duration)")
	fl.IntVarP(&f.streams, "streams", "P", 1, "streams per test (1 to 128)")
	fl.BoolVar(&f.concurrent, "concurrent", false, "run each leg's disjoint tests at once")
	fl.Float64Var(&f.threshold, "threshold", fleet.DefaultThresholdPct, "a test below this percentage of the median test is slow")
	fl.IntVar(&f.retests, "retests", fleet.DefaultRetests, "how many times a slow test is tried again (0: never)")
	fl.StringVar(&f.label, "label", "", "label of the fleet's runs in the results database (default fleet-DATE-TIME)")
	fl.StringVar(&f.tokenFile, "token-file", "", "the agents are already running with this token (--k8s, or agents you started)")
	fl.StringVar(&f.sshConfig, "ssh-config", "", "an ssh_config for --hosts (ssh -F); default: ssh's own (~/.ssh/config)")
	fl.IntVarP(&f.port, "port", "p", agent.DefaultPort, "the agents' TCP port")
	fl.StringVar(&f.db, "db", "", "the results database (default "+store.DefaultPath()+")")
	fl.BoolVar(&f.json, "json", false, "print the result as a linerate.fleet/v1 JSON document")
	fl.BoolVar(&f.latency, "latency", false, "with --engine perftest: ib_write_lat, a test bad above 2.1 times the best typical latency (ClusterKit's rule for RDMA)")
	fl.StringVar(&f.engine, "engine", "native", "native (the agents' own engine), or perftest: ib_write_bw between a lab's hosts, a test bad below 93% of the best (ClusterKit's rule for RDMA) unless --threshold says otherwise")
	// --parallel was --concurrent's name until streams and "at once" got
	// one name each across commands (bench -P/--streams); kept, hidden.
	fl.SetNormalizeFunc(aliases(map[string]string{"parallel": "concurrent"}))
	return cmd
}

// aliases makes a flag set read old flag names as their new ones: hidden
// spellings kept for a release, one flag each (pflag normalizes a name
// before it looks the flag up).
func aliases(old map[string]string) func(*pflag.FlagSet, string) pflag.NormalizedName {
	return func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if n, ok := old[name]; ok {
			return pflag.NormalizedName(n)
		}
		return pflag.NormalizedName(name)
	}
}

// fleetSource is where the hosts come from, and what starts their agents.
type fleetSource struct {
	kind  string // "hosts", "lab", "slurm" or "k8s"
	hosts []fleet.Host
	ssh   *launch.SSH
	slurm *launch.Slurm
	lab   *launch.Lab
}

func (f *fleetFlags) options() (fleet.Options, error) {
	p, err := fleet.ParsePattern(f.pattern)
	if err != nil {
		return fleet.Options{}, err
	}
	if f.retests < 0 || f.retests > 5 {
		return fleet.Options{}, fmt.Errorf("--retests %d: 0 to 5", f.retests)
	}
	retests := f.retests
	if retests == 0 {
		retests = -1 // fleet.Options: 0 is the default, negative none
	}
	if f.threshold <= 0 || f.threshold >= 100 {
		return fleet.Options{}, fmt.Errorf("--threshold %g: a percentage between 0 and 100", f.threshold)
	}
	if time.Duration(f.duration) < time.Second {
		return fleet.Options{}, fmt.Errorf("-t %s: at least 1s per test", time.Duration(f.duration))
	}
	if f.streams < 1 || f.streams > 128 {
		return fleet.Options{}, fmt.Errorf("-P %d: 1 to 128 streams", f.streams)
	}
	if f.partners < 0 {
		return fleet.Options{}, fmt.Errorf("--partners %d: 2 or more", f.partners)
	}
	if f.seed < 0 {
		return fleet.Options{}, fmt.Errorf("--seed %d: a positive number", f.seed)
	}
	if f.port < 1 || f.port > 65535 {
		return fleet.Options{}, fmt.Errorf("--port %d: 1 to 65535", f.port)
	}
	label := f.label
	if label == "" {
		label = "fleet-" + time.Now().Format("20060102-150405")
	}
	o := fleet.Options{Pattern: p, Design: f.design, Partners: f.partners, Seed: f.seed, Duration: time.Duration(f.duration),
		Streams: f.streams, Parallel: f.concurrent, ThresholdPct: f.threshold, Retests: retests, Label: label}
	switch f.engine {
	case "native":
	case "perftest":
		if p.Kind == fleet.PatternIncast {
			return fleet.Options{}, errors.New("--pattern incast runs the agents' native engine: drop --engine perftest")
		}
		if f.labName == "" {
			return fleet.Options{}, errors.New("--engine perftest runs over a lab (--lab NAME): over --hosts, --slurm and --k8s the agents would have to run perftest clients, which they do not")
		}
		o.FromBest, o.Halving = true, true
		if !f.thresholdSet {
			o.ThresholdPct = fleet.RDMAThresholdPct
		}
		if f.latency {
			if f.thresholdSet {
				return fleet.Options{}, fmt.Errorf("--threshold is a share of the best bandwidth; with --latency a test is bad above %g times the best latency", fleet.RDMALatencyFactor)
			}
			o.Latency = true
		}
	default:
		return fleet.Options{}, fmt.Errorf("--engine %q: native or perftest", f.engine)
	}
	if f.latency && f.engine != "perftest" {
		return fleet.Options{}, errors.New("--latency goes with --engine perftest (ib_write_lat between a lab's hosts)")
	}
	return o, nil
}

// source resolves the one host source given.
func (f *fleetFlags) source(ctx context.Context) (*fleetSource, error) {
	var given []string
	for name, set := range map[string]bool{"--hosts": f.hostsFile != "", "--lab": f.labName != "", "--slurm": f.slurm, "--k8s": f.k8s != ""} {
		if set {
			given = append(given, name)
		}
	}
	switch len(given) {
	case 0:
		return nil, errors.New("say which hosts: --hosts FILE, --lab NAME, --slurm or --k8s SERVICE")
	case 1:
	default:
		return nil, fmt.Errorf("give one of --hosts, --lab, --slurm and --k8s, not %s", strings.Join(given, " and "))
	}
	if f.sshConfig != "" && f.hostsFile == "" {
		return nil, errors.New("--ssh-config goes with --hosts (agents started over ssh)")
	}
	switch {
	case f.hostsFile != "":
		file, err := os.Open(f.hostsFile)
		if err != nil {
			return nil, fmt.Errorf("--hosts: %w", err)
		}
		defer file.Close()
		hosts, err := fleet.ParseHosts(f.hostsFile, file)
		if err != nil {
			return nil, err
		}
		s := &launch.SSH{}
		if f.sshConfig != "" {
			s.Options = []string{"-F", f.sshConfig}
		}
		return &fleetSource{kind: "hosts", hosts: hosts, ssh: s}, nil
	case f.labName != "":
		members, err := lab.Members(f.labName)
		if err != nil {
			return nil, err
		}
		src := &fleetSource{kind: "lab", lab: &launch.Lab{Name: f.labName}}
		for _, m := range members {
			src.hosts = append(src.hosts, fleet.Host{Name: string(m.Host), Address: m.Address})
		}
		return src, nil
	case f.slurm:
		s := &launch.Slurm{}
		nodes, err := s.Nodes(ctx)
		if err != nil {
			return nil, err
		}
		src := &fleetSource{kind: "slurm", slurm: s}
		for _, n := range nodes {
			h := fleet.Host{Name: n.Name, Address: n.Addr}
			if err := h.Validate(); err != nil {
				return nil, fmt.Errorf("node %s of the Slurm allocation: %w", n.Name, err)
			}
			src.hosts = append(src.hosts, h)
		}
		if len(src.hosts) < 2 {
			return nil, fmt.Errorf("the allocation has %s: a fleet needs at least 2 (salloc -N 2 or more)", counted(len(src.hosts), "node"))
		}
		return src, nil
	default:
		if f.tokenFile == "" {
			return nil, errors.New("--k8s needs --token-file: the agents of the DaemonSet run with the token of its Secret")
		}
		hosts, err := fleet.K8sHosts(ctx, net.DefaultResolver, f.k8s)
		if err != nil {
			return nil, err
		}
		return &fleetSource{kind: "k8s", hosts: hosts}, nil
	}
}

// newFleetRunner starts the agents of src (unless --token-file says they
// run already), checks that each answers, and returns the Runner of the
// fleet's tests, the hosts (named after their agents' hosts for --k8s) and
// a stop function that stops every agent it started; stop must be called
// even when it fails.
func newFleetRunner(ctx context.Context, env *cliEnv, src *fleetSource, f fleetFlags, opts fleet.Options) (*runner.Runner, []fleet.Host, func(), error) {
	var closers []func()
	stop := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	token, err := fleetToken(f.tokenFile)
	if err != nil {
		return nil, nil, stop, err
	}
	var dial agent.DialFunc
	if src.kind == "lab" {
		// The lab's hosts are reached from its switch, not from here.
		if dial, err = lab.Dialer(f.labName, lab.Switch); err != nil {
			return nil, nil, stop, err
		}
	}
	agents, err := runner.New(ctx, src.hosts, f.port, token, dial)
	if err != nil {
		return nil, nil, stop, err
	}
	if opts.Pattern.Kind == fleet.PatternIncast {
		// The receiver takes every sender's test at once.
		agents.MaxClients = map[string]int{opts.Pattern.Center: len(src.hosts) - 1}
	}
	say := func(format string, args ...any) { fmt.Fprintf(env.stderr, format+"\n", args...) }
	if f.tokenFile == "" {
		l, closeL, err := fleetLauncher(src)
		if err != nil {
			return nil, nil, stop, err
		}
		closers = append(closers, closeL, agents.Stop)
		say("starting an agent on each of %d hosts (%s)", len(src.hosts), src.kind)
		agents.Launch(ctx, l, opts.Duration, func(h fleet.Host, err error) {
			if err != nil {
				fmt.Fprintf(env.stderr, "linerate: %s: %s\n", h.Name, oneLine(err.Error()))
			}
		})
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, stop, fmt.Errorf("fleet run interrupted while starting the agents: %w", context.Cause(ctx))
	}
	agents.Probe(ctx)
	hosts := src.hosts
	if src.kind == "k8s" {
		hosts = agents.NameByHostname()
	}
	for _, h := range hosts {
		if err := agents.Down(h); err != nil && f.tokenFile != "" {
			fmt.Fprintf(env.stderr, "linerate: %s: %s\n", h.Name, oneLine(err.Error()))
		}
	}
	st, err := store.Open(ctx, f.db)
	if err != nil {
		return nil, nil, stop, err
	}
	closers = append(closers, func() { st.Close() })
	r := &runner.Runner{Agents: agents, Store: st}
	var notes []string
	r.Doctors, notes = agents.FetchDoctors(ctx)
	for _, n := range notes {
		fmt.Fprintf(env.stderr, "linerate: note: %s\n", oneLine(n))
	}
	return r, hosts, stop, nil
}

// fleetToken reads --token-file, or makes the fleet run's one-time token.
func fleetToken(path string) ([]byte, error) {
	if path != "" {
		return agent.ReadTokenFile(path)
	}
	return agent.GenerateToken()
}

// fleetLauncher is what starts the agents of src, and what to close after.
func fleetLauncher(src *fleetSource) (runner.Launcher, func(), error) {
	bin, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("finding this linerate binary to start the agents with: %w", err)
	}
	switch src.kind {
	case "lab":
		return runner.LabLauncher{Lab: src.lab, Bin: bin}, func() { src.lab.Close() }, nil
	case "hosts":
		return runner.SSHLauncher{SSH: src.ssh, Bin: bin}, func() {}, nil
	case "slurm":
		return runner.SlurmLauncher{Slurm: src.slurm, Bin: bin}, func() {}, nil
	}
	return nil, nil, fmt.Errorf("%s: the agents run already; give their --token-file", src.kind)
}

func runFleet(cmd *cobra.Command, env *cliEnv, f fleetFlags) error {
	opts, err := f.options()
	if err != nil {
		return err
	}
	ctx, stop := interruptible(cmd)
	defer stop()
	src, err := f.source(ctx)
	if err != nil {
		return err
	}
	if src.hosts, err = onlyHosts(src.hosts, f.only); err != nil {
		return err
	}
	// The plan checks the options against the hosts, and is what --plan
	// prints: nothing starts before it holds.
	plan, err := fleet.NewPlan(src.hosts, opts, startCost(src.kind, f.tokenFile != ""))
	if err != nil {
		return err
	}
	if f.plan {
		if f.json {
			return writeJSON(env.stdout, plan)
		}
		return plan.WriteText(env.stdout)
	}
	opts.Design, opts.Seed, opts.Partners = plan.Design, plan.Seed, plan.Partners
	// The engine: the agents' own (native), or perftest in a lab's hosts.
	var rn fleet.Runner
	var agents *runner.Agents
	hosts := src.hosts
	if f.engine == "perftest" {
		lp := &runner.LabPerftest{Lab: f.labName}
		if f.latency {
			lp.Params.Test = "ib_write_lat"
		}
		rn = lp
	} else {
		r, up, stopAgents, err := newFleetRunner(ctx, env, src, f, opts)
		defer stopAgents()
		if err != nil {
			return err
		}
		rn, hosts, agents = r, up, r.Agents
	}
	if plan.Design == fleet.DesignSampled {
		fmt.Fprintf(env.stderr, "design sampled: %d partners each, seed %d (--seed %d draws this sample again)\n", plan.Partners, plan.Seed, plan.Seed)
	}
	opts.Progress = func(ev fleet.Event) {
		what := fmt.Sprintf("%.2f Gbit/s", ev.Gbps)
		if opts.Latency {
			what = fmt.Sprintf("%.2f µs", ev.LatencyUs)
		}
		if ev.Err != nil {
			what = "failed: " + oneLine(ev.Err.Error())
		} else if ev.Contention != "" {
			what += " (contended: " + oneLine(ev.Contention) + ")"
		}
		kind := ""
		switch {
		case ev.Retest:
			kind = " (re-test)"
		case ev.Probe:
			kind = " (probe)"
		case ev.Control:
			kind = " (control, for the next re-test)"
		}
		fmt.Fprintf(env.stderr, "[%d/%d] %s → %s%s: %s\n", ev.Done, ev.Total, ev.From, ev.To, kind, what)
	}
	// A host whose agent did not start is failed with its own reason,
	// even where its every test is with another such host.
	for _, h := range hosts {
		if agents == nil {
			break // perftest: no agents
		}
		if err := agents.Down(h); err != nil {
			if opts.Down == nil {
				opts.Down = map[string]error{}
			}
			opts.Down[h.Name] = err
		}
	}
	res, runErr := fleet.Run(ctx, hosts, opts, rn)
	if res != nil {
		adv := advisor{f: f, src: src, agents: agents, bin: adviceBinary()}
		for i := range res.Outliers {
			res.Outliers[i].Next = adv.next(res, res.Outliers[i])
		}
		if f.json {
			if err := writeJSON(env.stdout, res); err != nil {
				return err
			}
		} else if err := res.WriteText(env.stdout); err != nil {
			return err
		}
	}
	if runErr != nil {
		return runErr
	}
	if len(res.Outliers) > 0 {
		return errFindings
	}
	return nil
}

// onlyHosts keeps the hosts named in only (all when it is empty), in the
// list's order.
func onlyHosts(hosts []fleet.Host, only []string) ([]fleet.Host, error) {
	if len(only) == 0 {
		return hosts, nil
	}
	keep := map[string]bool{}
	for _, n := range only {
		keep[n] = true
	}
	var out []fleet.Host
	for _, h := range hosts {
		if keep[h.Name] {
			out = append(out, h)
			delete(keep, h.Name)
		}
	}
	if len(keep) > 0 {
		missing := slices.Sorted(maps.Keys(keep))
		return nil, fmt.Errorf("--only: no host is called %s", strings.Join(missing, ", "))
	}
	if len(out) < 2 {
		return nil, fmt.Errorf("--only %s: a fleet needs at least 2 hosts", strings.Join(only, ","))
	}
	return out, nil
}

// startCost is what starting the agents of a source takes, for --plan:
// about 3 s a host over ssh (a connection to install or find the binary,
// one to start the agent, its probe and doctor report), 2 s with srun,
// half a second in a lab or where the agents run already; runner.MaxAtOnce
// at a time.
func startCost(kind string, running bool) fleet.StartCost {
	c := fleet.StartCost{AtOnce: runner.MaxAtOnce}
	switch {
	case running || kind == "k8s":
		c.PerHostS, c.How = 0.5, "running already"
	case kind == "hosts":
		c.PerHostS, c.How = 3, "ssh"
	case kind == "slurm":
		c.PerHostS, c.How = 2, "srun"
	default:
		c.PerHostS, c.How = 0.5, "lab"
	}
	c.How += fmt.Sprintf(", %d at a time", c.AtOnce)
	return c
}

// advisor writes what to run next about an outlier, as it works when
// printed: with the host's interface, through the lab, ssh or srun that
// reaches the host, and the fleet run that tests a slow path again.
type advisor struct {
	f      fleetFlags
	src    *fleetSource
	agents *runner.Agents
	bin    string // this linerate, as a command
}

// adviceBinary is this linerate as a command: "linerate" when that is
// what PATH finds, else its absolute path.
func adviceBinary() string {
	exe, err := os.Executable()
	if err != nil {
		return "linerate"
	}
	exe, _ = filepath.EvalSymlinks(exe)
	if p, err := exec.LookPath("linerate"); err == nil {
		if p, err = filepath.EvalSymlinks(p); err == nil && p == exe {
			return "linerate"
		}
	}
	return shellWord(exe)
}

func (a advisor) next(res *fleet.Result, o fleet.Outlier) []string {
	var h fleet.Host
	for _, x := range res.Hosts {
		if x.Name == o.Name {
			h = x
		}
	}
	switch {
	case o.Kind == fleet.KindHost && o.Cause == fleet.CauseSlow:
		doctor := "doctor"
		if h.Iface != "" {
			doctor += " --iface " + h.Iface
		}
		return []string{a.onHost(h, doctor) + "   # its NIC, PCIe, IRQs, optics and shapers"}
	case o.Kind == fleet.KindHost && a.src.kind == "hosts":
		return []string{fmt.Sprintf("ssh %s-o BatchMode=yes -o ConnectTimeout=5 %s true   # can this machine reach it?", a.sshOptions(), shellWord(sshDest(h)))}
	case o.Kind == fleet.KindPath && len(o.Partners) == 2:
		return []string{fmt.Sprintf("%s --only %s,%s --retests 2   # the path again, both ways, alone", a.fleetCommand(), o.Partners[0], o.Partners[1])}
	}
	return nil
}

// onHost is a linerate command line run on host h.
func (a advisor) onHost(h fleet.Host, args string) string {
	switch a.src.kind {
	case "lab":
		return fmt.Sprintf("%s lab exec %s %s -- %s %s", a.bin, a.f.labName, h.Name, a.bin, args)
	case "hosts":
		bin := "linerate"
		if a.agents != nil {
			if b := a.agents.Binary(h); b != "" {
				bin = shellWord(b)
			}
		}
		return fmt.Sprintf("ssh %s%s %s %s", a.sshOptions(), shellWord(sshDest(h)), bin, args)
	case "slurm":
		return fmt.Sprintf("srun -N1 -n1 -w %s %s %s", h.Name, a.bin, args)
	}
	return fmt.Sprintf("linerate %s   # on %s (its agent's pod: kubectl exec)", args, h.Name)
}

func (a advisor) sshOptions() string {
	if a.f.sshConfig != "" {
		return "-F " + shellWord(a.f.sshConfig) + " "
	}
	return ""
}

func sshDest(h fleet.Host) string {
	if h.SSH != "" {
		return h.SSH
	}
	return h.Address
}

// fleetCommand is this fleet run's command line up to its hosts' options.
func (a advisor) fleetCommand() string {
	f := a.f
	cmd := a.bin + " fleet run "
	switch a.src.kind {
	case "lab":
		cmd += "--lab " + f.labName
	case "hosts":
		cmd += "--hosts " + shellWord(f.hostsFile)
		if f.sshConfig != "" {
			cmd += " --ssh-config " + shellWord(f.sshConfig)
		}
	case "slurm":
		cmd += "--slurm"
	default:
		cmd += "--k8s " + f.k8s
	}
	if f.tokenFile != "" {
		cmd += " --token-file " + shellWord(f.tokenFile)
	}
	if f.port != agent.DefaultPort {
		cmd += " -p " + strconv.Itoa(f.port)
	}
	if f.streams != 1 {
		cmd += " -P " + strconv.Itoa(f.streams)
	}
	if f.engine == "perftest" {
		cmd += " --engine perftest"
		if f.latency {
			cmd += " --latency"
		}
	}
	return cmd + " -t " + strconv.FormatFloat(time.Duration(f.duration).Seconds(), 'f', -1, 64)
}

// shellWord quotes s for a POSIX shell when it needs it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./@:,+=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
