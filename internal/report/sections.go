package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/linerate/linerate/internal/doctor"
)

// ceilingSection shows the waterfall from line rate to the measured rate:
// one for the path, or one per label when the runs took different paths
// (a report of two labs), each with that label's best result.
func (b *builder) ceilingSection() (*section, error) {
	const id, title = "ceiling", "Ceiling"
	gs := b.labelGroups()
	if len(gs) < 2 || len(b.allPaths()) < 2 {
		rows := waterfallRows(b.path, b.best())
		if len(rows) == 0 {
			return omitted(id, title, "Ceiling: no line rate is known for the tested path, so no ceiling can be drawn."), nil
		}
		s := &section{ID: id, Title: title}
		s.addText(ceilingIntro)
		if err := b.addWaterfall(s, "", "", rows); err != nil {
			return nil, err
		}
		return s, nil
	}
	s := &section{ID: id, Title: title}
	s.addText(ceilingIntro)
	for i, g := range gs {
		s.addHeading("Ceiling of " + g.title())
		rows := waterfallRows(g.path, b.bestOf(g.has))
		if len(rows) == 0 {
			s.addText("No line rate is known for this path, so no ceiling can be drawn.")
			continue
		}
		if err := b.addWaterfall(s, fmt.Sprintf("-%d", i+1), " — "+g.title(), rows); err != nil {
			return nil, err
		}
	}
	return s, nil
}

const ceilingIntro = "Each stage can only lower the ceiling: the line rate, what the PCIe link carries, and what is left for TCP payload at the MTU (IPv4, TCP timestamps, and the Ethernet framing the line rate is counted with: MAC header, preamble, gap and FCS on a wire; the MAC header alone under a shaping qdisc). The slower end of the path sets each stage."

// addWaterfall adds one path's waterfall chart and stage table; idSuffix
// keeps their IDs unique in a report with several.
func (b *builder) addWaterfall(s *section, idSuffix, titleSuffix string, rows []waterfallRow) error {
	c, err := b.waterfallChart("waterfall"+idSuffix, titleSuffix, rows)
	if err != nil {
		return err
	}
	s.addChart(c)
	t := &table{ID: "ceiling-stages" + idSuffix, Caption: "Ceiling stages" + titleSuffix,
		Head: []string{"Stage", "Rate (Gbit/s)", "Ceiling after it (Gbit/s)", "Share of line rate", "Detail"},
		Num:  []bool{false, true, true, true, false}}
	line := rows[0].value
	for _, r := range rows {
		class := ""
		if r.measured {
			class = "best"
		}
		t.Rows = append(t.Rows, []string{r.name, gbps(r.own), gbps(r.value), pct(r.value, line), r.detail})
		t.Classes = append(t.Classes, class)
	}
	s.addTable(t)
	return nil
}

// findingsSection lists the findings with evidence and fixes, noting
// those a tune journal answered. Hosts with the same finding (the two ends
// of a lab are often alike) share one entry.
func (b *builder) findingsSection() (*section, error) {
	const id, title = "findings", "Findings"
	if len(b.ds.Hosts) == 0 {
		return omitted(id, title, "Findings: no doctor report in this data set."), nil
	}
	answered := b.answeredFindings()
	s := &section{ID: id, Title: title}
	for _, g := range groupFindings(b.ds.Hosts) {
		hosts := strings.Join(g.hosts, " and ")
		if len(g.findings) == 0 {
			s.addHeading(hosts + ": no findings")
			s.addText("doctor found nothing that limits the link.")
			continue
		}
		s.addHeading(fmt.Sprintf("%s: %d finding%s", hosts, len(g.findings), plural(len(g.findings))))
		var items []item
		for _, f := range g.findings {
			var tunes []string
			for _, h := range g.hosts {
				for _, j := range answered[h+"\x00"+f.ID] {
					tunes = append(tunes, "on "+h+" by tune "+j)
				}
			}
			it := findingItem(f, tunes)
			if f.ID == "sysctl.socket_buffers_small" {
				it.Text += b.buffersAtMeasuredRTT(f, g.hosts)
			}
			items = append(items, it)
		}
		s.Blocks = append(s.Blocks, block{Items: items})
	}
	return s, nil
}

// findingGroup is findings shared by a set of hosts.
type findingGroup struct {
	hosts    []string
	findings []doctor.Finding
}

// groupFindings groups each finding with the hosts that have it, word for
// word, and then groups findings by their set of hosts, in the hosts'
// order and doctor's order (most severe first).
func groupFindings(reps []doctor.Report) []findingGroup {
	key := func(f doctor.Finding) string {
		return f.ID + "\x00" + f.Subject + "\x00" + f.Summary + "\x00" + strings.Join(f.FixLines(), "\x00")
	}
	holders := map[string][]string{}
	for _, r := range reps {
		for _, f := range r.Findings {
			holders[key(f)] = append(holders[key(f)], r.Host.Hostname)
		}
	}
	var groups []findingGroup
	index := map[string]int{}
	done := map[string]bool{}
	for _, r := range reps {
		if len(r.Findings) == 0 {
			groups = append(groups, findingGroup{hosts: []string{r.Host.Hostname}})
		}
		for _, f := range r.Findings {
			k := key(f)
			if done[k] {
				continue
			}
			done[k] = true
			hs := strings.Join(holders[k], "\x00")
			i, ok := index[hs]
			if !ok {
				i = len(groups)
				index[hs] = i
				groups = append(groups, findingGroup{hosts: holders[k]})
			}
			groups[i].findings = append(groups[i].findings, f)
		}
	}
	return groups
}

func findingItem(f doctor.Finding, tunes []string) item {
	text := f.Subject + ": " + f.Summary
	if a, ok := f.Evidence["arithmetic"].(string); ok {
		text += " (" + a + ")"
	}
	if len(tunes) > 0 {
		text += " — addressed " + strings.Join(tunes, "; ") + "."
	}
	return item{Class: string(f.Severity), Badge: string(f.Severity), Lead: f.ID, Text: text, Code: f.FixLines()}
}

// answeredFindings maps host and finding ID to the journals whose changes
// answer it.
func (b *builder) answeredFindings() map[string][]string {
	out := map[string][]string{}
	for _, j := range b.ds.Tunes {
		for _, c := range j.Changes {
			k := j.Host + "\x00" + c.Finding
			if c.Finding != "" && !slices.Contains(out[k], j.ID) {
				out[k] = append(out[k], j.ID)
			}
		}
	}
	return out
}

// buffersAtMeasuredRTT judges the socket-buffer finding again at the RTT
// the bench measured between the hosts, when the report holds such runs:
// doctor judges at an assumed RTT (1 ms unless --rtt), and a flow's cap
// scales with 1/RTT, so beside a bench on a 50 µs path "tops out near 0.3
// Gbit/s" would contradict the 9.5 Gbit/s measured on the same page. The
// RTT is the median over the unpaced TCP runs made without a tune
// journal of each run's median smoothed RTT (TCP_INFO of the sending sockets, under load). "" when no
// run measured one or the finding lacks its figures.
func (b *builder) buffersAtMeasuredRTT(f doctor.Finding, hosts []string) string {
	auto, ok := f.Evidence["autotuned_flow_gbps"].(float64)
	rttMs, ok2 := f.Evidence["rtt_ms"].(float64)
	if !ok || !ok2 || rttMs <= 0 {
		return ""
	}
	var perRun, best []float64
	for i := range b.ds.Runs {
		if b.ds.Runs[i].TuneID != "" {
			continue // made under a tune journal: other buffers than the finding's
		}
		r := &b.ds.Runs[i].Result
		if r.Error != "" || !r.Unpaced() ||
			!slices.Contains(hosts, r.Start.Client.Hostname) && !slices.Contains(hosts, r.Start.Server.Hostname) {
			continue
		}
		var rtts []float64
		for _, iv := range r.Intervals {
			for _, st := range iv.Streams {
				if st.RTTus > 0 {
					rtts = append(rtts, float64(st.RTTus))
				}
			}
		}
		if len(rtts) > 0 {
			perRun = append(perRun, median(rtts))
			best = append(best, runGbps(r))
		}
	}
	if len(perRun) == 0 {
		return ""
	}
	rttUs := median(perRun)
	atMeasured := auto * rttMs * 1000 / rttUs
	top := slices.Max(best)
	var verdict string
	switch {
	case top < 0.9*atMeasured:
		verdict = fmt.Sprintf("above the best run's %s Gbit/s: on this path the buffers are not what limits the bench; the finding holds for paths of the assumed RTT", gbps(top))
	case top <= 1.1*atMeasured:
		verdict = fmt.Sprintf("close to the best run's %s Gbit/s: the buffers are likely what limits this path's flows", gbps(top))
	default:
		verdict = fmt.Sprintf("less than the best run's %s Gbit/s: the kernel granted a larger window than the model assumes, and the buffers are not what limits this bench", gbps(top))
	}
	return fmt.Sprintf(" At the RTT the bench measured on this path (%s, the median TCP smoothed RTT of %d run%s) instead of the assumed %g ms, the same buffers let an autotuned flow reach about %s Gbit/s, %s.",
		rttText(rttUs), len(perRun), plural(len(perRun)), rttMs, num(atMeasured, 1), verdict)
}

// rttText is a round trip in µs as "52 µs" or "1.2 ms".
func rttText(us float64) string {
	if us >= 1000 {
		return num(us/1000, 1) + " ms"
	}
	return num(us, 0) + " µs"
}
