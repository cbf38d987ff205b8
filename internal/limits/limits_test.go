package limits

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// round2 rounds to two decimals, the precision the worked numbers carry.
func round2(f float64) float64 { return math.Round(f*100) / 100 }

func TestPCIe(t *testing.T) {
	tests := []struct {
		name      string
		link      PCIeLink
		gen, enc  string
		raw, eff  float64
		detailHas string
	}{
		// The worked numbers of README's arithmetic section.
		{"gen1 x1", PCIeLink{GTs: 2.5, Width: 1}, "1.0", "8b/10b", 2.00, 1.82, "2.5 GT/s x1"},
		{"gen2 x4", PCIeLink{GTs: 5, Width: 4}, "2.0", "8b/10b", 16.00, 14.52, "5.0 GT/s x4, 8b/10b, MPS 256"},
		{"gen3 x4", PCIeLink{GTs: 8, Width: 4}, "3.0", "128b/130b", 31.51, 28.60, "8.0 GT/s x4, 128b/130b, MPS 256"},
		{"gen3 x8", PCIeLink{GTs: 8, Width: 8}, "3.0", "128b/130b", 63.02, 57.21, ""},
		{"gen3 x16", PCIeLink{GTs: 8, Width: 16}, "3.0", "128b/130b", 126.03, 114.41, ""},
		{"gen4 x16", PCIeLink{GTs: 16, Width: 16}, "4.0", "128b/130b", 252.06, 228.82, "16.0 GT/s x16"},
		{"gen5 x16", PCIeLink{GTs: 32, Width: 16}, "5.0", "128b/130b", 504.12, 457.64, ""},
		// FLIT: 64 × 16 × 242/256 raw; × 236/242 × 256/272 effective.
		{"gen6 x16", PCIeLink{GTs: 64, Width: 16}, "6.0", "FLIT 242/256", 968.00, 888.47, "64.0 GT/s x16, FLIT 242/256"},
		// MPS changes only the effective rate: 63.02 × 128/154, × 512/538.
		{"gen3 x8 mps128", PCIeLink{GTs: 8, Width: 8, MPS: 128}, "3.0", "128b/130b", 63.02, 52.38, "MPS 128"},
		{"gen3 x8 mps512", PCIeLink{GTs: 8, Width: 8, MPS: 512}, "3.0", "128b/130b", 63.02, 59.97, "MPS 512"},
		// A parsed "8.0" and a slightly-off float give the same link.
		{"rate tolerance", PCIeLink{GTs: 7.999, Width: 4}, "3.0", "128b/130b", 31.51, 28.60, "8.0 GT/s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := PCIe(tt.link)
			if err != nil {
				t.Fatalf("PCIe(%+v): %v", tt.link, err)
			}
			if b.Generation != tt.gen || b.Encoding != tt.enc {
				t.Errorf("generation, encoding = %q, %q; want %q, %q", b.Generation, b.Encoding, tt.gen, tt.enc)
			}
			if got := round2(float64(b.Raw)); got != tt.raw {
				t.Errorf("raw = %v (%.4f); want %v", got, float64(b.Raw), tt.raw)
			}
			if got := round2(float64(b.Effective)); got != tt.eff {
				t.Errorf("effective = %v (%.4f); want %v", got, float64(b.Effective), tt.eff)
			}
			if !strings.Contains(b.Detail(), tt.detailHas) {
				t.Errorf("Detail() = %q; want it to contain %q", b.Detail(), tt.detailHas)
			}
		})
	}
}

func TestPCIeWorkedRoundings(t *testing.T) {
	// The one-decimal figures: 3.0 x8 = 63.0, 2.0 x4 = 16.0.
	for _, tt := range []struct {
		link PCIeLink
		want float64
	}{
		{PCIeLink{GTs: 8, Width: 8}, 63.0},
		{PCIeLink{GTs: 5, Width: 4}, 16.0},
	} {
		b, err := PCIe(tt.link)
		if err != nil {
			t.Fatal(err)
		}
		if got := math.Round(float64(b.Raw)*10) / 10; got != tt.want {
			t.Errorf("%+v raw = %.1f; want %.1f", tt.link, got, tt.want)
		}
	}
}

func TestPCIeErrors(t *testing.T) {
	for _, link := range []PCIeLink{
		{GTs: 0, Width: 4},
		{GTs: 3, Width: 4},
		{GTs: math.NaN(), Width: 4},
		{GTs: 8, Width: 0},
		{GTs: 8, Width: -1},
		{GTs: 8, Width: 33},
		{GTs: 8, Width: 4, MPS: 100},
		{GTs: 8, Width: 4, MPS: 8192},
		{GTs: 8, Width: 4, MPS: -256},
		// MPS below the spec's 128 (a power of two, but no PCIe device's).
		{GTs: 8, Width: 4, MPS: 64},
		{GTs: 8, Width: 4, MPS: 32},
		// Near misses are not a generation's rate: the table matches
		// within 0.01 GT/s, not 0.4.
		{GTs: 7.6, Width: 4},
		{GTs: 7.7, Width: 4},
		{GTs: 8.3, Width: 4},
		{GTs: 2.6, Width: 4},
		{GTs: 16.2, Width: 4},
	} {
		if b, err := PCIe(link); err == nil {
			t.Errorf("PCIe(%+v) = %+v; want an error", link, b)
		}
	}
}

func TestParseLinkSpeed(t *testing.T) {
	tests := []struct {
		in   string
		gts  float64
		ok   bool
		name string
	}{
		{"2.5 GT/s PCIe\n", 2.5, true, "1.0"},
		{"5.0 GT/s PCIe", 5, true, "2.0"},
		{"8.0 GT/s PCIe", 8, true, "3.0"},
		{"16.0 GT/s PCIe", 16, true, "4.0"},
		{"32.0 GT/s PCIe", 32, true, "5.0"},
		{"64.0 GT/s PCIe", 64, true, "6.0"},
		// Kernels before 4.17.
		{"2.5 GT/s", 2.5, true, "1.0"},
		{"5 GT/s", 5, true, "2.0"},
		{"8 GT/s\n", 8, true, "3.0"},
		{"16 GT/s", 16, true, "4.0"},
		// Unknown and garbage.
		{"Unknown", 0, false, ""},
		{"Unknown\n", 0, false, ""},
		{"Unknown speed", 0, false, ""},
		{"", 0, false, ""},
		{"   \n", 0, false, ""},
		{"8.0", 0, false, ""},
		{"8.0 Gb/s", 0, false, ""},
		{"8.0 GT/s PCI", 0, false, ""},
		{"8.0 GT/s PCIe x4", 0, false, ""},
		{"3 GT/s", 0, false, ""},
		{"-8 GT/s", 0, false, ""},
		{"NaN GT/s", 0, false, ""},
		{"Inf GT/s", 0, false, ""},
		{"66 MHz PCI-X", 0, false, ""},
		{"0x8 GT/s", 0, false, ""},
		// Near misses: within 0.01 GT/s is a generation's rate, 0.3 off
		// is not.
		{"7.995 GT/s PCIe", 8, true, "3.0"},
		{"7.7 GT/s PCIe", 0, false, ""},
		{"8.3 GT/s", 0, false, ""},
		{"2.8 GT/s", 0, false, ""},
	}
	for _, tt := range tests {
		gts, ok := ParseLinkSpeed(tt.in)
		if gts != tt.gts || ok != tt.ok {
			t.Errorf("ParseLinkSpeed(%q) = %v, %v; want %v, %v", tt.in, gts, ok, tt.gts, tt.ok)
		}
		if got := Generation(gts); ok && got != tt.name {
			t.Errorf("Generation(%v) = %q; want %q", gts, got, tt.name)
		}
	}
	for _, gts := range []float64{3, 7.7, 8.3, 31.7} {
		if g := Generation(gts); g != "" {
			t.Errorf("Generation(%v) = %q; want \"\"", gts, g)
		}
	}
}

func TestTCPGoodput(t *testing.T) {
	v4 := Stack{}
	v4NoTS := Stack{NoTimestamps: true}
	v6 := Stack{IPv6: true}
	tests := []struct {
		mtu           int
		stack         Stack
		payload, wire int
		want          map[Gbps]float64 // line rate → goodput
	}{
		// line × (MTU − headers)/(MTU + 38), README's arithmetic section.
		{1500, v4, 1448, 1538, map[Gbps]float64{10: 9.41, 25: 23.54, 40: 37.66, 100: 94.15, 200: 188.3}},
		{1500, v4NoTS, 1460, 1538, map[Gbps]float64{10: 9.49, 25: 23.73, 40: 37.97, 100: 94.93, 200: 189.86}},
		{1500, v6, 1428, 1538, map[Gbps]float64{10: 9.28, 25: 23.21, 40: 37.14, 100: 92.85, 200: 185.7}},
		{9000, v4, 8948, 9038, map[Gbps]float64{10: 9.9, 25: 24.75, 40: 39.6, 100: 99.00, 200: 198.01}},
		{1500, Stack{VLANTags: 1}, 1448, 1542, map[Gbps]float64{100: 93.9}},
		{9000, Stack{IPv6: true, NoTimestamps: true}, 8940, 9038, map[Gbps]float64{100: 98.92}},
	}
	for _, tt := range tests {
		f, err := TCPFrame(tt.mtu, tt.stack)
		if err != nil {
			t.Fatalf("TCPFrame(%d, %v): %v", tt.mtu, tt.stack, err)
		}
		if f.Payload != tt.payload || f.Wire != tt.wire {
			t.Errorf("TCPFrame(%d, %v) = %d/%d; want %d/%d", tt.mtu, tt.stack, f.Payload, f.Wire, tt.payload, tt.wire)
		}
		for line, want := range tt.want {
			if got := round2(float64(f.Goodput(line))); got != want {
				t.Errorf("%v at MTU %d, %v: goodput %v; want %v", line, tt.mtu, tt.stack, got, want)
			}
		}
	}
}

func TestTCPGoodputWorked(t *testing.T) {
	// The anchors, asserted on their own.
	for mtu, want := range map[int]string{9000: "99.00", 1500: "94.15"} {
		f, err := TCPFrame(mtu, Stack{})
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Goodput(100).String(); got != want {
			t.Errorf("100GbE at MTU %d = %s; want %s", mtu, got, want)
		}
	}
}

func TestTCPFrameErrors(t *testing.T) {
	for _, tt := range []struct {
		mtu int
		s   Stack
	}{
		{0, Stack{}},
		{67, Stack{}},
		{65536, Stack{}},
		{1279, Stack{IPv6: true}},
		{1500, Stack{VLANTags: 3}},
		{1500, Stack{VLANTags: -1}},
	} {
		if f, err := TCPFrame(tt.mtu, tt.s); err == nil {
			t.Errorf("TCPFrame(%d, %+v) = %+v; want an error", tt.mtu, tt.s, f)
		}
	}
	f, err := TCPFrame(68, Stack{})
	if err != nil || f.Payload != 16 || f.Wire != 106 {
		t.Errorf("TCPFrame(68) = %+v, %v; want payload 16 on 106 wire bytes", f, err)
	}
	if g := f.Goodput(0); g != 0 {
		t.Errorf("Goodput(unknown line) = %v; want 0", g)
	}
	if e := (Frame{}).Efficiency(); e != 0 {
		t.Errorf("zero Frame efficiency = %v; want 0", e)
	}
}

func TestPacketRate(t *testing.T) {
	tests := []struct {
		line Gbps
		mtu  int
		s    Stack
		mpps float64
	}{
		{100, 1500, Stack{}, 8.13},
		{100, 9000, Stack{}, 1.38},
		{100, 46, Stack{}, 148.81}, // 64-byte frames
		{100, 0, Stack{}, 148.81},  // padded to 64 bytes
		{10, 46, Stack{}, 14.88},
		{100, 1500, Stack{VLANTags: 1}, 8.11},
		{0, 1500, Stack{}, 0},
	}
	for _, tt := range tests {
		pps, err := PacketRate(tt.line, tt.mtu, tt.s)
		if err != nil {
			t.Fatalf("PacketRate(%v, %d): %v", tt.line, tt.mtu, err)
		}
		if got := round2(pps / 1e6); got != tt.mpps {
			t.Errorf("PacketRate(%v, %d, %+v) = %v Mpps; want %v", tt.line, tt.mtu, tt.s, got, tt.mpps)
		}
	}
	for _, mtu := range []int{-1, 65536} {
		if _, err := PacketRate(100, mtu, Stack{}); err == nil {
			t.Errorf("PacketRate(100, %d): want an error", mtu)
		}
	}
	if _, err := PacketRate(100, 1500, Stack{VLANTags: 5}); err == nil {
		t.Error("PacketRate with 5 VLAN tags: want an error")
	}
}

func TestBDPAndBufferSize(t *testing.T) {
	const MiB = 1 << 20
	tests := []struct {
		rate   Gbps
		rtt    time.Duration
		bdp    int64
		buffer int64
	}{
		{100, time.Millisecond, 12_500_000, 32 * MiB},
		{100, 10 * time.Millisecond, 125_000_000, 256 * MiB},
		{10, 100 * time.Millisecond, 125_000_000, 256 * MiB},
		{10, time.Millisecond, 1_250_000, MinBuffer}, // 2.5 MB → the 4 MiB floor
		{100, 100 * time.Millisecond, 1_250_000_000, MaxBuffer},
		{400, time.Second, 50_000_000_000, MaxBuffer},
		{1, 8 * time.Nanosecond, 1, MinBuffer},
		{1, 9 * time.Nanosecond, 2, MinBuffer}, // 1.125 bytes, rounded up
		{0, time.Millisecond, 0, MinBuffer},
		{100, 0, 0, MinBuffer},
		{-5, time.Millisecond, 0, MinBuffer},
		{Gbps(math.Inf(1)), time.Millisecond, 0, MinBuffer},
	}
	for _, tt := range tests {
		if got := BDP(tt.rate, tt.rtt); got != tt.bdp {
			t.Errorf("BDP(%v, %v) = %d; want %d", tt.rate, tt.rtt, got, tt.bdp)
		}
		if got := (WindowModel{}).BufferSize(tt.rate, tt.rtt); got != tt.buffer {
			t.Errorf("BufferSize(%v, %v) = %d; want %d", tt.rate, tt.rtt, got, tt.buffer)
		}
	}
	// Exactly a power of two stays put: 2 × 16 MiB of BDP is 32 MiB.
	rate := Gbps(16 * MiB * 8 / 1e9 * 1000) // 16 MiB per ms
	if got := (WindowModel{Receive: 0.5}).BufferSize(rate, time.Millisecond); got != 32*MiB {
		t.Errorf("BufferSize at a 16 MiB BDP = %d; want %d", got, 32*MiB)
	}
}

func TestGbpsJSON(t *testing.T) {
	tests := []struct {
		g    Gbps
		want string
	}{
		{100, "100"},
		{28.6024, "28.6"},
		{63.0154, "63.02"},
		{0.004, "0"},
		{94.149, "94.15"},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.g)
		if err != nil || string(b) != tt.want {
			t.Errorf("json.Marshal(%v) = %s, %v; want %s", float64(tt.g), b, err, tt.want)
		}
	}
	for _, g := range []Gbps{Gbps(math.NaN()), Gbps(math.Inf(-1))} {
		if b, err := json.Marshal(g); err == nil {
			t.Errorf("json.Marshal(%v) = %s; want an error", float64(g), b)
		}
	}
	if s := Gbps(28.6).String(); s != "28.60" {
		t.Errorf("String() = %q; want 28.60", s)
	}
}
