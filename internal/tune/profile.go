package tune

import (
	"time"

	"github.com/linerate/linerate/internal/limits"
)

// What each profile sets, and where the value comes from. Only settings
// that can be applied and reverted exactly are here; the rest is advice
// (Notes). Settings marked "finding" are made only when doctor raised it.
//
//	setting                         throughput                       latency                          source
//	rmem_max, wmem_max,             largest need, power of two       each limit's need                finding sysctl.socket_buffers_small; limits.WindowModel;
//	tcp_rmem/tcp_wmem max           ≥ 4 MiB (WindowModel.BufferSize) — no raise beyond need           fasterdata 100G (buffers up to 2 GB); tuned network-throughput (16 MiB)
//	tcp_slow_start_after_idle       0                                —                                tuned network-throughput (2026, Cloudflare)
//	net.core.busy_read, busy_poll   —                                50 µs                            tuned network-latency
//	tcp_fastopen                    —                                3                                tuned network-latency
//	scaling_governor                performance (NIC's node)         performance (NIC's node)         finding cpu.governor_not_performance; tuned *-performance
//	IRQ affinity                    NIC's node, app's L3, off app    same                             findings irq.*; ours (the x4 home lab)
//	irqbalance                      ban the moved IRQs               same                             finding irqbalance.running; irqbalance(1)
//	channels (ethtool -L)           min(8, node CPUs)                same                             finding queues.too_few; Intel tuning guide
//	rings (ethtool -G)              hardware maximum                 left alone (less queueing)       fasterdata 100G; tuned#660
//	MTU                             only with --mtu                  only with --mtu                  finding mtu.not_jumbo (advice without --mtu)
//	coalescing (ethtool -C)         left to the driver               advice: adaptive off, usecs 0    Intel 700-series guide
//
// Coalescing stays advice: which parameters a driver accepts cannot be
// asked through the ioctl before writing, so a change could fail half-way
// on one NIC and not another.

// setting is one sysctl a profile sets whatever the findings.
type setting struct {
	key, value, source string
}

// profileSysctls returns the profile's own sysctls.
func profileSysctls(p Profile) []setting {
	if p == Latency {
		return []setting{
			{"net.core.busy_read", "50", "tuned network-latency: busy_read=50"},
			{"net.core.busy_poll", "50", "tuned network-latency: busy_poll=50"},
			{"net.ipv4.tcp_fastopen", "3", "tuned network-latency: tcp_fastopen=3"},
		}
	}
	return []setting{
		{"net.ipv4.tcp_slow_start_after_idle", "0", "tuned network-throughput: tcp_slow_start_after_idle=0"},
	}
}

// bufferTarget is the socket buffer limit a profile wants for one limit
// at a rate and RTT, from the host's window model (doctor.BufferModel,
// the model doctor's finding used): throughput takes m.BufferSize (the
// largest need, a power of two, at least 4 MiB); latency this limit's own
// need rounded up to a page, since a larger buffer only lets a queue
// build.
func bufferTarget(p Profile, m limits.WindowModel, use limits.BufferUse, rate limits.Gbps, rtt time.Duration) (int64, string) {
	if p == Latency {
		const page = 4096
		b := m.Need(limits.BDP(rate, rtt), use)
		return (b + page - 1) / page * page, "what one flow needs (latency profile: no raise beyond need; " + m.Basis + ")"
	}
	return m.BufferSize(rate, rtt), "the largest need of one flow, a power of two (" + m.Basis + "; fasterdata, tuned network-throughput)"
}

// raisesRings reports whether the profile raises ring sizes to the
// hardware maximum.
func raisesRings(p Profile) bool { return p == Throughput }

// coalesceAdvice is the latency profile's interrupt-coalescing advice (the
// throughput profile leaves the driver's adaptive coalescing as it is).
func coalesceAdvice(iface string) string {
	return "for the lowest latency, turn interrupt coalescing off if the driver allows: ethtool -C " + iface + " adaptive-rx off rx-usecs 0 (not applied: check ethtool -c first; Intel 700-series tuning guide)"
}
