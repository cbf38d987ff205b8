package report

import (
	"errors"
	"fmt"
	"html/template"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/fleet"
)

// BuildFleet makes the report of a fleet run from its linerate.fleet/v1
// document: the verdict (the blame), the host × host matrix, the
// outliers, the re-tests, every pair and the run's settings.
//
// It reads the document, not the stored runs of the fleet's label: the
// document holds what the runs cannot — the schedule, the tests that
// failed (they stored nothing), the re-tests, the threshold and the blame
// itself — and it carries each direction's run IDs, so that
// `linerate report --run ID` opens any test's own report.
func BuildFleet(res *fleet.Result, title, version string) (*Model, error) {
	if res == nil {
		return nil, errors.New("report: no fleet result")
	}
	if err := res.Check(); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	r, err := newRenderer()
	if err != nil {
		return nil, err
	}
	// The matrix's styles go with the fleet report's charts only, so the
	// other reports' SVGs stay as they are.
	css, err := assets.ReadFile("assets/fleet.css")
	if err != nil {
		return nil, fmt.Errorf("report: read fleet.css: %w", err)
	}
	r.chartCSS += "\n" + template.CSS(css)
	if title == "" {
		title = fmt.Sprintf("linerate fleet: %d hosts, %s", len(res.Hosts), res.Pattern)
		if res.Label != "" {
			title += " (" + res.Label + ")"
		}
	}
	m := &Model{Title: title, Verdict: res.Verdict, version: version, r: r}
	fb := &fleetBuilder{res: res, r: r}
	makers := []func() (*section, error){fb.matrixSection, fb.outliersSection, fb.retestsSection, fb.halvingSection, fb.pairsSection, fb.runSection}
	if res.Incast != nil {
		// An incast blames nobody and tries nothing again: its figures
		// take the matrix's, the outliers' and the re-tests' place.
		makers = []func() (*section, error){fb.incastSection, fb.pairsSection, fb.runSection}
	}
	for _, mk := range makers {
		s, err := mk()
		if err != nil {
			return nil, err
		}
		if s != nil {
			m.sections = append(m.sections, s)
		}
	}
	return m, nil
}

type fleetBuilder struct {
	res *fleet.Result
	r   *renderer
}

func (fb *fleetBuilder) matrixSection() (*section, error) {
	s := &section{ID: "fleet-matrix", Title: "Pair matrix"}
	if fb.latency() {
		s.addText("Each cell is the typical latency (perftest's t_typical, its median) of one test, from the row's host to the column's, in µs (its best try when it was re-tested; its tooltip gives that try's 99th percentile). A test above %s times the fleet's best test (%s µs) is slow (ClusterKit's rule for RDMA latency). An outlier host's row (its send side) or column (its receive side) is framed.",
			num(fb.res.SlowFactor, 1), usOrDash(fb.res.BestUs))
	} else {
		s.addText("Each cell is the goodput of one test, from the row's host to the column's, in Gbit/s (its best try when it was re-tested). A test below %s%% of the fleet's %s test is slow; one slow while its own record showed contention (its CPUs busy with other work) is inconclusive, and not blamed. An outlier host's row (its send side) or column (its receive side) is framed.",
			num(fb.res.ThresholdPct, 0), map[bool]string{false: "median", true: "best"}[fb.res.FromBest])
	}
	if fb.res.Parallel {
		s.addText("The tests of each leg ran at once; a dot marks a figure a re-test measured with another number of tests at once than the test's first try (its tooltip gives both).")
	}
	if fb.res.Design == fleet.DesignSampled {
		s.addText("Sampled design: each host was tested with %d partners drawn at random (seed %d), then suspects against hosts already proven good; the other cells were not tested.",
			fb.res.Partners, fb.res.Seed)
	}
	c, err := fb.matrixChart()
	if err != nil {
		return nil, err
	}
	s.addChart(c)
	return s, nil
}

func (fb *fleetBuilder) outliersSection() (*section, error) {
	const id, title = "fleet-outliers", "Outliers"
	if len(fb.res.Outliers) == 0 {
		s := &section{ID: id, Title: title}
		s.addText("No outlier: %s", fb.res.Verdict)
		return s, nil
	}
	s := &section{ID: id, Title: title}
	var items []item
	for _, o := range fb.res.Outliers {
		class, badge := "warning", o.Kind
		if o.Cause == fleet.CauseFailed {
			class = "critical"
		}
		lead := o.Name
		switch {
		case o.Kind == fleet.KindPath:
			lead = pathWay(o)
		case o.Cause == fleet.CauseSlow:
			lead = o.Name + map[string]string{fleet.DirSend: ": send side", fleet.DirReceive: ": receive side", fleet.DirBoth: ": both sides"}[o.Direction]
		}
		text := o.Evidence
		switch n := len(o.Partners); {
		case n > 8:
			text += fmt.Sprintf(" (with %d hosts)", n)
		case n > 0:
			text += " (with " + strings.Join(o.Partners, ", ") + ")"
		}
		next := o.Next
		if len(next) == 0 {
			next = fb.outlierNext(o)
		}
		items = append(items, item{Class: class, Badge: badge, Lead: lead, Text: text, Code: next})
	}
	s.Blocks = append(s.Blocks, block{Items: items})
	return s, nil
}

// pathWay is a path outlier's name with its direction: "h01→h05".
func pathWay(o fleet.Outlier) string {
	if o.Way != "" {
		return o.Way
	}
	a, c, ok := strings.Cut(o.Name, "-")
	if !ok {
		return o.Name
	}
	switch o.Direction {
	case fleet.DirSend:
		return a + "→" + c
	case fleet.DirReceive:
		return c + "→" + a
	}
	return a + "↔" + c
}

// outlierNext is what to run next about an outlier, for a document that
// does not say (fleet run adds the commands that reach its hosts): with
// the host's interface and the peer's address, never a placeholder.
func (fb *fleetBuilder) outlierNext(o fleet.Outlier) []string {
	host := func(name string) fleet.Host {
		for _, h := range fb.res.Hosts {
			if h.Name == name {
				return h
			}
		}
		return fleet.Host{Name: name}
	}
	if o.Kind == fleet.KindHost && o.Cause == fleet.CauseSlow {
		h := host(o.Name)
		doctor := "linerate doctor"
		if h.Iface != "" {
			doctor += " --iface " + h.Iface
		}
		return []string{doctor + "   # on " + o.Name + ": NIC, PCIe, IRQs, optics, shapers"}
	}
	if o.Kind == fleet.KindPath && len(o.Partners) == 2 {
		from, to := o.Partners[0], o.Partners[1]
		if o.Direction == fleet.DirReceive {
			from, to = to, from
		}
		return []string{fmt.Sprintf("linerate bench %s --repeat 5   # on %s, with 'linerate serve' on %s: the path again, alone", host(to).Address, from, to)}
	}
	return nil
}

func (fb *fleetBuilder) retestsSection() (*section, error) {
	const id, title = "fleet-retests", "Re-tests"
	if len(fb.res.Retests) == 0 {
		return omitted(id, title, "Re-tests: no test was slow, so none was tried again."), nil
	}
	s := &section{ID: id, Title: title}
	how := "one test at a time, each just after a control (a test that was fine, between two other hosts, run again: the slow limit is scaled by how it fared, so that a re-test is judged by the load of its moment)"
	if fb.res.Parallel {
		how = "as the first tries ran: in legs of disjoint tests at once (the At once column says how many ran together, the first try first)"
	}
	s.addText("A slow test is tried again, %s. It comes back when a try is not slow; it stays slow when every try was, two of them with their CPUs to themselves; it is inconclusive when every try was slow and fewer were. A slow test no host explains is tried twice more before its path is blamed.", how)
	unit := "Gbit/s"
	if fb.latency() {
		unit = "µs"
	}
	head := []string{"From", "To", "First (" + unit + ")", "Re-tests (" + unit + ")", "Result"}
	num := []bool{false, false, true, true, false}
	if fb.res.Parallel {
		head = []string{"From", "To", "First (" + unit + ")", "Re-tests (" + unit + ")", "At once", "Result"}
		num = []bool{false, false, true, true, true, false}
	}
	t := &table{ID: "fleet-retests", Caption: "Slow tests tried again", Head: head, Num: num}
	for _, rt := range fb.res.Retests {
		var again []string
		for _, g := range rt.RetestsGbps {
			again = append(again, gbpsOrZero(g))
		}
		// A test that came back is muted; one slow again stands out.
		result, class := "not slow on re-test", "warn"
		switch {
		case rt.Status == fleet.StatusInconclusive:
			result, class = "inconclusive: "+firstNonEmpty(rt.Contention), "warn"
		case rt.Confirmed:
			result, class = "slow again", "crit"
		}
		first := gbpsOrZero(rt.FirstGbps)
		if fb.latency() {
			first, again = usOrDash(rt.FirstUs), nil
			for _, us := range rt.RetestsUs {
				again = append(again, fleetUs(us))
			}
		}
		row := []string{rt.From, rt.To, first, strings.Join(again, ", ")}
		if fb.res.Parallel {
			var at []string
			for _, k := range rt.AtOnce {
				at = append(at, strconv.Itoa(k))
			}
			row = append(row, orDash(strings.Join(at, ", ")))
		}
		t.Rows = append(t.Rows, append(row, result))
		t.Classes = append(t.Classes, class)
	}
	s.addTable(t)
	return s, nil
}

func (fb *fleetBuilder) pairsSection() (*section, error) {
	s := &section{ID: "fleet-pairs", Title: "Pairs"}
	head := []string{"Pair", "Round", "a → b (Gbit/s)", "b → a (Gbit/s)", "Status", "Runs", "Note"}
	if fb.latency() {
		head[2], head[3] = "a → b (µs, typical / 99th pct.)", "b → a (µs, typical / 99th pct.)"
	}
	t := &table{ID: "fleet-pairs", Caption: "Every pair, in both directions",
		Head: head,
		Num:  []bool{false, true, true, true, false, false, false}}
	for _, p := range fb.res.Pairs {
		class := ""
		if p.Status == fleet.StatusSlow || p.Status == fleet.StatusFailed {
			class = "crit"
		}
		var runs, notes []string
		for _, d := range []fleet.Direction{p.AToB, p.BToA} {
			for _, id := range d.RunIDs {
				runs = append(runs, strconv.FormatInt(id, 10))
			}
			if d.Error != "" {
				notes = append(notes, d.Error)
			}
			if d.Status == fleet.StatusInconclusive {
				notes = append(notes, "inconclusive: "+firstNonEmpty(d.TriesContention))
			}
		}
		if p.Retested {
			notes = append(notes, "re-tested")
		}
		if p.Probe {
			notes = append(notes, "probe of a suspect against a host proven good")
		}
		ab, ba := dirCell(p.AToBGbps, p.AToB), dirCell(p.BToAGbps, p.BToA)
		if fb.latency() {
			ab, ba = latencyCell(p.AToBUs, p.AToBP99Us, p.AToB), latencyCell(p.BToAUs, p.BToAP99Us, p.BToA)
		}
		t.Rows = append(t.Rows, []string{p.A + " – " + p.B, strconv.Itoa(p.Round),
			ab, ba, p.Status, orDash(strings.Join(runs, ", ")), orDash(strings.Join(notes, "; "))})
		t.Classes = append(t.Classes, class)
	}
	s.addTable(t)
	return s, nil
}

// dirCell is one direction's figure, or what happened instead.
func dirCell(g *float64, d fleet.Direction) string {
	switch {
	case g != nil:
		return gbpsOrZero(*g)
	case d.Status == fleet.StatusFailed:
		return "failed"
	case d.Status == fleet.StatusUntested:
		return "—"
	}
	return "not run"
}

// gbpsOrZero formats Gbit/s like gbps, but shows a measured 0 as 0.00 (a
// test that carried nothing is a result, not an unknown) and below 1
// Gbit/s with three decimals, as the fleet's text summary does: a shaped
// lab's 0.046 and 0.205 must not read 0.05 and 0.21.
func gbpsOrZero(g float64) string {
	switch {
	case g == 0:
		return "0.00"
	case g > 0 && g < 1:
		return num(g, 3)
	}
	return gbps(g)
}

func (fb *fleetBuilder) runSection() (*section, error) {
	res := fb.res
	s := &section{ID: "fleet-run", Title: "Run"}
	mode := "one test at a time"
	if res.Parallel {
		mode = fmt.Sprintf("each leg's disjoint tests at once (--concurrent), %d leg%s", res.Legs, plural(res.Legs))
	}
	design := "all: every pair of the pattern, both ways"
	if res.Design == fleet.DesignSampled {
		design = fmt.Sprintf("sampled: %d partners each (seed %d), then suspects against hosts proven good", res.Partners, res.Seed)
	}
	med, below := "—", "—"
	if res.MedianGbps != nil {
		med, below = gbpsOrZero(*res.MedianGbps), gbpsOrZero(*res.SlowBelowGbps)
	}
	t := &table{ID: "fleet-settings", Caption: "Settings and figures", Head: []string{"Setting", "Value"}}
	if res.Incast != nil {
		t.Rows = [][]string{
			{"Hosts", strconv.Itoa(len(res.Hosts))},
			{"Pattern", res.Pattern + fmt.Sprintf(": %d senders to %s at once, in one leg", len(res.Incast.Senders), res.Incast.Receiver)},
			{"Each test", fmt.Sprintf("%s s, %d stream%s", num(res.DurationS, 1), res.Streams, plural(res.Streams))},
			{"Short below", num(res.Incast.ShortBelowPct, 0) + "% of the fair share"},
			{"Wall time", num(res.WallS, 0) + " s"},
		}
		if at := res.Incast.At; at != nil {
			t.Rows = append(t.Rows, []string{"All senders at once", at.Start.Format("15:04:05.000") + " – " + at.End.Format("15:04:05.000") + " UTC"})
		}
	} else {
		t.Rows = [][]string{
			{"Hosts", strconv.Itoa(len(res.Hosts))},
			{"Design", design},
			{"Pattern", res.Pattern},
			{"Schedule", fmt.Sprintf("%d pair%s in %d round%s, %d test%s run (re-tests included), %s", len(res.Pairs), plural(len(res.Pairs)),
				res.Rounds, plural(res.Rounds), res.Tests, plural(res.Tests), mode)},
			{"Each test", fmt.Sprintf("%s s, %d stream%s", num(res.DurationS, 1), res.Streams, plural(res.Streams))},
			{"Median test", med + " Gbit/s"},
			{"Slow below", fmt.Sprintf("%s Gbit/s (%s%% of the %s)", below, num(res.ThresholdPct, 0), map[bool]string{false: "median", true: "best test"}[res.FromBest])},
			{"Wall time", num(res.WallS, 0) + " s"},
		}
	}
	if fb.latency() {
		t.Rows[5] = []string{"Best and median test", fmt.Sprintf("%s µs, %s µs (typical latency)", usOrDash(res.BestUs), usOrDash(res.MedianUs))}
		t.Rows[6] = []string{"Slow above", fmt.Sprintf("%s µs (%s times the best)", usOrDash(res.SlowAboveUs), num(res.SlowFactor, 1))}
	}
	if res.Label != "" {
		t.Rows = append(t.Rows, []string{"Label", res.Label + " (linerate history --label " + res.Label + ")"})
	}
	s.addTable(t)
	ht := &table{ID: "fleet-hosts", Caption: "Hosts", Head: []string{"Host", "Address", "Interface", "SSH"}}
	for _, h := range res.Hosts {
		ht.Rows = append(ht.Rows, []string{h.Name, h.Address, orDash(h.Iface), orDash(h.SSH)})
	}
	s.addTable(ht)
	return s, nil
}

// latency says whether the document is a latency run's.
func (fb *fleetBuilder) latency() bool { return fb.res.Metric == fleet.MetricLatency }

// halvingSection lists the rounds of the RDMA matrix's halving re-tests,
// when any ran (nil otherwise: the section is left out).
func (fb *fleetBuilder) halvingSection() (*section, error) {
	if len(fb.res.Halving) == 0 {
		return nil, nil
	}
	s := &section{ID: "fleet-halving", Title: "Re-tests by halving"}
	s.addText("As ClusterKit re-tests an RDMA matrix: a host in two or more bad pairs is a suspect; each round re-tests the half of the suspects with the most bad pairs against the hosts known good (those whose every bad pair is with a suspect of the round), and blames a suspect bad with most of them or clears it. A bad pair whose two ends were cleared is its path's.")
	t := &table{ID: "fleet-halving", Caption: "Halving rounds", Head: []string{"Round", "Suspects", "Known good", "Tests", "Blamed", "Cleared"},
		Num: []bool{true, false, false, true, false, false}}
	for _, h := range fb.res.Halving {
		t.Rows = append(t.Rows, []string{strconv.Itoa(h.Round), strings.Join(h.Suspects, ", "), strings.Join(h.Good, ", "),
			strconv.Itoa(h.Tests), orDash(strings.Join(h.Blamed, ", ")), orDash(strings.Join(h.Cleared, ", "))})
		class := ""
		if len(h.Blamed) > 0 {
			class = "crit"
		}
		t.Classes = append(t.Classes, class)
	}
	s.addTable(t)
	return s, nil
}

// latencyCell is one direction's typical latency and 99th percentile,
// or what happened instead.
func latencyCell(us, p99 *float64, d fleet.Direction) string {
	if us == nil {
		return dirCell(nil, d)
	}
	if p99 == nil {
		return fleetUs(*us)
	}
	return fleetUs(*us) + " / " + fleetUs(*p99)
}

// fleetUs writes a fleet's microseconds with two decimals, as its text
// does.
func fleetUs(us float64) string { return num(us, 2) }

func usOrDash(us *float64) string {
	if us == nil {
		return "—"
	}
	return fleetUs(*us)
}
