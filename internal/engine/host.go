package engine

import (
	"net"
	"net/netip"
	"slices"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/placement"
	"github.com/linerate/linerate/internal/result"
)

// HostFacts describes this host as one end of a test over the interface
// holding local: its CPUs, the NIC's interrupts and where they are
// routed, the CPUs to prefer for stream threads. The notes say what could
// not be read.
func HostFacts(fs *hostfs.FS, local netip.Addr) (result.HostInfo, []string) {
	var notes []string
	h := result.HostInfo{}
	h.BootID, _ = fs.ReadString("proc/sys/kernel/random/boot_id")
	allowed, err := AllowedCPUs()
	if err != nil {
		notes = append(notes, err.Error())
	}
	h.CPUs = allowed
	inv, err := inventory.Collect(fs, inventory.Options{})
	if err != nil {
		notes = append(notes, "host inventory: "+err.Error())
		h.Candidates = allowed
		return h, notes
	}
	h.Hostname, h.Kernel = inv.Host.Hostname, inv.Host.Kernel
	h.Iface = ifaceOf(local)
	nic := findNIC(inv, h.Iface)
	if nic != nil {
		h.PCI = nic.PCI
		for _, q := range nic.IRQs {
			h.NICIRQs = append(h.NICIRQs, q.IRQ)
		}
		h.IRQCPUs = irqCPUs(nic)
	}
	h.Candidates = candidates(allowed, &inv.CPU, nic, h.IRQCPUs)
	return h, notes
}

// ifaceOf returns the name of the interface that has address a.
func ifaceOf(a netip.Addr) string {
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	a = a.Unmap()
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, ad := range addrs {
			if p, ok := ad.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(p.IP); ok && ip.Unmap() == a {
					return ifc.Name
				}
			}
		}
	}
	return ""
}

func findNIC(inv *inventory.Inventory, name string) *inventory.NIC {
	if name == "" {
		return nil
	}
	for _, list := range [][]inventory.NIC{inv.NICs, inv.Virtual} {
		for i := range list {
			if list[i].Interface == name {
				return &list[i]
			}
		}
	}
	return nil
}

// irqCPUs returns the CPUs a NIC's interrupts are routed to: each IRQ's
// effective affinity where the kernel reports it, else the CPUs that
// served at least 1% of it.
func irqCPUs(nic *inventory.NIC) []int {
	var out []int
	for _, q := range nic.IRQs {
		cpus := q.Effective
		if len(cpus) == 0 {
			cpus = q.ServedOn(0.01)
		}
		out = append(out, cpus...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// candidates orders the CPUs stream threads should use
// (docs/architecture.md, "Thread placement"): CPUs local to the NIC, as
// package placement defines them for doctor and tune; among them first
// those sharing an L3 cache with its interrupt CPUs but not serving
// interrupts themselves (the data is warm in that cache, and the thread
// does not compete with the softirq), then the other local CPUs without
// interrupts, then whatever is allowed.
func candidates(allowed []int, cpu *inventory.CPU, nic *inventory.NIC, irq []int) []int {
	local := allowed
	if nic != nil {
		local = nonEmpty(cpulist.Intersect(allowed, placement.LocalCPUs(cpu, nic)), allowed)
	}
	if len(irq) == 0 {
		return local
	}
	free := cpulist.Subtract(local, irq)
	var near, far []int
	for _, c := range free {
		if sharesL3(cpu, c, irq) {
			near = append(near, c)
		} else {
			far = append(far, c)
		}
	}
	return nonEmpty(append(near, far...), local)
}

func sharesL3(cpu *inventory.CPU, c int, others []int) bool {
	d := cpu.L3Of(c)
	if d < 0 {
		return false
	}
	for _, o := range others {
		if cpu.L3Of(o) == d {
			return true
		}
	}
	return false
}

func nonEmpty(a, fallback []int) []int {
	if len(a) == 0 {
		return fallback
	}
	return a
}

// Split gives the client and the agent disjoint CPUs when both run on
// one machine (a sender and a receiver sharing a core run up to 2×
// slower). A side the user placed keeps its CPUs; the other avoids them.
func Split(client, server []int, cands, allowed []int) ([]int, []int) {
	switch {
	case client != nil && server != nil:
		return client, server
	case client != nil:
		return client, nonEmpty(subtractUnsorted(cands, client), cands)
	case server != nil:
		return nonEmpty(subtractUnsorted(cands, server), cands), server
	}
	pool := cands
	if len(pool) < 2 {
		pool = allowed
	}
	if len(pool) < 2 {
		return pool, pool // one CPU: nothing to split
	}
	half := (len(pool) + 1) / 2
	return slices.Clone(pool[:half]), slices.Clone(pool[half:])
}

// subtractUnsorted removes b's CPUs from a, keeping a's order.
func subtractUnsorted(a, b []int) []int {
	var out []int
	for _, c := range a {
		if !slices.Contains(b, c) {
			out = append(out, c)
		}
	}
	return out
}

// Assign gives n stream threads a CPU each, round-robin over cpus; an
// empty list leaves them unpinned (-1).
func Assign(n int, cpus []int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = -1
		if len(cpus) > 0 {
			out[i] = cpus[i%len(cpus)]
		}
	}
	return out
}

// AssignThreads places n connections carried by threads threads on cpus:
// connection i runs on its thread's CPU (Thread), the threads
// round-robin over cpus. With a thread per connection it is Assign.
func AssignThreads(n, threads int, cpus []int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = -1
		if len(cpus) > 0 {
			out[i] = cpus[Thread(i, threads)%len(cpus)]
		}
	}
	return out
}

// Used returns the distinct CPUs of an assignment, in first-use order.
func Used(assigned []int) []int {
	out := []int{}
	for _, c := range assigned {
		if c >= 0 && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// LocalFacts describes this host as the client end of a test toward peer
// (an address, "host:port" or a name): the interface that reaches it, its
// NIC's interrupts, the CPUs to prefer. Nothing is sent to peer: a UDP
// socket's connect only picks the route. The notes say what could not be
// read. A nil fs is the live host.
func LocalFacts(fs *hostfs.FS, peer string) (result.HostInfo, []string) {
	if fs == nil {
		fs = hostfs.Live()
	}
	host := peer
	if h, _, err := net.SplitHostPort(peer); err == nil {
		host = h
	}
	var local netip.Addr
	if c, err := net.Dial("udp", net.JoinHostPort(host, "9")); err == nil {
		local = AddrPort(c.LocalAddr()).Addr()
		c.Close()
	}
	h, notes := HostFacts(fs, local)
	if !local.IsValid() {
		notes = append(notes, "no route to "+host+": the interface under test is unknown")
	}
	return h, notes
}

// AddrPort returns a TCP or UDP address as a netip.AddrPort (the zero
// value for other kinds).
func AddrPort(a net.Addr) netip.AddrPort {
	switch t := a.(type) {
	case *net.TCPAddr:
		return t.AddrPort()
	case *net.UDPAddr:
		return t.AddrPort()
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return ap
}
