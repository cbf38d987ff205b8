package explain

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/linerate/linerate/internal/nicstats"
	"github.com/linerate/linerate/internal/result"
)

// NICGrowth is what one end's NIC counters grew by over some runs: each
// cause that grew, with the counters behind it.
type NICGrowth struct {
	Role      string // "client" or "server"
	Host      string // the end's host name, "" when unknown
	Interface string
	Runs      int // runs whose counters of this end were read
	Causes    []CauseGrowth
}

// CauseGrowth is one cause's growth and the counters it came from, by
// their own names, sorted.
type CauseGrowth struct {
	Cause   string
	Value   uint64
	Sources []string
}

// NICGrowthOf sums the NIC counter growth of runs, end by end. An end
// none of whose counters were read, or whose counters did not grow, has
// Runs > 0 and no Causes; one never read is left out.
func NICGrowthOf(runs []*result.Result) []NICGrowth {
	var out []NICGrowth
	for _, role := range []string{"client", "server"} {
		g := NICGrowth{Role: role}
		sums := map[string]uint64{}
		srcs := map[string]map[string]uint64{}
		for _, r := range runs {
			d := r.End.NICCounters.End(role)
			if d == nil || d.NotRead != "" {
				continue
			}
			g.Runs++
			g.Interface = d.Interface
			g.Host = hostOf(r, role)
			for c, v := range d.Deltas {
				sums[c] += v
				if srcs[c] == nil {
					srcs[c] = map[string]uint64{}
				}
				for n, sv := range d.Sources[c] {
					srcs[c][n] += sv
				}
			}
		}
		if g.Runs == 0 {
			continue
		}
		for _, c := range causeOrder(sums) {
			if sums[c] == 0 {
				continue
			}
			var names []string
			for n, v := range srcs[c] {
				if v > 0 {
					names = append(names, n)
				}
			}
			slices.Sort(names)
			g.Causes = append(g.Causes, CauseGrowth{Cause: c, Value: sums[c], Sources: names})
		}
		out = append(out, g)
	}
	return out
}

// hostOf names a run's end by its host name when the two ends have
// different ones (two machines, or the two hosts of a lab run by the
// native engine).
func hostOf(r *result.Result, role string) string {
	c, s := r.Start.Client.Hostname, r.Start.Server.Hostname
	if c == s {
		return ""
	}
	if role == "client" {
		return c
	}
	return s
}

// causeOrder lists the causes of m in nicstats' order (drops first), then
// any unknown to this version by name.
func causeOrder(m map[string]uint64) []string {
	var out []string
	for _, c := range nicstats.Causes {
		if _, ok := m[string(c)]; ok {
			out = append(out, string(c))
		}
	}
	for _, c := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// CauseWords says what a cause's growth means, as the predicate of a
// sentence whose subject is the NIC: "dropped 1.2 M frames for lack of
// RX buffers".
func CauseWords(cause string, n uint64) string {
	c := Count(n)
	switch nicstats.Cause(cause) {
	case nicstats.RXNoBuffer:
		return "dropped " + c + " frames for lack of RX buffers"
	case nicstats.RXNICBuffer:
		return "dropped " + c + " frames in its own port buffer (the adapter was congested)"
	case nicstats.RXDropped:
		return "received " + c + " frames the host's stack then dropped"
	case nicstats.TXDropped:
		return "dropped " + c + " frames on their way out"
	case nicstats.QdiscDrops:
		return "dropped " + c + " packets in its queueing discipline, whose queue was full"
	case nicstats.PHYErrors:
		return "saw " + c + " FCS or symbol errors (cable, optics, connector)"
	case nicstats.PauseTX:
		return "sent " + c + " pause frames (it asked the peer to stop)"
	case nicstats.PauseRX:
		return "received " + c + " pause frames (the network asked it to stop)"
	case nicstats.FECUncorrectable:
		return "counted " + c + " FEC blocks it could not correct (lost frames)"
	case nicstats.FECCorrected:
		return "corrected " + c + " FEC blocks"
	case nicstats.LinkDown:
		return "lost its link " + c + " times"
	}
	return "counted " + c + " " + cause
}

// Count writes a count the way people read large ones: 950, 12.3 k,
// 1.2 M, 3.4 G.
func Count(n uint64) string {
	v := float64(n)
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 999_500: // 999.5 k and up rounds to 1 M, not "1000 k"
		return trimZero(v/1e3) + " k"
	case n < 999_500_000:
		return trimZero(v/1e6) + " M"
	}
	return trimZero(v/1e9) + " G"
}

func trimZero(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0")
}

// Subject names one end's NIC: "the server's NIC (lab0 on lr-x-b)".
func (g NICGrowth) Subject() string {
	where := g.Interface
	if g.Host != "" {
		where += " on " + g.Host
	}
	if where == "" {
		return "the " + g.Role + "'s NIC"
	}
	return "the " + g.Role + "'s NIC (" + where + ")"
}

// Clauses says each cause's growth with its counters: "dropped 1.2 M
// frames for lack of RX buffers (rx_out_of_buffer)".
func (g NICGrowth) Clauses() []string {
	out := make([]string, len(g.Causes))
	for i, c := range g.Causes {
		out[i] = CauseWords(c.Cause, c.Value)
		if len(c.Sources) > 0 {
			out[i] += " (" + strings.Join(c.Sources, ", ") + ")"
		}
	}
	return out
}

// growthOf returns the growth of role's end in gs, or the zero NICGrowth.
func growthOf(gs []NICGrowth, role string) NICGrowth {
	for _, g := range gs {
		if g.Role == role {
			return g
		}
	}
	return NICGrowth{Role: role}
}

func (g NICGrowth) value(cause string) (uint64, bool) {
	for _, c := range g.Causes {
		if c.Cause == cause {
			return c.Value, true
		}
	}
	return 0, false
}

// explainNICBuckets says what the NICs counted during the slowest
// bucket's runs, against the fastest's: a sentence per end whose counters
// grew in the slow runs.
func explainNICBuckets(slow, fast []*result.Result, slowName, fastName string) []string {
	gs, gf := NICGrowthOf(slow), NICGrowthOf(fast)
	var out []string
	for _, s := range gs {
		if len(s.Causes) == 0 {
			continue
		}
		f := growthOf(gf, s.Role)
		clauses := s.Clauses()
		for i, c := range s.Causes {
			switch v, ok := f.value(c.Cause); {
			case f.Runs == 0:
			case !ok || v == 0:
				clauses[i] += fmt.Sprintf(", none in the %s runs", fastName)
			default:
				clauses[i] += fmt.Sprintf(", %s in the %s runs", Count(v), fastName)
			}
		}
		out = append(out, fmt.Sprintf("During the %s runs %s %s.", slowName, s.Subject(), joinClauses(clauses)))
	}
	if len(out) == 0 && anyRead(gs) {
		out = append(out, fmt.Sprintf("No NIC counter of either end grew during the %s runs: the NICs dropped nothing.", slowName))
	}
	return out
}

// explainNICPoint says what the NICs counted during a point's runs when
// the runs did not fall into buckets: drops that cost every run alike.
func explainNICPoint(point string, runs []*result.Result) []string {
	var out []string
	for _, g := range NICGrowthOf(runs) {
		if len(g.Causes) > 0 {
			out = append(out, fmt.Sprintf("%s: during the %d run%s %s %s.", point, len(runs), plural(len(runs)), g.Subject(), joinClauses(g.Clauses())))
		}
	}
	return out
}

func anyRead(gs []NICGrowth) bool {
	for _, g := range gs {
		if g.Runs > 0 {
			return true
		}
	}
	return false
}

// joinClauses joins clauses as a list: "a", "a and b" (or "a, x; and
// b" when a has commas of its own), "a; b; and c".
func joinClauses(cs []string) string {
	switch len(cs) {
	case 0:
		return ""
	case 1:
		return cs[0]
	case 2:
		if strings.Contains(cs[0], ",") {
			return cs[0] + "; and " + cs[1]
		}
		return cs[0] + " and " + cs[1]
	}
	return strings.Join(cs[:len(cs)-1], "; ") + "; and " + cs[len(cs)-1]
}

// NICLine says in one line what the NIC counters of a run's ends grew
// by, for the text output: "NIC counters: server lab0: qdisc_drops 1234
// (qdisc.drops)"; "" when nothing grew.
func NICLine(n *result.NICCounters) string {
	var parts []string
	for _, role := range []string{"client", "server"} {
		d := n.End(role)
		grew := d.Grew()
		if len(grew) == 0 {
			continue
		}
		var cs []string
		for _, c := range causeOrder(grew) {
			s := fmt.Sprintf("%s %d", c, grew[c])
			var names []string
			for name, v := range d.Sources[c] {
				if v > 0 {
					names = append(names, name)
				}
			}
			if len(names) > 0 {
				slices.Sort(names)
				s += " (" + strings.Join(names, ", ") + ")"
			}
			cs = append(cs, s)
		}
		parts = append(parts, role+" "+d.Interface+": "+strings.Join(cs, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return "NIC counters grew: " + strings.Join(parts, "; ")
}
