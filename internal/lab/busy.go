package lab

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/cpulist"
)

// The busy-receiver scenario's loop: a shell loop pinned to one CPU in
// host b, so that a receiver pinned there (bench -A 0,N) shares its CPU
// with other work, as on a host whose application or interrupts hold the
// core the receiving thread runs on. The loop is the lab's: up starts it,
// finds it again rather than starting a second, and stops it when the
// lab is reshaped to another scenario; down stops it.
//
// It is found by what it is, not only by the pid in the record: a
// process in host b's network namespace whose command line carries
// BusyMarker. A pid the record keeps that now names another process is
// left alone, and a loop an interrupted up started before it could
// record it is still found. Each kill goes through a pidfd opened while
// the process's start time still matched, so a pid reused between the
// look and the kill is never signalled.
//
// The loop bounds itself, for the case where the lab's state is lost or
// its namespace removed by hand: it exits when host b's namespace is no
// longer pinned under /run/netns, and after a day (busyLifetime) in any
// case.

// BusyMarker is the busy loop's $0, which its command line carries:
// `pgrep -f linerate-lab-busy-loop` finds every loop a lab runs.
const BusyMarker = "linerate-lab-busy-loop"

// busyLifetime bounds how long a loop runs, whatever happens to the lab.
const busyLifetime = 24 * time.Hour

// busyScript is the loop. $1 is host b's namespace pin: the loop checks
// it, and the clock (/proc/uptime, which needs no other program), every
// 200000 additions, a tenth of a second or so.
const busyScript = `read t _ </proc/uptime; end=$((${t%.*}+$2))
while [ -e "$1" ]; do
	read t _ </proc/uptime; [ "${t%.*}" -lt "$end" ] || exit 0
	i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done
done`

// busyLoop is a running loop, as the record keeps it and status shows it.
type busyLoop struct {
	PID int `json:"pid"`
	// StartTicks is the process's start time (/proc/PID/stat, clock
	// ticks since boot): with the pid, it names one process for good.
	StartTicks uint64 `json:"start_ticks"`
	CPU        int    `json:"cpu"`
	UID        int    `json:"uid"`
}

// BusyCPU is the CPU the busy-receiver scenario pins its loop to: the
// machine's last online CPU, so that `bench lab:NAME -A 0,N` puts the
// receiver on it and the sender on the first.
func BusyCPU() int {
	if b, err := os.ReadFile("/sys/devices/system/cpu/online"); err == nil {
		if cpus, err := cpulist.Parse(strings.TrimSpace(string(b))); err == nil && len(cpus) > 0 {
			return cpus[len(cpus)-1]
		}
	}
	return runtime.NumCPU() - 1
}

// busyUser is who the loop runs as: nobody, or 65534 where it has no
// name. It needs no privilege, and as nobody it can signal nothing of
// linerate's.
func busyUser() (uid, gid uint32) {
	uid, gid = 65534, 65534
	if u, err := user.Lookup("nobody"); err == nil {
		if n, err := strconv.ParseUint(u.Uid, 10, 32); err == nil && n != 0 {
			uid = uint32(n)
		}
		if n, err := strconv.ParseUint(u.Gid, 10, 32); err == nil && n != 0 {
			gid = uint32(n)
		}
	}
	return uid, gid
}

// startBusy starts the loop pinned to cpu in namespace ns, detached (a
// session of its own, no terminal, stdio on /dev/null), as nobody.
func startBusy(ns string, cpu int) (*busyLoop, error) {
	uid, gid := busyUser()
	cmd := exec.Command("/bin/sh", "-c", busyScript, BusyMarker, nsPath(ns), strconv.Itoa(int(busyLifetime/time.Second)))
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setsid:     true,
		Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}},
	}
	var set unix.CPUSet
	set.Set(cpu)
	// The affinity is set on the thread that forks, which the child
	// inherits: the loop never runs elsewhere, not even for its first
	// instructions. The thread is thrown away afterwards (startIn).
	err := startIn(ns, cmd, func() error {
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("pinning the busy loop to CPU %d: %w", cpu, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Reap it when it ends, so that a stopped loop leaves no zombie while
	// this process lives on (a test, say); when this process exits first,
	// init adopts and reaps it.
	go cmd.Wait() //nolint:errcheck // its exit status says nothing
	l := &busyLoop{PID: cmd.Process.Pid, CPU: cpu, UID: int(uid)}
	if st, ok := procStart(l.PID); ok {
		l.StartTicks = st
	}
	return l, nil
}

// procStart returns the start time of process pid in clock ticks since
// boot (field 22 of /proc/PID/stat).
func procStart(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces
	// or parentheses: the fields after it start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(f[19], 10, 64) // field 22: state is field 3, f[0]
	return v, err == nil
}

// findBusy lists the loops running in namespace ns, lowest pid first.
// A zombie has an empty command line, so a stopped loop not yet reaped is
// not listed.
func findBusy(ns string) []busyLoop {
	var out []busyLoop
	for _, pid := range pidsIn(ns) {
		if l, ok := busyAt(pid); ok {
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b busyLoop) int { return a.PID - b.PID })
	return out
}

// busyAt reports whether pid (a process in the lab's namespace) is a
// busy loop, and what it is.
func busyAt(pid int) (busyLoop, bool) {
	dir := "/proc/" + strconv.Itoa(pid)
	cmdline, err := os.ReadFile(dir + "/cmdline")
	if err != nil || !slices.Contains(strings.Split(string(cmdline), "\x00"), BusyMarker) {
		return busyLoop{}, false
	}
	l := busyLoop{PID: pid, CPU: -1, UID: -1}
	var ok bool
	if l.StartTicks, ok = procStart(pid); !ok {
		return busyLoop{}, false
	}
	status, _ := os.ReadFile(dir + "/status")
	for line := range strings.SplitSeq(string(status), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "Cpus_allowed_list":
			if cpus, err := cpulist.Parse(v); err == nil && len(cpus) == 1 {
				l.CPU = cpus[0]
			}
		case "Uid":
			if f := strings.Fields(v); len(f) > 0 {
				l.UID, _ = strconv.Atoi(f[0])
			}
		}
	}
	return l, true
}

// busyStopWait bounds how long stopBusy waits for a killed loop to end.
const busyStopWait = 2 * time.Second

// stopBusy kills loop l if process l.PID is still the one that started at
// l.StartTicks, and waits until it has ended. A loop that already ended
// is no error.
func stopBusy(l busyLoop) error {
	fd, err := unix.PidfdOpen(l.PID, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stopping the busy loop (pid %d): %w", l.PID, err)
	}
	defer unix.Close(fd)
	// The pidfd names the process that had the pid when it was opened:
	// if that one started at l.StartTicks, the signal reaches the loop
	// and nothing else, whatever happens to the pid from here on.
	if st, ok := procStart(l.PID); !ok || st != l.StartTicks {
		return nil
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("stopping the busy loop (pid %d): %w", l.PID, err)
	}
	// A pidfd polls readable once its process has exited.
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	deadline := time.Now().Add(busyStopWait)
	for {
		n, err := unix.Poll(fds, int(time.Until(deadline)/time.Millisecond)+1)
		if n > 0 {
			return nil
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("waiting for the busy loop (pid %d) to end: %w", l.PID, err)
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("the busy loop (pid %d) has not ended %v after SIGKILL", l.PID, busyStopWait)
		}
	}
}

// stopAllBusy stops every loop running in namespace ns and says what it
// stopped.
func stopAllBusy(ns string) ([]string, error) {
	var done []string
	var errs []error
	for _, l := range findBusy(ns) {
		if err := stopBusy(l); err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, fmt.Sprintf("busy loop (pid %d) in %s", l.PID, ns))
	}
	return done, errors.Join(errs...)
}

// busyPlan keeps exactly one loop pinned to cpu running in host b's
// namespace ns (cpu < 0: none), starting, stopping or keeping what
// findBusy sees; found is the loop it keeps, if any. started is called
// with the loop a change starts.
func busyPlan(ns string, cpu int, started func(*busyLoop)) (plan []change, found *busyLoop) {
	for _, l := range findBusy(ns) {
		if cpu >= 0 && found == nil && l.CPU == cpu {
			found = &l
			continue
		}
		plan = append(plan, change{fmt.Sprintf("stop the busy loop (pid %d, CPU %d) in %s", l.PID, l.CPU, ns),
			func() error { return stopBusy(l) }})
	}
	if cpu >= 0 && found == nil {
		plan = append(plan, change{fmt.Sprintf("start a busy loop pinned to CPU %d in %s (as nobody)", cpu, ns), func() error {
			l, err := startBusy(ns, cpu)
			if err == nil {
				started(l)
			}
			return err
		}})
	}
	return plan, found
}

// sameLoop reports whether a and b name the same process (or both none).
func sameLoop(a, b *busyLoop) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.PID == b.PID && a.StartTicks == b.StartTicks
}
