package bench

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/toolserver"
)

// loHosts is a Hosts whose client interface is the loopback, which every
// namespace has and whose kernel counters anyone may read.
type loHosts struct{}

func (loHosts) Addr() string                  { return "127.0.0.1" }
func (loHosts) StartClient(*exec.Cmd) error   { return nil }
func (loHosts) Iface() string                 { return "lo" }
func (loHosts) NICIRQs() []int                { return nil }
func (loHosts) Facts() (c, s result.HostInfo) { return }
func (loHosts) StartServer(context.Context, toolserver.ToolServer, time.Duration) (ServerProc, []string, error) {
	return nil, nil, nil
}

// agentRun is a tool server an agent ran, with its end's counters.
type agentRun struct{ d *result.NICDelta }

func (agentRun) Stop() (float64, string, error)  { return 0, "", nil }
func (a agentRun) NICCounters() *result.NICDelta { return a.d }

// TestNICSpanTool: around a tool's run the driver reads the client's
// interface itself (here lo, for real) and takes the server's from the
// agent that ran it; a server that read nothing leaves that end out.
func TestNICSpanTool(t *testing.T) {
	srv := &result.NICDelta{Interface: "enp1s0f0np0", Deltas: map[string]uint64{"rx_no_buffer": 7}}
	got := beginNIC(loHosts{}).end(agentRun{srv})
	if got == nil || got.Server != srv {
		t.Fatalf("the agent's end was not taken: %+v", got)
	}
	if c := got.Client; c == nil || c.Interface != "lo" || c.NotRead != "" || !hasAll(c.Deltas, "rx_dropped", "tx_dropped") {
		t.Errorf("the client's lo: %+v", c)
	}
	got = beginNIC(loHosts{}).end(&toolserver.Proc{})
	if got == nil || got.Client == nil || got.Server != nil {
		t.Errorf("a server that read nothing: %+v", got)
	}
}

func hasAll(m map[string]uint64, keys ...string) bool {
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}
