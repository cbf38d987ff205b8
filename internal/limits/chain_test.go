package limits

import (
	"encoding/json"
	"math"
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
			// tbf counts 9000 + 14 bytes a segment: 10 × 8948/9014.
			name: "lab veth shaped by tbf",
			port: Port{Shaper: &Shaper{Rate: 10, Overhead: SkbOverhead, Detail: "tbf qdisc shaped to 10 Gbit/s"}, MTU: 9000},
			line: "10.00", pcie: "null", goodput: "9.93", bottleneck: BottleneckLineRate,
			lineDetail: "tbf qdisc shaped to 10 Gbit/s", pcieDetail: "not reported",
			tcpDetail: "MTU 9000, IPv4 + timestamps: 8948/9014 of the shaped rate (packet + MAC header)",
		},
		{
			// 25 × 1448/1538 = 23.54 on the wire; the tbf's 10 × 1448/1514 = 9.56 binds.
			name: "25GbE port shaped to 10 Gbit/s",
			port: Port{LineRate: 25, LineDetail: "25GbE link", Shaper: &Shaper{Rate: 10, Overhead: SkbOverhead}, PCIe: gen3x8, MTU: 1500},
			line: "10.00", pcie: "57.21", goodput: "9.56", bottleneck: BottleneckLineRate,
			lineDetail: "shaped to 10 Gbit/s", pcieDetail: "8.0 GT/s x8, 128b/130b, MPS 256",
			tcpDetail: "MTU 1500, IPv4 + timestamps: 1448/1514 of the shaped rate (packet + MAC header)",
		},
		{
			// A shaper above the line rate: the wire binds (10 × 8948/9038
			// = 9.90 < 10.5 × 8948/9014 = 10.42).
			name: "shaper above the line rate",
			port: Port{LineRate: 10, Shaper: &Shaper{Rate: 10.5, Overhead: SkbOverhead}, MTU: 9000},
			line: "10.00", pcie: "null", goodput: "9.90", bottleneck: BottleneckLineRate,
			lineDetail: "10GbE", pcieDetail: "not reported",
			tcpDetail: "MTU 9000, IPv4 + timestamps: 8948/9038 of line rate",
		},
		{
			// cake with "overhead 64": it counts 1500 + 64 a packet, more
			// than the wire's 1538, so at the same rate as the wire it
			// binds: 10 × 1448/1564 = 9.26.
			name: "cake counting more than the wire",
			port: Port{LineRate: 10, Shaper: &Shaper{Rate: 10, Overhead: 64}, MTU: 1500},
			line: "10.00", pcie: "null", goodput: "9.26", bottleneck: BottleneckLineRate,
			lineDetail: "10GbE", pcieDetail: "not reported",
			tcpDetail: "MTU 1500, IPv4 + timestamps: 1448/1564 of the shaped rate (IP packet + 64 bytes)",
		},
		{
			// A shaper of unknown rate is no shaper.
			name: "shaper rate unknown",
			port: Port{LineRate: 25, Shaper: &Shaper{Overhead: SkbOverhead, Detail: "tbf"}, MTU: 1500},
			line: "25.00", pcie: "null", goodput: "23.54", bottleneck: BottleneckLineRate,
			lineDetail: "25GbE", pcieDetail: "not reported",
			tcpDetail: "MTU 1500, IPv4 + timestamps: 1448/1538 of line rate",
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
			// The line's own goodput is the TCP stage before PCIe: equal
			// to it unless PCIe binds, and unknown exactly when it is.
			switch {
			case l.TCPGoodput == nil:
				if l.LineGoodput != nil || l.LineGoodputDetail != "" {
					t.Errorf("line goodput %s %q without a TCP goodput", fmtPtr(l.LineGoodput), l.LineGoodputDetail)
				}
			case l.Bottleneck == BottleneckPCIe:
				if l.LineGoodput == nil || *l.LineGoodput <= *l.TCPGoodput || !strings.HasPrefix(l.Chain[2].Detail, l.LineGoodputDetail+" = ") {
					t.Errorf("PCIe-bound: line goodput %s %q, TCP %s %q", fmtPtr(l.LineGoodput), l.LineGoodputDetail, fmtPtr(l.TCPGoodput), l.Chain[2].Detail)
				}
			default:
				if fmtPtr(l.LineGoodput) != tt.goodput || l.LineGoodputDetail != tt.tcpDetail {
					t.Errorf("line goodput %s %q; want %s %q", fmtPtr(l.LineGoodput), l.LineGoodputDetail, tt.goodput, tt.tcpDetail)
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
	want := `{"line_rate_gbps":100,"pcie_gbps":28.6,"tcp_goodput_gbps":28.08,` +
		`"line_goodput_gbps":99,"line_goodput_detail":"MTU 9000, IPv4 + timestamps: 8948/9038 of line rate",` +
		`"bottleneck":"pcie","chain":[` +
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
	for _, field := range []string{`"line_rate_gbps":null`, `"pcie_gbps":null`, `"tcp_goodput_gbps":null`, `"line_goodput_gbps":null`, `"bottleneck":"unknown"`} {
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

// TestShaperGoodput checks the shaper model's worked numbers (docs'
// physics section): what tbf counts of a segment, and the goodput it
// lets through next to a wire of the same rate.
func TestShaperGoodput(t *testing.T) {
	tests := []struct {
		name           string
		mtu            int
		stack          Stack
		rate           Gbps
		overhead       int
		counted        int
		shaped, onWire string
	}{
		{"tbf 10 Gbit/s, MTU 9000", 9000, Stack{}, 10, SkbOverhead, 9014, "9.93", "9.90"},
		{"tbf 10 Gbit/s, MTU 1500", 1500, Stack{}, 10, SkbOverhead, 1514, "9.56", "9.41"},
		{"tbf 1 Gbit/s, MTU 9000", 9000, Stack{}, 1, SkbOverhead, 9014, "0.99", "0.99"},
		{"htb 100 Gbit/s, MTU 9000, IPv6", 9000, Stack{IPv6: true}, 100, SkbOverhead, 9014, "99.05", "98.78"},
		{"cake overhead 38 (the wire's)", 1500, Stack{}, 10, 38, 1538, "9.41", "9.41"},
		{"cake overhead 0 (IP packet only)", 1500, Stack{}, 10, 0, 1500, "9.65", "9.41"},
		{"negative overhead counts the IP packet", 1500, Stack{}, 10, -4, 1500, "9.65", "9.41"},
	}
	for _, tt := range tests {
		f, err := TCPFrame(tt.mtu, tt.stack)
		if err != nil {
			t.Fatal(err)
		}
		s := Shaper{Rate: tt.rate, Overhead: tt.overhead}
		if got := s.Counted(f); got != tt.counted {
			t.Errorf("%s: counted %d bytes; want %d", tt.name, got, tt.counted)
		}
		if got := s.Goodput(f).String(); got != tt.shaped {
			t.Errorf("%s: goodput %s; want %s", tt.name, got, tt.shaped)
		}
		if got := f.Goodput(tt.rate).String(); got != tt.onWire {
			t.Errorf("%s: wire goodput %s; want %s", tt.name, got, tt.onWire)
		}
		// Counting fewer bytes than the wire never carries less.
		if tt.counted <= f.Wire && s.Goodput(f) < f.Goodput(tt.rate) {
			t.Errorf("%s: shaped %v below the wire's %v", tt.name, s.Goodput(f), f.Goodput(tt.rate))
		}
	}
	// The 1 Gbit/s figures apart: 0.9927 against 0.9900.
	f, _ := TCPFrame(9000, Stack{})
	if got := float64(Shaper{Rate: 1, Overhead: SkbOverhead}.Goodput(f)); math.Abs(got-0.99268) > 1e-5 {
		t.Errorf("1 Gbit/s tbf at MTU 9000: %.5f; want 0.99268", got)
	}
	if got := (Shaper{Overhead: SkbOverhead}).Goodput(f); got != 0 {
		t.Errorf("unknown rate: %v; want 0", got)
	}
}
