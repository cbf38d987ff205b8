package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/linerate/linerate/internal/bench"
	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/lab"
)

// Errors that name their real cause: what can be known before a
// connection is checked first (checkBenchPeer, checkAffinity, checkBind),
// and a failed connection's hint follows its errno (hintError), not a
// guess. Each is table-tested in hints_test.go.

// agentHint is the hint the agent's dialers add to any failed connection;
// it is right for a refused connection only.
const agentHint = " (is 'linerate serve' running there?)"

// hintError rewrites a failure's hint by its cause: an unreachable host or
// network is the network's doing, not a missing agent; a port in use or an
// address this host lacks are told apart.
func hintError(err error) error {
	msg := err.Error()
	var hint string
	switch {
	case errors.Is(err, syscall.EHOSTUNREACH):
		hint = " (nothing answers at that address: check it, and that the host is up and on this network, e.g. with ping)"
	case errors.Is(err, syscall.ENETUNREACH):
		hint = " (this host has no route to that network: see 'ip route get ADDR')"
	case errors.Is(err, syscall.ETIMEDOUT):
		hint = " (no answer: a firewall may drop the agent's port, or the host is down)"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		hint = " (no interface of this host has that address: see 'ip -br addr')"
	case errors.Is(err, syscall.EADDRINUSE):
		hint = " (another program, perhaps another agent, holds that port: pick another --port)"
	default:
		return err
	}
	msg = strings.Replace(msg, agentHint, "", 1)
	msg = strings.Replace(msg, serveHint, "", 1)
	return errors.New(msg + hint)
}

// serveHint is what serve said of every failure to listen.
const serveHint = " (is another agent running? pick another --port)"

// checkBenchPeer finds, before any connection, what would make bench fail
// for reasons other than the agent: lab: needs root (the lab's hosts are
// network namespaces), and a peer this host has no route to.
func checkBenchPeer(ctx context.Context, peer string, port int) error {
	if name, ok := strings.CutPrefix(peer, bench.LabPrefix); ok {
		if os.Geteuid() != 0 {
			return fmt.Errorf("bench %s needs root: it runs in the lab's network namespaces (run it with sudo)", peer)
		}
		if ms, err := lab.Members(name); err == nil && len(ms) >= 2 {
			return manyHostLab(name, ms)
		}
		return nil
	}
	host := peer
	if h, _, err := net.SplitHostPort(peer); err == nil {
		host = h
	}
	addr, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		addrs, lerr := net.DefaultResolver.LookupNetIP(lctx, "ip", host)
		if lerr != nil || len(addrs) == 0 {
			return fmt.Errorf("bench %s: cannot resolve %q: give an IP address or a name this host resolves", peer, host)
		}
		addr = addrs[0]
	}
	return checkRoute(addr.Unmap(), port)
}

// checkRoute asks the kernel for a route to addr without sending a packet
// (connecting a UDP socket only looks the route up).
func checkRoute(addr netip.Addr, port int) error {
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, uint16(port))))
	if err != nil {
		if errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EHOSTUNREACH) {
			return fmt.Errorf("no route to %s from this host: see 'ip route get %s'", addr, addr)
		}
		return nil // the connection itself will say more
	}
	c.Close()
	return nil
}

// checkAffinity refuses -A CPUs this process may not use, before any
// connection: the client's always, the server's too for a lab (its
// namespaces share this kernel's CPUs). A remote agent checks its own.
func checkAffinity(peer, flag string, client, server []int) error {
	allowed, err := engine.AllowedCPUs()
	if err != nil || len(allowed) == 0 {
		return nil // the engine will say why
	}
	check := func(end string, cpus []int) error {
		for _, c := range cpus {
			if !slices.Contains(allowed, c) {
				return fmt.Errorf("-A %s: CPU %d (%s) is not online here, or not allowed to this process: it may use %s", flag, c, end, cpulist.Format(allowed))
			}
		}
		return nil
	}
	if err := check("client", client); err != nil {
		return err
	}
	if strings.HasPrefix(peer, bench.LabPrefix) {
		return check("server", server)
	}
	return nil
}

// checkBind refuses a --bind address no interface of this host has,
// before listening ("cannot assign requested address" read as a busy
// port).
func checkBind(a netip.Addr) error {
	if a.IsUnspecified() {
		return nil
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil // listening will say
	}
	for _, ia := range addrs {
		if p, err := netip.ParsePrefix(ia.String()); err == nil && p.Addr().Unmap() == a.Unmap() {
			return nil
		}
	}
	return fmt.Errorf("--bind %s: no interface of this host has that address (see 'ip -br addr'; 0.0.0.0 listens on every address)", a)
}

// versionText is "dev (commit 8f7688d, modified, go1.26.8)" from the
// build information Go records, or the version set at link time.
func versionText() string {
	v := version
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = ", modified"
			}
		}
	}
	if v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	// A build without VCS stamping (go build -buildvcs=false, a copy of
	// the sources) says so, rather than a bare "dev" that could be any.
	if rev != "" {
		return v + " (commit " + rev + dirty + ", " + info.GoVersion + ")"
	}
	return v + " (no commit recorded: built without VCS information; " + info.GoVersion + ")"
}

// manyHostLab says how to test a lab of many hosts, which has no hosts a
// and b for 'bench lab:NAME' to run between.
func manyHostLab(name string, ms []lab.Member) error {
	first, second, last := ms[0], ms[1], ms[len(ms)-1]
	tok := "/tmp/" + name + ".token"
	return fmt.Errorf("lab %s has %d hosts (%s to %s), not the hosts a and b that 'bench lab:NAME' runs between: "+
		"test its pairs with 'linerate fleet run --lab %s' (one host against the others: --pattern star:%s), "+
		"or bench one pair inside the lab: 'linerate serve --new-token-file %s', "+
		"'linerate lab exec %s %s -- linerate serve --bind %s --token-file %s &', "+
		"then 'linerate lab exec %s %s -- linerate bench %s --token-file %s'",
		name, len(ms), first.Host, last.Host, name, first.Host, tok, name, second.Host, second.Address, tok, name, first.Host, second.Address, tok)
}
