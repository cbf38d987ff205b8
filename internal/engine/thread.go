package engine

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// onPinnedThread runs fn on an OS thread of its own, pinned to cpu (-1:
// unpinned) and named name, and returns a channel that receives fn's
// error once it returned. The thread is never unlocked, so it exits with
// the goroutine and its affinity and name go with it, as a stream
// thread's do (Stream.thread).
func onPinnedThread(cpu int, name string, fn func() error) <-chan error {
	done := make(chan error, 1)
	go pinnedThread(cpu, name, fn, done)
	return done
}

func pinnedThread(cpu int, name string, fn func() error, done chan<- error) {
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		// The main thread never exits (see Stream.thread): use another.
		runtime.UnlockOSThread()
		go pinnedThread(cpu, name, fn, done)
		return
	}
	if err := pinThread(cpu); err != nil {
		done <- err
		return
	}
	nameThread(name)
	done <- fn()
}
