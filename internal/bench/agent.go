package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
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
// bound to the agent's own address, pinned as asked, with one-time
// credentials (toolauth.go).
type AgentTools struct {
	// AllowPerftest lets clients start perftest servers, which have no
	// authentication (serve --allow-perftest).
	AllowPerftest bool
	// AllowSockperf lets clients start sockperf servers, which have no
	// authentication either (serve --allow-sockperf).
	AllowSockperf bool
}

// minToolPort keeps agent-started tool servers off the privileged ports,
// where the system's own services live.
const minToolPort = 1024

// StartTool decodes the request's spec as a ToolServer and starts it
// listening on the request's address, with credentials from its secret.
func (a AgentTools) StartTool(req agent.ToolRequest) (agent.ToolProc, agent.ToolStart, error) {
	var t ToolServer
	if err := json.Unmarshal(req.Spec, &t); err != nil {
		return nil, agent.ToolStart{}, fmt.Errorf("tool server description: %w", err)
	}
	if t.Port != 0 && t.Port < minToolPort {
		return nil, agent.ToolStart{}, fmt.Errorf("tool server port %d: the agent starts tools on ports %d to 65535 only", t.Port, minToolPort)
	}
	if slices.Contains(perftestTools, t.Tool) && !a.AllowPerftest {
		return nil, agent.ToolStart{}, fmt.Errorf("this agent does not start %s: perftest servers take no authentication, so an agent starts them only when run with --allow-perftest", t.Tool)
	}
	if t.Tool == "netserver" {
		return nil, agent.ToolStart{}, errors.New("this agent does not start netserver: it takes no authentication and runs any test a client asks for; run --engine netperf in a lab, or use --engine sockperf")
	}
	if t.Tool == "sockperf" && !a.AllowSockperf {
		return nil, agent.ToolStart{}, errors.New("this agent does not start sockperf: its server takes no authentication, so an agent starts it only when run with --allow-sockperf")
	}
	// Whatever the client wrote, the tool listens where the agent was
	// reached: the agent never opens a port on an address it was not
	// asked to.
	t.Bind = ""
	if req.Bind.IsValid() && !req.Bind.IsUnspecified() {
		t.Bind = req.Bind.Unmap().String()
	}
	argv, err := t.Argv()
	if err != nil {
		return nil, agent.ToolStart{}, err
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		return nil, agent.ToolStart{}, fmt.Errorf("%s is not installed on the agent's host", argv[0])
	}
	creds, err := credsFrom(req.Secret)
	if err != nil {
		return nil, agent.ToolStart{}, err
	}
	extra, auth, dir, err := serverAuth(t.Tool, creds)
	if err != nil {
		return nil, agent.ToolStart{}, err
	}
	t.extra = extra
	p, err := StartToolServer(t)
	if err != nil {
		if dir != "" {
			os.RemoveAll(dir)
		}
		return nil, agent.ToolStart{}, err
	}
	argv, _ = t.Argv()
	return authedProc{p, dir}, agent.ToolStart{Argv: argv, Auth: auth}, nil
}

// authedProc is a tool server with its credential files, removed when it
// stops.
type authedProc struct {
	ServerProc
	dir string
}

func (p authedProc) Stop() (float64, string, error) {
	cpu, out, err := p.ServerProc.Stop()
	if p.dir != "" {
		os.RemoveAll(p.dir)
	}
	return cpu, out, err
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
	ca, err := clientAuthFor(t.Tool, ts.Secret(), ts.Auth())
	if err != nil {
		ts.Stop()
		return nil, nil, err
	}
	a.mu.Lock()
	a.agent = ts.Host()
	a.mu.Unlock()
	return agentServer{ts, ca}, ts.Argv(), nil
}

// agentServer is a tool server the agent runs; it carries the agent's
// samples of its host and the credentials its client needs.
type agentServer struct {
	ts *agent.ToolSession
	ca clientAuth
}

func (s agentServer) Stop() (float64, string, error) {
	if s.ca.dir != "" {
		defer os.RemoveAll(s.ca.dir)
	}
	return s.ts.Stop()
}

func (s agentServer) auth() clientAuth { return s.ca }

func (s agentServer) Samples() []telemetry.Sample { return s.ts.Samples() }
