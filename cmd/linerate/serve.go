package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/bench"
	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/toolserver"
	"github.com/linerate/linerate/internal/tune"
)

type serveFlags struct {
	bind          string
	port          int
	tokenFile     string
	newTokenFile  string
	once          bool
	maxClients    int
	maxDuration   time.Duration
	allowPerftest bool
	allowSockperf bool
	relayPeers    string
	relayPort     int
	nodeKey       string
	check         bool
	metrics       metricsFlags
	mesh          meshServeFlags
}

// bindEnv gives serve's --bind when the flag is absent: a Kubernetes exec
// probe does not expand $(POD_IP) in its command, but runs with the
// container's environment.
const bindEnv = "LINERATE_BIND"

func newServeCmd(env *cliEnv) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve --bind ADDR --token-file FILE",
		Short: "Run the peer agent that 'linerate bench' measures against",
		Long: `serve is the other end of 'linerate bench': it authenticates clients with a
shared token (HMAC challenge-response both ways; the token never crosses the
wire, and every message after the handshake carries a MAC under a key of that
session), runs their tests one at a time (others are told "busy"; --max-clients N runs
N clients' tests at once, each with its own result), and sends
back per-interval telemetry of this host: per-CPU busy, irq and softirq load,
NET_RX/NET_TX softirqs and the interrupts of the NIC under test.

It listens where you tell it and nowhere else: --bind is required. Give the
address the clients reach this host on; --bind 0.0.0.0 (or ::) listens on every
address, and serve says so. One TCP port, control and data alike (5301).

The token is a random key of at least 128 bits, in a file only its owner can
read: make one with 'linerate serve --new-token-file FILE' (256 bits, mode 600;
it never overwrites) and copy the file to the clients (--token-file there too).
Shorter or made-up tokens are refused on both ends.

A fleet gives each node a key of its own instead: the token file holds a node
key ('serve --token-file SECRET --node-key NAME --new-token-file FILE' derives
NAME's from the fleet's secret), which opens that node's agent only; clients
holding the fleet's secret derive it from the name the agent gives. Fleet runs
do this for the agents they start.

Strangers are bounded: a connection has 3 s to authenticate, silent ones make
room for clients that speak, and refusals are logged once per address and kind,
then summarised every 10 s.

For 'linerate bench --engine iperf3|iperf2' it also starts the tool's server
for an authenticated client: from a fixed list, with bounded arguments (never
a command line), on ports 1024 and up, bound to the address the client reached
this agent on, pinned to the CPUs asked for, and stopped when the client stops,
5 s after the test's length, or when the agent dies. They run without
privilege: as the system user linerate-tool (serve creates it with useradd
--system when it is missing; nobody if it cannot), with no capability and
no_new_privs, and with no token in their environment. iperf3's server requires
RSA authentication with a user and password made for that one client, and
serve warns at start when iperf3 is older than 3.18 (server fixes; your
distribution may have backported them); iperf's requires a permit key made
for it (iperf sends it in clear; the agent's log and tool_started show it
redacted). perftest servers (ib_*_bw, ib_*_lat) have no authentication at all
and listen on every address: serve starts them only with --allow-perftest.
sockperf servers have none either, and over UDP answer any source address (a
reflector while they run): only with --allow-sockperf, bound to the agent's
address. 'serve --check' is a readiness probe: it authenticates to the agent
at --bind (or $LINERATE_BIND) and --port and leaves, logged as nothing. The agent samples this host beside
any tool, and hands authenticated clients this host's doctor report (within
10 s), which bench stores with every run. Logs go to stderr.

For fleet runs it runs relayed tests (a controller asks it to test toward
another agent) only toward the agents --relay-peers lists, on the agent port,
never toward a loopback, link-local or own address; without --relay-peers it
takes none. Fleet launchers pass the fleet's hosts; a DaemonSet names the
nodes' network.

With --mesh FILE (NAME ADDRESS per line, as 'fleet run --hosts' reads), --mesh-lab
NAME or --mesh-peers NETWORKS it is also a member of an always-on mesh: it
probes every other host of the mesh with authenticated UDP ping-pongs
(--probe-rate per second each, the source port rotating over --mesh-flows
5-tuples so that ECMP paths are covered), tests each pair's throughput every
--throughput-every (one test of one stream, about a second, never two on a
host at once), reads its NIC's counters, module and CPUs every minute, judges
each pair against its own baseline and blames a host's send or receive side,
or a path, by voting. It probes the hosts of its list only (with --mesh-peers,
the list 'linerate mesh up' gives, within those networks), on the agent port,
and answers only them. 'linerate mesh up' starts and configures such agents;
the metrics (--metrics) add linerate_mesh_*.`,
		Example: `  linerate serve --new-token-file ~/.config/linerate/token   # once; copy it to the clients
  linerate serve --bind 192.168.15.102 --token-file ~/.config/linerate/token
  linerate serve --bind 0.0.0.0 --token-file token --once
  linerate bench 192.168.15.102 --token-file ~/.config/linerate/token   # on the client`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd, env, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.bind, "bind", "", "listen on this address (required, or $LINERATE_BIND; 0.0.0.0 or :: for every address)")
	fl.IntVarP(&f.port, "port", "p", agent.DefaultPort, "TCP port for control and data")
	fl.StringVar(&f.tokenFile, "token-file", "", "read the shared token from this file (mode 600; required)")
	fl.StringVar(&f.newTokenFile, "new-token-file", "", "write a new random token to this file (mode 600, never overwritten) and exit")
	fl.StringVar(&f.nodeKey, "node-key", "", "with --new-token-file and --token-file FLEET-SECRET: write node NAME's key, derived from the fleet's secret, instead of a new token")
	fl.BoolVar(&f.once, "once", false, "exit after one test")
	fl.IntVar(&f.maxClients, "max-clients", 1, fmt.Sprintf("run this many clients' tests at once (fan-in), 1 to %d; others are told busy", agent.MaxClientsLimit))
	fl.DurationVar(&f.maxDuration, "max-duration", agent.DefaultMaxDuration, "refuse tests longer than this")
	fl.BoolVar(&f.allowPerftest, "allow-perftest", false, "start perftest servers for clients (they take no authentication)")
	fl.BoolVar(&f.allowSockperf, "allow-sockperf", false, "start sockperf servers for clients (bench --latency --engine sockperf; they take no authentication, and over UDP answer any source address)")
	fl.StringVar(&f.relayPeers, "relay-peers", "", "take relayed tests (fleet runs) toward these agents only: networks or addresses, comma-separated (the fleet's hosts; fleet launchers pass them)")
	fl.IntVar(&f.relayPort, "relay-port", 0, "the port of the agents relayed tests go to (default: this agent's --port)")
	fl.BoolVar(&f.check, "check", false, "check that the agent at --bind and --port answers: authenticate with --token-file, leave at once (bye), exit 0 if it did (a readiness probe)")
	addMetricsFlags(fl, &f.metrics)
	addMeshServeFlags(fl, &f.mesh)
	return cmd
}

func runServe(cmd *cobra.Command, env *cliEnv, f serveFlags) error {
	if f.nodeKey != "" {
		if f.newTokenFile == "" || f.tokenFile == "" {
			return errors.New("--node-key NAME writes NAME's key: give the fleet's secret (--token-file) and the file to write (--new-token-file)")
		}
		fleet, err := agent.ReadTokenFile(f.tokenFile)
		if err != nil {
			return err
		}
		if err := agent.WriteNodeKey(f.newTokenFile, fleet, f.nodeKey); err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "Wrote node %s's key to %s, readable by you only. Put it on that node only:\n"+
			"  linerate serve --bind ADDR --token-file %s\n"+
			"The fleet's controller keeps the secret; it opens every node's agent, a node key only its own.\n", f.nodeKey, f.newTokenFile, f.newTokenFile)
		return nil
	}
	if f.newTokenFile != "" {
		if err := agent.WriteNewToken(f.newTokenFile); err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "Wrote a new token (256 random bits) to %s, readable by you only.\n"+
			"Copy it to the clients, then: linerate serve --bind ADDR --token-file %s\n", f.newTokenFile, f.newTokenFile)
		return nil
	}
	if f.port < 1 || f.port > 65535 {
		return fmt.Errorf("--port %d: must be 1 to 65535", f.port)
	}
	if f.bind == "" {
		f.bind = os.Getenv(bindEnv)
	}
	if f.check {
		return serveCheck(context.Background(), env, f)
	}
	if f.maxDuration <= 0 {
		return errors.New("--max-duration must be positive, e.g. 10m or 1h")
	}
	if f.maxClients < 1 || f.maxClients > agent.MaxClientsLimit {
		return fmt.Errorf("--max-clients %d: must be 1 to %d", f.maxClients, agent.MaxClientsLimit)
	}
	meshCfg, err := f.mesh.config()
	if err != nil {
		return err
	}
	var relayPeers []netip.Prefix
	if f.relayPeers != "" {
		var err error
		if relayPeers, err = agent.ParseRelayPeers(f.relayPeers); err != nil {
			return err
		}
	}
	if f.relayPort < 0 || f.relayPort > 65535 {
		return fmt.Errorf("--relay-port %d: must be 1 to 65535", f.relayPort)
	}
	bind, err := serveBind(f.bind)
	if err != nil {
		return err
	}
	if err := checkBind(bind); err != nil {
		return err
	}
	if f.tokenFile == "" {
		return errors.New("serve needs --token-file FILE: make one with 'linerate serve --new-token-file FILE' and copy it to the clients")
	}
	token, err := agent.ReadTokenFile(f.tokenFile)
	if err != nil {
		return err
	}
	addr := net.JoinHostPort(bind.String(), strconv.Itoa(f.port))
	network := "tcp4" // 0.0.0.0 is every IPv4 address, not IPv6 too
	if bind.Is6() {
		network = "tcp" // :: is every address, both families
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w (is another agent running? pick another --port)", addr, err)
	}
	if bind.IsUnspecified() {
		fmt.Fprintf(env.stderr, "linerate: listening on every address of this host (--bind %s): any network that reaches it reaches the agent\n", bind)
	}
	at := "one test at a time"
	if f.maxClients > 1 {
		at = fmt.Sprintf("up to %d tests at once", f.maxClients)
	}
	fmt.Fprintf(env.stdout, "%s%s (%s; Ctrl-C stops)\n", agent.ListeningPrefix, ln.Addr(), at)
	ctx, stop := interruptible(cmd)
	defer stop()
	log := slog.New(slog.NewTextHandler(env.stderr, nil))
	prepareTools(log)
	srv := &agent.Server{Token: token, MaxDuration: f.maxDuration, Once: f.once, MaxClients: f.maxClients, RelayPeers: relayPeers, RelayPort: f.relayPort, Mesh: meshCfg,
		Logger: log,
		Tools:  toolserver.AgentTools{AllowPerftest: f.allowPerftest, AllowSockperf: f.allowSockperf}, Doctor: doctor.LiveReport, Annotate: annotateTune}
	if err := startMetrics(ctx, env, f.metrics, srv.MeshFigures); err != nil {
		return err
	}
	return srv.Serve(ctx, ln)
}

// prepareTools readies what the tool servers need before a client asks:
// removes the credentials killed agents left, finds (or makes) the user
// they run as, and says whether the installed iperf3 predates fixes of
// its server.
func prepareTools(log *slog.Logger) {
	if n, err := toolserver.CleanStale(); err != nil {
		log.Warn("cleaning iperf3 credentials left by killed agents", "reason", err.Error())
	} else if n > 0 {
		log.Info("removed iperf3 credentials left by killed agents", "directories", n)
	}
	if id, err := toolserver.ToolIdentity(); err != nil {
		log.Warn("this agent will start no tool server", "reason", err.Error())
	} else {
		log.Info(id.Note)
	}
	if w := toolserver.Iperf3Advisory(); w != "" {
		log.Warn(w)
	}
}

// checkTimeout bounds serve --check: a readiness probe's default timeout
// is 1 s, an authenticated handshake on a loaded host takes a few
// milliseconds.
const checkTimeout = 5 * time.Second

// serveCheck authenticates to the agent at f's address and leaves (bye):
// the agent logs nothing for it, unlike a bare TCP connection, which it
// counts as a stranger that sent nothing.
func serveCheck(ctx context.Context, env *cliEnv, f serveFlags) error {
	if f.bind == "" {
		return fmt.Errorf("serve --check needs the agent's address: --bind ADDR, or $%s", bindEnv)
	}
	bind, err := serveBind(f.bind)
	if err != nil {
		return err
	}
	switch { // an agent on every address answers on loopback
	case bind.IsUnspecified() && bind.Is4():
		bind = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	case bind.IsUnspecified():
		bind = netip.IPv6Loopback()
	}
	if f.tokenFile == "" {
		return errors.New("serve --check needs --token-file FILE: the agent's token or node key")
	}
	token, err := agent.ReadTokenFile(f.tokenFile)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	addr := net.JoinHostPort(bind.String(), strconv.Itoa(f.port))
	host, err := agent.Probe(ctx, nil, addr, token)
	if err != nil {
		return fmt.Errorf("serve --check: %w", err)
	}
	fmt.Fprintf(env.stdout, "the agent at %s answered (host %s)\n", addr, host.Hostname)
	return nil
}

// serveBind reads --bind: an IP address of this host, or 0.0.0.0 / :: for
// every address, said explicitly.
func serveBind(s string) (netip.Addr, error) {
	if s == "" {
		return netip.Addr{}, errors.New("serve needs --bind ADDR: the address clients reach this host on (--bind 0.0.0.0 or :: listens on every address)")
	}
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil {
		return netip.Addr{}, fmt.Errorf("--bind %q: not an IP address (give one of this host's, or 0.0.0.0 for every address)", s)
	}
	return a, nil
}

// annotateTune names the tune journal in effect in this process's network
// namespace, so that runs record which tuning they ran under.
func annotateTune(h *result.HostInfo) {
	if ns, err := tune.CurrentNetNS(); err == nil {
		h.TuneJournal = bench.ActiveTune(ns)
	}
}
