package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/store"
)

// runKind is what makes two runs comparable: runs of one kind measure the
// same thing, so their figures may be pooled into one sample. The kind of
// run (tcp, udp, latency, transactions) and its rate decide which figures
// there are: runs that differ in either are never pooled. Engine, streams
// and direction change what is measured; placement, peer and MTU change
// where, which is often what an A/B comparison is about.
type runKind struct {
	Kind      result.Kind `json:"kind"`
	Rate      string      `json:"rate"` // the pace asked ("1 Gbit/s", "10000/s"), "" for as fast as it went
	Engine    string      `json:"engine"`
	Streams   int         `json:"streams"`
	Direction string      `json:"direction"`
	Placement string      `json:"placement"` // the -A pair asked for, "auto" when none
	Peer      string      `json:"peer"`
	MTU       string      `json:"mtu"` // "9000", "1500/9000" (client/server), "" unknown
}

// kindOf reads a stored run's kind; the MTU comes from the doctor reports
// taken with it, for the interfaces the run used.
func kindOf(r *store.Run) runKind {
	k := runKind{Kind: r.Outline.Kind(), Rate: r.Outline.Rate(), Engine: r.Engine, Streams: r.Streams,
		Direction: r.Direction, Placement: r.Placement, Peer: r.Peer}
	if k.Placement == "" {
		k.Placement = "auto"
	}
	if k.Direction == "" {
		k.Direction = "send"
	}
	var doc struct {
		Start struct {
			Client struct{ Iface string } `json:"client"`
			Server struct{ Iface string } `json:"server"`
		} `json:"start"`
	}
	if json.Unmarshal(r.Result, &doc) != nil {
		return k
	}
	c, s := ifaceMTU(r.ClientDoctor, doc.Start.Client.Iface), ifaceMTU(r.ServerDoctor, doc.Start.Server.Iface)
	switch {
	case c == s:
		k.MTU = c
	case c == "" || s == "":
		k.MTU = c + s
	default:
		k.MTU = c + "/" + s
	}
	return k
}

// ifaceMTU is the MTU a doctor report gives for one interface, "" when
// unknown.
func ifaceMTU(rep json.RawMessage, iface string) string {
	if len(rep) == 0 || iface == "" {
		return ""
	}
	var doc struct {
		NICs []struct {
			Interface string `json:"interface"`
			MTU       *int   `json:"mtu"`
		} `json:"nics"`
	}
	if json.Unmarshal(rep, &doc) != nil {
		return ""
	}
	for _, n := range doc.NICs {
		if n.Interface == iface && n.MTU != nil {
			return strconv.Itoa(*n.MTU)
		}
	}
	return ""
}

// measures reports whether two kinds measure the same thing (kind of
// run, rate, engine, streams, direction).
func (k runKind) measures(o runKind) bool {
	return k.Kind == o.Kind && k.Rate == o.Rate && k.Engine == o.Engine && k.Streams == o.Streams && k.Direction == o.Direction
}

// rateName is a kind's rate for a sentence: "unpaced" when none was asked.
func rateName(r string) string {
	if r == "" {
		return "unpaced"
	}
	return r
}

// diff lists the fields in which two kinds differ, as "streams 1 vs 4".
func (k runKind) diff(o runKind) []string {
	var out []string
	add := func(name, a, b string) {
		if a != b {
			out = append(out, fmt.Sprintf("%s %s vs %s", name, orUnknown(a), orUnknown(b)))
		}
	}
	add("kind", string(k.Kind), string(o.Kind))
	if k.Rate != o.Rate {
		out = append(out, fmt.Sprintf("rate %s vs %s", rateName(k.Rate), rateName(o.Rate)))
	}
	add("engine", k.Engine, o.Engine)
	add("streams", strconv.Itoa(k.Streams), strconv.Itoa(o.Streams))
	add("direction", k.Direction, o.Direction)
	add("placement", k.Placement, o.Placement)
	add("peer", k.Peer, o.Peer)
	add("MTU", k.MTU, o.MTU)
	return out
}

// String is "tcp, native, 4 streams, send, placement auto, peer lab:ux1,
// MTU 1500"; "latency at 10000/s, native, 1 stream, placement auto, ...".
func (k runKind) String() string {
	what := string(k.Kind)
	if k.Kind == "" {
		what = string(result.KindTCP)
	}
	if k.Rate != "" {
		what += " at " + k.Rate
	}
	dir := ", " + k.Direction
	if k.Kind == result.KindLatency || k.Kind == result.KindTransactions {
		dir = "" // a round trip goes both ways
	}
	s := fmt.Sprintf("%s, %s, %d stream%s%s, placement %s, peer %s", what, k.Engine, k.Streams, plural(k.Streams), dir, k.Placement, k.Peer)
	if k.MTU != "" {
		s += ", MTU " + k.MTU
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// kindGroup is the runs of one kind in a side.
type kindGroup struct {
	kind runKind
	runs []store.Run
}

// groupRuns splits runs by kind, in order of first appearance.
func groupRuns(runs []store.Run) []kindGroup {
	var out []kindGroup
	for _, r := range runs {
		k := kindOf(&r)
		i := slices.IndexFunc(out, func(g kindGroup) bool { return g.kind == k })
		if i < 0 {
			out = append(out, kindGroup{kind: k})
			i = len(out) - 1
		}
		out[i].runs = append(out[i].runs, r)
	}
	return out
}

// groupsText lists groups for an error: "1 stream (runs 1-3); 4 streams (runs 7, 9)",
// naming only the fields in which the groups differ.
func groupsText(gs []kindGroup) string {
	var parts []string
	for _, g := range gs {
		var ids []int
		for _, r := range g.runs {
			ids = append(ids, int(r.ID))
		}
		var what []string
		for _, d := range gs[0].kind.diff(g.kind) {
			// "streams 1 vs 4": keep the field and this group's value.
			name, _, b := splitDiff(d)
			what = append(what, name+" "+b)
		}
		if len(what) == 0 { // the first group: name it by what the others change
			for _, o := range gs[1:] {
				for _, d := range g.kind.diff(o.kind) {
					name, a, _ := splitDiff(d)
					if w := name + " " + a; !slices.Contains(what, w) {
						what = append(what, w)
					}
				}
			}
		}
		parts = append(parts, fmt.Sprintf("%s (run%s %s)", strings.Join(what, ", "), plural(len(ids)), cpulist.Format(ids)))
	}
	return strings.Join(parts, "; ")
}

// splitDiff splits one of diff's "rate 1 Gbit/s vs unpaced" into the
// field and its two values.
func splitDiff(d string) (name, a, b string) {
	name, rest, _ := strings.Cut(d, " ")
	a, b, _ = strings.Cut(rest, " vs ")
	return name, a, b
}
