package limits

import (
	"math"
	"testing"
)

// TestPCIeGoodput pins the per-packet model (PCIeBandwidth.Goodput) at
// the worked numbers of its doc comment and README.
func TestPCIeGoodput(t *testing.T) {
	v4 := Stack{}
	tests := []struct {
		name    string
		link    PCIeLink
		mtu     int
		stack   Stack
		bus     float64 // link bytes a segment, in units of Raw
		goodput string
	}{
		// 1514-byte frame: ceil(1514/256) = 6 TLPs, 1514 + 6×26 = 1670;
		// the completion: 64 + 26 = 90. 63.015 × 1448/1760 = 51.84.
		{"gen3 x8 mtu 1500", PCIeLink{GTs: 8, Width: 8}, 1500, v4, 1760, "51.84"},
		// 9014 bytes: 36 TLPs (35.2 rounded up), 9014 + 936 = 9950; + 90.
		// 63.015 × 8948/10040 = 56.16.
		{"gen3 x8 mtu 9000", PCIeLink{GTs: 8, Width: 8}, 9000, v4, 10040, "56.16"},
		// The 100 GbE home lab's ConnectX-5 at x4: 31.508 × 8948/10040 = 28.08.
		{"gen3 x4 mtu 9000", PCIeLink{GTs: 8, Width: 4}, 9000, v4, 10040, "28.08"},
		// The XL710 40 GbE host in a Gen2 x4 slot at MTU 1500: 16 ×
		// 1448/1760 = 13.16 (its owner measured about 11 there).
		{"gen2 x4 mtu 1500", PCIeLink{GTs: 5, Width: 4}, 1500, v4, 1760, "13.16"},
		// MPS 128: 12 TLPs, 1514 + 312 = 1826, + 64 + 26: 1916.
		// 16 × 1448/1916 = 12.09.
		{"gen2 x4 mtu 1500 mps 128", PCIeLink{GTs: 5, Width: 4, MPS: 128}, 1500, v4, 1916, "12.09"},
		// No timestamps: 1460 bytes in the same frame: 63.015 × 1460/1760.
		{"gen3 x8 no timestamps", PCIeLink{GTs: 8, Width: 8}, 1500, Stack{NoTimestamps: true}, 1760, "52.27"},
		// IPv6: 1428 bytes: 63.015 × 1428/1760 = 51.13.
		{"gen3 x8 ipv6", PCIeLink{GTs: 8, Width: 8}, 1500, Stack{IPv6: true}, 1760, "51.13"},
		// x16 at 1500: 126.03 × 1448/1760 = 103.69, above 100GbE's 94.15.
		{"gen3 x16 mtu 1500", PCIeLink{GTs: 8, Width: 16}, 1500, v4, 1760, "103.69"},
		// FLIT (Gen6) x4 at MTU 9000: 36 TLPs with 16-byte headers,
		// (9014 + 576) × 242/236 + (64 + 16) × 242/236 = 9915.85; raw
		// 64 × 4 × 242/256 = 242: 242 × 8948/9915.85 = 218.38.
		{"gen6 x4 mtu 9000", PCIeLink{GTs: 64, Width: 4}, 9000, v4, 9915.85, "218.38"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mustPCIe(t, tt.link)
			f, err := TCPFrame(tt.mtu, tt.stack)
			if err != nil {
				t.Fatal(err)
			}
			tr := f.Transfer()
			if tr.DMA != tt.mtu+14 || tr.Completions != 1 || tr.Payload != f.Payload {
				t.Errorf("Transfer() = %+v", tr)
			}
			if got := math.Round(b.BusBytes(tr)*100) / 100; got != tt.bus {
				t.Errorf("BusBytes = %v; want %v", got, tt.bus)
			}
			if got := b.Goodput(tr).String(); got != tt.goodput {
				t.Errorf("Goodput = %s; want %s", got, tt.goodput)
			}
			// A segment never gets more through PCIe than effective
			// bandwidth allows.
			if b.Goodput(tr) >= b.Effective {
				t.Errorf("Goodput %v not below effective %v", b.Goodput(tr), b.Effective)
			}
		})
	}
}

// TestPCIeGoodputRoCEBaseline checks the model against a measurement: the
// ConnectX-5 RoCE baseline report ran RDMA write, read and send of 1 MiB messages between ConnectX-5s in
// PCIe 3.0 x8 slots (MPS 256 on that board) and measured 55.87, 55.97 and
// 55.88 Gbit/s. A ceiling below what was measured would be wrong.
//
//	raw          8 GT/s × 8 lanes × 128/130       = 63.015 Gbit/s
//	message      1,048,576 bytes = 4096 TLPs of 256 bytes, no partial TLP
//	bus bytes    1,048,576 + 4096 × 26 = 1,155,072, + one 90-byte completion
//	             = 1,155,162
//	ceiling      63.015 × 1,048,576 / 1,155,162     = 57.20 Gbit/s
//	measured     55.97 (ib_read_bw, the best)       = 97.8% of the ceiling
//
// The RDMA payload is DMA'd without its packet headers (the NIC consumes
// them), so the message size alone crosses the bus. TCP on the same link
// at MTU 1500 tops out at 51.84 (TestPCIeGoodput): per-packet headers and
// completions cost RDMA nothing at 1 MiB.
func TestPCIeGoodputRoCEBaseline(t *testing.T) {
	b := mustPCIe(t, PCIeLink{GTs: 8, Width: 8, MPS: 256})
	msg := Transfer{Payload: 1 << 20, DMA: 1 << 20, Completions: 1}
	if got := b.BusBytes(msg); got != 1_155_162 {
		t.Errorf("bus bytes per 1 MiB message = %v; want 1155162", got)
	}
	ceiling := b.Goodput(msg)
	if got := ceiling.String(); got != "57.20" {
		t.Errorf("RDMA ceiling = %s; want 57.20", got)
	}
	for _, measured := range []Gbps{55.87, 55.97, 55.88} {
		if ceiling < measured {
			t.Errorf("the model's ceiling %s is below the RoCE baseline's measured %s", ceiling, measured)
		}
	}
	if ceiling > b.Effective {
		t.Errorf("ceiling %s above effective %s", ceiling, b.Effective)
	}
}

func TestPCIeGoodputEdges(t *testing.T) {
	b := mustPCIe(t, PCIeLink{GTs: 8, Width: 8})
	for _, tr := range []Transfer{{}, {Payload: 0, DMA: 1500, Completions: 1}, {Payload: 1448, DMA: 0, Completions: 0}, {Payload: -1, DMA: 100}} {
		if g := b.Goodput(tr); g != 0 {
			t.Errorf("Goodput(%+v) = %v; want 0", tr, g)
		}
	}
	// No completion: a 256-byte write is one full TLP, the effective rate.
	if g, e := b.Goodput(Transfer{Payload: 256, DMA: 256}), b.Effective; math.Abs(float64(g-e)) > 1e-9 {
		t.Errorf("one full TLP: %v; want effective %v", g, e)
	}
	// 257 bytes need a second TLP: 257 + 52 link bytes.
	if got := b.BusBytes(Transfer{DMA: 257}); got != 309 {
		t.Errorf("BusBytes(257) = %v; want 309", got)
	}
	// A zero MPS (a hand-built value) counts as the default 256.
	z := PCIeBandwidth{Raw: 10}
	if got := z.BusBytes(Transfer{DMA: 512}); got != 564 {
		t.Errorf("BusBytes with MPS 0 = %v; want 564", got)
	}
}
