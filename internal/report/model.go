package report

import (
	"errors"
	"fmt"
	"strings"
)

// Model is a built report: the verdict and the sections with their tables
// and rendered charts, ready for WriteHTML and WriteMarkdown.
type Model struct {
	// Title heads the report; it says "synthetic" when the data are.
	Title string
	// Synthetic repeats Dataset.Synthetic: what was not measured.
	Synthetic string
	// Verdict is the one-sentence answer: achieved X of Y Gbit/s, and the
	// limiting factor.
	Verdict  string
	sections []*section
	version  string // linerate's, for the footer
	r        *renderer
}

// section is one part of the report. A section without data has Omitted
// set to a one-line note and no blocks.
type section struct {
	ID      string
	Title   string
	Omitted string
	Blocks  []block
}

// block is one element of a section; exactly one field is set. Fields are
// exported for the templates only.
type block struct {
	Heading string   // a sub-heading
	Text    string   // a paragraph
	Table   *table   // a table
	Chart   *chart   // a figure
	Items   []item   // a list
	Code    []string // commands, one per line
}

// table is a captioned table. Num marks right-aligned numeric columns.
type table struct {
	ID      string
	Caption string
	Head    []string
	Num     []bool
	Rows    [][]string
	// Classes optionally styles rows ("crit", "warn", "best"); parallel to Rows.
	Classes []string
}

// item is a list entry: a finding with its fixes, or a sentence.
type item struct {
	Class string   // "critical", "warning", "info" or ""
	Badge string   // a short tag shown first ("critical")
	Lead  string   // bold lead-in (a finding ID)
	Text  string   // the sentence
	Code  []string // commands that go with it
}

// addText, addTable, … append blocks to a section.
func (s *section) addText(format string, a ...any) {
	s.Blocks = append(s.Blocks, block{Text: fmt.Sprintf(format, a...)})
}

func (s *section) addHeading(h string) { s.Blocks = append(s.Blocks, block{Heading: h}) }

func (s *section) addTable(t *table) {
	if t == nil || len(t.Rows) == 0 {
		return
	}
	// The templates index Num by column and Classes by row: fill both.
	for len(t.Num) < len(t.Head) {
		t.Num = append(t.Num, false)
	}
	for len(t.Classes) < len(t.Rows) {
		t.Classes = append(t.Classes, "")
	}
	s.Blocks = append(s.Blocks, block{Table: t})
}

func (s *section) addChart(c *chart) {
	if c != nil {
		s.Blocks = append(s.Blocks, block{Chart: c})
	}
}

// omit marks a section as without data.
func omitted(id, title, note string) *section {
	return &section{ID: id, Title: title, Omitted: note}
}

// builder carries what sections share while a report is built.
type builder struct {
	ds   *Dataset
	r    *renderer
	runs map[int64]*Run // by run ID
	path *path          // the tested path (the first run's) and its ceilings; nil when unknown
	// paths are the paths of the runs by their ends (pathOf).
	paths map[string]*path
}

// Build makes the report model from a dataset. It fails on data that
// cannot be reported at all (an empty dataset, runs with the same ID, a
// campaign naming a run that is not in the dataset); missing parts only
// leave their sections out.
func Build(ds Dataset) (*Model, error) {
	if len(ds.Hosts) == 0 && len(ds.Runs) == 0 && len(ds.Perftest) == 0 {
		return nil, errors.New("report: nothing to report: no doctor report, run or perftest result")
	}
	r, err := newRenderer()
	if err != nil {
		return nil, err
	}
	b := &builder{ds: &ds, r: r, runs: map[int64]*Run{}}
	if err := b.index(); err != nil {
		return nil, err
	}
	b.path = b.findPath()
	m := &Model{Title: b.title(), Synthetic: ds.Synthetic, version: ds.Linerate, r: r}
	m.Verdict = b.verdict()
	for _, mk := range []func() (*section, error){
		b.hostsSection, b.ceilingSection, b.gapSection, b.findingsSection, b.resultsSection, b.rdmaSection, b.comparisonSection,
		b.varianceSection, b.latencySection, b.transactionsSection, b.c2cSection, b.tuningSection, b.environmentSection, b.commandsSection,
	} {
		s, err := mk()
		if err != nil {
			return nil, err
		}
		m.sections = append(m.sections, s)
	}
	return m, nil
}

// index maps run IDs to runs and checks that campaigns refer to known runs.
func (b *builder) index() error {
	for i := range b.ds.Runs {
		r := &b.ds.Runs[i]
		if _, dup := b.runs[r.Result.RunID]; dup {
			return fmt.Errorf("report: run %d appears twice", r.Result.RunID)
		}
		b.runs[r.Result.RunID] = r
	}
	for ci, c := range b.ds.Campaigns {
		for _, p := range c.Points {
			for _, id := range p.RunIDs {
				if b.runs[id] == nil {
					return fmt.Errorf("report: campaign %d (%s) names run %d, which is not in the data", ci+1, orDash(c.Label), id)
				}
			}
		}
	}
	return nil
}

// title is the dataset's title or one made from the hosts, marked when the
// data are synthetic.
func (b *builder) title() string {
	t := b.ds.Title
	if t == "" {
		t = "linerate report"
		var names []string
		for _, p := range b.allPaths() {
			names = append(names, p.hostsText())
		}
		if len(names) == 0 && b.path != nil && len(b.path.ends) > 0 {
			names = append(names, b.path.hostsText())
		}
		if len(names) > 0 {
			t += ": " + strings.Join(names, "; ")
		}
	}
	if b.ds.Synthetic != "" {
		t += " (synthetic data)"
	}
	return t
}
