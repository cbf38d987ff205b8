package agent

import (
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/nicstats"
)

// NIC counters during a test (docs/architecture.md, "NIC counters during
// a run"): each end reads the counters of the interface carrying the
// test's traffic before any payload moves and again once its streams
// have drained, and the agent sends its growth in its end (or tool_end)
// message. The client reads the egress interface of its route to the
// agent; the agent the interface holding the address the client reached,
// or its route back to the client when no interface holds it (an address
// the kernel routes to, as with a VIP).

// counterIface is the agent's interface under test.
func (ss *session) counterIface() string {
	if ss.host.Iface != "" {
		return ss.host.Iface
	}
	ifc, _ := nicstats.RouteIface(engine.AddrPort(ss.ctrl.c.RemoteAddr()).Addr())
	return ifc
}

// counterIface is the client's interface under test: its route's egress
// toward the agent, else the interface holding its own address.
func (c *client) counterIface() string {
	if ifc, err := nicstats.RouteIface(engine.AddrPort(c.ctrl.c.RemoteAddr()).Addr()); err == nil && ifc != "" {
		return ifc
	}
	return c.me.Iface
}
