package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/sff"
)

// TestParseEthtool: ethtool's labels with their padding collapsed and
// the channel written the same way whatever ethtool's spacing.
func TestParseEthtool(t *testing.T) {
	e := parseEthtool("\tIdentifier                                : 0x11 (QSFP28)\n" +
		"\tRcvr signal avg optical power(Channel 1)  : 0.6460 mW / -1.90 dBm\n" +
		"\tReceiver signal OMA(Channel 2)            : 0.0100 mW / -20.00 dBm\n" +
		"\tLaser bias current high alarm   (Chan 1)  : Off\n" +
		"\tTransceiver type                          : 10G Ethernet: 10G Base-SR\n" +
		"\tTransceiver type                          : Extended: 100G Base-SR4 or 25GBase-SR\n" +
		"no separator here\n")
	for label, want := range map[string]string{
		"Identifier": "0x11 (QSFP28)", "Rcvr signal avg optical power (Channel 1)": "0.6460 mW / -1.90 dBm",
		"Receiver signal OMA (Channel 2)": "0.0100 mW / -20.00 dBm", "Laser bias current high alarm (Chan 1)": "Off",
	} {
		if got, ok := e.get(label); !ok || got != want {
			t.Errorf("%q = %q %v, want %q", label, got, ok, want)
		}
	}
	if len(e["Transceiver type"]) != 2 || len(e) != 5 {
		t.Errorf("parsed %v", e)
	}
	for in, want := range map[string]float64{"41.30 degrees C / 106.34 degrees F": 41.30, "0x11 (QSFP28)": 17, "37.500 mA": 37.5,
		"0.6460 mW / -1.90 dBm": 0.646, "1311.000nm": 1311, "850nm": 850} {
		if got, ok := number(in); !ok || got != want {
			t.Errorf("number(%q) = %v %v, want %v", in, got, ok, want)
		}
	}
	if _, ok := number("Off"); ok {
		t.Error(`number("Off") reads a number`)
	}
}

// TestCompareCaptured: on ethtool's real output for four modules of the
// host trees, the comparison finds every difference explained, by the
// causes each module should show, and compares the fields it should.
func TestCompareCaptured(t *testing.T) {
	for _, tt := range []struct {
		tree, iface string
		minFields   int
		causes      []string
	}{
		{"t6-cwdm4-dark-lane", "ens5f4", 80, nil},
		{"cx4lx-sfp28-a2h", "ens5f1np1", 50, []string{causeCalTrunc}},
		{"cx7-qsfpdd-8lane", "ens5f1np1", 70, []string{causeBiasScale, causeExtraLanes, causeLaneFlags}},
		{"cx6dx-copper-dac", "ens5f0np0", 10, []string{causeCopperPower}},
	} {
		t.Run(tt.tree, func(t *testing.T) {
			pages, err := readPages(filepath.Join("..", "..", "testdata", "hosts", tt.tree, "linerate", "ethtool", tt.iface, "module-eeprom"))
			if err != nil {
				t.Fatal(err)
			}
			out, err := os.ReadFile(filepath.Join("testdata", tt.tree+"."+tt.iface+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			m, err := sff.Decode(pages)
			if err != nil {
				t.Fatal(err)
			}
			diffs, n := compare(m, pages, parseEthtool(string(out)))
			if n < tt.minFields {
				t.Errorf("%d fields compared, want at least %d", n, tt.minFields)
			}
			seen := map[string]bool{}
			for _, d := range diffs {
				if d.cause == "" {
					t.Errorf("unexplained: %s: linerate %s, ethtool %s", d.field, d.ours, d.theirs)
				}
				seen[d.cause] = true
			}
			for _, c := range tt.causes {
				if !seen[c] {
					t.Errorf("no difference of cause %q", c)
				}
			}
			if len(tt.causes) == 0 && len(diffs) != 0 {
				t.Errorf("%d differences on a module both should read alike", len(diffs))
			}
		})
	}
	// A module whose decoding disagrees is caught: the CWDM4's lane 3
	// read as lit.
	pages, _ := readPages(filepath.Join("..", "..", "testdata", "hosts", "t6-cwdm4-dark-lane", "linerate", "ethtool", "ens5f4", "module-eeprom"))
	out, _ := os.ReadFile(filepath.Join("testdata", "t6-cwdm4-dark-lane.ens5f4.txt"))
	m, _ := sff.Decode(pages)
	bad := 0.5
	m.Lanes[2].RXPowerMW = &bad
	m.VendorSN = strings.ToLower(m.VendorSN)
	diffs, _ := compare(m, pages, parseEthtool(string(out)))
	if len(diffs) != 2 || diffs[0].cause != "" || diffs[1].cause != "" {
		t.Errorf("a wrong decoding gives %+v, want two unexplained differences", diffs)
	}
}
