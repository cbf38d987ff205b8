package sff

import (
	"fmt"
	"regexp"
	"strconv"
)

// Code tables of SFF-8024 ("SFF Module Management Reference Code
// Tables"), shared by SFF-8472, SFF-8636 and CMIS. Only the codes a
// network engineer meets are named; others print as their number.

// identifierName is SFF-8024 Table 4-1 (byte 0 of every module).
func identifierName(id uint8) string {
	switch id {
	case 0x00:
		return "unknown"
	case 0x01:
		return "GBIC"
	case 0x02:
		return "soldered module"
	case 0x03:
		return "SFP/SFP+/SFP28"
	case 0x06:
		return "XFP"
	case 0x0B:
		return "DWDM-SFP/SFP+"
	case 0x0C:
		return "QSFP"
	case 0x0D:
		return "QSFP+"
	case 0x0E:
		return "CXP"
	case 0x11:
		return "QSFP28"
	case 0x12:
		return "CXP2"
	case 0x17:
		return "microQSFP"
	case 0x18:
		return "QSFP-DD"
	case 0x19:
		return "OSFP"
	case 0x1A:
		return "SFP-DD"
	case 0x1B:
		return "DSFP"
	case 0x1E:
		return "QSFP+ (CMIS)"
	case 0x1F:
		return "SFP-DD (CMIS)"
	case 0x20:
		return "SFP+ (CMIS)"
	case 0x21:
		return "OSFP-XD"
	case 0x22:
		return "OIF-ELSFP"
	case 0x23, 0x24, 0x25:
		return "CDFP (CMIS)"
	}
	return fmt.Sprintf("identifier 0x%02x", id)
}

// connectorName is SFF-8024 Table 4-3.
func connectorName(c uint8) string {
	names := map[uint8]string{
		0x00: "unknown", 0x01: "SC", 0x02: "FC style 1 copper", 0x03: "FC style 2 copper",
		0x04: "BNC/TNC", 0x05: "FC coax", 0x06: "Fiber Jack", 0x07: "LC", 0x08: "MT-RJ",
		0x09: "MU", 0x0A: "SG", 0x0B: "optical pigtail", 0x0C: "MPO 1x12", 0x0D: "MPO 2x16",
		0x20: "HSSDC II", 0x21: "copper pigtail", 0x22: "RJ45", 0x23: "no separable connector",
		0x24: "MXC 2x16", 0x25: "CS", 0x26: "SN", 0x27: "MPO 2x12", 0x28: "MPO 1x16",
	}
	if n, ok := names[c]; ok {
		return n
	}
	return fmt.Sprintf("connector 0x%02x", c)
}

// extCompliance is SFF-8024 Table 4-4, the extended specification
// compliance codes (SFF-8636 byte 192, SFF-8472 byte 36). Several codes
// name a four-lane and a one-lane variant; which applies follows from the
// form factor. Each entry is {QSFP name, SFP name}.
var extCompliance = map[uint8][2]string{
	0x01: {"100G AOC", "25GAUI C2M AOC"},
	0x02: {"100GBASE-SR4", "25GBASE-SR"},
	0x03: {"100GBASE-LR4", "25GBASE-LR"},
	0x04: {"100GBASE-ER4", "25GBASE-ER"},
	0x05: {"100GBASE-SR10", "100GBASE-SR10"},
	0x06: {"100G CWDM4", "100G CWDM4"},
	0x07: {"100G PSM4", "100G PSM4"},
	0x08: {"100G ACC", "25GAUI C2M ACC"},
	0x09: {"100G CWDM4 (no FEC, obsolete code)", "100G CWDM4 (no FEC, obsolete code)"},
	0x0B: {"100GBASE-CR4", "25GBASE-CR CA-L"},
	0x0C: {"25GBASE-CR CA-S", "25GBASE-CR CA-S"},
	0x0D: {"25GBASE-CR CA-N", "25GBASE-CR CA-N"},
	0x10: {"40GBASE-ER4", "40GBASE-ER4"},
	0x11: {"4x10GBASE-SR", "4x10GBASE-SR"},
	0x12: {"40G PSM4", "40G PSM4"},
	0x16: {"10GBASE-T with SFI", "10GBASE-T with SFI"},
	0x17: {"100G CLR4", "100G CLR4"},
	0x18: {"100G AOC", "25GAUI C2M AOC"},
	0x19: {"100G ACC", "25GAUI C2M ACC"},
	0x1A: {"100GE-DWDM2", "100GE-DWDM2"},
	0x1B: {"100G 1550nm WDM", "100G 1550nm WDM"},
	0x1C: {"10GBASE-T Short Reach", "10GBASE-T Short Reach"},
	0x1D: {"5GBASE-T", "5GBASE-T"},
	0x1E: {"2.5GBASE-T", "2.5GBASE-T"},
	0x1F: {"40G SWDM4", "40G SWDM4"},
	0x20: {"100G SWDM4", "100G SWDM4"},
	0x21: {"100G PAM4 BiDi", "100G PAM4 BiDi"},
	0x25: {"100GBASE-DR", "100GBASE-DR"},
	0x26: {"100GBASE-FR1", "100GBASE-FR1"},
	0x27: {"100GBASE-LR1", "100GBASE-LR1"},
	0x40: {"200GBASE-CR4", "50GBASE-CR"},
	0x41: {"200GBASE-SR4", "50GBASE-SR"},
	0x42: {"200GBASE-DR4", "50GBASE-FR"},
	0x43: {"200GBASE-FR4", "200GBASE-FR4"},
	0x45: {"50GBASE-LR", "50GBASE-LR"},
	0x46: {"200GBASE-LR4", "200GBASE-LR4"},
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
	return fmt.Sprintf("extended compliance 0x%02x", c)
}

// CMIS media interface codes (SFF-8024 Tables 4-6 to 4-10), by the module
// media type of CMIS byte 85: 1 multimode fibre, 2 single-mode fibre,
// 3 passive copper, 4 active cable, 5 BASE-T.
var (
	cmisMMF = map[uint8]string{
		0x01: "10GBASE-SW", 0x02: "10GBASE-SR", 0x03: "25GBASE-SR", 0x04: "40GBASE-SR4",
		0x05: "40G SWDM4", 0x06: "40G BiDi", 0x07: "50GBASE-SR", 0x08: "100GBASE-SR10",
		0x09: "100GBASE-SR4", 0x0A: "100G SWDM4", 0x0B: "100G BiDi", 0x0C: "100GBASE-SR2",
		0x0D: "100GBASE-SR1", 0x0E: "200GBASE-SR4", 0x0F: "400GBASE-SR16", 0x10: "400GBASE-SR8",
		0x11: "400GBASE-SR4", 0x12: "800GBASE-SR8", 0x1A: "400GBASE-SR4.2",
	}
	cmisSMF = map[uint8]string{
		0x04: "10GBASE-LR", 0x05: "10GBASE-ER", 0x07: "25GBASE-LR", 0x08: "25GBASE-ER",
		0x09: "40GBASE-LR4", 0x0A: "40GBASE-FR", 0x0B: "50GBASE-FR", 0x0C: "50GBASE-LR",
		0x0D: "100GBASE-LR4", 0x0E: "100GBASE-ER4", 0x0F: "100G PSM4", 0x10: "100G CWDM4",
		0x11: "100G 4WDM-10", 0x12: "100G 4WDM-20", 0x13: "100G 4WDM-40", 0x14: "100GBASE-DR",
		0x15: "100GBASE-FR1", 0x16: "100GBASE-LR1", 0x17: "200GBASE-DR4", 0x18: "200GBASE-FR4",
		0x19: "200GBASE-LR4", 0x1A: "400GBASE-FR8", 0x1B: "400GBASE-LR8", 0x1C: "400GBASE-DR4",
		0x1D: "400GBASE-FR4", 0x1E: "400G-LR4-10",
	}
)

// cmisMediaName names the media interface of an application descriptor.
func cmisMediaName(mediaType, code uint8) string {
	switch mediaType {
	case 0x01:
		if n, ok := cmisMMF[code]; ok {
			return n
		}
		return fmt.Sprintf("multimode fibre (media code 0x%02x)", code)
	case 0x02:
		if n, ok := cmisSMF[code]; ok {
			return n
		}
		return fmt.Sprintf("single-mode fibre (media code 0x%02x)", code)
	case 0x03:
		return "passive copper cable"
	case 0x04:
		return "active cable"
	case 0x05:
		return "BASE-T"
	}
	return fmt.Sprintf("media type 0x%02x", mediaType)
}

// speedRE finds the Ethernet rate at the start of a media name:
// "100GBASE-SR4", "100G CWDM4", "4x10GBASE-SR", "2.5GBASE-T", "1000BASE-SX".
var speedRE = regexp.MustCompile(`^(?:(\d+)x)?(\d+(?:\.\d+)?)(G|00BASE)`)

// speedOf returns the rate in Mb/s a media name implies, or 0.
func speedOf(name string) int {
	m := speedRE.FindStringSubmatch(name)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[2], 64)
	if err != nil {
		return 0
	}
	mbps := v * 1000
	if m[3] == "00BASE" { // "1000BASE-SX": the digits before "00BASE" are hundreds of Mb/s
		mbps = v * 100
	}
	if m[1] != "" { // "4x10GBASE-SR": four links of 10 Gb/s
		n, _ := strconv.Atoi(m[1])
		mbps *= float64(n)
	}
	return int(mbps)
}
