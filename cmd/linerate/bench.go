package main

import (
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

	"github.com/linerate/linerate/internal/engine"
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
}

func newBenchCmd(env *cliEnv) *cobra.Command {
	f := benchFlags{duration: seconds(10 * time.Second), interval: seconds(time.Second)}
	cmd := &cobra.Command{
		Use:   "bench PEER",
		Short: "Measure TCP throughput to a 'linerate serve' agent, with per-CPU telemetry of both ends",
		Long: `bench runs one test of N TCP streams against the agent at PEER ('linerate serve'),
each stream on its own thread pinned to a CPU, and reports every interval the
throughput, TCP_INFO of each stream, and the per-CPU busy/irq/softirq load,
NET_RX/NET_TX softirqs and NIC interrupts of both hosts.

PEER is HOST, HOST:PORT, or lab:NAME to run between the two hosts of a lab
('linerate lab up --name NAME'): the agent starts in host b with a fresh token
and the client runs in host a.

The token comes from --token-file or $LINERATE_TOKEN. Without -A, bench picks
the CPUs: local to the NIC, off the CPUs serving its interrupts, and client
and agent apart when both run on one machine; the header and
start.placement say which.

Results go to stdout (the human report, --json or --json-stream); diagnostics
to stderr. Exit status: 0 the test ran, 2 it could not.`,
		Example: `  linerate bench 192.168.15.102 -t 30 -P 4
  linerate bench 192.168.15.102 -A 6,6 --zerocopy --json
  linerate bench lab:demo -t 10 --reverse`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runBench(cmd, env, args[0], f) },
	}
	fl := cmd.Flags()
	fl.VarP(&f.duration, "time", "t", "measured time: seconds (10) or a duration (1m30s)")
	fl.VarP(&f.omit, "omit", "O", "warm-up before measuring, not counted")
	fl.VarP(&f.interval, "interval", "i", "report interval, 100ms to 60s")
	fl.IntVarP(&f.streams, "parallel", "P", 1, "parallel streams (each way with --bidir), 1 to 128")
	fl.StringVarP(&f.affinity, "affinity", "A", "", "pin stream threads: CLIENT_CPUS,SERVER_CPUS (0,1 or 0-3,4-7), CLIENT/SERVER (0,2/1,3) or CLIENT")
	fl.BoolVarP(&f.reverse, "reverse", "R", false, "the agent sends, the client receives")
	fl.BoolVar(&f.bidir, "bidir", false, "send both ways at once")
	fl.StringVarP(&f.window, "window", "w", "", "socket buffers (SO_SNDBUF/SO_RCVBUF) on both ends, e.g. 4M; default autotuning")
	fl.StringVarP(&f.zerocopy, "zerocopy", "Z", "", "send without copying: sendfile (the default) or msg_zerocopy")
	fl.Lookup("zerocopy").NoOptDefVal = string(engine.Sendfile)
	fl.StringVarP(&f.congestion, "congestion", "C", "", "TCP congestion control, e.g. bbr or cubic")
	fl.StringVar(&f.fqRate, "fq-rate", "", "pace each stream (SO_MAX_PACING_RATE, needs the fq qdisc), bits/s: 10G, 500M")
	fl.BoolVarP(&f.json, "json", "J", false, "print the linerate.bench/v1 JSON document at the end")
	fl.BoolVar(&f.jsonStream, "json-stream", false, `print one JSON object per event as it happens ({"event": …, "data": …})`)
	fl.BoolVarP(&f.verbose, "verbose", "V", false, "a line per stream too")
	fl.StringVar(&f.tokenFile, "token-file", "", "read the agent's token from this file (mode 600); default $"+engine.TokenEnv)
	fl.IntVarP(&f.port, "port", "p", engine.DefaultPort, "the agent's port, unless PEER names one")
	return cmd
}

func runBench(cmd *cobra.Command, env *cliEnv, peer string, f benchFlags) error {
	cfg, err := f.config()
	if err != nil {
		return err
	}
	switch {
	case f.json && f.jsonStream:
		return errors.New("--json and --json-stream both own stdout: pick one")
	case f.jsonStream:
		cfg.Progress = engine.JSONStreamProgress(env.stdout)
	case !f.json:
		cfg.Progress = engine.TextProgress(env.stdout, f.verbose)
	}
	ctx, stop := interruptible(cmd)
	defer stop()
	var res *engine.Result
	if name, ok := strings.CutPrefix(peer, "lab:"); ok {
		lr := engine.LabRun{Name: name, Port: f.port}
		if f.verbose {
			lr.Stderr = env.stderr // the agent's log too
		}
		res, err = engine.RunInLab(ctx, lr, cfg)
	} else {
		if cfg.Token, err = benchToken(f.tokenFile); err != nil {
			return err
		}
		cfg.Peer = withDefaultPort(peer, f.port)
		res, err = engine.Run(ctx, cfg)
	}
	if err != nil {
		if f.jsonStream {
			_ = json.NewEncoder(env.stdout).Encode(engine.Event{Event: "error", Data: err.Error()})
		}
		return err
	}
	if f.json {
		return encodeJSON(env.stdout, res)
	}
	return nil
}

func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// config turns the flags into an engine.Config (without peer and token).
func (f benchFlags) config() (engine.Config, error) {
	cfg := engine.Config{Streams: f.streams, Duration: time.Duration(f.duration), Omit: time.Duration(f.omit),
		Interval: time.Duration(f.interval), Direction: engine.Send, Congestion: f.congestion}
	switch {
	case f.reverse && f.bidir:
		return cfg, errors.New("--reverse and --bidir: pick one")
	case f.reverse:
		cfg.Direction = engine.Receive
	case f.bidir:
		cfg.Direction = engine.Bidir
	}
	if f.streams < 1 || f.streams > engine.MaxStreams {
		return cfg, fmt.Errorf("-P %d: must be 1 to %d", f.streams, engine.MaxStreams)
	}
	var err error
	if f.affinity != "" {
		if cfg.ClientCPUs, cfg.ServerCPUs, err = engine.ParseAffinity(f.affinity); err != nil {
			return cfg, err
		}
	}
	if cfg.ZeroCopy, err = engine.ParseZeroCopy(f.zerocopy); err != nil {
		return cfg, fmt.Errorf("--zerocopy: %w", err)
	}
	if f.window != "" {
		w, err := parseSize(f.window, 1024)
		if err != nil || w > engine.MaxWindow {
			return cfg, fmt.Errorf("--window %q: give bytes with an optional K, M or G (powers of 1024), at most 2G-1", f.window)
		}
		cfg.Window = int(w)
	}
	if f.fqRate != "" {
		r, err := parseSize(f.fqRate, 1000)
		if err != nil {
			return cfg, fmt.Errorf("--fq-rate %q: give bits per second with an optional K, M, G or T (powers of 1000)", f.fqRate)
		}
		cfg.FQRate = r
	}
	return cfg, nil
}

// benchToken reads the token from the file, or from $LINERATE_TOKEN.
func benchToken(file string) ([]byte, error) {
	if file != "" {
		return engine.ReadTokenFile(file)
	}
	if v, ok := os.LookupEnv(engine.TokenEnv); ok {
		return engine.CheckToken([]byte(v))
	}
	return nil, fmt.Errorf("no token: pass --token-file FILE or set %s (the agent printed its token when it started)", engine.TokenEnv)
}

// withDefaultPort adds --port to a PEER written without one.
func withDefaultPort(peer string, port int) string {
	if strings.HasPrefix(peer, "[") && strings.Contains(peer, "]:") || strings.Count(peer, ":") == 1 {
		return peer
	}
	host := strings.TrimSuffix(strings.TrimPrefix(peer, "["), "]")
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
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
