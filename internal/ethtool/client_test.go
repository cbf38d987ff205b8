package ethtool

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/genetlink/genltest"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/sff"
)

// fakeKernel answers ethtool netlink requests the way the kernel does,
// from canned facts, and records what it was asked. Replies are built
// with the kernel's attribute layout (ethtool-netlink.rst).
type fakeKernel struct {
	t       *testing.T
	noFam   bool          // answer ENOENT to the family lookup
	ops     []uint8       // commands the family lists (nil: all)
	errs    map[uint8]int // command → errno to answer
	pages   sff.Pages     // module memory
	pageErr map[sff.Page]int
	asked   []genetlink.Message
	setCh   map[uint16]uint32
}

const fakeFamily = 0x1c

func (k *fakeKernel) dial() *Client {
	return newClient(genltest.Dial(k.serve), &fakeIoctl{})
}

func (k *fakeKernel) serve(greq genetlink.Message, nreq netlink.Message) ([]genetlink.Message, error) {
	if nreq.Header.Type == genlIDCtrl {
		if k.noFam {
			return nil, genltest.Error(int(unix.ENOENT))
		}
		ae := netlink.NewAttributeEncoder()
		ae.Uint16(ctrlAttrFamilyID, fakeFamily)
		ae.String(ctrlAttrFamilyName, familyName)
		ae.Uint32(ctrlAttrVersion, 1)
		ops := k.ops
		if ops == nil {
			ops = []uint8{msgStrsetGet, msgLinkmodesGet, msgLinkstateGet, msgRingsGet, msgRingsSet, msgChannelsGet,
				msgChannelsSet, msgPauseGet, msgFECGet, msgModuleEEPROMGet, msgStatsGet}
		}
		ae.Nested(ctrlAttrOps, func(n *netlink.AttributeEncoder) error {
			for i, op := range ops {
				n.Nested(uint16(i+1), func(o *netlink.AttributeEncoder) error {
					o.Uint32(ctrlAttrOpID, uint32(op))
					o.Uint32(2, 0x0a) // CTRL_ATTR_OP_FLAGS
					return nil
				})
			}
			return nil
		})
		return k.reply(ae)
	}
	if nreq.Header.Type != fakeFamily {
		return nil, fmt.Errorf("request to family %d", nreq.Header.Type)
	}
	k.asked = append(k.asked, greq)
	if en, ok := k.errs[greq.Header.Command]; ok {
		return nil, genltest.Error(en)
	}
	ae := netlink.NewAttributeEncoder()
	switch greq.Header.Command {
	case msgLinkmodesGet:
		ae.Uint8(aLinkmodesAutoneg, 0)
		verbose(ae, aLinkmodesOurs, []int{31, 36, 37, 38, 50, 51}, []int{38, 50}, false)
		verbose(ae, aLinkmodesPeer, []int{38, 50}, nil, true)
		ae.Uint32(aLinkmodesSpeed, 100000)
		ae.Uint8(aLinkmodesDuplex, 1)
		ae.Uint32(aLinkmodesLanes, 4)
	case msgLinkstateGet:
		ae.Uint8(aLinkstateLink, 0)
		ae.Uint8(aLinkstateExtState, 2)    // logical mismatch
		ae.Uint8(aLinkstateExtSubstate, 5) // RS FEC is not locked
		ae.Uint32(aLinkstateExtDownCnt, 7)
	case msgFECGet:
		verbose(ae, aFECModes, []int{50}, nil, true)
		ae.Uint8(aFECAuto, 0)
		ae.Uint32(aFECActive, 50)
		ae.Nested(aFECStats, func(s *netlink.AttributeEncoder) error {
			s.Bytes(aFECStatCorrected, u64bytes(1500, 1000, 500, 0, 0))
			s.Bytes(aFECStatUncorr, u64bytes(3, 0, 3, 0, 0))
			s.Bytes(aFECStatCorrBits, nil) // length 0: the driver has none
			// The 6.18 histogram: bin 0 (no error) as a u64, per lane;
			// bins 1-3 as a u32 without lanes.
			s.Nested(aFECStatHist, func(h *netlink.AttributeEncoder) error {
				h.Uint32(aFECHistBinLow, 0)
				h.Uint32(aFECHistBinHigh, 0)
				h.Uint64(aFECHistBinVal, 1<<33)
				h.Bytes(aFECHistBinPerLane, u64bytes(1<<31, 1<<31, 1<<31, 1<<31))
				return nil
			})
			s.Nested(aFECStatHist, func(h *netlink.AttributeEncoder) error {
				h.Uint32(aFECHistBinLow, 1)
				h.Uint32(aFECHistBinHigh, 3)
				h.Uint32(aFECHistBinVal, 4242)
				return nil
			})
			return nil
		})
	case msgStatsGet:
		ae.Uint32(5, 0) // ETHTOOL_A_STATS_SRC
		group := func(id uint32, stats map[uint16]uint64) {
			ae.Nested(aStatsGrp, func(g *netlink.AttributeEncoder) error {
				g.Uint32(aStatsGrpID, id)
				g.Uint32(3, 17+id) // GRP_SS_ID
				for sid, v := range stats {
					g.Nested(aStatsGrpStat, func(s *netlink.AttributeEncoder) error { s.Uint64(sid, v); return nil })
				}
				return nil
			})
		}
		group(statsEthPHY, map[uint16]uint64{0: 42})
		group(statsEthMAC, map[uint16]uint64{4: 9, 3: 123456})
		group(statsEthCtrl, nil) // asked for, not filled: absent
		group(statsRMON, map[uint16]uint64{1: 2})
	case msgPauseGet:
		ae.Uint8(aPauseAutoneg, 0)
		ae.Uint8(aPauseRX, 1)
		ae.Uint8(aPauseTX, 1)
		ae.Nested(aPauseStats, func(s *netlink.AttributeEncoder) error {
			s.Uint64(aPauseStatTXFrames, 11)
			s.Uint64(aPauseStatRXFrames, 22)
			return nil
		})
	case msgChannelsGet:
		ae.Uint32(aChannelsCombinedMax, 63)
		ae.Uint32(aChannelsCombinedCount, 8)
	case msgChannelsSet:
		if nreq.Header.Flags&netlink.Acknowledge == 0 {
			k.t.Error("CHANNELS_SET without NLM_F_ACK: the kernel would send nothing back")
		}
		k.setCh = attrsU32(k.t, greq.Data)
		return []genetlink.Message{{}}, nil // the acknowledgement
	case msgRingsGet:
		ae.Uint32(aRingsRXMax, 8192)
		ae.Uint32(aRingsTXMax, 8192)
		ae.Uint32(aRingsRX, 512)
		ae.Uint32(aRingsTX, 1024)
	case msgModuleEEPROMGet:
		p := eepromRequest(k.t, greq.Data)
		if en, ok := k.pageErr[p]; ok {
			return nil, genltest.Error(en)
		}
		b, ok := k.pages[p]
		if !ok {
			return nil, genltest.Error(int(unix.EINVAL))
		}
		ae.Bytes(aEEPROMData, b)
	case msgStrsetGet:
		ae.Nested(aStrsetStringsets, func(s *netlink.AttributeEncoder) error {
			s.Nested(aStringsetsStringset, func(set *netlink.AttributeEncoder) error {
				set.Uint32(aStringsetID, ssLinkModes)
				set.Nested(aStringsetStrings, func(strs *netlink.AttributeEncoder) error {
					for i, n := range linkModeNames[:3] {
						strs.Nested(aStringsString, func(st *netlink.AttributeEncoder) error {
							st.Uint32(aStringIndex, uint32(i))
							st.String(aStringValue, n)
							return nil
						})
					}
					return nil
				})
				return nil
			})
			return nil
		})
	default:
		return nil, genltest.Error(int(unix.EOPNOTSUPP))
	}
	return k.reply(ae)
}

func (k *fakeKernel) reply(ae *netlink.AttributeEncoder) ([]genetlink.Message, error) {
	b, err := ae.Encode()
	if err != nil {
		return nil, err
	}
	return []genetlink.Message{{Data: b}}, nil
}

// verbose writes a verbose bitset: the bits of mask, flagging those in
// on; with nomask, mask lists the bits that are on and no flag is set.
func verbose(ae *netlink.AttributeEncoder, typ uint16, mask, on []int, nomask bool) {
	ae.Nested(typ, func(bs *netlink.AttributeEncoder) error {
		if nomask {
			bs.Flag(aBitsetNomask, true)
		}
		bs.Uint32(aBitsetSize, uint32(len(linkModeNames)))
		bs.Nested(aBitsetBits, func(bits *netlink.AttributeEncoder) error {
			for _, i := range mask {
				bits.Nested(aBitsetBitsBit, func(b *netlink.AttributeEncoder) error {
					b.Uint32(aBitsetBitIndex, uint32(i))
					b.String(aBitsetBitName, linkModeNames[i])
					if !nomask && slices.Contains(on, i) {
						b.Flag(aBitsetBitValue, true)
					}
					return nil
				})
			}
			return nil
		})
		return nil
	})
}

func u64bytes(v ...uint64) []byte {
	var b []byte
	for _, x := range v {
		b = binary.NativeEndian.AppendUint64(b, x)
	}
	return b
}

// attrsU32 decodes the u32 attributes of a request, skipping the header.
func attrsU32(t *testing.T, b []byte) map[uint16]uint32 {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint16]uint32{}
	for ad.Next() {
		if ad.Type() != 1 && len(ad.Bytes()) == 4 {
			out[ad.Type()] = ad.Uint32()
		}
	}
	return out
}

// eepromRequest checks a MODULE_EEPROM_GET request against the kernel's
// rules (at most 128 bytes, not across offset 128) and returns the page.
func eepromRequest(t *testing.T, b []byte) sff.Page {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		t.Fatal(err)
	}
	var p sff.Page
	var off, length uint32
	for ad.Next() {
		switch ad.Type() {
		case aEEPROMOffset:
			off = ad.Uint32()
		case aEEPROMLength:
			length = ad.Uint32()
		case aEEPROMPage:
			p.Page = ad.Uint8()
		case aEEPROMBank:
			p.Bank = ad.Uint8()
		case aEEPROMI2C:
			p.I2C = ad.Uint8()
		}
	}
	if length == 0 || length > 128 || (off < 128 && off+length > 128) || off+length > 256 {
		t.Errorf("MODULE_EEPROM_GET offset %d length %d breaks the kernel's rules", off, length)
	}
	p.Offset = uint8(off)
	return p
}

// fakeIoctl is the ioctl on a host whose driver has counters and nothing
// else the tests ask for.
type fakeIoctl struct{ linkModesCalled bool }

func (f *fakeIoctl) driverStats(string) (map[string]uint64, error) {
	// cxgb4 pads names with spaces and heads its loopback section with a pseudo-name.
	return map[string]uint64{"rx_out_of_buffer": 5, "tx_frames_dropped      ": 2, "-------Loopback----------- ": 0}, nil
}
func (f *fakeIoctl) driverName(string) (string, error) { return "mlx5_core", nil }
func (f *fakeIoctl) channels(string) (*Channels, error) {
	return &Channels{RXMax: ptr[uint32](4), RX: ptr[uint32](2)}, nil
}
func (f *fakeIoctl) setChannels(string, ChannelCounts) error { return nil }
func (f *fakeIoctl) rings(string) (*Rings, error)            { return nil, unix.EOPNOTSUPP }
func (f *fakeIoctl) setRings(string, RingSizes) error        { return unix.EOPNOTSUPP }
func (f *fakeIoctl) pause(string) (*Pause, error)            { return nil, unix.EOPNOTSUPP }
func (f *fakeIoctl) moduleEEPROM(string) ([]byte, error)     { return nil, unix.EIO }
func (f *fakeIoctl) close()                                  {}
func (f *fakeIoctl) linkModes(string) (*LinkModes, error) {
	f.linkModesCalled = true
	return &LinkModes{Duplex: "full", Source: "ioctl", Supported: []string{"40000baseSR4/Full"}}, nil
}

func TestClientFacts(t *testing.T) {
	k := &fakeKernel{t: t, pages: testModule()}
	c := k.dial()
	defer c.Close()
	f := Collect(c, "eth9")

	lm := f.LinkModes
	if lm == nil || *lm.SpeedMbps != 100000 || lm.Duplex != "full" || *lm.Lanes != 4 || lm.Autoneg || lm.Source != "netlink" {
		t.Fatalf("link modes %+v", lm)
	}
	// OURS: the mask is what is supported, the flagged bits what is advertised.
	if !slices.Equal(lm.Supported, []string{"25000baseCR/Full", "100000baseKR4/Full", "100000baseSR4/Full", "100000baseCR4/Full"}) ||
		!slices.Equal(lm.Advertised, []string{"100000baseCR4/Full"}) ||
		!slices.Equal(lm.PartnerAdvertised, []string{"100000baseCR4/Full"}) ||
		!slices.Equal(lm.SupportedFEC, []string{"RS", "BASER"}) || !slices.Equal(lm.PartnerFEC, []string{"RS"}) {
		t.Errorf("link modes %+v", lm)
	}
	ls := f.LinkState
	if ls == nil || *ls.Link || ls.ExtState != "Logical mismatch" || ls.ExtSubstate != "RS FEC is not locked" || *ls.DownEvents != 7 {
		t.Errorf("link state %+v", ls)
	}
	fec := f.FEC
	if fec == nil || *fec.Active != "RS" || !slices.Equal(fec.Configured, []string{"RS"}) || fec.Stats == nil ||
		!slices.Equal(fec.Stats.CorrectedBlocks, []uint64{1500, 1000, 500, 0, 0}) ||
		!slices.Equal(fec.Stats.UncorrectableBlocks, []uint64{3, 0, 3, 0, 0}) || fec.Stats.CorrectedBits != nil {
		t.Errorf("fec %+v %+v", fec, fec.Stats)
	}
	if len(fec.Hist) != 2 || fec.Hist[0].Val != 1<<33 || !slices.Equal(fec.Hist[0].PerLane, []uint64{1 << 31, 1 << 31, 1 << 31, 1 << 31}) ||
		fec.Hist[1].BinLow != 1 || fec.Hist[1].BinHigh != 3 || fec.Hist[1].Val != 4242 || fec.Hist[1].PerLane != nil {
		t.Errorf("fec histogram %+v", fec.Hist)
	}
	st := f.Stats
	if st == nil || st.EthPHY["SymbolErrorDuringCarrier"] != 42 || st.EthMAC["FrameCheckSequenceErrors"] != 9 ||
		st.EthMAC["FramesReceivedOK"] != 123456 || st.EthCtrl != nil || st.RMON["etherStatsOversizePkts"] != 2 {
		t.Errorf("standard stats %+v", st)
	}
	if st.Driver["tx_frames_dropped"] != 2 || st.Driver["rx_out_of_buffer"] != 5 || len(st.Driver) != 2 {
		t.Errorf("driver stats %v: padded names trimmed, the loopback heading dropped", st.Driver)
	}
	if p := st.Pause; p == nil || *p.TXFrames != 11 || *p.RXFrames != 22 || !*p.RX {
		t.Errorf("pause %+v", p)
	}
	if ch := f.Channels; ch == nil || *ch.Combined != 8 || *ch.CombinedMax != 63 || ch.RX != nil {
		t.Errorf("channels %+v", ch)
	}
	if r := f.Rings; r == nil || *r.RX != 512 || *r.RXMax != 8192 {
		t.Errorf("rings %+v", r)
	}
	if len(f.Module) != 3 || f.ModuleError != "" {
		t.Errorf("module: %d pages, error %q", len(f.Module), f.ModuleError)
	}
	if len(f.NotRead) != 0 {
		t.Errorf("not read: %v", f.NotRead)
	}
	// Requests: FEC and pause ask for statistics; link modes ask for the
	// verbose form (no compact flag), so names come from the kernel.
	for _, m := range k.asked {
		flags := headerFlags(t, m.Data)
		switch m.Header.Command {
		case msgFECGet, msgPauseGet:
			if flags&flagStats == 0 {
				t.Errorf("%s without ETHTOOL_FLAG_STATS", msgNames[m.Header.Command])
			}
		case msgLinkmodesGet:
			if flags&flagCompactBitsets != 0 {
				t.Error("LINKMODES_GET asked for compact bitsets")
			}
		}
	}
}

// headerFlags returns the flags of a request's header nest.
func headerFlags(t *testing.T, b []byte) uint32 {
	ad, _ := netlink.NewAttributeDecoder(b)
	var flags uint32
	for ad.Next() {
		if ad.Type() == 1 || ad.Type() == 2 && len(ad.Bytes()) > 4 {
			ad.Nested(func(h *netlink.AttributeDecoder) error {
				for h.Next() {
					if h.Type() == aHeaderFlags {
						flags = h.Uint32()
					}
				}
				return nil
			})
		}
	}
	return flags
}

// testModule is a QSFP28 whose pages Next asks for in turn.
func testModule() sff.Pages {
	lo := make([]byte, 128)
	lo[0], lo[1] = 0x11, 0x08
	lo[22], lo[23] = 0x19, 0x00
	up := make([]byte, 128)
	up[0] = 0x11
	return sff.Pages{sff.Lower: lo, sff.Upper(0, 0): up, sff.Upper(3, 0): make([]byte, 128)}
}

func TestModuleErrors(t *testing.T) {
	// A dead module: the first read fails with EIO.
	k := &fakeKernel{t: t, pages: testModule(), pageErr: map[sff.Page]int{sff.Lower: int(unix.EIO)}}
	c := k.dial()
	f := Collect(c, "ens5f4")
	c.Close()
	if f.ModuleError != "EIO" || f.Module != nil || !strings.Contains(f.NotRead[FactModule], "cannot be read: EIO") {
		t.Errorf("dead module: error %q, pages %v, note %q", f.ModuleError, f.Module, f.NotRead[FactModule])
	}
	// No module EEPROM at all (veth, copper NICs).
	k = &fakeKernel{t: t, errs: map[uint8]int{msgModuleEEPROMGet: int(unix.EOPNOTSUPP)}}
	c = k.dial()
	f = Collect(c, "lab0")
	c.Close()
	if f.ModuleError != "EOPNOTSUPP" || !strings.HasPrefix(f.NotRead[FactModule], "no module data") {
		t.Errorf("no module: %q, %q", f.ModuleError, f.NotRead[FactModule])
	}
	// A failing optional page: noted, the rest kept.
	k = &fakeKernel{t: t, pages: testModule(), pageErr: map[sff.Page]int{sff.Upper(3, 0): int(unix.EIO)}}
	c = k.dial()
	f = Collect(c, "eth9")
	c.Close()
	if len(f.Module) != 2 || f.ModuleError != "" || f.NotRead["module page 50-03-0-128"] == "" {
		t.Errorf("page 03h failing: %d pages, %q, %v", len(f.Module), f.ModuleError, f.NotRead)
	}
	// Unprivileged: EPERM says it needs root, never a guess.
	k = &fakeKernel{t: t, errs: map[uint8]int{msgModuleEEPROMGet: int(unix.EPERM), msgFECGet: int(unix.EPERM)}}
	c = k.dial()
	f = Collect(c, "eth9")
	c.Close()
	if f.NotRead[FactFEC] != "not read (needs root)" || !strings.Contains(f.NotRead[FactModule], "needs root") || f.FEC != nil {
		t.Errorf("as a user: %v", f.NotRead)
	}
}

func TestOldKernel(t *testing.T) {
	// No ethtool family (Linux before 5.6): the ioctl where there is one,
	// else "not supported" with the reason.
	k := &fakeKernel{t: t, noFam: true}
	io := &fakeIoctl{}
	c := newClient(genltest.Dial(k.serve), io)
	f := Collect(c, "eth0")
	c.Close()
	if !io.linkModesCalled || f.LinkModes == nil || f.LinkModes.Source != "ioctl" {
		t.Errorf("link modes did not fall back to the ioctl: %+v", f.LinkModes)
	}
	if f.Channels == nil || *f.Channels.RX != 2 {
		t.Errorf("channels did not fall back: %+v", f.Channels)
	}
	if !strings.Contains(f.NotRead[FactFEC], "no netlink message") || !strings.Contains(f.NotRead[FactLinkState], "no netlink message") {
		t.Errorf("FEC and link state on an old kernel: %v", f.NotRead)
	}
	if f.ModuleError != "EIO" {
		t.Errorf("module through the ioctl: %q", f.ModuleError)
	}
	// A kernel with the family but without FEC_GET (the ops list says).
	k = &fakeKernel{t: t, ops: []uint8{msgLinkmodesGet, msgChannelsGet}}
	c = k.dial()
	_, err := c.FEC("eth0")
	c.Close()
	if !errors.Is(err, ErrNoIoctl) || !strings.Contains(err.Error(), "FEC_GET") {
		t.Errorf("FEC without the message: %v", err)
	}
}

func TestSetChannelsRequest(t *testing.T) {
	k := &fakeKernel{t: t}
	c := k.dial()
	defer c.Close()
	if err := c.SetChannels("eth0", ChannelCounts{Combined: ptr[uint32](16)}); err != nil {
		t.Fatal(err)
	}
	if len(k.setCh) != 1 || k.setCh[aChannelsCombinedCount] != 16 {
		t.Errorf("CHANNELS_SET sent %v, want only combined = 16", k.setCh)
	}
	k.errs = map[uint8]int{msgRingsSet: int(unix.EINVAL)}
	err := c.SetRings("eth0", RingSizes{RX: ptr[uint32](1 << 20)})
	if Errno(err) != unix.EINVAL || !strings.Contains(err.Error(), "RINGS_SET eth0: EINVAL") {
		t.Errorf("refused ring size: %v", err)
	}
}

func TestCompactBitset(t *testing.T) {
	// The compact form: value and mask as 32-bit words; bit 38 is
	// 100000baseCR4/Full, bit 50 RS.
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(aBitsetSize, 64)
	val := make([]byte, 8)
	mask := make([]byte, 8)
	binary.NativeEndian.PutUint32(val[4:], 1<<(38-32))
	binary.NativeEndian.PutUint32(mask[4:], 1<<(38-32)|1<<(37-32)|1<<(50-32))
	ae.Bytes(aBitsetValue, val)
	ae.Bytes(aBitsetMask, mask)
	b, _ := ae.Encode()
	bs, err := parseBitset(b, LinkModeName)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(bs.on, []string{"100000baseCR4/Full"}) || !slices.Equal(bs.mask, []string{"100000baseSR4/Full", "100000baseCR4/Full", "RS"}) {
		t.Errorf("compact bitset: on %v mask %v", bs.on, bs.mask)
	}
	ae = netlink.NewAttributeEncoder()
	ae.Uint32(aBitsetSize, 1<<20)
	b, _ = ae.Encode()
	if _, err := parseBitset(b, LinkModeName); err == nil {
		t.Error("a bitset of 2^20 bits parsed")
	}
}

func TestLinkModeNames(t *testing.T) {
	if LinkModeName(38) != "100000baseCR4/Full" || LinkModeName(49) != "None" || LinkModeName(74) != "LLRS" || LinkModeName(9999) != "bit 9999" {
		t.Errorf("table: %s %s %s", LinkModeName(38), LinkModeName(49), LinkModeName(74))
	}
	k := &fakeKernel{t: t}
	c := k.dial()
	defer c.Close()
	m, err := c.LinkModeNames()
	if err != nil || m[2] != "100baseT/Half" || len(m) != 3 {
		t.Errorf("STRSET_GET: %v, %v", m, err)
	}
}
