package explain

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/telemetry"
)

// otherBusy is the share (%) of a CPU taken by other work than the test
// above which an explanation names it: a fifth of a core is enough to
// slow a stream thread that shares it.
const otherBusy = 20.0

// busyCPU is one CPU that other work kept busy during one run.
type busyCPU struct {
	end string // "client", "server", or "" when both ends share the host
	cpu int
	pct float64 // its share of other work
	// procs are the other processes last seen on it, those pinned to it
	// first (certainly there), then the busiest; at most maxProcs.
	procs []result.Proc
	used  bool      // the test's threads were pinned on it
	free  bool      // the test's threads were not pinned at all
	runs  []int     // when grouped: the runs (1-based, campaign order)
	pcts  []float64 // when grouped: the share in each run
	key   string    // groups the same CPU and process across runs
}

// busyCPUs lists the CPUs of a run that other work kept above otherBusy,
// from each end's Foreign report. When both ends ran on one machine
// their reports describe the same CPUs: the client's is read, for the
// host.
func busyCPUs(r *result.Result) []busyCPU {
	var out []busyCPU
	f := r.End.Foreign
	ends := []struct {
		name string
		rep  *result.Foreign
		app  []int
	}{{"client", f.Client, r.Start.Placement.Client}, {"server", f.Server, r.Start.Placement.Server}}
	if sameMachine(r) {
		ends = ends[:1]
		ends[0].name = ""
		ends[0].app = append(slices.Clone(r.Start.Placement.Client), r.Start.Placement.Server...)
	}
	for _, e := range ends {
		if e.rep == nil {
			continue
		}
		for k, pct := range e.rep.CPU {
			cpu, err := strconv.Atoi(k)
			if err != nil || pct < otherBusy {
				continue
			}
			b := busyCPU{end: e.name, cpu: cpu, pct: pct, used: slices.Contains(e.app, cpu), free: len(e.app) == 0}
			b.procs = procsOn(e.rep.Top, cpu)
			b.key = fmt.Sprintf("%s/%d", e.name, cpu)
			if len(b.procs) > 0 {
				b.key += fmt.Sprintf("/%d/%s", b.procs[0].PID, b.procs[0].Name)
			}
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b busyCPU) int { return strings.Compare(a.key, b.key) })
	return out
}

// maxProcs bounds the processes an explanation names for one CPU.
const maxProcs = 2

// procsOn returns the processes of top last seen on cpu: those pinned to
// it first (an unpinned one last seen there may have run anywhere), then
// by CPU time; at most maxProcs.
func procsOn(top []result.Proc, cpu int) []result.Proc {
	var out []result.Proc
	for _, p := range top {
		if p.CPU == cpu {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b result.Proc) int {
		if a.Pinned != b.Pinned {
			if a.Pinned {
				return -1
			}
			return 1
		}
		return cmpFloat(b.CPUPct, a.CPUPct)
	})
	return out[:min(len(out), maxProcs)]
}

// sentence says what kept one CPU busy:
// "CPU 0 was 96% busy with pid 4123 (stress-ng, 95% of a CPU, pinned to
// it), not this test".
func (b busyCPU) sentence(pct float64) string {
	where := "CPU " + strconv.Itoa(b.cpu)
	if b.end != "" {
		where = "the " + b.end + "'s CPU " + strconv.Itoa(b.cpu)
	}
	who := "other work (no single process stood out)"
	var names []string
	var sum float64
	for _, p := range b.procs {
		n := fmt.Sprintf("pid %d (%s, %.0f%% of a CPU", p.PID, p.Name, p.CPUPct)
		if p.Pinned {
			n += ", pinned to it"
		}
		names = append(names, n+")")
		sum += p.CPUPct
	}
	switch {
	case len(names) > 0 && sum >= pct/2:
		who = strings.Join(names, " and ")
	case len(names) > 0:
		// The processes seen there account for little of the load: name
		// them as seen, not as its cause ("23% busy with pid 3245
		// (kworker, 2% of a CPU)" does not add up).
		who = "other work that no process seen there explains (the busiest seen: " + strings.Join(names, " and ") + ")"
	}
	return fmt.Sprintf("%s was %.0f%% busy with %s, not this test", where, pct, who)
}

// how says whether the test's threads met the busy CPU.
func (b busyCPU) how() string {
	switch {
	case b.used:
		return "the test's threads were pinned on it too"
	case b.free:
		return "the test's threads were left unpinned, to share the CPUs as the scheduler saw fit"
	}
	return "the test kept its threads off it"
}

// OtherLoad is, for each CPU of a run that other work kept busy, a clause
// saying what it was and what the test did about it.
func OtherLoad(r *result.Result) []string {
	var out []string
	for _, b := range busyCPUs(r) {
		out = append(out, b.sentence(b.pct)+"; "+b.how())
	}
	return out
}

// explainOtherLoad says, for a campaign's runs in the order they ran,
// which CPUs other work kept busy and during which runs: "CPU 0 was 96%
// busy with pid 4123 (stress-ng, 95% of a CPU), not this test, during
// runs 1-3; the test kept its threads off it." It also names the ends
// whose other load is unknown.
func explainOtherLoad(runs []*result.Result) []string {
	var groups []*busyCPU
	byKey := map[string]*busyCPU{}
	unknown := map[string][]int{}
	for i, r := range runs {
		for _, n := range r.End.Foreign.Notes {
			unknown[n] = append(unknown[n], i+1)
		}
		for _, b := range busyCPUs(r) {
			g := byKey[b.key]
			if g == nil {
				g = &b
				byKey[b.key] = g
				groups = append(groups, g)
			}
			g.runs = append(g.runs, i+1)
			g.pcts = append(g.pcts, b.pct)
			g.used = g.used || b.used
			g.free = g.free || b.free
		}
	}
	out := explainUnread(runs)
	for _, g := range groups {
		out = append(out, g.sentence(Median(g.pcts))+", "+runsPhrase(g.runs, len(runs))+"; "+g.how()+".")
	}
	for _, n := range slices.Sorted(maps.Keys(unknown)) {
		out = append(out, fmt.Sprintf("Other load on the CPUs unknown %s: %s.", runsPhrase(unknown[n], len(runs)), n))
	}
	return out
}

// explainUnread names, per end, the telemetry that could not be read and
// in which runs: "The server's softirq load unknown (/proc/softirqs could
// not be read: permission denied) during runs 1-3: unmeasured, not zero." What the
// source feeds is left out of the explanation rather than read as zeros.
func explainUnread(runs []*result.Result) []string {
	type key struct{ end, src, why string }
	var keys []key
	in := map[key][]int{}
	for i, r := range runs {
		for _, e := range []struct {
			name string
			m    map[string]string
		}{{"client", r.End.Unread.Client}, {"server", r.End.Unread.Server}} {
			for _, src := range slices.Sorted(maps.Keys(e.m)) {
				k := key{e.name, src, e.m[src]}
				if in[k] == nil {
					keys = append(keys, k)
				}
				in[k] = append(in[k], i+1)
			}
		}
	}
	var out []string
	for _, k := range keys {
		what := map[string]string{telemetry.SrcStat: "softirq load and CPU busy shares unknown",
			telemetry.SrcSoftirqs: "softirq load unknown", telemetry.SrcInterrupts: "NIC interrupts per CPU unknown"}[k.src]
		out = append(out, fmt.Sprintf("The %s's %s (/%s could not be read: %s) %s: unmeasured, not zero.", k.end, what, k.src, k.why, runsPhrase(in[k], len(runs))))
	}
	return out
}

// runsPhrase writes the runs an observation holds for: "during run 2",
// "during runs 1-3", "during runs 1, 4 and 6"; with one run in all, "during the run".
func runsPhrase(runs []int, total int) string {
	if total == 1 {
		return "during the run"
	}
	if len(runs) == 1 {
		return "during run " + strconv.Itoa(runs[0])
	}
	if runs[len(runs)-1]-runs[0] == len(runs)-1 {
		return fmt.Sprintf("during runs %d-%d", runs[0], runs[len(runs)-1])
	}
	parts := make([]string, len(runs))
	for i, r := range runs {
		parts[i] = strconv.Itoa(r)
	}
	return "during runs " + strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
