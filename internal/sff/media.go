package sff

import (
	"fmt"
	"math/bits"
)

// Media classes, as Module.MediaClass gives them: what carries the signal
// between this module and the far end, as the module's own media bytes
// say. Optical findings (a dark lane, low RX power, a laser off) mean
// something only for optical media: a copper cable's "RX power" words
// are not light, and a passive cable that happens to report a
// temperature has no receiver at all.
const (
	MediaOptical = "optical"
	MediaCopper  = "copper"
	MediaUnknown = "unknown"
)

// Cable kinds, as Module.Cable gives them: an assembly with the medium
// fixed to the module (a DAC, an AOC), passive or with active
// electronics; "" for a module with a separable connector.
const (
	CablePassive = "passive"
	CableActive  = "active"
)

// media is a classification with the bytes that decided it.
type media struct {
	class, cable, basis string
}

func (m *Module) setMedia(v media) {
	m.MediaClass, m.Cable, m.MediaBasis = v.class, v.cable, v.basis
}

// transmitterTech names the transmitter technology codes shared by
// SFF-8636 byte 147 bits 7-4 (SFF-8636 Table 6-19) and CMIS page 00h byte
// 212 (CMIS 5.2 Table 8-40, "Media Interface Technology"), which adds the
// tunable lasers 10h and 11h.
var transmitterTech = map[uint8]string{
	0x0: "850 nm VCSEL", 0x1: "1310 nm VCSEL", 0x2: "1550 nm VCSEL", 0x3: "1310 nm FP",
	0x4: "1310 nm DFB", 0x5: "1550 nm DFB", 0x6: "1310 nm EML", 0x7: "1550 nm EML",
	0x8: "others/undefined", 0x9: "1490 nm DFB",
	0xA: "copper cable, unequalized", 0xB: "copper cable, passive equalized",
	0xC:  "copper cable, near and far end limiting active equalizers",
	0xD:  "copper cable, far end limiting active equalizers",
	0xE:  "copper cable, near end limiting active equalizers",
	0xF:  "copper cable, linear active equalizers",
	0x10: "C-band tunable laser", 0x11: "L-band tunable laser",
}

// byTechnology classifies a transmitter technology code; ok is false for
// "others/undefined" and reserved codes, which leave the decision to the
// compliance codes.
func byTechnology(code uint8, where string) (media, bool) {
	basis := fmt.Sprintf("%s: %s", where, transmitterTech[code])
	if _, ok := transmitterTech[code]; !ok {
		basis = fmt.Sprintf("%s: reserved code 0x%02x", where, code)
	}
	switch {
	case code <= 0x7 || code == 0x9 || code == 0x10 || code == 0x11:
		return media{MediaOptical, "", basis}, true
	case code == 0xA || code == 0xB:
		return media{MediaCopper, CablePassive, basis}, true
	case code >= 0xC && code <= 0xF:
		return media{MediaCopper, CableActive, basis}, true
	}
	return media{}, false
}

// Extended compliance codes (SFF-8024 Table 4-4) by medium: copper cable
// assemblies, passive and active, and BASE-T modules (copper, but no cable
// assembly; 64GFC and 128GFC EA are electrical active). Every other
// assigned code but 0x00 (unspecified) and the Fibre Channel speed-only
// codes 0x80 and 0x81 names an optical interface.
var (
	extPassiveCopper = map[uint8]bool{0x0B: true, 0x0C: true, 0x0D: true, 0x3F: true, 0x40: true}
	extActiveCopper  = map[uint8]bool{0x08: true, 0x19: true, 0x30: true, 0x32: true, 0x50: true, 0x53: true}
	extBaseT         = map[uint8]bool{0x0E: true, 0x16: true, 0x1C: true, 0x1D: true, 0x1E: true}
	extAOC           = map[uint8]bool{0x01: true, 0x18: true, 0x31: true, 0x33: true}
	extNoMedium      = map[uint8]bool{0x00: true, 0x80: true, 0x81: true}
)

// byExtCompliance classifies an extended compliance code.
func byExtCompliance(code uint8, where string) (media, bool) {
	basis := fmt.Sprintf("%s: %s", where, extComplianceName(code, true))
	switch {
	case extPassiveCopper[code]:
		return media{MediaCopper, CablePassive, basis}, true
	case extActiveCopper[code]:
		return media{MediaCopper, CableActive, basis}, true
	case extBaseT[code]:
		return media{MediaCopper, "", basis}, true
	case extAOC[code]:
		return media{MediaOptical, CableActive, basis}, true
	case extNoMedium[code]:
		return media{}, false
	}
	if _, ok := extComplianceSpec[code]; ok {
		return media{MediaOptical, "", basis}, true
	}
	return media{}, false
}

// Connector codes (SFF-8024 Table 4-3) by medium.
var (
	copperConnectors  = map[uint8]bool{0x02: true, 0x03: true, 0x04: true, 0x05: true, 0x20: true, 0x21: true, 0x22: true}
	opticalConnectors = map[uint8]bool{0x01: true, 0x06: true, 0x07: true, 0x08: true, 0x09: true, 0x0A: true, 0x0B: true,
		0x0C: true, 0x0D: true, 0x24: true, 0x25: true, 0x26: true, 0x27: true, 0x28: true}
)

// byConnector classifies a connector code: the last resort.
func byConnector(code uint8, where string) (media, bool) {
	basis := fmt.Sprintf("%s: %s", where, connectorName(code))
	switch {
	case code == 0x21: // a copper pigtail is a cable assembly
		return media{MediaCopper, CablePassive, basis}, true
	case copperConnectors[code]:
		return media{MediaCopper, "", basis}, true
	case code == 0x0B: // an optical pigtail, likewise
		return media{MediaOptical, CableActive, basis}, true
	case opticalConnectors[code]:
		return media{MediaOptical, "", basis}, true
	}
	return media{}, false
}

func unknownMedia(why string) media { return media{MediaUnknown, "", why} }

// media8636 classifies an SFF-8636 module from upper page 00h: byte 147
// bits 7-4 (transmitter technology, SFF-8636 Table 6-19) decide, then the
// compliance codes (byte 192 through byte 131 bit 7, byte 131 bits 6-0),
// then the connector (byte 130).
//
// One exception to the order: a technology nibble of 0 ("850 nm VCSEL")
// is also what an unprogrammed byte reads, so it yields to compliance
// codes or a connector that say copper. A DAC whose byte 147 was never
// set would otherwise be taken for an 850 nm optic, and its four
// "lanes" of zero received power for four dark lanes.
func media8636(up *reader) media {
	tech := up.u8(147) >> 4
	byTech, techOK := byTechnology(tech, "SFF-8636 byte 147 transmitter technology")
	var byCodes media
	codesOK := false
	comp := up.u8(131)
	if comp&0x80 != 0 {
		byCodes, codesOK = byExtCompliance(up.u8(192), "SFF-8636 byte 192 extended compliance")
	}
	if !codesOK {
		switch {
		case comp&0x08 != 0:
			byCodes, codesOK = media{MediaCopper, CablePassive, "SFF-8636 byte 131 compliance: 40GBASE-CR4"}, true
		case comp&0x76 != 0:
			byCodes, codesOK = media{MediaOptical, "", "SFF-8636 byte 131 compliance: " + sff8636Compliance[bits.Len8(comp&0x76)-1]}, true
		}
	}
	byConn, connOK := byConnector(up.u8(130), "SFF-8636 byte 130 connector")
	switch {
	case techOK && tech == 0 && codesOK && byCodes.class == MediaCopper:
		return byCodes
	case techOK && tech == 0 && !codesOK && connOK && byConn.class == MediaCopper:
		return byConn
	case techOK:
		if byTech.class == MediaOptical && codesOK && byCodes.cable == CableActive {
			byTech.cable = CableActive // an AOC
		}
		if byTech.class == MediaOptical && comp&0x01 != 0 {
			byTech.cable = CableActive // byte 131 bit 0: 40G active cable (XLPPI)
		}
		return byTech
	case codesOK:
		return byCodes
	case connOK:
		return byConn
	}
	return unknownMedia(fmt.Sprintf("SFF-8636 byte 147 technology 0x%x, no compliance code or connector that names a medium", tech))
}

// media8472 classifies an SFF-8472 module from A0h: the SFP+ cable
// technology bits (byte 8 bit 2 passive, bit 3 active) decide, then the
// extended compliance code (byte 36), the Ethernet and Fibre Channel
// compliance codes (bytes 3, 6, 8 bits 7-4, 9), then the connector (byte 2).
func media8472(lo *reader) media {
	ext, extOK := byExtCompliance(lo.u8(36), "SFF-8472 byte 36 extended compliance")
	codes, codesOK := codes8472(lo)
	conn, connOK := byConnector(lo.u8(2), "SFF-8472 byte 2 connector")
	optical := (extOK && ext.class == MediaOptical) || (codesOK && codes.class == MediaOptical) || (connOK && conn.class == MediaOptical)
	switch {
	case lo.bit(8, 2):
		return media{MediaCopper, CablePassive, "SFF-8472 byte 8 bit 2 (passive cable)"}
	case lo.bit(8, 3) && optical:
		return media{MediaOptical, CableActive, "SFF-8472 byte 8 bit 3 (active cable) with optical compliance codes: an AOC"}
	case lo.bit(8, 3):
		return media{MediaCopper, CableActive, "SFF-8472 byte 8 bit 3 (active cable)"}
	case extOK:
		return ext
	case codesOK:
		return codes
	case connOK:
		return conn
	}
	return unknownMedia("SFF-8472 bytes 3-10 and 36 set no compliance code that names a medium, and byte 2 names no connector")
}

// codes8472 reads the SFF-8472 Table 5-3 compliance codes that name a
// medium.
func codes8472(lo *reader) (media, bool) {
	switch {
	case lo.u8(3)&0xF0 != 0:
		return media{MediaOptical, "", fmt.Sprintf("SFF-8472 byte 3 0x%02x (10GBASE-SR/LR/LRM/ER)", lo.u8(3))}, true
	case lo.u8(6)&0xF3 != 0:
		return media{MediaOptical, "", fmt.Sprintf("SFF-8472 byte 6 0x%02x (1000BASE-SX/LX, 100BASE-FX/LX, BX, PX)", lo.u8(6))}, true
	case lo.u8(8)&0x70 != 0:
		return media{MediaOptical, "", fmt.Sprintf("SFF-8472 byte 8 0x%02x (Fibre Channel laser)", lo.u8(8))}, true
	case lo.u8(9)&0x0D != 0:
		return media{MediaOptical, "", fmt.Sprintf("SFF-8472 byte 9 0x%02x (fibre transmission media)", lo.u8(9))}, true
	case lo.bit(6, 3):
		return media{MediaCopper, "", "SFF-8472 byte 6 bit 3 (1000BASE-T)"}, true
	case lo.bit(6, 2):
		return media{MediaCopper, CablePassive, "SFF-8472 byte 6 bit 2 (1000BASE-CX)"}, true
	case lo.bit(9, 7) || lo.bit(8, 7):
		return media{MediaCopper, CablePassive, fmt.Sprintf("SFF-8472 bytes 8-9 0x%02x%02x (electrical, twin-axial pair)", lo.u8(8), lo.u8(9))}, true
	case lo.u8(9)&0x70 != 0:
		return media{MediaCopper, "", fmt.Sprintf("SFF-8472 byte 9 0x%02x (twisted pair or coax)", lo.u8(9))}, true
	}
	return media{}, false
}

// mediaCMIS classifies a CMIS module: the module media type (lower page
// byte 85, CMIS 5.2 Table 8-19) decides; an active cable is optical or
// copper by its media interface technology (page 00h byte 212), then by
// its connector; an undefined media type falls back to byte 212.
func mediaCMIS(lo, p00 *reader) media {
	mt := lo.u8(85)
	var tech media
	techOK := false
	if p00 != nil {
		tech, techOK = byTechnology(p00.u8(212), "CMIS page 00h byte 212 media interface technology")
	}
	switch mt {
	case mediaTypeMMF:
		return media{MediaOptical, "", "CMIS byte 85 media type 01h (multimode fibre)"}
	case mediaTypeSMF:
		return media{MediaOptical, "", "CMIS byte 85 media type 02h (single-mode fibre)"}
	case mediaTypePassiveCu:
		return media{MediaCopper, CablePassive, "CMIS byte 85 media type 03h (passive copper cable)"}
	case mediaTypeBaseT:
		return media{MediaCopper, "", "CMIS byte 85 media type 05h (BASE-T)"}
	case mediaTypeActiveCable:
		basis := "CMIS byte 85 media type 04h (active cable), "
		if techOK {
			return media{tech.class, CableActive, basis + tech.basis}
		}
		if p00 != nil {
			if conn, ok := byConnector(p00.u8(203), "page 00h byte 203 connector"); ok {
				return media{conn.class, CableActive, basis + conn.basis}
			}
		}
		return media{MediaUnknown, CableActive, basis + "and neither byte 212 nor the connector says whether optical or copper"}
	}
	if techOK {
		return tech
	}
	return unknownMedia(fmt.Sprintf("CMIS byte 85 media type 0x%02x is not defined, and page 00h byte 212 names no technology", mt))
}
