package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/fleet"
	"github.com/linerate/linerate/internal/fleet/runner"
	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/mesh"
	"github.com/linerate/linerate/internal/statedir"
)

// `linerate mesh up` starts a mesh's agents through the fleet's launchers
// and hands them over to a supervisor of their own (`mesh supervise`, a
// process in a session of its own), which holds the launchers' standard
// inputs (an agent's wrapper stops it when that input closes), names an
// agent that dies in the mesh's record, and stops every agent at `mesh
// down`. The record, the secret and the supervisor's log live in the state
// directory, mesh/NAME/. A DaemonSet's agents (--k8s) run already: up
// configures them and down tells them to stop probing.

type meshFlags struct {
	name                    string
	hostsFile, labName, k8s string
	slurm                   bool
	tokenFile, sshConfig    string
	port, metricsPort       int
	rate                    float64
	flows                   int
	every                   time.Duration
	json                    bool
	timeout                 time.Duration
}

func newMeshCmd(env *cliEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mesh",
		Short: "An always-on mesh of agents that blames a host or a path within a minute",
		Long: `A mesh of linerate agents probes every pair of its hosts continuously:
authenticated UDP ping-pongs (--probe-rate per second and peer, the source
port rotating over --mesh-flows 5-tuples so that ECMP paths are covered), a
throughput test of each pair now and then (--throughput-every, about a second,
never two on a host at once), and each host's NIC counters, module and CPUs
every minute. Each pair is judged against its own baseline (median and MAD of
its last 10 minutes): it degrades when its loss, latency or goodput leaves it.
A host whose outgoing pairs degrade is suspected on its send side, incoming on
its receive side, and degraded pairs no host explains on their path, with the
host's own evidence. A pair whose own record shows contention (its hosts' CPUs
busy with other work) is inconclusive, not degraded.

  linerate mesh up --lab NAME       start the agents and their supervisor
  linerate mesh status [--json]     every pair's state, the suspects (exit 1 when any)
  linerate mesh down                stop every agent`,
	}
	cmd.AddCommand(newMeshUpCmd(env), newMeshStatusCmd(env), newMeshDownCmd(env), newMeshSuperviseCmd(env))
	return cmd
}

func addMeshNameFlag(cmd *cobra.Command, f *meshFlags) {
	cmd.Flags().StringVar(&f.name, "name", "", "the mesh's name (default: the lab's name with --lab, else \"mesh\")")
}

func newMeshUpCmd(env *cliEnv) *cobra.Command {
	f := meshFlags{port: agent.DefaultPort, rate: agent.DefaultProbeRate, flows: agent.DefaultMeshFlows, every: 24 * time.Hour}
	cmd := &cobra.Command{
		Use:   "up (--lab NAME | --hosts FILE | --slurm | --k8s SERVICE) [--probe-rate R] [--mesh-flows F] [--throughput-every D]",
		Short: "Start a mesh's agents and their supervisor",
		Long: `up starts 'linerate serve --mesh…' on every host through the fleet's launchers
(a lab's hosts, ssh for --hosts, srun inside a Slurm allocation), each with
its own node's key, made from a secret made for this mesh alone; gives each
agent the keys of its pairs; waits until every pair is judged; and leaves the
agents to a supervisor process, which names an agent that dies and stops
them all at 'mesh down'. Ctrl-C while up runs leaves no agent behind.

With --k8s SERVICE the agents of the mesh DaemonSet (deploy/kubernetes) run
already with their nodes' keys: give the fleet's secret (--token-file); up
gives each its mesh and its keys.`,
		Example: `  linerate lab up --name rack --hosts 8 && linerate mesh up --lab rack
  linerate mesh status --name rack
  linerate mesh down --name rack`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runMeshUp(cmd, env, f) },
	}
	fl := cmd.Flags()
	addMeshNameFlag(cmd, &f)
	fl.StringVar(&f.hostsFile, "hosts", "", "a host list: NAME ADDRESS [SSH-TARGET] per line (agents started over ssh)")
	fl.StringVar(&f.labName, "lab", "", "a lab of many hosts")
	fl.BoolVar(&f.slurm, "slurm", false, "the nodes of this Slurm allocation (agents started with srun)")
	fl.StringVar(&f.k8s, "k8s", "", "the agents of a Kubernetes headless Service (the mesh DaemonSet); needs --token-file")
	fl.StringVar(&f.tokenFile, "token-file", "", "the fleet's secret the agents' node keys come from (--k8s)")
	fl.StringVar(&f.sshConfig, "ssh-config", "", "an ssh_config for --hosts (ssh -F)")
	fl.IntVarP(&f.port, "port", "p", agent.DefaultPort, "the agents' port (TCP and UDP)")
	fl.IntVar(&f.metricsPort, "metrics-port", 0, "each agent also serves Prometheus metrics on its address at this port (0: none)")
	fl.Float64Var(&f.rate, "probe-rate", agent.DefaultProbeRate, "ping-pongs per second to each peer (0.1 to 100)")
	fl.IntVar(&f.flows, "mesh-flows", agent.DefaultMeshFlows, "source ports (5-tuples) the probes rotate over")
	fl.DurationVar(&f.every, "throughput-every", 24*time.Hour, "test each pair's throughput this often (each host takes part in 2(n-1) tests of about a second a period); 0 never")
	fl.DurationVar(&f.timeout, "timeout", 3*time.Minute, "give up when the agents are not up and judged within this")
	return cmd
}

func newMeshStatusCmd(env *cliEnv) *cobra.Command {
	var f meshFlags
	cmd := &cobra.Command{
		Use:   "status [--name NAME] [--json]",
		Short: "Every pair's state and the suspects of a running mesh",
		Long: `status asks every agent of the mesh for its pairs and its host's evidence, and
blames as the agents do: each pair's RTT (p50, p99) and loss over the last
minute, its last goodput, its state (ok, degraded, down) since when, and the
hosts and paths suspected with their evidence. --json prints linerate.mesh/v1
(docs/schema/mesh-v1.schema.json); 'linerate report --mesh FILE' draws it.
Exit status 1 when something is suspected, 2 when the mesh is not up.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runMeshStatus(cmd, env, f) },
	}
	addMeshNameFlag(cmd, &f)
	cmd.Flags().BoolVar(&f.json, "json", false, "print the status as a linerate.mesh/v1 JSON document")
	return cmd
}

func newMeshDownCmd(env *cliEnv) *cobra.Command {
	var f meshFlags
	cmd := &cobra.Command{
		Use:   "down [--name NAME]",
		Short: "Stop every agent of a mesh",
		Long: `down tells the mesh's supervisor to stop every agent and waits until they are
gone; the supervisor finishes the job even if down is interrupted. A
DaemonSet's agents (--k8s) stay up and stop probing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runMeshDown(cmd, env, f) },
	}
	addMeshNameFlag(cmd, &f)
	return cmd
}

func newMeshSuperviseCmd(env *cliEnv) *cobra.Command {
	var f meshFlags
	cmd := &cobra.Command{
		Use:    "supervise --name NAME",
		Short:  "The supervisor of a mesh's agents (mesh up starts it)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE:   func(cmd *cobra.Command, _ []string) error { return runMeshSupervise(cmd, env, f) },
	}
	addMeshNameFlag(cmd, &f)
	return cmd
}

// meshRecordSchema names a mesh's record.
const meshRecordSchema = "linerate.mesh-state/v1"

// meshRecord is a running mesh, as its state directory keeps it.
type meshRecord struct {
	Schema string `json:"schema"`
	Name   string `json:"name"`
	// Source is lab, hosts, slurm or k8s; Lab, HostsFile, SSHConfig and
	// K8s say which.
	Source    string        `json:"source"`
	Lab       string        `json:"lab,omitempty"`
	HostsFile string        `json:"hosts_file,omitempty"`
	SSHConfig string        `json:"ssh_config,omitempty"`
	K8s       string        `json:"k8s,omitempty"`
	Hosts     []fleet.Host  `json:"hosts"`
	Port      int           `json:"port"`
	ID        string        `json:"id"`
	Settings  mesh.Settings `json:"settings"`
	Metrics   int           `json:"metrics_port,omitempty"`
	Started   time.Time     `json:"started"`
	// PID is the supervisor's (0 for a DaemonSet's agents).
	PID int `json:"pid"`
	// Phase is starting, up or stopping; Down names the hosts whose agent
	// did not start or is gone, and why.
	Phase string            `json:"phase"`
	Down  map[string]string `json:"down"`
	// Addrs are the hosts' agents as the controller reaches them.
	Addrs map[string]string `json:"addrs"`
}

// meshDir is the state directory of mesh name.
func meshDir(name string) (string, error) {
	if err := lab.ValidateName(name); err != nil {
		return "", fmt.Errorf("--name: %w", err)
	}
	d, err := statedir.Sub("mesh")
	if err != nil {
		return "", err
	}
	return filepath.Join(d, name), nil
}

func (f *meshFlags) meshName() string {
	switch {
	case f.name != "":
		return f.name
	case f.labName != "":
		return f.labName
	}
	return "mesh"
}

// readMeshRecord reads mesh name's record and secret; a mesh that is not
// up is an error naming what to run.
func readMeshRecord(name string) (*meshRecord, []byte, string, error) {
	dir, err := meshDir(name)
	if err != nil {
		return nil, nil, "", err
	}
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, dir, fmt.Errorf("no mesh %s is up: start one with 'linerate mesh up --lab NAME' (or --hosts, --slurm, --k8s)", name)
	}
	if err != nil {
		return nil, nil, dir, fmt.Errorf("reading mesh %s's record: %w", name, err)
	}
	var rec meshRecord
	if err := json.Unmarshal(b, &rec); err != nil || rec.Schema != meshRecordSchema {
		return nil, nil, dir, fmt.Errorf("mesh %s's record %s is damaged: remove %s", name, filepath.Join(dir, "state.json"), dir)
	}
	secret, err := agent.ReadTokenFile(filepath.Join(dir, "secret"))
	if err != nil {
		return nil, nil, dir, fmt.Errorf("mesh %s's secret: %w", name, err)
	}
	return &rec, secret, dir, nil
}

// writeMeshRecord replaces the record at dir, atomically.
func writeMeshRecord(dir string, rec *meshRecord) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ".state.json.tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("writing the mesh's record: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "state.json")); err != nil {
		return fmt.Errorf("writing the mesh's record: %w", err)
	}
	return nil
}

// supervisorAlive says whether pid is mesh name's supervisor, running.
func supervisorAlive(pid int, name string) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	return slices.Contains(args, "supervise") && slices.Contains(args, name) && slices.Contains(args, "mesh")
}

func (f *meshFlags) check() error {
	var given []string
	for n, set := range map[string]bool{"--hosts": f.hostsFile != "", "--lab": f.labName != "", "--slurm": f.slurm, "--k8s": f.k8s != ""} {
		if set {
			given = append(given, n)
		}
	}
	slices.Sort(given)
	switch {
	case len(given) == 0:
		return errors.New("say which hosts: --lab NAME, --hosts FILE, --slurm or --k8s SERVICE")
	case len(given) > 1:
		return fmt.Errorf("give one of --lab, --hosts, --slurm and --k8s, not %s", strings.Join(given, " and "))
	case f.k8s != "" && f.tokenFile == "":
		return errors.New("--k8s needs --token-file: the fleet's secret the DaemonSet's node keys were made from")
	case f.k8s == "" && f.tokenFile != "":
		return errors.New("--token-file goes with --k8s; the other sources get a secret made for the mesh")
	case f.port < 1 || f.port > 65535:
		return fmt.Errorf("--port %d: 1 to 65535", f.port)
	case f.metricsPort < 0 || f.metricsPort > 65535 || f.metricsPort == f.port:
		return fmt.Errorf("--metrics-port %d: 1 to 65535, not the agents' port", f.metricsPort)
	case f.timeout < 10*time.Second:
		return fmt.Errorf("--timeout %s: at least 10s", f.timeout)
	}
	m := agent.Mesh{ProbeRate: f.rate, Flows: f.flows, ThroughputEvery: f.every, Peers: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}}
	return m.Check()
}

func runMeshUp(cmd *cobra.Command, env *cliEnv, f meshFlags) error {
	if err := f.check(); err != nil {
		return err
	}
	name := f.meshName()
	dir, err := meshDir(name)
	if err != nil {
		return err
	}
	if rec, _, _, err := readMeshRecord(name); err == nil {
		if rec.PID == 0 || supervisorAlive(rec.PID, name) {
			return fmt.Errorf("mesh %s is up already (since %s): 'linerate mesh down --name %s' first, or give another --name", name, rec.Started.Local().Format(time.DateTime), name)
		}
		os.RemoveAll(dir) // its supervisor died: its agents went with it
	}
	ctx, stop := interruptible(cmd)
	defer stop()
	ff := fleetFlags{hostsFile: f.hostsFile, labName: f.labName, slurm: f.slurm, k8s: f.k8s, tokenFile: f.tokenFile, sshConfig: f.sshConfig}
	src, err := ff.source(ctx)
	if err != nil {
		return err
	}
	if len(src.hosts) > agent.MaxMeshHosts {
		return fmt.Errorf("%d hosts: a mesh has at most %d", len(src.hosts), agent.MaxMeshHosts)
	}
	var secret []byte
	if f.tokenFile != "" {
		secret, err = agent.ReadTokenFile(f.tokenFile)
	} else {
		secret, err = agent.GenerateToken()
	}
	if err != nil {
		return err
	}
	id, err := agent.NewMeshID()
	if err != nil {
		return err
	}
	if err := statedir.MkdirAll(dir); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "secret"), append(secret, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing the mesh's secret: %w", err)
	}
	hostsFile := f.hostsFile
	if hostsFile != "" {
		if hostsFile, err = filepath.Abs(hostsFile); err != nil {
			return err
		}
	}
	rec := &meshRecord{Schema: meshRecordSchema, Name: name, Source: src.kind, Lab: f.labName, HostsFile: hostsFile, SSHConfig: f.sshConfig,
		K8s: f.k8s, Hosts: src.hosts, Port: f.port, ID: hex.EncodeToString(id), Metrics: f.metricsPort, Started: time.Now().UTC(),
		Settings: mesh.Settings{ProbeRate: f.rate, Flows: f.flows, ThroughputEveryS: f.every.Seconds(), WindowS: (mesh.ReportBuckets * mesh.BucketLen).Seconds()},
		Phase:    "starting", Down: map[string]string{}, Addrs: map[string]string{}}
	if err := writeMeshRecord(dir, rec); err != nil {
		os.RemoveAll(dir)
		return err
	}
	if src.kind == "k8s" {
		err := upK8s(ctx, env, dir, rec, secret, f.timeout)
		if err != nil {
			os.RemoveAll(dir)
		}
		return err
	}
	return startSupervisor(ctx, env, dir, rec, f.timeout)
}

// startSupervisor starts `mesh supervise` in a session of its own and
// waits for it to say the mesh is up, or why not. Interrupted, it stops
// the supervisor, which stops every agent it started.
func startSupervisor(ctx context.Context, env *cliEnv, dir string, rec *meshRecord, timeout time.Duration) error {
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this linerate binary: %w", err)
	}
	logf, err := os.OpenFile(filepath.Join(dir, "supervisor.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("the supervisor's log: %w", err)
	}
	defer logf.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	defer pr.Close()
	c := exec.Command(bin, "mesh", "supervise", "--name", rec.Name)
	c.Stdout, c.Stderr = logf, logf
	c.ExtraFiles = []*os.File{pw}
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	c.Env = append(os.Environ(), "LINERATE_MESH_READY_FD=3")
	if err := c.Start(); err != nil {
		pw.Close()
		os.RemoveAll(dir)
		return fmt.Errorf("starting the mesh's supervisor: %w", err)
	}
	pw.Close()
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	fmt.Fprintf(env.stderr, "starting an agent on each of %d hosts (%s); the supervisor's log is %s\n", len(rec.Hosts), rec.Source, filepath.Join(dir, "supervisor.log"))
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	giveUp := func(why error) error {
		c.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(2 * time.Minute):
			c.Process.Kill()
			<-exited
		}
		os.RemoveAll(dir)
		return why
	}
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(env.stderr, "linerate: interrupted: stopping every agent started")
			return giveUp(fmt.Errorf("mesh up interrupted: %w", context.Cause(ctx)))
		case <-deadline.C:
			return giveUp(fmt.Errorf("the mesh was not up within %s (--timeout); see %s", timeout, filepath.Join(dir, "supervisor.log")))
		case l, ok := <-lines:
			switch {
			case !ok:
				err := <-exited
				os.RemoveAll(dir)
				return fmt.Errorf("the mesh's supervisor ended before the mesh was up (%v); see its log", err)
			case strings.HasPrefix(l, "host "):
				fmt.Fprintf(env.stderr, "linerate: %s\n", strings.TrimPrefix(l, "host "))
			case strings.HasPrefix(l, "error "):
				<-exited
				os.RemoveAll(dir)
				return errors.New(strings.TrimPrefix(l, "error "))
			case l == "up":
				rec, _, _, err := readMeshRecord(rec.Name)
				if err != nil {
					return err
				}
				fmt.Fprintf(env.stdout, "Mesh %s is up: %d agents probing %d pairs at %g/s each (supervisor pid %d).\n", rec.Name, len(rec.Hosts)-len(rec.Down), len(rec.Hosts)*(len(rec.Hosts)-1), rec.Settings.ProbeRate, rec.PID)
				for _, h := range rec.Hosts {
					if why, down := rec.Down[h.Name]; down {
						fmt.Fprintf(env.stdout, "  %s: DOWN: %s\n", h.Name, why)
					}
				}
				fmt.Fprintf(env.stdout, "Watch it: linerate mesh status --name %s   Stop it: linerate mesh down --name %s\n", rec.Name, rec.Name)
				return nil
			}
		}
	}
}

// meshSource rebuilds the hosts' source of a recorded mesh.
func meshSource(ctx context.Context, rec *meshRecord) (*fleetSource, error) {
	ff := fleetFlags{labName: rec.Lab, hostsFile: rec.HostsFile, sshConfig: rec.SSHConfig, slurm: rec.Source == "slurm"}
	src, err := ff.source(ctx)
	if err != nil {
		return nil, err
	}
	if len(src.hosts) != len(rec.Hosts) {
		return nil, fmt.Errorf("the hosts changed since mesh up (%d, now %d)", len(rec.Hosts), len(src.hosts))
	}
	return src, nil
}

// meshDialer reaches a recorded mesh's agents: from a lab's switch, or
// straight.
func meshDialer(rec *meshRecord) (agent.DialFunc, error) {
	if rec.Source != "lab" {
		return nil, nil
	}
	return lab.Dialer(rec.Lab, lab.Switch)
}

// meshHostsOf lists the mesh's hosts at their agents' addresses.
func meshHostsOf(rec *meshRecord) ([]agent.MeshHost, error) {
	var out []agent.MeshHost
	for _, h := range rec.Hosts {
		ap, err := netip.ParseAddrPort(rec.Addrs[h.Name])
		if err != nil {
			return nil, fmt.Errorf("host %s has no address in the mesh's record", h.Name)
		}
		out = append(out, agent.MeshHost{Name: h.Name, Addr: ap.Addr()})
	}
	return out, nil
}

// configureAll gives every agent that answers its mesh, at most 8 at a
// time; a host whose agent refuses is down with the reason.
func configureAll(ctx context.Context, dial agent.DialFunc, rec *meshRecord, secret []byte) {
	hosts, err := meshHostsOf(rec)
	if err != nil {
		for _, h := range rec.Hosts {
			rec.Down[h.Name] = err.Error()
		}
		return
	}
	id, _ := hex.DecodeString(rec.ID)
	var mu sync.Mutex
	eachHost(rec, func(h fleet.Host) {
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		_, err := agent.ConfigureMesh(cctx, dial, rec.Addrs[h.Name], secret, id, hosts)
		if err != nil {
			mu.Lock()
			rec.Down[h.Name] = "its agent took no mesh: " + oneLine(err.Error())
			mu.Unlock()
		}
	})
}

// eachHost runs fn for every host not down, at most 8 at a time.
func eachHost(rec *meshRecord, fn func(h fleet.Host)) {
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, h := range rec.Hosts {
		if _, down := rec.Down[h.Name]; down {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			fn(h)
		}()
	}
	wg.Wait()
}

// waitJudged waits until every agent up has judged every pair of its
// own (the first buckets closed), or until the deadline.
func waitJudged(ctx context.Context, dial agent.DialFunc, rec *meshRecord, secret []byte, within time.Duration) {
	end := time.Now().Add(within)
	for time.Now().Before(end) && ctx.Err() == nil {
		pending := false
		var mu sync.Mutex
		eachHost(rec, func(h fleet.Host) {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			r, err := agent.MeshStatus(cctx, dial, rec.Addrs[h.Name], secret)
			ok := err == nil && len(r.Pairs) == len(rec.Hosts)-1
			for _, p := range r.Pairs {
				ok = ok && p.State != mesh.Unknown
			}
			if !ok {
				mu.Lock()
				pending = true
				mu.Unlock()
			}
		})
		if !pending {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// runMeshSupervise is the supervisor: it starts the agents, configures
// them, says "up" on the descriptor mesh up gave it, watches them, and
// stops them all at SIGTERM or SIGINT.
func runMeshSupervise(cmd *cobra.Command, env *cliEnv, f meshFlags) error {
	ready := io.Discard
	if fd, _ := strconv.Atoi(os.Getenv("LINERATE_MESH_READY_FD")); fd > 2 {
		pipe := os.NewFile(uintptr(fd), "ready")
		defer pipe.Close()
		ready = pipe
	}
	say := func(format string, args ...any) { fmt.Fprintf(ready, format+"\n", args...) }
	fail := func(err error) error {
		say("error %s", oneLine(err.Error()))
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	rec, secret, dir, err := readMeshRecord(f.name)
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	rec.PID = os.Getpid()
	if err := writeMeshRecord(dir, rec); err != nil {
		return fail(err)
	}
	src, err := meshSource(ctx, rec)
	if err != nil {
		return fail(err)
	}
	dial, err := meshDialer(rec)
	if err != nil {
		return fail(err)
	}
	agents, err := runner.New(ctx, src.hosts, rec.Port, secret, dial)
	if err != nil {
		return fail(err)
	}
	var addrs []netip.Addr
	for _, h := range src.hosts {
		if ap, ok := agents.Addr(h); ok {
			addrs = append(addrs, ap.Addr())
			rec.Addrs[h.Name] = ap.String()
		}
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	agents.ExtraArgs = func(h fleet.Host, ap netip.AddrPort) []string {
		args := []string{"--probe-rate", strconv.FormatFloat(rec.Settings.ProbeRate, 'g', -1, 64), "--mesh-flows", strconv.Itoa(rec.Settings.Flows),
			"--throughput-every", (time.Duration(rec.Settings.ThroughputEveryS * float64(time.Second))).String()}
		if rec.Source == "lab" {
			args = append(args, "--mesh-lab", rec.Lab)
		} else {
			args = append(args, "--mesh-peers", agent.RelayPeersArg(addrs))
		}
		if rec.Metrics > 0 {
			args = append(args, "--metrics", netip.AddrPortFrom(ap.Addr(), uint16(rec.Metrics)).String())
		}
		return args
	}
	l, closeL, err := fleetLauncher(src)
	if err != nil {
		return fail(err)
	}
	defer closeL()
	defer agents.Stop()
	fmt.Fprintf(env.stderr, "%s supervisor of mesh %s (pid %d): starting %d agents (%s)\n", time.Now().Format(time.DateTime), rec.Name, rec.PID, len(src.hosts), rec.Source)
	// The agents of a mesh take no tests but their mesh's, which are
	// short: nobody holds one long.
	agents.Launch(ctx, l, 30*time.Second, func(h fleet.Host, err error) {
		if err != nil {
			say("host %s: %s", h.Name, oneLine(err.Error()))
		}
	})
	if ctx.Err() != nil {
		return fail(errors.New("interrupted while starting the agents"))
	}
	agents.Probe(ctx)
	for _, h := range src.hosts {
		if err := agents.Down(h); err != nil {
			rec.Down[h.Name] = oneLine(err.Error())
		}
	}
	if len(rec.Down) == len(rec.Hosts) {
		return fail(errors.New("no agent of the mesh started: see the reasons above"))
	}
	configureAll(ctx, dial, rec, secret)
	var mu sync.Mutex
	agents.Watch(ctx, func(h fleet.Host, err error) {
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil || rec.Phase == "stopping" {
			return
		}
		rec.Down[h.Name] = oneLine(err.Error())
		fmt.Fprintf(env.stderr, "%s host %s: %s\n", time.Now().Format(time.DateTime), h.Name, rec.Down[h.Name])
		writeMeshRecord(dir, rec)
	})
	waitJudged(ctx, dial, rec, secret, 40*time.Second)
	mu.Lock()
	rec.Phase = "up"
	err = writeMeshRecord(dir, rec)
	mu.Unlock()
	if err != nil {
		return fail(err)
	}
	say("up")
	fmt.Fprintf(env.stderr, "%s mesh %s is up: %d agents\n", time.Now().Format(time.DateTime), rec.Name, len(rec.Hosts)-len(rec.Down))
	<-ctx.Done()
	mu.Lock()
	rec.Phase = "stopping"
	writeMeshRecord(dir, rec)
	mu.Unlock()
	fmt.Fprintf(env.stderr, "%s stopping every agent of mesh %s\n", time.Now().Format(time.DateTime), rec.Name)
	return nil
}

// upK8s configures the agents of a DaemonSet: they run already.
func upK8s(ctx context.Context, env *cliEnv, dir string, rec *meshRecord, secret []byte, timeout time.Duration) error {
	agents, err := runner.New(ctx, rec.Hosts, rec.Port, secret, nil)
	if err != nil {
		return err
	}
	agents.Probe(ctx)
	hosts := agents.NameByHostname()
	rec.Hosts = hosts
	for _, h := range hosts {
		if ap, ok := agents.Addr(h); ok {
			rec.Addrs[h.Name] = ap.String()
		}
		if err := agents.Down(h); err != nil {
			rec.Down[h.Name] = oneLine(err.Error())
			fmt.Fprintf(env.stderr, "linerate: %s: %s\n", h.Name, rec.Down[h.Name])
		}
	}
	configureAll(ctx, nil, rec, secret)
	waitJudged(ctx, nil, rec, secret, min(timeout, 40*time.Second))
	rec.Phase = "up"
	if err := writeMeshRecord(dir, rec); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "Mesh %s is up: %d agents of %s probing each other.\nWatch it: linerate mesh status --name %s\n", rec.Name, len(hosts)-len(rec.Down), rec.K8s, rec.Name)
	return nil
}

func runMeshStatus(cmd *cobra.Command, env *cliEnv, f meshFlags) error {
	name := f.meshName()
	rec, secret, _, err := readMeshRecord(name)
	if err != nil {
		return err
	}
	if rec.PID != 0 && !supervisorAlive(rec.PID, name) {
		return fmt.Errorf("mesh %s's supervisor (pid %d) is gone, and its agents with it: 'linerate mesh down --name %s' clears it", name, rec.PID, name)
	}
	if rec.Phase != "up" {
		return fmt.Errorf("mesh %s is %s, not up yet", name, rec.Phase)
	}
	dial, err := meshDialer(rec)
	if err != nil {
		return err
	}
	ctx, stop := interruptible(cmd)
	defer stop()
	doc := meshStatus(ctx, dial, rec, secret)
	if f.json {
		if err := writeJSON(env.stdout, doc); err != nil {
			return err
		}
	} else if err := doc.WriteText(env.stdout); err != nil {
		return err
	}
	if len(doc.Suspects) > 0 {
		return errFindings
	}
	return nil
}

// meshStatus asks every agent for its part and puts the mesh together.
func meshStatus(ctx context.Context, dial agent.DialFunc, rec *meshRecord, secret []byte) *mesh.Doc {
	doc := &mesh.Doc{Schema: mesh.Schema, Name: rec.Name, Source: rec.Source, At: time.Now().UTC().Truncate(time.Second),
		Started: rec.Started.Truncate(time.Second), Settings: rec.Settings, Pairs: []mesh.PairStatus{}, Suspects: []mesh.Suspect{}}
	reports := make(map[string]*agent.MeshReport)
	errs := make(map[string]string)
	var mu sync.Mutex
	eachHost(rec, func(h fleet.Host) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		r, err := agent.MeshStatus(cctx, dial, rec.Addrs[h.Name], secret)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs[h.Name] = "its agent does not answer: " + oneLine(err.Error())
			return
		}
		reports[h.Name] = r
	})
	ev := map[string]*mesh.HostEvidence{}
	var names []string
	for _, h := range rec.Hosts {
		names = append(names, h.Name)
		hs := mesh.HostStatus{Name: h.Name, Address: h.Address, Up: true}
		if ap, err := netip.ParseAddrPort(rec.Addrs[h.Name]); err == nil {
			hs.Address = ap.Addr().String()
		}
		why, down := rec.Down[h.Name]
		if !down {
			why, down = errs[h.Name]
		}
		r := reports[h.Name]
		if down || r == nil {
			hs.Up, hs.Error = false, why
			if why == "" {
				hs.Error = "no report"
			}
			// Its own pairs are not known: down, with why.
			for _, o := range rec.Hosts {
				if o.Name != h.Name {
					doc.Pairs = append(doc.Pairs, mesh.PairStatus{Src: h.Name, Dst: o.Name, State: mesh.Down, Since: doc.At, Why: "its agent is gone: " + hs.Error})
				}
			}
			doc.Hosts = append(doc.Hosts, hs)
			continue
		}
		hs.AgentCPUPct, hs.AgentRSSBytes, hs.Evidence = r.CPUPct, r.RSS, r.Evidence
		ev[h.Name] = r.Evidence
		doc.Hosts = append(doc.Hosts, hs)
		doc.Pairs = append(doc.Pairs, r.Pairs...)
	}
	doc.Suspects = mesh.Blame(names, doc.Pairs, ev, doc.At)
	// A host whose agent is gone is named, whatever the votes say.
	for _, hs := range doc.Hosts {
		if hs.Up || slices.ContainsFunc(doc.Suspects, func(s mesh.Suspect) bool { return s.Kind == mesh.KindHost && s.Name == hs.Name }) {
			continue
		}
		doc.Suspects = append(doc.Suspects, mesh.Suspect{Kind: mesh.KindHost, Name: hs.Name, Side: mesh.SideBoth, Since: doc.At, Evidence: []string{hs.Error}})
	}
	doc.Verdict = mesh.Summary(doc.Pairs, doc.Suspects)
	return doc
}

func runMeshDown(cmd *cobra.Command, env *cliEnv, f meshFlags) error {
	name := f.meshName()
	rec, secret, dir, err := readMeshRecord(name)
	if err != nil {
		return err
	}
	if rec.Source == "k8s" {
		ctx, stop := interruptible(cmd)
		defer stop()
		var mu sync.Mutex
		var failed []string
		eachHost(rec, func(h fleet.Host) {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := agent.StopMesh(cctx, nil, rec.Addrs[h.Name], secret); err != nil {
				mu.Lock()
				failed = append(failed, h.Name+": "+oneLine(err.Error()))
				mu.Unlock()
			}
		})
		os.RemoveAll(dir)
		for _, l := range failed {
			fmt.Fprintf(env.stderr, "linerate: %s\n", l)
		}
		fmt.Fprintf(env.stdout, "Mesh %s is down: its DaemonSet's agents stay up and probe no more.\n", name)
		return nil
	}
	if !supervisorAlive(rec.PID, name) {
		os.RemoveAll(dir)
		fmt.Fprintf(env.stdout, "Mesh %s was down already (its supervisor, pid %d, had gone, and its agents with it); its record is cleared.\n", name, rec.PID)
		return nil
	}
	if err := syscall.Kill(rec.PID, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stopping mesh %s's supervisor (pid %d): %w", name, rec.PID, err)
	}
	// The supervisor stops every agent and removes the record, even if
	// this command is interrupted now.
	ctx, stop := interruptible(cmd)
	defer stop()
	for supervisorAlive(rec.PID, name) {
		select {
		case <-ctx.Done():
			fmt.Fprintf(env.stderr, "linerate: no longer waiting; the supervisor (pid %d) goes on stopping the agents\n", rec.PID)
			return context.Cause(ctx)
		case <-time.After(100 * time.Millisecond):
		}
	}
	os.RemoveAll(dir)
	fmt.Fprintf(env.stdout, "Mesh %s is down: its %d agents are stopped.\n", name, len(rec.Hosts)-len(rec.Down))
	return nil
}
