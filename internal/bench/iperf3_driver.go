package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/toolserver"
)

// iperf3Port is the port the driver's iperf3 servers listen on: iperf3's
// default, so the command printed to reproduce a run needs no -p.
const iperf3Port = 5201

// Iperf3 drives iperf3: a one-off server (-s -1) on the peer, the client
// with -J, or --json-stream where the installed iperf3 has it (3.17 and
// later) so intervals show as they happen.
type Iperf3 struct {
	Hosts Hosts
	// FS is where telemetry is read; nil is the live host.
	FS *hostfs.FS

	once   sync.Once
	stream bool // the installed iperf3 has --json-stream
	err    error
}

// Name returns "iperf3".
func (d *Iperf3) Name() string { return "iperf3" }

// Check finds iperf3 and whether it has --json-stream.
func (d *Iperf3) Check() error {
	d.once.Do(func() {
		if _, err := exec.LookPath("iperf3"); err != nil {
			d.err = missingTool("iperf3", "iperf3")
			return
		}
		// --help lists --json-stream from 3.17 on; 3.12 (Debian 12) does not.
		out, _ := exec.Command("iperf3", "--help").CombinedOutput()
		d.stream = bytes.Contains(out, []byte("--json-stream"))
	})
	return d.err
}

// clientArgs builds the client's command line.
func (d *Iperf3) clientArgs(p Params) []string {
	a := []string{"iperf3", "-c", d.Hosts.Addr(), "-p", strconv.Itoa(iperf3Port),
		"-t", secs(p.Duration), "-i", secs(p.Interval), "-P", strconv.Itoa(p.Streams)}
	if p.Omit > 0 {
		a = append(a, "-O", secs(p.Omit))
	}
	switch pl := p.Pinning; {
	case pl.Auto():
	case len(pl.Server) == 0:
		a = append(a, "-A", firstCPU(pl.Client)) // the client only; "-A n," would pin the server to CPU 0
	default:
		// iperf3 pins its whole process to one CPU per end (-A n,m).
		a = append(a, "-A", firstCPU(pl.Client)+","+firstCPU(pl.Server))
	}
	switch p.Direction {
	case result.Receive:
		// The server sends, so only it counts retransmits per interval.
		a = append(a, "-R", "--get-server-output")
	case result.Bidir:
		a = append(a, "--bidir")
	}
	if p.Window > 0 {
		a = append(a, "-w", strconv.Itoa(p.Window))
	}
	if pr := p.Probe; pr != nil && pr.Kind == agent.ProbeUDP {
		// -b 0 is unlimited for iperf3 -u, as a rate of 0 is for the engine.
		a = append(a, "-u", "-b", strconv.FormatFloat(pr.Rate, 'f', 0, 64), "-l", strconv.Itoa(pr.Size))
	}
	if d.stream {
		return append(a, "--json-stream")
	}
	return append(a, "-J")
}

// CheckParams refuses placements iperf3 cannot make: -A pins each end's
// whole process to one CPU, and the server only through the client's
// choice.
func (d *Iperf3) CheckParams(p Params) error {
	pl := p.Pinning
	if pr := p.Probe; pr != nil {
		switch {
		case pr.Kind != agent.ProbeUDP:
			return errors.New("iperf3 runs no ping-pong: use --engine native or sockperf for --latency")
		case pr.Method != "" && pr.Method != engine.UDPWrite:
			return fmt.Errorf("iperf3 sends one datagram per write: the UDP send method %q is the native engine's", pr.Method)
		}
	}
	switch {
	case len(pl.Client) > 1 || len(pl.Server) > 1:
		return errors.New("iperf3 -A pins each end to one CPU: give one CPU per side")
	case len(pl.Client) == 0 && len(pl.Server) > 0:
		return errors.New("iperf3 pins its server only through the client's -A n,m: give the client's CPU too")
	}
	return nil
}

func init() {
	register(DriverInfo{Name: "iperf3", Rank: 1, Caps: Caps{UDPStream: true, UDPReverse: true}, New: func(h Hosts, _ TargetConfig) Driver { return &Iperf3{Hosts: h} }})
}

// Run makes one iperf3 run.
func (d *Iperf3) Run(ctx context.Context, p Params, live func(result.Interval)) (*result.Result, error) {
	return runTool(ctx, d, d.Hosts, p, live)
}

// server is a one-off iperf3 server; -A pins it: iperf3 passes the
// client's choice to it.
func (d *Iperf3) server(p Params) (toolserver.ToolServer, time.Duration) {
	return toolserver.ToolServer{Tool: "iperf3", Port: iperf3Port, Bind: d.Hosts.Addr()}, p.Duration + p.Omit
}

func (d *Iperf3) client(p Params) ([]string, error) { return d.clientArgs(p), nil }

func (d *Iperf3) notYet(err error) bool { return strings.Contains(err.Error(), "unable to connect") }

// finish has nothing to add: iperf3 named itself and its version, and
// reported both ends' CPU time.
func (d *Iperf3) finish(*result.Result, Params, measured, ServerProc, float64) {}

// measure runs the client once, with telemetry beside it.
func (d *Iperf3) measure(ctx context.Context, p Params, args []string, auth toolserver.ClientAuth, live func(result.Interval)) (measured, error) {
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
	var raw bytes.Buffer
	tee := io.TeeReader(stdout, &raw)
	var run *result.Result
	if d.stream {
		run, err = ParseIperf3Stream(tee, live)
	} else {
		var b []byte
		if b, err = io.ReadAll(tee); err == nil {
			run, err = ParseIperf3(b)
		}
	}
	io.Copy(io.Discard, stdout)
	werr := cmd.Wait()
	samples := smp.Stop()
	switch {
	case err != nil:
		return measured{raw: raw.String()}, err
	case werr != nil:
		return measured{raw: raw.String()}, fmt.Errorf("iperf3 client: %v: %s", werr, strings.TrimSpace(stderr.String()))
	}
	attach(run, samples, sameHosts(d.Hosts))
	attachUnread(run, smp.Unread(), sameHosts(d.Hosts))
	// 3.12 reports at the end only; --json-stream showed each interval.
	return measured{run: run, raw: raw.String(), atEnd: !d.stream}, nil
}

func fsOr(fs *hostfs.FS) *hostfs.FS {
	if fs == nil {
		return hostfs.Live()
	}
	return fs
}

func sameHosts(h Hosts) bool {
	c, s := h.Facts()
	return c.BootID != "" && c.BootID == s.BootID
}

func finishStart(r *result.Result, p Params, h Hosts) {
	r.Start.Client, r.Start.Server = h.Facts()
	r.Start.Placement = result.Placement{Client: p.Pinning.Client, Server: p.Pinning.Server, Source: "user"}
	if p.Pinning.Auto() {
		r.Start.Placement.Source = "auto"
	}
	if r.Start.IntervalS == 0 {
		r.Start.IntervalS = p.Interval.Seconds()
	}
	if r.Start.Timestamp.IsZero() {
		r.Start.Timestamp = time.Now().UTC()
	}
}

func withServerOutput(err error, out string) error {
	if out = strings.TrimSpace(out); out != "" && !errBusy(err) {
		if len(out) > 300 {
			out = out[len(out)-300:]
		}
		return fmt.Errorf("%w (server said: %s)", err, strings.ReplaceAll(out, "\n", "; "))
	}
	return err
}

// secs writes a duration in seconds the way iperf takes it: "2", "0.1".
func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }

func firstCPU(cpus []int) string {
	if len(cpus) == 0 {
		return ""
	}
	return cpulist.Format(cpus[:1])
}
