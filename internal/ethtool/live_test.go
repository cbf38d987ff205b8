package ethtool

import (
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/linerate/linerate/internal/testbin"
)

// TestLiveVeth runs the real netlink path against the kernel: a veth pair
// with four queues answers link modes, channels and driver counters, has
// no module (no module data, cleanly), and takes a channel change that
// reads back and is restored.
func TestLiveVeth(t *testing.T) {
	testbin.NeedRoot(t, "network namespaces")
	testbin.InNewNetns(t, func() {
		la := netlink.NewLinkAttrs()
		la.Name, la.NumTxQueues, la.NumRxQueues = "lr-optics0", 4, 4
		if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: "lr-optics1"}); err != nil {
			t.Error(err)
			return
		}
		c, err := Open()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		f := Collect(c, "lr-optics0")
		if lm := f.LinkModes; lm == nil || lm.SpeedMbps == nil || *lm.SpeedMbps != 10000 || lm.Duplex != "full" || lm.Source != "netlink" {
			t.Errorf("veth link modes %+v (veth reports 10000 Mb/s full duplex)", lm)
		}
		if ch := f.Channels; ch == nil || ch.RXMax == nil || *ch.RXMax != 4 || *ch.RX != 4 || *ch.TX != 4 || ch.Combined != nil {
			t.Errorf("veth channels %+v", ch)
		}
		if f.Stats == nil || f.Stats.Driver == nil {
			t.Errorf("veth driver counters missing: %+v (not read: %v)", f.Stats, f.NotRead)
		} else if _, ok := f.Stats.Driver["peer_ifindex"]; !ok {
			t.Errorf("veth counters lack peer_ifindex: %v", f.Stats.Driver)
		}
		if f.ModuleError != "EOPNOTSUPP" || !strings.HasPrefix(f.NotRead[FactModule], "no module data") || f.Module != nil {
			t.Errorf("veth module: error %q, note %q", f.ModuleError, f.NotRead[FactModule])
		}
		if f.FEC != nil || !strings.Contains(f.NotRead[FactFEC], "EOPNOTSUPP") {
			t.Errorf("veth FEC: %+v, %q", f.FEC, f.NotRead[FactFEC])
		}
		if f.LinkState == nil || f.LinkState.Link == nil || *f.LinkState.Link {
			t.Errorf("veth link state (down: the pair is not up) %+v", f.LinkState)
		}
		// What a snapshot of it would hold follows docs/schema/.
		files, err := f.Files()
		if err != nil {
			t.Error(err)
		}
		for _, err := range validateFiles("live veth", files, schemas(t)) {
			t.Error(err)
		}

		// Set, read back, restore.
		if err := c.SetChannels("lr-optics0", ChannelCounts{RX: ptr[uint32](2), TX: ptr[uint32](3)}); err != nil {
			t.Error(err)
			return
		}
		ch, err := c.Channels("lr-optics0")
		if err != nil || *ch.RX != 2 || *ch.TX != 3 {
			t.Errorf("after setting rx 2 tx 3: %+v, %v", ch, err)
		}
		if err := c.SetChannels("lr-optics0", ChannelCounts{RX: ptr[uint32](4), TX: ptr[uint32](4)}); err != nil {
			t.Error(err)
		}
		if ch, err = c.Channels("lr-optics0"); err != nil || *ch.RX != 4 || *ch.TX != 4 {
			t.Errorf("after restoring: %+v, %v", ch, err)
		}
		// The kernel refuses more than the maximum, with its own message.
		err = c.SetChannels("lr-optics0", ChannelCounts{RX: ptr[uint32](64)})
		if Errno(err) == 0 || !strings.Contains(err.Error(), "CHANNELS_SET lr-optics0") {
			t.Errorf("64 RX channels on a 4-queue veth: %v", err)
		}
	})
}

// TestLinkModeTable checks the built-in names against the running
// kernel's ETH_SS_LINK_MODES string set (no root needed).
func TestLinkModeTable(t *testing.T) {
	c, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := c.LinkModeNames()
	if err != nil {
		t.Fatalf("STRSET_GET: %v", err)
	}
	if len(m) < 100 {
		t.Fatalf("the kernel named only %d link modes", len(m))
	}
	for i, want := range m {
		if i < len(linkModeNames) && linkModeNames[i] != want {
			t.Errorf("bit %d: table %q, kernel %q", i, linkModeNames[i], want)
		}
	}
}
