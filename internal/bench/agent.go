package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"sync"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/telemetry"
)

// AgentTools is the agent's ToolStarter (`linerate serve`): it starts the
// tool servers bench's drivers ask for, from ToolServer's allowlist,
// bound to the agent's own address and pinned as asked.
type AgentTools struct{}

// minToolPort keeps agent-started tool servers off the privileged ports,
// where the system's own services live.
const minToolPort = 1024

// StartTool decodes spec as a ToolServer and starts it listening on bind.
func (AgentTools) StartTool(spec json.RawMessage, bind netip.Addr) (agent.ToolProc, []string, error) {
	var t ToolServer
	if err := json.Unmarshal(spec, &t); err != nil {
		return nil, nil, fmt.Errorf("tool server description: %w", err)
	}
	if t.Port != 0 && t.Port < minToolPort {
		return nil, nil, fmt.Errorf("tool server port %d: the agent starts tools on ports %d to 65535 only", t.Port, minToolPort)
	}
	// Whatever the client wrote, the tool listens where the agent does:
	// the agent never opens a port on an address it was not asked to.
	t.Bind = ""
	if bind.IsValid() && !bind.IsUnspecified() {
		t.Bind = bind.Unmap().String()
	}
	argv, err := t.Argv()
	if err != nil {
		return nil, nil, err
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		return nil, nil, fmt.Errorf("%s is not installed on the agent's host", argv[0])
	}
	p, err := StartToolServer(t)
	if err != nil {
		return nil, nil, err
	}
	return p, argv, nil
}

// AgentHosts runs an external tool against a remote peer through its
// agent: the client here, the server started by `linerate serve` there,
// which also samples its host every interval while the tool runs.
type AgentHosts struct {
	// Peer is the agent, HOST or HOST:PORT.
	Peer  string
	Token []byte
	// Interval is the agent's sampling period (the campaign's interval).
	Interval time.Duration
	// FS is where this host's facts are read; nil is the live host.
	FS *hostfs.FS

	once  sync.Once
	me    result.HostInfo
	mu    sync.Mutex
	agent result.HostInfo
}

// Addr is the peer's address, as the tool's client dials it.
func (a *AgentHosts) Addr() string {
	if h, _, err := net.SplitHostPort(a.Peer); err == nil {
		return h
	}
	return a.Peer
}

func (a *AgentHosts) local() result.HostInfo {
	a.once.Do(func() { a.me, _ = engine.LocalFacts(fsOr(a.FS), a.Addr()) })
	return a.me
}

// StartClient starts cmd on this host.
func (a *AgentHosts) StartClient(cmd *exec.Cmd) error { return cmd.Start() }

// Iface is this host's interface toward the peer.
func (a *AgentHosts) Iface() string { return a.local().Iface }

// NICIRQs are that interface's interrupts (found by PCI address).
func (a *AgentHosts) NICIRQs() []int { return a.local().NICIRQs }

// Facts describes both ends: this host, and the agent's as it told.
func (a *AgentHosts) Facts() (result.HostInfo, result.HostInfo) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.local(), a.agent
}

// StartServer asks the agent for t, for a run of length: the agent stops
// the server its grace after that at the latest.
func (a *AgentHosts) StartServer(ctx context.Context, t ToolServer, length time.Duration) (ServerProc, []string, error) {
	spec, err := json.Marshal(t)
	if err != nil {
		return nil, nil, err
	}
	ts, err := agent.StartTool(ctx, agent.ToolConfig{Peer: a.Peer, Token: a.Token, Server: spec, Duration: length, Interval: a.Interval})
	if err != nil {
		return nil, nil, err
	}
	a.mu.Lock()
	a.agent = ts.Host()
	a.mu.Unlock()
	return agentServer{ts}, ts.Argv(), nil
}

// agentServer is a tool server the agent runs; it carries the agent's
// samples of its host.
type agentServer struct{ ts *agent.ToolSession }

func (s agentServer) Stop() (float64, string, error) { return s.ts.Stop() }

func (s agentServer) Samples() []telemetry.Sample { return s.ts.Samples() }
