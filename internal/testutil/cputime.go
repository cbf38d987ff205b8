package testutil

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

// ProcessCPU runs fn and returns the CPU time the whole process spent
// meanwhile (every thread: fn's goroutines, and the garbage collector).
// Like ThreadCPU it does not grow when other processes are busy; use it
// when fn runs goroutines of its own, and nothing else in the process
// runs at the same time.
func ProcessCPU(fn func()) time.Duration {
	before := processTime()
	fn()
	return processTime() - before
}

func processTime() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
