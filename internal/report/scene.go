package report

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
)

// A chart is drawn as a scene: an ordered list of SVG primitives (later ones
// on top) that one html/template renders, escaping every text and title.
// Charts compute geometry in Go and leave colour and type to CSS classes,
// so light, dark and print modes are a stylesheet's business.

// shape is one SVG primitive. Kind selects the element; only the fields
// that element uses are set. Coordinates are preformatted strings (coord)
// so that output is deterministic.
type shape struct {
	Kind    string // "line", "rect", "circle", "path", "text"
	Class   string
	X1, Y1  string // line start; rect and text position; circle centre
	X2, Y2  string // line end; rect width and height
	R       string // circle radius
	D       string // path data
	Text    string // text content
	Anchor  string // text-anchor: "start", "middle", "end"
	Opacity string // fill-opacity, "" for none
	Rotate  bool   // text rotated -90° about its position (y-axis labels)
	Title   string // tooltip (<title>), "" for none
}

// chart is one rendered figure.
type chart struct {
	ID    string // unique in the report; names the .svg file next to Markdown
	Title string
	Desc  string // what the chart shows, for screen readers and alt text
	W, H  int
	Body  template.HTML // the SVG's children, rendered
}

// MaxW is the widest the chart is shown in a page: a little above its
// natural size, so that text stays near the page's own size.
func (c *chart) MaxW() int { return c.W * 13 / 10 }

// scene collects shapes for one chart.
type scene struct {
	shapes []shape
}

func (s *scene) line(class string, x1, y1, x2, y2 float64) {
	s.shapes = append(s.shapes, shape{Kind: "line", Class: class,
		X1: coord(x1), Y1: coord(y1), X2: coord(x2), Y2: coord(y2)})
}

func (s *scene) rect(class string, x, y, w, h float64, title string) {
	if h < 0 {
		y, h = y+h, -h
	}
	if w < 0 {
		x, w = x+w, -w
	}
	s.shapes = append(s.shapes, shape{Kind: "rect", Class: class,
		X1: coord(x), Y1: coord(y), X2: coord(w), Y2: coord(h), Title: title})
}

// cell is a rect whose fill opacity carries a value in [0, 1].
func (s *scene) cell(class string, x, y, w, h, opacity float64, title string) {
	s.rect(class, x, y, w, h, title)
	s.shapes[len(s.shapes)-1].Opacity = num(math.Max(0, math.Min(1, opacity)), 3)
}

func (s *scene) circle(class string, cx, cy, r float64, title string) {
	s.shapes = append(s.shapes, shape{Kind: "circle", Class: class,
		X1: coord(cx), Y1: coord(cy), R: coord(r), Title: title})
}

func (s *scene) path(class, d, title string) {
	s.shapes = append(s.shapes, shape{Kind: "path", Class: class, D: d, Title: title})
}

func (s *scene) text(class string, x, y float64, anchor, text string) {
	s.shapes = append(s.shapes, shape{Kind: "text", Class: class,
		X1: coord(x), Y1: coord(y), Anchor: anchor, Text: text})
}

// vtext is text rotated to run up the page, centred on (x, y).
func (s *scene) vtext(class string, x, y float64, text string) {
	s.text(class, x, y, "middle", text)
	s.shapes[len(s.shapes)-1].Rotate = true
}

// polyline builds path data through points.
func polyline(xs, ys []float64) string {
	var b bytes.Buffer
	for i := range xs {
		op := "L"
		if i == 0 {
			op = "M"
		}
		fmt.Fprintf(&b, "%s%s %s", op, coord(xs[i]), coord(ys[i]))
	}
	return b.String()
}

// render draws the scene through the "scene" template.
func (r *renderer) render(id, title, desc string, w, h int, s *scene) (*chart, error) {
	var b bytes.Buffer
	if err := r.t.ExecuteTemplate(&b, "scene", s.shapes); err != nil {
		return nil, fmt.Errorf("render chart %s: %w", id, err)
	}
	// The template escaped every text and title: the result is safe HTML.
	return &chart{ID: id, Title: title, Desc: desc, W: w, H: h, Body: template.HTML(b.String())}, nil
}
