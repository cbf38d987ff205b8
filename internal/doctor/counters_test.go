package doctor

import (
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/nicstats"
	"github.com/linerate/linerate/internal/sff"
)

func u32(v uint32) *uint32 { return &v }

// counts builds counters of the given causes.
func counts(delta bool, kv map[nicstats.Cause]uint64) nicstats.Counters {
	c := nicstats.Counters{Delta: delta, ByCause: map[nicstats.Cause]nicstats.Count{}}
	for k, v := range kv {
		c.ByCause[k] = nicstats.Count{Value: v, Sources: map[string]uint64{string(k): v}}
	}
	return c
}

func fixActions(f Finding) string {
	var s []string
	for _, x := range f.Fix {
		s = append(s, x.Action)
	}
	return strings.Join(s, "\n")
}

// TestRXNoBufferEdges: a bench delta of zero is no finding whatever the
// totals; the ring fix only where the ring is below its maximum; the
// queue fix only where the channels are below theirs.
func TestRXNoBufferEdges(t *testing.T) {
	inv := healthy()
	n := &inv.NICs[0]
	tot := counts(false, map[nicstats.Cause]uint64{nicstats.RXNoBuffer: 500})
	n.Counters = &tot
	zero := counts(true, map[nicstats.Cause]uint64{nicstats.RXNoBuffer: 0})
	if f := find(run(t, inv, Options{CounterDeltas: map[string]nicstats.Counters{"enp1s0f0np0": zero}}), "nic.rx_no_buffer"); len(f) != 0 {
		t.Errorf("no growth during the bench: %+v", f)
	}
	n.Rings = &ethtool.Rings{RX: u32(4096), RXMax: u32(4096)}
	n.Channels = &ethtool.Channels{Combined: u32(63), CombinedMax: u32(63)}
	f := find(run(t, inv, Options{}), "nic.rx_no_buffer")
	if len(f) != 1 || strings.Contains(fixActions(f[0]), "Raise the RX ring") || strings.Contains(fixActions(f[0]), "Spread the load") {
		t.Errorf("ring and channels at their maxima: %+v", f)
	}
	n.Rings.RX, n.Channels.Combined = u32(4095), u32(8)
	f = find(run(t, inv, Options{}), "nic.rx_no_buffer")
	if len(f) != 1 || len(f[0].Fix) != 4 || Quote(f[0].Fix[0].Command) != "ethtool -G enp1s0f0np0 rx 4096" ||
		f[0].Fix[1].Action != "Spread the load over more queues (now 8)" || Quote(f[0].Fix[1].Command) != "ethtool -L enp1s0f0np0 combined 16" {
		t.Errorf("ring and channels below their maxima: %+v", f)
	}
}

// TestPHYErrorsModuleFix: with a readable module the fix names it.
func TestPHYErrorsModuleFix(t *testing.T) {
	inv := healthy()
	tot := counts(false, map[nicstats.Cause]uint64{nicstats.PHYErrors: 7})
	inv.NICs[0].Counters = &tot
	inv.NICs[0].Transceiver = &inventory.Transceiver{Readable: true, Module: &sff.Module{Identifier: "QSFP28", VendorName: "ACME", VendorPN: "Q100"}}
	f := find(run(t, inv, Options{}), "nic.phy_errors")
	if len(f) != 1 || !strings.Contains(f[0].Fix[1].Action, "clean its connector or replace ACME Q100") {
		t.Errorf("%+v", f)
	}
}

// TestPauseNoneSent: pause only received during a bench is information.
func TestPauseNoneSent(t *testing.T) {
	d := counts(true, map[nicstats.Cause]uint64{nicstats.PauseTX: 0, nicstats.PauseRX: 5})
	f := find(run(t, healthy(), Options{CounterDeltas: map[string]nicstats.Counters{"enp1s0f0np0": d}}), "nic.pause_frames")
	if len(f) != 1 || f[0].Severity != Info || !strings.HasPrefix(f[0].Summary, "enp1s0f0np0 sent 0 and received 5 pause frames during the bench") {
		t.Errorf("%+v", f)
	}
}

// TestRingSmallEdges: ring.small from 25 Gbit/s (not below), under 1024
// descriptors, and never for a ring at its maximum.
func TestRingSmallEdges(t *testing.T) {
	tests := []struct {
		speed   int
		rx, max uint32
		want    bool
	}{
		{25000, 512, 4096, true},
		{25000, 1023, 4096, true},
		{25000, 1024, 4096, false},
		{10000, 512, 4096, false},
		{100000, 512, 512, false},
	}
	for _, tt := range tests {
		inv := healthy()
		inv.NICs[0].SpeedMbps = ip(tt.speed)
		inv.NICs[0].Rings = &ethtool.Rings{RX: u32(tt.rx), RXMax: u32(tt.max)}
		f := find(run(t, inv, Options{}), "ring.small")
		if got := len(f) == 1; got != tt.want {
			t.Errorf("%d Mbit/s, ring %d of %d: %+v; want a finding: %v", tt.speed, tt.rx, tt.max, f, tt.want)
		}
	}
}
