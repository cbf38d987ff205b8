package ethtool

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/mdlayher/netlink"

	"github.com/linerate/linerate/internal/hostfs"
)

// TestFECModeName: every spelling of a FEC bit reads as the kernel's name,
// and link modes and port bits do not.
func TestFECModeName(t *testing.T) {
	for in, want := range map[string]string{
		"None": "None", "none": "None", "Off": "None", "off": "None", "FEC_NONE": "None",
		"ETHTOOL_LINK_MODE_FEC_NONE_BIT": "None",
		"RS":                             "RS", "rs": "RS", "ETHTOOL_LINK_MODE_FEC_RS_BIT": "RS", " RS ": "RS",
		"BASER": "BASER", "BaseR": "BASER", "baser": "BASER", "BASE-R": "BASER", "FEC_BASER": "BASER", "FC": "BASER",
		"LLRS": "LLRS", "llrs": "LLRS", "ETHTOOL_LINK_MODE_FEC_LLRS_BIT": "LLRS",
	} {
		if got, ok := FECModeName(in); !ok || got != want {
			t.Errorf("FECModeName(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"100000baseCR4/Full", "10000baseR_FEC", "Autoneg", "TP", "Pause", "", "RS544", "auto"} {
		if got, ok := FECModeName(in); ok {
			t.Errorf("FECModeName(%q) = %q, want not a FEC bit", in, got)
		}
	}
}

// TestNormalizeLinkModes: FEC bits in the mode lists move to the FEC
// lists, under the kernel's names, once each and in order.
func TestNormalizeLinkModes(t *testing.T) {
	lm := &LinkModes{
		Supported:         []string{"100000baseCR4/Full", "None", "RS", "BaseR", "25000baseCR/Full"},
		Advertised:        []string{"100000baseCR4/Full", "RS"},
		PartnerAdvertised: []string{"100000baseCR4/Full", "RS", "rs"},
		SupportedFEC:      []string{"None"},
		PartnerFEC:        nil,
	}
	lm.Normalize()
	if !slices.Equal(lm.Supported, []string{"100000baseCR4/Full", "25000baseCR/Full"}) ||
		!slices.Equal(lm.SupportedFEC, []string{"None", "RS", "BASER"}) ||
		!slices.Equal(lm.Advertised, []string{"100000baseCR4/Full"}) || !slices.Equal(lm.AdvertisedFEC, []string{"RS"}) ||
		!slices.Equal(lm.PartnerAdvertised, []string{"100000baseCR4/Full"}) || !slices.Equal(lm.PartnerFEC, []string{"RS"}) {
		t.Errorf("normalized: %+v", lm)
	}
	// Already split lists stay as they are.
	again := *lm
	again.Normalize()
	if !slices.Equal(again.SupportedFEC, lm.SupportedFEC) || !slices.Equal(again.Supported, lm.Supported) {
		t.Errorf("normalize twice: %+v", again)
	}
	empty := &LinkModes{}
	empty.Normalize()
	if empty.Supported == nil || empty.PartnerFEC == nil {
		t.Errorf("empty lists become nil: %+v", empty)
	}
}

// TestNormalizeFEC: the configured and active encodings in FEC_GET's
// words, "Auto" read as the auto flag.
func TestNormalizeFEC(t *testing.T) {
	f := &FEC{Configured: []string{"Auto", "None", "BaseR", "RS", "rs"}, Active: ptr("BaseR")}
	f.Normalize()
	if !f.Auto || !slices.Equal(f.Configured, []string{"off", "BASER", "RS"}) || *f.Active != "BASER" {
		t.Errorf("normalized: %+v active %q", f, *f.Active)
	}
	f = &FEC{Configured: []string{"fast"}, Active: ptr("None")}
	f.Normalize()
	if !slices.Equal(f.Configured, []string{"fast"}) || *f.Active != "off" {
		t.Errorf("unknown names kept for the schema to name: %+v", f)
	}
}

// TestLoadKernelFECNames: a linkmodes.json that lists the FEC bits among
// the link modes, as another version's snapshot or a hand-made tree
// does, keeps the partner's FEC.
func TestLoadKernelFECNames(t *testing.T) {
	root := writeTree(t, "eth3", map[string][]byte{
		FileLinkModes: []byte(`{"speed_mbps": null, "duplex": "unknown", "autoneg": true,
			"supported": ["100000baseSR4/Full", "None", "RS", "BASER"],
			"advertised": ["100000baseSR4/Full", "None"],
			"partner_advertised": ["100000baseSR4/Full", "RS"], "source": "netlink"}`),
		FileFEC: []byte(`{"configured": ["None"], "auto": false, "active": null, "stats": null}`),
	})
	fs, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	f, err := Load(fs, "eth3")
	if err != nil {
		t.Fatal(err)
	}
	lm := f.LinkModes
	if !slices.Equal(lm.PartnerFEC, []string{"RS"}) || !slices.Equal(lm.PartnerAdvertised, []string{"100000baseSR4/Full"}) ||
		!slices.Equal(lm.AdvertisedFEC, []string{"None"}) || !slices.Equal(lm.SupportedFEC, []string{"None", "RS", "BASER"}) {
		t.Errorf("link modes %+v", lm)
	}
	if !slices.Equal(f.FEC.Configured, []string{"off"}) {
		t.Errorf("configured FEC %q, want off", f.FEC.Configured)
	}
}

// TestFECHistBounds: a reply with more bins than the kernel sends, or
// more lanes than a port has, is cut, not trusted.
func TestFECHistBounds(t *testing.T) {
	ae := netlink.NewAttributeEncoder()
	ae.Nested(aFECStats, func(s *netlink.AttributeEncoder) error {
		for i := range 100 {
			s.Nested(aFECStatHist, func(h *netlink.AttributeEncoder) error {
				h.Uint32(aFECHistBinLow, uint32(i))
				h.Uint32(aFECHistBinHigh, uint32(i))
				h.Uint64(aFECHistBinVal, 7)
				h.Bytes(aFECHistBinPerLane, u64bytes(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12))
				return nil
			})
		}
		return nil
	})
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	f, err := parseFEC(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Hist) != maxHistBins || len(f.Hist[0].PerLane) != maxLanes || f.Stats != nil {
		t.Errorf("%d bins, %d lanes, stats %+v", len(f.Hist), len(f.Hist[0].PerLane), f.Stats)
	}
}

// TestPreFECBER: the ratio, the bench window's bits (link speed ×
// elapsed), and the contract's thresholds.
func TestPreFECBER(t *testing.T) {
	if ber, ok := PreFECBER(2_400, 100_000_000); !ok || ber != 2.4e-5 {
		t.Errorf("PreFECBER = %v %v", ber, ok)
	}
	if _, ok := PreFECBER(5, 0); ok {
		t.Error("no bits received: no ratio")
	}
	// 100 Gb/s for 10 s: 1e12 bits.
	if got := WindowBits(100000, 10*time.Second); got != 1_000_000_000_000 {
		t.Errorf("WindowBits = %d", got)
	}
	if WindowBits(0, time.Second) != 0 || WindowBits(25000, 0) != 0 || WindowBits(-1, time.Second) != 0 {
		t.Error("no speed or no time: no bits")
	}
	// 1.2e8 corrected bits over a 400 Gb/s second: 3e-4.
	ber, ok := WindowBER(1_000, 1_000+120_000_000, 400000, time.Second)
	if !ok || math.Abs(ber-3e-4) > 1e-12 {
		t.Errorf("WindowBER = %v %v", ber, ok)
	}
	if _, ok := WindowBER(10, 5, 100000, time.Second); ok {
		t.Error("a counter that went backwards gives no BER")
	}
	for _, tt := range []struct {
		ber  float64
		want string
	}{{0, ""}, {9.99e-6, ""}, {1e-5, "warning"}, {1.19e-4, "warning"}, {1.2e-4, "critical"}, {2.4e-4, "critical"}, {1e-3, "critical"}} {
		if got := BERSeverity(tt.ber); got != tt.want {
			t.Errorf("BERSeverity(%g) = %q, want %q", tt.ber, got, tt.want)
		}
	}
}

// TestHistBER: the histogram's lower bound on the BER, and the codeword
// sizes it divides by.
func TestHistBER(t *testing.T) {
	// 1e9 codewords: 9.99e8 clean, 9e5 with 1 error, 1e5 with 2-3 (taken
	// as 2): 1.1e6 errored symbols over 1e9 × 5440 bits = 2.022e-7.
	hist := []FECHistBin{{0, 0, 999_000_000, nil}, {1, 1, 900_000, nil}, {2, 3, 100_000, nil}}
	ber, ok := HistBER(hist, 5440)
	if !ok || math.Abs(ber-1.1e6/(1e9*5440)) > 1e-15 {
		t.Errorf("HistBER = %v %v", ber, ok)
	}
	if _, ok := HistBER(nil, 5440); ok {
		t.Error("no codewords: no BER")
	}
	if _, ok := HistBER(hist, 0); ok {
		t.Error("no codeword size: no BER")
	}
	for _, tt := range []struct {
		fec  string
		lane float64
		want int
	}{{"RS", 25, 5280}, {"RS", 53.125, 5440}, {"RS", 100, 5440}, {"LLRS", 50, 2720}, {"BASER", 25, 0}, {"off", 25, 0}} {
		if got := CodewordBits(tt.fec, tt.lane); got != tt.want {
			t.Errorf("CodewordBits(%s, %v) = %d, want %d", tt.fec, tt.lane, got, tt.want)
		}
	}
}
