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
	"time"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/result"
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

func init() {
	register(DriverInfo{Name: "iperf2", Rank: 2, New: func(h Hosts, _ TargetConfig) Driver { return &Iperf2{Hosts: h} }})
}

// Run makes one iperf2 run.
func (d *Iperf2) Run(ctx context.Context, p Params, live func(result.Interval)) (*result.Result, error) {
	return runTool(ctx, d, d.Hosts, p, live)
}

func (d *Iperf2) server(p Params) (toolserver.ToolServer, time.Duration) {
	return toolserver.ToolServer{Tool: "iperf", Port: iperf2Port, Bind: d.Hosts.Addr(), CPUs: p.Pinning.Server}, p.Duration + p.Omit
}

// client is iperf's client with enhanced CSV output, pinned with taskset.
func (d *Iperf2) client(p Params) ([]string, error) {
	if len(p.Pinning.Client) > 0 {
		if _, err := exec.LookPath("taskset"); err != nil {
			return nil, missingTool("taskset", "util-linux")
		}
	}
	args := []string{"iperf", "-c", d.Hosts.Addr(), "-p", strconv.Itoa(iperf2Port), "-t", secs(p.Duration), "-i", secs(p.Interval),
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
	return pinned(p.Pinning.Client, args), nil
}

func (d *Iperf2) notYet(err error) bool { return strings.Contains(err.Error(), "connect failed") }

// finish names the tool and its version, and sets both ends' CPU time:
// iperf2 reports none, so the processes' own (getrusage) it is. The
// server ran a little before and after the test; that is noise next to a
// multi-second run.
func (d *Iperf2) finish(r *result.Result, _ Params, m measured, _ ServerProc, serverCPU float64) {
	r.Tool.Name, r.Tool.Version = "iperf2", d.version
	r.End.CPU = result.EndCPU{ClientSeconds: m.clientCPU, ServerSeconds: serverCPU}
}

// measure runs the client once, reading its lines as they come.
func (d *Iperf2) measure(ctx context.Context, p Params, args []string, auth toolserver.ClientAuth, live func(result.Interval)) (measured, error) {
	cmd := auth.Command(ctx, args)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return measured{}, err
	}
	smp := sample(d.FS, d.Hosts, p)
	if err := d.Hosts.StartClient(cmd); err != nil {
		smp.Stop()
		return measured{}, err
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
		return measured{raw: raw.String()}, perr
	}
	run, err := parser.Result()
	if err != nil {
		// iperf2 exits 0 with nothing on stdout when it cannot connect;
		// its reason is on stderr ("tcp connect failed: Connection refused").
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return measured{raw: raw.String()}, fmt.Errorf("iperf2: %s", firstLine(msg))
		}
		return measured{raw: raw.String()}, err
	}
	if werr != nil {
		return measured{raw: raw.String()}, fmt.Errorf("iperf2 client: %v: %s", werr, strings.TrimSpace(stderr.String()))
	}
	attach(run, samples, sameHosts(d.Hosts))
	attachUnread(run, smp.Unread(), sameHosts(d.Hosts))
	return measured{run: run, raw: raw.String(), clientCPU: toolserver.ProcessCPU(cmd)}, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
