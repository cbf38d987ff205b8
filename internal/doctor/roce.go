package doctor

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/dcb"
	"github.com/linerate/linerate/internal/inventory"
)

// RoCEDSCP is the DSCP RoCE traffic carries in NVIDIA's lossless RoCE
// configuration (and the switch vendors' RoCE profiles): 26, ToS 106 with
// ECN capable transport. CNPs go on DSCP 48.
const RoCEDSCP = 26

// roceState is how RoCE runs on one NIC: its port, the trust mode that
// classifies its packets, and the priority they land on.
type roceState struct {
	v    *nicView
	port inventory.RDMAPort
	// trust is "dscp" or "pcp"; trustFrom says how it is known, "" when
	// the DCB configuration was not read.
	trust, trustFrom string
	// lands is the priority RoCE's packets land on under that trust;
	// landsFrom says why.
	lands     int
	landsFrom string
	// prio is the priority judged for PFC and ECN: --roce-priority, else
	// lands.
	prio     int
	prioFrom string
}

// activeRoCE returns the first ACTIVE Ethernet RDMA port of a NIC.
func activeRoCE(v *nicView) (inventory.RDMAPort, bool) {
	for _, p := range v.RDMA {
		if p.State == "ACTIVE" && p.LinkLayer == "Ethernet" {
			return p, true
		}
	}
	return inventory.RDMAPort{}, false
}

// roceInUse lists the NICs running RoCE v2: an ACTIVE Ethernet RDMA port
// with a RoCE v2 GID, with the trust and priority their traffic has.
func (d *diag) roceInUse() []*roceState {
	var out []*roceState
	for _, v := range d.nics {
		p, ok := activeRoCE(v)
		if !ok || !p.RoCEv2() {
			continue
		}
		out = append(out, d.roceOf(v, p))
	}
	return out
}

// roceOf works out the trust and the RoCE priority of a NIC.
func (d *diag) roceOf(v *nicView, p inventory.RDMAPort) *roceState {
	s := &roceState{v: v, port: p, lands: RoCEDSCP >> 3}
	if c := v.DCB; c != nil {
		switch {
		case len(c.Trust) > 0:
			s.trust, s.trustFrom = c.Trust[0], "the driver's trusted selectors ("+strings.Join(c.Trust, ", ")+")"
		case c.Trust != nil:
			s.trust, s.trustFrom = "none", "the driver trusts no selector"
		case c.HasSelector("dscp"):
			s.trust, s.trustFrom = "dscp", "the APP table holds DSCP mappings (mlx5 trusts DSCP while it has any)"
		default:
			s.trust, s.trustFrom = "pcp", "the APP table holds no DSCP mapping (mlx5 then trusts PCP)"
		}
		switch s.trust {
		case "dscp":
			if pr, ok := c.DSCPPriority(RoCEDSCP); ok {
				s.lands, s.landsFrom = pr, fmt.Sprintf("the APP table maps DSCP %d (RoCE's DSCP in NVIDIA's lossless configuration) to priority %d", RoCEDSCP, pr)
			} else {
				s.landsFrom = fmt.Sprintf("DSCP %d (RoCE's DSCP in NVIDIA's lossless configuration) takes the NIC's default map, DSCP>>3 = %d", RoCEDSCP, s.lands)
			}
		default:
			s.lands, s.landsFrom = 0, "trust is "+s.trust+": RoCE without a VLAN tag rides priority 0, whatever DSCP it carries"
		}
	} else {
		s.landsFrom = fmt.Sprintf("DCB was not read: assuming DSCP %d on priority %d (NVIDIA's lossless configuration)", RoCEDSCP, s.lands)
	}
	s.prio, s.prioFrom = s.lands, s.landsFrom
	if d.opts.RoCEPriority != nil {
		s.prio, s.prioFrom = *d.opts.RoCEPriority, "--roce-priority"
	}
	return s
}

// roceEvidence is the evidence every RoCE finding carries.
func (s *roceState) evidence() map[string]any {
	ev := map[string]any{"rdma_device": fmt.Sprintf("%s/%d", s.port.Device, s.port.Port), "roce_priority": s.prio, "roce_priority_from": s.prioFrom}
	if s.trust != "" {
		ev["trust"], ev["trust_from"] = s.trust, s.trustFrom
	}
	if c := s.v.DCB; c != nil && c.PFC != nil {
		ev["pfc_enabled"] = c.PFC.Enabled
	}
	if e := s.v.ECN; e != nil && s.prio >= 0 && s.prio < 8 {
		for k, b := range map[string]*bool{"ecn_np": e.NP[s.prio], "ecn_rp": e.RP[s.prio]} {
			if b != nil {
				ev[k] = *b
			}
		}
	}
	return ev
}

// ecnPaths are the sysfs switches of one priority.
func ecnPaths(iface string, prio int) (np, rp string) {
	base := "/sys/class/net/" + iface + "/ecn/"
	return fmt.Sprintf("%sroce_np/enable/%d", base, prio), fmt.Sprintf("%sroce_rp/enable/%d", base, prio)
}

// pfcFix enables PFC on the RoCE priority, keeping the others as they are.
func pfcFix(s *roceState) []Fix {
	iface, prio := s.v.Interface, s.prio
	mask := make([]string, dcb.Priorities)
	for p := range mask {
		mask[p] = "0"
		if c := s.v.DCB; p == prio || (c != nil && c.PFC.Has(p)) {
			mask[p] = "1"
		}
	}
	return []Fix{
		do(fmt.Sprintf("Enable PFC on priority %d on every switch port RoCE crosses first: PFC works hop by hop, and a NIC pausing for a priority its switch does not honour protects nothing", prio)),
		do("Then enable it here (iproute2's dcb; the other priorities stay as they are)", "dcb", "pfc", "set", "dev", iface, "prio-pfc", fmt.Sprintf("%d:on", prio)).
			verify("Read it back", "dcb", "pfc", "show", "dev", iface),
		do("Or with NVIDIA's mlnx_qos, which sets all eight priorities at once", "mlnx_qos", "-i", iface, "--pfc", strings.Join(mask, ",")).
			persist("The driver forgets DCB settings when it reloads: run the same command from a systemd unit at boot (or let an LLDP agent negotiate them)"),
	}
}

// tuneFix is the last step of every fix tune --roce applies.
func tuneFix(iface string) Fix {
	return do("Or let linerate apply it with a journal it can revert", "linerate", "tune", "--roce", "--iface", iface, "--apply")
}

// rocePFCOff: RoCE v2 runs on a priority with neither PFC nor ECN: a
// lossy fabric, where every drop costs a go-back-N retransmission.
func rocePFCOff(d *diag) []Finding {
	var out []Finding
	for _, s := range d.roceInUse() {
		c := s.v.DCB
		if c == nil || c.PFC == nil || c.PFC.Has(s.prio) {
			continue
		}
		on, known := s.v.ECN.On(s.prio)
		if known && on {
			continue
		}
		sev, ecnWords := Critical, "ECN is off there too"
		if !known {
			sev, ecnWords = Warning, "ECN is unknown (no ecn/roce_np, roce_rp switches: an upstream driver, which runs DCQCN on every priority, or an older one)"
		}
		ev := s.evidence()
		fix := pfcFix(s)
		if known {
			np, rp := ecnPaths(s.v.Interface, s.prio)
			fix = append(fix, do(fmt.Sprintf("And turn ECN on for priority %d, so that congestion slows the senders before it fills the buffers", s.prio),
				shell(fmt.Sprintf("echo 1 > %s; echo 1 > %s", np, rp))...))
		}
		fix = append(fix, tuneFix(s.v.Interface))
		out = append(out, Finding{
			ID: "roce.pfc_off", Severity: sev, Subject: s.v.Interface,
			Summary: fmt.Sprintf("RoCE v2 on %s runs on priority %d, which has no PFC (PFC is on %s), and %s: the fabric drops RoCE packets under load and every drop costs a go-back-N retransmission",
				s.port.Device, s.prio, prioList(c.PFC.Enabled), ecnWords),
			Evidence: ev,
			Fix:      fix,
		})
	}
	return out
}

// roceECNOff: ECN is off (notification or reaction point) on the RoCE
// priority: congestion control (DCQCN) cannot work there.
func roceECNOff(d *diag) []Finding {
	var out []Finding
	for _, s := range d.roceInUse() {
		e := s.v.ECN
		if e == nil || s.prio < 0 || s.prio > 7 {
			continue
		}
		np, rp := e.NP[s.prio], e.RP[s.prio]
		if np == nil || rp == nil || (*np && *rp) {
			continue
		}
		var off []string
		var cmds []string
		npPath, rpPath := ecnPaths(s.v.Interface, s.prio)
		if !*np {
			off = append(off, "the notification point (roce_np: this NIC sends no CNPs for the congestion it sees)")
			cmds = append(cmds, "echo 1 > "+npPath)
		}
		if !*rp {
			off = append(off, "the reaction point (roce_rp: this NIC ignores the CNPs its peers send and keeps its rate)")
			cmds = append(cmds, "echo 1 > "+rpPath)
		}
		out = append(out, Finding{
			ID: "roce.ecn_off", Severity: Warning, Subject: s.v.Interface,
			Summary: fmt.Sprintf("ECN is off on RoCE's priority %d of %s: %s; congestion then fills buffers until PFC pauses (or drops) instead of slowing the senders",
				s.prio, s.v.Interface, strings.Join(off, " and ")),
			Evidence: s.evidence(),
			Fix: []Fix{
				do(fmt.Sprintf("Turn ECN on for priority %d (the switches must mark ECN on that queue too)", s.prio), shell(strings.Join(cmds, "; "))...).
					persist("These switches reset when the driver reloads: set them again from a systemd unit at boot").
					verify("Read them back", "cat", npPath, rpPath),
				tuneFix(s.v.Interface),
			},
		})
	}
	return out
}

// roceTrustMismatch: PFC protects priorities that RoCE's packets, as the
// trust mode classifies them, do not land on.
func roceTrustMismatch(d *diag) []Finding {
	var out []Finding
	for _, s := range d.roceInUse() {
		c := s.v.DCB
		if c == nil || c.PFC == nil || len(c.PFC.Enabled) == 0 || c.PFC.Has(s.lands) {
			continue
		}
		want := c.PFC.Enabled[0]
		if d.opts.RoCEPriority != nil && c.PFC.Has(*d.opts.RoCEPriority) {
			want = *d.opts.RoCEPriority
		}
		iface := s.v.Interface
		ev := s.evidence()
		ev["roce_lands_on"], ev["roce_lands_on_from"] = s.lands, s.landsFrom
		fix := []Fix{}
		if s.trust == "dscp" {
			fix = append(fix, do(fmt.Sprintf("Map RoCE's DSCP %d to the PFC priority %d", RoCEDSCP, want),
				"dcb", "app", "replace", "dev", iface, "dscp-prio", fmt.Sprintf("%d:%d", RoCEDSCP, want)).
				verify("Read the table back", "dcb", "app", "show", "dev", iface, "dscp-prio"))
		} else {
			fix = append(fix,
				do(fmt.Sprintf("Trust DSCP, as the switches mark it, with RoCE's DSCP %d on the PFC priority %d: on mlx5 the first DSCP entry switches the port to DSCP trust", RoCEDSCP, want),
					"dcb", "app", "add", "dev", iface, "dscp-prio", fmt.Sprintf("%d:%d", RoCEDSCP, want)).
					verify("Read it back", "dcb", "app", "show", "dev", iface),
				do("Or with NVIDIA's mlnx_qos", "mlnx_qos", "-i", iface, "--trust", "dscp"),
				do("On drivers with a trust table (dcb apptrust), set the order instead", "dcb", "apptrust", "set", "dev", iface, "order", "dscp"),
				do(fmt.Sprintf("Or keep PCP trust and run RoCE on a VLAN whose egress map puts it on priority %d (ip link add … type vlan … egress-qos-map 0:%d)", want, want)),
			)
		}
		fix = append(fix, tuneFix(iface))
		out = append(out, Finding{
			ID: "roce.trust_mismatch", Severity: Warning, Subject: iface,
			Summary: fmt.Sprintf("PFC on %s protects priority %s, but RoCE lands on priority %d: %s",
				iface, prioList(c.PFC.Enabled), s.lands, s.landsFrom),
			Evidence: ev,
			Fix:      fix,
		})
	}
	return out
}

// roceNoV2GID: an ACTIVE Ethernet RDMA port without a RoCE v2 GID for its
// netdev's addresses: RoCE v1 is not routable, and most fabrics carry v2.
func roceNoV2GID(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		p, ok := activeRoCE(v)
		if !ok || len(p.GIDs) == 0 {
			// An active port always has its link-local GIDs: an empty
			// table is one that was not read, not one without v2.
			continue
		}
		v2 := map[string]bool{}
		var addrs []string
		for _, g := range p.GIDs {
			if !slices.Contains(addrs, g.Address) {
				addrs = append(addrs, g.Address)
			}
			if g.Type == "RoCE v2" {
				v2[g.Address] = true
			}
		}
		var missing []string
		for _, a := range addrs {
			if !v2[a] {
				missing = append(missing, a)
			}
		}
		if len(v2) > 0 && len(missing) == 0 {
			continue
		}
		dev := fmt.Sprintf("%s/%d", p.Device, p.Port)
		what := "no RoCE v2 GID at all"
		if len(v2) > 0 {
			what = "no RoCE v2 GID for " + strings.Join(missing, ", ")
		}
		out = append(out, Finding{
			ID: "roce.no_v2_gid", Severity: Warning, Subject: v.Interface,
			Summary:  fmt.Sprintf("RDMA port %s of %s is ACTIVE with %s: RoCE v1 is not routable (a Layer 2 protocol), and most RoCE fabrics carry only v2", dev, v.Interface, what),
			Evidence: map[string]any{"rdma_device": dev, "gids": len(p.GIDs), "addresses_without_v2": missing},
			Fix: []Fix{
				do("RoCE v2 needs a device that supports it (ConnectX-4 and later) and Linux 4.5 or later: check what the GID table holds", "rdma", "link", "show", dev).
					verify("List the GIDs with their types (rdma-core's show_gids)", "show_gids", p.Device),
				do("Make rdma_cm use RoCE v2 for this port (rdma-core's cma_roce_mode; or the configfs default_roce_mode under /sys/kernel/config/rdma_cm)", "cma_roce_mode", "-d", p.Device, "-p", strconv.Itoa(p.Port), "-m", "2"),
				do(fmt.Sprintf("An address without a v2 GID is one the driver has not seen: bring %s up with its address, and check that it is not a secondary on another interface", v.Interface), "ip", "-br", "address", "show", "dev", v.Interface),
			},
		})
	}
	return out
}

// roceMTUSmall: RoCE's active MTU is below 4096 because the netdev's MTU
// is below 4192 (RoCE's 96 bytes of headers on top of 4096).
func roceMTUSmall(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		p, ok := activeRoCE(v)
		if !ok || p.ActiveMTU == nil || *p.ActiveMTU >= 4096 {
			continue
		}
		mtu := 0
		if v.MTU != nil {
			mtu = *v.MTU
		}
		if p.Netdev != v.Interface || mtu <= 0 || mtu >= inventory.RoCEMTUFor(4096) {
			continue
		}
		dev := fmt.Sprintf("%s/%d", p.Device, p.Port)
		out = append(out, Finding{
			ID: "roce.mtu_small", Severity: Warning, Subject: v.Interface,
			Summary: fmt.Sprintf("RoCE on %s runs with an active MTU of %d: %s's MTU %d less %d bytes of RoCE headers is %d, below 4096 (which needs a netdev MTU of %d or more); %.1f× the packets, and the per-packet costs, of MTU 4096",
				dev, *p.ActiveMTU, v.Interface, mtu, inventory.RoCEHeaderBytes, mtu-inventory.RoCEHeaderBytes, inventory.RoCEMTUFor(4096), 4096/float64(*p.ActiveMTU)),
			Evidence: map[string]any{"rdma_device": dev, "active_mtu": *p.ActiveMTU, "netdev_mtu": mtu, "roce_header_bytes": inventory.RoCEHeaderBytes, "mtu_for_4096": inventory.RoCEMTUFor(4096)},
			Fix: []Fix{
				do("Set MTU 9000 on the peers and on every switch port on the path first: the whole path must match"),
				do("Then raise it here: RoCE picks up the new MTU for new connections", "ip", "link", "set", "dev", v.Interface, "mtu", "9000").
					persist("Keep it in the network configuration: netplan mtu: 9000, ifupdown mtu 9000, NetworkManager 802-3-ethernet.mtu 9000").
					verify("ibv_devinfo shows the port's active_mtu", "ibv_devinfo", "-d", p.Device, "-i", strconv.Itoa(p.Port)),
			},
		})
	}
	return out
}

// rdmaErrorCounters are the hw_counters that count retransmission and
// failed work requests, with what each means.
var rdmaErrorCounters = []struct{ name, means string }{
	{"out_of_sequence", "packets arrived out of sequence: packets were lost (a lossy fabric)"},
	{"packet_seq_err", "NAKs for sequence errors: packets were lost"},
	{"implied_nak_seq_err", "read or atomic responses with a gap: lost responses"},
	{"local_ack_timeout_err", "ACKs that never came within the timeout: lost packets or a peer gone"},
	{"rnr_nak_retry_err", "receiver-not-ready retries exhausted: the peer application posts receives too slowly"},
	{"req_cqe_error", "work requests that completed in error"},
}

// rdmaErrors: the retransmission and error counters of an RDMA port are
// not zero (warning), or grew during a bench (critical).
func rdmaErrors(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		for _, p := range v.RDMA {
			dev := fmt.Sprintf("%s/%d", p.Device, p.Port)
			counts, sev, when := p.HWCounters, Warning, "since the driver loaded"
			if delta, ok := d.opts.RDMADeltas[dev]; ok {
				counts, sev, when = delta, Critical, "during the bench"
			}
			ev := map[string]any{"rdma_device": dev}
			var parts []string
			for _, c := range rdmaErrorCounters {
				if n := counts[c.name]; n > 0 {
					ev[c.name] = n
					parts = append(parts, fmt.Sprintf("%s %d (%s)", c.name, n, c.means))
				}
			}
			if len(parts) == 0 {
				continue
			}
			fix := []Fix{
				do("Watch whether they grow: counts since the driver loaded may be old", "rdma", "statistic", "show", "link", dev),
			}
			if s := d.roceOfNIC(v); s != nil {
				fix = append(fix, do(fmt.Sprintf("Sequence errors and ACK timeouts on RoCE mean drops: check that PFC or ECN protects priority %d here and on the switches (drops, pause and ECN-marked counters per queue)", s.prio), "dcb", "pfc", "show", "dev", v.Interface))
			}
			fix = append(fix, do("Check the link under them for errors: FCS, FEC, pause", "ethtool", "-S", v.Interface))
			out = append(out, Finding{
				ID: "rdma.errors", Severity: sev, Subject: v.Interface,
				Summary:  fmt.Sprintf("RDMA port %s counted errors %s: %s", dev, when, strings.Join(parts, "; ")),
				Evidence: ev,
				Fix:      fix,
			})
		}
	}
	return out
}

// roceOfNIC is the RoCE state of a NIC running RoCE v2, or nil.
func (d *diag) roceOfNIC(v *nicView) *roceState {
	p, ok := activeRoCE(v)
	if !ok || !p.RoCEv2() {
		return nil
	}
	return d.roceOf(v, p)
}

// prioList writes priorities as "3" or "3 and 4", "none" for none.
func prioList(ps []int) string {
	if len(ps) == 0 {
		return "no priority"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(p)
	}
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// RoCE is how RoCE v2 runs on a NIC, as doctor's RoCE rules see it.
type RoCE struct {
	Device string
	Port   int
	// Trust is "dscp", "pcp" or "none"; "" when DCB was not read.
	Trust, TrustFrom string
	// Lands is the priority RoCE's packets land on under that trust.
	Lands     int
	LandsFrom string
	// Priority is the one judged for PFC and ECN (--roce-priority, else
	// Lands).
	Priority     int
	PriorityFrom string
}

// RoCEOf reports how RoCE v2 runs on n (an ACTIVE Ethernet RDMA port with
// a RoCE v2 GID), with priority as --roce-priority (nil: worked out). ok
// is false where n runs no RoCE v2.
func RoCEOf(n *inventory.NIC, priority *int) (r RoCE, ok bool) {
	d := &diag{opts: Options{RoCEPriority: priority}}
	v := &nicView{NIC: n}
	s := d.roceOfNIC(v)
	if s == nil {
		return RoCE{}, false
	}
	return RoCE{Device: s.port.Device, Port: s.port.Port, Trust: s.trust, TrustFrom: s.trustFrom,
		Lands: s.lands, LandsFrom: s.landsFrom, Priority: s.prio, PriorityFrom: s.prioFrom}, true
}
