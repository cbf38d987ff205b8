package rdmastats

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/hosttree"
	"github.com/linerate/linerate/internal/inventory"
)

// TestRank: the port a run uses without a device named is an ACTIVE one
// on the interface the test reaches, then any ACTIVE one, then the rest.
func TestRank(t *testing.T) {
	tests := []struct {
		port   inventory.RDMAPort
		netdev string
		want   int
	}{
		{inventory.RDMAPort{State: "ACTIVE", Netdev: "enp1s0"}, "enp1s0", 2},
		{inventory.RDMAPort{State: "ACTIVE", Netdev: "enp2s0"}, "enp1s0", 1},
		{inventory.RDMAPort{State: "ACTIVE"}, "", 1},
		{inventory.RDMAPort{State: "ACTIVE", Netdev: ""}, "", 1},
		{inventory.RDMAPort{State: "DOWN", Netdev: "enp1s0"}, "enp1s0", 0},
	}
	for _, tt := range tests {
		if got := rank(tt.port, tt.netdev); got != tt.want {
			t.Errorf("rank(%+v, %q) = %d, want %d", tt.port, tt.netdev, got, tt.want)
		}
	}
}

// TestGrowth: each counter read both times grows by its difference; one
// that went down (a driver reload) by its value after; one read once is
// left out.
func TestGrowth(t *testing.T) {
	got := Growth(map[string]uint64{"a": 5, "b": 90, "gone": 1}, map[string]uint64{"a": 12, "b": 7, "new": 3})
	if len(got) != 2 || got["a"] != 7 || got["b"] != 7 {
		t.Errorf("Growth = %v, want a 7, b 7", got)
	}
	if Growth(nil, map[string]uint64{"a": 1}) != nil {
		t.Error("growth from nothing read is not nil")
	}
}

// TestSpan: on the healthy RoCE host's tree, a span reads the port the
// run uses and gives the growth of the counters the run changed; a device
// that is not there is named in not_read.
func TestSpan(t *testing.T) {
	root := t.TempDir()
	if err := hosttree.RoCEHealthy().Write(root); err != nil {
		t.Fatal(err)
	}
	fs, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	hw := filepath.Join(root, "sys/class/infiniband/rocep51s0/ports/1/hw_counters")
	before, err := os.ReadFile(filepath.Join(hw, "np_cnp_sent"))
	if err != nil {
		t.Fatal(err)
	}
	s := Begin(fs, "", "enp51s0np0")
	if err := os.WriteFile(filepath.Join(hw, "np_cnp_sent"), []byte(strings.TrimSpace(string(before))+"0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := s.End()
	if e.NotRead != "" || e.Device != "rocep51s0" || e.Port != 1 || e.Netdev != "enp51s0np0" {
		t.Fatalf("end %+v", *e)
	}
	// Appending a 0 multiplies by ten: the growth is nine times the value before.
	var v uint64
	for _, c := range strings.TrimSpace(string(before)) {
		v = v*10 + uint64(c-'0')
	}
	if v == 0 || e.HWCounters["np_cnp_sent"] != 9*v || e.HWCounters["out_of_sequence"] != 0 || e.Priority == nil {
		t.Errorf("np_cnp_sent grew %d, want %d; out_of_sequence %d; priorities %v", e.HWCounters["np_cnp_sent"], 9*v, e.HWCounters["out_of_sequence"], e.Priority)
	}
	if e := Begin(fs, "mlx5_9", "").End(); !strings.Contains(e.NotRead, "no RDMA device mlx5_9 under") || e.HWCounters != nil {
		t.Errorf("a device not there: %+v", *e)
	}
}
