package hostfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rdmaTree writes one RDMA port as drivers/infiniband/core/sysfs.c lays
// it out: files directly below ports/1 (a tree's links are tested
// elsewhere; the values are what matter here).
func rdmaTree(t *testing.T, files map[string]string) *FS {
	t.Helper()
	root := t.TempDir()
	for rel, data := range files {
		p := filepath.Join(root, "sys/class/infiniband/mlx5_0/ports/1", rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	return fs
}

func TestReadRDMAPort(t *testing.T) {
	fs := rdmaTree(t, map[string]string{
		"state": "4: ACTIVE\n", "phys_state": "5: LinkUp\n", "rate": "200 Gb/sec (2X HDR)\n", "link_layer": "Ethernet\n",
		"gids/0": "fe80:0000:0000:0000:0e42:a1ff:fea8:2c2a\n", "gid_attrs/types/0": "IB/RoCE v1\n", "gid_attrs/ndevs/0": "eth2\n",
		"gids/1": "fe80:0000:0000:0000:0e42:a1ff:fea8:2c2a\n", "gid_attrs/types/1": "RoCE v2\n", "gid_attrs/ndevs/1": "eth2\n",
		"gids/2": "0000:0000:0000:0000:0000:ffff:c612:0001\n", "gid_attrs/types/2": "RoCE v2\n", "gid_attrs/ndevs/2": "eth2\n",
		// An unused entry: zeros, and the kernel's EINVAL for its
		// attributes shows as no files.
		"gids/3":                    "0000:0000:0000:0000:0000:0000:0000:0000\n",
		"hw_counters/np_cnp_sent":   "17\n",
		"hw_counters/out_of_buffer": "18446744073709551615\n",
		"hw_counters/lifespan":      "10\n",
		"counters/port_xmit_data":   "123456\n",
		"counters/symbol_error":     "N/A (no PMA)\n",
	})
	p, err := fs.ReadRDMAPort("mlx5_0", 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.State != "ACTIVE" || p.StateID != 4 || p.PhysState != "LinkUp" || p.RateGbps != 200 || p.LinkLayer != "Ethernet" {
		t.Errorf("port %+v", p)
	}
	if len(p.GIDs) != 3 || p.GIDs[2].Address.String() != "198.18.0.1" || !p.GIDs[2].RoCEv2() || p.GIDs[0].RoCEv2() ||
		p.GIDs[1].Netdev != "eth2" || p.GIDs[0].Address.String() != "fe80::e42:a1ff:fea8:2c2a" {
		t.Errorf("GIDs %+v", p.GIDs)
	}
	if p.HWCounters["np_cnp_sent"] != 17 || p.HWCounters["out_of_buffer"] != 1<<64-1 || p.Counters["port_xmit_data"] != 123456 {
		t.Errorf("counters %v %v", p.Counters, p.HWCounters)
	}
	if _, ok := p.Counters["symbol_error"]; ok || len(p.Unread) != 1 || !strings.Contains(p.Unread[0], `counters/symbol_error: "N/A (no PMA)" is not a count`) {
		t.Errorf("unread %q", p.Unread)
	}
	set, err := fs.RDMACounters("mlx5_0", 1)
	if err != nil || set.HWCounters["np_cnp_sent"] != 17 || set.Counters["port_xmit_data"] != 123456 {
		t.Errorf("RDMACounters %+v %v", set, err)
	}
}

func TestReadRDMAPortDamaged(t *testing.T) {
	if _, err := rdmaTree(t, map[string]string{"rate": "1 Gb/sec\n"}).ReadRDMAPort("mlx5_0", 1); err == nil {
		t.Error("a port without state was read")
	}
	if _, err := rdmaTree(t, map[string]string{"state": "ACTIVE\n"}).ReadRDMAPort("mlx5_0", 1); err == nil {
		t.Error("a state without its number was read")
	}
	// No counters at all (a soft-RoCE device has no hw_counters): nil
	// maps, nothing unread.
	p, err := rdmaTree(t, map[string]string{"state": "1: DOWN\n", "rate": "fast\n", "gids/0": "x\n"}).ReadRDMAPort("mlx5_0", 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.Counters != nil || p.HWCounters != nil || p.RateGbps != 0 || len(p.GIDs) != 0 {
		t.Errorf("port %+v", p)
	}
	if got := strings.Join(p.Unread, "\n"); !strings.Contains(got, `rate: "fast"`) || !strings.Contains(got, `gids/0: "x" is not a GID`) {
		t.Errorf("unread %q", got)
	}
}

func TestParseIBRate(t *testing.T) {
	for s, want := range map[string]float64{"100 Gb/sec (4X EDR)": 100, "2.5 Gb/sec (1X SDR)": 2.5, "25 Gb/sec (1X EDR)": 25, "400 Gb/sec (4X NDR)": 400, "10 Gb/sec (4X)": 10} {
		if got, err := ParseIBRate(s); err != nil || got != want {
			t.Errorf("ParseIBRate(%q) = %v %v", s, got, err)
		}
	}
	for _, s := range []string{"", "100", "100 Mb/sec", "-1 Gb/sec", "NaN Gb/sec", "1e9 Gb/sec"} {
		if _, err := ParseIBRate(s); err == nil {
			t.Errorf("ParseIBRate(%q) accepted", s)
		}
	}
}

// FuzzRDMAValues: the values of an RDMA port's files come from a snapshot
// and are untrusted.
func FuzzRDMAValues(f *testing.F) {
	for _, s := range []string{"4: ACTIVE", "100 Gb/sec (4X EDR)", "fe80:0000:0000:0000:0e42:a1ff:fea8:2c2a", "0000:0000:0000:0000:0000:ffff:c612:0001", "::", "1:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, name, err := parseIBState(s); err == nil && name == "" {
			t.Errorf("state %q gave an empty name", s)
		}
		if v, err := ParseIBRate(s); err == nil && (v < 0 || v > 1e5) {
			t.Errorf("rate %q gave %v", s, v)
		}
		if a, err := ParseGID(s); err == nil && a.IsValid() && a.Zone() != "" {
			t.Errorf("GID %q gave a zone", s)
		}
	})
}
