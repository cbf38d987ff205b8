package bench

import (
	"testing"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/engine"
)

// TestFirstETA: before any run is timed, 5 runs of -t 2 are estimated at
// 5 × 2.25 s, not the 20 s the walkthrough saw for a campaign that took
// about 10; once runs are timed, their mean is used.
func TestFirstETA(t *testing.T) {
	c := &Campaign{Spec: Spec{Run: Params{Test: agent.Test{Params: engine.Params{Duration: 2 * time.Second}}}, Repeat: 5}}
	if got := c.eta(0, 5, time.Now()); got != 11250*time.Millisecond {
		t.Errorf("first ETA %v, want 11.25s", got)
	}
	if got := c.eta(2, 5, time.Now().Add(-6*time.Second)); got < 9*time.Second || got > 9100*time.Millisecond {
		t.Errorf("after 2 runs in 6 s: ETA %v, want 9s", got)
	}
}
