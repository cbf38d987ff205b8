package testbin

import (
	"os"
	"runtime"
	"testing"

	"github.com/vishvananda/netns"
)

// NeedRoot skips a test that needs root (why: what for) when not root;
// under CI=true, which runs as root, it fails instead.
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("needs root (%s); CI runs as root", why)
	}
	t.Skipf("needs root (%s)", why)
}

// InNewNetns runs f on a locked thread inside a fresh, unnamed network
// namespace, which disappears with the thread (and the links made in it).
func InNewNetns(t testing.TB, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		// Never unlocked: the thread dies with the goroutine, and the
		// namespace with it.
		ns, err := netns.New()
		if err != nil {
			t.Error(err)
			return
		}
		defer ns.Close()
		f()
	}()
	<-done
}
