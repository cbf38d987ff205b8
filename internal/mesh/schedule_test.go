package mesh

import (
	"testing"
	"time"
)

// TestTputSchedule: over one cycle, every directed pair is tested once,
// no slot has a host in two tests, and the cycle fits the period when it
// can.
func TestTputSchedule(t *testing.T) {
	for _, c := range []struct {
		n       int
		every   time.Duration
		perSlot int
		cycle   time.Duration
	}{
		{2, time.Hour, 1, time.Hour},
		{3, time.Minute, 1, time.Minute},
		{8, time.Hour, 1, time.Hour},
		{8, time.Minute, 5, 0},        // 56 tests in 12 slots: a leg's 4 at once, and longer
		{64, time.Hour, 7, time.Hour}, // 6 would cut each leg of 32 into 6 groups: 756 > 720 slots
		{63, time.Hour, 7, time.Hour},
		{64, 10 * time.Minute, 32, 0},
	} {
		s, err := NewTputSchedule(c.n, c.every)
		if err != nil {
			t.Fatal(err)
		}
		if c.perSlot != 0 && s.PerSlot != min(c.perSlot, c.n/2) {
			t.Errorf("%d hosts every %s: %d per slot, want %d", c.n, c.every, s.PerSlot, c.perSlot)
		}
		if c.cycle != 0 && s.Cycle() != c.cycle {
			t.Errorf("%d hosts every %s: cycle %s", c.n, c.every, s.Cycle())
		}
		if s.Cycle() < c.every {
			t.Errorf("%d hosts: cycle %s shorter than %s", c.n, s.Cycle(), c.every)
		}
		seen := map[TputTest]int{}
		base := Slot(time.Date(2026, 11, 26, 10, 0, 3, 0, time.UTC))
		slots := int64(s.Cycle() / SlotLen)
		for k := base; k < base+slots; k++ {
			busy := map[int]bool{}
			for _, tt := range s.Tests(k) {
				if busy[tt.From] || busy[tt.To] || tt.From == tt.To {
					t.Fatalf("%d hosts, slot %d: host in two tests: %v", c.n, k, s.Tests(k))
				}
				busy[tt.From], busy[tt.To] = true, true
				seen[tt]++
			}
		}
		if len(seen) != c.n*(c.n-1) {
			t.Errorf("%d hosts: %d directed pairs tested in a cycle, want %d", c.n, len(seen), c.n*(c.n-1))
		}
		for tt, k := range seen {
			if k != 1 {
				t.Errorf("%d hosts: %v tested %d times in a cycle", c.n, tt, k)
			}
		}
		// The next cycle repeats it.
		if got, want := s.Tests(base+slots+3), s.Tests(base+3); len(got) != len(want) || len(got) > 0 && got[0] != want[0] {
			t.Errorf("%d hosts: cycles differ", c.n)
		}
	}
	if s, err := NewTputSchedule(8, 0); err != nil || s.Tests(7) != nil {
		t.Errorf("every 0: %v %v", s, err)
	}
	if _, err := NewTputSchedule(8, time.Second); err == nil {
		t.Error("every 1 s accepted")
	}
}

// TestTestFitsSlot: a test, begun SlotMargin into its slot, ends before
// the next slot even with the clocks SlotMargin apart.
func TestTestFitsSlot(t *testing.T) {
	if 2*SlotMargin+MaxTestTime > SlotLen || TestTime+TestOmit > MaxTestTime {
		t.Errorf("slot %s, margin %s, test %s+%s within %s", SlotLen, SlotMargin, TestOmit, TestTime, MaxTestTime)
	}
}
