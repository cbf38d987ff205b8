package bench

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/toolserver"
)

// Driver makes one run with one traffic generator.
type Driver interface {
	// Name is the --engine value: native, iperf3, iperf2, perftest.
	Name() string
	// Check says, before a campaign starts, whether the driver can run
	// here: an *UnavailableError when its tool or device is missing.
	Check() error
	// Run makes one run. live, if not nil, sees each interval as it
	// ends (drivers whose tool reports only at the end call it then).
	Run(ctx context.Context, p Params, live func(result.Interval)) (*result.Result, error)
}

// UnavailableError says in one line why a driver cannot run here and
// what to install; the CLI exits 2 with it.
type UnavailableError struct {
	Tool   string
	Reason string
}

func (e *UnavailableError) Error() string { return e.Reason }

// missingTool is the error for a program that is not installed.
func missingTool(prog, pkg string) error {
	return &UnavailableError{Tool: prog, Reason: fmt.Sprintf("%s is not installed: apt-get install %s (Debian/Ubuntu)", prog, pkg)}
}

// Hosts starts an external tool's two ends: the client here (or in lab
// host a), the server on the peer.
type Hosts interface {
	// Addr is the server's address as the client dials it.
	Addr() string
	// StartClient starts cmd on the client's host.
	StartClient(cmd *exec.Cmd) error
	// StartServer starts a tool server on the server's host, for a run of
	// length (the tool's duration and warm-up; whoever starts it adds its
	// own grace), and returns it with its command line.
	StartServer(ctx context.Context, t toolserver.ToolServer, length time.Duration) (ServerProc, []string, error)
	// Facts describes the two ends for the run's start section.
	Facts() (client, server result.HostInfo)
	// Iface is the client's interface toward the peer, "" when unknown;
	// NICIRQs are its interrupts (none for virtual interfaces).
	Iface() string
	NICIRQs() []int
}

// ServerProc is a tool server started on the peer.
type ServerProc interface {
	// Stop ends the server (it may have ended by itself, as iperf3 -1
	// does) and returns the CPU seconds it used and what it printed.
	Stop() (cpuSeconds float64, output string, err error)
}

// retryConnect runs try until it succeeds, fails for another reason than
// the server not listening yet, or 5 s pass: a tool server started a
// moment ago may not have bound its port.
func retryConnect(ctx context.Context, try func() (*result.Result, error), notYet func(error) bool) (*result.Result, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		r, err := try()
		if err == nil || !notYet(err) || time.Now().After(deadline) {
			return r, err
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// errBusy reports whether err is the peer refusing because it runs
// another test.
func errBusy(err error) bool {
	var pe *agent.PeerError
	return errors.As(err, &pe) && pe.Busy
}
