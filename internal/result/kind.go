package result

import "fmt"

// Kind is what a run measured, and so the figures that describe it: runs
// of different kinds are never pooled or compared, and each is shown by
// its own figures (a ping-pong's 0.02 Gbit/s says nothing).
type Kind string

// Run kinds.
const (
	// KindTCP moves bulk data over TCP: goodput, retransmits.
	KindTCP Kind = "tcp"
	// KindUDP sends datagrams at a rate (bench --udp -b): loss, jitter,
	// packets per second.
	KindUDP Kind = "udp"
	// KindLatency is a ping-pong (bench --latency, over TCP or UDP, any
	// engine): round-trip p50 and p99.
	KindLatency Kind = "latency"
	// KindTransactions is request/response transactions (rr, crr):
	// transactions per second and their latency.
	KindTransactions Kind = "transactions"
)

// Kind decides the run's kind from its document: a ping-pong has
// end.latency, a transaction run start.mode (or end.transactions), a UDP
// run start.protocol "udp"; the rest move bulk TCP.
func (r *Result) Kind() Kind {
	switch {
	case r.End.Latency != nil:
		return KindLatency
	case r.Start.Mode == RR || r.Start.Mode == CRR || r.End.Transactions != nil:
		return KindTransactions
	case r.Start.Protocol == UDP || r.End.UDP != nil || r.End.Sum != nil:
		return KindUDP
	}
	return KindTCP
}

// Rate is the pace the run was asked to keep, in its kind's unit, and ""
// when it ran as fast as it could: "1 Gbit/s" for UDP -b and for TCP
// --fq-rate, "10000/s" for a ping-pong's --rate. Runs at different rates
// measure different things: a paced run's goodput is its rate, not the
// path's.
func (r *Result) Rate() string {
	switch r.Kind() {
	case KindLatency:
		if r.End.Latency.TargetRate > 0 {
			return fmt.Sprintf("%.6g/s", r.End.Latency.TargetRate)
		}
	case KindUDP:
		bps := float64(r.Start.Bitrate)
		if bps == 0 && r.End.UDP != nil {
			bps = r.End.UDP.TargetBitsPerSecond
		}
		if bps > 0 {
			return bitsText(bps)
		}
	case KindTCP:
		if r.Start.FQRate > 0 {
			return bitsText(float64(r.Start.FQRate))
		}
	}
	return ""
}

// Unpaced reports whether the run is bulk TCP at full speed: the only kind
// whose goodput measures the path against its ceiling.
func (r *Result) Unpaced() bool { return r.Kind() == KindTCP && r.Rate() == "" }

// bitsText is "1 Gbit/s", "500 Mbit/s", "2.5 Gbit/s".
func bitsText(bps float64) string {
	units := []struct {
		div  float64
		name string
	}{{1e12, "Tbit/s"}, {1e9, "Gbit/s"}, {1e6, "Mbit/s"}, {1e3, "kbit/s"}}
	for _, u := range units {
		if bps >= u.div {
			return fmt.Sprintf("%.4g %s", bps/u.div, u.name)
		}
	}
	return fmt.Sprintf("%g bit/s", bps)
}
