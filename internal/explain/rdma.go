package explain

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/linerate/linerate/internal/result"
)

// The RDMA counters an RDMA run's explanation names, by the trouble they
// show. Retransmission: mlx5 counts a packet that arrived past a gap
// (out_of_sequence), the NAKs its requester got for one (packet_seq_err),
// the ACKs that never came (local_ack_timeout_err); RoCE resends from
// the lost packet on (go-back-N), so a few losses cost much bandwidth.
// Congestion notification: a receiver that got ECN-marked packets sends
// CNPs (np_cnp_sent), a sender slows down for each it handles
// (rp_cnp_handled).
var (
	rdmaRetransmission = []string{"out_of_sequence", "packet_seq_err", "local_ack_timeout_err", "implied_nak_seq_err", "rnr_nak_retry_err"}
	rdmaCongestion     = []string{"np_cnp_sent", "np_ecn_marked_roce_packets", "rp_cnp_handled"}
)

// JudgeRDMA completes r for a run that reached gbps (nil: a latency run):
// its share of the port's rate and of the PCIe ceiling, the verdict
// against the vendor's pass bar (result.PassShare of port speed), the
// causes its counters show, and the sentences that say all that.
func JudgeRDMA(r *result.RDMA, gbps *float64) {
	if r == nil {
		return
	}
	r.Causes, r.Explanation = []result.RDMACause{}, []string{}
	if r.PortGbps != nil && r.PCIeGbps != nil && *r.PCIeGbps < *r.PortGbps {
		r.Limit = "pcie"
	}
	if gbps != nil {
		r.Explanation = append(r.Explanation, judgeBandwidth(r, *gbps)...)
	}
	for _, e := range []struct {
		role string
		d    *result.RDMAEnd
	}{{"client", r.Client}, {"server", r.Server}} {
		if e.d == nil || e.d.HWCounters == nil && e.d.Priority == nil {
			continue
		}
		r.Causes = append(r.Causes, endCauses(e.role, e.d)...)
	}
	for _, c := range r.Causes {
		r.Explanation = append(r.Explanation, causeSentence(c, endOf(r, c.End)))
	}
	if len(r.Causes) == 0 && rdmaRead(r) {
		r.Explanation = append(r.Explanation, "No retransmission, congestion notification (CNP) or pause counter grew on the RDMA ports read: the fabric lost nothing and pushed back on nothing during the run.")
	}
	for _, e := range []struct {
		role string
		d    *result.RDMAEnd
	}{{"client", r.Client}, {"server", r.Server}} {
		if e.d != nil && e.d.NotRead != "" {
			r.Explanation = append(r.Explanation, fmt.Sprintf("The %s's RDMA counters were not read: %s.", e.role, strings.TrimSuffix(e.d.NotRead, ".")))
		}
	}
}

func judgeBandwidth(r *result.RDMA, gbps float64) []string {
	var out []string
	if r.PortGbps != nil {
		of := gbps / *r.PortGbps
		r.OfPort = &of
		r.Verdict = "fail"
		if of >= result.PassShare {
			r.Verdict = "pass"
		}
		out = append(out, fmt.Sprintf("%.2f Gbit/s is %.1f%% of the port's %g Gbit/s: %s (the vendor's pass bar is %.0f%% of port speed, %.1f Gbit/s).",
			gbps, 100*of, *r.PortGbps, strings.ToUpper(r.Verdict), 100*result.PassShare, result.PassShare**r.PortGbps))
	}
	if r.PCIeGbps != nil {
		of := gbps / *r.PCIeGbps
		r.OfPCIe = &of
		link := "The PCIe link"
		if r.PCIeLink != "" {
			link += " (" + r.PCIeLink + ")"
		}
		s := fmt.Sprintf("%s carries at most %.1f Gbit/s; the run reached %.0f%% of it", link, *r.PCIeGbps, 100*of)
		switch {
		case r.Limit == "pcie" && r.PortGbps != nil && *r.PCIeGbps < result.PassShare**r.PortGbps:
			s += ": PCIe limits this NIC, not the network; the port cannot reach the pass bar in this slot (a slot of more lanes or a faster generation can)"
		case r.Limit == "pcie":
			s += ": PCIe, not the network, is the ceiling"
		}
		out = append(out, s+".")
	}
	return out
}

func endOf(r *result.RDMA, role string) *result.RDMAEnd {
	if role == "server" {
		return r.Server
	}
	return r.Client
}

func rdmaRead(r *result.RDMA) bool {
	for _, d := range []*result.RDMAEnd{r.Client, r.Server} {
		if d != nil && d.HWCounters != nil {
			return true
		}
	}
	return false
}

// endCauses are the causes one end's counters show, in a fixed order.
func endCauses(role string, d *result.RDMAEnd) []result.RDMACause {
	var out []result.RDMACause
	pick := func(cause string, names []string) {
		m := map[string]uint64{}
		for _, n := range names {
			if v := d.HWCounters[n]; v > 0 {
				m[n] = v
			}
		}
		if len(m) > 0 {
			out = append(out, result.RDMACause{Cause: cause, End: role, Counters: m})
		}
	}
	pick("retransmission", rdmaRetransmission)
	pick("congestion", rdmaCongestion)
	for _, kind := range []struct{ cause, suffix string }{{"pause", "_pause"}, {"discards", "_discards"}} {
		m := map[string]uint64{}
		for _, prio := range slices.Sorted(maps.Keys(d.Priority)) {
			for name, v := range d.Priority[prio] {
				if v > 0 && strings.HasSuffix(name, kind.suffix) {
					m["prio"+prio+"."+name] = v
				}
			}
		}
		if len(m) > 0 {
			out = append(out, result.RDMACause{Cause: kind.cause, End: role, Counters: m})
		}
	}
	return out
}

// causeSentence says what one cause's counters mean.
func causeSentence(c result.RDMACause, d *result.RDMAEnd) string {
	who := "the " + c.End + "'s"
	switch {
	case d == nil:
	case (c.Cause == "pause" || c.Cause == "discards") && d.Netdev != "":
		who += " " + d.Netdev
	default:
		who += fmt.Sprintf(" %s/%d", d.Device, d.Port)
	}
	names := slices.Sorted(maps.Keys(c.Counters))
	list := make([]string, len(names))
	for i, n := range names {
		list[i] = fmt.Sprintf("%s %s", n, Count(c.Counters[n]))
	}
	counts := strings.Join(list, ", ")
	switch c.Cause {
	case "retransmission":
		return fmt.Sprintf("Retransmission: %s counted %s: packets were lost and resent (RoCE goes back to the lost packet and resends all after it); a lossy fabric: check PFC or ECN on the RoCE priority here and on the switches (linerate doctor: roce.pfc_off, roce.ecn_off).", who, counts)
	case "congestion":
		var what []string
		if n := c.Counters["np_cnp_sent"]; n > 0 {
			what = append(what, "as receiver it got ECN-marked packets and sent "+Count(n)+" CNPs")
		}
		if n := c.Counters["rp_cnp_handled"]; n > 0 {
			what = append(what, "as sender it slowed down for "+Count(n)+" CNPs")
		}
		if len(what) == 0 {
			what = append(what, "switches marked its packets with ECN")
		}
		return fmt.Sprintf("Congestion notification: %s counted %s: %s. A queue on the path filled and DCQCN slowed the sender; nothing was lost to it.", who, counts, strings.Join(what, "; "))
	case "pause":
		return fmt.Sprintf("Pause: %s counted %s: PFC stopped the priority (rx: the peer or switch asked this end to stop; tx: this end asked, its receive buffers filling).", who, counts)
	case "discards":
		return fmt.Sprintf("Discards: %s dropped packets of a priority: %s (no buffer on a priority without PFC).", who, counts)
	}
	return fmt.Sprintf("%s: %s counted %s.", c.Cause, who, counts)
}
