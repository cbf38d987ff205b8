package bench

import (
	"context"
	"encoding/json"
	"net"
	"os/exec"
	"sync"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/telemetry"
	"github.com/linerate/linerate/internal/toolserver"
)

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
func (a *AgentHosts) StartServer(ctx context.Context, t toolserver.ToolServer, length time.Duration) (ServerProc, []string, error) {
	spec, err := json.Marshal(t)
	if err != nil {
		return nil, nil, err
	}
	ts, err := agent.StartTool(ctx, agent.ToolConfig{Peer: a.Peer, Token: a.Token, Server: spec, Duration: length, Interval: a.Interval})
	if err != nil {
		return nil, nil, err
	}
	ca, err := toolserver.ClientAuthFor(t.Tool, ts.Secret(), ts.Auth())
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
	ca toolserver.ClientAuth
}

func (s agentServer) Stop() (float64, string, error) {
	defer s.ca.Close()
	return s.ts.Stop()
}

func (s agentServer) Samples() []telemetry.Sample { return s.ts.Samples() }

// authOf returns the credentials a server needs from its client, if any.
func authOf(srv ServerProc) toolserver.ClientAuth {
	if a, ok := srv.(agentServer); ok {
		return a.ca
	}
	return toolserver.ClientAuth{}
}
