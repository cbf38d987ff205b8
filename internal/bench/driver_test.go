package bench

import (
	"slices"
	"testing"
)

// TestDriverRegistry: every driver registered itself once, native first
// and in the CLI's order; each tool's New makes the driver of its name;
// what each may run agrees with what it refuses.
func TestDriverRegistry(t *testing.T) {
	if got, want := DriverNames(), []string{"native", "iperf3", "iperf2", "perftest", "sockperf", "netperf"}; !slices.Equal(got, want) {
		t.Fatalf("drivers %v, want %v", got, want)
	}
	for _, d := range Drivers() {
		got, ok := LookupDriver(d.Name)
		if !ok || got.Name != d.Name {
			t.Errorf("%s: not found by name", d.Name)
		}
		if d.Name == "native" {
			if d.New != nil || !d.Caps.NativeOptions || !d.Caps.UDPStream {
				t.Errorf("native: %+v", d)
			}
			continue
		}
		drv := d.New(&LabHosts{Name: "x"}, TargetConfig{})
		if drv.Name() != d.Name {
			t.Errorf("%s makes a driver named %s", d.Name, drv.Name())
		}
		if _, isTool := drv.(tool); !isTool {
			t.Errorf("%s does not go through the tools' lifecycle", d.Name)
		}
		if d.Caps.NativeOptions {
			t.Errorf("%s claims the native engine's options: %+v", d.Name, d.Caps)
		}
		if d.Caps.UDPStream != (d.Name == "iperf3") { // iperf3 -u; the other tools are not driven over UDP streams
			t.Errorf("%s: UDP stream %v", d.Name, d.Caps.UDPStream)
		}
		if d.Caps.LatencyOnly != (d.Name == "sockperf" || d.Name == "netperf") {
			t.Errorf("%s: latency only %v", d.Name, d.Caps.LatencyOnly)
		}
	}
	if _, ok := LookupDriver("nosuch"); ok {
		t.Error("a driver that was never registered")
	}
}
