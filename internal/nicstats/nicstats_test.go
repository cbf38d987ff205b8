package nicstats

import (
	"os"
	"runtime"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/linerate/linerate/internal/ethtool"
)

func u64(v uint64) *uint64 { return &v }
func u32(v uint32) *uint32 { return &v }

func TestFromFacts(t *testing.T) {
	tests := []struct {
		name   string
		driver string
		facts  *ethtool.Facts
		want   map[Cause]uint64
		absent []Cause
	}{
		{
			name: "mlx5 with standard groups", driver: "mlx5_core",
			facts: &ethtool.Facts{
				Stats: &ethtool.Stats{
					Driver: map[string]uint64{"rx_out_of_buffer": 1200000, "rx_discards_phy": 7, "rx_crc_errors_phy": 5,
						"tx_pause_ctrl_phy": 40, "rx_pause_ctrl_phy": 0, "rx_packets": 1e9},
					EthMAC: map[string]uint64{"FrameCheckSequenceErrors": 5},
					Pause:  &ethtool.Pause{TXFrames: u64(40), RXFrames: u64(0)},
				},
				FEC: &ethtool.FEC{Stats: &ethtool.FECStats{UncorrectableBlocks: []uint64{3, 0, 3}, CorrectedBlocks: []uint64{900}}},
			},
			// The FCS errors and pause frames come from the standard groups
			// only: mlx5's own rx_crc_errors_phy counts the same frames.
			want: map[Cause]uint64{RXNoBuffer: 1200000, RXNICBuffer: 7, PHYErrors: 5, PauseTX: 40, PauseRX: 0,
				FECUncorrectable: 3, FECCorrected: 900},
			absent: []Cause{LinkDown},
		},
		{
			name: "i40e before the rename", driver: "i40e",
			facts: &ethtool.Facts{Stats: &ethtool.Stats{Driver: map[string]uint64{"port.rx_dropped": 12, "port.rx_crc_errors": 2,
				"port.illegal_bytes": 1, "port.link_xoff_tx": 9}}},
			want: map[Cause]uint64{RXNoBuffer: 12, PHYErrors: 3, PauseTX: 9},
		},
		{
			name: "i40e after the rename", driver: "i40e",
			facts: &ethtool.Facts{Stats: &ethtool.Stats{Driver: map[string]uint64{"port.rx_discards": 30, "rx_missed_errors": 4}}},
			want:  map[Cause]uint64{RXNoBuffer: 34},
		},
		{
			name: "cxgb4 buffer groups", driver: "cxgb4",
			facts: &ethtool.Facts{Stats: &ethtool.Stats{Driver: map[string]uint64{"rx_bg0_frames_dropped": 10, "rx_bg1_frames_dropped": 2,
				"rx_bg2_frames_trunc": 1, "rx_fcs_errors": 0, "tx_pause_frames": 6, "tx_frames_dropped": 99}}},
			want:   map[Cause]uint64{RXNICBuffer: 13, PHYErrors: 0, PauseTX: 6},
			absent: []Cause{RXNoBuffer},
		},
		{
			name: "unknown driver, generic names", driver: "ixgbe",
			facts: &ethtool.Facts{Stats: &ethtool.Stats{Driver: map[string]uint64{"rx_missed_errors": 8, "rx_crc_errors": 1}},
				LinkState: &ethtool.LinkState{DownEvents: u32(4)}},
			want: map[Cause]uint64{RXNoBuffer: 8, PHYErrors: 1, LinkDown: 4},
		},
	}
	for _, tt := range tests {
		c := FromFacts(tt.driver, tt.facts)
		for cause, want := range tt.want {
			if got, ok := c.Get(cause); !ok || got != want {
				t.Errorf("%s: %s = %d (present %v), want %d; sources %v", tt.name, cause, got, ok, want, c.ByCause[cause].Sources)
			}
		}
		for _, cause := range tt.absent {
			if _, ok := c.Get(cause); ok {
				t.Errorf("%s: %s present, want absent (no counter reports it)", tt.name, cause)
			}
		}
	}
	c := FromFacts("mlx5_core", tests[0].facts)
	if got := c.Describe(PHYErrors); got != "eth_mac.FrameCheckSequenceErrors 5" {
		t.Errorf("describe: %q", got)
	}
}

func TestDelta(t *testing.T) {
	before := Counters{ByCause: map[Cause]Count{
		RXNoBuffer: {Value: 100, Sources: map[string]uint64{"rx_out_of_buffer": 100}},
		PHYErrors:  {Value: 50, Sources: map[string]uint64{"rx_crc_errors_phy": 50}},
		PauseTX:    {Value: 1, Sources: map[string]uint64{"tx_pause_ctrl_phy": 1}},
	}}
	after := Counters{Driver: "mlx5_core", ByCause: map[Cause]Count{
		RXNoBuffer: {Value: 1200100, Sources: map[string]uint64{"rx_out_of_buffer": 1200100}},
		PHYErrors:  {Value: 3, Sources: map[string]uint64{"rx_crc_errors_phy": 3}}, // cleared in between
		PauseRX:    {Value: 9, Sources: map[string]uint64{"rx_pause_ctrl_phy": 9}},
	}}
	d := Delta(before, after)
	if v, _ := d.Get(RXNoBuffer); v != 1200000 {
		t.Errorf("rx_no_buffer delta %d", v)
	}
	if v, _ := d.Get(PHYErrors); v != 3 {
		t.Errorf("a counter that went backwards: delta %d, want its new value 3", v)
	}
	if _, ok := d.Get(PauseRX); ok {
		t.Error("a cause missing before has a delta")
	}
	if !d.Delta || d.Driver != "mlx5_core" {
		t.Errorf("%+v", d)
	}
}

// TestSnapshotVeth reads a real veth's counters in a private namespace.
func TestSnapshotVeth(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root (network namespaces); CI runs as root")
		}
		t.Skip("needs root (network namespaces)")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the namespace dies with the thread
		ns, err := netns.New()
		if err != nil {
			t.Error(err)
			return
		}
		defer ns.Close()
		la := netlink.NewLinkAttrs()
		la.Name = "lr-optics0"
		if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: "lr-optics1"}); err != nil {
			t.Error(err)
			return
		}
		c, err := Snapshot("lr-optics0")
		if err != nil || c.Driver != "veth" {
			t.Errorf("veth snapshot: %+v, %v", c, err)
		}
		if _, err := Snapshot("lr-nosuch0"); err == nil {
			t.Error("a missing interface gave counters")
		}
	}()
	<-done
}
