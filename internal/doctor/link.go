package doctor

import (
	"fmt"

	"github.com/linerate/linerate/internal/limits"
)

// linkDown: a fast NIC's port without link.
func linkDown(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		if v.Operstate == "up" || !v.fast() || (v.Kind != "pci" && !v.named) {
			continue
		}
		// Virtual links report "unknown" (loopback, tun) while working.
		if v.Kind != "pci" && v.Operstate == "unknown" {
			continue
		}
		desc := v.Interface
		if v.Model != "" {
			desc = fmt.Sprintf("%s (%s, %s)", v.Interface, v.Model, v.Driver)
		}
		out = append(out, Finding{
			ID: "link.down", Severity: Warning, Subject: v.Interface,
			Summary:  fmt.Sprintf("%s has no link (operstate %s)", desc, v.Operstate),
			Evidence: map[string]any{"operstate": v.Operstate, "pci": v.PCI, "driver": v.Driver},
			Fix: []string{
				fmt.Sprintf("if administratively down: ip link set dev %s up", v.Interface),
				fmt.Sprintf("check cable and transceiver: ethtool %s; ethtool -m %s (a dead module reads nothing)", v.Interface, v.Interface),
				"if the port is unused, diagnose only the one in use: linerate doctor --iface <the other port>",
			},
		})
	}
	return out
}

// mtuNotJumbo: a link of 25 Gbit/s or more at an MTU below 9000.
func mtuNotJumbo(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		if v.line < 25 || v.MTU == nil || *v.MTU >= 9000 {
			continue
		}
		mtu := *v.MTU
		small, err1 := limits.TCPFrame(mtu, limits.Stack{})
		jumbo, err2 := limits.TCPFrame(9000, limits.Stack{})
		ppsSmall, _ := limits.PacketRate(v.line, mtu, limits.Stack{})
		ppsJumbo, _ := limits.PacketRate(v.line, 9000, limits.Stack{})
		ev := map[string]any{"mtu": mtu, "line_rate_gbps": float64(v.line)}
		if err1 == nil && err2 == nil {
			ev["goodput_gbps"] = float64(small.Goodput(v.line).Round())
			ev["goodput_at_9000_gbps"] = float64(jumbo.Goodput(v.line).Round())
			ev["packets_per_second"] = int64(ppsSmall)
			ev["packets_per_second_at_9000"] = int64(ppsJumbo)
		}
		out = append(out, Finding{
			ID: "mtu.not_jumbo", Severity: Warning, Subject: v.Interface,
			Summary: fmt.Sprintf("MTU %d on a %s Gbit/s link: %.1f× the packets per second of MTU 9000 (%.2f vs %.2f Mpps at line rate), each costing CPU",
				mtu, trimFloat(float64(v.line)), ppsSmall/ppsJumbo, ppsSmall/1e6, ppsJumbo/1e6),
			Evidence: ev,
			Fix: []string{
				fmt.Sprintf("ip link set dev %s mtu 9000", v.Interface),
				"set MTU 9000 (or more) on every switch port on the path and on the peer: the whole path must match",
				fmt.Sprintf("prove the path: linerate doctor --iface %s --peer PEER   (or: ping -M do -s 8972 PEER)", v.Interface),
				"persist it in the network configuration (netplan: mtu: 9000; ifupdown: mtu 9000; NetworkManager: 802-3-ethernet.mtu 9000)",
			},
		})
	}
	return out
}

// mtuPathMismatch: the --peer probe at the local MTU failed.
func mtuPathMismatch(d *diag) []Finding {
	p := d.opts.PathMTU
	if p == nil || p.OK || p.Error != "" {
		return nil
	}
	ev := map[string]any{"peer": p.Peer, "interface": p.Interface, "probed": p.MTU, "largest_passed": p.Largest, "probes": p.Probes, "detail": p.Detail}
	passed := "no size passed"
	if p.Largest > 0 {
		passed = fmt.Sprintf("the largest that passed is %d bytes", p.Largest)
	}
	fix := []string{
		fmt.Sprintf("raise the MTU of every hop toward %s (the peer's interface and each switch port) to %d", p.Peer, p.MTU),
	}
	if p.Largest > 0 {
		fix = append(fix, fmt.Sprintf("or, if the path cannot change, lower the local MTU to match: ip link set dev %s mtu %d", p.Interface, p.Largest))
	}
	fix = append(fix, fmt.Sprintf("re-check: linerate doctor --peer %s   (or: ping -M do -s %d %s)", p.Peer, p.MTU-28, p.Peer))
	return []Finding{{
		ID: "mtu.path_mismatch", Severity: Critical, Subject: p.Interface,
		Summary: fmt.Sprintf("a %d-byte don't-fragment probe to %s got no answer (%s); %s: a hop on the path has a smaller MTU, so full-size segments are dropped",
			p.MTU, p.Peer, p.Detail, passed),
		Evidence: ev, Fix: fix,
	}}
}
