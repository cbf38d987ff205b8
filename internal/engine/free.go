package engine

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// FreeBusy is the busy share (%) below which a CPU counts as free for
// stream threads; on a host where no CPU is that idle, the CPUs within
// FreeBusy points of the least busy one count as free.
const FreeBusy = 25.0

// Free returns the CPUs of cands (in their order of preference) that are
// free by load, each CPU's busy share just before the test
// (telemetry.Look): a process spinning on a CPU makes it not free, so the
// streams keep off it. A CPU the load does not name counts as free; with
// no load at all, every candidate does.
func Free(cands []int, load map[int]float64) []int {
	if len(load) == 0 || len(cands) == 0 {
		return cands
	}
	least := 100.0
	for _, c := range cands {
		least = min(least, load[c])
	}
	limit := max(FreeBusy, least+FreeBusy)
	var out []int
	for _, c := range cands {
		if v, ok := load[c]; !ok || v < limit {
			out = append(out, c)
		}
	}
	return out
}

// SplitFree is Split over the free CPUs (Free) when both ends run on one
// machine. With two free CPUs or more, client and agent get disjoint
// halves of them. With one, unpinned is true and both ends are left to
// the scheduler, as iperf3 leaves its threads: both ends pinned on the
// one free CPU are capped at one core for the sender, the receiver and
// the softirq work of both, while unpinned threads also take turns on the
// busy CPUs; pinned on the busy CPU they share it with the process that
// spins (the case of a 2-CPU VM with a busy loop on CPU 0:
// docs/benchmarks.md). A side the user placed keeps its CPUs. Without
// load it is Split. why says, in one sentence, how the load changed the
// choice ("" when it did not).
func SplitFree(client, server []int, cands, allowed []int, load map[int]float64) (c, s []int, unpinned bool, why string) {
	if len(load) == 0 || client != nil && server != nil {
		c, s = Split(client, server, cands, allowed)
		return c, s, false, ""
	}
	pool := cands
	if len(pool) < 2 {
		pool = allowed
	}
	free := Free(pool, load)
	why = BusyWhy(pool, free, load)
	switch {
	case client != nil:
		return client, nonEmpty(subtractUnsorted(free, client), free), false, why
	case server != nil:
		return nonEmpty(subtractUnsorted(free, server), free), server, false, why
	case len(free) == 1 && len(pool) > 1:
		return nil, nil, true, why + "; with one free CPU for two ends the stream threads are left unpinned, to the scheduler"
	}
	c, s = Split(nil, nil, free, free)
	return c, s, false, why
}

// BusyWhy says which CPUs of pool Free left out and how busy they were
// ("CPU 0 was 97% busy before the run: automatic placement kept off it"),
// or "" when it left out none.
func BusyWhy(pool, free []int, load map[int]float64) string {
	var parts []string
	for _, c := range pool {
		if !slices.Contains(free, c) {
			parts = append(parts, fmt.Sprintf("CPU %d at %.0f%%", c, load[c]))
		}
	}
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return "automatic placement kept off a busy CPU (" + parts[0] + " busy before the run)"
	}
	return "automatic placement kept off busy CPUs (" + strings.Join(parts, ", ") + " busy before the run)"
}

// LoadKeys writes a per-CPU load with CPU numbers as keys, as the
// documents key per-CPU data.
func LoadKeys(load map[int]float64) map[string]float64 {
	if load == nil {
		return nil
	}
	out := make(map[string]float64, len(load))
	for _, c := range slices.Sorted(maps.Keys(load)) {
		out[strconv.Itoa(c)] = load[c]
	}
	return out
}
