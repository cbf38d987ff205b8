package sff

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Code tables of SFF-8024 ("SFF Module Management Reference Code
// Tables"), shared by SFF-8472, SFF-8636 and CMIS. The tables themselves,
// with every code of the revision, are in sff8024_tables.go; this file
// names codes for display.

// display drops the references in parentheses from a table's text, the
// way a person names the interface: "100GBASE-SR4 (Clause 95)" is
// "100GBASE-SR4", "CAUI-4 C2M (Annex 83E) without FEC" is "CAUI-4 C2M
// without FEC"; and the MSA names without their "MSA Spec" ("100G CWDM4
// MSA Spec" is "100G CWDM4").
func display(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	out := strings.Join(strings.Fields(b.String()), " ")
	return strings.TrimSuffix(out, " MSA Spec")
}

// formFactors are the short names of the identifiers a network engineer
// meets, as the cage and the module's label say them.
var formFactors = map[uint8]string{
	0x00: "unknown", 0x01: "GBIC", 0x02: "soldered module", 0x03: "SFP/SFP+/SFP28", 0x06: "XFP",
	0x0B: "DWDM-SFP/SFP+", 0x0C: "QSFP", 0x0D: "QSFP+", 0x0E: "CXP", 0x11: "QSFP28", 0x12: "CXP2",
	0x17: "microQSFP", 0x18: "QSFP-DD", 0x19: "OSFP", 0x1A: "SFP-DD", 0x1B: "DSFP",
	0x1E: "QSFP+ (CMIS)", 0x1F: "SFP-DD (CMIS)", 0x20: "SFP+ (CMIS)", 0x21: "OSFP-XD", 0x22: "OIF-ELSFP",
	0x23: "CDFP (CMIS)", 0x24: "CDFP (CMIS)", 0x25: "CDFP (CMIS)",
}

// identifierName names byte 0 of a module (SFF-8024 Table 4-1) by its
// form factor.
func identifierName(id uint8) string {
	if n, ok := formFactors[id]; ok {
		return n
	}
	if s, ok := identifierSpec[id]; ok {
		return display(s)
	}
	if id >= 0x80 {
		return fmt.Sprintf("vendor-specific identifier 0x%02x", id)
	}
	return fmt.Sprintf("identifier 0x%02x", id)
}

// connectorName names a connector code (SFF-8024 Table 4-3).
func connectorName(c uint8) string {
	if s, ok := connectorSpec[c]; ok {
		return display(s)
	}
	if c >= 0x80 {
		return fmt.Sprintf("vendor-specific connector 0x%02x", c)
	}
	return fmt.Sprintf("connector 0x%02x", c)
}

// extCompliance names the extended compliance codes (SFF-8024 Table 4-4,
// SFF-8636 byte 192, SFF-8472 byte 36) whose table text names a four-lane
// and a one-lane variant ("100GBASE-SR4 or 25GBASE-SR"): which applies
// follows from the form factor. Each entry is {QSFP name, SFP name}.
// Other codes are named by their table text.
var extCompliance = map[uint8][2]string{
	0x01: {"100G AOC", "25GAUI C2M AOC"},
	0x02: {"100GBASE-SR4", "25GBASE-SR"},
	0x03: {"100GBASE-LR4", "25GBASE-LR"},
	0x04: {"100GBASE-ER4", "25GBASE-ER"},
	0x06: {"100G CWDM4", "100G CWDM4"},
	0x07: {"100G PSM4", "100G PSM4"},
	0x08: {"100G ACC", "25GAUI C2M ACC"},
	0x09: {"100G CWDM4 (no FEC, obsolete code)", "100G CWDM4 (no FEC, obsolete code)"},
	0x0B: {"100GBASE-CR4", "25GBASE-CR CA-L"},
	0x0C: {"25GBASE-CR CA-S", "25GBASE-CR CA-S"},
	0x0D: {"25GBASE-CR CA-N", "25GBASE-CR CA-N"},
	0x11: {"4x10GBASE-SR", "4x10GBASE-SR"},
	0x12: {"40G PSM4", "40G PSM4"},
	0x16: {"10GBASE-T with SFI", "10GBASE-T with SFI"},
	0x18: {"100G AOC", "25GAUI C2M AOC"},
	0x19: {"100G ACC", "25GAUI C2M ACC"},
	0x1B: {"100G 1550nm WDM", "100G 1550nm WDM"},
	0x1C: {"10GBASE-T Short Reach", "10GBASE-T Short Reach"},
	0x22: {"100G 4WDM-10", "100G 4WDM-10"},
	0x23: {"100G 4WDM-20", "100G 4WDM-20"},
	0x24: {"100G 4WDM-40", "100G 4WDM-40"},
	0x25: {"100GBASE-DR", "100GBASE-DR"},
	0x26: {"100GBASE-FR1", "100GBASE-FR1"},
	0x27: {"100GBASE-LR1", "100GBASE-LR1"},
	0x28: {"100GBASE-SR1", "100GBASE-SR1"},
	0x29: {"100GBASE-SR1", "100GBASE-SR1"},
	0x2C: {"100G-LR1-20", "100G-LR1-20"},
	0x2D: {"100G-ER1-30", "100G-ER1-30"},
	0x2E: {"100G-ER1-40", "100G-ER1-40"},
	0x30: {"200G ACC", "50GAUI ACC"},
	0x31: {"200G AOC", "50GAUI AOC"},
	0x32: {"200G ACC", "50GAUI ACC"},
	0x33: {"200G AOC", "50GAUI AOC"},
	0x36: {"100GBASE-VR1", "100GBASE-VR1"},
	0x3A: {"100GBASE-VR1", "100GBASE-VR1"},
	0x3F: {"400GBASE-CR4", "100GBASE-CR1"},
	0x40: {"200GBASE-CR4", "50GBASE-CR"},
	0x41: {"200GBASE-SR4", "50GBASE-SR"},
	0x42: {"200GBASE-DR4", "50GBASE-FR"},
	0x47: {"400GBASE-DR4", "400GBASE-DR4"},
	0x48: {"400GBASE-FR4", "400GBASE-FR4"},
	0x49: {"400GBASE-LR4-6", "400GBASE-LR4-6"},
	0x4A: {"50GBASE-ER", "50GBASE-ER"},
	0x4C: {"400GBASE-ZR", "400GBASE-ZR"},
}

// extComplianceName names code c for a four-lane (QSFP) or one-lane
// (SFP) module.
func extComplianceName(c uint8, quad bool) string {
	if n, ok := extCompliance[c]; ok {
		if quad {
			return n[0]
		}
		return n[1]
	}
	if s, ok := extComplianceSpec[c]; ok {
		return display(s)
	}
	return fmt.Sprintf("extended compliance 0x%02x", c)
}

// CMIS module media types (lower page byte 85), which say which SFF-8024
// table names an application's media interface code.
const (
	mediaTypeUndefined   = 0x00
	mediaTypeMMF         = 0x01
	mediaTypeSMF         = 0x02
	mediaTypePassiveCu   = 0x03
	mediaTypeActiveCable = 0x04
	mediaTypeBaseT       = 0x05
)

// mediaTables maps a CMIS media type to its media interface code table
// (SFF-8024 Tables 4-6 to 4-10) and to what the media is called when a
// code is not in it.
var mediaTables = map[uint8]struct {
	codes map[uint8]string
	kind  string
}{
	mediaTypeMMF:         {mmfMediaSpec, "multimode fibre"},
	mediaTypeSMF:         {smfMediaSpec, "single-mode fibre"},
	mediaTypePassiveCu:   {passiveCopperMediaSpec, "passive copper cable"},
	mediaTypeActiveCable: {activeCableMediaSpec, "active cable"},
	mediaTypeBaseT:       {baseTMediaSpec, "BASE-T"},
}

// cmisMediaName names the media interface code of an application
// descriptor of a module of the given media type. Copper and active
// cables name their kind: "Copper cable" alone says nothing a person
// reading "passive copper cable" does not.
func cmisMediaName(mediaType, code uint8) string {
	t, ok := mediaTables[mediaType]
	if !ok {
		return fmt.Sprintf("media type 0x%02x, media code 0x%02x", mediaType, code)
	}
	s, ok := t.codes[code]
	switch {
	case !ok:
		return fmt.Sprintf("%s (media code 0x%02x)", t.kind, code)
	case mediaType == mediaTypePassiveCu && code == 0x01:
		return "passive copper cable"
	case mediaType == mediaTypeActiveCable && code >= 0x01 && code <= 0x04:
		return "active cable (" + strings.TrimPrefix(s, "Active Cable assembly with ") + ")"
	}
	return display(s)
}

// hostInterfaceName names a host electrical interface code (SFF-8024
// Table 4-5).
func hostInterfaceName(code uint8) string {
	if s, ok := hostInterfaceSpec[code]; ok {
		return display(s)
	}
	return fmt.Sprintf("host interface 0x%02x", code)
}

// speedRE finds the Ethernet rate at the start of a media name:
// "100GBASE-SR4", "100G CWDM4", "4x10GBASE-SR", "2.5GBASE-T",
// "1000BASE-SX", "1.6TBASE-DR8", "400ZR, DWDM, amplified"; zrRE the rate
// of the OpenZR+ names, "ZR400-OFEC-16QAM".
var (
	speedRE = regexp.MustCompile(`^(?:(\d+)x)?(\d+(?:\.\d+)?)(G|T|00BASE|ZR)`)
	zrRE    = regexp.MustCompile(`^ZR(\d+)-`)
)

// speedOf returns the rate in Mb/s a media name implies, or 0.
func speedOf(name string) int {
	if m := zrRE.FindStringSubmatch(name); m != nil {
		v, _ := strconv.Atoi(m[1])
		return v * 1000
	}
	m := speedRE.FindStringSubmatch(name)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[2], 64)
	if err != nil {
		return 0
	}
	var mbps float64
	switch m[3] {
	case "00BASE": // "1000BASE-SX": the digits before "00BASE" are hundreds of Mb/s
		mbps = v * 100
	case "T":
		mbps = v * 1_000_000
	default: // G, and "400ZR": gigabits
		mbps = v * 1000
	}
	if m[1] != "" { // "4x10GBASE-SR": four links of 10 Gb/s
		n, _ := strconv.Atoi(m[1])
		mbps *= float64(n)
	}
	return int(math.Round(mbps))
}
