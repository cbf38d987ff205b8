package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/osthread"
	"github.com/linerate/linerate/internal/result"
)

// LabPrefix marks a peer that is a lab: "lab:NAME" runs the client in
// host a and the server in host b of lab NAME.
const LabPrefix = "lab:"

// LabHosts runs an external tool across a lab: the client in host a, the
// server in host b, both started directly (no agent is needed on one
// machine).
type LabHosts struct {
	Name   string
	bootID string
}

// NewLabHosts returns the hosts of lab name.
func NewLabHosts(name string) (*LabHosts, error) {
	if err := lab.ValidateName(name); err != nil {
		return nil, err
	}
	fs := hostfs.Live()
	defer fs.Close()
	boot, _ := fs.ReadString("proc/sys/kernel/random/boot_id")
	return &LabHosts{Name: name, bootID: boot}, nil
}

// Addr is host b's lab address.
func (l *LabHosts) Addr() string { return lab.AddrB }

// StartClient starts cmd in host a.
func (l *LabHosts) StartClient(cmd *exec.Cmd) error { return lab.Start(l.Name, lab.A, cmd) }

// Iface is the lab link's interface.
func (l *LabHosts) Iface() string { return lab.Iface }

// NICIRQs is empty: a veth has no interrupts.
func (l *LabHosts) NICIRQs() []int { return nil }

// Facts describes both lab hosts: one machine, so one boot ID.
func (l *LabHosts) Facts() (result.HostInfo, result.HostInfo) {
	h, _ := os.Hostname()
	c := result.HostInfo{Hostname: h, BootID: l.bootID, Iface: lab.Iface}
	return c, c
}

// StartServer starts t in host b, pinned with taskset(1) when it names
// CPUs (lab.Start forks from a thread of its own, so the thread-affinity
// way StartToolServer pins does not reach the child here).
func (l *LabHosts) StartServer(ctx context.Context, t ToolServer, _ time.Duration) (ServerProc, []string, error) {
	argv, err := t.Argv()
	if err != nil {
		return nil, nil, err
	}
	argv = pinned(t.CPUs, argv)
	// No Pdeathsig: lab.Start forks from a thread that ends right after,
	// which would kill the server at once. A server left by a killed bench
	// ends with its lab (lab down), or, for iperf3 -1, after one test.
	s, err := startLocalServer(argv, func(cmd *exec.Cmd, started chan<- error) {
		err := lab.Start(l.Name, lab.B, cmd)
		started <- err
		if err == nil {
			cmd.Wait()
		}
	})
	return s, argv, err
}

// localServer is a server process this process started.
type localServer struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
}

// startLocalServer starts argv through run, which starts the command,
// says on started whether that worked, and if it did waits for it to end
// (run goes on a goroutine of its own: the thread that forks a child may
// have to last as long as the child).
func startLocalServer(argv []string, run func(cmd *exec.Cmd, started chan<- error)) (*localServer, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	s := &localServer{cmd: cmd, out: out, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		defer close(s.done)
		run(cmd, started)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("starting %s on the server: %w", argv[0], err)
	}
	return s, nil
}

// Stop waits a moment for a server that ends by itself, then interrupts
// it, then kills it.
func (s *localServer) Stop() (float64, string, error) {
	for _, step := range []struct {
		sig  os.Signal
		wait time.Duration
	}{{nil, time.Second}, {os.Interrupt, time.Second}, {os.Kill, 5 * time.Second}} {
		if step.sig != nil {
			s.cmd.Process.Signal(step.sig)
		}
		select {
		case <-s.done:
			return cpuOf(s.cmd), s.out.String(), nil
		case <-time.After(step.wait):
		}
	}
	return 0, s.out.String(), fmt.Errorf("%s did not exit after SIGKILL", s.cmd.Path)
}

// serverOutputMax bounds what is kept of a tool server's output: its last
// 64 KiB. A server anyone can reach (iperf -s takes no token) could
// otherwise fill the agent's memory by printing.
const serverOutputMax = 64 << 10

// lockedBuffer keeps the last serverOutputMax bytes a process writes,
// safe to read while it writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	if len(p) >= serverOutputMax {
		p = p[len(p)-serverOutputMax:]
		l.b = l.b[:0]
	}
	if over := len(l.b) + len(p) - serverOutputMax; over > 0 {
		l.b = append(l.b[:0], l.b[over:]...)
	}
	l.b = append(l.b, p...)
	return n, nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// Doctor returns the linerate.doctor/v1 report of lab host h, for its
// lab link: what `linerate lab exec NAME h -- linerate doctor --iface
// lab0 --json` prints, computed in this process on a thread that entered
// the host's namespaces.
func (l *LabHosts) Doctor(h lab.Host) (json.RawMessage, error) {
	// The thread enters the host's mount namespace for good: it is thrown
	// away afterwards.
	var doc json.RawMessage
	err := osthread.Throwaway(func() (err error) {
		doc, err = l.doctorHere(h)
		return err
	})
	return doc, err
}

func (l *LabHosts) doctorHere(h lab.Host) (json.RawMessage, error) {
	if err := lab.Enter(l.Name, h); err != nil {
		return nil, fmt.Errorf("%w (run 'linerate lab up --name %s')", err, l.Name)
	}
	return doctor.LiveReport(lab.Iface)
}

// withTimeout bounds a driver's run: its duration, warm-up, and a margin
// for setup and the end.
func withTimeout(ctx context.Context, p Params) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, p.Duration+p.Omit+30*time.Second)
}
