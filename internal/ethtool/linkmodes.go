package ethtool

import (
	"fmt"
	"slices"
	"strings"
)

// linkModeNames are the link-mode bits (enum ethtool_link_mode_bit_indices
// in the kernel's uapi ethtool.h) named as the kernel's ETH_SS_LINK_MODES
// string set and ethtool print them. Captured from Linux 6.18 with
// Client.LinkModeNames; TestLinkModeTable checks it against the running
// kernel. The netlink path gets names from the kernel itself; this table
// names bits where only numbers come: compact bitsets, the FEC_GET active
// mode and the ETHTOOL_GLINKSETTINGS ioctl.
var linkModeNames = []string{
	"10baseT/Half", "10baseT/Full", "100baseT/Half", "100baseT/Full", "1000baseT/Half",
	"1000baseT/Full", "Autoneg", "TP", "AUI", "MII", "FIBRE", "BNC", "10000baseT/Full", "Pause",
	"Asym_Pause", "2500baseX/Full", "Backplane", "1000baseKX/Full", "10000baseKX4/Full",
	"10000baseKR/Full", "10000baseR_FEC", "20000baseMLD2/Full", "20000baseKR2/Full",
	"40000baseKR4/Full", "40000baseCR4/Full", "40000baseSR4/Full", "40000baseLR4/Full",
	"56000baseKR4/Full", "56000baseCR4/Full", "56000baseSR4/Full", "56000baseLR4/Full",
	"25000baseCR/Full", "25000baseKR/Full", "25000baseSR/Full", "50000baseCR2/Full",
	"50000baseKR2/Full", "100000baseKR4/Full", "100000baseSR4/Full", "100000baseCR4/Full",
	"100000baseLR4_ER4/Full", "50000baseSR2/Full", "1000baseX/Full", "10000baseCR/Full",
	"10000baseSR/Full", "10000baseLR/Full", "10000baseLRM/Full", "10000baseER/Full", "2500baseT/Full",
	"5000baseT/Full", "None", "RS", "BASER", "50000baseKR/Full", "50000baseSR/Full",
	"50000baseCR/Full", "50000baseLR_ER_FR/Full", "50000baseDR/Full", "100000baseKR2/Full",
	"100000baseSR2/Full", "100000baseCR2/Full", "100000baseLR2_ER2_FR2/Full", "100000baseDR2/Full",
	"200000baseKR4/Full", "200000baseSR4/Full", "200000baseLR4_ER4_FR4/Full", "200000baseDR4/Full",
	"200000baseCR4/Full", "100baseT1/Full", "1000baseT1/Full", "400000baseKR8/Full",
	"400000baseSR8/Full", "400000baseLR8_ER8_FR8/Full", "400000baseDR8/Full", "400000baseCR8/Full",
	"LLRS", "100000baseKR/Full", "100000baseSR/Full", "100000baseLR_ER_FR/Full", "100000baseCR/Full",
	"100000baseDR/Full", "200000baseKR2/Full", "200000baseSR2/Full", "200000baseLR2_ER2_FR2/Full",
	"200000baseDR2/Full", "200000baseCR2/Full", "400000baseKR4/Full", "400000baseSR4/Full",
	"400000baseLR4_ER4_FR4/Full", "400000baseDR4/Full", "400000baseCR4/Full", "100baseFX/Half",
	"100baseFX/Full", "10baseT1L/Full", "800000baseCR8/Full", "800000baseKR8/Full",
	"800000baseDR8/Full", "800000baseDR8_2/Full", "800000baseSR8/Full", "800000baseVR8/Full",
	"10baseT1S/Full", "10baseT1S/Half", "10baseT1S_P2MP/Half", "10baseT1BRR/Full", "200000baseCR/Full",
	"200000baseKR/Full", "200000baseDR/Full", "200000baseDR_2/Full", "200000baseSR/Full",
	"200000baseVR/Full", "400000baseCR2/Full", "400000baseKR2/Full", "400000baseDR2/Full",
	"400000baseDR2_2/Full", "400000baseSR2/Full", "400000baseVR2/Full", "800000baseCR4/Full",
	"800000baseKR4/Full", "800000baseDR4/Full", "800000baseDR4_2/Full", "800000baseSR4/Full",
	"800000baseVR4/Full",
}

// LinkModeName names link-mode bit i as ethtool prints it ("bit N" for a
// bit newer than the table).
func LinkModeName(i int) string {
	if i >= 0 && i < len(linkModeNames) {
		return linkModeNames[i]
	}
	return fmt.Sprintf("bit %d", i)
}

// FECModeName reads a FEC bit of the link-mode mask under any of the
// names it goes by and returns the kernel's (ETH_SS_LINK_MODES: "None",
// "RS", "BASER", "LLRS"): ethtool's ioctl-era words ("BaseR", "Off"),
// the uapi bit names ("ETHTOOL_LINK_MODE_FEC_RS_BIT", "FEC_BASER") and
// any case. ok is false for a name that is not a FEC bit.
func FECModeName(s string) (name string, ok bool) {
	k := strings.ToUpper(strings.TrimSpace(s))
	k = strings.TrimSuffix(strings.TrimPrefix(k, "ETHTOOL_LINK_MODE_"), "_BIT")
	k = strings.TrimPrefix(k, "FEC_")
	k = strings.NewReplacer("-", "", "_", "", " ", "").Replace(k)
	switch k {
	case "NONE", "OFF":
		return "None", true
	case "RS":
		return "RS", true
	case "BASER", "FC", "FIRECODE":
		return "BASER", true
	case "LLRS":
		return "LLRS", true
	}
	return "", false
}

// Normalize moves FEC bits found in the link-mode lists into the FEC
// lists, under the kernel's names, and names every FEC entry the
// kernel's way. The netlink and ioctl readers split them already; a
// linkmodes.json written by another version of linerate, or by hand,
// may list "RS" among the partner's modes, and the partner's FEC must
// not be lost for it.
func (lm *LinkModes) Normalize() {
	split := func(modes *[]string, fec *[]string) {
		var keep []string
		out := []string{}
		add := func(n string) {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
		for _, f := range *fec {
			if n, ok := FECModeName(f); ok {
				add(n)
			}
		}
		for _, m := range *modes {
			if n, ok := FECModeName(m); ok {
				add(n)
				continue
			}
			keep = append(keep, m)
		}
		if keep == nil {
			keep = []string{}
		}
		*modes, *fec = keep, out
	}
	split(&lm.Supported, &lm.SupportedFEC)
	split(&lm.Advertised, &lm.AdvertisedFEC)
	split(&lm.PartnerAdvertised, &lm.PartnerFEC)
}

// Normalize names the FEC encodings the way FEC_GET's reader does ("off",
// "RS", "BASER", "LLRS"), whatever spelling a snapshot of another version
// or a hand-made tree used ("None", "BaseR", "rs"); "Auto" in the
// configured list sets Auto. Names that are no FEC encoding are kept, so
// the schema check can point at them.
func (f *FEC) Normalize() {
	conf := []string{}
	for _, c := range f.Configured {
		switch n, ok := FECModeName(c); {
		case strings.EqualFold(strings.TrimSpace(c), "auto"):
			f.Auto = true
		case ok:
			if n = fecName(n); !slices.Contains(conf, n) {
				conf = append(conf, n)
			}
		default:
			conf = append(conf, c)
		}
	}
	f.Configured = conf
	if f.Active != nil {
		if n, ok := FECModeName(*f.Active); ok {
			f.Active = ptr(fecName(n))
		}
	}
}
