package doctor

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/nicstats"
	"github.com/linerate/linerate/internal/sff"
	"github.com/linerate/linerate/internal/termui"
)

// ethText renders one ethtool part of a NIC block.
func ethText(colour bool, f func(*textWriter)) string {
	var b bytes.Buffer
	tw := &textWriter{w: bufio.NewWriter(&b), st: termui.Style{Colour: colour}}
	f(tw)
	tw.w.Flush()
	return b.String()
}

// TestTextEthtoolParts pins the link, FEC, module and queue lines for the
// fields each leaves out.
func TestTextEthtoolParts(t *testing.T) {
	st := termui.Style{Colour: true}
	tests := []struct {
		name string
		f    func(*textWriter)
		want string
	}{
		{"link, partner, no speed", func(tw *textWriter) {
			writeLinkModes(tw, &inventory.Link{PartnerAdvertised: []string{"25000baseCR/Full"}, Detected: bp(false), DownEvents: u32(0)})
		}, "  ethtool    speed unknown, partner advertises 25000baseCR/Full\n             no link detected\n"},
		{"link, ext state only", func(tw *textWriter) {
			writeLinkModes(tw, &inventory.Link{SpeedMbps: ip(25000), Detected: bp(true), ExtState: "No cable"})
		}, "  ethtool    25 Gbit/s\n"},
		{"link down, ext state only", func(tw *textWriter) {
			writeLinkModes(tw, &inventory.Link{SpeedMbps: ip(25000), Autoneg: bp(true), Detected: bp(false), ExtState: "No cable"})
		}, "  ethtool    25 Gbit/s , autoneg on\n             no link detected (No cable)\n"},
		{"fec, uncorrectable only", func(tw *textWriter) {
			writeFEC(tw, &inventory.FEC{Configured: []string{"RS"}, UncorrectableBlocks: ptrU(2)})
		}, "  fec        active not reported (no link), configured RS; blocks uncorrectable 2 since the driver loaded\n"},
		{"fec, corrected only", func(tw *textWriter) {
			writeFEC(tw, &inventory.FEC{Active: ptrS("RS"), Configured: []string{"RS"}, CorrectedBlocks: ptrU(4)})
		}, "  fec        active RS, configured RS; blocks corrected 4 since the driver loaded\n"},
		{"fec, no counters", func(tw *textWriter) {
			writeFEC(tw, &inventory.FEC{Active: ptrS("off"), Configured: []string{"off"}})
		}, "  fec        active off, configured off\n"},
		{"module unreadable", func(tw *textWriter) {
			msg := "EIO"
			writeModule(tw, &inventory.Transceiver{Error: &msg})
		}, "  module     unreadable: EIO\n"},
		{"module, no env, no monitors", func(tw *textWriter) {
			writeModule(tw, &inventory.Transceiver{Readable: true, Module: &sff.Module{Identifier: "SFP", State: "ready"}})
		}, "  module     SFP: the module\n             no optical monitors (passive cable, or not implemented)\n"},
		{"module, state, temperature without thresholds", func(tw *textWriter) {
			writeModule(tw, &inventory.Transceiver{Readable: true, Module: &sff.Module{Identifier: "SFP", State: "lowpwr", TemperatureC: fp(30)}})
		}, "  module     SFP: the module\n             30.0 °C, state lowpwr\n             no optical monitors (passive cable, or not implemented)\n"},
		{"module below warning, alarm 0", func(tw *textWriter) {
			w, z, tw2, ta := 0.2, 0.0, 70.0, 75.0
			writeModule(tw, &inventory.Transceiver{Readable: true, Module: &sff.Module{Identifier: "SFP", TemperatureC: fp(69.9), Monitors: true,
				Thresholds: &sff.Thresholds{RXPowerLowWarnMW: &w, RXPowerLowAlarmMW: &z, TemperatureHighWarnC: &tw2, TemperatureHighAlarmC: &ta}}})
		}, "  module     SFP: the module\n             69.9 °C (warn 70, alarm 75)\n    lane  rx power              tx power              bias       flags\n    rx low warning -6.99 dBm\n"},
		{"counters, none", func(tw *textWriter) {
			writeCounters(tw, &nicstats.Counters{ByCause: map[nicstats.Cause]nicstats.Count{}})
		}, ""},
		{"queues, tx ring only, no channels", func(tw *textWriter) {
			writeQueues(tw, NICReport{NIC: inventory.NIC{Rings: &ethtool.Rings{TX: u32(512), TXMax: u32(4096)}, Channels: &ethtool.Channels{}}})
		}, "  rings      tx 512 of 4096 descriptors\n"},
		{"queues, none", func(tw *textWriter) {
			writeQueues(tw, NICReport{NIC: inventory.NIC{Rings: &ethtool.Rings{}}})
		}, ""},
	}
	for _, tt := range tests {
		if got := ethText(false, tt.f); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
	// Uncorrectable blocks are marked; a module at its warning too.
	got := ethText(true, tests[3].f)
	if !strings.Contains(got, st.Yellow("uncorrectable 2")) {
		t.Errorf("uncorrectable 2 not marked: %q", got)
	}
	if got := ethText(true, tests[9].f); strings.Contains(got, "\x1b[33m69.9") {
		t.Errorf("69.9 °C under a warning of 70 is marked: %q", got)
	}
}
