package sff

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// readSpecTable reads one transcribed SFF-8024 table: its title line
// and its codes.
func readSpecTable(t *testing.T, name string) (title string, codes map[uint8]string) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "sff8024", name+".tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	codes = map[uint8]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			if title == "" {
				title = strings.TrimSpace(strings.TrimPrefix(line, "#"))
			}
			continue
		}
		code, text, ok := strings.Cut(line, "\t")
		v, err := strconv.ParseUint(strings.TrimPrefix(code, "0x"), 16, 8)
		if !ok || err != nil || !strings.HasPrefix(code, "0x") || text == "" {
			t.Fatalf("%s.tsv line %d: %q is not 0xNN<TAB>text", name, n, line)
		}
		if _, dup := codes[uint8(v)]; dup {
			t.Fatalf("%s.tsv line %d: code %s twice", name, n, code)
		}
		codes[uint8(v)] = text
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return title, codes
}

// TestSFF8024Tables holds each Go code table against the specification's
// table as transcribed in testdata/sff8024: the same codes, each with the
// same text, and the revision named.
func TestSFF8024Tables(t *testing.T) {
	for _, tt := range []struct {
		file  string
		table string
		codes map[uint8]string
		min   int
	}{
		{"identifiers", "Table 4-1", identifierSpec, 38},
		{"connectors", "Table 4-3", connectorSpec, 23},
		{"extended-compliance", "Table 4-4", extComplianceSpec, 80},
		{"host-interface", "Table 4-5", hostInterfaceSpec, 100},
		{"media-mmf", "Table 4-6", mmfMediaSpec, 37},
		{"media-smf", "Table 4-7", smfMediaSpec, 120},
		{"media-passive-copper", "Table 4-8", passiveCopperMediaSpec, 3},
		{"media-active-cable", "Table 4-9", activeCableMediaSpec, 6},
		{"media-base-t", "Table 4-10", baseTMediaSpec, 8},
	} {
		t.Run(tt.file, func(t *testing.T) {
			title, spec := readSpecTable(t, tt.file)
			if !strings.HasPrefix(title, "SFF-8024 Rev 4.13 "+tt.table+" ") {
				t.Errorf("title %q does not name SFF-8024 Rev 4.13 %s", title, tt.table)
			}
			if len(spec) < tt.min {
				t.Errorf("the transcription has %d codes, fewer than the %d of the revision", len(spec), tt.min)
			}
			for code := range 256 {
				c := uint8(code)
				want, inSpec := spec[c]
				got, inGo := tt.codes[c]
				switch {
				case inSpec && !inGo:
					t.Errorf("0x%02X %q: missing from the Go table", c, want)
				case !inSpec && inGo:
					t.Errorf("0x%02X %q: in the Go table, reserved in the specification", c, got)
				case got != want:
					t.Errorf("0x%02X: Go says %q, the specification %q", c, got, want)
				}
			}
		})
	}
}

// TestCodeNames: what a person reads for the codes, with the table's
// references dropped and reserved codes shown as numbers.
func TestCodeNames(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{identifierName(0x11), "QSFP28"},
		{identifierName(0x18), "QSFP-DD"},
		{identifierName(0x05), "XENPAK"},
		{identifierName(0x13), "CDFP"},
		{identifierName(0x30), "identifier 0x30"},
		{identifierName(0x90), "vendor-specific identifier 0x90"},
		{connectorName(0x07), "LC"},
		{connectorName(0x0C), "MPO 1x12"},
		{connectorName(0x26), "SN optical connector"},
		{connectorName(0x21), "Copper pigtail"},
		{connectorName(0x10), "connector 0x10"},
		{connectorName(0xC1), "vendor-specific connector 0xc1"},
		{extComplianceName(0x02, true), "100GBASE-SR4"},
		{extComplianceName(0x02, false), "25GBASE-SR"},
		{extComplianceName(0x4C, true), "400GBASE-ZR"},
		{extComplianceName(0x1F, true), "40G SWDM4"},
		{extComplianceName(0x44, true), "200G 1550 nm PSM4"},
		{extComplianceName(0x0A, true), "extended compliance 0x0a"},
		{hostInterfaceName(0x41), "CAUI-4 C2M without FEC"},
		{hostInterfaceName(0x11), "400GAUI-8 C2M"},
		{hostInterfaceName(0x12), "host interface 0x12"},
		{cmisMediaName(mediaTypeSMF, 0x3E), "400ZR, DWDM, amplified"},
		{cmisMediaName(mediaTypeSMF, 0x46), "ZR400-OFEC-16QAM"},
		{cmisMediaName(mediaTypeSMF, 0x1C), "400GBASE-DR4"},
		{cmisMediaName(mediaTypeSMF, 0x10), "100G CWDM4"},
		{cmisMediaName(mediaTypeMMF, 0x1A), "400GBASE-SR4.2"},
		{cmisMediaName(mediaTypeMMF, 0x05), "40GE SWDM4"},
		{cmisMediaName(mediaTypePassiveCu, 0x01), "passive copper cable"},
		{cmisMediaName(mediaTypePassiveCu, 0xBF), "Passive Loopback module"},
		{cmisMediaName(mediaTypeActiveCable, 0x03), "active cable (BER < 2.6x10^-4)"},
		{cmisMediaName(mediaTypeBaseT, 0x04), "10GBASE-T"},
		{cmisMediaName(mediaTypeSMF, 0xF0), "single-mode fibre (media code 0xf0)"},
		{cmisMediaName(0x09, 0x01), "media type 0x09, media code 0x01"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

// TestSpeedOfCoherent: rates of the names the SFF-8024 tables added for
// coherent and 1.6T modules.
func TestSpeedOfCoherent(t *testing.T) {
	for name, want := range map[string]int{
		"400ZR, DWDM, amplified": 400000, "ZR400-OFEC-16QAM": 400000, "ZR100-OFEC-QPSK": 100000,
		"800ZR-A 150 GHz DWDM": 800000, "1.6TBASE-DR8": 1600000, "400GBASE-SR4.2": 400000,
		"FLEXO-4-DO-16QAM/FOIC4.8-DO": 0, "OTL4.4": 0,
	} {
		if got := speedOf(name); got != want {
			t.Errorf("speedOf(%q) = %d, want %d", name, got, want)
		}
	}
}
