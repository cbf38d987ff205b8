package explain

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// WriteSummary writes a campaign summary for people: a line per point,
// then the explanation.
func WriteSummary(w io.Writer, s *Summary) error {
	var b strings.Builder
	if s.CampaignID != 0 {
		fmt.Fprintf(&b, "campaign %d: %s to %s\n", s.CampaignID, s.Engine, s.Peer)
	}
	if isTransactionsSummary(s) {
		writeTransactionsSummary(&b, s)
		writeExplanation(&b, s)
		_, err := io.WriteString(w, b.String())
		return err
	}
	if isLatencySummary(s) {
		writeLatencySummary(&b, s)
		writeExplanation(&b, s)
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "%-8s %-10s %5s %9s %9s %9s  %-19s %-8s %s\n", "streams", "placement", "runs", "median", "min", "max", "95% CI (Gbit/s)", "ceiling", "CPU s/Gbit (client/server)")
	var notes []string
	for _, p := range s.Points {
		share := "-"
		if p.CeilingShare != nil {
			share = fmt.Sprintf("%.0f%%", 100**p.CeilingShare)
		}
		ci := "none (see below)"
		if p.CI95Gbps != nil {
			ci = fmt.Sprintf("%.2f-%.2f", p.CI95Gbps[0], p.CI95Gbps[1])
		} else if p.CINote != "" && !slices.Contains(notes, p.CINote) {
			notes = append(notes, p.CINote)
		}
		fmt.Fprintf(&b, "%-8d %-10s %5d %9.2f %9.2f %9.2f  %-19s %-8s %s/%s\n", p.Streams, p.Placement, p.Runs,
			p.MedianGbps, p.MinGbps, p.MaxGbps, ci, share,
			optFloat(p.CPUPerGbit.Client), optFloat(p.CPUPerGbit.Server))
	}
	for _, n := range notes {
		b.WriteString("95% CI: " + n + ".\n")
	}
	writeExplanation(&b, s)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeExplanation(b *strings.Builder, s *Summary) {
	for _, e := range s.Explanation {
		b.WriteString("\n" + e)
	}
	b.WriteString("\n")
}

// isLatencySummary reports whether a summary is a ping-pong campaign's.
func isLatencySummary(s *Summary) bool {
	return len(s.Points) > 0 && s.Points[0].Latency != nil
}

func optFloat(p *float64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatFloat(*p, 'f', 3, 64)
}
