package lab

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// DefaultName is the lab name used when none is given.
const DefaultName = "demo"

// Iface is the name of the veth end inside each lab host.
const Iface = "lab0"

// Addresses of the two hosts on the lab link. Every lab uses the same ones:
// the namespaces isolate them.
const (
	AddrA = "198.18.0.1"
	AddrB = "198.18.0.2"
)

// prefixLen is the length of the lab subnet, 198.18.0.0/24.
const prefixLen = 24

// MaxNameLen is the longest lab name accepted. With it, lr-NAME-a is at most
// 15 bytes, so it is a valid interface name as well as a namespace name
// (IFNAMSIZ is 16 with the NUL): host-side links named after the lab (a
// bridge for a third host, say) will always fit.
const MaxNameLen = 10

// ErrNeedRoot is returned by every operation when the process is not root.
var ErrNeedRoot = errors.New("lab needs root (network namespaces): run with sudo")

// Host names one end of a lab.
type Host string

// The two hosts of a lab.
const (
	A Host = "a"
	B Host = "b"
)

// hosts lists both ends in a fixed order; index 0 is a, 1 is b.
func hosts() [2]Host { return [2]Host{A, B} }

// ParseHost accepts "a" or "b", and the hosts of a lab of many hosts:
// "h01" to "h64" and its switch, "sw".
func ParseHost(s string) (Host, error) {
	switch h := Host(s); {
	case h == A, h == B, h == Switch, h.Index() > 0:
		return h, nil
	}
	return "", fmt.Errorf("unknown lab host %q (a lab has hosts a and b; a lab of many hosts has h01 to h%02d and sw)", s, MaxHosts)
}

// Addr returns the host's address on the lab link, without prefix length.
func (h Host) Addr() string {
	switch {
	case h == B:
		return AddrB
	case h == Switch:
		return SwitchAddr
	case h.Index() > 0:
		return manyAddr(h.Index())
	}
	return AddrA
}

// Namespace returns the name of the network namespace of host h of lab name,
// as `ip netns list` shows it.
func Namespace(name string, h Host) string { return "lr-" + name + "-" + string(h) }

// ValidateName reports whether name can name a lab: lower-case letters,
// digits and '-', starting with a letter or digit, at most MaxNameLen long.
func ValidateName(name string) error {
	if name == "" {
		return errors.New("lab name is empty")
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("lab name %q is %d characters, the limit is %d (so that %s fits an interface name)",
			name, len(name), MaxNameLen, Namespace("NAME", A))
	}
	for i, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' && i > 0
		if !ok {
			return fmt.Errorf("lab name %q: use lower-case letters, digits and '-', starting with a letter or digit", name)
		}
	}
	return nil
}

// Scenario names a shape of the lab link.
type Scenario string

// The scenarios. See Summary for what each one does.
const (
	Healthy      Scenario = "healthy"
	Capped10G    Scenario = "capped-10g"
	MTUMismatch  Scenario = "mtu-mismatch"
	SmallBuffers Scenario = "small-buffers"
	// The scenarios that each plant one limit of a run from host a to
	// host b, for the gap model (end.gap) to name.
	SmallSndbuf Scenario = "small-sndbuf"
	SmallRcvbuf Scenario = "small-rcvbuf"
	Shaped      Scenario = "shaped"
	// BusyReceiver plants a busy loop on the receiver's CPU (busy.go).
	BusyReceiver Scenario = "busy-receiver"
	// Pacing caps each flow host a sends with fq's maxrate.
	Pacing Scenario = "pacing"
)

// Scenarios returns every scenario, the default first.
func Scenarios() []Scenario {
	return []Scenario{Healthy, Capped10G, MTUMismatch, SmallBuffers, SmallSndbuf, SmallRcvbuf, Shaped, BusyReceiver, Pacing}
}

// ParseScenario accepts a scenario name.
func ParseScenario(s string) (Scenario, error) {
	for _, sc := range Scenarios() {
		if string(sc) == s {
			return sc, nil
		}
	}
	names := make([]string, 0, len(Scenarios()))
	for _, sc := range Scenarios() {
		names = append(names, string(sc))
	}
	return "", fmt.Errorf("unknown scenario %q (one of %s)", s, strings.Join(names, ", "))
}

// Summary says in one line what the scenario does to the lab.
func (s Scenario) Summary() string {
	switch s {
	case Healthy:
		return "MTU 9000 on both ends, no shaping, kernel-default socket buffers"
	case Capped10G:
		return "tbf at 10 Gbit/s on both ends' egress (a link or PCIe ceiling)"
	case MTUMismatch:
		return "MTU 9000 on a, 1500 on b"
	case SmallBuffers:
		return "tcp_rmem and tcp_wmem max 65536 in host b"
	case SmallSndbuf:
		return "tcp_wmem max 65536 in host a, the sender: the send buffer limits"
	case SmallRcvbuf:
		return "tcp_rmem max 65536 in host b, the receiver: the receive window limits"
	case Shaped:
		return "tbf at 2 Gbit/s on host a's egress only (--rate changes it): the path's rate limits"
	case BusyReceiver:
		cpu := BusyCPU()
		return fmt.Sprintf("a busy loop pinned to CPU %d (the last online) in host b: with bench -A 0,%d the receiver shares it", cpu, cpu)
	case Pacing:
		return "fq on host a's egress, maxrate 1 Gbit/s per flow (--rate changes it): pacing limits each flow"
	}
	return "unknown scenario"
}

// ErrNoFq is returned by an up that asks for fq (the pacing scenario) on
// a kernel built without it.
var ErrNoFq = errors.New("this kernel has no fq qdisc (CONFIG_NET_SCH_FQ; where it is a module, 'modprobe sch_fq'): the pacing scenario needs it; 'bench --fq-rate' paces from the socket instead")

// Rate is a line rate in bits per second.
type Rate uint64

// Bounds for ParseRate: below 1 Mbit/s nothing in linerate is interesting,
// and 10 Tbit/s is far beyond any NIC (or veth) that exists.
const (
	minRate Rate = 1_000_000
	maxRate Rate = 10_000_000_000_000
)

// ParseRate reads a rate written as tc writes bit rates, with SI multipliers:
// "400mbit", "10gbit", "2.5gbit", or with the unit shortened to one letter,
// "25G". Bare numbers and "bps" units are refused because tc reads both as
// bytes per second, a factor of 8 that nobody should have to guess.
func ParseRate(s string) (Rate, error) {
	in := strings.ToLower(strings.TrimSpace(s))
	in = strings.TrimSuffix(in, "/s")
	i := strings.IndexFunc(in, func(c rune) bool { return (c < '0' || c > '9') && c != '.' })
	if i == 0 || in == "" {
		return 0, fmt.Errorf("rate %q: write a number and a unit, e.g. 10gbit, 25G, 400mbit", s)
	}
	if i < 0 {
		return 0, fmt.Errorf("rate %q has no unit (tc would read bytes/s): write e.g. 10gbit or 25G", s)
	}
	num, unit := in[:i], strings.TrimSpace(in[i:])
	mult := map[string]float64{
		"bit": 1, "k": 1e3, "kbit": 1e3, "m": 1e6, "mbit": 1e6,
		"g": 1e9, "gbit": 1e9, "t": 1e12, "tbit": 1e12,
	}[unit]
	if mult == 0 {
		if strings.HasSuffix(unit, "bps") || unit == "b" {
			return 0, fmt.Errorf("rate %q: %q is ambiguous (tc reads it as bytes/s): write e.g. 10gbit", s, unit)
		}
		return 0, fmt.Errorf("rate %q: unknown unit %q (use kbit, mbit, gbit, tbit or k, m, g, t)", s, unit)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("rate %q: %q is not a number", s, num)
	}
	bps := v * mult
	if math.IsNaN(bps) || bps < float64(minRate) || bps > float64(maxRate) {
		return 0, fmt.Errorf("rate %q is out of range (%s to %s)", s, minRate, maxRate)
	}
	return Rate(math.Round(bps)), nil
}

// String writes the rate the way ParseRate reads it: "10gbit", "2.5gbit".
func (r Rate) String() string {
	units := []struct {
		div  float64
		name string
	}{{1e12, "tbit"}, {1e9, "gbit"}, {1e6, "mbit"}, {1e3, "kbit"}}
	for _, u := range units {
		if float64(r) >= u.div {
			return strconv.FormatFloat(float64(r)/u.div, 'f', -1, 64) + u.name
		}
	}
	return strconv.FormatUint(uint64(r), 10) + "bit"
}

// MTU limits of a veth device.
const (
	minMTU = 68
	maxMTU = 65535
)

// Config says which lab to bring up and how to shape it.
type Config struct {
	// Name of the lab; "" means DefaultName.
	Name string
	// Scenario; "" means Healthy.
	Scenario Scenario
	// Rate, when not zero, shapes both ends with tbf at this rate,
	// whatever the scenario (it replaces capped-10g's 10 Gbit/s); with
	// shaped, host a's egress only; with pacing, it is the per-flow
	// maxrate of host a's fq instead (at most MaxPacingRate).
	Rate Rate
	// BufferMax, when not zero, replaces small-buffers' 64 KiB as the
	// tcp_rmem and tcp_wmem maximum of host b (at least 4096; other
	// scenarios ignore it).
	BufferMax int
	// MTU, when not zero, replaces the scenario's MTU on both ends;
	// for mtu-mismatch only on a, so that the mismatch stays.
	MTU int
	// Hosts, when not zero, makes a lab of many hosts (MinHosts to
	// MaxHosts) joined by a bridge instead of the two-host lab.
	Hosts int
	// Queues, when above 1, gives each veth end that many TX and RX
	// queues (0 or 1: the kernel's default, whatever an existing lab has), with RPS and XPS steering queue i to CPU i (modulo the
	// CPUs): flows then land on different CPUs by their queue, as on a
	// multi-queue NIC (see queues.go).
	Queues int

	// afterStep, when set, is called after each applied change with its
	// description. Tests use it to kill or interrupt an up half-way.
	afterStep func(desc string)
}

// withDefaults fills in the defaults and validates c. It creates nothing.
func (c Config) withDefaults() (Config, error) {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if err := ValidateName(c.Name); err != nil {
		return c, err
	}
	if c.Scenario == "" {
		c.Scenario = Healthy
	}
	if _, err := ParseScenario(string(c.Scenario)); err != nil {
		return c, err
	}
	if c.Rate != 0 && (c.Rate < minRate || c.Rate > maxRate) {
		return c, fmt.Errorf("rate %s is out of range (%s to %s)", c.Rate, minRate, maxRate)
	}
	if c.Scenario == Pacing && c.Rate > MaxPacingRate {
		return c, fmt.Errorf("rate %s is above fq's highest maxrate, %s (the kernel takes it in bytes/s as 32 bits)", c.Rate, MaxPacingRate)
	}
	if c.BufferMax != 0 && (c.BufferMax < minBufferMax || c.BufferMax > maxBufferMax) {
		return c, fmt.Errorf("buffer maximum %d is out of range (%d to %d bytes)", c.BufferMax, minBufferMax, maxBufferMax)
	}
	if c.MTU != 0 && (c.MTU < minMTU || c.MTU > maxMTU) {
		return c, fmt.Errorf("MTU %d is out of range (%d to %d for a veth)", c.MTU, minMTU, maxMTU)
	}
	if c.Queues < 0 || c.Queues > maxQueues {
		return c, fmt.Errorf("queues %d is out of range (1 to %d)", c.Queues, maxQueues)
	}
	return c, c.checkHosts()
}

// Sysctls the lab manages, as paths under /proc/sys, with the kernel's
// defaults. A new namespace copies tcp_rmem/tcp_wmem from the host's current
// values, not from these defaults, so every scenario writes them explicitly:
// a lab must not depend on how its host was tuned.
const (
	sysctlRmem = "net/ipv4/tcp_rmem"
	sysctlWmem = "net/ipv4/tcp_wmem"
)

// kernelDefaults are the values Linux boots with on a machine with enough
// memory (net/ipv4/tcp.c: tcp_init).
func kernelDefaults() map[string]string {
	return map[string]string{
		sysctlRmem: "4096 131072 6291456",
		sysctlWmem: "4096 16384 4194304",
	}
}

// sysctlName turns "net/ipv4/tcp_rmem" into "net.ipv4.tcp_rmem".
func sysctlName(path string) string { return strings.ReplaceAll(path, "/", ".") }

// spec is what a lab should look like; index 0 is host a, 1 host b.
type spec struct {
	MTU  [2]int
	Rate [2]Rate // each host's egress; 0: no shaping
	Pace [2]Rate // each host's egress fq's per-flow maxrate; 0: no fq
	// BusyCPU is the CPU host b's busy loop is pinned to; -1: no loop.
	BusyCPU int
	Sysctl  [2]map[string]string
	Queues  int // 1: the kernel's default
}

// The rates of capped-10g, shaped and pacing.
const (
	rate10G    Rate = 10_000_000_000
	rateShaped Rate = 2_000_000_000
	ratePacing Rate = 1_000_000_000
)

// MaxPacingRate is the highest per-flow maxrate fq takes: the kernel
// reads it in bytes per second as a u32, ~0 meaning none.
const MaxPacingRate Rate = (1<<32 - 2) * 8

// The small-buffers maximum (64 KiB, docs/architecture.md), the bounds of
// Config.BufferMax (tcp_rmem's minimum is 4096; a maximum past 1 GiB is no
// small buffer), and the scenarios' MTUs.
const (
	smallBufferMax = 65536
	minBufferMax   = 4096
	maxBufferMax   = 1 << 30
	jumboMTU       = 9000
	plainMTU       = 1500
)

// spec resolves c (already defaulted) into the wanted shape.
func (c Config) spec() spec {
	s := spec{MTU: [2]int{jumboMTU, jumboMTU}, Queues: max(c.Queues, 1), BusyCPU: -1}
	s.Sysctl[0], s.Sysctl[1] = kernelDefaults(), kernelDefaults()
	switch c.Scenario {
	case Capped10G:
		s.Rate = [2]Rate{rate10G, rate10G}
	case Shaped:
		s.Rate[0] = rateShaped
	case Pacing:
		s.Pace[0] = ratePacing
		if c.Rate != 0 {
			s.Pace[0] = c.Rate
		}
	case BusyReceiver:
		s.BusyCPU = BusyCPU()
	case MTUMismatch:
		s.MTU[1] = plainMTU
	case SmallBuffers:
		// The default (middle) value must not exceed the maximum, or the
		// kernel would start every socket above the cap.
		limit := smallBufferMax
		if c.BufferMax != 0 {
			limit = c.BufferMax
		}
		s.Sysctl[1][sysctlRmem] = fmt.Sprintf("4096 %d %d", limit, limit)
		s.Sysctl[1][sysctlWmem] = fmt.Sprintf("4096 %d %d", min(16384, limit), limit)
	case SmallSndbuf:
		s.Sysctl[0][sysctlWmem] = fmt.Sprintf("4096 16384 %d", smallBufferMax)
	case SmallRcvbuf:
		s.Sysctl[1][sysctlRmem] = fmt.Sprintf("4096 %d %d", smallBufferMax, smallBufferMax)
	}
	switch {
	case c.Scenario == Pacing:
	case c.Rate != 0 && c.Scenario == Shaped:
		s.Rate[0] = c.Rate
	case c.Rate != 0:
		s.Rate = [2]Rate{c.Rate, c.Rate}
	}
	if c.MTU != 0 {
		s.MTU[0] = c.MTU
		if c.Scenario != MTUMismatch {
			s.MTU[1] = c.MTU
		}
	}
	return s
}

// lineRate is the rate c shapes every host's lab0 to, standing in for a
// NIC's line rate; 0 when c does not shape the lab.
func (c Config) lineRate() Rate {
	if c.Hosts != 0 {
		return c.manySpec().rate
	}
	return c.spec().lineRate()
}

// lineRate is the rate s shapes both hosts' lab0 to alike, standing in
// for a NIC's line rate; 0 when it shapes neither, or one end only (a
// fault planted on a path, as the shaped scenario's).
func (s spec) lineRate() Rate {
	if s.Rate[0] == s.Rate[1] {
		return s.Rate[0]
	}
	return 0
}

// requireRoot returns ErrNeedRoot unless the process runs as root.
func requireRoot() error {
	if os.Geteuid() != 0 {
		return ErrNeedRoot
	}
	return nil
}
