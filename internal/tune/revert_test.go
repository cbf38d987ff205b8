package tune

import (
	"testing"
)

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
