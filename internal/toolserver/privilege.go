package toolserver

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// What the agent spawns runs without privilege. A tool server is a
// third-party C program listening on the network, and iperf3 parses a
// client's parameters before it checks its credentials, so whoever reaches
// its port feeds input to it: it runs
//
//   - as ToolUser, a system user of its own (created with useradd
//     --system the first time it is needed), or as nobody/nogroup where
//     that cannot be made. Changing uid away from 0 clears the effective
//     and permitted capabilities, and its supplementary groups are
//     dropped;
//   - with no_new_privs, so no set-user-ID program or file capability it
//     might execute gives any back, and with an empty capability bounding
//     set and ambient set;
//   - with an environment holding no token (Environ).
//
// Go's SysProcAttr sets credentials and the parent-death signal in the
// child but has no field for no_new_privs. It is a per-thread attribute
// that a child inherits from the thread that forked it, and the tool
// servers are forked from a thread of their own that is thrown away
// afterwards (the Pdeathsig and CPU pinning already need one): setting
// no_new_privs and dropping the bounding set on that thread before the
// fork is the same as doing it in the child, without re-executing a helper
// of our own in between. No other thread of the agent is touched (the Go
// runtime never clones new threads from a locked one).

// ToolUser is the system user tool servers run as.
const ToolUser = "linerate-tool"

// Identity is who tool servers run as.
type Identity struct {
	// UID and GID are the user and group.
	UID, GID uint32
	// Name says who that is ("linerate-tool", "nobody/nogroup", or this
	// process's own user).
	Name string
	// Switch is whether the server changes to UID and GID; false when
	// this process cannot (no CAP_SETUID/CAP_SETGID) and holds no
	// capability a child could inherit.
	Switch bool
	// Note says how the identity was found, for the agent's log.
	Note string
}

var (
	identityOnce sync.Once
	identity     Identity
	identityErr  error
)

// ToolIdentity finds (once per process) who tool servers run as: the
// ToolUser system user, created if missing; nobody/nogroup when it
// cannot be created; this process's own user when it cannot change user
// but holds no capability (a container that dropped them all).
func ToolIdentity() (Identity, error) {
	identityOnce.Do(func() { identity, identityErr = findIdentity(lookupOrCreate) })
	return identity, identityErr
}

func findIdentity(find func() (Identity, error)) (Identity, error) {
	eff, perm, err := capSets()
	if err != nil {
		return Identity{}, err
	}
	if eff&capBit(unix.CAP_SETUID) != 0 && eff&capBit(unix.CAP_SETGID) != 0 {
		return find()
	}
	if perm != 0 {
		return Identity{}, fmt.Errorf("tool servers must not run with this process's capabilities (permitted %#x), and without CAP_SETUID and CAP_SETGID it cannot change their user: run serve as root, or with no capability at all", perm)
	}
	uid, gid := uint32(os.Geteuid()), uint32(os.Getegid())
	id := Identity{UID: uid, GID: gid, Name: "uid " + strconv.Itoa(int(uid))}
	who := id.Name
	if u, err := user.LookupId(strconv.Itoa(int(uid))); err == nil {
		id.Name = u.Username
		who = fmt.Sprintf("%s (uid %d)", u.Username, uid)
	}
	id.Note = fmt.Sprintf("tool servers run as this process's own user, %s: it cannot change user, and holds no capability", who)
	return id, nil
}

// lookupOrCreate finds ToolUser, making it as a system user with a
// group of its own, no home and no login shell when it does not exist;
// nobody/nogroup when that fails. nobody is the fallback only: other
// daemons (NFS's squashed root among them) run as it, and processes of one
// uid may signal and trace each other and read each other's files.
func lookupOrCreate() (Identity, error) {
	note := ""
	if _, err := user.Lookup(ToolUser); err != nil {
		out, cerr := exec.Command("useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
			"--shell", "/usr/sbin/nologin", "--comment", "linerate tool servers", ToolUser).CombinedOutput()
		// Another agent may have made it meanwhile: look again either way.
		if _, err := user.Lookup(ToolUser); err == nil {
			note = fmt.Sprintf("created the system user %s for tool servers (userdel %s removes it)", ToolUser, ToolUser)
		} else {
			why := strings.TrimSpace(string(out))
			if cerr != nil && why == "" {
				why = cerr.Error()
			}
			return nobody(fmt.Sprintf("could not create the system user %s (useradd: %s)", ToolUser, why))
		}
	}
	u, err := user.Lookup(ToolUser)
	if err != nil {
		return nobody(err.Error())
	}
	id, err := idOf(u.Uid, u.Gid)
	if err != nil || id.UID == 0 || id.GID == 0 {
		return nobody(fmt.Sprintf("the user %s is uid %s gid %s", ToolUser, u.Uid, u.Gid))
	}
	id.Name, id.Switch = ToolUser, true
	id.Note = note
	if id.Note == "" {
		id.Note = fmt.Sprintf("tool servers run as %s (uid %d, gid %d)", ToolUser, id.UID, id.GID)
	}
	return id, nil
}

// nobody is the fallback identity: nobody and its group (nogroup on
// Debian, nobody elsewhere), or 65534:65534 where neither is named.
func nobody(why string) (Identity, error) {
	id := Identity{UID: 65534, GID: 65534, Name: "nobody/nogroup", Switch: true}
	if u, err := user.Lookup("nobody"); err == nil {
		if n, err := idOf(u.Uid, u.Gid); err == nil && n.UID != 0 {
			id.UID, id.GID = n.UID, n.GID
		}
	}
	for _, g := range []string{"nogroup", "nobody"} {
		if grp, err := user.LookupGroup(g); err == nil {
			if n, err := strconv.ParseUint(grp.Gid, 10, 32); err == nil && n != 0 {
				id.GID = uint32(n)
				break
			}
		}
	}
	id.Note = fmt.Sprintf("tool servers run as nobody (uid %d, gid %d): %s", id.UID, id.GID, why)
	return id, nil
}

func idOf(uid, gid string) (Identity, error) {
	u, err := strconv.ParseUint(uid, 10, 32)
	if err != nil {
		return Identity{}, err
	}
	g, err := strconv.ParseUint(gid, 10, 32)
	if err != nil {
		return Identity{}, err
	}
	return Identity{UID: uint32(u), GID: uint32(g)}, nil
}

func capBit(c int) uint64 { return 1 << uint(c) }

// capSets returns the calling thread's effective and permitted
// capabilities.
func capSets() (eff, perm uint64, err error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return 0, 0, fmt.Errorf("reading this process's capabilities: %w", err)
	}
	eff = uint64(data[0].Effective) | uint64(data[1].Effective)<<32
	perm = uint64(data[0].Permitted) | uint64(data[1].Permitted)<<32
	return eff, perm, nil
}

// unprivileged makes cmd run as id, with supplementary groups dropped, the
// parent-death signal set, an environment without tokens, in /.
func unprivileged(cmd *exec.Cmd, id Identity) {
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if id.Switch {
		attr.Credential = &syscall.Credential{Uid: id.UID, Gid: id.GID, Groups: []uint32{}}
	}
	cmd.SysProcAttr = attr
	cmd.Env = Environ()
	// Not the agent's working directory (root's home, say), which the
	// server's user may not enter and has no business in.
	cmd.Dir = "/"
}

// dropThreadPrivileges sets no_new_privs on the calling thread and empties
// its capability bounding and ambient sets, for the child it forks next to
// inherit. Call it only on a thread that is thrown away afterwards
// (osthread.Throwaway): none of it can be undone.
func dropThreadPrivileges() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs for a tool server: %w", err)
	}
	// Ambient capabilities are cleared by the change of uid anyway; clear
	// them for a server that keeps this process's user too. Kernels
	// before 4.3 have no ambient set (EINVAL).
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clearing ambient capabilities for a tool server: %w", err)
	}
	last := lastCap()
	for c := 0; c <= last; c++ {
		if in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); err != nil || in == 0 {
			continue
		}
		// Without CAP_SETPCAP (a container that dropped every
		// capability) this fails; with no_new_privs and no permitted
		// capability the bounding set then grants nothing anyway.
		unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
	}
	return nil
}

// lastCap is the kernel's highest capability number.
func lastCap() int {
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n >= 0 && n < 64 {
			return n
		}
	}
	return unix.CAP_LAST_CAP
}

// Environ is this process's environment for a tool it runs, client or
// server, without linerate's own variables — LINERATE_TOKEN holds the
// agent's token — or an inherited iperf3 password: no tool reads them, and
// a tool's environment is readable by its user (/proc/PID/environ).
func Environ() []string {
	env := os.Environ()
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "LINERATE_") || name == "IPERF3_PASSWORD" {
			continue
		}
		out = append(out, kv)
	}
	return out
}
