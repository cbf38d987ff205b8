package limits

import (
	"encoding/json"
	"strings"
	"testing"
)

func mustPCIe(t *testing.T, link PCIeLink) *PCIeBandwidth {
	t.Helper()
	b, err := PCIe(link)
	if err != nil {
		t.Fatal(err)
	}
	return &b
}

// fmtPtr prints an optional rate the way the tests compare it.
func fmtPtr(g *Gbps) string {
	if g == nil {
		return "null"
	}
	return g.String()
}

func TestChain(t *testing.T) {
	gen3x4 := mustPCIe(t, PCIeLink{GTs: 8, Width: 4})
	gen3x16 := mustPCIe(t, PCIeLink{GTs: 8, Width: 16})
	gen3x8 := mustPCIe(t, PCIeLink{GTs: 8, Width: 8})
	tests := []struct {
		name                   string
		port                   Port
		line, pcie, goodput    string
		bottleneck             Bottleneck
		lineDetail, pcieDetail string
		tcpDetail              string
	}{
		{
			name: "pcie bound (the home lab's x16 card trained at x4)",
			port: Port{LineRate: 100, PCIe: gen3x4, MTU: 9000},
			// 31.51 raw × 8948 payload bytes / (9014-byte frame in 36
			// TLPs: 9014 + 36 × 26 = 9950, + a 64-byte completion: 90)
			// = 31.51 × 8948/10040 = 28.08, below effective 28.60.
			line: "100.00", pcie: "28.60", goodput: "28.08", bottleneck: BottleneckPCIe,
			lineDetail: "100GbE", pcieDetail: "8.0 GT/s x4, 128b/130b, MPS 256",
			tcpDetail: "MTU 9000, IPv4 + timestamps: 8948/9038 of line rate = 99.00, capped by PCIe: 31.51 raw × 8948/10040 bus bytes a segment = 28.08",
		},
		{
			name: "pcie bound (the RoCE baseline's x8)",
			port: Port{LineRate: 100, PCIe: gen3x8, MTU: 1500},
			// 63.02 raw × 1448 / (1514 in 6 TLPs = 1670, + 90) =
			// 63.02 × 1448/1760 = 51.84.
			line: "100.00", pcie: "57.21", goodput: "51.84", bottleneck: BottleneckPCIe,
			lineDetail: "100GbE", pcieDetail: "8.0 GT/s x8, 128b/130b, MPS 256",
			tcpDetail: "MTU 1500, IPv4 + timestamps: 1448/1538 of line rate = 94.15, capped by PCIe: 63.02 raw × 1448/1760 bus bytes a segment = 51.84",
		},
		{
			name: "line bound at jumbo MTU",
			port: Port{LineRate: 100, PCIe: gen3x16, MTU: 9000},
			line: "100.00", pcie: "114.41", goodput: "99.00", bottleneck: BottleneckLineRate,
			lineDetail: "100GbE", pcieDetail: "8.0 GT/s x16, 128b/130b, MPS 256",
			tcpDetail: "MTU 9000, IPv4 + timestamps: 8948/9038 of line rate",
		},
		{
			// PCIe carries 126.03 × 1448/1760 = 103.69 of TCP: above 94.15.
			name: "line bound at MTU 1500",
			port: Port{LineRate: 100, PCIe: gen3x16, MTU: 1500},
			line: "100.00", pcie: "114.41", goodput: "94.15", bottleneck: BottleneckLineRate,
			lineDetail: "100GbE", pcieDetail: "8.0 GT/s x16, 128b/130b, MPS 256",
			tcpDetail: "MTU 1500, IPv4 + timestamps: 1448/1538 of line rate",
		},
		{
			name: "pcie not reported (a VM)",
			port: Port{LineRate: 25, MTU: 1500},
			line: "25.00", pcie: "null", goodput: "23.54", bottleneck: BottleneckLineRate,
			lineDetail: "25GbE", pcieDetail: "not reported",
			tcpDetail: "MTU 1500, IPv4 + timestamps: 1448/1538 of line rate",
		},
		{
			name: "line rate unknown",
			port: Port{LineRate: -1, PCIe: gen3x4, MTU: 1500},
			line: "null", pcie: "28.60", goodput: "null", bottleneck: BottleneckUnknown,
			lineDetail: "not reported", pcieDetail: "8.0 GT/s x4, 128b/130b, MPS 256",
			tcpDetail: "MTU 1500, IPv4 + timestamps: line rate not reported",
		},
		{
			name: "nothing known",
			port: Port{MTU: 1500},
			line: "null", pcie: "null", goodput: "null", bottleneck: BottleneckUnknown,
			lineDetail: "not reported", pcieDetail: "not reported",
			tcpDetail: "MTU 1500, IPv4 + timestamps: line rate not reported",
		},
		{
			name: "MTU unusable",
			port: Port{LineRate: 10, PCIe: gen3x4, MTU: 0},
			line: "10.00", pcie: "28.60", goodput: "null", bottleneck: BottleneckUnknown,
			lineDetail: "10GbE", pcieDetail: "8.0 GT/s x4, 128b/130b, MPS 256",
			tcpDetail: "MTU 0: not a usable MTU for IPv4 + timestamps",
		},
		{
			name: "shaped virtual interface, IPv6",
			port: Port{LineRate: 10, LineDetail: "tbf 10gbit", MTU: 9000, Stack: Stack{IPv6: true}},
			line: "10.00", pcie: "null", goodput: "9.88", bottleneck: BottleneckLineRate,
			lineDetail: "tbf 10gbit", pcieDetail: "not reported",
			tcpDetail: "MTU 9000, IPv6 + timestamps: 8928/9038 of line rate",
		},
		{
			name: "2.5GbE name",
			port: Port{LineRate: 2.5, MTU: 1500},
			line: "2.50", pcie: "null", goodput: "2.35", bottleneck: BottleneckLineRate,
			lineDetail: "2.5GbE", pcieDetail: "not reported",
			tcpDetail: "MTU 1500, IPv4 + timestamps: 1448/1538 of line rate",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := Chain(tt.port)
			if got := fmtPtr(l.LineRate); got != tt.line {
				t.Errorf("line rate = %s; want %s", got, tt.line)
			}
			if got := fmtPtr(l.PCIe); got != tt.pcie {
				t.Errorf("pcie = %s; want %s", got, tt.pcie)
			}
			if got := fmtPtr(l.TCPGoodput); got != tt.goodput {
				t.Errorf("tcp goodput = %s; want %s", got, tt.goodput)
			}
			if l.Bottleneck != tt.bottleneck {
				t.Errorf("bottleneck = %q; want %q", l.Bottleneck, tt.bottleneck)
			}
			if len(l.Chain) != 3 {
				t.Fatalf("chain has %d stages; want 3: %+v", len(l.Chain), l.Chain)
			}
			for i, want := range []struct{ stage, gbps, detail string }{
				{"line rate", tt.line, tt.lineDetail},
				{"PCIe", tt.pcie, tt.pcieDetail},
				{"TCP goodput", tt.goodput, tt.tcpDetail},
			} {
				s := l.Chain[i]
				if s.Stage != want.stage || fmtPtr(s.Gbps) != want.gbps || s.Detail != want.detail {
					t.Errorf("stage %d = {%q %s %q}; want {%q %s %q}",
						i, s.Stage, fmtPtr(s.Gbps), s.Detail, want.stage, want.gbps, want.detail)
				}
			}
		})
	}
}

func TestChainJSON(t *testing.T) {
	l := Chain(Port{LineRate: 100, PCIe: mustPCIe(t, PCIeLink{GTs: 8, Width: 4}), MTU: 9000})
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"line_rate_gbps":100,"pcie_gbps":28.6,"tcp_goodput_gbps":28.08,"bottleneck":"pcie","chain":[` +
		`{"stage":"line rate","gbps":100,"detail":"100GbE"},` +
		`{"stage":"PCIe","gbps":28.6,"detail":"8.0 GT/s x4, 128b/130b, MPS 256"},` +
		`{"stage":"TCP goodput","gbps":28.08,"detail":"MTU 9000, IPv4 + timestamps: 8948/9038 of line rate = 99.00, capped by PCIe: 31.51 raw × 8948/10040 bus bytes a segment = 28.08"}]}`
	if string(b) != want {
		t.Errorf("JSON:\n got %s\nwant %s", b, want)
	}

	// Unknowns are null, not absent and not zero.
	b, err = json.Marshal(Chain(Port{MTU: 1500}))
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"line_rate_gbps":null`, `"pcie_gbps":null`, `"tcp_goodput_gbps":null`, `"bottleneck":"unknown"`} {
		if !strings.Contains(string(b), field) {
			t.Errorf("JSON %s lacks %s", b, field)
		}
	}
}

func TestPCIeShortfall(t *testing.T) {
	tests := []struct {
		name   string
		pcie   Gbps
		port   Gbps
		linked []Gbps
		want   Shortfall
	}{
		{"x4 under one 100G port", 28.6, 100, []Gbps{100}, ShortfallPort},
		{"x16 carries one port, not two", 114.41, 100, []Gbps{100, 100}, ShortfallCard},
		{"x16 carries one linked port", 114.41, 100, []Gbps{100}, ShortfallNone},
		{"Gen2 x4 carries one 10G port, not two", 14.52, 10, []Gbps{10, 10}, ShortfallCard},
		{"Gen4 x16 carries two 100G ports", 228.82, 100, []Gbps{100, 100}, ShortfallNone},
		{"port unknown, linked sum exceeds", 50, 0, []Gbps{40, 40}, ShortfallCard},
		{"unknown linked rates skipped", 50, 40, []Gbps{40, -1, 0}, ShortfallNone},
		{"pcie unknown", 0, 100, []Gbps{100, 100}, ShortfallNone},
		{"equal is enough", 100, 100, []Gbps{100}, ShortfallNone},
		{"no linked ports", 28.6, 25, nil, ShortfallNone},
	}
	for _, tt := range tests {
		if got := PCIeShortfall(tt.pcie, tt.port, tt.linked); got != tt.want {
			t.Errorf("%s: PCIeShortfall(%v, %v, %v) = %v; want %v", tt.name, tt.pcie, tt.port, tt.linked, got, tt.want)
		}
	}
	for s, want := range map[Shortfall]string{ShortfallNone: "none", ShortfallCard: "card", ShortfallPort: "port", 7: "Shortfall(7)"} {
		if s.String() != want {
			t.Errorf("Shortfall(%d).String() = %q; want %q", int(s), s.String(), want)
		}
	}
}
