package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/mesh"
)

func ptrf(v float64) *float64 { return &v }

// TestMeshFamilies: an agent's mesh figures come out in base units
// (seconds, bytes per second, a ratio), the round trips as a summary
// with quantiles 0.5 and 0.99, each pair's state as a state set, the
// suspected hosts with their side; the exposition is clean under promlint
// and promtool; a figure not known is absent, not 0.
func TestMeshFamilies(t *testing.T) {
	f := &mesh.Figures{Self: "h01", Peers: []mesh.PeerFigures{
		{Peer: "h02", State: mesh.OK, RTTCount: 598, RTTSum: 598 * 31e-6, P50: 30.5e-6, P99: 77.6e-6, Loss: ptrf(0), GoodputBytesS: ptrf(9.41e9 / 8)},
		{Peer: "h03", State: mesh.Degraded, RTTCount: 570, RTTSum: 570 * 33e-6, P50: 32e-6, P99: 90e-6, Loss: ptrf(0.05)},
		{Peer: "h04", State: mesh.Down},
	}, Suspects: []mesh.Suspect{
		{Kind: mesh.KindHost, Name: "h03", Side: mesh.SideSend, Since: time.Now()},
		{Kind: mesh.KindPath, Name: "h01-h04", Side: mesh.SideBoth, Since: time.Now()},
	}}
	c := NewCollector(func() *Snapshot { return NewSnapshot(time.Now()) }, "test").WithMesh(func() *mesh.Figures { return f })
	e := expose(t, NewRegistry(c))
	e.lint(t, "mesh")
	e.promtoolCheckMetrics(t, "mesh")
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"linerate_mesh_loss_ratio", map[string]string{"peer": "h03"}, 0.05},
		{"linerate_mesh_loss_ratio", map[string]string{"peer": "h02"}, 0},
		{"linerate_mesh_goodput_bytes_per_second", map[string]string{"peer": "h02"}, 9.41e9 / 8},
		{"linerate_mesh_pair_state", map[string]string{"peer": "h03", "state": "degraded"}, 1},
		{"linerate_mesh_pair_state", map[string]string{"peer": "h03", "state": "ok"}, 0},
		{"linerate_mesh_pair_state", map[string]string{"peer": "h04", "state": "down"}, 1},
		{"linerate_mesh_suspect", map[string]string{"host": "h03", "side": "send"}, 1},
	} {
		if got := e.value(t, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %g, want %g", c.name, c.labels, got, c.want)
		}
	}
	rtt := e.samples("linerate_mesh_rtt_seconds", map[string]string{"peer": "h02"})
	if len(rtt) != 1 || rtt[0].Summary == nil || rtt[0].Summary.GetSampleCount() != 598 {
		t.Fatalf("linerate_mesh_rtt_seconds{peer=h02}: %v", rtt)
	}
	q := map[float64]float64{}
	for _, x := range rtt[0].Summary.Quantile {
		q[x.GetQuantile()] = x.GetValue()
	}
	if q[0.5] != 30.5e-6 || q[0.99] != 77.6e-6 || len(q) != 2 {
		t.Errorf("quantiles %v", q)
	}
	for _, absent := range []struct {
		name   string
		labels map[string]string
	}{
		{"linerate_mesh_rtt_seconds", map[string]string{"peer": "h04"}},
		{"linerate_mesh_loss_ratio", map[string]string{"peer": "h04"}},
		{"linerate_mesh_goodput_bytes_per_second", map[string]string{"peer": "h03"}},
		{"linerate_mesh_suspect", map[string]string{"host": "h01-h04"}},
	} {
		if s := e.samples(absent.name, absent.labels); len(s) != 0 {
			t.Errorf("%s%v: %d samples, want none (unknown, or not a host)", absent.name, absent.labels, len(s))
		}
	}
	// An agent in no mesh serves none of the families.
	none := expose(t, NewRegistry(NewCollector(func() *Snapshot { return NewSnapshot(time.Now()) }, "test").WithMesh(func() *mesh.Figures { return nil })))
	if strings.Contains(string(none.text), "linerate_mesh_") {
		t.Errorf("mesh families without a mesh:\n%s", none.text)
	}
}
