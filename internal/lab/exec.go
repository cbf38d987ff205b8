package lab

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/osthread"
)

// Start starts cmd inside host h of lab name the way `ip netns exec` runs a
// command: in the host's network namespace and in a mount namespace of its
// own, where /sys is a fresh sysfs that shows the host's interfaces (sysfs
// shows the network namespace of whoever mounted it, so without the remount
// /sys/class/net would still list the machine's NICs). Mounts made by the
// command do not propagate back. The caller waits for cmd as usual.
func Start(name string, h Host, cmd *exec.Cmd) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if _, err := ParseHost(string(h)); err != nil {
		return err
	}
	if err := requireRoot(); err != nil {
		return err
	}
	ns := Namespace(name, h)
	st, err := probeNS(nsPath(ns))
	if err != nil {
		return err
	}
	if st != nsPinned {
		return fmt.Errorf("lab %s has no host %s (%s does not exist): run 'linerate lab up --name %s'", name, h, ns, name)
	}
	return startIn(ns, cmd, nil)
}

// startIn starts cmd in namespace ns as Start does, calling prepare (when
// not nil) on the forking thread first: what it sets there, a CPU
// affinity say, the child inherits.
func startIn(ns string, cmd *exec.Cmd, prepare func() error) error {
	// The thread changes its mount namespace, which cannot be undone the
	// way a network namespace can: it is thrown away afterwards instead of
	// letting other goroutines run in the lab's namespaces. The child
	// forked from it inherits the namespaces.
	return osthread.Throwaway(func() error {
		if err := enter(ns); err != nil {
			return err
		}
		if prepare != nil {
			if err := prepare(); err != nil {
				return err
			}
		}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("starting %s in %s: %w", cmd.Path, ns, err)
		}
		return nil
	})
}

// Enter moves the calling OS thread into host h of lab name for good, as
// Start does for a command: run it only on a thread that is thrown away
// afterwards (osthread.Throwaway).
func Enter(name string, h Host) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	return enter(Namespace(name, h))
}

// enter does what iproute2's netns_switch does — the network namespace ns,
// a mount namespace of its own with a fresh sysfs that shows ns's
// interfaces — and gives the host a UTS namespace named ns, so that what
// runs there (doctor, tune's journal, bench's host facts) tells the lab's
// two hosts apart as it would two machines.
func enter(ns string) error {
	f, err := os.Open(nsPath(ns))
	if err != nil {
		return fmt.Errorf("opening namespace %s: %w", ns, err)
	}
	defer f.Close()
	if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("entering %s: %w", ns, err)
	}
	if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_NEWUTS); err != nil {
		return fmt.Errorf("creating mount and UTS namespaces for %s: %w", ns, err)
	}
	if err := unix.Sethostname([]byte(ns)); err != nil {
		return fmt.Errorf("naming host %s: %w", ns, err)
	}
	if err := unix.Mount("", "/", "none", unix.MS_SLAVE|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("making / a slave mount for %s: %w", ns, err)
	}
	var flags uintptr
	var sfs unix.Statfs_t
	if unix.Statfs("/sys", &sfs) == nil && sfs.Flags&unix.ST_RDONLY != 0 {
		flags = unix.MS_RDONLY // keep a read-only /sys read-only
	}
	// EINVAL: nothing mounted on /sys, which is fine.
	if err := unix.Unmount("/sys", unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("unmounting /sys for %s: %w", ns, err)
	}
	if err := unix.Mount(ns, "/sys", "sysfs", flags, ""); err != nil {
		return fmt.Errorf("mounting /sys for %s: %w", ns, err)
	}
	return nil
}

// ExitCode returns the exit status of a process that ended with err (as
// returned by exec.Cmd.Wait), the way a shell reports it: the exit code, or
// 128+N for death by signal N. ok is false when err is not about the exit.
func ExitCode(err error) (code int, ok bool) {
	if err == nil {
		return 0, true
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return 0, false
	}
	if ws, isWS := ee.Sys().(syscall.WaitStatus); isWS && ws.Signaled() {
		return 128 + int(ws.Signal()), true
	}
	return ee.ExitCode(), true
}
