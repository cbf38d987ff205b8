package mesh

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// matrix makes every directed pair of n hosts ok, then applies set.
func matrix(n int, set func(src, dst string, p *PairStatus)) ([]string, []PairStatus) {
	var hosts []string
	for i := range n {
		hosts = append(hosts, fmt.Sprintf("h%02d", i+1))
	}
	var pairs []PairStatus
	for _, a := range hosts {
		for _, b := range hosts {
			if a == b {
				continue
			}
			p := PairStatus{Src: a, Dst: b, State: OK, Since: t0}
			if set != nil {
				set(a, b, &p)
			}
			pairs = append(pairs, p)
		}
	}
	return hosts, pairs
}

func degrade(p *PairStatus, at time.Time) {
	p.State, p.Since, p.Why = Degraded, at, "loss 5.0% (10 of 200 probes) against 0.1% before"
}

func names(sus []Suspect) []string {
	var out []string
	for _, s := range sus {
		out = append(out, s.Kind+" "+s.Name+" "+s.Side)
	}
	return out
}

func TestBlame(t *testing.T) {
	at := t0.Add(time.Minute)
	for _, c := range []struct {
		name string
		set  func(src, dst string, p *PairStatus)
		want []string
	}{
		{"healthy", nil, nil},
		{"send side", func(s, d string, p *PairStatus) {
			if s == "h03" {
				degrade(p, at)
			}
		}, []string{"host h03 send"}},
		{"receive side", func(s, d string, p *PairStatus) {
			if d == "h05" && s != "h01" {
				degrade(p, at)
			}
		}, []string{"host h05 receive"}},
		{"both sides", func(s, d string, p *PairStatus) {
			if s == "h02" || d == "h02" {
				degrade(p, at)
			}
		}, []string{"host h02 both"}},
		{"one path one way", func(s, d string, p *PairStatus) {
			if s == "h04" && d == "h01" {
				degrade(p, at)
			}
		}, []string{"path h01-h04 receive"}},
		{"one path both ways", func(s, d string, p *PairStatus) {
			if s == "h04" && d == "h06" || s == "h06" && d == "h04" {
				degrade(p, at)
			}
		}, []string{"path h04-h06 both"}},
		{"host gone", func(s, d string, p *PairStatus) {
			switch {
			case d == "h07":
				p.State, p.Since, p.Why = Down, at, "no reply to 100 probes in 10s"
			case s == "h07":
				p.State, p.Why = Down, "its agent does not answer"
			}
		}, []string{"host h07 both"}},
		{"inconclusive counts for nothing", func(s, d string, p *PairStatus) {
			if s == "h03" {
				p.Inconclusive = "RTT p50 up to 900 µs against 60 µs before, but a host's CPU was busy with other work then"
			}
		}, nil},
		{"a host and a path", func(s, d string, p *PairStatus) {
			if s == "h03" || s == "h01" && d == "h02" {
				degrade(p, at)
			}
		}, []string{"host h03 send", "path h01-h02 send"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			hosts, pairs := matrix(8, c.set)
			ev := map[string]*HostEvidence{"h03": {Interface: "lab0", NIC: map[string]uint64{"qdisc_drops": 0}, SpanS: 60}}
			sus := Blame(hosts, pairs, ev, at.Add(PathSettle))
			if got := names(sus); !slices.Equal(got, c.want) {
				t.Fatalf("suspects %q, want %q", got, c.want)
			}
			for _, s := range sus {
				if s.Kind == KindHost && !s.Since.Equal(at) || len(s.Evidence) == 0 {
					t.Errorf("%+v", s)
				}
			}
			v := Summary(pairs, sus)
			if (len(c.want) == 0) != strings.Contains(v, "nothing suspected") {
				t.Errorf("verdict %q", v)
			}
		})
	}
}

// TestBlameEvidence: a suspected host carries the pairs' figures and its
// own record.
func TestBlameEvidence(t *testing.T) {
	hosts, pairs := matrix(4, func(s, d string, p *PairStatus) {
		if s == "h02" {
			degrade(p, t0)
		}
	})
	busy := 97.0
	ev := map[string]*HostEvidence{"h02": {Interface: "lab0", NIC: map[string]uint64{"phy_errors": 12, "fec_corrected": 0},
		Module: []string{"lane 3: rx_power_low_alarm"}, CPUBusyPct: &busy, Top: []ProcUse{{PID: 42, Name: "stress-ng", CPUPct: 99}}, SpanS: 60}}
	sus := Blame(hosts, pairs, ev, t0)
	if len(sus) != 1 {
		t.Fatal(names(sus))
	}
	all := strings.Join(sus[0].Evidence, "\n")
	for _, want := range []string{"sends badly to 3 of 3", "h01 (loss 5.0%", "lab0 counted 12 phy_errors in the last 60 s",
		"lane 3: rx_power_low_alarm", "97% busy", "stress-ng (pid 42) 99% of a CPU"} {
		if !strings.Contains(all, want) {
			t.Errorf("evidence lacks %q:\n%s", want, all)
		}
	}
}

// TestPathSettles: one degraded pair is not a path suspect until it has
// been so for PathSettle (a host's pairs degrade one by one).
func TestPathSettles(t *testing.T) {
	hosts, pairs := matrix(8, func(s, d string, p *PairStatus) {
		if s == "h03" && d == "h01" {
			degrade(p, t0)
		}
	})
	if sus := Blame(hosts, pairs, nil, t0.Add(PathSettle-time.Second)); len(sus) != 0 {
		t.Errorf("at once: %q", names(sus))
	}
	if sus := Blame(hosts, pairs, nil, t0.Add(PathSettle)); len(sus) != 1 {
		t.Errorf("settled: %q", names(sus))
	}
}
