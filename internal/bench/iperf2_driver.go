package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/telemetry"
	"github.com/linerate/linerate/internal/toolserver"
)

// iperf2Port is iperf2's default port.
const iperf2Port = 5001

// Iperf2 drives iperf 2 (Debian package "iperf"): a server on the peer,
// the client with enhanced CSV output (-e -y C) read line by line.
// iperf2 has no CPU option, so -A pins each end with taskset(1), which
// executes the tool in place (the same process, so its CPU time is the
// tool's).
type Iperf2 struct {
	Hosts Hosts
	FS    *hostfs.FS

	once    sync.Once
	err     error
	version string
}

// Name returns "iperf2".
func (d *Iperf2) Name() string { return "iperf2" }

// Check finds iperf (2) and, for placements, taskset.
func (d *Iperf2) Check() error {
	d.once.Do(func() {
		if _, err := exec.LookPath("iperf"); err != nil {
			d.err = missingTool("iperf", "iperf")
			return
		}
		out, _ := exec.Command("iperf", "-v").CombinedOutput() // "iperf version 2.1.8 (12 August 2022) pthreads", on stderr
		if f := strings.Fields(string(out)); len(f) >= 3 && f[1] == "version" {
			d.version = f[2]
		}
	})
	return d.err
}

func pinned(cpus []int, argv []string) []string {
	if len(cpus) == 0 {
		return argv
	}
	return append([]string{"taskset", "-c", cpulist.Format(cpus)}, argv...)
}

// CheckParams refuses what iperf2 cannot do.
func (d *Iperf2) CheckParams(p Params) error {
	if p.Omit > 0 {
		return errors.New("iperf2 2.1 has no warm-up option: drop -O for --engine iperf2")
	}
	return nil
}

// Run makes one iperf2 run.
func (d *Iperf2) Run(ctx context.Context, p Params, live func(result.Interval)) (*result.Result, error) {
	if err := d.Check(); err != nil {
		return nil, err
	}
	if err := d.CheckParams(p); err != nil {
		return nil, err
	}
	if len(p.Pinning.Client) > 0 {
		if _, err := exec.LookPath("taskset"); err != nil {
			return nil, missingTool("taskset", "util-linux")
		}
	}
	ctx, cancel := withTimeout(ctx, p)
	defer cancel()
	port := strconv.Itoa(iperf2Port)
	srv, srvArgv, err := d.Hosts.StartServer(ctx, toolserver.ToolServer{Tool: "iperf", Port: iperf2Port, Bind: d.Hosts.Addr(), CPUs: p.Pinning.Server}, p.Duration+p.Omit)
	if err != nil {
		return nil, err
	}
	args := []string{"iperf", "-c", d.Hosts.Addr(), "-p", port, "-t", secs(p.Duration), "-i", secs(p.Interval),
		"-P", strconv.Itoa(p.Streams), "-e", "-y", "C"}
	switch p.Direction {
	case result.Receive:
		args = append(args, "-R")
	case result.Bidir:
		args = append(args, "--full-duplex")
	}
	if p.Window > 0 {
		args = append(args, "-w", strconv.Itoa(p.Window))
	}
	args = pinned(p.Pinning.Client, args)
	nic := beginNIC(d.Hosts) // both ends' NIC counters, before any payload
	var raw string
	var clientCPU float64
	run, err := retryConnect(ctx, func() (*result.Result, error) {
		r, out, cpu, err := d.client(ctx, p, args, authOf(srv), live)
		raw, clientCPU = out, cpu
		return r, err
	}, func(err error) bool { return strings.Contains(err.Error(), "connect failed") })
	srvCPU, srvOut, stopErr := srv.Stop()
	if err != nil {
		return nil, withServerOutput(err, srvOut)
	}
	if stopErr != nil {
		return nil, stopErr
	}
	attachServer(run, srv)
	run.End.NICCounters = nic.end(srv)
	run.Raw = raw
	run.Tool = &result.Tool{Name: "iperf2", Version: d.version, Client: args, Server: srvArgv}
	// iperf2 reports no CPU time: the processes' own (getrusage) it is.
	// The server ran a little before and after the test; that is noise
	// next to a multi-second run.
	run.End.CPU = result.EndCPU{ClientSeconds: clientCPU, ServerSeconds: srvCPU}
	finishStart(run, p, d.Hosts)
	return run, nil
}

func (d *Iperf2) client(ctx context.Context, p Params, args []string, auth toolserver.ClientAuth, live func(result.Interval)) (*result.Result, string, float64, error) {
	cmd := auth.Command(ctx, args)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", 0, err
	}
	var smp *telemetry.Ticker
	if !p.NoTelemetry {
		smp = telemetry.Start(fsOr(d.FS), d.Hosts.NICIRQs(), p.Interval)
	}
	if err := d.Hosts.StartClient(cmd); err != nil {
		smp.Stop()
		return nil, "", 0, err
	}
	var parser Iperf2Parser
	var raw strings.Builder
	var perr error
	nLive := 0
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		raw.WriteString(sc.Text() + "\n")
		iv, ok, err := parser.Line(sc.Text())
		if err != nil && perr == nil {
			perr = err
		}
		if ok && live != nil {
			if cs, have := smp.At(nLive); have {
				iv.CPU.Client = cs.PerCPU
			}
			nLive++
			live(iv)
		}
	}
	werr := cmd.Wait()
	samples := smp.Stop()
	if perr != nil {
		return nil, raw.String(), 0, perr
	}
	run, err := parser.Result()
	if err != nil {
		// iperf2 exits 0 with nothing on stdout when it cannot connect;
		// its reason is on stderr ("tcp connect failed: Connection refused").
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return nil, raw.String(), 0, fmt.Errorf("iperf2: %s", firstLine(msg))
		}
		return nil, raw.String(), 0, err
	}
	if werr != nil {
		return nil, raw.String(), 0, fmt.Errorf("iperf2 client: %v: %s", werr, strings.TrimSpace(stderr.String()))
	}
	attach(run, samples, sameHosts(d.Hosts))
	attachUnread(run, smp.Unread(), sameHosts(d.Hosts))
	return run, raw.String(), toolserver.ProcessCPU(cmd), nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
