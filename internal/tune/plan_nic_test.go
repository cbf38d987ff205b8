package tune

import (
	"slices"
	"testing"

	"github.com/linerate/linerate/internal/ethtool"

	"github.com/linerate/linerate/internal/inventory"
)

// TestSortedIRQs: IRQs by number, the caller's slice untouched.
func TestSortedIRQs(t *testing.T) {
	in := []inventory.IRQ{{IRQ: 99}, {IRQ: 7}, {IRQ: 42}, {IRQ: 8}}
	got := sortedIRQs(in)
	var nums []int
	for _, q := range got {
		nums = append(nums, q.IRQ)
	}
	if !slices.Equal(nums, []int{7, 8, 42, 99}) {
		t.Errorf("sorted %v, want 7 8 42 99", nums)
	}
	if in[0].IRQ != 99 {
		t.Errorf("the input was sorted in place: %v", in)
	}
}

// TestPlanChannelsFromTreeFacts: below a captured tree, a queues.too_few
// change takes the NIC's channels from the tree's ethtool facts: combined
// where the driver has them, RX and TX apart where it has only those,
// capped at the maximum; a driver offering neither leaves the queues with
// a note; without facts the sysfs count stands in and the note says the
// live plan caps it.
func TestPlanChannelsFromTreeFacts(t *testing.T) {
	for _, tc := range []struct {
		name          string
		ch            *ethtool.Channels
		before, after string
		note          string
	}{
		{"combined", &ethtool.Channels{Combined: u(1), CombinedMax: u(63)}, "combined 1", "combined 8", ""},
		{"combined capped", &ethtool.Channels{Combined: u(1), CombinedMax: u(4)}, "combined 1", "combined 4", ""},
		{"rx and tx", &ethtool.Channels{RX: u(1), TX: u(1), RXMax: u(4), TXMax: u(4)}, "rx 1 tx 1", "rx 4 tx 4", ""},
		{"rx only", &ethtool.Channels{RX: u(1), RXMax: u(4)}, "", "", "already has the most queues"},
		{"no facts", nil, "combined 1", "combined 8", "the live plan caps 8 at it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, inv := open(t, hostTree("cx4lx-sfp28-a2h"))
			n := &inv.NICs[0]
			n.Queues.RX, n.Queues.TX, n.Channels = 1, 1, tc.ch
			p, err := NewPlan(Input{FS: fs, Inventory: inv}, Options{Ifaces: []string{n.Interface}})
			if err != nil {
				t.Fatal(err)
			}
			c := changesOf(p, KindChannels)
			if tc.after == "" {
				if len(c) != 0 {
					t.Errorf("changes %+v; want none", c)
				}
			} else if len(c) != 1 || c[0].Before != tc.before || c[0].After != tc.after || c[0].Finding != "queues.too_few" || !c[0].LiveOnly {
				t.Errorf("changes %+v; want %s → %s", c, tc.before, tc.after)
			}
			if tc.note != "" && !hasNote(p, "queues.too_few", tc.note) {
				t.Errorf("no note %q: %+v", tc.note, p.Notes)
			}
		})
	}
	// Live, a driver that cannot say its channels leaves them alone.
	dev := newFakeDevices()
	fs, inv := open(t, hostTree("cx4lx-sfp28-a2h"))
	inv.NICs[0].Queues.RX = 1
	p, err := NewPlan(Input{FS: fs, Inventory: inv, Devices: dev}, Options{Ifaces: []string{inv.NICs[0].Interface}})
	if err != nil {
		t.Fatal(err)
	}
	if len(changesOf(p, KindChannels)) != 0 || !hasNote(p, "queues.too_few", "queues left alone") {
		t.Errorf("channels unreadable: %+v %+v", changesOf(p, KindChannels), p.Notes)
	}
}

func u(v uint32) *uint32 { return &v }
