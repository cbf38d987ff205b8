package doctor

import (
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/limits"
)

// TestPCIeDowngradedEdges: a width drop that still carries the line
// rate exactly is a warning; the line rate is evidence only when known.
func TestPCIeDowngradedEdges(t *testing.T) {
	x8 := func(eff float64, speed *int) []Finding {
		inv := healthy()
		inv.NICs[0].SpeedMbps = speed
		p := inv.NICs[0].PCIe
		p.CurWidth, p.Downgraded, p.EffGbps = ip(8), true, fp(eff)
		return find(run(t, inv, Options{}), "pcie.link_downgraded")
	}
	if f := x8(100, ip(100000)); len(f) != 1 || f[0].Severity != Warning || f[0].Evidence["line_rate_gbps"] != 100.0 {
		t.Errorf("x8 carrying exactly 100: %+v", f)
	}
	if f := x8(99.99, ip(100000)); len(f) != 1 || f[0].Severity != Critical {
		t.Errorf("x8 carrying 99.99 of 100: %+v", f)
	}
	f := x8(57.21, nil)
	if len(f) != 1 {
		t.Fatalf("no speed: %+v", f)
	}
	if _, ok := f[0].Evidence["line_rate_gbps"]; ok {
		t.Errorf("line_rate_gbps without a speed: %v", f[0].Evidence)
	}
}

// TestPctAndEnoughLinks: pct of nothing is 0; a link whose effective
// bandwidth equals the need is enough.
func TestPctAndEnoughLinks(t *testing.T) {
	if got := pct(5, 0); got != 0 {
		t.Errorf("pct(5, 0) = %d", got)
	}
	if got := pct(1, 3); got != 33 {
		t.Errorf("pct(1, 3) = %d", got)
	}
	bw, err := limits.PCIe(limits.PCIeLink{GTs: 8, Width: 8, MPS: 256})
	if err != nil {
		t.Fatal(err)
	}
	got := enoughLinks(bw.Effective, fp(8), 256)
	if !strings.HasSuffix(got, "PCIe "+bw.Generation+" x8 ("+bw.Effective.Round().String()+" Gbit/s)") {
		t.Errorf("need = Gen3 x8's own bandwidth: %q", got)
	}
}

// TestPCIeLinkedPortsCount: a port that is up but of unknown speed is not
// one of the card's linked ports.
func TestPCIeLinkedPortsCount(t *testing.T) {
	inv := healthy()
	ports := []string{"enp1s0f0np0", "enp1s0f1np1", "enp1s0f2np2"}
	inv.NICs[0].CardPorts = ports
	for i, speed := range []*int{ip(100000), nil} {
		p := inv.NICs[0]
		p.Interface, p.PCI, p.SpeedMbps, p.IRQs = ports[i+1], "0000:01:00."+itoa(i+1), speed, nil
		pcie := *inv.NICs[0].PCIe
		p.PCIe = &pcie
		inv.NICs = append(inv.NICs, p)
	}
	f := find(run(t, inv, Options{}), "pcie.bandwidth_below_line_rate")
	if len(f) != 1 || !strings.Contains(f[0].Summary, "not for all 2 linked ports together (200 Gbit/s)") {
		t.Errorf("%+v", f)
	}
}

// TestCardOf: a PCI address names its card; a damaged snapshot's address
// without a function (or none at all) is its own card, never a crash.
func TestCardOf(t *testing.T) {
	for in, want := range map[string]string{"0000:01:00.0": "0000:01:00", "0000:01:00.1": "0000:01:00", "": "", "x": "x", "0000:01:00.": "0000:01:00"} {
		if got := cardOf(in); got != want {
			t.Errorf("cardOf(%q) = %q, want %q", in, got, want)
		}
	}
}
