package doctor

import (
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/nicstats"
	"github.com/linerate/linerate/internal/sff"
)

func bp(v bool) *bool { return &v }

// TestActiveModeAndLanes pins how the active link mode and the lane count
// are read: the mode of the current speed (not the first listed), the
// driver's lane count before the mode's suffix, and nothing without a
// link or a speed.
func TestActiveModeAndLanes(t *testing.T) {
	if got := activeMode(nil); got != "" {
		t.Errorf("no link: %q", got)
	}
	if got := activeMode(&inventory.Link{Advertised: []string{"100000baseCR4/Full"}}); got != "" {
		t.Errorf("no speed: %q", got)
	}
	l := &inventory.Link{SpeedMbps: ip(100000), Advertised: []string{"25000baseSR/Full", "100000baseCR4/Full"}}
	if got := activeMode(l); got != "100000baseCR4/Full" {
		t.Errorf("active mode = %q; want 100000baseCR4/Full", got)
	}
	v := &nicView{NIC: &inventory.NIC{Link: l}}
	if got := lanesOf(v); got != 4 {
		t.Errorf("lanes from CR4 = %d; want 4", got)
	}
	l.Lanes = ip(8)
	if got := lanesOf(v); got != 8 {
		t.Errorf("the driver's 8 lanes = %d", got)
	}
	l.Lanes, l.Advertised = nil, []string{"25000baseSR/Full"}
	l.SpeedMbps = ip(25000)
	if got := lanesOf(v); got != 1 {
		t.Errorf("lanes from SR = %d; want 1", got)
	}
}

// TestNeedsRSEdges: above 30 Gbit/s a lane always needs RS-FEC, even on
// a long-reach medium; at 30 and below the long-reach exemption holds.
func TestNeedsRSEdges(t *testing.T) {
	tests := []struct {
		m    string
		gbps float64
		want bool
	}{
		{"100000baseLR4_ER4/Full", 30, false},
		{"100000baseLR4_ER4/Full", 30.01, true},
		{"200000baseLR4/Full", 50, true},
		{"100000baseSR4/Full", 25, true},
		{"100000baseSR4/Full", 24.99, false},
		{"", 50, false},
	}
	for _, tt := range tests {
		if got := needsRS(tt.m, tt.gbps); got != tt.want {
			t.Errorf("needsRS(%q, %v) = %v; want %v", tt.m, tt.gbps, got, tt.want)
		}
	}
}

// TestFECOffSummary pins fec.off's per-lane arithmetic: 100 Gbit/s on a
// CR4 link is 25 Gbit/s per lane.
func TestFECOffSummary(t *testing.T) {
	inv := healthy()
	n := &inv.NICs[0]
	n.Link = &inventory.Link{SpeedMbps: ip(100000), SupportedMaxMbps: ip(100000), Advertised: []string{"100000baseCR4/Full"}}
	n.FEC = &inventory.FEC{Active: ptrS("off"), Configured: []string{"off"}}
	f := find(run(t, inv, Options{}), "fec.off")
	if len(f) != 1 || !strings.HasPrefix(f[0].Summary, "enp1s0f0np0 runs 100000baseCR4/Full at 25 Gbit/s per lane with FEC off") ||
		f[0].Evidence["lanes"] != 4 || f[0].Evidence["speed_mbps"] != 100000 {
		t.Errorf("fec.off: %+v", f)
	}
	// 50G over 2 lanes of LR: 25 per lane, long reach, no finding.
	n.Link = &inventory.Link{SpeedMbps: ip(100000), SupportedMaxMbps: ip(100000), Lanes: ip(4), Advertised: []string{"100000baseLR4_ER4/Full"}}
	if f := find(run(t, inv, Options{}), "fec.off"); len(f) != 0 {
		t.Errorf("LR4 at 25 per lane: %+v", f)
	}
}

// fecDown returns a host whose port is down with the given FEC settings.
func fecDown(local, partner []string, detected *bool) *inventory.Inventory {
	inv := healthy()
	n := &inv.NICs[0]
	n.Operstate = "down"
	n.Link = &inventory.Link{PartnerFEC: partner, Detected: detected}
	n.FEC = &inventory.FEC{Configured: local}
	return inv
}

// TestFECMismatchEdges: a mismatch needs both a partner list and a local
// one; a detected link is no mismatch; the driver's ext state goes into
// the evidence only when it gave one.
func TestFECMismatchEdges(t *testing.T) {
	f := find(run(t, fecDown([]string{"RS"}, []string{"BaseR"}, bp(false)), Options{}), "fec.mismatch")
	if len(f) != 1 || !strings.Contains(f[0].Summary, "it is configured for RS while the partner advertises BaseR") {
		t.Fatalf("RS against BaseR: %+v", f)
	}
	if _, ok := f[0].Evidence["ext_state"]; ok {
		t.Errorf("ext_state without one: %v", f[0].Evidence)
	}
	if got := Quote(f[0].Fix[0].Command); got != "ethtool --set-fec enp1s0f0np0 encoding baser" {
		t.Errorf("fix = %q", got)
	}
	if f := find(run(t, fecDown([]string{"RS"}, []string{"BaseR"}, bp(true)), Options{}), "fec.mismatch"); len(f) != 0 {
		t.Errorf("link detected: %+v", f)
	}
	if f := find(run(t, fecDown([]string{"RS"}, nil, bp(false)), Options{}), "fec.mismatch"); len(f) != 0 {
		t.Errorf("no partner list: %+v", f)
	}
	if f := find(run(t, fecDown(nil, []string{"RS"}, bp(false)), Options{}), "fec.mismatch"); len(f) != 0 {
		t.Errorf("no local list: %+v", f)
	}
	inv := fecDown([]string{"RS"}, nil, nil)
	inv.NICs[0].Link.ExtState, inv.NICs[0].Link.ExtSubstate = "Link training failure", "FEC is not locked"
	f = find(run(t, inv, Options{}), "fec.mismatch")
	if len(f) != 1 || f[0].Evidence["ext_state"] != "Link training failure: FEC is not locked" ||
		!strings.HasSuffix(f[0].Summary, "the driver says: Link training failure, FEC is not locked") {
		t.Errorf("ext state: %+v", f)
	}
}

// TestFECUncorrectableEdges: the worst lane is the first of equals; an
// empty lane list gives no hint; a bench delta of zero stays a warning.
func TestFECUncorrectableEdges(t *testing.T) {
	inv := healthy()
	n := &inv.NICs[0]
	n.FEC = &inventory.FEC{Active: ptrS("RS"), UncorrectableBlocks: ptrU(23),
		Lanes: &inventory.FECLanes{UncorrectableBlocks: []uint64{5, 9, 9, 0}}}
	f := find(run(t, inv, Options{}), "fec.uncorrectable")
	if len(f) != 1 || !strings.Contains(f[0].Summary, "; FEC lane 1 (of lanes 0-3, as ethtool numbers them) carries the most (9)") {
		t.Errorf("worst lane: %+v", f)
	}
	n.FEC.Lanes.UncorrectableBlocks = []uint64{}
	f = find(run(t, inv, Options{}), "fec.uncorrectable")
	if len(f) != 1 || strings.Contains(f[0].Summary, "FEC lane") {
		t.Errorf("no lanes: %+v", f)
	}
	if _, ok := f[0].Evidence["uncorrectable_by_lane"]; ok {
		t.Errorf("empty lane list in the evidence: %v", f[0].Evidence)
	}
	zero := nicstats.Counters{Delta: true, ByCause: map[nicstats.Cause]nicstats.Count{nicstats.FECUncorrectable: {Value: 0}}}
	f = find(run(t, inv, Options{CounterDeltas: map[string]nicstats.Counters{"enp1s0f0np0": zero}}), "fec.uncorrectable")
	if len(f) != 1 || f[0].Severity != Warning {
		t.Errorf("delta 0: %+v", f)
	}
}

// speedInv returns a host linked at speed of a NIC supporting supMax, with
// a module of modMbps (no module when modMbps < 0).
func speedInv(speed, supMax, modMbps int) *inventory.Inventory {
	inv := healthy()
	n := &inv.NICs[0]
	n.SpeedMbps = ip(speed)
	n.Link = &inventory.Link{SpeedMbps: ip(speed), SupportedMaxMbps: ip(supMax)}
	if modMbps >= 0 {
		n.Transceiver = &inventory.Transceiver{Readable: true, Module: &sff.Module{Identifier: "QSFP28", Media: "40G SR4", SpeedMbps: modMbps}}
	}
	return inv
}

// TestLinkSpeedBelowMaxEdges pins link.speed_below_max: who limits the
// speed (the module only when it is slower than the NIC and known), the
// exact summary, the partner note and the autoneg-off fix.
func TestLinkSpeedBelowMaxEdges(t *testing.T) {
	tests := []struct {
		speed, supMax, mod int
		want               string // "" for no finding
	}{
		{25000, 100000, 40000, "enp1s0f0np0 is linked at 25 Gbit/s though the NIC and its 40G SR4 module support 40 Gbit/s"},
		{40000, 100000, 40000, ""},
		{25000, 100000, 100000, "enp1s0f0np0 is linked at 25 Gbit/s though the NIC supports 100 Gbit/s"},
		{25000, 100000, 0, "enp1s0f0np0 is linked at 25 Gbit/s though the NIC supports 100 Gbit/s"},
		{25000, 100000, -1, "enp1s0f0np0 is linked at 25 Gbit/s though the NIC supports 100 Gbit/s"},
		{100000, 100000, -1, ""},
	}
	for _, tt := range tests {
		f := find(run(t, speedInv(tt.speed, tt.supMax, tt.mod), Options{}), "link.speed_below_max")
		switch {
		case tt.want == "" && len(f) != 0:
			t.Errorf("%d of %d (module %d): %s; want none", tt.speed, tt.supMax, tt.mod, f[0].Summary)
		case tt.want != "" && (len(f) != 1 || f[0].Summary != tt.want):
			t.Errorf("%d of %d (module %d): %+v\nwant %q", tt.speed, tt.supMax, tt.mod, f, tt.want)
		}
	}
	inv := speedInv(25000, 100000, -1)
	f := find(run(t, inv, Options{}), "link.speed_below_max")
	if _, ok := f[0].Evidence["partner_advertised"]; ok {
		t.Errorf("partner_advertised without a partner: %v", f[0].Evidence)
	}
	if f[0].Evidence["max_mbps"] != 100000 || Quote(f[0].Fix[0].Command) != "ethtool -s enp1s0f0np0 speed 100000 duplex full" {
		t.Errorf("evidence %v, fix %q", f[0].Evidence, Quote(f[0].Fix[0].Command))
	}
	for _, p := range [][]string{{"Autoneg"}, {"25000baseCR/Full", "100000baseCR4/Full"}} {
		inv.NICs[0].Link.PartnerAdvertised = p
		f := find(run(t, inv, Options{}), "link.speed_below_max")
		if len(f) != 1 || strings.Contains(f[0].Summary, "partner advertises") {
			t.Errorf("partner %v: %+v", p, f)
		}
	}
	inv.NICs[0].Link.PartnerAdvertised = []string{"25000baseCR/Full"}
	inv.NICs[0].Link.Autoneg = bp(false)
	f = find(run(t, inv, Options{}), "link.speed_below_max")
	if len(f) != 1 || !strings.HasSuffix(f[0].Summary, "; the partner advertises at most 25 Gbit/s, so the peer or switch port holds it back") ||
		Quote(f[0].Fix[0].Command) != "ethtool -s enp1s0f0np0 speed 100000 duplex full autoneg off" {
		t.Errorf("autoneg off, partner 25G: %+v", f)
	}
}
