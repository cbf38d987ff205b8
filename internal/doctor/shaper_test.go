package doctor

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/netdev"
	"github.com/linerate/linerate/internal/termui"
)

// shapedHost is the Chelsio T6 host with the live facts of qdisc trees tc
// built in a real namespace (internal/netdev/testdata/live-shapers.json):
// each of the host's interfaces gets the facts of the captured link named
// in links. (Reading them from a tree's linerate/live.json, as a snapshot
// holds them, is inventory's test.)
func shapedHost(t *testing.T, links map[string]string) *inventory.Inventory {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "netdev", "testdata", "live-shapers.json"))
	if err != nil {
		t.Fatal(err)
	}
	captured, err := netdev.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	facts := &netdev.Facts{Links: map[string]netdev.Link{}}
	for iface, from := range links {
		l, ok := captured.Links[from]
		if !ok {
			t.Fatalf("no captured link %s", from)
		}
		facts.Links[iface] = l
	}
	fs, err := hostfs.New(filepath.Join(hostsDir(), "t6-cwdm4-healthy"))
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	inv, err := inventory.Collect(fs, inventory.Options{Live: facts})
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// TestLinkShapedCaptured: on the T6 host (100GbE, MTU 9000), a 1 Gbit/s
// htb default class on ens5f4 is found and judged against what the port
// carries without it; an unshaped port is not; docker0, carrying the
// default route through a 1 Gbit/s tbf, is judged as the host's link
// with nothing else known to limit it.
func TestLinkShapedCaptured(t *testing.T) {
	inv := shapedHost(t, map[string]string{"ens5f4": "htb0", "ens5f4d1": "plain0", "docker0": "tbf0", "lo": "lo"})
	rep := run(t, inv, Options{})
	got := map[string]Finding{}
	for _, f := range find(rep, "link.shaped") {
		got[f.Subject] = f
	}
	if len(got) != 2 {
		t.Fatalf("link.shaped on %v; want ens5f4 and docker0", slices.Collect(mapKeys(got)))
	}
	htb := got["ens5f4"]
	// 1 × 8948/9014 = 0.99, against 100 × 8948/9038 = 99.00.
	for _, want := range []string{"ens5f4's egress is shaped by htb class 1:10 ceil 1gbit (the default class of htb 1:)",
		"the link carries at most 0.99 Gbit/s of TCP goodput (it counts 9014 bytes for every 8948 of TCP payload at MTU 9000)",
		"1% of the 99.00 Gbit/s the 100GbE link allows without it"} {
		if !strings.Contains(htb.Summary, want) {
			t.Errorf("htb summary lacks %q:\n%s", want, htb.Summary)
		}
	}
	if htb.Severity != Warning || htb.Evidence["handle"] != "1:10" || htb.Evidence["rate_gbps"] != 1.0 || htb.Evidence["unshaped_tcp_goodput_gbps"] != 99.0 ||
		htb.Evidence["counted_bytes"] != 9014 || htb.Evidence["payload_bytes"] != 8948 {
		t.Errorf("htb evidence %v", htb.Evidence)
	}
	cmds := htb.Commands()
	for _, want := range []string{"tc -s qdisc show dev ens5f4", "tc -s class show dev ens5f4", "tc qdisc del dev ens5f4 root", "tc qdisc show dev ens5f4"} {
		if !slices.ContainsFunc(cmds, func(c []string) bool { return ShellLine(c) == want }) {
			t.Errorf("htb fix lacks %q: %q", want, cmds)
		}
	}
	if !strings.Contains(htb.Fix[0].Action, "may be deliberate") {
		t.Errorf("the fix does not say a shaper may be deliberate: %q", htb.Fix[0].Action)
	}
	veth := got["docker0"]
	if !strings.Contains(veth.Summary, "shaped by tbf 1: rate 1gbit") || !strings.Contains(veth.Summary, "nothing else known here limits it") ||
		veth.Evidence["unshaped_tcp_goodput_gbps"] != nil || veth.Evidence["tcp_goodput_gbps"] != 0.96 || slices.ContainsFunc(veth.Commands(), func(c []string) bool { return slices.Contains(c, "class") }) {
		t.Errorf("docker0: %s %v %q", veth.Summary, veth.Evidence, veth.Commands())
	}
	// docker0 carries the default route: it is judged with the NICs, its
	// line rate the tbf's.
	var nics []string
	for _, n := range rep.NICs {
		nics = append(nics, n.Interface)
		if n.Interface == "docker0" && (n.Limits.LineRate == nil || *n.Limits.LineRate != 1 || n.Limits.Chain[0].Detail != "tbf qdisc shaped to 1 Gbit/s") {
			t.Errorf("docker0 limits %+v", n.Limits)
		}
	}
	if !slices.Equal(nics, []string{"ens5f4", "ens5f4d1", "docker0"}) {
		t.Errorf("judged %v", nics)
	}
}

// TestLinkShapedDeclared: the lab's link, whose alias declares its tbf
// the line rate it stands in for, is not "shaped": doctor says what it
// is, and its ceiling counts as the tbf counts (docker0's MTU is 1500:
// 10 × 1448/1514 = 9.56, where a 10 Gbit/s wire carries 9.41).
func TestLinkShapedDeclared(t *testing.T) {
	inv := shapedHost(t, map[string]string{"docker0": "lab0", "lo": "lo"})
	rep := run(t, inv, Options{Ifaces: []string{"docker0"}})
	if f := find(rep, "link.shaped"); len(f) != 0 {
		t.Errorf("a declared lab rate raised %s", f[0].Summary)
	}
	l := rep.NICs[0].Limits
	if l.LineRate == nil || *l.LineRate != 10 || l.Chain[0].Detail != "lab link shaped to 10 Gbit/s, standing in for a NIC's line rate" ||
		l.TCPGoodput == nil || l.TCPGoodput.String() != "9.56" {
		t.Errorf("limits %+v", l)
	}
	out := renderAt(t, rep, 80)
	hasLines(t, "declared", out,
		"docker0  veth",
		"  qdisc      tbf, shaped to 10 Gbit/s by tbf 1: rate 10gbit: the lab link's",
		"             rate, standing in for a NIC's line rate",
		"  ceiling    line rate 10.00 → TCP goodput 9.56 Gbit/s  → bottleneck: line rate")
}

// TestLinkShapedRules judges one shaper at a time on the healthy host
// (100GbE, MTU 9000, Gen3 x16): below what the port carries, or not.
func TestLinkShapedRules(t *testing.T) {
	ov := 38
	tests := []struct {
		name  string
		qdisc *inventory.Qdisc
		mut   func(*inventory.NIC)
		want  []string // summary parts; none: no finding
	}{
		{"tbf at 40", &inventory.Qdisc{Kind: "tbf", RateGbps: fp(40)}, nil,
			// 40 × 8948/9014 = 39.71 of 99.00.
			[]string{"shaped by tbf shaped to 40 Gbit/s", "at most 39.71 Gbit/s", "40% of the 99.00 Gbit/s the 100GbE link allows"}},
		{"tbf at the line rate: counts less than the wire", &inventory.Qdisc{Kind: "tbf", RateGbps: fp(100)}, nil, nil},
		{"tbf above the line rate", &inventory.Qdisc{Kind: "tbf", RateGbps: fp(200)}, nil, nil},
		{"fq maxrate: each flow", &inventory.Qdisc{Kind: "fq", Shaper: &inventory.Shaper{Kind: "fq", Handle: "8001:", RateGbps: 2, PerFlow: true, Detail: "fq 8001: maxrate 2gbit (each flow)"}}, nil,
			[]string{"each flow gets at most 1.99 Gbit/s", "2% of the 99.00"}},
		{"cake with the wire's overhead at 99", &inventory.Qdisc{Kind: "cake", RateGbps: fp(99), Shaper: &inventory.Shaper{Kind: "cake", Handle: "1:", RateGbps: 99, OverheadBytes: &ov, Detail: "cake 1: bandwidth 99gbit"}}, nil,
			// 99 × 8948/9038 = 98.01.
			[]string{"at most 98.01 Gbit/s", "it counts 9038 bytes for every 8948"}},
		{"declared", &inventory.Qdisc{Kind: "tbf", RateGbps: fp(40), Shaper: &inventory.Shaper{Kind: "tbf", Handle: "1:", RateGbps: 40, DeclaredLineRate: true}}, nil, nil},
		{"PCIe binds first", &inventory.Qdisc{Kind: "tbf", RateGbps: fp(30)}, func(n *inventory.NIC) { n.PCIe.CurWidth = ip(4) }, nil},
		{"below PCIe", &inventory.Qdisc{Kind: "tbf", RateGbps: fp(20)}, func(n *inventory.NIC) { n.PCIe.CurWidth = ip(4) },
			// 31.51 raw × 8948/10040 = 28.08 through the bus.
			[]string{"at most 19.85 Gbit/s", "71% of the 28.08 Gbit/s its PCIe link allows"}},
		{"MTU unknown: the rate itself", &inventory.Qdisc{Kind: "tbf", RateGbps: fp(40)}, func(n *inventory.NIC) { n.MTU = nil },
			[]string{"the link carries at most 40.00 Gbit/s of TCP goodput; nothing else known"}},
		{"no qdisc", nil, nil, nil},
		{"unshaped qdisc", &inventory.Qdisc{Kind: "fq_codel"}, nil, nil},
	}
	for _, tt := range tests {
		inv := healthy()
		inv.NICs[0].Qdisc = tt.qdisc
		if tt.mut != nil {
			tt.mut(&inv.NICs[0])
		}
		f := find(run(t, inv, Options{}), "link.shaped")
		if len(tt.want) == 0 {
			if len(f) != 0 {
				t.Errorf("%s: raised %s", tt.name, f[0].Summary)
			}
			continue
		}
		if len(f) != 1 {
			t.Errorf("%s: %d findings", tt.name, len(f))
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(f[0].Summary, w) {
				t.Errorf("%s: summary lacks %q:\n%s", tt.name, w, f[0].Summary)
			}
		}
	}
}

// TestSelectVirtual: which virtual interfaces doctor judges without
// --iface: the default route's, else a namespace's few up links.
func TestSelectVirtual(t *testing.T) {
	veth := func(name, state string, def bool) inventory.NIC {
		return inventory.NIC{Interface: name, Kind: "veth", Operstate: state, MTU: ip(1500), DefaultRoute: def, IRQs: []inventory.IRQ{}, RDMA: []inventory.RDMAPort{}}
	}
	lo := inventory.NIC{Interface: "lo", Kind: "loopback", Operstate: "unknown"}
	bond := inventory.NIC{Interface: "bond0", Kind: "bond", Operstate: "up", MTU: ip(9000), SpeedMbps: ip(50000), DefaultRoute: true}
	tests := []struct {
		name    string
		nics    bool // the healthy host's PCI NIC
		virtual []inventory.NIC
		ifaces  []string
		judged  []string
	}{
		{"default route through a veth", true, []inventory.NIC{veth("eth0", "up", true), veth("veth1", "up", false), lo}, nil, []string{"enp1s0f0np0", "eth0"}},
		{"a lab host: its one link", false, []inventory.NIC{veth("lab0", "up", false), lo}, nil, []string{"lab0"}},
		{"a lab host's link down", false, []inventory.NIC{veth("lab0", "down", false), lo}, nil, nil},
		{"a host of many veths", false, []inventory.NIC{veth("v1", "up", false), veth("v2", "up", false), veth("v3", "up", false), veth("v4", "up", false), veth("v5", "up", false), lo}, nil, nil},
		{"PCI NICs without a default route", true, []inventory.NIC{veth("lab0", "up", false), lo}, nil, []string{"enp1s0f0np0"}},
		{"named", true, []inventory.NIC{veth("eth0", "up", true), veth("veth1", "up", false), lo}, []string{"veth1"}, []string{"veth1"}},
		{"a bond's speed is its line rate", false, []inventory.NIC{bond, lo}, nil, []string{"bond0"}},
	}
	for _, tt := range tests {
		inv := healthy()
		if !tt.nics {
			inv.NICs = nil
		}
		inv.Virtual = tt.virtual
		rep := run(t, inv, Options{Ifaces: tt.ifaces})
		var judged, other []string
		for _, n := range rep.NICs {
			judged = append(judged, n.Interface)
			if n.Interface == "bond0" && (n.Limits.LineRate == nil || *n.Limits.LineRate != 50 || n.Limits.Chain[0].Detail != "50GbE link") {
				t.Errorf("bond0 limits %+v", n.Limits)
			}
		}
		for _, n := range rep.Virtual {
			other = append(other, n.Interface)
		}
		var rest []string
		for _, n := range tt.virtual {
			if !slices.Contains(judged, n.Interface) {
				rest = append(rest, n.Interface)
			}
		}
		if !slices.Equal(judged, tt.judged) || !slices.Equal(other, rest) {
			t.Errorf("%s: judged %v, other %v; want judged %v", tt.name, judged, other, tt.judged)
		}
	}
}

// TestTextHeaderGroups: a NIC's heading breaks between its groups, never
// inside one ("numa" / "n/a" apart), and stays one line when it fits.
func TestTextHeaderGroups(t *testing.T) {
	inv := healthy()
	n := &inv.NICs[0]
	n.Interface, n.Model, n.Driver, n.PCI, n.NUMANode = "eth0", "Virtio 1.0 network device", "virtio_net", "0000:00:03.0", nil
	n.VendorID, n.DeviceID = "0x1af4", "0x1041"
	out := renderAt(t, run(t, inv, Options{}), 80)
	hasLines(t, "virtio", out,
		"eth0  Virtio 1.0 network device [1af4:1041]  virtio_net  pci 0000:00:03.0",
		"  numa n/a")
	rep := run(t, healthy(), Options{})
	hasLines(t, "ConnectX-5", renderAt(t, rep, 80), "enp1s0f0np0  ConnectX-5 [15b3:1017]  mlx5_core  pci 0000:01:00.0  numa 0")
	hasLines(t, "40 columns", renderAt(t, rep, 40), "enp1s0f0np0  ConnectX-5 [15b3:1017]", "  mlx5_core  pci 0000:01:00.0  numa 0")
}

// renderAt writes rep as plain text wrapped at width columns.
func renderAt(t *testing.T, rep *Report, width int) string {
	t.Helper()
	var b strings.Builder
	if err := WriteText(&b, rep, termui.Style{}, width); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestQdiscText: the qdisc line names the root qdisc and what caps the
// link, where it sits and how.
func TestQdiscText(t *testing.T) {
	for _, tt := range []struct {
		q    inventory.Qdisc
		want string
	}{
		{inventory.Qdisc{Kind: "fq_codel"}, "fq_codel"},
		{inventory.Qdisc{Kind: "tbf", RateGbps: fp(1)}, "tbf shaped to 1 Gbit/s"},
		{inventory.Qdisc{Kind: "htb", RateGbps: fp(0.5), Shaper: &inventory.Shaper{Kind: "htb", RateGbps: 0.5, Detail: "htb class 1:10 ceil 500mbit (the default class of htb 1:)"}},
			"htb, shaped to 0.5 Gbit/s by htb class 1:10 ceil 500mbit (the default class of htb 1:)"},
		{inventory.Qdisc{Kind: "fq", Shaper: &inventory.Shaper{Kind: "fq", RateGbps: 2, PerFlow: true, Detail: "fq 8001: maxrate 2gbit (each flow)"}},
			"fq, each flow shaped to 2 Gbit/s by fq 8001: maxrate 2gbit (each flow)"},
	} {
		if got := qdiscText(&tt.q); got != tt.want {
			t.Errorf("qdiscText(%+v) = %q; want %q", tt.q, got, tt.want)
		}
	}
}

// TestBufferSentenceUnknownRate: with no line rate known, the buffer
// finding says what it assumes in a sentence that reads.
func TestBufferSentenceUnknownRate(t *testing.T) {
	inv := healthy()
	inv.NICs[0].SpeedMbps = nil
	inv.Sysctl["net.ipv4.tcp_rmem"] = []int64{4096, 65536, 65536}
	f := find(run(t, inv, Options{}), "sysctl.socket_buffers_small")
	if len(f) != 1 {
		t.Fatalf("%d findings", len(f))
	}
	if !strings.HasPrefix(f[0].Summary, "socket buffers too small for one flow to fill 10 Gbit/s × 1ms RTT (no line rate is known here, so 10 Gbit/s is assumed; BDP 1.2 MiB;") {
		t.Errorf("summary: %s", f[0].Summary)
	}
	if f[0].Evidence["line_rate"] != "no line rate known; assuming 10 Gbit/s" {
		t.Errorf("evidence %v", f[0].Evidence["line_rate"])
	}
}
