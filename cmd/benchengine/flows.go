package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/result"
)

// The engine-level modes (-mode tcpinfo, -mode neper) run linerate's
// engine through package agent directly, with what the bench command
// has no flags for: this program runs itself as the agent in the lab's
// host b (-role serve) and as the client in host a (-role client, the
// test given as agent.Config JSON), each a process whose CPU time is
// read from its rusage. Their reference runs in the same hosts at
// alternating turns: iperf3, or neper built elsewhere (-neper DIR: this
// repository builds no part of it).

// roles runs the program as one end of a test when -role says so, and
// reports whether it did.
func roles(role, bind, peer, tokenFile, config string) (bool, error) {
	switch role {
	case "":
		return false, nil
	case "serve":
		tok, err := agent.ReadTokenFile(tokenFile)
		if err != nil {
			return true, err
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(bind, strconv.Itoa(agent.DefaultPort)))
		if err != nil {
			return true, err
		}
		fmt.Println(agent.ListeningPrefix + ln.Addr().String())
		return true, (&agent.Server{Token: tok, Once: true}).Serve(context.Background(), ln)
	case "client":
		tok, err := agent.ReadTokenFile(tokenFile)
		if err != nil {
			return true, err
		}
		var tc testConfig
		if err := json.Unmarshal([]byte(config), &tc); err != nil {
			return true, fmt.Errorf("-config: %w", err)
		}
		cfg := tc.config()
		cfg.Peer, cfg.Token = peer, tok
		res, err := agent.Run(context.Background(), cfg)
		if err != nil {
			return true, err
		}
		return true, json.NewEncoder(os.Stdout).Encode(res)
	}
	return true, fmt.Errorf("unknown -role %q (serve or client)", role)
}

// testConfig is the part of agent.Config a comparison sets, as -config
// carries it to the client.
type testConfig struct {
	Mode                   result.Mode
	Streams, Threads, Size int
	Duration, Interval     time.Duration
	NoTCPInfo              bool
	SkipRxCopy             result.SkipRxCopy
	ClientCPUs, ServerCPUs []int
}

func (t testConfig) config() agent.Config {
	return agent.Config{Test: agent.Test{Params: engine.Params{Mode: t.Mode, Streams: t.Streams, Threads: t.Threads, Size: t.Size, Duration: t.Duration, Interval: t.Interval, NoTCPInfo: t.NoTCPInfo, SkipRxCopy: t.SkipRxCopy}, Pinning: agent.Pinning{Client: t.ClientCPUs, Server: t.ServerCPUs}}}
}

// flowFlags are the engine-level modes' own flags.
type flowFlags struct {
	mode, neper string
}

func addFlowFlags(fs *flag.FlagSet) *flowFlags {
	f := &flowFlags{}
	fs.StringVar(&f.mode, "mode", "engine", "engine: native vs iperf3 (bench-engine.sh); tcpinfo: native with and without TCP_INFO per interval, against iperf3; neper: rr, crr and 100 streams on 2 threads against neper; rxcopy: the receiver's copy, kept, skipped (msg_trunc) and mapped (zerocopy_receive)")
	fs.StringVar(&f.neper, "neper", os.Getenv("NEPER_DIR"), "directory of a neper build (tcp_rr, tcp_crr, tcp_stream) for -mode neper")
	return f
}

// sample2 is one run of an engine-level comparison: its figure and both
// processes' CPU seconds.
type sample2 struct{ value, cpu float64 }

// side is one way to run a comparison's test.
type side struct {
	label string
	run   func(b *bencher, d time.Duration) (sample2, error)
}

// comparePairs runs n interleaved pairs of a and c, alternating which
// goes first, and prints the medians and their ratio.
func (b *bencher) comparePairs(what, unit string, a, c side, n int, d time.Duration) error {
	var va, vc []float64
	for i := range n {
		order := []int{0, 1}
		if i%2 == 1 {
			order = []int{1, 0}
		}
		for _, k := range order {
			s := [2]side{a, c}[k]
			r, err := s.run(b, d)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", what, s.label, err)
			}
			fmt.Fprintf(os.Stderr, "%s: %s run %d: %.4g %s, %.2f CPU s\n", what, s.label, i+1, r.value, unit, r.cpu)
			if k == 0 {
				va = append(va, r.value)
			} else {
				vc = append(vc, r.value)
			}
		}
	}
	ma, mc := med(va), med(vc)
	fmt.Printf("| %s | %s | %.4g | %s | %.4g | %.3f | %s | %s |\n", what, a.label, ma, c.label, mc, ma/mc, runs(va), runs(vc))
	return nil
}

func med(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func runs(v []float64) string {
	var parts []string
	for _, x := range v {
		parts = append(parts, strconv.FormatFloat(x, 'g', 4, 64))
	}
	return strings.Join(parts, " ")
}

// native is a side that runs cfg through the agent: this program as the
// agent in host b and as the client in host a. value picks the figure
// from the result.
func native(label string, cfg testConfig, value func(*result.Result) float64) side {
	return side{label: label, run: func(b *bencher, d time.Duration) (sample2, error) {
		cfg.Duration = d
		js, err := json.Marshal(cfg)
		if err != nil {
			return sample2{}, err
		}
		self, err := os.Executable()
		if err != nil {
			return sample2{}, err
		}
		srv := exec.CommandContext(b.ctx, self, "-role", "serve", "-bind", lab.AddrB, "-token-file", b.token)
		cli := exec.CommandContext(b.ctx, self, "-role", "client", "-peer", lab.AddrB, "-token-file", b.token, "-config", string(js))
		out, err := b.pair(srv, cli, agent.ListeningPrefix)
		if err != nil {
			return sample2{}, err
		}
		var res result.Result
		if err := json.Unmarshal(out, &res); err != nil {
			return sample2{}, fmt.Errorf("client output: %v", err)
		}
		if len(res.End.Errors) > 0 {
			return sample2{}, fmt.Errorf("the run's errors: %s", strings.Join(res.End.Errors, "; "))
		}
		return sample2{value: value(&res), cpu: cpuOf(srv) + cpuOf(cli)}, nil
	}}
}

// pair starts srv in host b, waits for ready on its stdout (or, when
// ready is "", half a second), runs cli in host a and returns its stdout
// once both ended.
func (b *bencher) pair(srv, cli *exec.Cmd, ready string) ([]byte, error) {
	out, err := srv.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var srvOut bytes.Buffer
	if err := lab.Start(b.lab, lab.B, srv); err != nil {
		return nil, err
	}
	defer srv.Process.Kill()
	if ready != "" {
		if err := waitFor(out, ready); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
	} else {
		time.Sleep(500 * time.Millisecond)
	}
	copied := make(chan struct{})
	go func() { io.Copy(&srvOut, out); close(copied) }()
	var stdout, stderr bytes.Buffer
	cli.Stdout, cli.Stderr = &stdout, &stderr
	if err := lab.Start(b.lab, lab.A, cli); err != nil {
		return nil, err
	}
	if err := cli.Wait(); err != nil {
		return nil, fmt.Errorf("client: %v: %s", err, stderr.String())
	}
	<-copied
	if err := srv.Wait(); err != nil {
		return nil, fmt.Errorf("server: %v", err)
	}
	b.lastServer = srvOut.Bytes()
	return stdout.Bytes(), nil
}

// neperSide runs one of neper's tests: the server in host b, the client
// in host a, both with args; value reads the figure from the client's
// or (stream tests: the receiver's) the server's output.
func neperSide(label, dir, prog string, args []string, fromServer bool, key string, scale float64) side {
	return side{label: label, run: func(b *bencher, d time.Duration) (sample2, error) {
		bin := filepath.Join(dir, prog)
		l := strconv.Itoa(int(d.Seconds()))
		// --nolog: neper otherwise writes a log file into its working
		// directory every run.
		srv := exec.CommandContext(b.ctx, bin, append([]string{"--nolog", "-l", l}, args...)...)
		cli := exec.CommandContext(b.ctx, bin, append([]string{"--nolog", "-c", "-H", lab.AddrB, "-l", l}, args...)...)
		out, err := b.pair(srv, cli, "")
		if err != nil {
			return sample2{}, err
		}
		if fromServer {
			out = b.lastServer
		}
		v, err := neperKey(out, key)
		if err != nil {
			return sample2{}, err
		}
		return sample2{value: v * scale, cpu: cpuOf(srv) + cpuOf(cli)}, nil
	}}
}

// neperKey reads key=value from neper's output.
func neperKey(out []byte, key string) (float64, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+"="); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("neper printed no %s", key)
}

func txnRate(r *result.Result) float64 {
	if r.End.Transactions == nil {
		return 0
	}
	return r.End.Transactions.PerSecond
}

func gbps(r *result.Result) float64 { return r.End.SumReceived.BitsPerSecond / 1e9 }

// rxCopy runs one stream with the receiver copying, skipping the copy
// (msg_trunc) and mapping (zerocopy_receive), in rotating order, and
// prints the medians of the goodput and of the receiving thread's CPU per
// 10^9 bytes, and the share of it the copy took.
func (b *bencher) rxCopy(pairs int, d time.Duration) error {
	methods := []result.SkipRxCopy{result.RxCopy, result.MsgTrunc, result.ZerocopyReceive}
	gb := map[result.SkipRxCopy][]float64{}
	cpu := map[result.SkipRxCopy][]float64{}
	var mapped, copied uint64
	for i := range pairs {
		for j := range methods {
			m := methods[(i+j)%len(methods)]
			var rc *result.RxCopyReport
			s := native(string(m), testConfig{Streams: 1, SkipRxCopy: m, ClientCPUs: []int{0}, ServerCPUs: []int{1}},
				func(r *result.Result) float64 { rc = r.End.RxCopy; return gbps(r) })
			r, err := s.run(b, d)
			if err != nil {
				return fmt.Errorf("rxcopy %q: %w", m, err)
			}
			if rc == nil || rc.Method != m {
				return fmt.Errorf("rxcopy %q: the receiver did %+v", m, rc)
			}
			fmt.Fprintf(os.Stderr, "rxcopy %q run %d: %.2f Gbit/s, receiver %.3f CPU s/GB, %d mapped, %d copied\n", m, i+1, r.value, rc.ReceiverCPUSecondsPerGB, rc.MappedBytes, rc.CopiedBytes)
			gb[m], cpu[m] = append(gb[m], r.value), append(cpu[m], rc.ReceiverCPUSecondsPerGB)
			if m == result.ZerocopyReceive {
				mapped, copied = mapped+rc.MappedBytes, copied+rc.CopiedBytes
			}
		}
	}
	fmt.Printf("| receiver | Gbit/s (median) | receiving thread CPU s/GB (median) | share of the copying receiver's | runs, Gbit/s |\n|---|---|---|---|---|\n")
	base := med(cpu[result.RxCopy])
	for _, m := range methods {
		name := string(m)
		if m == result.RxCopy {
			name = "copy (read)"
		}
		fmt.Printf("| %s | %.2f | %.3f | %.2f | %s |\n", name, med(gb[m]), med(cpu[m]), med(cpu[m])/base, runs(gb[m]))
	}
	fmt.Printf("\nzerocopy_receive: %d bytes mapped, %d copied by the kernel over all its runs\n", mapped, copied)
	return nil
}

// runFlows runs the engine-level modes.
func runFlows(ctx context.Context, f *flowFlags, name string, pairs int, d time.Duration) error {
	dir, err := os.MkdirTemp("", "benchengine-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tok := filepath.Join(dir, "token")
	if err := agent.WriteNewToken(tok); err != nil {
		return err
	}
	b := &bencher{ctx: ctx, lab: name, token: tok}
	if err := b.up(lab.Healthy); err != nil {
		return err
	}
	if f.mode != "rxcopy" {
		fmt.Printf("| comparison | engine | median | reference | median | ratio | engine runs | reference runs |\n|---|---|---|---|---|---|---|---|\n")
	}
	switch f.mode {
	case "tcpinfo":
		if _, err := exec.LookPath("iperf3"); err != nil {
			return errors.New("iperf3 is not installed: apt-get install -y iperf3")
		}
		iperf := side{label: "iperf3 -A 0,1", run: func(b *bencher, d time.Duration) (sample2, error) {
			s, err := b.once(tool{iperf: true, args: []string{"-A", "0,1"}}, d)
			return sample2{value: s.gbps, cpu: s.cpu}, err
		}}
		for _, c := range []struct {
			what string
			cfg  testConfig
		}{
			{"1 stream, 1 s intervals, Gbit/s", testConfig{Streams: 1, ClientCPUs: []int{0}, ServerCPUs: []int{1}}},
			{"8 streams, 100 ms intervals, Gbit/s", testConfig{Streams: 8, Interval: 100 * time.Millisecond, ClientCPUs: []int{0}, ServerCPUs: []int{1}}},
		} {
			on, off := c.cfg, c.cfg
			off.NoTCPInfo = true
			if err := b.comparePairs(c.what, "Gbit/s", native("TCP_INFO read", on, gbps), native("TCP_INFO not read", off, gbps), pairs, d); err != nil {
				return err
			}
			if err := b.comparePairs(c.what, "Gbit/s", native("TCP_INFO read", on, gbps), iperf, pairs, d); err != nil {
				return err
			}
		}
		return nil
	case "rxcopy":
		return b.rxCopy(pairs, d)
	case "neper":
		if f.neper == "" {
			return errors.New("-mode neper needs a neper build: -neper DIR (or NEPER_DIR)")
		}
		for _, p := range []string{"tcp_rr", "tcp_crr", "tcp_stream"} {
			if _, err := os.Stat(filepath.Join(f.neper, p)); err != nil {
				return fmt.Errorf("no %s in %s: build neper there first (make tcp_rr tcp_crr tcp_stream)", p, f.neper)
			}
		}
		rr := testConfig{Mode: result.RR, Streams: 10, Threads: 2, Size: 1}
		crr := testConfig{Mode: result.CRR, Streams: 1, Threads: 1, Size: 1}
		st := testConfig{Streams: 100, Threads: 2}
		for _, c := range []struct {
			what, unit string
			a, c       side
		}{
			{"rr: 10 flows on 2 threads, 1-byte request and response, transactions/s", "tx/s",
				native("linerate rr", rr, txnRate), neperSide("neper tcp_rr -F 10 -T 2", f.neper, "tcp_rr", []string{"-F", "10", "-T", "2"}, false, "throughput", 1)},
			{"crr: 1 flow, a connection per transaction, transactions/s", "tx/s",
				native("linerate crr", crr, txnRate), neperSide("neper tcp_crr", f.neper, "tcp_crr", nil, false, "throughput", 1)},
			{"stream: 100 flows on 2 threads, receiver's Gbit/s", "Gbit/s",
				native("linerate -P 100 --threads 2", st, gbps), neperSide("neper tcp_stream -F 100 -T 2", f.neper, "tcp_stream", []string{"-F", "100", "-T", "2"}, true, "throughput", 1e-3)},
		} {
			if err := b.comparePairs(c.what, c.unit, c.a, c.c, pairs, d); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown -mode %q (engine, tcpinfo or neper)", f.mode)
}
