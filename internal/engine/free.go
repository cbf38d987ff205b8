package engine

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/telemetry"
)

// FreeBusy is the busy share (%) below which a CPU counts as free for
// stream threads; on a host where no CPU is that idle, the CPUs within
// FreeBusy points of the least busy one count as free.
const FreeBusy = 25.0

// Free returns the CPUs of cands (in their order of preference) that are
// free by lk, the look at the host just before the test (telemetry.Look).
// A CPU held by a process pinned to it is never free while another
// candidate is not held: the scheduler cannot move that process away, and
// a thread beside it gets half the CPU at best. Of the others, a busy
// share under FreeBusy is free (within FreeBusy points of the least busy
// one where none is that idle). A CPU the look does not name counts as
// free; without a look every candidate does.
func Free(cands []int, lk *telemetry.Looked) []int {
	if lk == nil || len(cands) == 0 {
		return cands
	}
	pool := slices.DeleteFunc(slices.Clone(cands), func(c int) bool { _, held := lk.Held[c]; return held })
	if len(pool) == 0 {
		pool = cands
	}
	least := 100.0
	for _, c := range pool {
		least = min(least, lk.Busy[c])
	}
	limit := max(FreeBusy, least+FreeBusy)
	var out []int
	for _, c := range pool {
		if v, ok := lk.Busy[c]; !ok || v < limit {
			out = append(out, c)
		}
	}
	return out
}

// SplitFree is Split over the free CPUs (Free) when both ends run on one
// machine. With two free CPUs or more, client and agent get disjoint
// halves of them; with one, both ends get it. Sharing a free core costs
// less than a core shared with a process that spins, and less than
// leaving the threads to the scheduler: on a 2-CPU VM with a busy loop
// pinned to CPU 0, both ends on CPU 1 moved 7.0 Gbit/s (median of 5),
// client on CPU 0 and agent on CPU 1 4.4, unpinned iperf3 3.8, at the
// same moments (docs/benchmarks.md). A side the user placed keeps its
// CPUs. Without a look it is Split. why says in one sentence how the look
// changed the choice ("" when it did not).
func SplitFree(client, server []int, cands, allowed []int, lk *telemetry.Looked) (c, s []int, why string) {
	if lk == nil || client != nil && server != nil {
		c, s = Split(client, server, cands, allowed)
		return c, s, ""
	}
	pool := cands
	if len(pool) < 2 {
		pool = allowed
	}
	free := Free(pool, lk)
	why = BusyWhy(pool, free, lk)
	switch {
	case client != nil:
		return client, nonEmpty(subtractUnsorted(free, client), free), why
	case server != nil:
		return nonEmpty(subtractUnsorted(free, server), free), server, why
	case len(free) == 1:
		if why != "" {
			why += "; both ends share CPU " + strconv.Itoa(free[0]) + ", the one free"
		}
		return slices.Clone(free), slices.Clone(free), why
	}
	c, s = Split(nil, nil, free, free)
	return c, s, why
}

// BusyWhy says which CPUs of pool Free left out and why ("automatic
// placement kept off CPU 0 (held by pid 4123 (stress-ng), 99% of the CPU,
// pinned to it)"), or "" when it left out none.
func BusyWhy(pool, free []int, lk *telemetry.Looked) string {
	if lk == nil {
		return ""
	}
	var parts []string
	for _, c := range pool {
		if slices.Contains(free, c) {
			continue
		}
		if h, ok := lk.Held[c]; ok {
			parts = append(parts, fmt.Sprintf("CPU %d (held by %s)", c, h))
		} else {
			parts = append(parts, fmt.Sprintf("CPU %d (%.0f%% busy before the run)", c, lk.Busy[c]))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "automatic placement kept off " + strings.Join(parts, ", ")
}

// LoadKeys writes the busy shares of a look with CPU numbers as keys, as
// the documents key per-CPU data; nil without a look.
func LoadKeys(lk *telemetry.Looked) map[string]float64 {
	if lk == nil {
		return nil
	}
	out := make(map[string]float64, len(lk.Busy))
	for _, c := range slices.Sorted(maps.Keys(lk.Busy)) {
		out[strconv.Itoa(c)] = lk.Busy[c]
	}
	return out
}
