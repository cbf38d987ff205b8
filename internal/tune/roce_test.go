package tune

import (
	"encoding/binary"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/linerate/linerate/internal/dcb"
	"github.com/linerate/linerate/internal/testutil"
)

// fakeDCB is DCB in memory, as mlx5 answers: no trust table (unless
// trustTable), DSCP trust while the APP table holds a DSCP entry.
type fakeDCB struct {
	mu         sync.Mutex
	c          map[string]*dcb.IEEE
	trustTable bool
	calls      []string
}

func (f *fakeDCB) Get(iface string) (*dcb.IEEE, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := *f.c[iface]
	c.App = slices.Clone(c.App)
	if c.PFC != nil {
		p := *c.PFC
		p.Enabled = slices.Clone(p.Enabled)
		c.PFC = &p
	}
	c.Trust = slices.Clone(c.Trust)
	if f.trustTable && c.Trust == nil {
		c.Trust = []string{}
	}
	return &c, nil
}

func (f *fakeDCB) SetPFC(iface string, cur *dcb.PFC, enabled []int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "pfc")
	p := *f.c[iface].PFC
	p.Enabled = slices.Clone(enabled)
	f.c[iface].PFC = &p
	return nil
}

func (f *fakeDCB) SetTrust(iface string, selectors []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "trust "+strings.Join(selectors, ","))
	f.c[iface].Trust = slices.Clone(selectors)
	return nil
}

func (f *fakeDCB) AddApp(iface string, apps []dcb.App) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "add")
	f.c[iface].App = append(f.c[iface].App, apps...)
	return nil
}

func (f *fakeDCB) DelApp(iface string, apps []dcb.App) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "del")
	f.c[iface].App = slices.DeleteFunc(f.c[iface].App, func(a dcb.App) bool { return slices.Contains(apps, a) })
	return nil
}

const roceIface = "enp51s0np0"

// TestRoCEPlanNeedsAskingByName: without --roce the RoCE findings are
// notes; with it, the plan answers each.
func TestRoCEPlanNeedsAskingByName(t *testing.T) {
	root := hostTree("roce-pfc-off")
	p := plan(t, root, nil, Options{})
	for _, k := range []Kind{KindPFC, KindTrust, KindECN, KindMRRS} {
		if len(changesOf(p, k)) > 0 {
			t.Errorf("a %s change without --roce", k)
		}
	}
	if !slices.ContainsFunc(p.Notes, func(n Note) bool {
		return n.Finding == "roce.pfc_off" && strings.Contains(n.Text, "left alone without --roce")
	}) {
		t.Errorf("no note for roce.pfc_off: %+v", p.Notes)
	}
	p = plan(t, root, nil, Options{RoCE: true})
	pfc := changesOf(p, KindPFC)
	if len(pfc) != 1 || pfc[0].Before != "none" || pfc[0].After != "3" || pfc[0].Finding != "roce.pfc_off" || !pfc[0].LiveOnly ||
		pfc[0].Command != "dcb pfc set dev enp51s0np0 prio-pfc 3:on" {
		t.Errorf("PFC %+v", pfc)
	}
	ecn := changesOf(p, KindECN)
	if len(ecn) != 2 || ecn[0].Path != "/sys/class/net/enp51s0np0/ecn/roce_np/enable/3" || ecn[1].Target != "enp51s0np0 roce_rp priority 3" || ecn[0].LiveOnly {
		t.Errorf("ECN %+v", ecn)
	}
	if len(changesOf(p, KindTrust)) != 0 || len(changesOf(p, KindMRRS)) != 0 {
		t.Errorf("trust or MRRS changed on a DSCP-trusting host with MRRS 4096: %+v", p.Changes)
	}
	if slices.ContainsFunc(p.Notes, func(n Note) bool { return strings.HasPrefix(n.Finding, "roce.") }) {
		t.Errorf("notes for answered findings: %+v", p.Notes)
	}

	// PCP trust: DSCP 26 goes to the priority PFC is already on.
	tr := changesOf(plan(t, hostTree("roce-trust-pcp"), nil, Options{RoCE: true}), KindTrust)
	if len(tr) != 1 || tr[0].Before != "pcp" || tr[0].After != "dscp 26:3" || tr[0].Finding != "roce.trust_mismatch" {
		t.Errorf("trust %+v", tr)
	}
	// --roce-priority 5 moves everything to 5.
	p = plan(t, hostTree("roce-healthy"), nil, Options{RoCE: true, RoCEPriority: ptr(5)})
	if tr := changesOf(p, KindTrust); len(tr) != 1 || tr[0].After != "dscp 26:5" || tr[0].Before != "dscp 26:3" {
		t.Errorf("trust to 5 %+v", tr)
	}
	if pfc := changesOf(p, KindPFC); len(pfc) != 1 || pfc[0].After != "3,5" {
		t.Errorf("PFC to 5 %+v", pfc)
	}
	// A healthy host needs nothing.
	p = plan(t, hostTree("roce-healthy"), nil, Options{RoCE: true})
	for _, k := range []Kind{KindPFC, KindTrust, KindECN, KindMRRS} {
		if len(changesOf(p, k)) > 0 {
			t.Errorf("healthy host: %s %+v", k, changesOf(p, k))
		}
	}
}

func ptr(v int) *int { return &v }

// TestRoCEApplyRevertTree applies --roce to copies of trees: ECN switches
// and MRRS change in the tree's files (MRRS in Device Control bits 14:12
// only), PFC is skipped (it needs the live NIC), and revert puts every
// byte back.
func TestRoCEApplyRevertTree(t *testing.T) {
	for _, name := range []string{"roce-pfc-off", "pcie-mrrs-512"} {
		t.Run(name, func(t *testing.T) {
			root := copyTree(t, name)
			orig := testutil.TreeState(t, root)
			p := plan(t, root, nil, Options{RoCE: true})
			var restarts []string
			tg := treeTarget(t, root, &restarts)
			dir := testutil.Scratch(t)
			res, err := Apply(p, tg, ApplyOptions{JournalDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			cfg := "sys/devices/pci0000:30/0000:30:02.0/0000:31:00.0/0000:32:00.0/0000:33:00.0/config"
			switch name {
			case "roce-pfc-off":
				for _, side := range []string{"np", "rp"} {
					if got := readFile(t, root, "sys/class/net/enp51s0np0/ecn/roce_"+side+"/enable/3"); got != "1\n" {
						t.Errorf("roce_%s/3 = %q", side, got)
					}
				}
				if s := res.Steps[slices.IndexFunc(res.Steps, func(s StepResult) bool { return s.Kind == KindPFC })]; s.Phase != PhaseSkipped {
					t.Errorf("PFC below a tree: %+v", s)
				}
			case "pcie-mrrs-512":
				before, after := []byte(orig[cfg][len("file:"):]), []byte(readFile(t, root, cfg))
				if len(before) != 4096 || len(after) != 4096 {
					t.Fatalf("config is %d bytes, was %d", len(after), len(before))
				}
				for i := range before {
					if before[i] != after[i] && i != 0x69 {
						t.Errorf("config byte %#x changed", i)
					}
				}
				ctl := binary.LittleEndian.Uint16(after[0x68:])
				if 128<<((ctl>>12)&7) != 4096 || ctl&^0x7000 != binary.LittleEndian.Uint16(before[0x68:])&^0x7000 {
					t.Errorf("DevCtl %#x", ctl)
				}
			}
			j, err := Load(dir, res.Journal)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Revert(j, tg, RevertOptions{NetNS: p.NetNS}); err != nil {
				t.Fatal(err)
			}
			sameTree(t, orig, testutil.TreeState(t, root))
		})
	}
}

// TestRoCEApplyRevertLive applies PFC and trust through a fake DCB the way
// mlx5 answers (no trust table: a DSCP APP entry turns DSCP trust on) and
// reverts them to exactly the prior configuration.
func TestRoCEApplyRevertLive(t *testing.T) {
	for _, table := range []bool{false, true} {
		root := copyTree(t, "roce-trust-pcp")
		p := plan(t, root, newFakeDevices(), Options{RoCE: true, RoCEPriority: ptr(4)})
		orig := &dcb.IEEE{PFC: &dcb.PFC{Enabled: []int{3}, Cap: 8}, App: []dcb.App{}}
		if table {
			orig.Trust = []string{"pcp"}
		}
		f := &fakeDCB{c: map[string]*dcb.IEEE{roceIface: orig}, trustTable: table}
		fs, _ := open(t, root)
		tg := &Target{FS: fs, Devices: newFakeDevices(), DCB: f}
		dir := testutil.Scratch(t)
		res, err := Apply(p, tg, ApplyOptions{JournalDir: dir})
		if err != nil {
			t.Fatalf("table %v: %v\n%+v", table, err, res)
		}
		got, _ := f.Get(roceIface)
		if !slices.Equal(got.PFC.Enabled, []int{3, 4}) || trustValue(got) != "dscp 26:4" {
			t.Errorf("table %v: after apply PFC %v trust %s (calls %q)", table, got.PFC.Enabled, trustValue(got), f.calls)
		}
		j, err := Load(dir, res.Journal)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Revert(j, tg, RevertOptions{NetNS: p.NetNS}); err != nil {
			t.Fatal(err)
		}
		got, _ = f.Get(roceIface)
		if !slices.Equal(got.PFC.Enabled, []int{3}) || trustValue(got) != "pcp" || len(got.App) != 0 {
			t.Errorf("table %v: after revert %+v (calls %q)", table, got, f.calls)
		}
	}
}

func TestTrustValue(t *testing.T) {
	for want, c := range map[string]*dcb.IEEE{
		"pcp":       {App: []dcb.App{}},
		"dscp":      {App: []dcb.App{{Selector: "dscp", Protocol: 48, Priority: 6}}},
		"dscp 26:5": {App: []dcb.App{{Selector: "dscp", Protocol: 26, Priority: 5}}},
		"none":      {Trust: []string{}},
		"pcp 26:3":  {Trust: []string{"pcp", "dscp"}, App: []dcb.App{{Selector: "dscp", Protocol: 26, Priority: 3}}},
	} {
		if got := trustValue(c); got != strings.TrimSpace(want) {
			t.Errorf("trustValue(%+v) = %q, want %q", c, got, want)
		}
	}
	for v, ok := range map[string]bool{"3": true, "3,4": true, "none": true, "0-7": true, "8": false, "x": false} {
		if _, err := parsePFC(v); (err == nil) != ok {
			t.Errorf("parsePFC(%q): %v", v, err)
		}
	}
}

// TestRoCEJournalPaths: a journal whose RoCE steps name anything but
// their kind's files is refused.
func TestRoCEJournalPaths(t *testing.T) {
	ok := []Change{
		{Kind: KindECN, Target: "eth0 roce_np priority 3", Interface: "eth0", Path: "/sys/class/net/eth0/ecn/roce_np/enable/3"},
		{Kind: KindMRRS, Target: "0000:33:00.0", Interface: "eth0", Path: "/sys/bus/pci/devices/0000:33:00.0/config"},
		{Kind: KindPFC, Target: "eth0", Interface: "eth0"},
		{Kind: KindTrust, Target: "eth0", Interface: "eth0"},
	}
	for _, c := range ok {
		if err := checkChange(&c); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	bad := []Change{
		{Kind: KindECN, Target: "eth0 roce_np priority 3", Interface: "eth0", Path: "/sys/class/net/eth0/ecn/roce_np/enable/8"},
		{Kind: KindECN, Target: "eth0 roce_np priority 3", Interface: "eth0", Path: "/sys/class/net/eth0/../../../etc/passwd"},
		{Kind: KindECN, Target: "eth1 roce_np priority 3", Interface: "eth0", Path: "/sys/class/net/eth0/ecn/roce_np/enable/3"},
		{Kind: KindMRRS, Target: "0000:33:00.0", Path: "/sys/bus/pci/devices/0000:33:00.0/rom"},
		{Kind: KindMRRS, Target: "0000:34:00.0", Path: "/sys/bus/pci/devices/0000:33:00.0/config"},
		{Kind: KindPFC, Target: "eth0", Interface: "eth0", Path: "/etc/passwd"},
		{Kind: KindTrust, Target: "a/b", Interface: "a/b"},
	}
	for _, c := range bad {
		if err := checkChange(&c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
