// Command benchengine compares linerate's native engine with iperf3 on the
// same path, in a lab (two network namespaces joined by a veth): a 10 s
// run of each, back to back, in capped-10g; and, in healthy, medians of
// interleaved single-stream pairs, plain and zero-copy, with the CPU time
// both ends' processes used (getrusage of each process). It prints a
// Markdown table; scripts/bench-engine.sh runs it. Needs root and iperf3.
//
//	go run ./cmd/benchengine -linerate ./linerate
//
// -mode tcpinfo compares the engine reading TCP_INFO at every interval
// with the engine not reading it, and with iperf3; -mode neper compares
// its rr, crr and 100-streams-on-2-threads tests with neper's tcp_rr,
// tcp_crr and tcp_stream (scripts/bench-neper.sh). Both run the engine
// through package agent, this program being both ends (flows.go).
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
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/lab"
)

func main() {
	bin := flag.String("linerate", "./linerate", "the linerate binary to measure")
	name := flag.String("lab", "bench", "lab name (made, reshaped and removed by this program)")
	pairs := flag.Int("pairs", 5, "interleaved pairs per comparison in healthy")
	capped := flag.Duration("capped", 10*time.Second, "length of the capped-10g runs")
	healthy := flag.Duration("t", 5*time.Second, "length of each healthy run")
	ff := addFlowFlags(flag.CommandLine)
	role := flag.String("role", "", "internal: run as one end of a test in a lab host (serve, client)")
	bind := flag.String("bind", "", "internal: -role serve's address")
	peer := flag.String("peer", "", "internal: -role client's agent")
	tokenFile := flag.String("token-file", "", "internal: the token of both roles")
	config := flag.String("config", "", "internal: -role client's test (agent.Config as JSON)")
	flag.Parse()
	if ran, err := roles(*role, *bind, *peer, *tokenFile, *config); ran {
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchengine:", err)
			os.Exit(2)
		}
		return
	}
	// Ctrl-C ends the run in progress and still removes the lab.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if ff.mode == "engine" {
		err = run(ctx, *bin, *name, *pairs, *capped, *healthy)
	} else {
		err = runFlows(ctx, ff, *name, *pairs, *healthy)
	}
	if _, derr := lab.Down(context.Background(), *name); derr != nil {
		err = errors.Join(err, derr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchengine:", err)
		os.Exit(2)
	}
}

// tool is one way to run a test: native (with extra bench flags) or iperf3
// (with extra client flags).
type tool struct {
	label string
	iperf bool
	args  []string
}

// sample is one run: throughput and CPU seconds of both processes.
type sample struct {
	gbps, cpu, secs float64
}

// cpuPerGbit is CPU seconds per gigabit moved: cores busy per Gbit/s.
func (s sample) cpuPerGbit() float64 { return s.cpu / (s.gbps * s.secs) }

func run(ctx context.Context, bin, name string, pairs int, capped, healthy time.Duration) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	if _, err := exec.LookPath("iperf3"); err != nil {
		return errors.New("iperf3 is not installed: apt-get install -y iperf3")
	}
	dir, err := os.MkdirTemp("", "benchengine-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tok := filepath.Join(dir, "token")
	if err := agent.WriteNewToken(tok); err != nil {
		return err
	}
	b := &bencher{ctx: ctx, bin: bin, lab: name, token: tok}

	native := tool{label: "native", args: []string{"-A", "0,1"}}
	iperf := tool{label: "iperf3", iperf: true, args: []string{"-A", "0,1"}}
	fmt.Printf("| scenario | comparison | native Gbit/s | iperf3 Gbit/s | ratio | native CPU s/Gbit | iperf3 CPU s/Gbit |\n|---|---|---|---|---|---|---|\n")
	if err := b.up(lab.Capped10G); err != nil {
		return err
	}
	rows := [][2]tool{{native, iperf}}
	// On a small VM 10 Gbit/s is near what one stream can carry at all,
	// so one pair is noise: the median of three back-to-back pairs.
	if err := b.compare("capped-10g", fmt.Sprintf("1 stream, %s, back to back, median of 3 pairs", capped), rows[0], 3, capped); err != nil {
		return err
	}
	if err := b.up(lab.Healthy); err != nil {
		return err
	}
	if err := b.compare("healthy", fmt.Sprintf("1 stream, %s, median of %d pairs", healthy, pairs), [2]tool{native, iperf}, pairs, healthy); err != nil {
		return err
	}
	zc := [2]tool{{label: "native -Z", args: []string{"-A", "0,1", "--zerocopy"}}, {label: "iperf3 -Z", iperf: true, args: []string{"-A", "0,1", "-Z"}}}
	if err := b.compare("healthy", fmt.Sprintf("--zerocopy vs iperf3 -Z, median of %d pairs", pairs), zc, pairs, healthy); err != nil {
		return err
	}
	msg := [2]tool{{label: "native msg_zerocopy", args: []string{"-A", "0,1", "--zerocopy=msg_zerocopy"}}, zc[0]}
	return b.compare("healthy", fmt.Sprintf("--zerocopy=msg_zerocopy vs sendfile (right column: native sendfile), median of %d pairs", pairs), msg, pairs, healthy)
}

type bencher struct {
	ctx             context.Context
	bin, lab, token string
	lastServer      []byte // the server's stdout of the last pair (flows.go)
}

func (b *bencher) up(s lab.Scenario) error {
	_, err := lab.Up(b.ctx, lab.Config{Name: b.lab, Scenario: s})
	return err
}

// compare runs n interleaved pairs (alternating which goes first, so a
// drift in the machine's speed hits both) and prints the medians.
func (b *bencher) compare(scenario, what string, t [2]tool, n int, d time.Duration) error {
	var a, c []sample
	for i := range n {
		order := []int{0, 1}
		if i%2 == 1 {
			order = []int{1, 0}
		}
		for _, k := range order {
			s, err := b.once(t[k], d)
			if err != nil {
				return fmt.Errorf("%s: %w", t[k].label, err)
			}
			fmt.Fprintf(os.Stderr, "%s %s run %d: %.2f Gbit/s, %.2f CPU s\n", scenario, t[k].label, i+1, s.gbps, s.cpu)
			if k == 0 {
				a = append(a, s)
			} else {
				c = append(c, s)
			}
		}
	}
	ma, mc := median(a, func(s sample) float64 { return s.gbps }), median(c, func(s sample) float64 { return s.gbps })
	fmt.Printf("| %s | %s | %.2f | %.2f | %.3f | %.3f | %.3f |\n", scenario, what, ma, mc, ma/mc,
		median(a, sample.cpuPerGbit), median(c, sample.cpuPerGbit))
	return nil
}

func median(s []sample, f func(sample) float64) float64 {
	v := make([]float64, len(s))
	for i, x := range s {
		v[i] = f(x)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// once runs one test: the server in host b, the client in host a, each a
// process whose CPU time is read from its rusage.
func (b *bencher) once(t tool, d time.Duration) (sample, error) {
	secs := fmt.Sprintf("%g", d.Seconds())
	var srv, cli *exec.Cmd
	var ready string
	if t.iperf {
		srv = exec.CommandContext(b.ctx, "iperf3", "-s", "-1", "--forceflush", "-B", lab.AddrB)
		cli = exec.CommandContext(b.ctx, "iperf3", append([]string{"-c", lab.AddrB, "-t", secs, "-J"}, t.args...)...)
		ready = "Server listening"
	} else {
		srv = exec.CommandContext(b.ctx, b.bin, "serve", "--once", "--bind", lab.AddrB, "--token-file", b.token)
		// --no-store: the run is measured here, and a client that stores
		// also runs doctor on both hosts, CPU time iperf3 does not spend.
		cli = exec.CommandContext(b.ctx, b.bin, append([]string{"bench", lab.AddrB, "-t", secs, "--json", "--no-store", "--token-file", b.token}, t.args...)...)
		ready = agent.ListeningPrefix
	}
	out, err := srv.StdoutPipe()
	if err != nil {
		return sample{}, err
	}
	if err := lab.Start(b.lab, lab.B, srv); err != nil {
		return sample{}, err
	}
	defer srv.Process.Kill()
	if err := waitFor(out, ready); err != nil {
		return sample{}, fmt.Errorf("server: %w", err)
	}
	go io.Copy(io.Discard, out)
	var stdout, stderr bytes.Buffer
	cli.Stdout, cli.Stderr = &stdout, &stderr
	if err := lab.Start(b.lab, lab.A, cli); err != nil {
		return sample{}, err
	}
	if err := cli.Wait(); err != nil {
		return sample{}, fmt.Errorf("client: %v: %s", err, stderr.String())
	}
	if err := srv.Wait(); err != nil {
		return sample{}, fmt.Errorf("server: %v", err)
	}
	var res struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
				Seconds       float64 `json:"seconds"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return sample{}, fmt.Errorf("client output: %v", err)
	}
	return sample{gbps: res.End.SumReceived.BitsPerSecond / 1e9, cpu: cpuOf(srv) + cpuOf(cli), secs: d.Seconds()}, nil
}

func waitFor(r io.Reader, prefix string) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if strings.Contains(sc.Text(), prefix) {
			return nil
		}
	}
	return errors.New("exited before listening")
}

// cpuOf is a finished process's user and system CPU seconds.
func cpuOf(c *exec.Cmd) float64 {
	ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
