package report

import (
	"bufio"
	"embed"
	"fmt"
	"html/template"
	"io"
)

// assets holds the page and chart templates and their stylesheets, built
// into the binary so that a report never fetches anything.
//
//go:embed assets/*.tmpl assets/*.css
var assets embed.FS

// renderer holds the parsed templates and styles of one Build.
type renderer struct {
	t        *template.Template
	chartCSS template.CSS
	pageCSS  template.CSS
}

func newRenderer() (*renderer, error) {
	t, err := template.New("report").ParseFS(assets, "assets/*.tmpl")
	if err != nil {
		return nil, fmt.Errorf("report: parse templates: %w", err)
	}
	chartCSS, err := assets.ReadFile("assets/chart.css")
	if err != nil {
		return nil, fmt.Errorf("report: read chart.css: %w", err)
	}
	pageCSS, err := assets.ReadFile("assets/page.css")
	if err != nil {
		return nil, fmt.Errorf("report: read page.css: %w", err)
	}
	// The stylesheets are ours, embedded at build time: trusted CSS.
	return &renderer{t: t, chartCSS: template.CSS(chartCSS), pageCSS: template.CSS(pageCSS)}, nil
}

// pageData is what the page template reads.
type pageData struct {
	Title, Synthetic, Verdict, Version string
	CSS                                template.CSS
	Sections                           []*section
}

// WriteHTML writes the report as one self-contained HTML file: styles
// inline, charts as inline SVG, no scripts and no external resources.
func WriteHTML(w io.Writer, m *Model) error {
	if m == nil || m.r == nil {
		return fmt.Errorf("report: WriteHTML needs a model from Build")
	}
	bw := bufio.NewWriter(w)
	d := pageData{Title: m.Title, Synthetic: m.Synthetic, Verdict: m.Verdict, Version: m.version,
		CSS: m.r.chartCSS + "\n" + m.r.pageCSS, Sections: m.sections}
	if err := m.r.t.ExecuteTemplate(bw, "page", d); err != nil {
		return fmt.Errorf("report: write HTML: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("report: write HTML: %w", err)
	}
	return nil
}

// writeSVG writes one chart as a standalone SVG file's content, with the
// chart styles inside so that it renders alone (light and dark).
func (r *renderer) writeSVG(w io.Writer, c *chart) error {
	d := struct {
		Chart *chart
		CSS   template.CSS
	}{c, r.chartCSS}
	if err := r.t.ExecuteTemplate(w, "svg-standalone", d); err != nil {
		return fmt.Errorf("report: write chart %s: %w", c.ID, err)
	}
	return nil
}
