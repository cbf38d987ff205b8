package report

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/fleet"
)

// incastNet is a fleet.Runner for an incast's report: the receiver takes
// capGbps and shares it among the senders, one of which gets a third of
// the others' share; one sender's test fails.
type incastNet struct {
	capGbps float64
	short   string
	fail    string
}

func (f incastNet) Run(_ context.Context, s fleet.Spec) (fleet.Measurement, error) {
	if s.From.Name == f.fail {
		return fleet.Measurement{}, fmt.Errorf("the agent at %s:5301: connection refused", s.From.Address)
	}
	w := 1.0
	if s.From.Name == f.short {
		w = 1.0 / 3
	}
	senders := float64(s.AtOnce)
	if f.fail != "" {
		senders--
	}
	re := uint64(40 * w)
	return fleet.Measurement{Gbps: f.capGbps * w / (senders - 1 + 1.0/3), RunID: int64(len(s.From.Name) + int(w*10)), Retransmits: &re,
		ToNIC: &fleet.NICReading{Interface: "lab0", Deltas: map[string]uint64{"rx_no_buffer": 0, "qdisc_drops": 7}}}, nil
}

// TestFleetReportIncast: an incast's report shows its senders as bars
// against the fair share, the short sender marked and named with how much
// less it got, the failed one with its error, the sum at the receiver,
// Jain's index and the receiver's drops; no matrix, no outliers.
func TestFleetReportIncast(t *testing.T) {
	hosts := make([]fleet.Host, 6)
	for i := range hosts {
		hosts[i] = fleet.Host{Name: fmt.Sprintf("h%02d", i+1), Address: fmt.Sprintf("198.18.0.%d", i+1)}
	}
	res, err := fleet.Run(context.Background(), hosts, fleet.Options{Pattern: fleet.Pattern{Kind: fleet.PatternIncast, Center: "h06"},
		Duration: 5 * time.Second, Streams: 1, Label: "fleet-incast"}, incastNet{capGbps: 9.4, short: "h02", fail: "h04"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := BuildFleet(res, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	page := modelHTML(t, m)
	count := func(re string) int { return matches(page, re) }
	for _, c := range []struct {
		what      string
		got, want int
	}{
		{"bars", count(`<rect class="bar (measured|binding)"[^>]*><title>h0\d → h06`), 4},
		{"short bars", count(`<rect class="bar binding"[^>]*><title>h02 → h06`), 1},
		{"fair share line", count(`<line class="ref"`), 1},
		{"short rows", count(`<tr class="crit"><td>h02</td>`), 1},
		{"failed rows", count(`<tr class="crit"><td>h04</td><td class="num">failed</td>`), 1},
		{"matrix cells", count(`class="fl-cell"`), 0},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.what, c.got, c.want)
		}
	}
	in := res.Incast
	for _, want := range []string{
		"Incast to h06", "Jain&#39;s fairness index across the senders is " + num(*in.JainIndex, 3),
		"took " + gbpsOrZero(*in.SumGbps) + " Gbit/s from its senders together",
		"short: 60% less than its fair share", "sum at h06", "qdisc_drops 7", "the largest of 4 readings",
		"the senders retransmitted 133 segments", "connection refused", "5 senders to h06 at once",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, not := range []string{"Pair matrix", "Outliers", "Re-tests"} {
		if strings.Contains(page, "<h2>"+not) || strings.Contains(page, ">"+not+"</h2>") {
			t.Errorf("an incast's page has a %s section", not)
		}
	}

	dir := t.TempDir()
	md := filepath.Join(dir, "fleet.md")
	if err := WriteMarkdown(md, m); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(md)
	for _, want := range []string{"![Incast to h06", "fleet-fleet-incast.svg", "| h02 |", "| sum at h06 |"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, text)
		}
	}
	if svg, err := os.ReadFile(filepath.Join(dir, "fleet-fleet-incast.svg")); err != nil || !strings.Contains(string(svg), "bar binding") {
		t.Errorf("incast SVG: %v", err)
	}
}
