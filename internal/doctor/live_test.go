package doctor

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/hostfs"
)

// TestLiveTree: on a captured tree Live reads what the tree holds (its
// report is the one inventory and Diagnose give), asks no live source, and
// reads ethtool facts through a caller's reader when given one: for every
// PCI NIC and for the virtual interfaces named, each seen by Read.
func TestLiveTree(t *testing.T) {
	fs, err := hostfs.New(filepath.Join(hostsDir(), "t6-cwdm4-healthy"))
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	opts := Options{Ifaces: []string{"ens5f4", "docker0"}}
	var unread []string
	x, err := Live(fs, LiveOptions{Options: opts, Unread: func(s string, err error) { unread = append(unread, s) }})
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(diagnoseTree(t, "t6-cwdm4-healthy", opts))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(x.Report); string(got) != string(want) || x.Netdev != nil || len(unread) > 0 {
		t.Errorf("Live on a tree: report differs %v, netdev %v, unread %v", string(got) != string(want), x.Netdev, unread)
	}
	if n := x.Report.NICs[0]; n.Interface != "ens5f4" || n.Transceiver == nil {
		t.Fatalf("the tree's ethtool facts were not read: %+v", n)
	}

	var asked, seen []string
	_, err = Live(fs, LiveOptions{Options: opts,
		Ethtool: func(iface string) *ethtool.Facts { asked = append(asked, iface); return nil },
		Read:    func(iface string, f *ethtool.Facts) { seen = append(seen, iface) }})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(asked)
	if !slices.Equal(asked, []string{"docker0", "ens5f4", "ens5f4d1"}) || !slices.Equal(asked, sortedCopy(seen)) {
		t.Errorf("ethtool facts asked for %v, seen %v; want the PCI NICs and the virtual interface named", asked, seen)
	}
	if _, err := Live(fs, LiveOptions{Options: Options{Ifaces: []string{"nosuch0"}}}); err == nil {
		t.Error("an interface that does not exist was diagnosed")
	}
}

// TestLiveHost: on this host Live asks rtnetlink and the ethtool family
// (or says which it could not), and its report of loopback, named, is
// the one LiveReport gives.
func TestLiveHost(t *testing.T) {
	fs := hostfs.Live()
	defer fs.Close()
	var unread []string
	x, err := Live(fs, LiveOptions{Options: Options{Ifaces: []string{"lo"}}, Unread: func(s string, err error) {
		if err == nil {
			t.Errorf("%s unread without a reason", s)
		}
		unread = append(unread, s)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if x.Netdev == nil && !slices.Contains(unread, SourceNetlink) {
		t.Error("no rtnetlink facts, and no word why")
	}
	if len(x.Report.NICs) != 1 || x.Report.NICs[0].Interface != "lo" {
		t.Fatalf("NICs %+v, want lo alone", x.Report.NICs)
	}
	doc, err := LiveReport("lo")
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(doc, &rep); err != nil || len(rep.NICs) != 1 || rep.NICs[0].Interface != "lo" || rep.Schema != Schema {
		t.Errorf("LiveReport(lo): %v %+v", err, rep.NICs)
	}
	if NoEthtool("lo") != nil {
		t.Error("NoEthtool read something")
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}
