package engine

import (
	"slices"
	"strings"
	"testing"
)

// TestFree: busy CPUs are left out; on a host where every candidate is
// busy, those near the least busy stay; no load keeps every candidate.
func TestFree(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cands []int
		load  map[int]float64
		want  []int
	}{
		{"spinner on 0", []int{0, 1}, map[int]float64{0: 97, 1: 3}, []int{1}},
		{"order kept", []int{3, 1, 2, 0}, map[int]float64{0: 2, 1: 99, 2: 10, 3: 24.9}, []int{3, 2, 0}},
		{"all busy: the least and those near it", []int{0, 1, 2}, map[int]float64{0: 90, 1: 60, 2: 80}, []int{1, 2}},
		{"unnamed CPU counts as free", []int{0, 5}, map[int]float64{0: 97}, []int{5}},
		{"no load", []int{0, 1}, nil, []int{0, 1}},
	} {
		if got := Free(tc.cands, tc.load); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Free(%v) = %v, want %v", tc.name, tc.cands, got, tc.want)
		}
	}
}

// TestSplitFree: both ends on one machine.
func TestSplitFree(t *testing.T) {
	busy0 := map[int]float64{0: 97, 1: 2, 2: 1, 3: 0}
	for _, tc := range []struct {
		name           string
		client, server []int
		cands, allowed []int
		load           map[int]float64
		c, s           []int
		unpinned       bool
		why            string
	}{
		{"idle: Split", nil, nil, []int{0, 1}, []int{0, 1}, map[int]float64{0: 1, 1: 2}, []int{0}, []int{1}, false, ""},
		{"no load: Split", nil, nil, []int{0, 1}, []int{0, 1}, nil, []int{0}, []int{1}, false, ""},
		{"4 CPUs, 0 busy: split over the free", nil, nil, []int{0, 1, 2, 3}, []int{0, 1, 2, 3}, busy0, []int{1, 2}, []int{3}, false, "CPU 0 at 97%"},
		{"2 CPUs, 0 busy: unpinned", nil, nil, []int{0, 1}, []int{0, 1}, busy0, nil, nil, true, "left unpinned"},
		{"client placed", []int{1}, nil, []int{0, 1, 2, 3}, []int{0, 1, 2, 3}, busy0, []int{1}, []int{2, 3}, false, "CPU 0 at 97%"},
		{"server placed", nil, []int{0}, []int{0, 1}, []int{0, 1}, busy0, []int{1}, []int{0}, false, "kept off a busy CPU"},
		{"both placed", []int{0}, []int{0}, []int{0, 1}, []int{0, 1}, busy0, []int{0}, []int{0}, false, ""},
	} {
		c, s, un, why := SplitFree(tc.client, tc.server, tc.cands, tc.allowed, tc.load)
		if !slices.Equal(c, tc.c) || !slices.Equal(s, tc.s) || un != tc.unpinned {
			t.Errorf("%s: got %v, %v, unpinned %v; want %v, %v, %v", tc.name, c, s, un, tc.c, tc.s, tc.unpinned)
		}
		if tc.why == "" && why != "" || !strings.Contains(why, tc.why) {
			t.Errorf("%s: why %q, want %q", tc.name, why, tc.why)
		}
	}
}

func TestBusyWhy(t *testing.T) {
	load := map[int]float64{0: 96.6, 1: 2, 2: 88}
	if got, want := BusyWhy([]int{0, 1, 2}, []int{1}, load), "automatic placement kept off busy CPUs (CPU 0 at 97%, CPU 2 at 88% busy before the run)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := BusyWhy([]int{0, 1}, []int{0, 1}, load); got != "" {
		t.Errorf("nothing left out: %q", got)
	}
	if got := LoadKeys(map[int]float64{10: 1.5, 2: 0}); len(got) != 2 || got["10"] != 1.5 || got["2"] != 0 {
		t.Errorf("LoadKeys: %v", got)
	}
	if LoadKeys(nil) != nil {
		t.Error("LoadKeys(nil) is not nil: an unknown load would look like an idle host")
	}
}
