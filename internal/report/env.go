package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/doctor"
)

// environmentSection shows what the numbers depend on besides hardware:
// kernels, governors, irqbalance, the socket buffer sysctls, and the
// tools and versions used.
func (b *builder) environmentSection() (*section, error) {
	const id, title = "environment", "Environment"
	tools := b.toolsTable()
	if len(b.ds.Hosts) == 0 && len(tools.Rows) == 0 {
		return omitted(id, title, "Environment: no doctor report and no tool versions in this data set."), nil
	}
	s := &section{ID: id, Title: title}
	t := &table{ID: "environment", Caption: "Hosts",
		Head: []string{"Host", "Kernel", "Governors", "Scaling driver", "irqbalance", "rmem_max / wmem_max", "tcp_rmem / tcp_wmem", "Congestion control"}}
	for i := range b.ds.Hosts {
		rep := &b.ds.Hosts[i]
		irqb := "not running"
		if rep.Host.IRQBalance.Running {
			irqb = "running"
		}
		sc := func(key string) string { return b.sysctlOverTime(rep, key) }
		t.Rows = append(t.Rows, []string{rep.Host.Hostname, orDash(rep.Host.Kernel), governors(rep.CPU.Governors),
			orDash(rep.CPU.ScalingDriver), irqb,
			sc("net.core.rmem_max") + " / " + sc("net.core.wmem_max"),
			sc("net.ipv4.tcp_rmem") + " / " + sc("net.ipv4.tcp_wmem"),
			sc("net.ipv4.tcp_congestion_control")})
	}
	s.addTable(t)
	s.addTable(tools)
	if w := b.warnings(); len(w) > 0 {
		s.addHeading("Warnings observed")
		s.Blocks = append(s.Blocks, block{Items: w})
	}
	return s, nil
}

// warnings gathers what the tools and doctor noted along the way (facts
// that could not be read, limits the kernel imposed, tool warnings), each
// once, with where it was seen.
func (b *builder) warnings() []item {
	var order []string
	where := map[string][]string{}
	add := func(text, from string) {
		if _, ok := where[text]; !ok {
			order = append(order, text)
		}
		if !slices.Contains(where[text], from) {
			where[text] = append(where[text], from)
		}
	}
	for i := range b.ds.Hosts {
		for _, n := range b.ds.Hosts[i].Notes {
			add(n, "doctor on "+b.ds.Hosts[i].Host.Hostname)
		}
	}
	runsOf := map[string][]int64{}
	for i := range b.ds.Runs {
		r := &b.ds.Runs[i].Result
		for _, n := range append(append([]string{}, r.Start.Notes...), r.End.Errors...) {
			add(n, "runs")
			runsOf[n] = append(runsOf[n], r.RunID)
		}
	}
	for _, p := range b.ds.Perftest {
		for _, w := range p.Warnings {
			add(w, p.Test)
		}
	}
	items := make([]item, 0, len(order))
	for _, text := range order {
		from := where[text]
		for i, f := range from {
			if f == "runs" {
				ids := runsOf[text]
				slices.Sort(ids)
				from[i] = "run" + plural(len(ids)) + " " + idRanges(ids)
			}
		}
		items = append(items, item{Class: "info", Text: text + " (" + strings.Join(from, "; ") + ")"})
	}
	return items
}

// governors is "powersave on 0-11".
func governors(g map[string][]int) string {
	names := make([]string, 0, len(g))
	for n := range g {
		names = append(names, n)
	}
	slices.Sort(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, n+" on "+cpus(g[n]))
	}
	if len(parts) == 0 {
		return "none (no cpufreq)"
	}
	return strings.Join(parts, "; ")
}

// sysctl formats one sysctl value from doctor's JSON (numbers, strings or
// lists of numbers).
func sysctl(rep *doctor.Report, key string) string {
	v, ok := rep.Sysctl[key]
	if !ok {
		return "—"
	}
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = scalar(e)
		}
		return strings.Join(parts, " ")
	case []int64:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = strconv.FormatInt(e, 10)
		}
		return strings.Join(parts, " ")
	}
	return scalar(v)
}

// scalar formats a JSON number without an exponent (6291456, not
// 6.291456e+06), anything else as Go prints it.
func scalar(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// toolsTable lists linerate's version, the engines the runs used and the
// tools the dataset names.
func (b *builder) toolsTable() *table {
	t := &table{ID: "tools", Caption: "Tools"}
	t.Head = []string{"Tool", "Version"}
	if b.ds.Linerate != "" {
		t.Rows = append(t.Rows, []string{"linerate", b.ds.Linerate})
	}
	for _, tl := range b.ds.Tools {
		t.Rows = append(t.Rows, []string{tl.Name, orDash(tl.Version)})
	}
	var engines []string
	for i := range b.ds.Runs {
		if e := b.ds.Runs[i].Result.Engine; e != "" && !slices.Contains(engines, e) {
			engines = append(engines, e)
		}
	}
	slices.Sort(engines)
	if len(engines) > 0 {
		t.Rows = append(t.Rows, []string{"bench engines used", strings.Join(engines, ", ")})
	}
	return t
}

// commandsSection lists the commands that reproduce every run: each
// campaign's command, else each run's, grouped by identical command.
func (b *builder) commandsSection() (*section, error) {
	const id, title = "commands", "Commands to reproduce"
	var lines []string
	covered := map[int64]bool{}
	for ci := range b.ds.Campaigns {
		c := &b.ds.Campaigns[ci]
		if c.Command == "" {
			continue
		}
		var ids []int64
		for _, p := range c.Points {
			ids = append(ids, p.RunIDs...)
		}
		slices.Sort(ids)
		for _, rid := range ids {
			covered[rid] = true
		}
		lines = append(lines, "# "+campaignName(ci, c)+": runs "+idRanges(ids), c.Command)
	}
	lines = append(lines, b.runCommands(covered)...)
	for _, r := range b.ds.Perftest {
		if r.Command == "" {
			continue
		}
		lines = append(lines, "# "+r.Test+" ("+orDash(r.Host)+")")
		if r.Server != "" {
			lines = append(lines, "server$ "+r.Server)
		}
		lines = append(lines, "client$ "+r.Command)
	}
	for _, j := range b.ds.Tunes {
		lines = append(lines, "# tune "+j.ID+" on "+orDash(j.Host)+" (or: linerate tune --apply)")
		for _, c := range j.Changes {
			if c.Command != "" {
				lines = append(lines, c.Command)
			}
		}
	}
	if len(lines) == 0 {
		return omitted(id, title, "Commands to reproduce: no run in this data set."), nil
	}
	s := &section{ID: id, Title: title}
	s.Blocks = append(s.Blocks, block{Code: lines})
	return s, nil
}

// runCommands groups the runs no campaign command covers by their command.
func (b *builder) runCommands(covered map[int64]bool) []string {
	byCmd := map[string][]int64{}
	var order []string
	for i := range b.ds.Runs {
		r := &b.ds.Runs[i]
		if covered[r.Result.RunID] {
			continue
		}
		cmd := r.Command
		if cmd == "" {
			continue // not known (a data set made without bench's writer)
		}
		if _, ok := byCmd[cmd]; !ok {
			order = append(order, cmd)
		}
		byCmd[cmd] = append(byCmd[cmd], r.Result.RunID)
	}
	var lines []string
	for _, cmd := range order {
		ids := byCmd[cmd]
		slices.Sort(ids)
		lines = append(lines, fmt.Sprintf("# run%s %s", plural(len(ids)), idRanges(ids)), cmd)
	}
	return lines
}

// sysctlOverTime is a host's sysctl as the doctor report read it, or,
// when a tune journal of the report changed it on that host, both states:
// "212992 → 4194304 (tune j1)". A report that spans a tune has runs under
// both values, and one value would describe only some of them.
func (b *builder) sysctlOverTime(rep *doctor.Report, key string) string {
	var parts []string
	for _, j := range b.ds.Tunes {
		if j.Host != "" && j.Host != rep.Host.Hostname {
			continue
		}
		for _, c := range j.Changes {
			if c.Kind == "sysctl" && c.Target == key {
				parts = append(parts, fmt.Sprintf("%s → %s (tune %s)", orDash(c.Before), orDash(c.After), j.ID))
			}
		}
	}
	if len(parts) == 0 {
		return sysctl(rep, key)
	}
	return strings.Join(parts, "; ")
}
