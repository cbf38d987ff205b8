package tune

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/hostfs"
)

func TestSettings(t *testing.T) {
	for _, bad := range []string{"rx 1 tx", "rx x", "rx -1", "rx 4294967296"} {
		if s, err := parseSettings(bad); err == nil {
			t.Errorf("parseSettings(%q) = %v; want an error", bad, s)
		}
	}
	if _, err := parseSettings("rx x"); err == nil || !strings.Contains(err.Error(), "x is not a count") {
		t.Errorf("not a count: %v", err)
	}
	s, err := parseSettings("rx 1 tx 1")
	if err != nil {
		t.Fatal(err)
	}
	m := s.merge(settings{{"tx", 2}, {"combined", 3}})
	if m.String() != "rx 1 tx 2 combined 3" || s.String() != "rx 1 tx 1" {
		t.Errorf("merge = %q (s now %q)", m, s)
	}
	if !m.equal(settings{{"combined", 3}, {"rx", 1}, {"tx", 2}}) || m.equal(s) || m.equal(settings{{"rx", 1}, {"tx", 2}, {"combined", 4}}) {
		t.Error("equal compares by name and value")
	}
	if v, ok := m.get("other"); ok || v != 0 {
		t.Errorf("get(other) = %d, %v", v, ok)
	}
	c := Channels{RX: 1, TX: 1, MaxRX: 4, MaxTX: 4}.with(settings{{"rx", 2}, {"combined", 0}})
	if c.RX != 2 || c.TX != 1 || c.MaxRX != 4 {
		t.Errorf("with = %+v", c)
	}
	r := Rings{RX: 512, TX: 512, MaxRX: 4096}.with(settings{{"tx", 1024}})
	if r.RX != 512 || r.TX != 1024 || r.settings().String() != "rx 512 rx-mini 0 rx-jumbo 0 tx 1024" {
		t.Errorf("rings with = %+v", r)
	}
}

// TestSweepTemps: a hidden temporary journal older than a minute (left by
// a process killed while creating one) is removed; a fresh one, which a
// running tune may be writing, and anything else stay.
func TestSweepTemps(t *testing.T) {
	dir := journalDir(t)
	old := filepath.Join(dir, ".20250101T000000.000000Z"+journalExt+".tmp")
	fresh := filepath.Join(dir, ".20250101T000001.000000Z"+journalExt+".tmp")
	visible := filepath.Join(dir, "x"+journalExt+".tmp")
	other := filepath.Join(dir, ".notes")
	for _, p := range []string{old, fresh, visible, other} {
		if err := os.WriteFile(p, []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-2 * time.Minute)
	for _, p := range []string{old, visible, other} {
		os.Chtimes(p, past, past)
	}
	sweepTemps(dir)
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("a stale temporary journal stays: %v", err)
	}
	for _, p := range []string{fresh, visible, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}
}

// TestActive: the journal in effect is the newest applied one of the
// namespace; none after its revert, none in another namespace.
func TestActive(t *testing.T) {
	a := applySeed000(t)
	j, err := Active(a.dir, a.p.NetNS)
	if err != nil || j == nil || j.ID != a.res.Journal {
		t.Fatalf("Active = %+v, %v; want %s", j, err, a.res.Journal)
	}
	if j, err := Active(a.dir, a.p.NetNS+1); err != nil || j != nil {
		t.Errorf("another namespace: %+v, %v", j, err)
	}
	if _, err := Revert(j, a.tg, RevertOptions{NetNS: a.p.NetNS}); err != nil {
		t.Fatal(err)
	}
	if j, err := Active(a.dir, a.p.NetNS); err != nil || j != nil {
		t.Errorf("after revert: %+v, %v", j, err)
	}
	if _, err := Active(filepath.Join(a.dir, "nosuch"), a.p.NetNS); err != nil {
		t.Errorf("no directory: %v (no journal yet is not an error)", err)
	}
}

// TestReadOnlySysctl: only the live kernel's file modes count: a file
// offered for reading only (0444) is read-only, a tree's file never is.
func TestReadOnlySysctl(t *testing.T) {
	live := &planner{in: Input{FS: hostfs.Live()}}
	if !live.readOnly("proc/version") {
		t.Error("/proc/version (0444) is not read-only")
	}
	if live.readOnly("proc/sys/net/ipv4/tcp_rmem") {
		t.Error("tcp_rmem (0644) is read-only")
	}
	if live.readOnly("proc/nosuch") {
		t.Error("a missing file is read-only")
	}
	root := copyTree(t, "xeon-xl710-gen2-x4")
	os.Chmod(filepath.Join(root, "proc/sys/net/core/rmem_max"), 0o444)
	fs, _ := open(t, root)
	if (&planner{in: Input{FS: fs}}).readOnly("proc/sys/net/core/rmem_max") {
		t.Error("a tree's file mode is taken for the kernel's")
	}
}

// TestPlanIRQOnAppCPU: with --app-cpus 7 on seed 000's host, the IRQs on
// CPU 7 leave it (their move answers irq.on_app_cpu); IRQ 111, on CPU 3 of
// the other L3 domain, answers irq.spans_l3_domains; the rest stay.
func TestPlanIRQOnAppCPU(t *testing.T) {
	p := plan(t, hostTree("ryzen-9900x-cx5-x4"), nil, Options{AppCPUs: []int{7}})
	got := map[string]string{}
	for _, c := range changesOf(p, KindIRQ) {
		got[c.Target] = c.Finding
	}
	want := map[string]string{"irq 99": "irq.on_app_cpu", "irq 113": "irq.on_app_cpu", "irq 118": "irq.on_app_cpu", "irq 111": "irq.spans_l3_domains"}
	if len(got) != len(want) {
		t.Errorf("moves %v; want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s answers %q; want %q", k, got[k], v)
		}
	}
}

// TestPlanChannelsFromTreeFacts: below a captured tree, a queues.too_few
// change takes the NIC's channels from the tree's ethtool facts: combined
// where the driver has them, RX and TX apart where it has only those,
// capped at the maximum; a driver offering neither leaves the queues with
// a note; without facts the sysfs count stands in and the note says the
// live plan caps it.
func TestPlanChannelsFromTreeFacts(t *testing.T) {
	for _, tc := range []struct {
		name          string
		ch            *ethtool.Channels
		before, after string
		note          string
	}{
		{"combined", &ethtool.Channels{Combined: u(1), CombinedMax: u(63)}, "combined 1", "combined 8", ""},
		{"combined capped", &ethtool.Channels{Combined: u(1), CombinedMax: u(4)}, "combined 1", "combined 4", ""},
		{"rx and tx", &ethtool.Channels{RX: u(1), TX: u(1), RXMax: u(4), TXMax: u(4)}, "rx 1 tx 1", "rx 4 tx 4", ""},
		{"rx only", &ethtool.Channels{RX: u(1), RXMax: u(4)}, "", "", "already has the most queues"},
		{"no facts", nil, "combined 1", "combined 8", "the live plan caps 8 at it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, inv := open(t, hostTree("cx4lx-sfp28-a2h"))
			n := &inv.NICs[0]
			n.Queues.RX, n.Queues.TX, n.Channels = 1, 1, tc.ch
			p, err := NewPlan(Input{FS: fs, Inventory: inv}, Options{Ifaces: []string{n.Interface}})
			if err != nil {
				t.Fatal(err)
			}
			c := changesOf(p, KindChannels)
			if tc.after == "" {
				if len(c) != 0 {
					t.Errorf("changes %+v; want none", c)
				}
			} else if len(c) != 1 || c[0].Before != tc.before || c[0].After != tc.after || c[0].Finding != "queues.too_few" || !c[0].LiveOnly {
				t.Errorf("changes %+v; want %s → %s", c, tc.before, tc.after)
			}
			if tc.note != "" && !hasNote(p, "queues.too_few", tc.note) {
				t.Errorf("no note %q: %+v", tc.note, p.Notes)
			}
		})
	}
	// Live, a driver that cannot say its channels leaves them alone.
	dev := newFakeDevices()
	fs, inv := open(t, hostTree("cx4lx-sfp28-a2h"))
	inv.NICs[0].Queues.RX = 1
	p, err := NewPlan(Input{FS: fs, Inventory: inv, Devices: dev}, Options{Ifaces: []string{inv.NICs[0].Interface}})
	if err != nil {
		t.Fatal(err)
	}
	if len(changesOf(p, KindChannels)) != 0 || !hasNote(p, "queues.too_few", "queues left alone") {
		t.Errorf("channels unreadable: %+v %+v", changesOf(p, KindChannels), p.Notes)
	}
}

func u(v uint32) *uint32 { return &v }

// TestPlanUnreadableSysctls: a buffer sysctl that is empty, or cannot be
// read, is left alone with a note saying which and why.
func TestPlanUnreadableSysctls(t *testing.T) {
	root := copyTree(t, "xeon-xl710-gen2-x4")
	writeFile(t, root, "proc/sys/net/core/rmem_max", "")
	wmem := filepath.Join(root, "proc/sys/net/ipv4/tcp_wmem")
	os.Remove(wmem)
	os.Mkdir(wmem, 0o755)
	p := plan(t, root, nil, Options{})
	if !hasNote(p, "sysctl.socket_buffers_small", "net.core.rmem_max is empty: skipped") {
		t.Errorf("empty rmem_max: %+v", p.Notes)
	}
	if !hasNote(p, "sysctl.socket_buffers_small", "net.ipv4.tcp_wmem cannot be read (") {
		t.Errorf("unreadable tcp_wmem: %+v", p.Notes)
	}
	for _, c := range changesOf(p, KindSysctl) {
		if c.Target == "net.core.rmem_max" || c.Target == "net.ipv4.tcp_wmem" {
			t.Errorf("a change to an unreadable sysctl: %+v", c)
		}
	}
	if c := change(t, p, "net.ipv4.tcp_rmem"); c.After != "4096 87380 16777216" {
		t.Errorf("tcp_rmem: %+v", c)
	}
}

// TestSameCPUs: a written IRQ affinity is verified as a CPU set, so the
// kernel's "7-8" reads back as the "7,8" written; a list that does not
// parse falls back to comparing its fields.
func TestSameCPUs(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"7-8", "7,8", true},
		{"7-8\n", " 7,8", true},
		{"0-3,8", "0,1,2,3,8", true},
		{"7-8", "7,9", false},
		{"7-8", "x", false}, // one side unparsable: fields differ
		{"x y", "x  y", true},
		{"x", "y", false},
	} {
		if got := sameCPUs(tt.a, tt.b); got != tt.want {
			t.Errorf("sameCPUs(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
