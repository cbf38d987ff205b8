package toolserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"

	"github.com/linerate/linerate/internal/agent"
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
	if slices.Contains(PerftestTools, t.Tool) && !a.AllowPerftest {
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
	id, err := ToolIdentity()
	if err != nil {
		return nil, agent.ToolStart{}, err
	}
	extra, auth, dir, err := serverAuth(t.Tool, creds, id)
	if err != nil {
		return nil, agent.ToolStart{}, err
	}
	t.extra = extra
	p, err := Start(t)
	if err != nil {
		if dir != "" {
			os.RemoveAll(dir)
		}
		return nil, agent.ToolStart{}, errors.New(redacted(err.Error(), creds))
	}
	argv, _ = t.Argv()
	for i := range argv {
		argv[i] = redacted(argv[i], creds)
	}
	st := agent.ToolStart{Argv: argv, Auth: auth}
	if slices.Contains(PerftestTools, t.Tool) {
		st.RDMA, st.RDMADevice = true, t.Perftest.Device
	}
	return authedProc{p, dir, creds}, st, nil
}

// authedProc is a tool server with its credential files, removed when it
// stops, and its output without the permit key (iperf prints it).
type authedProc struct {
	*Proc
	dir   string
	creds toolCreds
}

func (p authedProc) Stop() (float64, string, error) {
	cpu, out, err := p.Proc.Stop()
	if p.dir != "" {
		os.RemoveAll(p.dir)
	}
	return cpu, redacted(out, p.creds), err
}
