package telemetry

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/hostfs"
)

// procTree is a /proc tree for tests, rewritten between readings.
type procTree struct {
	t    *testing.T
	root string
}

func newProcTree(t *testing.T) *procTree { return &procTree{t: t, root: t.TempDir()} }

func (p *procTree) write(name, data string) {
	path := filepath.Join(p.root, "proc", name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		p.t.Error(err)
		return
	}
	// Written aside and renamed: a reader never sees half a file.
	if err := os.WriteFile(path+".new", []byte(data), 0o644); err != nil {
		p.t.Error(err)
		return
	}
	if err := os.Rename(path+".new", path); err != nil {
		p.t.Error(err)
	}
}

// proc writes /proc/PID/stat (and, for a thread of the measuring
// process, /proc/PID/task/TID/stat) in the kernel's layout: utime and
// stime are fields 14 and 15, the CPU it last ran on field 39.
func (p *procTree) proc(rel, comm string, pid, utime, stime, cpu int) {
	f := make([]string, 50) // fields 3 to 52
	for i := range f {
		f[i] = "0"
	}
	f[0] = "R"
	f[14-3], f[15-3], f[39-3] = fmt.Sprint(utime), fmt.Sprint(stime), fmt.Sprint(cpu)
	p.write(rel, fmt.Sprintf("%d (%s) %s\n", pid, comm, strings.Join(f, " ")))
}

func (p *procTree) fs() *hostfs.FS {
	fs, err := hostfs.New(p.root)
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { fs.Close() })
	return fs
}

// TestForeign: over a window of 100 ticks per CPU, the test's process
// (pid 100, a stream thread pinned to CPU 1) used 60 ticks of CPU 1; a
// spinning process (pid 200, "spin") used 95 ticks of CPU 0; ksoftirqd
// worked on CPU 1; a process that slept used nothing. The report puts the
// spinner's time on CPU 0 and names it, keeps the test's own time and the
// softirq work out of the other load, and leaves out the sleeper.
func TestForeign(t *testing.T) {
	p := newProcTree(t)
	p.write("stat", "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 1000 0 0 1000 0 0 0 0 0 0\ncpu1 1000 0 0 1000 0 0 0 0 0 0\n")
	p.proc("100/stat", "linerate", 100, 10, 0, 1)
	p.proc("100/task/100/stat", "linerate", 100, 5, 0, 0)
	p.proc("100/task/101/stat", "lrc-send-0", 101, 5, 0, 1)
	// schedstat: ns on the CPU, ns waiting on a run queue, time slices.
	p.write("100/task/100/schedstat", "50000000 1000000 40\n")
	p.write("100/task/101/schedstat", "50000000 2000000 90\n")
	p.write("100/task/101/status", "Name:\tlrc-send-0\nCpus_allowed:\t2\nCpus_allowed_list:\t1\n")
	p.write("100/task/100/status", "Name:\tlinerate\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n")
	p.proc("200/stat", "spin", 200, 500, 0, 0)
	p.write("200/status", "Name:\tspin\nCpus_allowed:\t1\nCpus_allowed_list:\t0\n")
	p.proc("300/stat", "ksoftirqd/1", 300, 0, 50, 1)
	p.proc("400/stat", "sleeper", 400, 7, 3, 1)
	fs := p.fs()
	tr := StartForeign(fs, 100)
	// CPU 0: 96 user (95 spin + 1 of ours), 4 idle. CPU 1: 60 user, 30
	// softirq (ksoftirqd and the stack), 10 idle.
	p.write("stat", "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 1096 0 0 1004 0 0 0 0 0 0\ncpu1 1060 0 0 1010 0 0 30 0 0 0\n")
	p.proc("100/task/100/stat", "linerate", 100, 6, 0, 0)
	p.proc("100/task/101/stat", "lrc-send-0", 101, 65, 0, 1)
	// The stream thread waited 0.4 s of the second for CPU 1; the main
	// thread 0.3 s, but it is not pinned: the runtime's threads wait
	// wherever they are let run, and say nothing of a CPU.
	p.write("100/task/100/schedstat", "60000000 301000000 45\n")
	p.write("100/task/101/schedstat", "650000000 402000000 900\n")
	p.proc("200/stat", "spin", 200, 595, 0, 0)
	p.proc("300/stat", "ksoftirqd/1", 300, 0, 80, 1)
	f, err := tr.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if f.PID != 100 || f.Seconds != 1 {
		t.Errorf("pid %d, %g s; want 100, 1 s", f.PID, f.Seconds)
	}
	if f.Own["1"] != 60 || f.Own["0"] != 1 {
		t.Errorf("own %v, want CPU 1 at 60%%, CPU 0 at 1%%", f.Own)
	}
	if len(f.CPU) != 1 || f.CPU["0"] != 95 {
		t.Errorf("other load %v, want CPU 0 at 95%% only", f.CPU)
	}
	if len(f.Wait) != 1 || f.Wait["1"] != 40 {
		t.Errorf("run delay %v, want CPU 1 at 40%% only", f.Wait)
	}
	if len(f.Top) != 1 || f.Top[0] != (Proc{PID: 200, Name: "spin", CPUPct: 95, CPU: 0, Pinned: true}) {
		t.Errorf("top %+v, want pid 200 (spin) at 95%% on CPU 0, pinned", f.Top)
	}

	// Both ends on one host: the peer's threads are taken out of the
	// other load, and its process out of the top.
	peer := &Foreign{PID: 200, Own: map[string]float64{"0": 90}}
	f.Without(peer)
	if len(f.CPU) != 1 || f.CPU["0"] != 5 || len(f.Top) != 0 {
		t.Errorf("without the peer: %v, top %+v", f.CPU, f.Top)
	}
}

// TestForeignUnreadable: without /proc/stat the other load is unknown,
// an error naming the file, never a report of zeros.
func TestForeignUnreadable(t *testing.T) {
	p := newProcTree(t)
	p.proc("100/stat", "linerate", 100, 0, 0, 0)
	f, err := StartForeign(p.fs(), 100).Stop()
	if f != nil || err == nil || !strings.Contains(err.Error(), "other load unknown") || !strings.Contains(err.Error(), "stat") {
		t.Errorf("got %+v, %v; want nil and an error naming /proc/stat", f, err)
	}
	// Without schedstat (a kernel without CONFIG_SCHED_INFO) the run
	// delay is absent, not zero.
	p.write("stat", "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 1 0 0 1 0 0 0 0 0 0\n")
	p.proc("100/task/100/stat", "linerate", 100, 0, 0, 0)
	tr0 := StartForeign(p.fs(), 100)
	p.write("stat", "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 101 0 0 1 0 0 0 0 0 0\n")
	if f, err := tr0.Stop(); err != nil || f.Wait != nil {
		t.Errorf("no schedstat: %+v, %v; want no run delay", f, err)
	}
	// /proc/stat gone at the end of the window.
	p.write("stat", "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 1 0 0 1 0 0 0 0 0 0\n")
	fs := p.fs()
	tr := StartForeign(fs, 100)
	os.Remove(filepath.Join(p.root, "proc", "stat"))
	if f, err := tr.Stop(); f != nil || err == nil {
		t.Errorf("got %+v, %v; want an error", f, err)
	}
}

// TestLook: the busy share of each CPU over the look, and an error (no
// load known) when /proc/stat cannot be read.
func TestLook(t *testing.T) {
	p := newProcTree(t)
	p.write("stat", "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 100 0 0 100 0 0 0 0 0 0\ncpu1 100 0 0 100 0 0 0 0 0 0\n")
	fs := p.fs()
	go func() {
		time.Sleep(20 * time.Millisecond) // within the look: the second reading sees it
		p.write("stat", "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 119 0 0 101 0 0 0 0 0 0\ncpu1 100 0 0 118 0 0 2 0 0 0\n")
	}()
	lk, err := Look(context.Background(), fs, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if lk.Busy[0] != 95 || lk.Busy[1] != 10 || len(lk.Busy) != 2 || len(lk.Held) != 0 {
		t.Errorf("look %+v, want CPU 0 at 95%%, CPU 1 at 10%%, none held", lk)
	}
	os.Remove(filepath.Join(p.root, "proc", "stat"))
	if lk, err := Look(context.Background(), fs, time.Millisecond); lk != nil || err == nil {
		t.Errorf("without /proc/stat: %v, %v; want an error", lk, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p.write("stat", "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 1 0 0 1 0 0 0 0 0 0\n")
	if _, err := Look(ctx, fs, time.Hour); err == nil {
		t.Error("a cancelled look returned no error")
	}
}

// TestLookHeld: a process allowed on CPU 0 alone that was runnable all
// through the look (running a third of it, waiting the rest) holds CPU 0;
// one as busy that may run anywhere holds nothing, and neither does a
// pinned one that slept.
func TestLookHeld(t *testing.T) {
	p := newProcTree(t)
	p.write("stat", "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 100 0 0 100 0 0 0 0 0 0\ncpu1 100 0 0 100 0 0 0 0 0 0\n")
	for _, pr := range []struct {
		pid        int
		comm, cpus string
	}{{4123, "stress-ng", "0"}, {77, "make", "0-1"}, {88, "sleepy", "1"}} {
		p.proc(fmt.Sprintf("%d/stat", pr.pid), pr.comm, pr.pid, 100, 0, 0)
		p.write(fmt.Sprintf("%d/status", pr.pid), "Name:\t"+pr.comm+"\nCpus_allowed_list:\t"+pr.cpus+"\n")
		p.write(fmt.Sprintf("%d/schedstat", pr.pid), "1000 1000 10\n")
	}
	fs := p.fs()
	go func() {
		time.Sleep(20 * time.Millisecond)
		p.write("stat", "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 120 0 0 100 0 0 0 0 0 0\ncpu1 120 0 0 100 0 0 0 0 0 0\n")
		p.write("4123/schedstat", "70001000 140001000 30\n") // 70 ms running, 140 waiting
		p.write("77/schedstat", "210001000 1000 30\n")
		p.write("88/schedstat", "1001000 1000 11\n")
	}()
	lk, err := Look(context.Background(), fs, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(lk.Held) != 1 || !strings.HasPrefix(lk.Held[0], "pid 4123 (stress-ng), runnable ") || !strings.HasSuffix(lk.Held[0], "% of the look, pinned to it") {
		t.Errorf("held %v, want CPU 0 by pid 4123 (stress-ng) only", lk.Held)
	}
}

// TestSamplerUnread: a /proc tree where nothing can be read gives samples
// with no CPUs (not CPUs at zero) and names every source in Unread.
func TestSamplerUnread(t *testing.T) {
	p := newProcTree(t)
	p.write("version", "Linux\n")
	h := NewSampler(p.fs(), []int{99})
	s := h.Sample()
	if len(s.PerCPU) != 0 {
		t.Errorf("per-CPU samples from nothing: %v", s.PerCPU)
	}
	u := h.Unread()
	for _, src := range []string{SrcStat, SrcSoftirqs, SrcInterrupts} {
		if u[src] == "" {
			t.Errorf("unread %v lacks %s", u, src)
		}
	}
	if len(h.Notes()) != 3 {
		t.Errorf("notes %v, want one per source", h.Notes())
	}
}

// TestTickerUnread: what the external drivers record for the run.
func TestTickerUnread(t *testing.T) {
	p := newProcTree(t)
	p.write("version", "Linux\n")
	tk := Start(p.fs(), nil, 10*time.Millisecond)
	time.Sleep(25 * time.Millisecond)
	tk.Stop()
	if u := tk.Unread(); u[SrcStat] == "" || u[SrcSoftirqs] == "" {
		t.Errorf("unread %v, want /proc/stat and /proc/softirqs", u)
	}
	var none *Ticker
	if none.Unread() != nil {
		t.Error("a nil Ticker (no telemetry asked) reports unread sources")
	}
}
