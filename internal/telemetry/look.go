package telemetry

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/procfs"

	"github.com/linerate/linerate/internal/hostfs"
)

// LookTime is how long Look watches a host before a test: long enough for
// a spinning process to show as a busy CPU (20 ticks per CPU at USER_HZ
// 100), short enough to cost a run nothing that matters.
const LookTime = 200 * time.Millisecond

// HeldDemand is the share (%) of the look a process pinned to one CPU
// must have been runnable (running or waiting to run) for that CPU to
// count as held. Runnable time, not CPU time: on a host busy everywhere a
// spinning process gets a third of its CPU but wants all of it.
const HeldDemand = 50.0

// Looked is what Look saw of a host's CPUs before a test.
type Looked struct {
	// Busy is each CPU's busy share (%), rounded to 0.1: all of it other
	// work than the test's, which has not started.
	Busy map[int]float64
	// Held are the CPUs that a process allowed on that CPU alone wanted
	// (was runnable) HeldDemand% of the look or more, with a description
	// of it ("pid 4123 (stress-ng), runnable 100% of the look, pinned to
	// it"). The scheduler cannot move such a process away, so a stream
	// thread placed there shares the CPU with it whatever else the host
	// does; on a host busy everywhere the busy shares alone cannot tell
	// such a CPU from the others.
	Held map[int]string
}

// Look reads every CPU's busy share over d, and the processes pinned to
// one CPU that wanted it (Looked.Held), before a test starts. An
// unreadable /proc/stat is an error: no load is known. Processes that
// cannot be read only leave Held empty.
func Look(ctx context.Context, fs *hostfs.FS, d time.Duration) (*Looked, error) {
	a, err := fs.CPUStat()
	if err != nil {
		return nil, err
	}
	pfs, perr := procfs.NewFS(fs.Path("proc"))
	var before map[int]uint64
	if perr == nil {
		before = runnable(pfs)
	}
	t0 := time.Now()
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
	if perr == nil {
		held(pfs, before, runnable(pfs), float64(time.Since(t0).Nanoseconds()), out.Held)
	}
	return out, nil
}

// runnable reads how long each process (its main thread) has run and
// waited to run, in ns (/proc/PID/schedstat), this process left out.
func runnable(pfs procfs.FS) map[int]uint64 {
	procs, err := pfs.AllProcs()
	if err != nil {
		return nil
	}
	self := os.Getpid()
	out := make(map[int]uint64, len(procs))
	for _, p := range procs {
		if p.PID == self {
			continue
		}
		if s, err := p.Schedstat(); err == nil {
			out[p.PID] = s.RunningNanoseconds + s.WaitingNanoseconds
		}
	}
	return out
}

// held adds to out the CPUs of the user processes pinned to one CPU that
// were runnable HeldDemand% of window (ns) or more between the two
// readings.
func held(pfs procfs.FS, before, after map[int]uint64, window float64, out map[int]string) {
	if window <= 0 {
		return
	}
	for pid, n := range after {
		b, ok := before[pid]
		if !ok || n < b {
			continue
		}
		pct := 100 * float64(n-b) / window
		if pct < HeldDemand {
			continue
		}
		p, err := pfs.Proc(pid)
		if err != nil {
			continue
		}
		st, err1 := p.Stat()
		status, err2 := p.NewStatus()
		if err1 != nil || err2 != nil || st.Flags&pfKthread != 0 || len(status.CpusAllowedList) != 1 {
			continue // gone, a kernel thread serving its CPU, or free to move
		}
		cpu := int(status.CpusAllowedList[0])
		if _, seen := out[cpu]; !seen {
			out[cpu] = fmt.Sprintf("pid %d (%s), runnable %.0f%% of the look, pinned to it", pid, st.Comm, min(pct, 100))
		}
	}
}
