// Package osthread runs code on an OS thread of its own that the Go
// runtime discards afterwards: for changes to a thread that cannot (or
// should not) be undone — entering a mount namespace, a CPU affinity a
// forked child must inherit — and that must never reach other goroutines.
package osthread

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// Throwaway runs fn on a locked OS thread that is never unlocked, so the
// runtime ends the thread when fn returns, and returns fn's error. The
// thread is never the main thread: the runtime cannot end that one, and
// its namespaces are the process's own (/proc/self/ns), so a change made
// there would stay with the whole process.
func Throwaway(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// Hold the main thread so that the work runs on another, and
			// give it back untouched.
			defer runtime.UnlockOSThread()
			errc <- Throwaway(fn)
			return
		}
		errc <- fn()
	}()
	return <-errc
}
