package testbin

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// ThreadCPU runs fn on a locked OS thread and returns the CPU time that
// thread spent in it (user and system). Unlike the wall clock it does not
// grow when other processes take the machine's CPUs, so a fuzz target can
// hold each input to a work budget without failing on a busy host. Work fn
// hands to other goroutines is not counted.
func ThreadCPU(fn func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := threadTime()
	fn()
	return threadTime() - before
}

func threadTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
