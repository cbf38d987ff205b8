package nicstats

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/result"
)

func u64(v uint64) *uint64 { return &v }
func u32(v uint32) *uint32 { return &v }

func TestFromFacts(t *testing.T) {
	tests := []struct {
		name   string
		driver string
		facts  *ethtool.Facts
		want   map[Cause]uint64
		absent []Cause
	}{
		{
			name: "mlx5 with standard groups", driver: "mlx5_core",
			facts: &ethtool.Facts{
				Stats: &ethtool.Stats{
					Driver: map[string]uint64{"rx_out_of_buffer": 1200000, "rx_discards_phy": 7, "rx_crc_errors_phy": 5,
						"tx_pause_ctrl_phy": 40, "rx_pause_ctrl_phy": 0, "rx_packets": 1e9},
					EthMAC: map[string]uint64{"FrameCheckSequenceErrors": 5},
					Pause:  &ethtool.Pause{TXFrames: u64(40), RXFrames: u64(0)},
				},
				FEC: &ethtool.FEC{Stats: &ethtool.FECStats{UncorrectableBlocks: []uint64{3, 0, 3}, CorrectedBlocks: []uint64{900}}},
			},
			// The FCS errors and pause frames come from the standard groups
			// only: mlx5's own rx_crc_errors_phy counts the same frames.
			want: map[Cause]uint64{RXNoBuffer: 1200000, RXNICBuffer: 7, PHYErrors: 5, PauseTX: 40, PauseRX: 0,
				FECUncorrectable: 3, FECCorrected: 900},
			absent: []Cause{LinkDown},
		},
		{
			name: "i40e before the rename", driver: "i40e",
			facts: &ethtool.Facts{Stats: &ethtool.Stats{Driver: map[string]uint64{"port.rx_dropped": 12, "port.rx_crc_errors": 2,
				"port.illegal_bytes": 1, "port.link_xoff_tx": 9}}},
			want: map[Cause]uint64{RXNoBuffer: 12, PHYErrors: 3, PauseTX: 9},
		},
		{
			name: "i40e after the rename", driver: "i40e",
			facts: &ethtool.Facts{Stats: &ethtool.Stats{Driver: map[string]uint64{"port.rx_discards": 30, "rx_missed_errors": 4}}},
			want:  map[Cause]uint64{RXNoBuffer: 34},
		},
		{
			name: "cxgb4 buffer groups", driver: "cxgb4",
			facts: &ethtool.Facts{Stats: &ethtool.Stats{Driver: map[string]uint64{"rx_bg0_frames_dropped": 10, "rx_bg1_frames_dropped": 2,
				"rx_bg2_frames_trunc": 1, "rx_fcs_errors": 0, "tx_pause_frames": 6, "tx_frames_dropped": 99}}},
			want:   map[Cause]uint64{RXNICBuffer: 13, PHYErrors: 0, PauseTX: 6},
			absent: []Cause{RXNoBuffer},
		},
		{
			name: "unknown driver, generic names", driver: "ixgbe",
			facts: &ethtool.Facts{Stats: &ethtool.Stats{Driver: map[string]uint64{"rx_missed_errors": 8, "rx_crc_errors": 1}},
				LinkState: &ethtool.LinkState{DownEvents: u32(4)}},
			want: map[Cause]uint64{RXNoBuffer: 8, PHYErrors: 1, LinkDown: 4},
		},
	}
	for _, tt := range tests {
		c := FromFacts(tt.driver, tt.facts)
		for cause, want := range tt.want {
			if got, ok := c.Get(cause); !ok || got != want {
				t.Errorf("%s: %s = %d (present %v), want %d; sources %v", tt.name, cause, got, ok, want, c.ByCause[cause].Sources)
			}
		}
		for _, cause := range tt.absent {
			if _, ok := c.Get(cause); ok {
				t.Errorf("%s: %s present, want absent (no counter reports it)", tt.name, cause)
			}
		}
	}
	c := FromFacts("mlx5_core", tests[0].facts)
	if got := c.Describe(PHYErrors); got != "eth_mac.FrameCheckSequenceErrors 5" {
		t.Errorf("describe: %q", got)
	}
}

func TestDelta(t *testing.T) {
	before := Counters{ByCause: map[Cause]Count{
		RXNoBuffer: {Value: 100, Sources: map[string]uint64{"rx_out_of_buffer": 100}},
		PHYErrors:  {Value: 50, Sources: map[string]uint64{"rx_crc_errors_phy": 50}},
		PauseTX:    {Value: 1, Sources: map[string]uint64{"tx_pause_ctrl_phy": 1}},
	}}
	after := Counters{Driver: "mlx5_core", ByCause: map[Cause]Count{
		RXNoBuffer: {Value: 1200100, Sources: map[string]uint64{"rx_out_of_buffer": 1200100}},
		PHYErrors:  {Value: 3, Sources: map[string]uint64{"rx_crc_errors_phy": 3}}, // cleared in between
		PauseRX:    {Value: 9, Sources: map[string]uint64{"rx_pause_ctrl_phy": 9}},
	}}
	d := Delta(before, after)
	if v, _ := d.Get(RXNoBuffer); v != 1200000 {
		t.Errorf("rx_no_buffer delta %d", v)
	}
	if v, _ := d.Get(PHYErrors); v != 3 {
		t.Errorf("a counter that went backwards: delta %d, want its new value 3", v)
	}
	if _, ok := d.Get(PauseRX); ok {
		t.Error("a cause missing before has a delta")
	}
	if !d.Delta || d.Driver != "mlx5_core" {
		t.Errorf("%+v", d)
	}
}

// TestSnapshotVeth reads a real veth's counters in a private namespace.
func TestSnapshotVeth(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root (network namespaces); CI runs as root")
		}
		t.Skip("needs root (network namespaces)")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the namespace dies with the thread
		ns, err := netns.New()
		if err != nil {
			t.Error(err)
			return
		}
		defer ns.Close()
		la := netlink.NewLinkAttrs()
		la.Name = "lr-optics0"
		if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: "lr-optics1"}); err != nil {
			t.Error(err)
			return
		}
		c, err := Snapshot("lr-optics0")
		if err != nil || c.Driver != "veth" {
			t.Errorf("veth snapshot: %+v, %v", c, err)
		}
		if _, err := Snapshot("lr-nosuch0"); err == nil {
			t.Error("a missing interface gave counters")
		}
	}()
	<-done
}

func TestAddKernel(t *testing.T) {
	link := map[string]uint64{"rx_dropped": 7, "tx_dropped": 2, "rx_missed_errors": 1200, "rx_fifo_errors": 3,
		"rx_crc_errors": 4, "rx_frame_errors": 1}
	tests := []struct {
		name   string
		base   Counters
		k      Kernel
		want   map[Cause]uint64
		absent []Cause
	}{
		{
			// A veth: no parent device, so the hardware fields (which a
			// software device never updates) say nothing.
			name: "software device", k: Kernel{Link: link, QdiscDrops: u64(1234), QdiscKind: "tbf"},
			want:   map[Cause]uint64{RXDropped: 7, TXDropped: 2, QdiscDrops: 1234},
			absent: []Cause{RXNoBuffer, RXNICBuffer, PHYErrors},
		},
		{
			name: "hardware without driver counters", k: Kernel{Hardware: true, Link: link},
			want:   map[Cause]uint64{RXNoBuffer: 1200, RXNICBuffer: 3, PHYErrors: 5, RXDropped: 7, TXDropped: 2},
			absent: []Cause{QdiscDrops},
		},
		{
			// mlx5 counts its own rx_out_of_buffer: the kernel's
			// rx_missed_errors would count the same frames again.
			name: "the driver's counters win",
			base: FromFacts("mlx5_core", &ethtool.Facts{Stats: &ethtool.Stats{Driver: map[string]uint64{"rx_out_of_buffer": 99}}}),
			k:    Kernel{Hardware: true, Link: link},
			want: map[Cause]uint64{RXNoBuffer: 99, RXNICBuffer: 3, PHYErrors: 5},
		},
	}
	for _, tt := range tests {
		c := tt.base
		AddKernel(&c, tt.k)
		for cause, want := range tt.want {
			if got, ok := c.Get(cause); !ok || got != want {
				t.Errorf("%s: %s = %d (present %v), want %d; sources %v", tt.name, cause, got, ok, want, c.ByCause[cause].Sources)
			}
		}
		for _, cause := range tt.absent {
			if _, ok := c.Get(cause); ok {
				t.Errorf("%s: %s present, want absent", tt.name, cause)
			}
		}
	}
	c := Counters{}
	AddKernel(&c, Kernel{Link: link, QdiscDrops: u64(5)})
	if got := c.Describe(QdiscDrops); got != "qdisc.drops 5" {
		t.Errorf("qdisc source: %q", got)
	}
	if got := c.Describe(RXDropped); got != "link.rx_dropped 7" {
		t.Errorf("rx_dropped source: %q", got)
	}
}

func TestResultRoundTrip(t *testing.T) {
	d := Counters{Driver: "mlx5_core", Delta: true, ByCause: map[Cause]Count{
		RXNoBuffer: {Value: 1_200_000, Sources: map[string]uint64{"rx_out_of_buffer": 1_200_000}},
		PauseTX:    {Value: 0, Sources: map[string]uint64{"pause.tx_frames": 0}},
	}}
	r := ToResult("enp1s0f0np0", d)
	if r.Interface != "enp1s0f0np0" || r.Deltas["rx_no_buffer"] != 1_200_000 || r.Sources["rx_no_buffer"]["rx_out_of_buffer"] != 1_200_000 {
		t.Errorf("to result: %+v", r)
	}
	if v, ok := r.Deltas["pause_tx"]; !ok || v != 0 {
		t.Errorf("a cause read at zero must stay present: %v", r.Deltas)
	}
	if _, ok := r.Deltas["phy_errors"]; ok {
		t.Error("a cause not read became present")
	}
	back := FromResult(r)
	if v, _ := back.Get(RXNoBuffer); v != 1_200_000 || !back.Delta || back.Describe(RXNoBuffer) != "rx_out_of_buffer 1200000" {
		t.Errorf("back: %+v", back)
	}
	sum := Sum(back, FromResult(r), Counters{ByCause: map[Cause]Count{RXNoBuffer: {Value: 1, Sources: map[string]uint64{"rx_out_of_buffer": 1}}}})
	if v, _ := sum.Get(RXNoBuffer); v != 2_400_001 {
		t.Errorf("sum: %d", v)
	}
	if _, ok := sum.Get(PauseTX); ok {
		t.Error("a cause one run did not read is in the sum")
	}
}

func TestWords(t *testing.T) {
	for n, want := range map[uint64]string{0: "0", 9999: "9999", 10_000: "10 k", 45_300: "45.3 k", 1_200_000: "1.2 M", 3_400_000_000: "3.4 G"} {
		if got := Amount(n); got != want {
			t.Errorf("Amount(%d) = %q, want %q", n, got, want)
		}
	}
	d := Counters{ByCause: map[Cause]Count{RXNoBuffer: {Value: 1_200_000, Sources: map[string]uint64{"rx_out_of_buffer": 1_200_000, "rx_missed_errors": 0}}}}
	got := Clause("host b", "enp1s0f0np0", RXNoBuffer, 1_200_000, d.Grown(RXNoBuffer))
	if want := "host b's NIC enp1s0f0np0 dropped 1.2 M frames for lack of RX buffers (rx_out_of_buffer)"; got != want {
		t.Errorf("clause:\n got %q\nwant %q", got, want)
	}
	for _, c := range Causes {
		if _, ok := phrases[c]; !ok || c.Meaning() == string(c) {
			t.Errorf("cause %s has no words", c)
		}
	}
}

// TestSpanQdiscDrops drops packets on purpose — a tbf qdisc of 1 Mbit/s
// holding at most 3000 bytes on one end of a veth, flooded with UDP —
// and checks that a Span over the flood sees them as qdisc_drops, on a
// thread that entered a network namespace of its own (as a lab host's
// is), while a cause a veth cannot know stays absent.
func TestSpanQdiscDrops(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root (network namespaces); CI runs as root")
		}
		t.Skip("needs root (network namespaces)")
	}
	type outcome struct {
		clean, flood *result.NICDelta
		sent         int
		err          error
	}
	done := make(chan outcome, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the namespace dies with the thread
		var o outcome
		o.clean, o.flood, o.sent, o.err = qdiscFlood()
		done <- o
	}()
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.clean.NotRead != "" || o.flood.NotRead != "" {
		t.Fatalf("not read: %q %q", o.clean.NotRead, o.flood.NotRead)
	}
	for _, c := range []string{"qdisc_drops", "rx_dropped", "tx_dropped"} {
		if v, ok := o.clean.Deltas[c]; !ok || v != 0 {
			t.Errorf("idle link: %s = %d (present %v), want present and 0", c, v, ok)
		}
	}
	drops := o.flood.Deltas["qdisc_drops"]
	if drops == 0 || drops > uint64(o.sent) || o.flood.Sources["qdisc_drops"]["qdisc.drops"] != drops {
		t.Errorf("flood of %d datagrams through a 3000-byte tbf: qdisc_drops %d, sources %v", o.sent, drops, o.flood.Sources)
	}
	if _, ok := o.flood.Deltas["rx_no_buffer"]; ok {
		t.Error("a veth reported rx_no_buffer: its rx_missed_errors is a hardware counter it never updates")
	}
	if o.flood.Interface != "lr-cnt0" || o.flood.Driver != "veth" {
		t.Errorf("interface %q driver %q", o.flood.Interface, o.flood.Driver)
	}
}

// qdiscFlood runs on a locked thread: a namespace, a veth with a tiny
// tbf, a Span over an idle second and one over a UDP flood.
func qdiscFlood() (clean, flood *result.NICDelta, sent int, err error) {
	ns, err := netns.New()
	if err != nil {
		return nil, nil, 0, err
	}
	defer ns.Close()
	// No IPv6 on the new links: their router solicitations would meet
	// the tbf too, and the idle second must be idle. /proc/sys/net is
	// this thread's namespace's.
	if err := os.WriteFile("/proc/sys/net/ipv6/conf/default/disable_ipv6", []byte("1"), 0o644); err != nil {
		return nil, nil, 0, err
	}
	la := netlink.NewLinkAttrs()
	la.Name = "lr-cnt0"
	veth := &netlink.Veth{LinkAttrs: la, PeerName: "lr-cnt1"}
	if err := netlink.LinkAdd(veth); err != nil {
		return nil, nil, 0, err
	}
	l, err := netlink.LinkByName("lr-cnt0")
	if err != nil {
		return nil, nil, 0, err
	}
	peer, err := netlink.LinkByName("lr-cnt1")
	if err != nil {
		return nil, nil, 0, err
	}
	addr, _ := netlink.ParseAddr("198.18.200.1/29")
	if err := netlink.AddrAdd(l, addr); err != nil {
		return nil, nil, 0, err
	}
	tbf := &netlink.Tbf{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT},
		Rate: 125_000, Limit: 3000, Buffer: 1600}
	if err := netlink.QdiscAdd(tbf); err != nil {
		return nil, nil, 0, fmt.Errorf("tbf: %w", err)
	}
	for _, x := range []netlink.Link{l, peer} {
		if err := netlink.LinkSetUp(x); err != nil {
			return nil, nil, 0, err
		}
	}
	s := Begin("lr-cnt0")
	time.Sleep(200 * time.Millisecond)
	clean = s.End()
	c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(198, 18, 200, 7), Port: 9})
	if err != nil {
		return nil, nil, 0, err
	}
	defer c.Close()
	s = Begin("lr-cnt0")
	buf := make([]byte, 1000)
	for range 400 {
		if _, err := c.Write(buf); err == nil {
			sent++
		} else if !errors.Is(err, syscall.ENOBUFS) {
			return nil, nil, 0, err
		}
	}
	return clean, s.End(), 400, nil
}

// TestBounded: a reading that does not answer in time gives an error
// naming the wait, and the caller goes on.
func TestBounded(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	_, err := inThisNetns(50*time.Millisecond, func() (int, error) { <-release; return 1, nil })
	if err == nil || !strings.Contains(err.Error(), "no answer within 50ms") {
		t.Errorf("hung reading: %v", err)
	}
	v, err := inThisNetns(time.Second, func() (int, error) { return 7, nil })
	if v != 7 || err != nil {
		t.Errorf("%d %v", v, err)
	}
}

// TestRouteIfaceLoopback: the route to this host's loopback address
// leaves through lo, and lo's counters are the kernel's alone.
func TestRouteIfaceLoopback(t *testing.T) {
	got, err := RouteIface(netip.MustParseAddr("127.0.0.1"))
	if err != nil || got != "lo" {
		t.Fatalf("route to 127.0.0.1: %q %v", got, err)
	}
	d := Begin(got).End()
	if d.NotRead != "" || d.Interface != "lo" {
		t.Fatalf("lo: %+v", d)
	}
	for _, c := range []string{"rx_dropped", "tx_dropped", "qdisc_drops"} {
		if _, ok := d.Deltas[c]; !ok {
			t.Errorf("lo: %s not read: %v", c, d.Deltas)
		}
	}
	if d := Begin("").End(); d.NotRead == "" {
		t.Error("an unknown interface was read")
	}
	if d := Begin("lr-nosuch9").End(); !strings.Contains(d.NotRead, "lr-nosuch9") {
		t.Errorf("a missing interface: %q", d.NotRead)
	}
}
