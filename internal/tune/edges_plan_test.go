package tune

import (
	"slices"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/inventory"
)

// TestPlanMTUBounds pins --mtu's bounds at their edges: 68 and 65535 are
// accepted, 67 and 65536 refused.
func TestPlanMTUBounds(t *testing.T) {
	fs, inv := open(t, hostTree("ryzen-9900x-cx5-x4"))
	for _, tc := range []struct {
		mtu int
		ok  bool
	}{{minMTU, true}, {maxMTU, true}, {minMTU - 1, false}, {maxMTU + 1, false}} {
		_, err := NewPlan(Input{FS: fs, Inventory: inv}, Options{MTU: tc.mtu})
		if tc.ok && err != nil {
			t.Errorf("--mtu %d refused: %v", tc.mtu, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "outside 68-65535")) {
			t.Errorf("--mtu %d: %v, want outside 68-65535", tc.mtu, err)
		}
	}
}

// TestPlanOrder: a plan's changes come in apply order — sysctls, then
// governors, MTU, channels, rings, irqbalance, IRQs — numbered from 1,
// whatever order the planning steps found them in (seed 000's host with
// an irqbalance configuration plans the IRQ moves before the bans that
// keep irqbalance off them).
func TestPlanOrder(t *testing.T) {
	_, _, seed000 := seed000Tree(t)
	for name, p := range map[string]*Plan{
		"seed 000, irqbalance": seed000,
		"seed 003":             plan(t, hostTree("xeon-xl710-gen2-x4"), xl710(), Options{}),
	} {
		kinds := map[Kind]bool{}
		for i, c := range p.Changes {
			kinds[c.Kind] = true
			if c.Step != i+1 {
				t.Errorf("%s: change %d is step %d", name, i+1, c.Step)
			}
			if i > 0 && kindRank(c.Kind) < kindRank(p.Changes[i-1].Kind) {
				t.Errorf("%s: step %d (%s) after step %d (%s)", name, c.Step, c.Kind, i, p.Changes[i-1].Kind)
			}
		}
		if len(kinds) < 3 {
			t.Fatalf("%s: the plan has %d kinds of change, want 3 or more to check an order: %+v", name, len(kinds), p.Changes)
		}
	}
}

// TestSortedIRQs: IRQs by number, the caller's slice untouched.
func TestSortedIRQs(t *testing.T) {
	in := []inventory.IRQ{{IRQ: 99}, {IRQ: 7}, {IRQ: 42}, {IRQ: 8}}
	got := sortedIRQs(in)
	var nums []int
	for _, q := range got {
		nums = append(nums, q.IRQ)
	}
	if !slices.Equal(nums, []int{7, 8, 42, 99}) {
		t.Errorf("sorted %v, want 7 8 42 99", nums)
	}
	if in[0].IRQ != 99 {
		t.Errorf("the input was sorted in place: %v", in)
	}
}

// TestInterrupted: a file left empty counts as a killed write only for a
// step journaled or failed; any value, or a step in another phase, does
// not.
func TestInterrupted(t *testing.T) {
	for _, tc := range []struct {
		phase Phase
		cur   string
		want  bool
	}{
		{PhaseJournaled, "", true},
		{PhaseFailed, "", true},
		{PhaseJournaled, "4096", false},
		{PhaseFailed, "0", false},
		{PhaseApplied, "", false},
		{PhaseReverted, "", false},
		{PhaseSkipped, "", false},
	} {
		if got := interrupted(&JournalStep{Phase: tc.phase}, tc.cur); got != tc.want {
			t.Errorf("%s, file %q: interrupted %v, want %v", tc.phase, tc.cur, got, tc.want)
		}
	}
}
