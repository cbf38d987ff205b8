package doctor

import (
	"fmt"

	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/limits"
)

// linkShaped: an egress qdisc (tbf, htb, fq's maxrate, cake) caps an
// interface below what its line rate, PCIe and MTU allow, or below
// nothing known (a veth has no line rate of its own). The shaper's own
// TCP goodput is counted as it counts (limits.Shaper), against the
// chain's without it. A rate the lab declares as the line rate it stands
// in for is that, not a cap.
func linkShaped(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		s := shaperFacts(v.Qdisc)
		if s == nil || s.DeclaredLineRate || s.RateGbps <= 0 {
			continue
		}
		port := d.port(v.NIC)
		free := limits.Chain(port) // the chain without the shaper
		model := limits.Shaper{Rate: limits.Gbps(s.RateGbps), Overhead: limits.SkbOverhead}
		if s.OverheadBytes != nil {
			model.Overhead = *s.OverheadBytes
		}
		ev := map[string]any{
			"qdisc": s.Kind, "handle": s.Handle, "rate_gbps": s.RateGbps, "per_flow": s.PerFlow, "detail": s.Detail,
			"counted_overhead_bytes": model.Overhead,
		}
		shaped := model.Rate
		counting := ""
		if f, err := limits.TCPFrame(port.MTU, port.Stack); err == nil {
			shaped = model.Goodput(f)
			counting = fmt.Sprintf(" (it counts %d bytes for every %d of TCP payload at MTU %d)", model.Counted(f), f.Payload, f.MTU)
			ev["mtu"], ev["counted_bytes"], ev["payload_bytes"] = f.MTU, model.Counted(f), f.Payload
		}
		ev["tcp_goodput_gbps"] = float64(shaped.Round())
		who := "the link carries"
		if s.PerFlow {
			who = "each flow gets"
		}
		summary := fmt.Sprintf("%s's egress is shaped by %s: %s at most %s Gbit/s of TCP goodput%s", v.Interface, s.Detail, who, shaped, counting)
		if g := free.TCPGoodput; g != nil {
			if shaped >= *g {
				continue // the link binds first: the shaper costs nothing
			}
			ev["unshaped_tcp_goodput_gbps"] = float64(g.Round())
			summary += fmt.Sprintf(", %.0f%% of the %s Gbit/s %s allows without it", 100*float64(shaped)/float64(*g), *g, boundBy(free))
		} else {
			summary += "; nothing else known here limits it"
		}
		out = append(out, Finding{
			ID: "link.shaped", Severity: Warning, Subject: v.Interface,
			Summary: summary, Evidence: ev, Fix: shaperFix(v.Interface, s),
		})
	}
	return out
}

// shaperFacts is what caps q's interface: the shaper found on the qdisc
// tree, or for facts that predate it, the root qdisc with its rate.
func shaperFacts(q *inventory.Qdisc) *inventory.Shaper {
	switch {
	case q == nil:
		return nil
	case q.Shaper != nil:
		return q.Shaper
	case q.RateGbps != nil:
		return &inventory.Shaper{Kind: q.Kind, Handle: "root", RateGbps: *q.RateGbps,
			Detail: fmt.Sprintf("%s shaped to %s Gbit/s", q.Kind, trimFloat(*q.RateGbps))}
	}
	return nil
}

// boundBy names what sets an unshaped chain's ceiling: "the 25GbE link",
// "its PCIe link".
func boundBy(l limits.Limits) string {
	if l.Bottleneck == limits.BottleneckPCIe {
		return "its PCIe link"
	}
	return "the " + l.Chain[0].Detail
}

// shaperFix shows the shaper and, if it is not wanted, removes the
// interface's whole egress tree, which puts back the kernel's default
// qdisc.
func shaperFix(iface string, s *inventory.Shaper) []Fix {
	fix := []Fix{
		do("Look at it first: a shaper may be deliberate (a rate agreed with the network team, a tenant's or a container's limit, a test someone left running); ask before removing it",
			"tc", "-s", "qdisc", "show", "dev", iface),
	}
	if s.Kind == "htb" {
		fix = append(fix, do("htb's classes, with the rate and ceil of each", "tc", "-s", "class", "show", "dev", iface))
	}
	return append(fix,
		do("If it is not wanted, remove it: the interface goes back to the kernel's default qdisc",
			"tc", "qdisc", "del", "dev", iface, "root").
			persist("Remove it where it is set up too, or it comes back at the next boot or link up: a tc command in a script or systemd unit, systemd-networkd's [TokenBucketFilter] or [HierarchyTokenBucket] sections, NetworkManager's tc.qdiscs, a CNI bandwidth plugin").
			verify("Read it back: no tbf, htb, cake or fq maxrate left", "tc", "qdisc", "show", "dev", iface))
}
