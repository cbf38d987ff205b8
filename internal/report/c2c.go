package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"

	"github.com/linerate/linerate/internal/c2c"
	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/store"
)

// loadC2C returns the newest core-to-core matrix stored for each host of
// the report (none for a host never measured).
func loadC2C(ctx context.Context, st *store.Store, hosts []doctor.Report) ([]c2c.Result, error) {
	var out []c2c.Result
	for _, h := range hosts {
		row, err := st.LatestC2C(ctx, h.Host.Hostname)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		r, err := decodeC2C(row.Result)
		if err != nil {
			return nil, fmt.Errorf("core-to-core matrix %d of %s in %s: %w", row.ID, h.Host.Hostname, st.Path(), err)
		}
		out = append(out, *r)
	}
	return out, nil
}

// ReadC2C reads a matrix written by `linerate c2c --json`, for a report of
// a host whose matrix is not in the database (measured elsewhere).
func ReadC2C(path string) (*c2c.Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the core-to-core matrix: %w", err)
	}
	r, err := decodeC2C(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// decodeC2C checks what the section relies on: a square matrix over the
// CPUs, as `linerate c2c --json` writes it.
func decodeC2C(b []byte) (*c2c.Result, error) {
	var r c2c.Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("not a %s document: %w", c2c.Schema, err)
	}
	if r.Schema != c2c.Schema {
		return nil, fmt.Errorf("schema %q, want %s (the output of 'linerate c2c --json')", r.Schema, c2c.Schema)
	}
	n := len(r.CPUs)
	if n < 2 || len(r.MatrixNs) != n {
		return nil, fmt.Errorf("%d CPUs with a matrix of %d rows", n, len(r.MatrixNs))
	}
	for _, row := range r.MatrixNs {
		if len(row) != n {
			return nil, fmt.Errorf("a matrix row of %d cells for %d CPUs", len(row), n)
		}
	}
	return &r, nil
}

// c2cSection shows each host's core-to-core matrix as a heatmap with the
// groups it shows and sysfs's L3 domains, and says whether they agree.
func (b *builder) c2cSection() (*section, error) {
	const id, title = "c2c", "Core-to-core latency"
	if len(b.ds.C2C) == 0 {
		return omitted(id, title, "Core-to-core latency: no matrix for these hosts (run 'linerate c2c' on them)."), nil
	}
	s := &section{ID: id, Title: title}
	s.addText("How long a cache line takes to go from one CPU to another, one way: two threads pinned to the pair's CPUs flip one word with compare-and-swap, and each pair's figure is the median of its samples. A packet handed from the CPU that took its interrupt to the CPU of the application pays this at least once; across L3 domains it costs several times more than inside one.")
	for i := range b.ds.C2C {
		r := &b.ds.C2C[i]
		head := r.Host
		if r.CPUModel != "" {
			head += ": " + r.CPUModel
		}
		s.addHeading(head)
		s.addText("%s.", capitalise(r.Verdict))
		s.addText("Measured %s: %d pairs, %d samples of %d round trips each (again: 'linerate c2c%s' on %s).",
			r.MeasuredAt.UTC().Format("2006-01-02 15:04 UTC"), r.Pairs, r.Samples, r.RoundTrips, modeFlag(r.Mode, r.CPUs), r.Host)
		c, err := b.c2cChart(fmt.Sprintf("c2c-%d", i+1), r)
		if err != nil {
			return nil, err
		}
		s.addChart(c)
		s.addTable(c2cTable(fmt.Sprintf("c2c-groups-%d", i+1), r))
		for _, n := range r.Notes {
			s.addText("Note: %s", n)
		}
	}
	return s, nil
}

func capitalise(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// modeFlag is the flag that reproduces a measurement's choice of CPUs.
func modeFlag(mode string, list []int) string {
	switch mode {
	case c2c.ModePerL3:
		return " --per-l3"
	case c2c.ModeCPUs:
		return " --cpus " + cpus(list)
	}
	return ""
}

// c2cTable lists the groups the matrix shows beside sysfs's domains.
func c2cTable(id string, r *c2c.Result) *table {
	t := &table{ID: id, Caption: "Groups found from the matrix and sysfs's L3 domains",
		Head: []string{"Group", "CPUs", "sysfs L3 domain", "Median inside (ns)", "Median to other groups (ns)"},
		Num:  []bool{false, false, false, true, true}}
	idx := cpuIndex(r.CPUs)
	for gi, g := range r.Clusters {
		var in, out []float64
		for _, a := range g {
			for j, bcpu := range r.CPUs {
				v := r.MatrixNs[idx[a]][j]
				if v == nil || bcpu == a {
					continue
				}
				if slices.Contains(g, bcpu) {
					in = append(in, *v)
				} else {
					out = append(out, *v)
				}
			}
		}
		t.Rows = append(t.Rows, []string{strconv.Itoa(gi + 1), cpus(g), domainsOf(g, r.SysfsL3Domains), nsMedian(in), nsMedian(out)})
	}
	return t
}

// domainsOf names the sysfs domains that hold a group's CPUs.
func domainsOf(g []int, l3 [][]int) string {
	var names []string
	for _, d := range l3 {
		for _, c := range g {
			if slices.Contains(d, c) {
				names = append(names, cpus(d))
				break
			}
		}
	}
	if len(names) == 0 {
		return "none"
	}
	out := names[0]
	for _, n := range names[1:] {
		out += " and " + n
	}
	return out
}

func nsMedian(xs []float64) string {
	if len(xs) == 0 {
		return "–"
	}
	slices.Sort(xs)
	m := xs[len(xs)/2]
	if len(xs)%2 == 0 {
		m = (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	return num(m, 0)
}

// nsText shows a one-way time with a decimal below 100 ns, where it
// still means something.
func nsText(v float64) string {
	if v < 100 {
		return num(v, 1)
	}
	return num(v, 0)
}

func cpuIndex(list []int) map[int]int {
	idx := make(map[int]int, len(list))
	for i, c := range list {
		idx[c] = i
	}
	return idx
}

// The heatmap reuses the chart stylesheet's classes, so that adding it
// changed no other chart: cells take the per-CPU heatmap's softirq colour
// (a single hue whose opacity carries the value), groups the outline that
// marks benchmark threads, the diagonal and unmeasured pairs the grey of
// "lost" bars.
const (
	c2cCell  = "hm hm-softirq"
	c2cGroup = "app-mark"
)

// c2cGeom is the heatmap's layout: a square of cells, CPU labels on top
// and left, sysfs's L3 domains as brackets on the left.
type c2cGeom struct {
	left, top, cell float64
	w, h            int
}

func newC2CGeom(n int) c2cGeom {
	g := c2cGeom{left: 92, top: 40}
	g.cell = math.Max(4, math.Min(34, 560/float64(n)))
	g.w = int(math.Max(chartW, g.left+float64(n)*g.cell+24))
	g.h = int(g.top + float64(n)*g.cell + 74)
	return g
}

// c2cChart draws the matrix: CPUs ordered group by group, each cell's
// shade the pair's one-way time on a log scale, each group outlined on
// the diagonal, sysfs's L3 domains bracketed on the left.
func (b *builder) c2cChart(id string, r *c2c.Result) (*chart, error) {
	order := heatColumns(r.Clusters, r.CPUs) // groups as contiguous blocks
	n := len(order)
	idx := cpuIndex(r.CPUs)
	g := newC2CGeom(n)
	lo, hi := matrixRange(r)
	shade := func(v float64) float64 {
		if hi <= lo {
			return 0.6
		}
		return 0.12 + 0.88*(math.Log(v)-math.Log(lo))/(math.Log(hi)-math.Log(lo))
	}
	s := &scene{}
	at := func(k int) float64 { return float64(k) * g.cell }
	for k, col := range order {
		if g.cell >= 14 || k%int(math.Ceil(14/g.cell)) == 0 {
			s.text("tick", g.left+at(k)+g.cell/2, g.top-6, "middle", strconv.Itoa(col.cpu))
			s.text("tick", g.left-6, g.top+at(k)+g.cell/2+4, "end", strconv.Itoa(col.cpu))
		}
	}
	for i, ri := range order {
		for j, cj := range order {
			x, y := g.left+at(j), g.top+at(i)
			if i == j {
				s.rect("lost", x+0.5, y+0.5, g.cell-1, g.cell-1, "")
				continue
			}
			v, mn := r.MatrixNs[idx[ri.cpu]][idx[cj.cpu]], r.MinNs
			if v == nil {
				s.cell("lost", x+0.5, y+0.5, g.cell-1, g.cell-1, 0.35, fmt.Sprintf("CPU %d ↔ CPU %d: not measured", ri.cpu, cj.cpu))
				continue
			}
			title := fmt.Sprintf("CPU %d ↔ CPU %d: %s ns", ri.cpu, cj.cpu, nsText(*v))
			if len(mn) == n && mn[idx[ri.cpu]][idx[cj.cpu]] != nil {
				title += fmt.Sprintf(" (fastest sample %s ns)", nsText(*mn[idx[ri.cpu]][idx[cj.cpu]]))
			}
			sh := shade(*v)
			s.cell(c2cCell, x+0.5, y+0.5, g.cell-1, g.cell-1, sh, title)
			if g.cell >= 24 {
				s.text(textClass(100*sh), x+g.cell/2, y+g.cell/2+3.5, "middle", num(*v, 0))
			}
		}
	}
	b.c2cGroups(s, g, order)
	c2cDomains(s, g, order, r.SysfsL3Domains)
	c2cLegend(s, g, n, lo, hi, shade)
	title := "Core-to-core latency on " + r.Host
	return b.r.render(id, title,
		"Heatmap of one-way cache-line hand-off times in ns between pairs of CPUs, darker is slower; groups found from the matrix are outlined, sysfs's L3 domains bracketed on the left.",
		g.w, g.h, s)
}

// matrixRange is the fastest and slowest measured pair.
func matrixRange(r *c2c.Result) (lo, hi float64) {
	lo, hi = math.Inf(1), 0
	for _, row := range r.MatrixNs {
		for _, v := range row {
			if v != nil && *v > 0 {
				lo, hi = math.Min(lo, *v), math.Max(hi, *v)
			}
		}
	}
	if math.IsInf(lo, 1) {
		return 1, 1
	}
	return lo, hi
}

// c2cGroups outlines each group's block on the diagonal.
func (b *builder) c2cGroups(s *scene, g c2cGeom, order []heatColumn) {
	start := 0
	for k := 1; k <= len(order); k++ {
		if k < len(order) && order[k].domain == order[start].domain {
			continue
		}
		x, w := g.left+float64(start)*g.cell, float64(k-start)*g.cell
		s.rect(c2cGroup, x+1, g.top+float64(start)*g.cell+1, w-2, w-2, "")
		start = k
	}
}

// c2cDomains brackets, left of the CPU labels, each run of rows whose CPUs
// share a sysfs L3 domain.
func c2cDomains(s *scene, g c2cGeom, order []heatColumn, l3 [][]int) {
	domainOf := func(cpu int) int {
		for d, cs := range l3 {
			if slices.Contains(cs, cpu) {
				return d
			}
		}
		return -1
	}
	x := g.left - 30
	start := 0
	for k := 1; k <= len(order); k++ {
		if k < len(order) && domainOf(order[k].cpu) == domainOf(order[start].cpu) {
			continue
		}
		if d := domainOf(order[start].cpu); d >= 0 {
			y0, y1 := g.top+float64(start)*g.cell+2, g.top+float64(k)*g.cell-2
			s.line("l3", x, y0, x, y1)
			s.line("l3", x, y0, x+4, y0)
			s.line("l3", x, y1, x+4, y1)
			s.vtext("l3-label", x-6, (y0+y1)/2, "L3 "+cpus(l3[d]))
		}
		start = k
	}
}

// c2cLegend shows the shade scale from the fastest to the slowest pair.
func c2cLegend(s *scene, g c2cGeom, n int, lo, hi float64, shade func(float64) float64) {
	y := g.top + float64(n)*g.cell + 22
	x := g.left
	s.text("legend", x, y+9, "start", "one way, ns:")
	x += 76
	steps := 5
	if math.Round(lo) == math.Round(hi) {
		// One value (a 2-CPU machine has one pair): one swatch, not five
		// all labelled alike.
		steps = 1
	}
	for k := 0; k < steps; k++ {
		v := lo
		if hi > lo && steps > 1 {
			v = math.Exp(math.Log(lo) + float64(k)/float64(steps-1)*(math.Log(hi)-math.Log(lo)))
		}
		s.cell(c2cCell, x, y, 34, 12, shade(v), "")
		s.text("legend", x+17, y+26, "middle", num(v, 0))
		x += 38
	}
	s.rect(c2cGroup, x+14, y, 14, 12, "")
	s.text("legend", x+32, y+10, "start", "a group found from the matrix")
	s.text("legend", g.left, y+46, "start", "Brackets on the left: the L3 domains sysfs declares. Grey: the diagonal, and pairs not measured.")
}
