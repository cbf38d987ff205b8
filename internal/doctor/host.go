package doctor

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/limits"
	"github.com/linerate/linerate/internal/placement"
)

// bufferRate is the line rate buffers are judged against: the fastest
// selected NIC's, or 10 Gbit/s — the slowest link linerate is for — when
// none is known (a veth without shaping). basis says which, for the
// evidence; assumed is set when the rate is the 10 Gbit/s guess.
func (d *diag) bufferRate() (rate limits.Gbps, basis string, assumed bool) {
	var best limits.Gbps
	who := ""
	for _, v := range d.nics {
		if v.line > best {
			best, who = v.line, v.Interface
		}
	}
	if best == 0 {
		return 10, "no line rate known; assuming 10 Gbit/s", true
	}
	return best, fmt.Sprintf("%s at %s Gbit/s", who, trimFloat(float64(best))), false
}

// BufferModel is how inv's kernel turns socket buffer limits into TCP
// window (limits.KernelWindow, from its release and tcp_adv_win_scale):
// doctor's rule and tune's change both size buffers with it.
func BufferModel(inv *inventory.Inventory) limits.WindowModel {
	scale, ok := inv.SysctlInt("net.ipv4.tcp_adv_win_scale")
	return limits.KernelWindow(inv.Host.Kernel, scale, ok)
}

// socketBuffersSmall: a socket buffer limit below what one TCP flow needs
// to fill the line rate at the RTT. Threshold, estimate and fix all come
// from one model (limits.WindowModel): a limit is small when its Window
// is below the BDP; a flow tops out at Window × 8 / RTT; the fix is the
// largest need rounded up to a power of two.
func socketBuffersSmall(d *diag) []Finding {
	rate, basis, assumed := d.bufferRate()
	m := BufferModel(d.inv)
	rtt := d.opts.RTT
	bdp := limits.BDP(rate, rtt)
	rec := m.BufferSize(rate, rtt)
	small, needs := map[string]any{}, map[string]any{}
	var names, parts []string
	for _, k := range limits.BufferKeys() {
		v, ok := d.inv.SysctlInt(k.Key)
		need := m.Need(bdp, k.Use)
		if ok && v < need {
			small[k.Key], needs[k.Key] = v, need
			names = append(names, k.Key)
			parts = append(parts, fmt.Sprintf("%s %s of the %s it needs", keyLabel(k.Key), fmtBytes(v), fmtBytes(need)))
		}
	}
	if len(names) == 0 {
		return nil
	}
	ev := map[string]any{
		"line_rate": basis, "rtt_ms": float64(rtt.Microseconds()) / 1000, "bdp_bytes": bdp,
		"below_need": small, "needed_bytes": needs, "recommended_bytes": rec,
		"window_share": m.Share(limits.AutoReceive), "window_basis": m.Basis,
	}
	autoG, explicitG := d.flowCaps(m)
	// The flows' caps as numbers, so that a reader holding a measured
	// RTT (the report, beside a bench) can judge the same buffers at it:
	// a cap scales with 1/RTT.
	if autoG >= 0 {
		ev["autotuned_flow_gbps"] = autoG
	}
	if explicitG >= 0 {
		ev["set_buffer_flow_gbps"] = explicitG
	}
	auto, explicit := capText(autoG, rate), capText(explicitG, rate)
	fill, why := basis, ""
	if assumed {
		fill, why = "10 Gbit/s", "no line rate is known here, so 10 Gbit/s is assumed; "
	}
	return []Finding{{
		ID: "sysctl.socket_buffers_small", Severity: Warning, Subject: "sysctl",
		Summary: fmt.Sprintf("socket buffers too small for one flow to fill %s × %s RTT (%sBDP %s; %s): %s. An autotuned flow %s, one that sets its buffer (iperf3 -w) %s",
			fill, rtt, why, fmtBytes(bdp), shareWords(m), strings.Join(parts, ", "), auto, explicit),
		Evidence: ev,
		Fix:      d.bufferFix(m, bdp, rec),
	}}
}

// shareWords says how much of a buffer is window under m.
func shareWords(m limits.WindowModel) string {
	r, w := m.Share(limits.AutoReceive), m.Share(limits.AutoSend)
	if r == w && r == 0.5 {
		return "a buffer holds about twice its window"
	}
	return fmt.Sprintf("%.0f%% of a receive buffer and %.0f%% of a send buffer is window", r*100, w*100)
}

// keyLabel names the value of a buffer sysctl that counts: the maximum
// of a triple ("net.ipv4.tcp_rmem max").
func keyLabel(key string) string {
	if strings.HasPrefix(key, "net.ipv4.tcp_") {
		return key + " max"
	}
	return key
}

// bufferFix raises every limit below rec to rec (never lowering one), keeps
// the triples' min and default, persists it and reads it back.
func (d *diag) bufferFix(m limits.WindowModel, bdp, rec int64) []Fix {
	var set, conf, keys []string
	for _, k := range limits.BufferKeys() {
		if v, ok := d.inv.SysctlInt(k.Key); ok && v >= rec {
			continue
		}
		val := strconv.FormatInt(rec, 10)
		if t, ok := d.inv.Sysctl[k.Key].([]int64); ok && len(t) == 3 {
			val = fmt.Sprintf("%d %d %d", t[0], t[1], rec)
		} else if k.Use == limits.AutoReceive || k.Use == limits.AutoSend {
			val = fmt.Sprintf("4096 %d %d", map[bool]int64{true: 131072, false: 16384}[k.Use == limits.AutoReceive], rec)
		}
		set = append(set, k.Key+"="+val)
		conf = append(conf, k.Key+"="+val)
		keys = append(keys, k.Key)
	}
	var need int64
	for _, k := range limits.BufferKeys() {
		need = max(need, m.Need(bdp, k.Use))
	}
	raise := do(fmt.Sprintf("Raise them to %s (%d bytes: the largest need, %s, rounded up to a power of two)", fmtBytes(rec), rec, fmtBytes(need)),
		append([]string{"sysctl", "-w"}, set...)...).
		persist("Keep them across reboots",
			shell(Quote(append([]string{"printf", `%s\n`}, conf...))+" > /etc/sysctl.d/90-linerate.conf")...).
		verify("Read them back", append([]string{"sysctl"}, keys...)...)
	return []Fix{raise,
		do("Or let linerate make the change, journaled (undo it with linerate tune revert --last)", "linerate", "tune", "--apply"),
	}
}

// flowCaps returns the window-limited rate of one flow at the RTT in
// Gbit/s, negative when unknown: autotuned flows are capped by tcp_rmem/tcp_wmem max, flows that
// set SO_RCVBUF/SO_SNDBUF by rmem_max/wmem_max (doubled by the kernel).
func (d *diag) flowCaps(m limits.WindowModel) (auto, explicit float64) {
	rate := func(uses ...limits.BufferUse) float64 {
		lo := limits.Gbps(-1)
		for _, k := range limits.BufferKeys() {
			if !slices.Contains(uses, k.Use) {
				continue
			}
			if v, ok := d.inv.SysctlInt(k.Key); ok {
				if r := m.Rate(v, k.Use, d.opts.RTT); lo < 0 || r < lo {
					lo = r
				}
			}
		}
		return float64(lo)
	}
	return rate(limits.AutoReceive, limits.AutoSend), rate(limits.SetReceive, limits.SetSend)
}

// capText says what one flow reaches at the RTT, window-limited, as a
// predicate: "tops out near 1.7 Gbit/s", "tops out near ? Gbit/s" when
// unknown (negative), or "can fill it" at or above the line rate — a
// window past the BDP does not carry more than the line, and "near 33.6
// Gbit/s" on a 15 Gbit/s link would read as a figure the flow reaches.
func capText(g float64, line limits.Gbps) string {
	switch {
	case g < 0:
		return "tops out near ? Gbit/s"
	case g >= float64(line):
		return "can fill it"
	}
	return "tops out near " + strconv.FormatFloat(g, 'f', 1, 64) + " Gbit/s"
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
// than min(8, CPUs of its NUMA node): RSS cannot spread the load. The
// target is capped at the driver's maximum where the live channels say it.
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
		ev := map[string]any{"rx_queues": v.Queues.RX, "tx_queues": v.Queues.TX, "node_cpus": cpulist.Format(local), "wanted": want}
		target, argv := queueTarget(v, want)
		ev["target"] = target
		fixes := []Fix{}
		switch {
		case target <= v.Queues.RX:
			fixes = append(fixes, do(fmt.Sprintf("The driver allows no more than %d queues: spread the softirq work with RPS instead (/sys/class/net/%s/queues/rx-*/rps_cpus), or use a NIC with more queues", target, v.Interface)))
		default:
			fixes = append(fixes,
				do(fmt.Sprintf("Raise the queues to %d, one per CPU of the NIC's node (up to 8)", target), argv...).
					persist("Queue counts reset when the driver reloads: set them at boot (NetworkManager ethtool.channels-combined, systemd-networkd CombinedChannels=, or a udev rule)").
					verify("Read them back (and the maximum the driver allows)", "ethtool", "-l", v.Interface),
				do("Then place the new queues' IRQs, or let linerate do both, journaled", "linerate", "tune", "--iface", v.Interface, "--apply"))
		}
		out = append(out, Finding{
			ID: "queues.too_few", Severity: Warning, Subject: v.Interface,
			Summary: fmt.Sprintf("%s has %d receive queue%s for a %s Gbit/s link: one CPU takes every packet's interrupt and softirq (want ≥ %d: min(8, %d CPUs on its NUMA node))",
				v.Interface, v.Queues.RX, plural(v.Queues.RX), trimFloat(float64(v.line)), want, len(local)),
			Evidence: ev,
			Fix:      fixes,
		})
	}
	return out
}

// queueTarget caps the wanted queue count at the driver's maximum, when
// the live channels give it, and returns the ethtool -L command: combined
// channels, or RX and TX apart for a driver that has only those (veth).
func queueTarget(v *nicView, want int) (int, []string) {
	c := v.Channels
	argv := []string{"ethtool", "-L", v.Interface}
	if c == nil {
		return want, append(argv, "combined", strconv.Itoa(want))
	}
	if c.CombinedMax != nil && *c.CombinedMax > 0 {
		want = min(want, int(*c.CombinedMax))
		return want, append(argv, "combined", strconv.Itoa(want))
	}
	if c.RXMax != nil && c.TXMax != nil && *c.RXMax > 0 && *c.TXMax > 0 {
		want = min(want, int(*c.RXMax), int(*c.TXMax))
		return want, append(argv, "rx", strconv.Itoa(want), "tx", strconv.Itoa(want))
	}
	return want, append(argv, "combined", strconv.Itoa(want))
}

// localCPUs returns the CPUs of a NIC's NUMA node, or every online CPU
// when the node is unknown (-1) or the host has one node.
func (d *diag) localCPUs(v *nicView) []int { return placement.LocalCPUs(&d.inv.CPU, v.NIC) }

// governorNotPerformance: a CPU local to a selected NIC scales its clock
// down (the perftest warning of the ConnectX-5 RoCE baseline report:
// 5.5 GHz vs 600 MHz).
func governorNotPerformance(d *diag) []Finding {
	local := map[int]bool{}
	for _, v := range d.nics {
		markAll(local, d.localCPUs(v))
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
		parts = append(parts, fmt.Sprintf("%s on %s", g, cpusPhrase(c)))
		govs[g] = cpulist.Format(c)
	}
	slices.Sort(parts)
	list := cpulist.Format(cpus)
	return []Finding{{
		ID: "cpu.governor_not_performance", Severity: Warning, Subject: "cpu",
		Summary:  fmt.Sprintf("CPUs near the NIC scale their clock down (%s): throughput and latency vary with the clock", strings.Join(parts, "; ")),
		Evidence: map[string]any{"governors": govs, "scaling_driver": d.inv.CPU.ScalingDriver},
		Fix: []Fix{
			do(fmt.Sprintf("Set the performance governor on %s", cpusPhrase(cpus)), "cpupower", "-c", list, "frequency-set", "-g", "performance").
				persist("The governor resets at boot: keep it with cpupower's service (/etc/default/cpupower) or tuned's throughput-performance profile").
				verify("Read it back", "cpupower", "-c", list, "frequency-info", "-p"),
			do("Or without cpupower", shell(fmt.Sprintf("for c in %s; do echo performance > /sys/devices/system/cpu/cpu$c/cpufreq/scaling_governor; done", spaced(cpus)))...),
			do("Or let linerate make the change, journaled", "linerate", "tune", "--apply"),
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
	var bans []string
	for _, v := range d.nics {
		for _, q := range v.IRQs {
			bans = append(bans, fmt.Sprintf("--banirq=%d", q.IRQ))
		}
	}
	fixes := []Fix{}
	if len(bans) > 0 {
		// echo joins its words with spaces, so the quotes are escaped
		// rather than opened: the line can then be wrapped between bans.
		script := `f=/etc/default/irqbalance; [ -e $f ] || f=/etc/sysconfig/irqbalance; echo IRQBALANCE_ARGS=\"` +
			strings.Join(bans, " ") + `\" >> $f && systemctl restart irqbalance`
		fixes = append(fixes, do("Ban the NIC's IRQs so that irqbalance leaves their pins alone: append IRQBALANCE_ARGS to its configuration (/etc/default/irqbalance on Debian and Ubuntu, /etc/sysconfig/irqbalance on RHEL) and restart it; a line already there sets its own arguments, merge the two by hand", shell(script)...).
			verify("Check that it runs with the bans", "ps", "-o", "args=", "-C", "irqbalance"))
	} else {
		fixes = append(fixes, do("Keep irqbalance off the CPUs you pin the NIC's IRQs to: set IRQBALANCE_BANNED_CPULIST to them in /etc/default/irqbalance (Debian, Ubuntu) or /etc/sysconfig/irqbalance (RHEL), then restart it", "systemctl", "restart", "irqbalance"))
	}
	fixes = append(fixes, do("Or let linerate pin and ban them, journaled (it names the file it changes)", "linerate", "tune", "--apply"))
	return []Finding{{
		ID: "irqbalance.running", Severity: Info, Subject: "irqbalance",
		Summary:  fmt.Sprintf("irqbalance is running (pid %s): it rewrites IRQ affinity every 10 s, undoing manual pins", joinInts(ib.PIDs)),
		Evidence: map[string]any{"pids": ib.PIDs},
		Fix:      fixes,
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
