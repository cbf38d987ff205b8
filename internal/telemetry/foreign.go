package telemetry

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"

	"github.com/linerate/linerate/internal/hostfs"
)

// Foreign is the CPU time one end of a test spent on other work than the
// test over its measured window: per CPU, and the processes that used
// most of it. It tells a slow run on a busy host from a slow path.
type Foreign struct {
	// PID is the measuring process (the test's own end).
	PID int `json:"pid"`
	// Seconds is the window, by the CPU clock of /proc/stat.
	Seconds float64 `json:"seconds"`
	// Own is the share (%) of each CPU the measuring process's threads
	// used (their utime + stime from /proc/PID/task/*/stat, on the CPU
	// each last ran on: exact for the pinned stream threads).
	Own map[string]float64 `json:"own"`
	// CPU is the share (%) of each CPU busy with other work than the
	// test's: its user, system and steal time from /proc/stat minus Own.
	// Interrupt and softirq time are left out: network work, of the
	// test's own traffic mostly, which the per-interval samples show.
	// Only CPUs at 1% or more are listed.
	CPU map[string]float64 `json:"cpu"`
	// Top are the other processes that used the most CPU time in the
	// window (at least 1% of a CPU), busiest first, at most MaxTop.
	Top []Proc `json:"top"`
	// Wait is the share (%) of the window the measuring process's
	// threads pinned to one CPU (the stream threads) spent ready to run
	// but waiting for it: their run delay, /proc/PID/task/*/schedstat.
	// With Own it tells a thread held back by other work (ready to run
	// most of the window, waiting much of it) from one that needed little:
	// a busy loop fills every cycle a shaped test leaves, and that says
	// nothing of the test. Absent where the kernel keeps no schedstat.
	Wait map[string]float64 `json:"wait,omitempty"`
}

// Proc is one other process's CPU use over a window.
type Proc struct {
	PID  int    `json:"pid"`
	Name string `json:"name"` // its comm
	// CPUPct is the share (%) of one CPU it used: 100 is one CPU fully.
	CPUPct float64 `json:"cpu_pct"`
	// CPU is the CPU it last ran on (/proc/PID/stat field 39): where a
	// pinned process runs, where an unpinned one was last seen.
	CPU int `json:"cpu"`
	// Pinned says the process may run on that one CPU only (its
	// Cpus_allowed_list in /proc/PID/status): the scheduler cannot move
	// it off.
	Pinned bool `json:"pinned,omitempty"`

	kthread bool
}

// pfKthread is PF_KTHREAD in /proc/PID/stat's flags: a kernel thread.
const pfKthread = 0x00200000

// MaxTop bounds Foreign.Top.
const MaxTop = 5

// ForeignTracker measures a Foreign over a window: StartForeign at its
// start, Stop at its end. It reads /proc/stat, the measuring process's
// threads and every process's stat at both ends of the window; the
// per-process scan costs about a millisecond per 100 processes.
type ForeignTracker struct {
	fs    *hostfs.FS
	pfs   procfs.FS
	pid   int
	stat  *hostfs.CPUStat
	own   map[int]uint64 // thread → utime+stime, ticks
	wait  map[int]uint64 // thread → run delay, ns
	procs map[int]uint64 // process → utime+stime, ticks
	err   error
}

// StartForeign starts a window on fs for the process pid (the test's own
// end). Reads that fail make Stop return nil and the error.
func StartForeign(fs *hostfs.FS, pid int) *ForeignTracker {
	t := &ForeignTracker{fs: fs, pid: pid}
	t.pfs, t.err = procfs.NewFS(fs.Path("proc"))
	if t.err != nil {
		return t
	}
	if t.stat, t.err = fs.CPUStat(); t.err != nil {
		return t
	}
	t.own, t.wait, _ = t.threads()
	t.procs, _ = t.processes(nil)
	return t
}

// Stop ends the window and returns what it measured; nil and the reason
// when /proc/stat could not be read.
func (t *ForeignTracker) Stop() (*Foreign, error) {
	if t.err != nil {
		return nil, fmt.Errorf("other load unknown: %w", t.err)
	}
	st, err := t.fs.CPUStat()
	if err != nil {
		return nil, fmt.Errorf("other load unknown: %w", err)
	}
	out := &Foreign{PID: t.pid, Own: map[string]float64{}, CPU: map[string]float64{}, Top: []Proc{}}
	ticks := map[int]uint64{} // per CPU, the window in ticks
	var all uint64
	for cpu, b := range st.PerCPU {
		if a, ok := t.stat.PerCPU[cpu]; ok {
			ticks[cpu] = delta(a.Total(), b.Total())
			all += ticks[cpu]
		}
	}
	if len(ticks) > 0 {
		out.Seconds = round3(float64(all) / float64(len(ticks)) / userHZ)
	}
	own, waited := t.ownByCPU()
	if out.Seconds > 0 && len(waited) > 0 {
		out.Wait = map[string]float64{}
		for cpu, ns := range waited {
			if w := 100 * float64(ns) / 1e9 / out.Seconds; w >= 1 {
				out.Wait[strconv.Itoa(cpu)] = round1(math.Min(100, w))
			}
		}
	}
	for cpu, n := range ticks {
		if n == 0 {
			continue
		}
		a, b := t.stat.PerCPU[cpu], st.PerCPU[cpu]
		k := strconv.Itoa(cpu)
		if o := own[cpu]; o > 0 {
			out.Own[k] = round1(math.Min(100, 100*float64(o)/float64(n)))
		}
		work := delta(a.Busy(), b.Busy()) - min(delta(a.Busy(), b.Busy()), delta(a.IRQ+a.SoftIRQ, b.IRQ+b.SoftIRQ))
		f := 100 * (float64(work) - float64(own[cpu])) / float64(n)
		if f >= 1 {
			out.CPU[k] = round1(math.Min(100, f))
		}
	}
	out.Top = t.top(float64(all) / float64(max(len(ticks), 1)))
	return out, nil
}

// userHZ is the unit of /proc's tick counts (USER_HZ, 100 on Linux).
const userHZ = 100

// ownByCPU is the measuring process's thread time (ticks) since the
// start, per CPU each thread last ran on, and the run delay (ns) of its
// threads pinned to one CPU, per that CPU. A thread that started in the
// window counts whole; waited is nil where the kernel keeps no schedstat.
func (t *ForeignTracker) ownByCPU() (own, waited map[int]uint64) {
	own = map[int]uint64{}
	threads, err := t.pfs.AllThreads(t.pid)
	if err != nil {
		return own, nil
	}
	for _, th := range threads {
		s, err := th.Stat()
		if err != nil {
			continue // the thread ended
		}
		n := uint64(s.UTime + s.STime)
		own[int(s.Processor)] += n - min(n, t.own[th.PID])
		if t.wait == nil {
			continue
		}
		if waited == nil {
			waited = map[int]uint64{}
		}
		ss, err := th.Schedstat()
		if err != nil {
			continue
		}
		st, err := th.NewStatus()
		if err != nil || len(st.CpusAllowedList) != 1 {
			continue // not a stream thread: the runtime's threads go where they are let
		}
		w := ss.WaitingNanoseconds
		waited[int(st.CpusAllowedList[0])] += w - min(w, t.wait[th.PID])
	}
	return own, waited
}

// threads reads the measuring process's threads: CPU time (ticks) and
// run delay (ns; nil without schedstat).
func (t *ForeignTracker) threads() (map[int]uint64, map[int]uint64, error) {
	threads, err := t.pfs.AllThreads(t.pid)
	if err != nil {
		return nil, nil, err
	}
	out := make(map[int]uint64, len(threads))
	var wait map[int]uint64
	for _, th := range threads {
		if s, err := th.Stat(); err == nil {
			out[th.PID] = uint64(s.UTime + s.STime)
		}
		if ss, err := th.Schedstat(); err == nil {
			if wait == nil {
				wait = map[int]uint64{}
			}
			wait[th.PID] = ss.WaitingNanoseconds
		}
	}
	return out, wait, nil
}

// processes reads every process's CPU time; when seen is not nil, the
// stats read are kept there too.
func (t *ForeignTracker) processes(seen map[int]procfs.ProcStat) (map[int]uint64, error) {
	procs, err := t.pfs.AllProcs()
	if err != nil {
		return nil, err
	}
	out := make(map[int]uint64, len(procs))
	for _, p := range procs {
		if p.PID == t.pid {
			continue
		}
		s, err := p.Stat()
		if err != nil {
			continue // ended, or not ours to read
		}
		out[p.PID] = uint64(s.UTime + s.STime)
		if seen != nil {
			seen[p.PID] = s
		}
	}
	return out, nil
}

// top returns the other processes that used the most CPU time since the
// start; window is its length in ticks of one CPU.
func (t *ForeignTracker) top(window float64) []Proc {
	stats := map[int]procfs.ProcStat{}
	now, err := t.processes(stats)
	if err != nil || window <= 0 {
		return []Proc{}
	}
	var out []Proc
	for pid, n := range now {
		s := stats[pid]
		if strings.HasPrefix(s.Comm, "ksoftirqd/") {
			continue // softirq work: the per-interval samples show it
		}
		used := n - min(n, t.procs[pid]) // a process that started in the window counts whole
		pct := round1(100 * float64(used) / window)
		if pct >= 1 {
			out = append(out, Proc{PID: pid, Name: s.Comm, CPUPct: pct, CPU: int(s.Processor), kthread: s.Flags&pfKthread != 0})
		}
	}
	slices.SortFunc(out, func(a, b Proc) int {
		if a.CPUPct != b.CPUPct {
			return cmpDesc(a.CPUPct, b.CPUPct)
		}
		return a.PID - b.PID
	})
	if len(out) > MaxTop {
		out = out[:MaxTop]
	}
	for i := range out {
		// A kernel thread bound to its CPU (kworker/0:1) serves that CPU
		// and goes where the work is: it does not hold the CPU as a pinned
		// program does.
		out[i].Pinned = !out[i].kthread && t.pinned(out[i].PID, out[i].CPU)
	}
	if out == nil {
		out = []Proc{}
	}
	return out
}

// pinned says whether process pid may run on cpu only.
func (t *ForeignTracker) pinned(pid, cpu int) bool {
	p, err := t.pfs.Proc(pid)
	if err != nil {
		return false
	}
	st, err := p.NewStatus()
	if err != nil {
		return false
	}
	return len(st.CpusAllowedList) == 1 && st.CpusAllowedList[0] == uint64(cpu)
}

func cmpDesc(a, b float64) int {
	if a > b {
		return -1
	}
	return 1
}

// Without removes the other end of the same test, when both ends run on
// one machine: its threads' time from CPU (Own of peer) and its process
// from Top. Both must be of the same host.
func (f *Foreign) Without(peer *Foreign) {
	if f == nil || peer == nil {
		return
	}
	for k, v := range peer.Own {
		if c, ok := f.CPU[k]; ok {
			if c -= v; c >= 1 {
				f.CPU[k] = round1(c)
			} else {
				delete(f.CPU, k)
			}
		}
	}
	f.Top = slices.DeleteFunc(f.Top, func(p Proc) bool { return p.PID == peer.PID })
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
