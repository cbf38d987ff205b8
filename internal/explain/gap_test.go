package explain

import (
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/result"
)

func fp(v float64) *float64 { return &v }

func TestGapLines(t *testing.T) {
	shaped := &result.Gap{MeasuredGbps: 1.92, Dominant: "path_rate",
		Shares: []result.GapShare{{Cause: "path_rate", Share: 1, Evidence: []string{"tbf"}}},
		Fix:    "the sender's lab0 is shaped to 2 Gbit/s by tbf"}
	window := &result.Gap{CeilingGbps: fp(9.9), MeasuredGbps: 3.02, MissingGbps: fp(6.88), Dominant: "receiver_window",
		Shares:           []result.GapShare{{Cause: "receiver_window", Share: 0.857, Gbps: fp(5.9)}, {Cause: "network", Share: 0.043, Gbps: fp(0.3)}},
		UnaccountedShare: 0.1, Fix: "raise tcp_rmem"}
	tests := []struct {
		name string
		g    *result.Gap
		want []string
	}{
		{"none", nil, nil},
		{"time shares", shaped, []string{
			"Limit: path_rate (a shaped or slower path) — 100% of the run's time (no ceiling known).",
			"Fix: the sender's lab0 is shaped to 2 Gbit/s by tbf."}},
		{"Gbit/s", window, []string{
			"Limit: receiver_window (the receiver's window) — 5.90 Gbit/s, 86% of the 6.88 Gbit/s missing below the 9.90 Gbit/s ceiling.",
			"Fix: raise tcp_rmem.",
			"Also: network 0.30 Gbit/s, 4%, unaccounted 10%."}},
		{"nothing named", &result.Gap{MeasuredGbps: 3, Shares: []result.GapShare{}, UnaccountedShare: 1},
			[]string{"Limit: none named: 100% unaccounted (TCP's account below names what is known)."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := GapLines(tt.g)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
	if c := GapChange(shaped, window); c != "the dominant limit changed: A was held by path_rate (100%), B by receiver_window (5.90 Gbit/s, 86%)" {
		t.Errorf("change %q", c)
	}
	if c := GapChange(window, window); c != "" {
		t.Errorf("same limit: %q", c)
	}
	s := &Summary{Points: []PointSummary{{Streams: 1, Gap: shaped}, {Streams: 4}}, Explanation: []string{"later"}}
	LeadWithGaps(s)
	if len(s.Explanation) != 2 || !strings.HasPrefix(s.Explanation[0], "1 stream, placement auto: limited by path_rate") || s.Explanation[1] != "later" {
		t.Errorf("explanation %q", s.Explanation)
	}
}
