package report

import (
	"strconv"

	"github.com/linerate/linerate/internal/doctor"
)

// labelGroup is the runs of one label, with the path they took (the
// first run's).
type labelGroup struct {
	label string
	ids   map[int64]bool
	path  *path
}

// has reports whether run id is of the group.
func (g *labelGroup) has(id int64) bool { return g.ids[id] }

// title is `label "healthy" (lr-ux1-a → lr-ux1-b)`.
func (g *labelGroup) title() string {
	t := "label " + strconv.Quote(g.label)
	if g.label == "" {
		t = "runs without a label"
	}
	if g.path != nil {
		t += " (" + g.path.hostsText() + ")"
	}
	return t
}

// labelGroups splits the runs by label, in order of first run.
func (b *builder) labelGroups() []*labelGroup {
	var out []*labelGroup
	by := map[string]*labelGroup{}
	for i := range b.ds.Runs {
		r := &b.ds.Runs[i]
		g := by[r.Label]
		if g == nil {
			g = &labelGroup{label: r.Label, ids: map[int64]bool{}, path: b.pathOf(r)}
			by[r.Label] = g
			out = append(out, g)
		}
		g.ids[r.Result.RunID] = true
	}
	return out
}

// has reports whether a doctor report is one of the path's ends.
func (p *path) has(rep *doctor.Report) bool {
	for _, e := range p.ends {
		if e.rep == rep {
			return true
		}
	}
	return false
}
