package engine

import (
	"slices"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/telemetry"
)

func looked(busy map[int]float64, held ...int) *telemetry.Looked {
	lk := &telemetry.Looked{Busy: busy, Held: map[int]string{}}
	for _, c := range held {
		lk.Held[c] = "pid 4123 (stress-ng), 99% of the CPU, pinned to it"
	}
	return lk
}

// TestFree: busy CPUs are left out; on a host where every candidate is
// busy, those near the least busy stay, except one held by a pinned
// process; no look keeps every candidate.
func TestFree(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cands []int
		lk    *telemetry.Looked
		want  []int
	}{
		{"spinner on 0", []int{0, 1}, looked(map[int]float64{0: 97, 1: 3}), []int{1}},
		{"order kept", []int{3, 1, 2, 0}, looked(map[int]float64{0: 2, 1: 99, 2: 10, 3: 24.9}), []int{3, 2, 0}},
		{"all busy: the least and those near it", []int{0, 1, 2}, looked(map[int]float64{0: 90, 1: 60, 2: 80}), []int{1, 2}},
		{"all busy, 0 held by a pinned process", []int{0, 1}, looked(map[int]float64{0: 100, 1: 96}, 0), []int{1}},
		{"every candidate held: busy shares decide", []int{0, 1}, looked(map[int]float64{0: 100, 1: 60}, 0, 1), []int{1}},
		{"unnamed CPU counts as free", []int{0, 5}, looked(map[int]float64{0: 97}), []int{5}},
		{"no look", []int{0, 1}, nil, []int{0, 1}},
	} {
		if got := Free(tc.cands, tc.lk); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Free(%v) = %v, want %v", tc.name, tc.cands, got, tc.want)
		}
	}
}

// TestSplitFree: both ends on one machine.
func TestSplitFree(t *testing.T) {
	busy0 := looked(map[int]float64{0: 97, 1: 2, 2: 1, 3: 0})
	for _, tc := range []struct {
		name           string
		client, server []int
		cands, allowed []int
		lk             *telemetry.Looked
		c, s           []int
		why            string
	}{
		{"idle: Split", nil, nil, []int{0, 1}, []int{0, 1}, looked(map[int]float64{0: 1, 1: 2}), []int{0}, []int{1}, ""},
		{"no look: Split", nil, nil, []int{0, 1}, []int{0, 1}, nil, []int{0}, []int{1}, ""},
		{"4 CPUs, 0 busy: split over the free", nil, nil, []int{0, 1, 2, 3}, []int{0, 1, 2, 3}, busy0, []int{1, 2}, []int{3}, "kept off CPU 0 (97% busy before the run)"},
		{"2 CPUs, 0 busy: both ends on 1", nil, nil, []int{0, 1}, []int{0, 1}, busy0, []int{1}, []int{1}, "; both ends share CPU 1, the one free"},
		{"2 CPUs, 0 held", nil, nil, []int{0, 1}, []int{0, 1}, looked(map[int]float64{0: 100, 1: 95}, 0), []int{1}, []int{1},
			"automatic placement kept off CPU 0 (held by pid 4123 (stress-ng), 99% of the CPU, pinned to it); both ends share CPU 1, the one free"},
		{"client placed", []int{1}, nil, []int{0, 1, 2, 3}, []int{0, 1, 2, 3}, busy0, []int{1}, []int{2, 3}, "CPU 0 (97%"},
		{"server placed", nil, []int{0}, []int{0, 1}, []int{0, 1}, busy0, []int{1}, []int{0}, "kept off CPU 0"},
		{"both placed", []int{0}, []int{0}, []int{0, 1}, []int{0, 1}, busy0, []int{0}, []int{0}, ""},
	} {
		c, s, why := SplitFree(tc.client, tc.server, tc.cands, tc.allowed, tc.lk)
		if !slices.Equal(c, tc.c) || !slices.Equal(s, tc.s) {
			t.Errorf("%s: got %v, %v; want %v, %v", tc.name, c, s, tc.c, tc.s)
		}
		if tc.why == "" && why != "" || !strings.Contains(why, tc.why) {
			t.Errorf("%s: why %q, want %q", tc.name, why, tc.why)
		}
	}
}

func TestBusyWhy(t *testing.T) {
	lk := looked(map[int]float64{0: 96.6, 1: 2, 2: 88})
	if got, want := BusyWhy([]int{0, 1, 2}, []int{1}, lk), "automatic placement kept off CPU 0 (97% busy before the run), CPU 2 (88% busy before the run)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := BusyWhy([]int{0, 1}, []int{0, 1}, lk); got != "" {
		t.Errorf("nothing left out: %q", got)
	}
	if got := LoadKeys(looked(map[int]float64{10: 1.5, 2: 0})); len(got) != 2 || got["10"] != 1.5 || got["2"] != 0 {
		t.Errorf("LoadKeys: %v", got)
	}
	if LoadKeys(nil) != nil {
		t.Error("LoadKeys(nil) is not nil: an unknown load would look like an idle host")
	}
}
