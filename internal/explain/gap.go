package explain

import (
	"fmt"
	"strings"

	"github.com/linerate/linerate/internal/result"
)

// causeWords says what each cause of a gap (result.Gap) means, for the
// line that leads an explanation.
var causeWords = map[string]string{
	"sender_buffer":   "the sender's send buffer",
	"receiver_window": "the receiver's window",
	"network":         "loss on the path",
	"path_rate":       "a shaped or slower path",
	"sender_cpu":      "the sender's CPU",
	"receiver_cpu":    "the receiver's CPU",
	"nic_drops":       "NIC drops",
	"pacing":          "the pacing rate asked",
	"app_limited":     "the application's own rate",
}

// GapLines are the lines that open a run's explanation: the dominant
// limit, how much of the gap it holds and the fix that removes it, then
// the other shares and what no evidence named. None when g is nil.
func GapLines(g *result.Gap) []string {
	if g == nil {
		return nil
	}
	of := "of the run's time (no ceiling known)"
	if g.MissingGbps != nil {
		of = fmt.Sprintf("of the %.2f Gbit/s missing below the %.2f Gbit/s ceiling", *g.MissingGbps, *g.CeilingGbps)
	}
	if g.Dominant == "" {
		return []string{fmt.Sprintf("Limit: none named: %s unaccounted (TCP's account below names what is known).", pctText(g.UnaccountedShare))}
	}
	top := g.Shares[0]
	out := []string{fmt.Sprintf("Limit: %s (%s) — %s %s.", g.Dominant, causeWords[g.Dominant], shareText(top), of)}
	if g.Fix != "" {
		out = append(out, "Fix: "+g.Fix+".")
	}
	var rest []string
	for _, s := range g.Shares[1:] {
		rest = append(rest, s.Cause+" "+shareText(s))
	}
	if g.UnaccountedShare > 0 {
		rest = append(rest, "unaccounted "+pctText(g.UnaccountedShare))
	}
	if len(rest) > 0 {
		out = append(out, "Also: "+strings.Join(rest, ", ")+".")
	}
	return out
}

// GapSentence is the gap in one sentence, for a campaign point.
func GapSentence(point string, g *result.Gap) string {
	if g == nil || g.Dominant == "" {
		return ""
	}
	s := fmt.Sprintf("%s: limited by %s (%s, %s", point, g.Dominant, causeWords[g.Dominant], shareText(g.Shares[0]))
	if g.UnaccountedShare > 0 {
		s += fmt.Sprintf("; %s unaccounted", pctText(g.UnaccountedShare))
	}
	s += ")"
	if g.Fix != "" {
		s += "; fix: " + g.Fix
	}
	return s + "."
}

// GapChange says when the dominant limit differs between A and B ("" when
// it does not, or either is unknown).
func GapChange(a, b *result.Gap) string {
	if a == nil || b == nil || a.Dominant == b.Dominant || a.Dominant == "" || b.Dominant == "" {
		return ""
	}
	return fmt.Sprintf("the dominant limit changed: A was held by %s (%s), B by %s (%s)",
		a.Dominant, shareText(a.Shares[0]), b.Dominant, shareText(b.Shares[0]))
}

func shareText(s result.GapShare) string {
	t := pctText(s.Share)
	if s.Gbps != nil {
		t = fmt.Sprintf("%.2f Gbit/s, %s", *s.Gbps, t)
	}
	return t
}

func pctText(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }

// LeadWithGaps opens a campaign's explanation with each point's dominant
// limit and its fix (PointSummary.Gap).
func LeadWithGaps(s *Summary) {
	var lead []string
	for _, p := range s.Points {
		if l := GapSentence(pointName(p), p.Gap); l != "" {
			lead = append(lead, l)
		}
	}
	s.Explanation = append(lead, s.Explanation...)
}

func pointName(p PointSummary) string {
	place := p.Placement
	if place == "" {
		place = "auto"
	}
	return fmt.Sprintf("%d stream%s, placement %s", p.Streams, plural(p.Streams), place)
}
