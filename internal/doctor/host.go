package doctor

import (
	"fmt"
	"github.com/linerate/linerate/internal/placement"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/limits"
)

// bufferRate is the line rate buffers are judged against: the fastest
// selected NIC's, or 10 Gbit/s — the slowest link linerate is for — when
// none is known (a veth without shaping).
func (d *diag) bufferRate() (limits.Gbps, string) {
	var best limits.Gbps
	who := ""
	for _, v := range d.nics {
		if v.line > best {
			best, who = v.line, v.Interface
		}
	}
	if best == 0 {
		return 10, "no line rate known; assuming 10 Gbit/s"
	}
	return best, fmt.Sprintf("%s at %s Gbit/s", who, trimFloat(float64(best)))
}

// socketBuffersSmall: a socket buffer limit below line rate × RTT caps one
// TCP flow below line rate (window / RTT).
func socketBuffersSmall(d *diag) []Finding {
	rate, basis := d.bufferRate()
	need := limits.BDP(rate, d.opts.RTT)
	rec := limits.BufferSize(rate, d.opts.RTT)
	small := map[string]any{}
	var names []string
	for _, k := range []string{"net.core.rmem_max", "net.core.wmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"} {
		v, ok := d.inv.SysctlInt(k)
		if ok && v < need {
			small[k] = v
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return nil
	}
	ev := map[string]any{
		"line_rate": basis, "rtt_ms": float64(d.opts.RTT.Microseconds()) / 1000,
		"bdp_bytes": need, "below_bdp": small, "recommended_bytes": rec,
	}
	autoGbps, explicitGbps := d.flowCaps()
	tr, _ := d.inv.Sysctl["net.ipv4.tcp_rmem"].([]int64)
	tw, _ := d.inv.Sysctl["net.ipv4.tcp_wmem"].([]int64)
	rmemMid, wmemMid := int64(131072), int64(16384)
	if len(tr) == 3 {
		rmemMid = tr[1]
	}
	if len(tw) == 3 {
		wmemMid = tw[1]
	}
	return []Finding{{
		ID: "sysctl.socket_buffers_small", Severity: Warning, Subject: "sysctl",
		Summary: fmt.Sprintf("%s below the %s one flow needs (%s × %s RTT): an autotuned flow tops out near %s Gbit/s, one that sets its buffer (iperf3 -w) near %s Gbit/s",
			strings.Join(names, ", "), fmtBytes(need), basis, d.opts.RTT, autoGbps, explicitGbps),
		Evidence: ev,
		Fix: []string{
			fmt.Sprintf("sysctl -w net.core.rmem_max=%d net.core.wmem_max=%d", rec, rec),
			fmt.Sprintf("sysctl -w net.ipv4.tcp_rmem='4096 %d %d' net.ipv4.tcp_wmem='4096 %d %d'", rmemMid, rec, wmemMid, rec),
			fmt.Sprintf("persist: printf 'net.core.rmem_max=%d\\nnet.core.wmem_max=%d\\nnet.ipv4.tcp_rmem=4096 %d %d\\nnet.ipv4.tcp_wmem=4096 %d %d\\n' > /etc/sysctl.d/90-linerate.conf",
				rec, rec, rmemMid, rec, wmemMid, rec),
			"or let linerate apply and journal it: linerate tune --apply (revert: linerate tune revert --last)",
		},
	}}
}

// flowCaps returns the window-limited rate of one flow at the RTT, as
// text: autotuned flows are capped by tcp_rmem/tcp_wmem max, flows that
// set SO_RCVBUF/SO_SNDBUF by rmem_max/wmem_max.
func (d *diag) flowCaps() (auto, explicit string) {
	rate := func(keys ...string) string {
		var lo int64 = -1
		for _, k := range keys {
			if v, ok := d.inv.SysctlInt(k); ok && (lo < 0 || v < lo) {
				lo = v
			}
		}
		if lo < 0 {
			return "?"
		}
		return strconv.FormatFloat(float64(lo)*8/d.opts.RTT.Seconds()/1e9, 'f', 1, 64)
	}
	return rate("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"), rate("net.core.rmem_max", "net.core.wmem_max")
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// queuesTooFew: a link of 25 Gbit/s or more with fewer receive queues
// than min(8, CPUs of its NUMA node): RSS cannot spread the load.
func queuesTooFew(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		if v.line < 25 || v.Queues.RX == 0 {
			continue
		}
		local := d.localCPUs(v)
		want := min(8, len(local))
		if v.Queues.RX >= want {
			continue
		}
		out = append(out, Finding{
			ID: "queues.too_few", Severity: Warning, Subject: v.Interface,
			Summary: fmt.Sprintf("%s has %d receive queue(s) for a %s Gbit/s link: one CPU takes every packet's interrupt and softirq (want ≥ %d: min(8, %d CPUs on its NUMA node))",
				v.Interface, v.Queues.RX, trimFloat(float64(v.line)), want, len(local)),
			Evidence: map[string]any{"rx_queues": v.Queues.RX, "tx_queues": v.Queues.TX, "node_cpus": cpulist.Format(local), "wanted": want},
			Fix: []string{
				fmt.Sprintf("ethtool -l %s   (shows the maximum the NIC allows)", v.Interface),
				fmt.Sprintf("ethtool -L %s combined %d", v.Interface, want),
				"then place the new queues' IRQs: linerate tune --iface " + v.Interface,
			},
		})
	}
	return out
}

// localCPUs returns the CPUs of a NIC's NUMA node, or every online CPU
// when the node is unknown (-1) or the host has one node.
func (d *diag) localCPUs(v *nicView) []int { return placement.LocalCPUs(&d.inv.CPU, v.NIC) }

// governorNotPerformance: a CPU local to a selected NIC scales its clock
// down (seed 002's perftest warning: 5.5 GHz vs 600 MHz).
func governorNotPerformance(d *diag) []Finding {
	local := map[int]bool{}
	for _, v := range d.nics {
		for _, c := range d.localCPUs(v) {
			local[c] = true
		}
	}
	slow := map[string][]int{}
	var cpus []int
	for g, list := range d.inv.CPU.Governors {
		if g == "performance" {
			continue
		}
		for _, c := range list {
			if local[c] {
				slow[g] = append(slow[g], c)
				cpus = append(cpus, c)
			}
		}
	}
	if len(cpus) == 0 {
		return nil
	}
	slices.Sort(cpus)
	var parts []string
	govs := map[string]string{}
	for g, c := range slow {
		parts = append(parts, fmt.Sprintf("%s on CPUs %s", g, cpulist.Format(c)))
		govs[g] = cpulist.Format(c)
	}
	slices.Sort(parts)
	list := cpulist.Format(cpus)
	return []Finding{{
		ID: "cpu.governor_not_performance", Severity: Warning, Subject: "cpu",
		Summary:  fmt.Sprintf("CPUs near the NIC scale their clock down (%s): throughput and latency vary with the clock", strings.Join(parts, "; ")),
		Evidence: map[string]any{"governors": govs, "scaling_driver": d.inv.CPU.ScalingDriver},
		Fix: []string{
			fmt.Sprintf("cpupower -c %s frequency-set -g performance", list),
			fmt.Sprintf("or: for c in %s; do echo performance > /sys/devices/system/cpu/cpu$c/cpufreq/scaling_governor; done", spaced(cpus)),
			"or journaled and revertible: linerate tune --apply",
		},
	}}
}

// irqbalanceRunning: irqbalance rewrites manual IRQ affinity at its next
// pass (every 10 s), so pins must be made with it, not against it.
func irqbalanceRunning(d *diag) []Finding {
	ib := d.inv.Host.IRQBalance
	if !ib.Running {
		return nil
	}
	var irqs []string
	for _, v := range d.nics {
		for _, q := range v.IRQs {
			irqs = append(irqs, fmt.Sprintf("--banirq=%d", q.IRQ))
		}
	}
	ban := "IRQBALANCE_ARGS=\"" + strings.Join(irqs, " ") + "\""
	if len(irqs) == 0 {
		ban = "IRQBALANCE_BANNED_CPULIST=<the CPUs you pin the NIC's IRQs to>"
	}
	return []Finding{{
		ID: "irqbalance.running", Severity: Info, Subject: "irqbalance",
		Summary:  fmt.Sprintf("irqbalance is running (pid %s): it rewrites IRQ affinity every 10 s, undoing manual pins", joinInts(ib.PIDs)),
		Evidence: map[string]any{"pids": ib.PIDs},
		Fix: []string{
			fmt.Sprintf("to keep the NIC's pins, ban its IRQs: add %s to /etc/default/irqbalance (Debian, Ubuntu) or /etc/sysconfig/irqbalance (RHEL), then systemctl restart irqbalance", ban),
			"or let linerate tune pin and ban them for you (it names the file it changes)",
		},
	}}
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

// spaced writes CPUs space-separated, for shell loops.
func spaced(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = fmt.Sprint(c)
	}
	return strings.Join(s, " ")
}
