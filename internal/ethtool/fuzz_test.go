package ethtool

import (
	"testing"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

// replySeeds returns the fake kernel's reply to each GET, as fuzz seeds.
func replySeeds(t testing.TB) map[uint8][]byte {
	k := &fakeKernel{t: &testing.T{}, pages: testModule()}
	out := map[uint8][]byte{}
	for _, cmd := range []uint8{msgLinkmodesGet, msgLinkstateGet, msgFECGet, msgStatsGet, msgPauseGet, msgChannelsGet, msgRingsGet, msgStrsetGet} {
		msgs, err := k.serve(genetlink.Message{Header: genetlink.Header{Command: cmd}}, netlink.Message{Header: netlink.Header{Type: fakeFamily}})
		if err != nil || len(msgs) != 1 {
			t.Fatalf("seed %d: %v", cmd, err)
		}
		out[cmd] = msgs[0].Data
	}
	return out
}

// FuzzReplies feeds arbitrary attribute bytes to the parser of each reply:
// an error or facts, never a panic.
func FuzzReplies(f *testing.F) {
	for cmd, b := range replySeeds(f) {
		f.Add(cmd, b)
	}
	f.Fuzz(func(t *testing.T, cmd uint8, b []byte) {
		switch cmd % 9 {
		case 0:
			if lm, err := parseLinkModes(b); err == nil && (lm.Supported == nil || lm.Duplex == "") {
				t.Fatalf("link modes without lists: %+v", lm)
			}
		case 1:
			parseLinkState(b)
		case 2:
			if fec, err := parseFEC(b); err == nil && fec.Configured == nil {
				t.Fatal("FEC without a configured list")
			}
		case 3:
			parseStats(b, &Stats{})
		case 4:
			parsePause(b)
		case 5:
			parseChannels(b)
		case 6:
			parseRings(b)
		case 7:
			if data, err := parseEEPROM(b); err == nil && len(data) > 128 {
				t.Fatalf("%d bytes of module data", len(data))
			}
		case 8:
			parseStrset(b)
			parseFamily(b)
		}
	})
}

// FuzzBitset decodes arbitrary bitsets in both forms.
func FuzzBitset(f *testing.F) {
	for _, cmd := range []uint8{msgLinkmodesGet, msgFECGet} {
		b := replySeeds(f)[cmd]
		ad, _ := netlink.NewAttributeDecoder(b)
		for ad.Next() {
			if ad.Type() == aLinkmodesOurs || ad.Type() == aLinkmodesPeer || (cmd == msgFECGet && ad.Type() == aFECModes) {
				f.Add(ad.Bytes())
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		bs, err := parseBitset(b, LinkModeName)
		if err == nil && len(bs.on) > maxBitsetBits+len(b) {
			t.Fatalf("%d bits on from %d bytes", len(bs.on), len(b))
		}
	})
}
