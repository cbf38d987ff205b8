package report

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/hosttree"
)

// roceTreeDataset is a data set of RoCE hosts from the test trees: one
// with PFC and ECN off, one whose GPU sits behind ACS redirect, one
// healthy; no perftest run.
func roceTreeDataset(t testing.TB) Dataset {
	var hosts []doctor.Report
	for _, tr := range hosttree.Trees() {
		if tr.Name == "roce-pfc-off" || tr.Name == "gpu-acs-redirect" || tr.Name == "roce-healthy" {
			hosts = append(hosts, diagnose(t, tr.Host))
		}
	}
	return Dataset{Title: "RoCE hosts", Synthetic: "test trees", Hosts: hosts}
}

// rowsOf returns a table's rows by its ID.
func rowsOf(t *testing.T, m *Model, id string) [][]string {
	t.Helper()
	for _, s := range m.sections {
		for _, b := range s.Blocks {
			if b.Table != nil && b.Table.ID == id {
				return b.Table.Rows
			}
		}
	}
	t.Fatalf("no table %s", id)
	return nil
}

// TestRDMASection: the RoCE checks say what each host holds, name the
// finding of each failed check, and a healthy host passes them all.
func TestRDMASection(t *testing.T) {
	m, err := Build(roceTreeDataset(t))
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]string{} // host check → state finding
	for _, r := range rowsOf(t, m, "rdma-roce-checks") {
		checks[r[0]+" "+r[2]] = r[3] + " " + r[4]
	}
	for key, want := range map[string]string{
		"gpu-a02 PFC on RoCE's priority":               "off on priority 3 roce.pfc_off",
		"gpu-a02 ECN on RoCE's priority":               "off roce.ecn_off",
		"gpu-a02 Trust sends RoCE to the PFC priority": "dscp: RoCE lands on 3 —",
		"gpu-a01 PFC on RoCE's priority":               "on priority 3 —",
		"gpu-a01 Active MTU 4096":                      "4096 —",
		"gpu-a01 IOMMU passthrough":                    "identity —",
		"gpu-a01 RDMA error counters":                  "none —",
		"gpu-a01 GPU 0000:34:00.0 near an RDMA NIC":    "PIX —",
		"gpu-a09 GPU 0000:34:00.0 near an RDMA NIC":    "PIX, ACS redirect at 0000:32:04.0, ACS redirect at 0000:32:00.0 pcie.acs_redirect",
	} {
		if got := checks[key]; got != want {
			t.Errorf("%s: %q, want %q", key, got, want)
		}
	}
	hw := rowsOf(t, m, "rdma-hardware")
	if len(hw) != 3 || !slices.Equal(hw[0][1:], []string{"rocep51s0/1", "ConnectX-6 Dx MT4125", "22.39.1002", "ACTIVE/LinkUp", "100.00", "Ethernet", "enp51s0np0", "4096", "2"}) {
		t.Errorf("hardware %q", hw)
	}

	// The ConnectX-5 baseline: PCIe-bound, under the vendor's 90% bar.
	m, err = Build(loadFixture(t, "seed002"))
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, s := range m.sections {
		if s.ID == "rdma" {
			for _, b := range s.Blocks {
				text = append(text, b.Text)
				for _, it := range b.Items {
					text = append(text, it.Text)
				}
			}
		}
	}
	joined := strings.Join(text, "\n")
	for _, want := range []string{"Limiting factor: PCIe, not the network", "the link of mark1nvidia enp3s0np0 (8.0 GT/s x8, 128b/130b, MPS 256) carries at most 57.21 Gbit/s, 57.2% of the 100.00 Gbit/s line rate; RDMA reached 97.8% of it",
		"trained PCIe 3.0 x8", "by the slot (0000:00:01.2 is x8 electrical)", "MRRS 512 bytes"} {
		if !strings.Contains(joined, want) {
			t.Errorf("RDMA section lacks %q:\n%s", want, joined)
		}
	}
	if sum := rowsOf(t, m, "rdma-summary"); sum[4][3-1] != "below" {
		t.Errorf("vendor bar row %q", sum[4])
	}
}

// TestRDMAChromiumRender renders the ConnectX-5 baseline and the RoCE
// hosts in headless Chromium and fails on any console message; with
// REPORT_PNG_DIR set it leaves the screenshots there to look at.
func TestRDMAChromiumRender(t *testing.T) {
	if testing.Short() {
		// CI: runs the suite without -short, so this runs there.
		t.Skip("starts a browser")
	}
	bin := chromium(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := startChromium(ctx, bin, filepath.Join(dir, "profile"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	for name, ds := range map[string]Dataset{"rdma-seed002": loadFixture(t, "seed002"), "rdma-roce-hosts": roceTreeDataset(t)} {
		page := filepath.Join(dir, name+".html")
		writeReport(t, ds, page)
		s, err := c.shoot(ctx, "file://"+page+"#rdma", 1280, 0, false, false)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, p := range s.Problems {
			t.Errorf("%s: %s", name, p)
		}
		if len(s.PNG) < 10000 {
			t.Errorf("%s: screenshot of %d bytes: the page did not render", name, len(s.PNG))
		}
		if out := os.Getenv("REPORT_PNG_DIR"); out != "" {
			if err := os.WriteFile(filepath.Join(out, name+".png"), s.PNG, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
