package telemetry

import (
	"context"
	"time"

	"github.com/linerate/linerate/internal/hostfs"
)

// LookTime is how long Look watches a host before a test: long enough for
// a spinning process to show as a busy CPU (20 ticks per CPU at USER_HZ
// 100), short enough to cost a run nothing that matters.
const LookTime = 200 * time.Millisecond

// Look reads every CPU's busy share over d, before a test starts: the
// load its threads would meet. The shares are percentages keyed by CPU
// number, rounded to 0.1; all of it is other work than the test's, which
// has not started. An unreadable /proc/stat is an error: no load is known.
func Look(ctx context.Context, fs *hostfs.FS, d time.Duration) (map[int]float64, error) {
	a, err := fs.CPUStat()
	if err != nil {
		return nil, err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-t.C:
	}
	b, err := fs.CPUStat()
	if err != nil {
		return nil, err
	}
	out := make(map[int]float64, len(b.PerCPU))
	for cpu, tb := range b.PerCPU {
		if ta, ok := a.PerCPU[cpu]; ok {
			out[cpu] = loadOf(ta, tb).Busy
		}
	}
	return out, nil
}
