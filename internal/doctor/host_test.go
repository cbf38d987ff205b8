package doctor

import (
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/inventory"
)

// twoNICs returns the healthy host with a second 100 Gbit/s card.
func twoNICs() *inventory.Inventory {
	inv := healthy()
	second := inv.NICs[0]
	second.Interface, second.PCI, second.CardPorts = "enp2s0f0np0", "0000:02:00.0", []string{"enp2s0f0np0"}
	second.PCIe = nil
	second.IRQs, second.RDMA = nil, nil
	inv.NICs = append(inv.NICs, second)
	return inv
}

// TestSocketBuffersEdges: a limit exactly at its need is enough, one
// byte less is not; the line rate named is the first of equally fast
// NICs; the RTT is in milliseconds.
func TestSocketBuffersEdges(t *testing.T) {
	inv := twoNICs()
	inv.Sysctl["net.ipv4.tcp_rmem"] = []int64{4096, 87380, 4096}
	rep := run(t, inv, Options{RTT: 500 * time.Microsecond})
	f := find(rep, "sysctl.socket_buffers_small")
	if len(f) != 1 || f[0].Evidence["line_rate"] != "enp1s0f0np0 at 100 Gbit/s" || f[0].Evidence["rtt_ms"] != 0.5 {
		t.Fatalf("%+v", f)
	}
	if rep.Options.RTTMs != 0.5 {
		t.Errorf("report RTT %v ms; want 0.5", rep.Options.RTTMs)
	}
	need := f[0].Evidence["needed_bytes"].(map[string]any)["net.ipv4.tcp_rmem"].(int64)
	inv.Sysctl["net.ipv4.tcp_rmem"] = []int64{4096, 87380, need}
	if f := find(run(t, inv, Options{RTT: 500 * time.Microsecond}), "sysctl.socket_buffers_small"); len(f) != 0 {
		t.Errorf("tcp_rmem exactly at its need %d: %s", need, f[0].Summary)
	}
	inv.Sysctl["net.ipv4.tcp_rmem"] = []int64{4096, 87380, need - 1}
	if f := find(run(t, inv, Options{RTT: 500 * time.Microsecond}), "sysctl.socket_buffers_small"); len(f) != 1 {
		t.Errorf("tcp_rmem one byte under its need: %+v", f)
	}
}

// TestFlowCapsZero: a buffer maximum of 0 caps the flow at 0.0 Gbit/s,
// whichever key comes first; no key at all is "?"; a cap at or above the
// line rate is "can fill it".
func TestFlowCapsZero(t *testing.T) {
	for _, key := range []string{"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"} {
		inv := healthy()
		inv.Sysctl[key] = []int64{0, 0, 0}
		autoG, _ := (&diag{inv: inv, opts: Options{RTT: DefaultRTT}}).flowCaps(BufferModel(inv))
		if auto := capText(autoG, 10); auto != "tops out near 0.0 Gbit/s" {
			t.Errorf("%s max 0: autotuned cap %q; want 0.0", key, auto)
		}
	}
	inv := healthy()
	inv.Sysctl = map[string]any{}
	if a, e := (&diag{inv: inv, opts: Options{RTT: DefaultRTT}}).flowCaps(BufferModel(inv)); capText(a, 10) != "tops out near ? Gbit/s" || capText(e, 10) != "tops out near ? Gbit/s" {
		auto, explicit := capText(a, 10), capText(e, 10)
		t.Errorf("no sysctls: %q, %q", auto, explicit)
	}
	// 64 MiB at 1 ms is 268 Gbit/s of window: more than a 100 Gbit/s line
	// carries, not a figure the flow reaches.
	inv.Sysctl["net.ipv4.tcp_rmem"] = []int64{4096, 131072, 64 << 20}
	inv.Sysctl["net.ipv4.tcp_wmem"] = []int64{4096, 16384, 64 << 20}
	d := &diag{inv: inv, opts: Options{RTT: DefaultRTT}}
	a, _ := d.flowCaps(BufferModel(inv))
	if auto := capText(a, 100); auto != "can fill it" {
		t.Errorf("64 MiB against 100 Gbit/s: %q", auto)
	}
	if auto := capText(a, 400); auto != "tops out near 268.4 Gbit/s" {
		t.Errorf("64 MiB against 400 Gbit/s: %q", auto)
	}
}

// TestIRQBalanceNoIRQs: with no NIC IRQs known there is nothing to ban.
func TestIRQBalanceNoIRQs(t *testing.T) {
	inv := healthy()
	inv.NICs[0].IRQs = nil
	inv.Host.IRQBalance.Running, inv.Host.IRQBalance.PIDs = true, []int{812}
	f := find(run(t, inv, Options{}), "irqbalance.running")
	if len(f) != 1 || Quote(f[0].Fix[0].Command) != "systemctl restart irqbalance" {
		t.Errorf("%+v", f)
	}
}

// TestSocketBuffersNoLineRate: without a known line rate the finding
// reads as a sentence ("to fill 10 Gbit/s × 1ms RTT (no line rate is
// known here, so 10 Gbit/s is assumed; …") and its evidence carries the flows' caps as numbers
// (what the report rescales to a bench's measured RTT).
func TestSocketBuffersNoLineRate(t *testing.T) {
	inv := healthy()
	inv.NICs[0].SpeedMbps = nil
	inv.NICs[0].RDMA = nil
	inv.Sysctl["net.ipv4.tcp_rmem"] = []int64{4096, 131072, 65536}
	f := find(run(t, inv, Options{RTT: DefaultRTT}), "sysctl.socket_buffers_small")
	if len(f) != 1 {
		t.Fatalf("findings: %+v", f)
	}
	if want := "to fill 10 Gbit/s × 1ms RTT (no line rate is known here, so 10 Gbit/s is assumed; BDP"; !strings.Contains(f[0].Summary, want) {
		t.Errorf("summary %q lacks %q", f[0].Summary, want)
	}
	auto, ok := f[0].Evidence["autotuned_flow_gbps"].(float64)
	if !ok || auto <= 0 || !strings.Contains(f[0].Summary, capText(auto, 10)) {
		t.Errorf("autotuned cap %v (%v) against %q", auto, ok, f[0].Summary)
	}
}
