package report

import (
	"strconv"
	"testing"
)

// TestWaterfallShortBarLabel: the walkthrough's healthy lab measured 2.47
// of a 19.80 ceiling; the label of so short a bar was drawn inside it,
// right-aligned, and ran over the row's name. It now follows the bar; a
// long bar keeps its label inside.
func TestWaterfallShortBarLabel(t *testing.T) {
	x := scale{d0: 0, d1: 20, p0: 200, p1: 676}
	for _, c := range []struct {
		value  float64
		anchor string
		after  bool // the label starts after the bar's end
	}{
		{2.47, "start", true},
		{18, "end", false},
	} {
		s := &scene{}
		(&builder{}).waterfallBar(s, x, 0, waterfallRow{name: "Measured", value: c.value, own: c.value, prev: 19.8, measured: true})
		var label *shape
		for i := range s.shapes {
			if s.shapes[i].Kind == "text" && (s.shapes[i].Class == "bar-label" || s.shapes[i].Class == "bar-label inverse") {
				label = &s.shapes[i]
			}
		}
		if label == nil {
			t.Fatalf("%v: no bar label", c.value)
		}
		lx, _ := strconv.ParseFloat(label.X1, 64)
		if label.Anchor != c.anchor || (lx > x.at(c.value)) != c.after || lx < x.p0 {
			t.Errorf("%v: label %q at %v anchored %s; bar ends at %v", c.value, label.Text, lx, label.Anchor, x.at(c.value))
		}
	}
}
