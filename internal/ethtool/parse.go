package ethtool

import (
	"encoding/binary"
	"fmt"
	"regexp"

	"github.com/mdlayher/netlink"
)

// Parsers of reply attributes. They are pure (bytes in, facts out) and
// take whatever the kernel, or a corrupt reply, sends: a malformed
// attribute is an error, never a panic.

// maxBitsetBits bounds a compact bitset; the kernel's largest (link
// modes) has about 120 bits.
const maxBitsetBits = 1 << 12

// bitset is a decoded ETHTOOL_A_BITSET_* nest: the bits that are on and,
// unless the kernel sent no mask, the bits of the mask.
type bitset struct {
	on, mask []string
	nomask   bool
}

// parseBitset decodes a bitset in either form: verbose (a list of bits
// with index, name and value flag) or compact (value and mask arrays of
// 32-bit words, in host byte order). Names in a compact set come from
// names by index. In the verbose form with a mask, the kernel lists every
// bit of the mask and flags those of the value; without a mask it lists
// the bits that are on.
func parseBitset(b []byte, names func(int) string) (bitset, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return bitset{}, err
	}
	var (
		bs          bitset
		size        uint32
		value, mask []byte
		verbose     bool
	)
	for ad.Next() {
		switch ad.Type() {
		case aBitsetNomask:
			bs.nomask = true
		case aBitsetSize:
			size = ad.Uint32()
		case aBitsetValue:
			value = ad.Bytes()
		case aBitsetMask:
			mask = ad.Bytes()
		case aBitsetBits:
			verbose = true
			ad.Nested(func(nad *netlink.AttributeDecoder) error {
				for nad.Next() {
					if nad.Type() != aBitsetBitsBit {
						continue
					}
					nad.Nested(func(bd *netlink.AttributeDecoder) error {
						idx, name, on := -1, "", false
						for bd.Next() {
							switch bd.Type() {
							case aBitsetBitIndex:
								idx = int(bd.Uint32())
							case aBitsetBitName:
								name = bd.String()
							case aBitsetBitValue:
								on = true
							}
						}
						if name == "" {
							name = names(idx)
						}
						bs.mask = append(bs.mask, name)
						if on {
							bs.on = append(bs.on, name)
						}
						return nil
					})
				}
				return nil
			})
		}
	}
	if err := ad.Err(); err != nil {
		return bitset{}, err
	}
	if verbose {
		if bs.nomask {
			bs.on, bs.mask = bs.mask, nil
		}
		return bs, nil
	}
	if size > maxBitsetBits {
		return bitset{}, fmt.Errorf("bitset of %d bits: more than the %d any ethtool bitset has", size, maxBitsetBits)
	}
	bs.on = compactBits(value, size, names)
	if !bs.nomask {
		bs.mask = compactBits(mask, size, names)
	}
	return bs, nil
}

// compactBits lists the names of the bits set in words (32-bit words in
// host order), up to size bits.
func compactBits(words []byte, size uint32, names func(int) string) []string {
	var out []string
	for i := 0; i < int(size) && i/8 < len(words); i++ {
		w := binary.NativeEndian.Uint32(padWord(words, i/32))
		if w&(1<<(uint(i)%32)) != 0 {
			out = append(out, names(i))
		}
	}
	return out
}

// padWord returns word n of b, zero-padded when b ends inside it.
func padWord(b []byte, n int) []byte {
	var w [4]byte
	if n*4 < len(b) {
		copy(w[:], b[n*4:])
	}
	return w[:]
}

// linkModeRE matches the names of link modes proper ("100000baseCR4/Full",
// "10000baseR_FEC"), as against ports, pause and FEC bits of the same mask.
var linkModeRE = regexp.MustCompile(`^\d+base`)

// splitModes separates link modes and FEC modes, in the kernel's order.
func splitModes(names []string) (modes, fec []string) {
	modes, fec = []string{}, []string{}
	for _, n := range names {
		switch {
		case linkModeRE.MatchString(n):
			modes = append(modes, n)
		default:
			if f, ok := FECModeName(n); ok {
				fec = append(fec, f)
			}
		}
	}
	return modes, fec
}

// speedUnknown is SPEED_UNKNOWN ((u32)-1).
const speedUnknown = 0xffffffff

func parseLinkModes(b []byte) (*LinkModes, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil, err
	}
	lm := &LinkModes{Duplex: "unknown", Source: "netlink"}
	var ours, peer bitset
	for ad.Next() {
		switch ad.Type() {
		case aLinkmodesAutoneg:
			lm.Autoneg = ad.Uint8() == 1
		case aLinkmodesOurs:
			ad.Do(func(b []byte) (err error) { ours, err = parseBitset(b, LinkModeName); return })
		case aLinkmodesPeer:
			ad.Do(func(b []byte) (err error) { peer, err = parseBitset(b, LinkModeName); return })
		case aLinkmodesSpeed:
			if s := ad.Uint32(); s != speedUnknown && s != 0 {
				lm.SpeedMbps = ptr(int(s))
			}
		case aLinkmodesDuplex:
			lm.Duplex = duplexName(ad.Uint8())
		case aLinkmodesLanes:
			if n := ad.Uint32(); n > 0 {
				lm.Lanes = ptr(int(n))
			}
		}
	}
	if err := ad.Err(); err != nil {
		return nil, err
	}
	// OURS: value = advertised, mask = supported (ethtool-netlink.rst).
	lm.Supported, lm.SupportedFEC = splitModes(ours.mask)
	lm.Advertised, lm.AdvertisedFEC = splitModes(ours.on)
	lm.PartnerAdvertised, lm.PartnerFEC = splitModes(peer.on)
	return lm, nil
}

// duplexName names DUPLEX_HALF (0), DUPLEX_FULL (1) and the rest.
func duplexName(d uint8) string {
	switch d {
	case 0:
		return "half"
	case 1:
		return "full"
	}
	return "unknown"
}

func parseLinkState(b []byte) (*LinkState, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil, err
	}
	ls := &LinkState{}
	state, sub := -1, -1
	for ad.Next() {
		switch ad.Type() {
		case aLinkstateLink:
			ls.Link = ptr(ad.Uint8() != 0)
		case aLinkstateSQI:
			ls.SQI = ptr(ad.Uint32())
		case aLinkstateSQIMax:
			ls.SQIMax = ptr(ad.Uint32())
		case aLinkstateExtState:
			state = int(ad.Uint8())
		case aLinkstateExtSubstate:
			sub = int(ad.Uint8())
		case aLinkstateExtDownCnt:
			ls.DownEvents = ptr(ad.Uint32())
		}
	}
	if err := ad.Err(); err != nil {
		return nil, err
	}
	if state >= 0 {
		ls.ExtState, ls.ExtSubstate = extStateNames(state, sub)
	}
	return ls, nil
}

// fecName maps a FEC link-mode name to the word ethtool prints ("None" is
// "off").
func fecName(n string) string {
	if n == "None" {
		return "off"
	}
	return n
}

func parseFEC(b []byte) (*FEC, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil, err
	}
	f := &FEC{Configured: []string{}}
	for ad.Next() {
		switch ad.Type() {
		case aFECModes:
			ad.Do(func(b []byte) error {
				bs, err := parseBitset(b, LinkModeName)
				for _, n := range bs.on {
					if k, ok := FECModeName(n); ok {
						f.Configured = append(f.Configured, fecName(k))
					}
				}
				return err
			})
		case aFECAuto:
			f.Auto = ad.Uint8() != 0
		case aFECActive:
			if k, ok := FECModeName(LinkModeName(int(ad.Uint32()))); ok {
				f.Active = ptr(fecName(k))
			}
		case aFECStats:
			f.Stats = &FECStats{}
			ad.Nested(func(nad *netlink.AttributeDecoder) error {
				for nad.Next() {
					switch nad.Type() {
					case aFECStatCorrected:
						f.Stats.CorrectedBlocks = u64s(nad.Bytes())
					case aFECStatUncorr:
						f.Stats.UncorrectableBlocks = u64s(nad.Bytes())
					case aFECStatCorrBits:
						f.Stats.CorrectedBits = u64s(nad.Bytes())
					case aFECStatHist:
						if len(f.Hist) < maxHistBins {
							nad.Nested(func(h *netlink.AttributeDecoder) error {
								f.Hist = append(f.Hist, parseHistBin(h))
								return nil
							})
						}
					}
				}
				return nil
			})
		}
	}
	if err := ad.Err(); err != nil {
		return nil, err
	}
	if s := f.Stats; s != nil && s.CorrectedBlocks == nil && s.UncorrectableBlocks == nil && s.CorrectedBits == nil {
		f.Stats = nil // the nest came, but the driver filled nothing
	}
	return f, nil
}

// maxHistBins bounds the FEC histogram a reply may carry: the kernel
// sends at most a few tens of bins (ETHTOOL_FEC_HIST_MAX), so more is a
// garbled reply, not a longer histogram.
const maxHistBins = 64

// maxLanes bounds per-lane arrays (ETHTOOL_MAX_LANES is 8).
const maxLanes = 8

// parseHistBin reads one ETHTOOL_A_FEC_STAT_HIST nest.
func parseHistBin(h *netlink.AttributeDecoder) FECHistBin {
	var b FECHistBin
	for h.Next() {
		switch h.Type() {
		case aFECHistBinLow:
			b.BinLow = h.Uint32()
		case aFECHistBinHigh:
			b.BinHigh = h.Uint32()
		case aFECHistBinVal:
			// An NLA_UINT: four or eight bytes.
			if raw := h.Bytes(); len(raw) == 4 {
				b.Val = uint64(binary.NativeEndian.Uint32(raw))
			} else if len(raw) >= 8 {
				b.Val = binary.NativeEndian.Uint64(raw)
			}
		case aFECHistBinPerLane:
			v := u64s(h.Bytes())
			b.PerLane = v[:min(len(v), maxLanes)]
		}
	}
	return b
}

// u64s reads an array of 64-bit counters in host order; an empty array
// (the driver has none) is nil.
func u64s(b []byte) []uint64 {
	var out []uint64
	for len(b) >= 8 {
		out = append(out, binary.NativeEndian.Uint64(b))
		b = b[8:]
	}
	return out
}

// parseStats reads a STATS_GET reply into the standard groups of st.
// Groups whose stats the driver did not fill arrive empty and stay nil.
func parseStats(b []byte, st *Stats) error {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return err
	}
	for ad.Next() {
		if ad.Type() != aStatsGrp {
			continue
		}
		ad.Nested(func(gd *netlink.AttributeDecoder) error {
			id := uint32(1 << 31)
			vals := map[string]uint64{}
			for gd.Next() {
				switch gd.Type() {
				case aStatsGrpID:
					id = gd.Uint32()
				case aStatsGrpStat:
					gd.Nested(func(sd *netlink.AttributeDecoder) error {
						for sd.Next() {
							vals[statName(id, sd.Type())] = sd.Uint64()
						}
						return nil
					})
				}
			}
			if len(vals) == 0 {
				return nil
			}
			switch id {
			case statsEthPHY:
				st.EthPHY = vals
			case statsEthMAC:
				st.EthMAC = vals
			case statsEthCtrl:
				st.EthCtrl = vals
			case statsRMON:
				st.RMON = vals
			}
			return nil
		})
	}
	return ad.Err()
}

// statName names stat id of group grp; the group's ID precedes its stats
// in every reply the kernel builds.
func statName(grp uint32, id uint16) string {
	if names := statNames[grp]; int(id) < len(names) {
		return names[id]
	}
	return fmt.Sprintf("stat_%d", id)
}

func parsePause(b []byte) (*Pause, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil, err
	}
	p := &Pause{}
	for ad.Next() {
		switch ad.Type() {
		case aPauseAutoneg:
			p.Autoneg = ptr(ad.Uint8() != 0)
		case aPauseRX:
			p.RX = ptr(ad.Uint8() != 0)
		case aPauseTX:
			p.TX = ptr(ad.Uint8() != 0)
		case aPauseStats:
			ad.Nested(func(nad *netlink.AttributeDecoder) error {
				for nad.Next() {
					switch nad.Type() {
					case aPauseStatTXFrames:
						p.TXFrames = ptr(nad.Uint64())
					case aPauseStatRXFrames:
						p.RXFrames = ptr(nad.Uint64())
					}
				}
				return nil
			})
		}
	}
	return p, ad.Err()
}

func parseChannels(b []byte) (*Channels, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil, err
	}
	c := &Channels{}
	fields := map[uint16]**uint32{
		aChannelsRXMax: &c.RXMax, aChannelsTXMax: &c.TXMax, aChannelsOtherMax: &c.OtherMax,
		aChannelsCombinedMax: &c.CombinedMax, aChannelsRXCount: &c.RX, aChannelsTXCount: &c.TX,
		aChannelsOtherCount: &c.Other, aChannelsCombinedCount: &c.Combined,
	}
	for ad.Next() {
		if f, ok := fields[ad.Type()]; ok {
			*f = ptr(ad.Uint32())
		}
	}
	return c, ad.Err()
}

func parseRings(b []byte) (*Rings, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil, err
	}
	r := &Rings{}
	fields := map[uint16]**uint32{
		aRingsRXMax: &r.RXMax, aRingsRXMiniMax: &r.RXMiniMax, aRingsRXJumboMax: &r.RXJumboMax,
		aRingsTXMax: &r.TXMax, aRingsRX: &r.RX, aRingsRXMini: &r.RXMini, aRingsRXJumbo: &r.RXJumbo,
		aRingsTX: &r.TX, aRingsRXBufLen: &r.RXBufLen, aRingsCQESize: &r.CQESize,
	}
	for ad.Next() {
		if f, ok := fields[ad.Type()]; ok {
			*f = ptr(ad.Uint32())
		}
	}
	return r, ad.Err()
}

// parseEEPROM returns the DATA of a MODULE_EEPROM_GET reply: as many
// bytes as the driver read.
func parseEEPROM(b []byte) ([]byte, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil, err
	}
	var data []byte
	found := false
	for ad.Next() {
		if ad.Type() == aEEPROMData {
			data, found = ad.Bytes(), true
		}
	}
	if err := ad.Err(); err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("the reply has no data attribute")
	}
	if len(data) > eepromMaxChunk {
		return nil, fmt.Errorf("the reply holds %d bytes, more than the %d asked for", len(data), eepromMaxChunk)
	}
	return data, nil
}

// parseStrset returns the strings of the first string set in a
// STRSET_GET reply, by index.
func parseStrset(b []byte) (map[int]string, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil, err
	}
	out := map[int]string{}
	for ad.Next() {
		if ad.Type() != aStrsetStringsets {
			continue
		}
		ad.Nested(func(sd *netlink.AttributeDecoder) error {
			for sd.Next() {
				sd.Nested(func(set *netlink.AttributeDecoder) error {
					for set.Next() {
						if set.Type() != aStringsetStrings {
							continue
						}
						set.Nested(func(strs *netlink.AttributeDecoder) error {
							for strs.Next() {
								strs.Nested(func(s *netlink.AttributeDecoder) error {
									idx, val := -1, ""
									for s.Next() {
										switch s.Type() {
										case aStringIndex:
											idx = int(s.Uint32())
										case aStringValue:
											val = s.String()
										}
									}
									if idx >= 0 {
										out[idx] = val
									}
									return nil
								})
							}
							return nil
						})
					}
					return nil
				})
			}
			return nil
		})
	}
	return out, ad.Err()
}

func ptr[T any](v T) *T { return &v }
