package osthread

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestThrowaway: fn never runs on the main thread, and a change it makes
// to its thread (here the CPU affinity) does not reach the process's main
// thread or later goroutines' threads.
func TestThrowaway(t *testing.T) {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	if all.Count() < 2 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: needs two CPUs to narrow an affinity")
		}
		t.Skip("needs two CPUs to narrow an affinity")
	}
	for i := 0; i < 200; i++ {
		err := Throwaway(func() error {
			if unix.Gettid() == os.Getpid() {
				t.Fatal("ran on the main thread")
			}
			var one unix.CPUSet
			one.Set(0)
			return unix.SchedSetaffinity(0, &one)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var main unix.CPUSet
	if err := unix.SchedGetaffinity(os.Getpid(), &main); err != nil {
		t.Fatal(err)
	}
	if main != all {
		t.Errorf("the main thread's affinity changed: %d CPUs, was %d", main.Count(), all.Count())
	}
	var here unix.CPUSet
	if err := unix.SchedGetaffinity(0, &here); err != nil || here != all {
		t.Errorf("this goroutine's thread inherited the change: %d CPUs (%v)", here.Count(), err)
	}
}
