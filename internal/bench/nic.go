package bench

import (
	"fmt"

	"github.com/vishvananda/netns"

	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/nicstats"
	"github.com/linerate/linerate/internal/osthread"
	"github.com/linerate/linerate/internal/result"
)

// NIC counters around a tool's run (docs/architecture.md, "NIC counters
// during a run"): the native engine reads them itself on both ends (the
// agent sends its own); for iperf3 and iperf2 the driver reads the
// client's interface here, and the server's comes from the agent that ran
// the tool server, or, in a lab, from host b's namespace.

// nicSpan is the counters of both ends read before a run.
type nicSpan struct {
	client, server func() *result.NICDelta // nil: this end is not read here
}

// labNICHosts is a Hosts whose two ends are namespaces of this machine.
type labNICHosts interface {
	labName() string
}

func (l *LabHosts) labName() string { return l.Name }

// beginNIC reads the counters of the ends h lets this process read, before
// a run. The server of an agent-run tool is read by the agent (see
// (*nicSpan).end).
func beginNIC(h Hosts) *nicSpan {
	if lh, ok := h.(labNICHosts); ok {
		return &nicSpan{client: spanIn(lh.labName(), lab.A), server: spanIn(lh.labName(), lab.B)}
	}
	s := nicstats.Begin(h.Iface())
	return &nicSpan{client: s.End}
}

// end reads the counters again and returns how both ends' grew; srv is the
// tool server, which carries the agent's end when the agent ran it.
func (s *nicSpan) end(srv ServerProc) *result.NICCounters {
	out := &result.NICCounters{}
	if s.client != nil {
		out.Client = s.client()
	}
	if s.server != nil {
		out.Server = s.server()
	} else if n, ok := srv.(nicServer); ok {
		out.Server = n.NICCounters()
	}
	if out.Client == nil && out.Server == nil {
		return nil
	}
	return out
}

// nicServer is a tool server that read its own end's NIC counters (one the
// agent ran).
type nicServer interface {
	NICCounters() *result.NICDelta
}

// NICCounters is how the agent's NIC counters grew while its tool server
// ran (known once the server stopped).
func (s agentServer) NICCounters() *result.NICDelta { return s.ts.NICCounters() }

// spanIn reads lab host h's link counters now and returns the function
// that reads them again and gives their growth. nicstats reads the
// network namespace of the calling thread, so each reading runs on a
// thrown-away thread that entered the host's namespace.
func spanIn(name string, h lab.Host) func() *result.NICDelta {
	var span *nicstats.Span
	err := inLabHost(name, h, func() { span = nicstats.Begin(lab.Iface) })
	if err != nil {
		return func() *result.NICDelta { return &result.NICDelta{Interface: lab.Iface, NotRead: err.Error()} }
	}
	return func() *result.NICDelta {
		var d *result.NICDelta
		if err := inLabHost(name, h, func() { d = span.End() }); err != nil {
			return &result.NICDelta{Interface: lab.Iface, NotRead: err.Error()}
		}
		return d
	}
}

// inLabHost runs fn on a thread in the network namespace of lab host h.
func inLabHost(name string, h lab.Host, fn func()) error {
	return osthread.Throwaway(func() error {
		ns := lab.Namespace(name, h)
		fd, err := netns.GetFromPath("/run/netns/" + ns)
		if err != nil {
			return fmt.Errorf("opening namespace %s: %w (run 'linerate lab up --name %s')", ns, err, name)
		}
		defer fd.Close()
		if err := netns.Set(fd); err != nil {
			return fmt.Errorf("entering %s: %w", ns, err)
		}
		fn()
		return nil
	})
}
