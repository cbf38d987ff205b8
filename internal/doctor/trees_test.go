package doctor

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/inventory"
)

// hostsDir is the repository's testdata/hosts, or $LINERATE_TESTDATA/hosts
// when the tests run in a copy of the module without the trees' symbolic
// links.
func hostsDir() string {
	if d := os.Getenv("LINERATE_TESTDATA"); d != "" {
		return filepath.Join(d, "hosts")
	}
	return filepath.Join("..", "..", "testdata", "hosts")
}

func diagnoseTree(t *testing.T, name string, opts Options) *Report {
	t.Helper()
	fs, err := hostfs.New(filepath.Join(hostsDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	inv, err := inventory.Collect(fs, inventory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Diagnose(inv, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestTrees checks each captured host against what its owner found by hand:
// the findings that must be raised (with severity) and those that must
// not, and the ceiling doctor computes.
func TestTrees(t *testing.T) {
	tests := []struct {
		host       string
		opts       Options
		must       map[string]Severity // id → severity (of the first such finding)
		mustNot    []string
		nic        string
		pcie       string // effective Gbit/s
		goodput    string
		bottleneck string
	}{
		{
			host: "ryzen-9900x-cx5-x4", // the 100 GbE home lab whose ConnectX-5 trained at x4
			must: map[string]Severity{
				"pcie.link_downgraded": Critical, "pcie.bandwidth_below_line_rate": Critical,
				"link.down": Warning, "nic.temperature_high": Warning,
				"sysctl.socket_buffers_small": Warning, "cpu.governor_not_performance": Warning,
				"irq.spans_l3_domains": Warning, "irqbalance.running": Info,
			},
			// The second port's RoCE port is down with its netdev: link.down
			// says so, rather than a second warning.
			mustNot: []string{"mtu.not_jumbo", "queues.too_few", "irq.remote_numa", "irq.on_app_cpu", "rdma.port_not_active"},
			// 31.51 raw × 8948/10040 bus bytes a segment at MTU 9000.
			nic: "enp1s0f0np0", pcie: "28.60", goodput: "28.08", bottleneck: "pcie",
		},
		{
			host: "ryzen-9900x-cx5-x4", opts: Options{AppCPUs: []int{7}},
			must: map[string]Severity{"irq.on_app_cpu": Warning},
			nic:  "enp1s0f0np0", pcie: "28.60", goodput: "28.08", bottleneck: "pcie",
		},
		{
			host: "ryzen-7950x-cx5-x8-roce", // the ConnectX-5 RoCE baseline report
			must: map[string]Severity{
				"pcie.link_downgraded": Critical, "pcie.bandwidth_below_line_rate": Critical,
				"mtu.not_jumbo": Warning, "cpu.governor_not_performance": Warning, "sysctl.socket_buffers_small": Warning,
			},
			mustNot: []string{"link.down", "rdma.port_not_active", "nic.temperature_high", "queues.too_few", "irqbalance.running"},
			// 63.02 raw × 1448/1760 at MTU 1500.
			nic: "enp3s0np0", pcie: "57.21", goodput: "51.84", bottleneck: "pcie",
		},
		{
			host: "xeon-xl710-gen2-x4", // the XL710 40 GbE host in a Gen2 x4 slot
			must: map[string]Severity{
				"pcie.link_downgraded": Critical, "pcie.bandwidth_below_line_rate": Critical,
				"mtu.not_jumbo": Warning, "queues.too_few": Warning, "irq.remote_numa": Warning,
				"cpu.governor_not_performance": Warning, "sysctl.socket_buffers_small": Warning,
			},
			mustNot: []string{"irqbalance.running", "nic.temperature_high", "link.down", "irq.spans_l3_domains"},
			// 16.00 raw × 1448/1760 at MTU 1500; the author measured ~11.
			nic: "ens2f0np0", pcie: "14.52", goodput: "13.16", bottleneck: "pcie",
		},
		{
			host: "xeon-6530-t6-healthy", opts: Options{Ifaces: []string{"ens5f4"}}, // the Chelsio T6 host's hardware, tuned
			must:    map[string]Severity{},
			mustNot: []string{"pcie.link_downgraded", "pcie.bandwidth_below_line_rate", "link.down", "mtu.not_jumbo", "sysctl.socket_buffers_small"},
			nic:     "ens5f4", pcie: "114.41", goodput: "99.00", bottleneck: "line_rate",
		},
		{
			host:    "xeon-6530-t6-healthy", // the uncabled second port is the only finding
			must:    map[string]Severity{"link.down": Warning},
			mustNot: []string{"pcie.link_downgraded", "pcie.bandwidth_below_line_rate"},
			nic:     "ens5f4", pcie: "114.41", goodput: "99.00", bottleneck: "line_rate",
		},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			rep := diagnoseTree(t, tt.host, tt.opts)
			got := map[string]Severity{}
			for _, f := range rep.Findings {
				if _, ok := got[f.ID]; !ok {
					got[f.ID] = f.Severity
				}
			}
			for id, sev := range tt.must {
				if got[id] != sev {
					t.Errorf("%s: got %q, want %s", id, got[id], sev)
				}
			}
			for _, id := range tt.mustNot {
				if _, ok := got[id]; ok {
					t.Errorf("%s raised, must not be", id)
				}
			}
			if tt.host == "xeon-6530-t6-healthy" && len(tt.must) == 0 && len(rep.Findings) > 0 {
				t.Errorf("healthy port has findings: %+v", rep.Findings)
			}
			i := slices.IndexFunc(rep.NICs, func(n NICReport) bool { return n.Interface == tt.nic })
			if i < 0 {
				t.Fatalf("no NIC %s", tt.nic)
			}
			l := rep.NICs[i].Limits
			if l.PCIe == nil || l.PCIe.String() != tt.pcie || l.TCPGoodput == nil || l.TCPGoodput.String() != tt.goodput || string(l.Bottleneck) != tt.bottleneck {
				t.Errorf("limits = pcie %v goodput %v bottleneck %s, want %s %s %s", l.PCIe, l.TCPGoodput, l.Bottleneck, tt.pcie, tt.goodput, tt.bottleneck)
			}
		})
	}
}

// TestRyzenX4Placement: with the application on CPU 6, doctor proposes the
// owner's own fix — IRQs on 7-11, same CCD, off the application.
func TestRyzenX4Placement(t *testing.T) {
	rep := diagnoseTree(t, "ryzen-9900x-cx5-x4", Options{AppCPUs: []int{6}})
	for _, f := range rep.Findings {
		if f.ID == "irq.spans_l3_domains" && f.Subject == "enp1s0f0np0" {
			if !hasFix(f, "echo 7-11 > /proc/irq/$irq/smp_affinity_list") {
				t.Errorf("fix does not pin to 7-11: %q", f.FixLines())
			}
			return
		}
	}
	t.Fatal("no irq.spans_l3_domains finding for enp1s0f0np0")
}
