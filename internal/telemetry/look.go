package telemetry

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/linerate/linerate/internal/hostfs"
)

// LookTime is how long Look watches a host before a test: long enough for
// a spinning process to show as a busy CPU (20 ticks per CPU at USER_HZ
// 100), short enough to cost a run nothing that matters.
const LookTime = 200 * time.Millisecond

// HeldBusy is the share (%) of a CPU a process pinned to it alone must use
// during the look for the CPU to count as held. A spinning process gets
// less than all of its CPU on a host busy everywhere (other work shares
// the CPU with it), hence well under 100.
const HeldBusy = 30.0

// Looked is what Look saw of a host's CPUs before a test.
type Looked struct {
	// Busy is each CPU's busy share (%), rounded to 0.1: all of it other
	// work than the test's, which has not started.
	Busy map[int]float64
	// Held are the CPUs that a process allowed on that CPU alone kept
	// HeldBusy% busy or more, with a description of it ("pid 4123
	// (stress-ng), 99% of the CPU, pinned to it"). The scheduler cannot
	// move such a process away, so a stream thread placed there shares the
	// CPU with it whatever else the host does; on a host busy everywhere
	// the busy shares alone cannot tell such a CPU from the others.
	Held map[int]string
}

// Look reads every CPU's busy share over d, and the processes pinned to
// one CPU that kept it busy (Looked.Held), before a test starts. An
// unreadable /proc/stat is an error: no load is known. Unreadable
// processes only leave Held empty.
func Look(ctx context.Context, fs *hostfs.FS, d time.Duration) (*Looked, error) {
	a, err := fs.CPUStat()
	if err != nil {
		return nil, err
	}
	tr := StartForeign(fs, os.Getpid())
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
	out := &Looked{Busy: make(map[int]float64, len(b.PerCPU)), Held: map[int]string{}}
	for cpu, tb := range b.PerCPU {
		if ta, ok := a.PerCPU[cpu]; ok {
			out.Busy[cpu] = loadOf(ta, tb).Busy
		}
	}
	if f, err := tr.Stop(); err == nil {
		for _, p := range f.Top {
			if _, seen := out.Held[p.CPU]; p.Pinned && p.CPUPct >= HeldBusy && !seen {
				out.Held[p.CPU] = fmt.Sprintf("pid %d (%s), %.0f%% of the CPU, pinned to it", p.PID, p.Name, p.CPUPct)
			}
		}
	}
	return out, nil
}
