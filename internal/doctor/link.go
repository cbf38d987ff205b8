package doctor

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/limits"
)

// linkDown: a fast NIC's port without link. A RoCE port down with it is
// said here (not as rdma.port_not_active too), and the fix names the
// card's ports that are up, for a port left unused.
func linkDown(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		if !v.judgedDown() {
			continue
		}
		desc := v.Interface
		if v.Model != "" {
			desc = fmt.Sprintf("%s (%s, %s)", v.Interface, v.Model, v.Driver)
		}
		ev := map[string]any{"operstate": v.Operstate, "pci": v.PCI, "driver": v.Driver}
		summary := fmt.Sprintf("%s has no link (operstate %s)", desc, v.Operstate)
		if roce := roceDownWith(v); len(roce) > 0 {
			// A RoCE port follows its netdev: one finding, not two.
			ev["rdma_ports"] = roce
			summary += fmt.Sprintf(", and its RoCE port%s %s %s down with it", plural(len(roce)), strings.Join(roce, ", "), map[bool]string{true: "is", false: "are"}[len(roce) == 1])
		}
		fixes := []Fix{
			do("If it is administratively down, bring it up", "ip", "link", "set", "dev", v.Interface, "up"),
			do("Check the link and the cable", "ethtool", v.Interface),
			do("Read the module (a dead one reads nothing)", "ethtool", "-m", v.Interface),
		}
		if up := d.upSiblings(v); len(up) > 0 {
			fixes = append(fixes, do(fmt.Sprintf("If the port is unused, diagnose only %s", strings.Join(up, " and ")),
				append([]string{"linerate", "doctor"}, ifaceArgs(up)...)...))
		} else {
			fixes = append(fixes, do("If the port is unused, name the ports in use with --iface and doctor leaves this one alone"))
		}
		out = append(out, Finding{
			ID: "link.down", Severity: Warning, Subject: v.Interface,
			Summary: summary, Evidence: ev, Fix: fixes,
		})
	}
	return out
}

// judgedDown reports whether link.down is raised for v: a fast port
// without link, PCI-backed or named; virtual links report "unknown"
// (loopback, tun) while working.
func (v *nicView) judgedDown() bool {
	if v.Operstate == "up" || !v.fast() || (v.Kind != "pci" && !v.named) {
		return false
	}
	return v.Kind == "pci" || v.Operstate != "unknown"
}

// roceDownWith returns the RoCE ports ("rocep1s0f1/1") of a NIC whose
// netdev is not up: they are down because it is, so link.down says so and
// rdma.port_not_active leaves them out.
func roceDownWith(v *nicView) []string {
	var out []string
	if v.Operstate == "up" {
		return nil
	}
	for _, p := range v.RDMA {
		if p.LinkLayer == "Ethernet" && p.State != "ACTIVE" {
			out = append(out, fmt.Sprintf("%s/%d", p.Device, p.Port))
		}
	}
	return out
}

// upSiblings returns the other selected ports of v's card that have link.
func (d *diag) upSiblings(v *nicView) []string {
	var out []string
	if v.PCI == "" {
		return nil
	}
	card := v.PCI[:strings.LastIndexByte(v.PCI, '.')]
	for _, o := range d.nics {
		if o != v && o.Operstate == "up" && o.PCI != "" && o.PCI[:strings.LastIndexByte(o.PCI, '.')] == card {
			out = append(out, o.Interface)
		}
	}
	return out
}

// ifaceArgs writes --iface for each interface.
func ifaceArgs(ifaces []string) []string {
	var out []string
	for _, i := range ifaces {
		out = append(out, "--iface", i)
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
		stack := d.stack()
		small, err1 := limits.TCPFrame(mtu, stack)
		jumbo, err2 := limits.TCPFrame(9000, stack)
		ppsSmall, _ := limits.PacketRate(v.line, mtu, stack)
		ppsJumbo, _ := limits.PacketRate(v.line, 9000, stack)
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
			Fix: []Fix{
				do("Set MTU 9000 (or more) on the peer and on every switch port on the path first: the whole path must match"),
				do("Then raise it here", "ip", "link", "set", "dev", v.Interface, "mtu", "9000").
					persist("Keep it in the network configuration: netplan mtu: 9000, ifupdown mtu 9000, NetworkManager 802-3-ethernet.mtu 9000").
					verify(fmt.Sprintf("Prove the path with the peer's address: linerate doctor --iface %s --peer followed by the address (or ping -M do -s 8972 and the address)", v.Interface)),
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
	fix := []Fix{
		do(fmt.Sprintf("Raise the MTU of every hop toward %s (the peer's interface and each switch port) to %d", p.Peer, p.MTU)).
			verify("Then re-check the path", "linerate", "doctor", "--peer", p.Peer),
	}
	if p.Largest > 0 {
		fix = append(fix, do("Or, if the path cannot change, lower the local MTU to match", "ip", "link", "set", "dev", p.Interface, "mtu", strconv.Itoa(p.Largest)))
	}
	fix = append(fix, do(fmt.Sprintf("Probe it by hand: a %d-byte don't-fragment ping (%d bytes of ICMP payload)", p.MTU, p.MTU-28),
		"ping", "-M", "do", "-c", "3", "-s", strconv.Itoa(p.MTU-28), p.Peer))
	return []Finding{{
		ID: "mtu.path_mismatch", Severity: Critical, Subject: p.Interface,
		Summary: fmt.Sprintf("a %d-byte don't-fragment probe to %s got no answer (%s); %s: a hop on the path has a smaller MTU, so full-size segments are dropped",
			p.MTU, p.Peer, p.Detail, passed),
		Evidence: ev, Fix: fix,
	}}
}
