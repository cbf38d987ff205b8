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
	goLocked(func() {
		if err := pinThread(cpu); err != nil {
			done <- err
			return
		}
		nameThread(name)
		done <- fn()
	})
	return done
}

// goLocked runs body on a new goroutine locked to an OS thread that is not
// the main thread, and never unlocks it: the runtime ends the thread with
// the goroutine, and whatever body did to it (affinity, name) goes too.
// The main thread never exits; the runtime would park it, pinned and
// named, and ps would show the process under that name. When the
// goroutine lands there, it holds the main thread until body's goroutine
// has locked another: giving it up first lets the new goroutine land on
// the main thread again, and with one P (GOMAXPROCS=1, a one-CPU
// container) that hand-over could repeat for seconds before the body ran.
func goLocked(body func()) {
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			body()
			return
		}
		locked := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(locked)
			body()
		}()
		<-locked
		runtime.UnlockOSThread()
	}()
}
