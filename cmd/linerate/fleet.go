package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

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
	pattern                 string
	duration                seconds
	streams                 int
	parallel                bool
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
	// given, else perftest takes ClusterKit's rule for RDMA.
	engine       string
	thresholdSet bool
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
		Use:   "run (--hosts FILE | --lab NAME | --slurm | --k8s SERVICE) [--pattern pairs|ring|star:HOST] [-t DUR] [-P N] [--parallel] [--threshold PCT] [--engine native|perftest] [--json]",
		Short: "Run the pair matrix across hosts, and blame the slow host or path",
		Long: `run tests every pair of hosts in both directions, in the rounds of the circle
method (n-1 rounds of n/2 disjoint pairs, n rounds for odd n; each round runs
its pairs one way, then the other). By default one test runs at a time, which
isolates each link; --parallel runs each round's pairs at once, which loads
the fabric as real jobs do and takes 2(n-1) test times instead of n(n-1).

With --engine perftest each test is ib_write_bw (RDMA), its server and client
started in the two hosts of a lab (--lab only: the agents run no perftest
client), and ClusterKit's rule for RDMA is the default: a test below 93% of the
fleet's best test is bad (--threshold changes the percentage).

A test below --threshold percent (default 90) of the fleet's median test is
slow and is tried again (--retests, one at a time). A host slow with most of
its partners when it sends is blamed on its send side (or receive side, or
both); other slow tests are blamed on their path. A test that fails (an
unreachable host, an agent that died) is recorded with its reason and the
matrix goes on. Exit status 1 when there is an outlier.

The hosts come from one of:
  --hosts FILE    one host per line: NAME ADDRESS [SSH-TARGET] ('#' comments);
                  agents are started over ssh (your ~/.ssh/config applies)
  --lab NAME      a lab of many hosts ('linerate lab up --name NAME --hosts 6')
  --slurm         the nodes of this Slurm allocation (salloc/sbatch -N K);
                  agents are started with srun
  --k8s SERVICE   the agents of a Kubernetes headless Service (the DaemonSet in
                  deploy/kubernetes); needs --token-file

Each test is a normal native bench stored in the results database with the
fleet's --label; 'linerate report --fleet FILE' draws the --json output.

The agents: with --hosts, --lab and --slurm, fleet run starts 'linerate serve'
on every host (copying the binary over ssh where it is missing; srun runs it
from the same path on every node) with a token made for this run alone, which
goes to each agent through its launcher's standard input, and stops them all
when the run ends, Ctrl-C included. With --token-file (and --k8s) the agents
run already with that token. The controller runs no test itself: it asks the
agent of each test's first host to test toward the second host's agent and to
stream the result back (one test at a time per agent, each bounded by the
agent). A host whose agent does not start or dies is marked failed with the
reason, and the matrix goes on without it.`,
		Example: `  linerate lab up --name rack --hosts 6 && linerate fleet run --lab rack
  linerate fleet run --hosts hosts.txt --parallel -t 10 -P 4 --json > fleet.json
  salloc -N 16 linerate fleet run --slurm --parallel`,
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
	fl.StringVar(&f.pattern, "pattern", fleet.PatternPairs, "pairs (every pair), ring, or star:HOST")
	fl.VarP(&f.duration, "time", "t", "length of each test (seconds, or a duration)")
	fl.IntVarP(&f.streams, "streams", "P", 1, "streams per test (1 to 128)")
	fl.BoolVar(&f.parallel, "parallel", false, "run each round's disjoint pairs at once")
	fl.Float64Var(&f.threshold, "threshold", fleet.DefaultThresholdPct, "a test below this percentage of the median test is slow")
	fl.IntVar(&f.retests, "retests", fleet.DefaultRetests, "how many times a slow test is tried again (0: never)")
	fl.StringVar(&f.label, "label", "", "label of the fleet's runs in the results database (default fleet-DATE-TIME)")
	fl.StringVar(&f.tokenFile, "token-file", "", "the agents are already running with this token (--k8s, or agents you started)")
	fl.StringVar(&f.sshConfig, "ssh-config", "", "an ssh_config for --hosts (ssh -F); default: ssh's own (~/.ssh/config)")
	fl.IntVarP(&f.port, "port", "p", agent.DefaultPort, "the agents' TCP port")
	fl.StringVar(&f.db, "db", "", "the results database (default "+store.DefaultPath()+")")
	fl.BoolVar(&f.json, "json", false, "print the result as a linerate.fleet/v1 JSON document")
	fl.StringVar(&f.engine, "engine", "native", "native (the agents' own engine), or perftest: ib_write_bw between a lab's hosts, a test bad below 93% of the best (ClusterKit's rule for RDMA) unless --threshold says otherwise")
	return cmd
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
	if f.port < 1 || f.port > 65535 {
		return fleet.Options{}, fmt.Errorf("--port %d: 1 to 65535", f.port)
	}
	label := f.label
	if label == "" {
		label = "fleet-" + time.Now().Format("20060102-150405")
	}
	o := fleet.Options{Pattern: p, Duration: time.Duration(f.duration), Streams: f.streams, Parallel: f.parallel,
		ThresholdPct: f.threshold, Retests: retests, Label: label}
	switch f.engine {
	case "native":
	case "perftest":
		if f.labName == "" {
			return fleet.Options{}, errors.New("--engine perftest runs over a lab (--lab NAME): over --hosts, --slurm and --k8s the agents would have to run perftest clients, which they do not")
		}
		o.FromBest = true
		if !f.thresholdSet {
			o.ThresholdPct = fleet.RDMAThresholdPct
		}
	default:
		return fleet.Options{}, fmt.Errorf("--engine %q: native or perftest", f.engine)
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
			return nil, fmt.Errorf("the allocation has %d node: a fleet needs at least 2 (salloc -N 2 or more)", len(src.hosts))
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
	say := func(format string, args ...any) {
		if !f.json {
			fmt.Fprintf(env.stderr, format+"\n", args...)
		}
	}
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
	names := make([]string, len(src.hosts))
	for i, h := range src.hosts {
		names[i] = h.Name
	}
	if _, err := fleet.NewSchedule(len(src.hosts), opts.Pattern, names); err != nil {
		return err
	}
	var rn fleet.Runner
	hosts := src.hosts
	if f.engine == "perftest" {
		rn = &runner.LabPerftest{Lab: f.labName}
	} else {
		agents, up, stopAgents, err := newFleetRunner(ctx, env, src, f, opts)
		defer stopAgents()
		if err != nil {
			return err
		}
		rn, hosts = agents, up
	}
	if !f.json {
		opts.Progress = func(ev fleet.Event) {
			what := fmt.Sprintf("%.2f Gbit/s", ev.Gbps)
			if ev.Err != nil {
				what = "failed: " + oneLine(ev.Err.Error())
			}
			again := ""
			if ev.Retest {
				again = " (re-test)"
			}
			fmt.Fprintf(env.stderr, "[%d/%d] %s → %s%s: %s\n", ev.Done, ev.Total, ev.From, ev.To, again, what)
		}
	}
	res, runErr := fleet.Run(ctx, hosts, opts, rn)
	if res != nil {
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
