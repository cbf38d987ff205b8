// Package report writes the report a lab would publish about a fast link:
// the verdict first (achieved X of Y Gbit/s and what limits it), the hosts
// (NICs, PCIe links with the arithmetic, topology), the ceiling waterfall
// (line rate → PCIe → MTU goodput → measured), doctor's findings with
// their fixes, the results of every campaign and run (and perftest's
// bandwidth and latency), run-to-run variance with the per-CPU picture of
// each bucket, the tuning applied with the bench before and after, the
// environment, and the commands that reproduce every run.
//
// Build turns a Dataset — the JSON contracts of docs/architecture.md: doctor reports,
// bench runs, campaigns, perftest results, tune journals — into a Model;
// WriteHTML writes it as one self-contained HTML file and WriteMarkdown as
// Markdown with each chart in an SVG file beside it. Sections without
// data are left out with a one-line note.
//
// Charts are hand-rolled SVG (docs/architecture.md: no chart library writes
// deterministic, dependency-free SVG we could golden-test): each chart
// computes its geometry in Go as a list of shapes, and one html/template
// renders them, escaping every label. Colours live in CSS variables
// (assets/chart.css), light by default, dark under prefers-color-scheme,
// light again in print. The page has no scripts and fetches nothing.
// Output is deterministic: numbers go through fixed formats, maps are
// walked in sorted order, and nothing reads the clock.
package report
