package mesh

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// votes counts one side of one host: the pairs judged (ok, degraded or
// down, and conclusive) and those of them degraded or down.
type votes struct {
	judged int
	bad    []PairStatus
}

func (v votes) most() bool { return v.judged >= 2 && 2*len(v.bad) > v.judged }

// since is when most of the side's pairs had gone bad: the k-th earliest
// of the bad pairs' since, k a majority of the judged.
func (v votes) since() time.Time {
	s := make([]time.Time, 0, len(v.bad))
	for _, p := range v.bad {
		s = append(s, p.Since)
	}
	slices.SortFunc(s, time.Time.Compare)
	k := min(v.judged/2, len(s)-1)
	return s[k]
}

// conclusive: the pair was judged, and nothing its own record excuses
// holds it back (an ok pair that only contention kept from degrading
// tells nothing either way).
func conclusive(p PairStatus) bool {
	switch p.State {
	case Degraded, Down:
		return true
	case OK:
		return p.Inconclusive == ""
	}
	return false
}

func bad(p PairStatus) bool { return p.State == Degraded || p.State == Down }

// PathSettle is how long a pair must have been degraded before it alone
// makes its path a suspect: when a host's side fails, its pairs degrade
// one by one over some seconds, and the first ones are no path's fault.
const PathSettle = 30 * time.Second

// Blame names the hosts and paths that the pairs point at at now (the
// package comment has the rules), each with what the pairs show and the
// host's own evidence (by host name; a host without any is fine). It
// returns an empty list, never nil, when nothing is suspected.
func Blame(hosts []string, pairs []PairStatus, ev map[string]*HostEvidence, now time.Time) []Suspect {
	out := map[string]*votes{}
	in := map[string]*votes{}
	knownOut := map[string]int{}
	for _, h := range hosts {
		out[h], in[h] = &votes{}, &votes{}
	}
	for _, p := range pairs {
		o, i := out[p.Src], in[p.Dst]
		if o == nil || i == nil || p.Src == p.Dst {
			continue
		}
		if p.State != Unknown && p.State != Down {
			knownOut[p.Src]++
		}
		if !conclusive(p) {
			continue
		}
		o.judged++
		i.judged++
		if bad(p) {
			o.bad = append(o.bad, p)
			i.bad = append(i.bad, p)
		}
	}
	sus := []Suspect{}
	send := map[string]bool{}
	recv := map[string]bool{}
	for _, h := range hosts {
		o, i := out[h], in[h]
		// Unreachable: every pair into it down, none out of it answered.
		if i.judged >= 2 && len(i.bad) == i.judged && allDown(i.bad) && knownOut[h] == 0 {
			send[h], recv[h] = true, true
			e := []string{fmt.Sprintf("no peer gets a reply from it (%d of %d pairs into it are down) and its own pairs are not known: its agent or its link is gone", len(i.bad), i.judged)}
			sus = append(sus, Suspect{Kind: KindHost, Name: h, Side: SideBoth, Since: i.since(), Evidence: append(e, ev[h].Sentences()...)})
			continue
		}
		s, r := o.most(), i.most()
		if !s && !r {
			continue
		}
		send[h], recv[h] = s, r
		var e []string
		since := time.Time{}
		side := SideSend
		if s {
			e = append(e, sideSentence("sends", *o))
			since = o.since()
		}
		if r {
			e = append(e, sideSentence("receives", *i))
			if since.IsZero() || i.since().Before(since) {
				since = i.since()
			}
			side = SideReceive
		}
		if s && r {
			side = SideBoth
		}
		sus = append(sus, Suspect{Kind: KindHost, Name: h, Side: side, Since: since, Evidence: append(e, ev[h].Sentences()...)})
	}
	sus = append(sus, paths(hosts, pairs, send, recv, now)...)
	return sus
}

func allDown(ps []PairStatus) bool {
	for _, p := range ps {
		if p.State != Down {
			return false
		}
	}
	return true
}

// sideSentence: "sends with loss or delay to 7 of 7 peers: h02 (loss
// 5.1% …), …".
func sideSentence(verb string, v votes) string {
	const most = 4
	parts := make([]string, 0, most+1)
	for i, p := range v.bad {
		if i == most {
			parts = append(parts, fmt.Sprintf("… (%d in all)", len(v.bad)))
			break
		}
		peer := p.Dst
		if verb == "receives" {
			peer = p.Src
		}
		what := p.Why
		if p.State == Down {
			what = "down: " + p.Why
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", peer, what))
	}
	dir := "to"
	if verb == "receives" {
		dir = "from"
	}
	return fmt.Sprintf("%s badly %s %d of %d peers judged: %s", verb, dir, len(v.bad), v.judged, strings.Join(parts, ", "))
}

// paths blames the bad pairs no suspected host side explains and that
// have been bad for PathSettle, one suspect per pair of hosts ("A-B", A
// first in the host list; side send is A→B).
func paths(hosts []string, pairs []PairStatus, send, recv map[string]bool, now time.Time) []Suspect {
	idx := map[string]int{}
	for i, h := range hosts {
		idx[h] = i
	}
	type key struct{ a, b string }
	found := map[key]*Suspect{}
	var order []key
	for _, p := range pairs {
		if !bad(p) || !conclusive(p) || send[p.Src] || recv[p.Dst] || now.Sub(p.Since) < PathSettle {
			continue
		}
		ia, okA := idx[p.Src]
		ib, okB := idx[p.Dst]
		if !okA || !okB {
			continue
		}
		k, side := key{p.Src, p.Dst}, SideSend
		if ib < ia {
			k, side = key{p.Dst, p.Src}, SideReceive
		}
		s := found[k]
		if s == nil {
			s = &Suspect{Kind: KindPath, Name: k.a + "-" + k.b, Hosts: []string{k.a, k.b}, Side: side, Since: p.Since}
			found[k] = s
			order = append(order, k)
		} else if s.Side != side {
			s.Side = SideBoth
		}
		if p.Since.Before(s.Since) {
			s.Since = p.Since
		}
		what := p.Why
		if p.State == Down {
			what = "down: " + p.Why
		}
		s.Evidence = append(s.Evidence, fmt.Sprintf("%s → %s: %s, while both hosts do well with their other peers", p.Src, p.Dst, what))
	}
	slices.SortFunc(order, func(x, y key) int {
		return cmp.Or(cmp.Compare(idx[x.a], idx[y.a]), cmp.Compare(idx[x.b], idx[y.b]))
	})
	out := make([]Suspect, 0, len(order))
	for _, k := range order {
		out = append(out, *found[k])
	}
	return out
}

// Sentences says what the host's own record shows, one sentence per
// source; nil evidence says nothing.
func (e *HostEvidence) Sentences() []string {
	if e == nil {
		return nil
	}
	var out []string
	span := fmt.Sprintf("in the last %.0f s", e.SpanS)
	iface := e.Interface
	if iface == "" {
		iface = "its interface"
	}
	switch {
	case e.NICNotRead != "":
		out = append(out, fmt.Sprintf("%s's counters could not be read: %s", iface, e.NICNotRead))
	case len(e.NIC) > 0:
		causes := make([]string, 0, len(e.NIC))
		for c, n := range e.NIC {
			if n > 0 {
				causes = append(causes, fmt.Sprintf("%d %s", n, c))
			}
		}
		slices.Sort(causes)
		if len(causes) == 0 {
			out = append(out, fmt.Sprintf("%s counted no drop, error, pause or FEC correction %s", iface, span))
		} else {
			out = append(out, fmt.Sprintf("%s counted %s %s", iface, strings.Join(causes, ", "), span))
		}
	}
	if len(e.Module) > 0 {
		out = append(out, "its module flags "+strings.Join(e.Module, ", "))
	}
	if e.UDPBufferDrops > 0 {
		out = append(out, fmt.Sprintf("it dropped %d datagrams for want of socket buffer %s (its CPU busy elsewhere)", e.UDPBufferDrops, span))
	}
	if e.CPUBusyPct != nil {
		s := fmt.Sprintf("its CPUs were %.0f%% busy with other work than the agent %s", *e.CPUBusyPct, span)
		if len(e.Top) > 0 {
			var top []string
			for _, p := range e.Top {
				top = append(top, fmt.Sprintf("%s (pid %d) %.0f%% of a CPU", p.Name, p.PID, p.CPUPct))
			}
			s += ": " + strings.Join(top, ", ")
		}
		out = append(out, s)
	}
	if e.LateMS >= 10 {
		out = append(out, fmt.Sprintf("its agent woke up to %.0f ms late (a CPU it could run on was taken)", e.LateMS))
	}
	return out
}

// Summary says in one sentence what the mesh found.
func Summary(pairs []PairStatus, sus []Suspect) string {
	n := map[State]int{}
	incon := 0
	for _, p := range pairs {
		n[p.State]++
		if p.State == OK && p.Inconclusive != "" {
			incon++
		}
	}
	counts := fmt.Sprintf("%d of %d pairs ok", n[OK], len(pairs))
	for _, s := range []State{Degraded, Down, Unknown} {
		if n[s] > 0 {
			counts += fmt.Sprintf(", %d %s", n[s], s)
		}
	}
	if incon > 0 {
		counts += fmt.Sprintf(" (%d of them inconclusive: contention on a host)", incon)
	}
	if len(sus) == 0 {
		return counts + "; nothing suspected."
	}
	var names []string
	for _, s := range sus {
		switch s.Kind {
		case KindHost:
			names = append(names, fmt.Sprintf("host %s (%s side)", s.Name, s.Side))
		default:
			names = append(names, fmt.Sprintf("path %s (%s)", s.Name, pathDir(s)))
		}
	}
	return counts + "; suspected: " + strings.Join(names, ", ") + "."
}

func pathDir(s Suspect) string {
	if len(s.Hosts) != 2 {
		return s.Side
	}
	a, b := s.Hosts[0], s.Hosts[1]
	switch s.Side {
	case SideSend:
		return a + " → " + b
	case SideReceive:
		return b + " → " + a
	}
	return "both ways"
}
