package doctor

import (
	"slices"
	"testing"

	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/limits"
)

// TestDiagnoseOptionsEcho: the report repeats the options, never null.
func TestDiagnoseOptionsEcho(t *testing.T) {
	rep := run(t, healthy(), Options{Ifaces: []string{"enp1s0f0np0"}, AppCPUs: []int{6}})
	if !slices.Equal(rep.Options.Ifaces, []string{"enp1s0f0np0"}) || !slices.Equal(rep.Options.AppCPUs, []int{6}) {
		t.Errorf("options %+v", rep.Options)
	}
	rep = run(t, healthy(), Options{})
	if rep.Options.Ifaces == nil || len(rep.Options.Ifaces) != 0 || rep.Options.AppCPUs == nil || len(rep.Options.AppCPUs) != 0 {
		t.Errorf("no options: %+v", rep.Options)
	}
	// A host whose online CPUs are unknown cannot refuse --app-cpus.
	inv := healthy()
	inv.CPU.Online = nil
	if _, err := Diagnose(inv, Options{AppCPUs: []int{3}}); err != nil {
		t.Errorf("unknown online CPUs: %v", err)
	}
}

// TestQdiscShapesLine: a qdisc shapes the line rate only below it.
func TestQdiscShapesLine(t *testing.T) {
	for _, tt := range []struct {
		rate float64
		want string
	}{{100, "100GbE link"}, {200, "100GbE link"}, {40, "tbf qdisc shaped to 40 Gbit/s"}} {
		inv := healthy()
		inv.NICs[0].Qdisc = &inventory.Qdisc{Kind: "tbf", RateGbps: fp(tt.rate)}
		d := &diag{inv: inv, opts: Options{RTT: DefaultRTT}}
		if got := d.view(&inv.NICs[0], false).lineDetail; got != tt.want {
			t.Errorf("qdisc at %v: %q; want %q", tt.rate, got, tt.want)
		}
	}
}

// TestFastPortEdge: a down port of an unknown driver matters from
// 10 Gbit/s.
func TestFastPortEdge(t *testing.T) {
	for _, tt := range []struct {
		speed int
		want  bool
	}{{10000, true}, {9999, false}, {1000, false}} {
		v := &nicView{NIC: &inventory.NIC{Driver: "foo"}, line: 0}
		v.line = limits.Gbps(float64(tt.speed) / 1000)
		if got := v.fast(); got != tt.want {
			t.Errorf("%d Mbit/s: fast %v", tt.speed, got)
		}
	}
}

// TestCauseRankAndCounts: the first root cause sorts first; Count counts.
func TestCauseRankAndCounts(t *testing.T) {
	f := []Finding{{ID: "fec.off", Severity: Warning}, {ID: "transceiver.unreadable", Severity: Warning}}
	sortFindings(f)
	if f[0].ID != "transceiver.unreadable" {
		t.Errorf("order %v", f)
	}
	r := &Report{Findings: []Finding{{Severity: Critical}, {Severity: Warning}, {Severity: Warning}}}
	if r.Count(Warning) != 2 || r.Count(Critical) != 1 || r.Count(Info) != 0 || r.Worst() != Critical {
		t.Errorf("count %d %d %d, worst %s", r.Count(Warning), r.Count(Critical), r.Count(Info), r.Worst())
	}
}
