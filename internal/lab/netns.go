package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// netnsDir is where named namespaces are pinned, the directory iproute2 and
// vishvananda/netns use (/var/run/netns is a symbolic link to it).
const netnsDir = "/run/netns"

func nsPath(ns string) string { return filepath.Join(netnsDir, ns) }

// nsState says what is at a namespace's pin path.
type nsState int

const (
	nsAbsent nsState = iota
	nsPinned         // an nsfs bind mount: a live namespace
	nsStale          // a plain file: an `up` died between creating the file and mounting on it
)

// probeNS reports what is at path.
func probeNS(path string) (nsState, error) {
	var st unix.Statfs_t
	err := unix.Statfs(path, &st)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nsAbsent, nil
	case err != nil:
		return nsAbsent, fmt.Errorf("inspecting %s: %w", path, err)
	case st.Type == unix.NSFS_MAGIC:
		return nsPinned, nil
	}
	return nsStale, nil
}

// ensureNetnsDir makes netnsDir a shared mount point, as `ip netns add` does.
// Why: `lab exec` and `ip netns exec` run commands in a copy of the mount
// namespace that receives propagation from this one. With a shared
// directory, a namespace unpinned by `down` is unpinned in those copies too;
// with a private one each copy would keep a bind mount that holds the
// namespace (and its veth) alive for as long as the command runs.
func ensureNetnsDir() error {
	if err := os.MkdirAll(netnsDir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", netnsDir, err)
	}
	err := unix.Mount("", netnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if errors.Is(err, unix.EINVAL) {
		// Not a mount point yet: bind it onto itself, then share it.
		if err := unix.Mount(netnsDir, netnsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("making %s a mount point: %w", netnsDir, err)
		}
		err = unix.Mount("", netnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	}
	if err != nil {
		return fmt.Errorf("making %s a shared mount: %w", netnsDir, err)
	}
	return nil
}

// createNS creates a network namespace pinned at nsPath(ns), the way
// `ip netns add` does: an empty file with a bind mount of the namespace on it.
func createNS(ns string) error {
	if err := ensureNetnsDir(); err != nil {
		return err
	}
	path := nsPath(ns)
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	f.Close()
	err = onThread(func() error { return unix.Unshare(unix.CLONE_NEWNET) }, func() error {
		// thread-self, not self: only this thread is in the new namespace.
		return unix.Mount("/proc/thread-self/ns/net", path, "none", unix.MS_BIND, "")
	})
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	return nil
}

// deleteNS unpins a namespace, as `ip netns delete` does. The namespace and
// its links go away once no process runs in it. A missing pin is not an
// error: down must be able to finish what an earlier down started.
func deleteNS(ns string) error {
	path := nsPath(ns)
	err := unix.Unmount(path, unix.MNT_DETACH)
	// EINVAL: a stale file that was never mounted on.
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmounting %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing %s: %w", path, err)
	}
	return nil
}

// inNS runs fn on an OS thread that has joined the namespace ns (a pinned
// path). fn must not start goroutines that expect to be in ns, and must not
// block for long: it holds an OS thread.
func inNS(ns string, fn func() error) error {
	f, err := os.Open(nsPath(ns))
	if err != nil {
		return fmt.Errorf("opening namespace %s: %w", ns, err)
	}
	defer f.Close()
	return onThread(func() error { return unix.Setns(int(f.Fd()), unix.CLONE_NEWNET) }, fn)
}

// onThread runs enter and then fn on a dedicated, locked OS thread, and
// moves the thread back to its original network namespace afterwards. It is
// cilium's pkg/netns pattern: if the thread cannot be moved back, it stays
// locked, so the runtime ends it with the goroutine instead of handing a
// thread in the wrong namespace to other goroutines.
func onThread(enter, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread() // nothing was changed yet
			errc <- fmt.Errorf("opening the current network namespace: %w", err)
			return
		}
		defer orig.Close()
		err = enter()
		if err == nil {
			err = fn()
		}
		if rerr := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); rerr != nil {
			errc <- errors.Join(err, fmt.Errorf("restoring the network namespace of a thread: %w (thread discarded)", rerr))
			return // still locked: the thread dies with this goroutine
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	return <-errc
}

// readSysctls reads /proc/sys/<path> for each path inside namespace ns,
// with whitespace normalised (the kernel separates tcp_rmem's fields with
// tabs).
func readSysctls(ns string, paths []string) (map[string]string, error) {
	vals := make(map[string]string, len(paths))
	err := inNS(ns, func() error {
		for _, p := range paths {
			// The open must happen on the thread in ns: /proc/sys/net
			// shows the namespace of the task that looks the file up.
			b, err := os.ReadFile(filepath.Join("/proc/sys", p))
			if err != nil {
				return fmt.Errorf("reading %s: %w", sysctlName(p), err)
			}
			vals[p] = strings.Join(strings.Fields(string(b)), " ")
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("in %s: %w", ns, err)
	}
	return vals, nil
}

// writeSysctl writes /proc/sys/<path> inside namespace ns.
func writeSysctl(ns, path, value string) error {
	err := inNS(ns, func() error {
		return os.WriteFile(filepath.Join("/proc/sys", path), []byte(value+"\n"), 0)
	})
	if err != nil {
		return fmt.Errorf("setting %s in %s: %w", sysctlName(path), ns, err)
	}
	return nil
}

// processesIn lists the processes whose network namespace is ns, as
// `ip netns pids` does, as "iperf3 (pid 1234)". Errors just shorten the list:
// it is advice, not a result.
func processesIn(ns string) []string {
	var out []string
	for _, pid := range pidsIn(ns) {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		out = append(out, fmt.Sprintf("%s (pid %d) in %s", strings.TrimSpace(string(comm)), pid, ns))
	}
	return out
}

// pidsIn lists the processes whose network namespace is ns (their
// /proc/PID/ns/net is its pin's inode), in /proc's order. Errors just
// shorten the list: a process that ends meanwhile is not in it.
func pidsIn(ns string) []int {
	var want unix.Stat_t
	if err := unix.Stat(nsPath(ns), &want); err != nil {
		return nil
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if err := unix.Stat("/proc/"+e.Name()+"/ns/net", &st); err != nil || st.Dev != want.Dev || st.Ino != want.Ino {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// NetNSInode returns the inode of host h's network namespace in lab name:
// what a process in that host reads from /proc/self/ns/net, and what tune
// journals record as the namespace they changed.
func NetNSInode(name string, h Host) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(nsPath(Namespace(name, h)), &st); errors.Is(err, unix.ENOENT) {
		return 0, fmt.Errorf("lab %s has no host %s (%s does not exist)", name, h, Namespace(name, h))
	} else if err != nil {
		return 0, fmt.Errorf("lab %s, host %s: %w", name, h, err)
	}
	return st.Ino, nil
}
