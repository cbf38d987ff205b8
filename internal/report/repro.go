package report

import (
	"encoding/json"

	"github.com/linerate/linerate/internal/bench"
	"github.com/linerate/linerate/internal/store"
)

// storedCommand is the `linerate bench` command that reproduces a stored
// run from what was asked (its params) and the peer as it was named
// ("lab:ux1", not the address the lab resolved it to), so that the
// command runs as printed; "" when the row lacks them (the report then
// derives one from the result's start section).
func storedCommand(row *store.Run, label string) string {
	if row.Peer == "" || len(row.Params) == 0 {
		return ""
	}
	var p bench.Params
	if json.Unmarshal(row.Params, &p) != nil || p.Perftest.Test != "" {
		return ""
	}
	s := bench.Spec{Engine: row.Engine, Peer: row.Peer, Label: label, Run: p}
	return s.Command(bench.Point{Streams: max(p.Streams, 1), Placement: p.Placement})
}
