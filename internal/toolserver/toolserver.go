package toolserver

import (
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/osthread"
)

// ToolServer is an external tool's server as a driver asks for it. It is
// structured, not a command line: whoever starts it (the lab, or the
// agent on the peer for a remote client) builds the command line itself
// from an allowlist, so a client can only ever get one of these servers
// with bounded arguments, and never a shell.
type ToolServer struct {
	Tool     string         `json:"tool"` // iperf3, iperf, or a perftest tool (ib_write_bw, …)
	Bind     string         `json:"bind,omitempty"`
	Port     int            `json:"port,omitempty"`
	CPUs     []int          `json:"cpus,omitempty"` // pin the server here; empty: unpinned
	Perftest PerftestParams `json:"perftest,omitzero"`
	Streams  int            `json:"streams,omitempty"` // perftest queue pairs
	TCP      bool           `json:"tcp,omitempty"`     // sockperf over TCP; else UDP

	// extra are the credentials' arguments the agent adds (toolauth.go);
	// never from the client's description.
	extra []string
}

// Argv checks t against the allowlist and returns its command line.
func (t ToolServer) Argv() ([]string, error) {
	if len(t.CPUs) > 4096 || slices.ContainsFunc(t.CPUs, func(c int) bool { return c < 0 || c >= 1<<16 }) {
		return nil, errors.New("tool server CPUs out of range")
	}
	if t.Bind != "" {
		if _, err := netip.ParseAddr(t.Bind); err != nil {
			return nil, fmt.Errorf("tool server bind address %q: not an IP address", t.Bind)
		}
	}
	if t.Port < 0 || t.Port > 65535 {
		return nil, fmt.Errorf("tool server port %d: out of range", t.Port)
	}
	switch {
	case t.Tool == "iperf3":
		// No -1: iperf3 counts a connection that closes before sending
		// its parameters as its one test and exits, so any stranger could
		// end it before the client comes. It serves until the agent stops
		// it.
		return append(t.withNet([]string{"iperf3", "-s"}, "-p", "-B"), t.extra...), nil
	case t.Tool == "iperf":
		return append(t.withNet([]string{"iperf", "-s"}, "-p", "-B"), t.extra...), nil
	case t.Tool == "netserver":
		// -D: in the foreground, so that stopping it ends it.
		return t.withNet([]string{"netserver", "-D"}, "-p", "-L"), nil
	case t.Tool == "sockperf":
		a := t.withNet([]string{"sockperf", "server"}, "-p", "-i")
		if t.TCP {
			a = append(a, "--tcp")
		}
		return a, nil
	case slices.Contains(PerftestTools, t.Tool):
		return t.perftestArgv()
	}
	return nil, fmt.Errorf("%q is not a tool server linerate starts (iperf3, iperf, sockperf, %v)", t.Tool, PerftestTools)
}

func (t ToolServer) withNet(a []string, portFlag, bindFlag string) []string {
	if t.Port > 0 {
		a = append(a, portFlag, strconv.Itoa(t.Port))
	}
	if t.Bind != "" {
		a = append(a, bindFlag, t.Bind)
	}
	return a
}

func (t ToolServer) perftestArgv() ([]string, error) {
	p := t.Perftest
	p.Test = t.Tool
	p = p.WithDefaults()
	switch {
	case p.Size < 1 || p.Size > 1<<30:
		return nil, fmt.Errorf("perftest message size %d: 1 to 1 GiB", p.Size)
	case p.Iters < 1 || p.Iters > 100_000_000:
		return nil, fmt.Errorf("perftest iterations %d: 1 to 10^8", p.Iters)
	case p.GID < 0 || p.GID > 255:
		return nil, fmt.Errorf("perftest GID index %d: 0 to 255", p.GID)
	case !validDevice(p.Device):
		return nil, fmt.Errorf("RDMA device name %q: letters, digits and _ only", p.Device)
	case t.Streams < 0 || t.Streams > 1024:
		return nil, fmt.Errorf("perftest queue pairs %d: 1 to 1024", t.Streams)
	}
	return PerftestArgs(p, t.Streams, t.Port), nil
}

// PerftestArgs builds a perftest command line (server without an
// address, client with one appended by the caller).
func PerftestArgs(p PerftestParams, qps, port int) []string {
	a := []string{p.Test, "--report_gbits", "-s", strconv.Itoa(p.Size), "-n", strconv.Itoa(p.Iters)}
	if len(p.Test) > 3 && p.Test[len(p.Test)-3:] == "_bw" && qps > 1 {
		a = append(a, "-q", strconv.Itoa(qps))
	}
	if p.Device != "" {
		a = append(a, "-d", p.Device)
	}
	if p.GID > 0 {
		a = append(a, "-x", strconv.Itoa(p.GID))
	}
	if port > 0 {
		a = append(a, "-p", strconv.Itoa(port))
	}
	return a
}

func validDevice(s string) bool {
	if len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Start starts t on this host, pinned to t.CPUs, without privilege
// (privilege.go): what the agent does for a remote client.
func Start(t ToolServer) (*Proc, error) { return StartIn(t, nil) }

// StartIn is Start in the namespaces enter moves the calling thread into
// (a lab host); nil enter: this host's. The server dies with this process
// (Pdeathsig), so a killed agent or bench leaves no port open. That signal
// comes when the thread that forked the server ends, so the fork happens
// on a thread held for the server's whole life — in the namespaces, with
// its affinity, no_new_privs and bounding set made for the child to
// inherit — and thrown away after, so that no other goroutine runs with
// any of it.
func StartIn(t ToolServer, enter func() error) (*Proc, error) {
	argv, err := t.Argv()
	if err != nil {
		return nil, err
	}
	id, err := ToolIdentity()
	if err != nil {
		return nil, err
	}
	p, err := launch(argv, func(cmd *exec.Cmd, started chan<- error) {
		unprivileged(cmd, id)
		osthread.Throwaway(func() error {
			if enter != nil {
				if err := enter(); err != nil {
					started <- err
					return nil
				}
			}
			if len(t.CPUs) > 0 {
				var set unix.CPUSet
				for _, c := range t.CPUs {
					set.Set(c)
				}
				if err := unix.SchedSetaffinity(0, &set); err != nil {
					started <- fmt.Errorf("pinning %s to CPUs %v: %w", t.Tool, t.CPUs, err)
					return nil
				}
			}
			if err := dropThreadPrivileges(); err != nil {
				started <- err
				return nil
			}
			err := startMemlock(cmd, slices.Contains(PerftestTools, t.Tool))
			started <- err
			if err == nil {
				cmd.Wait()
			}
			return nil
		})
	})
	if p != nil {
		p.endsItself = t.endsItself()
	}
	return p, err
}

// endsItself reports whether the tool's server exits by itself once its
// client is done (perftest's, iperf's once its permit key has expired),
// so that stopping it first waits a moment for that.
func (t ToolServer) endsItself() bool {
	return t.Tool == "iperf" || slices.Contains(PerftestTools, t.Tool)
}

// forkMu keeps one perftest server's raised memory-lock limit from being
// lowered under another's fork.
var forkMu sync.Mutex

// startMemlock starts cmd; with memlock, under an unlimited RLIMIT_MEMLOCK.
// perftest registers its buffers with the RDMA device, which pins them
// against the locked-memory limit unless the process has CAP_IPC_LOCK — a
// server without privilege has not, and the usual 8 MiB is less than a
// bandwidth test's buffers. Resource limits belong to the process, not the
// thread, and os/exec has no hook between fork and exec: this process's
// limit is raised across the fork (root is not bound by it) and put back
// after, so only the child keeps it. Without CAP_SYS_RESOURCE it cannot
// be raised, and the server starts with the limit as it is (perftest then
// says it could not register its memory).
func startMemlock(cmd *exec.Cmd, memlock bool) error {
	if !memlock {
		return cmd.Start()
	}
	forkMu.Lock()
	defer forkMu.Unlock()
	var old unix.Rlimit
	inf := unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
	raised := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &inf, &old) == nil
	err := cmd.Start()
	if raised {
		unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &old, nil)
	}
	return err
}
