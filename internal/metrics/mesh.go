package metrics

import (
	"github.com/linerate/linerate/internal/mesh"
)

// The mesh's families, served by an agent of a mesh (serve --mesh …
// --metrics): its pairs toward each peer over the last minute, and the
// hosts its view of the whole mesh suspects.
var (
	meshRTT     = newDesc("mesh_rtt_seconds", "Round trips of this agent's probes to a peer over the last minute (the peer's own turnaround taken out): quantiles 0.5 and 0.99, count = replies.", "peer")
	meshLoss    = newDesc("mesh_loss_ratio", "Share of this agent's probes to a peer over the last minute that never reached it (by the peer's count): the path's loss this way.", "peer")
	meshGoodput = newDesc("mesh_goodput_bytes_per_second", "The last conclusive throughput test from this agent to a peer (one stream, about a second).", "peer")
	meshState   = newDesc("mesh_pair_state", "1 for the state of this agent's pair to a peer (ok, degraded, down, unknown: not judged yet), 0 for the others.", "peer", "state")
	meshSuspect = newDesc("mesh_suspect", "1 while the mesh, as this agent sees it, suspects a host on one side (send, receive, both).", "host", "side")
)

// meshStates are the states linerate_mesh_pair_state sets, in order.
var meshStates = []mesh.State{mesh.OK, mesh.Degraded, mesh.Down, mesh.Unknown}

// WithMesh makes c serve the mesh's families from src (an agent's
// MeshFigures; nil figures: the agent is in no mesh yet).
func (c *Collector) WithMesh(src func() *mesh.Figures) *Collector {
	c.mesh = src
	return c
}

// emitMesh sends the mesh's families.
func emitMesh(e *emitter, f *mesh.Figures) {
	if f == nil {
		return
	}
	for _, p := range f.Peers {
		if p.RTTCount > 0 {
			e.summary(meshRTT, &RTT{Samples: p.RTTCount, Sum: p.RTTSum, Quantiles: map[float64]float64{0.5: p.P50, 0.99: p.P99}}, p.Peer)
		}
		e.gaugeP(meshLoss, p.Loss, same, p.Peer)
		e.gaugeP(meshGoodput, p.GoodputBytesS, same, p.Peer)
		for _, s := range meshStates {
			e.gauge(meshState, bool01(p.State == s), p.Peer, string(s))
		}
	}
	for _, s := range f.Suspects {
		if s.Kind == mesh.KindHost {
			e.gauge(meshSuspect, 1, s.Name, s.Side)
		}
	}
}
