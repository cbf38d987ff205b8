package doctor

import (
	"fmt"
	"strconv"

	"github.com/linerate/linerate/internal/nicstats"
)

// NIC counter rules. Alone, doctor reads totals since the driver loaded
// and says so; bench passes the counters' growth during its runs
// (Options.CounterDeltas), which the rules then judge instead.

// delta returns the growth of cause on iface during a bench, if given.
func (d *diag) delta(iface string, cause nicstats.Cause) (uint64, bool) {
	c, ok := d.opts.CounterDeltas[iface]
	if !ok {
		return 0, false
	}
	return c.Get(cause)
}

// counted returns a cause's total and its growth during a bench, and
// whether either is above zero.
func (d *diag) counted(v *nicView, cause nicstats.Cause) (total, delta uint64, hasDelta, seen bool) {
	if v.Counters != nil {
		total, _ = v.Counters.Get(cause)
	}
	delta, hasDelta = d.delta(v.Interface, cause)
	if hasDelta {
		return total, delta, true, delta > 0
	}
	return total, 0, false, total > 0
}

// when words where a count comes from.
func when(hasDelta bool) string {
	if hasDelta {
		return "during the bench"
	}
	return "since the driver loaded"
}

// totalsNote ends a summary built on totals: doctor alone cannot say when
// the counter grew.
func totalsNote(hasDelta bool) string {
	if hasDelta {
		return ""
	}
	return " (Totals: doctor alone cannot say when they grew; bench measures what grows during a run.)"
}

// sources describes the counters behind a cause, from the delta if given.
func (d *diag) sources(v *nicView, cause nicstats.Cause, hasDelta bool) string {
	if hasDelta {
		return d.opts.CounterDeltas[v.Interface].Describe(cause)
	}
	if v.Counters == nil {
		return ""
	}
	return v.Counters.Describe(cause)
}

// nicRXNoBuffer: the NIC dropped frames for lack of host buffers: the RX
// ring was empty when they came (ring too small, too few queues, or the
// CPU serving the queue too slow).
func nicRXNoBuffer(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		total, delta, hasDelta, seen := d.counted(v, nicstats.RXNoBuffer)
		if !seen {
			continue
		}
		n := total
		if hasDelta {
			n = delta
		}
		ev := map[string]any{"dropped": n, "counters": d.sources(v, nicstats.RXNoBuffer, hasDelta), "when": when(hasDelta)}
		var fix []Fix
		if r := v.Rings; r != nil && r.RX != nil && r.RXMax != nil {
			ev["rx_ring"], ev["rx_ring_max"] = *r.RX, *r.RXMax
			if *r.RX < *r.RXMax {
				fix = append(fix, do(fmt.Sprintf("Raise the RX ring from %d to its maximum", *r.RX), "ethtool", "-G", v.Interface, "rx", strconv.FormatUint(uint64(*r.RXMax), 10)).
					verify("Read it back", "ethtool", "-g", v.Interface))
			}
		}
		if c := v.Channels; c != nil && c.Combined != nil && c.CombinedMax != nil && *c.Combined < *c.CombinedMax {
			fix = append(fix, do(fmt.Sprintf("Spread the load over more queues (now %d)", *c.Combined), "ethtool", "-L", v.Interface, "combined", strconv.FormatUint(uint64(min(*c.CombinedMax, 16)), 10)))
		}
		fix = append(fix,
			do(fmt.Sprintf("Keep the CPUs that serve %s's interrupts free of the application, and inside its NUMA node", v.Interface), "linerate", "tune", "--iface", v.Interface),
			do("Watch the drop counters (out_of_buffer, discard, missed)", "watch", "-n1", "ethtool", "-S", v.Interface))
		out = append(out, Finding{
			ID: "nic.rx_no_buffer", Severity: Warning, Subject: v.Interface,
			Summary: fmt.Sprintf("%s dropped %d frames %s because the host had no RX buffer ready (%s): the rings, the queues or the CPUs draining them cannot keep up.%s",
				v.Interface, n, when(hasDelta), d.sources(v, nicstats.RXNoBuffer, hasDelta), totalsNote(hasDelta)),
			Evidence: ev, Fix: fix,
		})
	}
	return out
}

// nicPHYErrors: FCS/CRC or symbol errors: the cable, the optics or a
// connector corrupts frames.
func nicPHYErrors(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		total, delta, hasDelta, seen := d.counted(v, nicstats.PHYErrors)
		if !seen {
			continue
		}
		n := total
		if hasDelta {
			n = delta
		}
		fix := []Fix{
			do("Clean and reseat the cable or modules at both ends"),
		}
		if t := v.Transceiver; t != nil && t.Readable {
			fix = append(fix, do(fmt.Sprintf("Check the module's RX power per lane (shown above); if one lane is weak or dark, clean its connector or replace %s", moduleName(t))))
		} else {
			fix = append(fix, do("Read the module's optical power", "ethtool", "-m", v.Interface))
		}
		fix = append(fix, do("If the errors keep growing, replace the cable or module; a DAC longer than its rating for the speed errs too"))
		out = append(out, Finding{
			ID: "nic.phy_errors", Severity: Warning, Subject: v.Interface,
			Summary: fmt.Sprintf("%s received %d frames with FCS or symbol errors %s (%s): the cable, optics or a connector corrupts them, and TCP pays in retransmits.%s",
				v.Interface, n, when(hasDelta), d.sources(v, nicstats.PHYErrors, hasDelta), totalsNote(hasDelta)),
			Evidence: map[string]any{"errors": n, "counters": d.sources(v, nicstats.PHYErrors, hasDelta), "when": when(hasDelta)},
			Fix:      fix,
		})
	}
	return out
}

// nicPauseFrames: flow control throttled the link. Pause sent during a
// bench (the NIC could not drain its buffers) is a warning; otherwise
// information.
func nicPauseFrames(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		txT, txD, hasDelta, txSeen := d.counted(v, nicstats.PauseTX)
		rxT, rxD, _, rxSeen := d.counted(v, nicstats.PauseRX)
		if !txSeen && !rxSeen {
			continue
		}
		tx, rx := txT, rxT
		if hasDelta {
			tx, rx = txD, rxD
		}
		sev := Info
		if hasDelta && tx > 0 {
			sev = Warning
		}
		out = append(out, Finding{
			ID: "nic.pause_frames", Severity: sev, Subject: v.Interface,
			Summary: fmt.Sprintf("%s sent %d and received %d pause frames %s: flow control stopped the link. Sent: this host could not drain its buffers; received: the peer or the switch is congested.%s",
				v.Interface, tx, rx, when(hasDelta), totalsNote(hasDelta)),
			Evidence: map[string]any{"sent": tx, "received": rx, "when": when(hasDelta),
				"counters": joinNonEmpty(d.sources(v, nicstats.PauseTX, hasDelta), d.sources(v, nicstats.PauseRX, hasDelta))},
			Fix: []Fix{
				do("See the flow control settings", "ethtool", "-a", v.Interface),
				do("Pause sent: find why the host falls behind (nic.rx_no_buffer, IRQ placement, ring sizes); pause received: look at the switch port's buffers and its other traffic"),
				do("Where lossless Ethernet is not needed (no RoCE), turn flow control off, on both ends", "ethtool", "-A", v.Interface, "rx", "off", "tx", "off"),
			},
		})
	}
	return out
}

func joinNonEmpty(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + ", " + b
}

// ringSmallRX is the RX ring below which a 25 Gbit/s or faster link
// counts as under-provisioned: at 2 Mpps (25 Gbit/s of 1500-byte frames),
// 1024 descriptors are half a millisecond of traffic.
const ringSmallRX = 1024

// ringSmall: the RX ring is below its maximum and the NIC ran out of
// buffers, or it is under 1024 on a 25 Gbit/s or faster link.
func ringSmall(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		r := v.Rings
		if r == nil || r.RX == nil || r.RXMax == nil || *r.RX >= *r.RXMax {
			continue
		}
		_, _, _, drops := d.counted(v, nicstats.RXNoBuffer)
		fast := v.line >= 25 && *r.RX < ringSmallRX
		if !drops && !fast {
			continue
		}
		why := fmt.Sprintf("under %d descriptors on a %s Gbit/s link: half a millisecond of line-rate traffic or less", ringSmallRX, trimFloat(float64(v.line)))
		if drops {
			why = "and the NIC has dropped frames for lack of RX buffers (nic.rx_no_buffer)"
		}
		out = append(out, Finding{
			ID: "ring.small", Severity: Warning, Subject: v.Interface,
			Summary:  fmt.Sprintf("%s's RX ring holds %d descriptors of a possible %d, %s", v.Interface, *r.RX, *r.RXMax, why),
			Evidence: map[string]any{"rx_ring": *r.RX, "rx_ring_max": *r.RXMax, "rx_ring_target": *r.RXMax},
			Fix: []Fix{
				do(fmt.Sprintf("Raise the RX ring to its maximum, %d descriptors (a larger ring costs memory and a little latency, not throughput)", *r.RXMax),
					"ethtool", "-G", v.Interface, "rx", strconv.FormatUint(uint64(*r.RXMax), 10)).
					persist("Ring sizes reset when the driver reloads: set them at boot (NetworkManager ethtool.ring-rx, systemd-networkd RxBufferSize=, or a udev rule)").
					verify("Read it back", "ethtool", "-g", v.Interface),
				do("Or let linerate make the change, journaled", "linerate", "tune", "--iface", v.Interface, "--apply"),
			},
		})
	}
	return out
}
