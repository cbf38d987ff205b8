package mesh

import (
	"fmt"
	"time"

	"github.com/linerate/linerate/internal/fleet"
)

// The throughput tests' schedule. Every agent computes it alike from the
// mesh's host list, the period and the clock, and runs the tests of the
// current slot that it sends; no controller hands out turns.
//
// Time is cut into slots of SlotLen from the Unix epoch. A cycle tests
// every directed pair once: the legs of the circle method (a fleet run's
// schedule, internal/fleet: n−1 rounds of disjoint pairs, each pair one
// way then the other), each leg cut into groups of at most PerSlot tests.
// The groups go into the cycle's slots spread evenly, at most one group
// per slot. A group is part of one leg, whose tests share no host, so no
// host is ever in two tests of one slot; a test lasts at most
// MaxTestTime, well inside its slot, so tests of two slots never overlap
// either (with the hosts' clocks within SlotMargin of each other, as NTP
// keeps them). The agent's own one-test-at-a-time rule stands behind the
// schedule: a test that finds its peer busy (a user's bench) is skipped.
//
// PerSlot is the fewest tests per slot that fit the cycle into the
// period: one at a time for the small meshes (8 hosts, 56 tests, in an
// hour of 720 slots), more for large ones (64 hosts, 4032 tests: 7 per
// slot), at most a leg's n/2. A cycle that does not fit even so takes
// longer than the period (Cycle says how long).

// Slot timing of the throughput tests.
const (
	SlotLen = 5 * time.Second
	// SlotMargin is how long after its slot's start a test begins: the
	// hosts' clocks may be this far apart.
	SlotMargin = time.Second
	// MaxTestTime bounds one test, warm-up included, and its setup.
	MaxTestTime = 3 * time.Second
	// TestTime and TestOmit are one test's measured time and warm-up.
	TestTime = time.Second
	TestOmit = 250 * time.Millisecond
)

// TputTest is one throughput test: host From sends to host To (indexes
// in the host list).
type TputTest struct{ From, To int }

// TputSchedule is the throughput tests' schedule of a mesh.
type TputSchedule struct {
	groups  [][]TputTest
	slots   int64 // slots in a cycle
	PerSlot int
}

// NewTputSchedule schedules a mesh of n hosts whose pairs are each tested
// once every period (0: never).
func NewTputSchedule(n int, every time.Duration) (TputSchedule, error) {
	if every <= 0 || n < 2 {
		return TputSchedule{}, nil
	}
	if every < SlotLen {
		return TputSchedule{}, fmt.Errorf("throughput tests every %s: at least %s", every, SlotLen)
	}
	s, err := fleet.NewSchedule(n, fleet.Pattern{Kind: fleet.PatternPairs}, nil)
	if err != nil {
		return TputSchedule{}, err
	}
	legs := s.Legs()
	slots := int64(every / SlotLen)
	tests := int64(n * (n - 1))
	per := int(min(max((tests+slots-1)/slots, 1), int64(n/2)))
	var groups [][]TputTest
	for {
		groups = groups[:0]
		for _, leg := range legs {
			for i := 0; i < len(leg); i += per {
				var g []TputTest
				for _, t := range leg[i:min(i+per, len(leg))] {
					g = append(g, TputTest{From: t.From, To: t.To})
				}
				groups = append(groups, g)
			}
		}
		// Cutting legs leaves part-groups: take one more per slot while
		// the groups do not fit and a leg has room.
		if int64(len(groups)) <= slots || per >= n/2 {
			break
		}
		per++
	}
	return TputSchedule{groups: groups, slots: max(slots, int64(len(groups))), PerSlot: per}, nil
}

// Cycle is how long the schedule takes to test every pair once.
func (s TputSchedule) Cycle() time.Duration { return time.Duration(s.slots) * SlotLen }

// Slot is the slot that holds t.
func Slot(t time.Time) int64 { return t.UnixNano() / int64(SlotLen) }

// SlotStart is when slot k begins.
func SlotStart(k int64) time.Time { return time.Unix(0, k*int64(SlotLen)) }

// Tests returns the tests of slot k (none in most slots of a small mesh).
func (s TputSchedule) Tests(k int64) []TputTest {
	g := len(s.groups)
	if g == 0 {
		return nil
	}
	pos := k % s.slots
	if pos < 0 {
		pos += s.slots
	}
	// Group j sits at slot floor(j × slots / g): find the j whose slot is
	// pos, if any.
	j := (pos*int64(g) + s.slots - 1) / s.slots
	if j >= int64(g) || j*s.slots/int64(g) != pos {
		return nil
	}
	return s.groups[j]
}
