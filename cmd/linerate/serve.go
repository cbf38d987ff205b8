package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/bench"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/tune"
)

type serveFlags struct {
	bind        string
	port        int
	tokenFile   string
	once        bool
	maxDuration time.Duration
}

func newServeCmd(env *cliEnv) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the peer agent that 'linerate bench' measures against",
		Long: `serve is the other end of 'linerate bench': it authenticates clients with a
shared token (HMAC challenge-response both ways; the token never crosses the
wire), runs their tests one at a time (others are told "busy"), and sends back
per-interval telemetry of this host: per-CPU busy, irq and softirq load,
NET_RX/NET_TX softirqs and the interrupts of the NIC under test.

For 'linerate bench --engine iperf3|iperf2|perftest' it also starts the
tool's server (iperf3 -s -1, iperf -s, ib_*_bw/ib_*_lat) for an
authenticated client: from a fixed list, with bounded arguments (never a
command line), on ports 1024 and up, iperf3's and iperf's bound to the
address the client reached the agent on (perftest's servers take no bind
address: they listen on every address for their setup exchange), pinned to
the CPUs asked for, and stopped when the client stops, when the test's
length and 30 s have passed, or when the agent dies; the agent samples this
host beside it. It hands authenticated clients this host's doctor report
(within 10 s), which bench stores with every run.

It listens on one TCP port only, control and data alike: by default port 5301
on every address of this host, because you asked for an agent by running
serve; use --bind to listen on one address only. Logs, with the reason of
every refusal, go to stderr.

Without --token-file it makes a token and prints it once. A token file must
be readable by its owner only (chmod 600).`,
		Example: `  linerate serve --token-file ~/.config/linerate/token
  linerate serve --bind 192.168.15.102 --once
  LINERATE_TOKEN=... linerate bench 192.168.15.102   # on the client`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runServe(cmd, env, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.bind, "bind", "", "listen on this address only (default: every address)")
	fl.IntVarP(&f.port, "port", "p", agent.DefaultPort, "TCP port for control and data")
	fl.StringVar(&f.tokenFile, "token-file", "", "read the shared token from this file (mode 600); default: make one and print it")
	fl.BoolVar(&f.once, "once", false, "exit after one test")
	fl.DurationVar(&f.maxDuration, "max-duration", agent.DefaultMaxDuration, "refuse tests longer than this")
	return cmd
}

func runServe(cmd *cobra.Command, env *cliEnv, f serveFlags) error {
	if f.port < 1 || f.port > 65535 {
		return fmt.Errorf("--port %d: must be 1 to 65535", f.port)
	}
	if f.maxDuration <= 0 {
		return errors.New("--max-duration must be positive, e.g. 10m or 1h")
	}
	token, err := serveToken(env, f.tokenFile)
	if err != nil {
		return err
	}
	addr := net.JoinHostPort(f.bind, strconv.Itoa(f.port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w (is another agent running? pick another --port)", addr, err)
	}
	fmt.Fprintf(env.stdout, "%s%s (one test at a time; Ctrl-C stops)\n", agent.ListeningPrefix, ln.Addr())
	ctx, stop := interruptible(cmd)
	defer stop()
	srv := &agent.Server{Token: token, MaxDuration: f.maxDuration, Once: f.once,
		Logger: slog.New(slog.NewTextHandler(env.stderr, nil)),
		Tools:  bench.AgentTools{}, Doctor: bench.LiveDoctor, Annotate: annotateTune}
	return srv.Serve(ctx, ln)
}

// annotateTune names the tune journal in effect in this process's network
// namespace, so that runs record which tuning they ran under.
func annotateTune(h *result.HostInfo) {
	if ns, err := tune.CurrentNetNS(); err == nil {
		h.TuneJournal = bench.ActiveTune(ns)
	}
}

// serveToken reads the token file, or makes a token and shows it once.
func serveToken(env *cliEnv, file string) ([]byte, error) {
	if file != "" {
		return agent.ReadTokenFile(file)
	}
	tok, err := agent.GenerateToken()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(env.stdout, `No --token-file: this agent's token is

    %s

Give it to the client, e.g. '%s=%s linerate bench HOST', or put it in
a file only you can read (chmod 600) and use --token-file on both ends.
`, tok, agent.TokenEnv, tok)
	return tok, nil
}
