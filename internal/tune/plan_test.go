package tune

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/hostfs"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/termui"
)

func changesOf(p *Plan, k Kind) []Change {
	var out []Change
	for _, c := range p.Changes {
		if c.Kind == k {
			out = append(out, c)
		}
	}
	return out
}

func change(t *testing.T, p *Plan, target string) Change {
	t.Helper()
	for _, c := range p.Changes {
		if c.Target == target {
			return c
		}
	}
	t.Fatalf("no change of %s in the plan", target)
	return Change{}
}

func hasNote(p *Plan, finding, text string) bool {
	return slices.ContainsFunc(p.Notes, func(n Note) bool {
		return (finding == "" || n.Finding == finding) && strings.Contains(n.Text, text)
	})
}

// irqCPUs returns the CPU each planned IRQ change moves its IRQ to.
func irqTargets(t *testing.T, p *Plan) map[int]int {
	t.Helper()
	out := map[int]int{}
	for _, c := range changesOf(p, KindIRQ) {
		irq, err := strconv.Atoi(strings.TrimPrefix(c.Target, "irq "))
		if err != nil {
			t.Fatal(err)
		}
		cpu, err := strconv.Atoi(c.After)
		if err != nil {
			t.Fatal(err)
		}
		out[irq] = cpu
	}
	return out
}

// TestPlanRyzenX4 checks the plan for the 100 GbE home lab whose
// ConnectX-5 trained at x4 against what its owner did by hand: the application on CPU 6, the IRQs on 7-11. Twelve
// of the port's 13 IRQs are there already (7: 99, 113, 118; 8: 109, 114,
// 119; 9: 110, 115; 10: 98, 116; 11: 112, 117) and stay; IRQ 111, on CPU
// 3, moves to 9, the lowest of the CPUs holding the fewest (the
// walkthrough's D3: the plan used to move all 13).
func TestPlanRyzenX4(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"app-cpus 6", Options{AppCPUs: []int{6}}},
		// Without --app-cpus: the L3 domain most IRQs already use (6-11),
		// its first core for the application.
		{"no app-cpus", Options{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := plan(t, hostTree("ryzen-9900x-cx5-x4"), nil, tc.opts)
			got := irqTargets(t, p)
			if len(got) != 1 || got[111] != 9 {
				t.Errorf("moves IRQs %v, want only 111 → 9", got)
			}
			if c := change(t, p, "irq 111"); c.Before != "3" || c.After != "9" {
				t.Errorf("irq 111: %+v", c)
			}
			if len(p.Placements) != 1 || !slices.Equal(p.Placements[0].AppCPUs, []int{6}) || !slices.Equal(p.Placements[0].IRQCPUs, cpulist.MustParse("7-11")) {
				t.Errorf("placements %+v, want application on 6 and IRQs on 7-11", p.Placements)
			}
			for _, c := range changesOf(p, KindIRQ) {
				if c.Interface != "enp1s0f0np0" || c.Finding != "irq.spans_l3_domains" ||
					c.Command != "echo "+c.After+" > /proc/irq/"+strings.TrimPrefix(c.Target, "irq ")+"/smp_affinity_list" {
					t.Errorf("IRQ change %+v", c)
				}
			}
			for _, key := range []string{"net.core.rmem_max", "net.core.wmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"} {
				c := change(t, p, key)
				if !strings.HasSuffix(c.After, "33554432") || c.Finding != "sysctl.socket_buffers_small" {
					t.Errorf("%s: %+v, want its maximum raised to 32 MiB (2 × 100 Gbit/s × 1 ms)", key, c)
				}
			}
			if c := change(t, p, "net.ipv4.tcp_rmem"); c.Before != "4096 131072 6291456" || c.After != "4096 131072 33554432" {
				t.Errorf("tcp_rmem %q → %q: only the maximum may change", c.Before, c.After)
			}
			if n := len(changesOf(p, KindGovernor)); n != 12 {
				t.Errorf("%d governor changes, want 12 (node 0: CPUs 0-11)", n)
			}
			if len(changesOf(p, KindMTU))+len(changesOf(p, KindChannels)) != 0 {
				t.Error("MTU 9000 and 12 queues need no change")
			}
			// irqbalance runs, but the tree has no configuration file to edit.
			if !hasNote(p, "irqbalance.running", "--banirq=98") || len(changesOf(p, KindIRQBalance)) != 0 {
				t.Errorf("irqbalance: want a note naming the bans, no change; notes %+v", p.Notes)
			}
			if !hasNote(p, "", "enp1s0f1np1 is down: left alone") {
				t.Errorf("the down port is not reported as left alone: %+v", p.Notes)
			}
			for _, c := range p.Changes {
				if c.Interface == "enp1s0f1np1" {
					t.Errorf("a change for the down port: %+v", c)
				}
			}
		})
	}
}

// TestPlanXL710Gen2 checks the XL710 40 GbE host in a Gen2 x4 slot: buffers raised, 8 queues, MTU as
// advice, IRQs moved to NUMA node 1 (10-19,30-39).
func TestPlanXL710Gen2(t *testing.T) {
	p := plan(t, hostTree("xeon-xl710-gen2-x4"), nil, Options{})
	for _, key := range []string{"net.core.rmem_max", "net.core.wmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"} {
		if c := change(t, p, key); !strings.HasSuffix(c.After, "16777216") {
			t.Errorf("%s → %q, want 16 MiB (2 × 40 Gbit/s × 1 ms, a power of two)", key, c.After)
		}
	}
	ch := changesOf(p, KindChannels)
	if len(ch) != 1 || ch[0].Command != "ethtool -L ens2f0np0 combined 8" || ch[0].Finding != "queues.too_few" || !ch[0].LiveOnly {
		t.Errorf("channels %+v, want ethtool -L ens2f0np0 combined 8", ch)
	}
	if len(changesOf(p, KindMTU)) != 0 || !hasNote(p, "mtu.not_jumbo", "--mtu 9000") {
		t.Errorf("MTU: want advice, not a change; notes %+v", p.Notes)
	}
	node1 := cpulist.MustParse("10-19,30-39")
	got := irqTargets(t, p)
	if len(got) != 2 {
		t.Errorf("IRQ moves %v, want IRQs 45 and 46", got)
	}
	for q, c := range got {
		if !cpulist.Contains(node1, c) {
			t.Errorf("IRQ %d → CPU %d, off NUMA node 1", q, c)
		}
	}
	if c := change(t, p, "irq 46"); c.Finding != "irq.remote_numa" {
		t.Errorf("IRQ 46 answers %q, want irq.remote_numa", c.Finding)
	}
	for _, c := range changesOf(p, KindGovernor) {
		cpu, _ := strconv.Atoi(strings.TrimPrefix(c.Target, "cpu"))
		if !cpulist.Contains(node1, cpu) {
			t.Errorf("governor of cpu%d, which is not near the NIC", cpu)
		}
	}
	if app := AppCPUs(p); len(app) == 0 || len(cpulist.Subtract(app, node1)) > 0 || len(cpulist.Intersect(app, cpulist.MustParse("11-19,31-39"))) > 0 {
		t.Errorf("application CPUs %v: want a core of node 1 apart from the IRQs", app)
	}
}

func TestPlanMTU(t *testing.T) {
	p := plan(t, hostTree("xeon-xl710-gen2-x4"), nil, Options{MTU: 9000})
	m := changesOf(p, KindMTU)
	if len(m) != 1 || m[0].Before != "1500" || m[0].After != "9000" || m[0].Command != "ip link set dev ens2f0np0 mtu 9000" || m[0].Finding != "mtu.not_jumbo" || !m[0].LiveOnly {
		t.Errorf("MTU changes %+v", m)
	}
}

func TestPlanLiveDevices(t *testing.T) {
	dev := xl710()
	dev.ch["ens2f0np0"] = Channels{Combined: 1, MaxCombined: 4}
	p := plan(t, hostTree("xeon-xl710-gen2-x4"), dev, Options{})
	if c := changesOf(p, KindChannels); len(c) != 1 || c[0].After != "combined 4" {
		t.Errorf("channels %+v, want combined 4: the NIC's maximum caps the 8 wanted", c)
	}
	if r := changesOf(p, KindRings); len(r) != 1 || r[0].Before != "rx 512 tx 512" || r[0].After != "rx 4096 tx 4096" || r[0].Command != "ethtool -G ens2f0np0 rx 4096 tx 4096" {
		t.Errorf("rings %+v, want rx/tx 512 → 4096", r)
	}
	dev.ch["ens2f0np0"] = Channels{Combined: 4, MaxCombined: 4}
	delete(dev.rings, "ens2f0np0")
	p = plan(t, hostTree("xeon-xl710-gen2-x4"), dev, Options{})
	if len(changesOf(p, KindChannels)) != 0 || !hasNote(p, "queues.too_few", "already has the most queues") {
		t.Errorf("a NIC at its maximum: %+v", p.Notes)
	}
	if len(changesOf(p, KindRings)) != 0 || !hasNote(p, "", "not supported by the driver") {
		t.Errorf("rings the driver does not offer must be skipped with a note: %+v", p.Notes)
	}
}

func TestPlanLatency(t *testing.T) {
	p := plan(t, hostTree("ryzen-9900x-cx5-x4"), nil, Options{Profile: Latency, AppCPUs: []int{6}})
	// One BDP, 100 Gbit/s × 1 ms = 12.5 MB, rounded up to a page.
	if c := change(t, p, "net.core.rmem_max"); c.After != "12500992" {
		t.Errorf("latency rmem_max → %s, want 12500992", c.After)
	}
	for _, c := range p.Changes {
		if c.Target == "net.ipv4.tcp_slow_start_after_idle" || c.Kind == KindRings {
			t.Errorf("latency profile plans a throughput setting: %+v", c)
		}
	}
	// The tree has no busy_read: said, not hidden.
	if !hasNote(p, "", "net.core.busy_read is not present") || !hasNote(p, "", "adaptive-rx off") {
		t.Errorf("notes %+v", p.Notes)
	}
	if got := irqTargets(t, p); len(got) != 1 || got[111] != 9 {
		t.Errorf("the latency profile places IRQs too: %v, want 111 → 9", got)
	}
}

func TestPlanIRQCPUs(t *testing.T) {
	p := plan(t, hostTree("ryzen-9900x-cx5-x4"), nil, Options{IRQCPUs: []int{8, 9}, AppCPUs: []int{6}})
	for q, c := range irqTargets(t, p) {
		if c != 8 && c != 9 {
			t.Errorf("IRQ %d → %d, want 8 or 9", q, c)
		}
	}
	// On 8 already: 109, 114, 119; on 9: 110, 115. The rest move in IRQ
	// order, each to the one holding fewer (ties to 8): 98 → 9, 99 → 8,
	// 111 → 9, 112 → 8, 113 → 9, 116 → 8, 117 → 9, 118 → 8.
	want := map[int]int{98: 9, 99: 8, 111: 9, 112: 8, 113: 9, 116: 8, 117: 9, 118: 8}
	if got := irqTargets(t, p); !maps.Equal(got, want) {
		t.Errorf("--irq-cpus 8-9 moves %v; want %v", got, want)
	}
}

// TestPlanSelects checks that a plan touches only what was selected.
func TestPlanSelects(t *testing.T) {
	p := plan(t, hostTree("ryzen-9900x-cx5-x4"), nil, Options{Ifaces: []string{"enp1s0f1np1"}})
	if len(changesOf(p, KindIRQ)) != 0 {
		t.Errorf("the down port's IRQs moved without an IRQ finding: %+v", changesOf(p, KindIRQ))
	}
	if !slices.Equal(p.Interfaces, []string{"enp1s0f1np1"}) {
		t.Errorf("interfaces %v", p.Interfaces)
	}
	healthy := plan(t, hostTree("xeon-6530-t6-healthy"), nil, Options{})
	for _, c := range healthy.Changes {
		if c.Finding != "" {
			t.Errorf("a healthy host's plan answers a finding: %+v", c)
		}
	}
}

func TestPlanRefusals(t *testing.T) {
	fs, inv := open(t, hostTree("ryzen-9900x-cx5-x4"))
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Ifaces: []string{"eth9"}}, "--iface eth9: no such interface"},
		{Options{AppCPUs: []int{12}}, "--app-cpus 12: CPU 12 is not online"},
		{Options{IRQCPUs: []int{7, 40}}, "--irq-cpus 7,40: CPU 40 is not online"},
		{Options{IRQCPUs: []int{10, 11, 12, 13}}, "--irq-cpus 10-13: CPUs 12-13 are not online"},
		{Options{AppCPUs: []int{12, 14}}, "--app-cpus 12,14: CPUs 12,14 are not online"},
		{Options{IRQCPUs: []int{6, 7}, AppCPUs: []int{6}}, "share CPU 6:"},
		{Options{IRQCPUs: []int{6, 7}, AppCPUs: []int{6, 7}}, "share CPUs 6-7:"},
		{Options{MTU: 20}, "--mtu 20"},
		{Options{Profile: "fast"}, `unknown profile "fast"`},
	} {
		_, err := NewPlan(Input{FS: fs, Inventory: inv}, tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.opts, err, tc.want)
		}
	}
}

func TestWritePlan(t *testing.T) {
	p := plan(t, hostTree("ryzen-9900x-cx5-x4"), nil, Options{AppCPUs: []int{6}})
	var b bytes.Buffer
	if err := WritePlan(&b, p, termui.Style{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"net.core.rmem_max                   212992 → 33554432  ",
		"sysctl -w net.ipv4.tcp_rmem='4096 131072 33554432'  [sysctl.socket_buffers_small]",
		"irq 111 mlx5_comp3@pci:0000:01:00.0  3 → 9  echo 9 > /proc/irq/111/smp_affinity_list  [irq.spans_l3_domains]",
		"CPU governors (cpufreq)",
		"Run your application on CPU 6: taskset -c 6 <command> (iperf3: -A 6)",
		"tune plan for crow (captured tree /", "/testdata/hosts/ryzen-9900x-cx5-x4), profile throughput",
		"\nnet sysctls (the tree's /proc/sys/net)\n",
		"\nplacement\n  enp1s0f0np0 (NUMA node 0): IRQs to 7-11; application on 6; L3 domain 6-11",
		"\nnotes (not applied)\n  - enp1s0f1np1 is down: left alone (name it with --iface to tune it anyway)\n",
		"and restart it [irqbalance.running]\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
}

// TestPlanRingSmall: doctor's ring.small joins the plan as a ring change
// that names it, its before and after from the tree's ethtool facts (the
// RX ring of ens5f1np1: 512 of 8192); the throughput profile raises the TX
// ring with it and the other port's rings, the latency profile only the
// RX ring the finding asks for. Below a tree the changes need the live
// NIC; live, the driver's rings are read instead.
func TestPlanRingSmall(t *testing.T) {
	p := plan(t, hostTree("cx4lx-sfp28-a2h"), nil, Options{})
	var small, other Change
	for _, c := range changesOf(p, KindRings) {
		switch c.Interface {
		case "ens5f1np1":
			small = c
		case "ens5f0np0":
			other = c
		}
	}
	if small.Finding != "ring.small" || small.Before != "rx 512 tx 1024" || small.After != "rx 8192 tx 8192" ||
		small.Command != "ethtool -G ens5f1np1 rx 8192 tx 8192" || !small.LiveOnly || !strings.HasPrefix(small.Source, "ring.small:") {
		t.Errorf("ring.small's change: %+v", small)
	}
	if other.Finding != "" || other.After != "rx 8192 tx 8192" {
		t.Errorf("the other port's (profile) change: %+v", other)
	}
	if hasNote(p, "ring.small", "not a setting") {
		t.Errorf("ring.small is noted as not a setting: %+v", p.Notes)
	}

	p = plan(t, hostTree("cx4lx-sfp28-a2h"), nil, Options{Profile: Latency})
	r := changesOf(p, KindRings)
	if len(r) != 1 || r[0].Interface != "ens5f1np1" || r[0].Before != "rx 512" || r[0].After != "rx 8192" || r[0].Finding != "ring.small" {
		t.Errorf("latency profile rings: %+v", r)
	}

	dev := newFakeDevices()
	dev.rings["ens5f1np1"] = Rings{RX: 1024, TX: 1024, MaxRX: 4096, MaxTX: 4096}
	dev.rings["ens5f0np0"] = Rings{RX: 4096, TX: 4096, MaxRX: 4096, MaxTX: 4096}
	dev.ch["ens5f1np1"] = Channels{Combined: 8, MaxCombined: 63}
	p = plan(t, hostTree("cx4lx-sfp28-a2h"), dev, Options{Profile: Latency})
	if r := changesOf(p, KindRings); len(r) != 1 || r[0].Before != "rx 1024" || r[0].After != "rx 4096" {
		t.Errorf("live rings: %+v", r)
	}
}

// TestPlanMTUBounds pins --mtu's bounds at their edges: 68 and 65535 are
// accepted, 67 and 65536 refused.
func TestPlanMTUBounds(t *testing.T) {
	fs, inv := open(t, hostTree("ryzen-9900x-cx5-x4"))
	for _, tc := range []struct {
		mtu int
		ok  bool
	}{{minMTU, true}, {maxMTU, true}, {minMTU - 1, false}, {maxMTU + 1, false}} {
		_, err := NewPlan(Input{FS: fs, Inventory: inv}, Options{MTU: tc.mtu})
		if tc.ok && err != nil {
			t.Errorf("--mtu %d refused: %v", tc.mtu, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "outside 68-65535")) {
			t.Errorf("--mtu %d: %v, want outside 68-65535", tc.mtu, err)
		}
	}
}

// TestPlanOrder: a plan's changes come in apply order — sysctls, then
// governors, MTU, channels, rings, irqbalance, IRQs — numbered from 1,
// whatever order the planning steps found them in (the x4 home lab's host
// with an irqbalance configuration plans the IRQ moves before the bans that
// keep irqbalance off them).
func TestPlanOrder(t *testing.T) {
	_, _, ryzenX4 := ryzenX4Tree(t)
	for name, p := range map[string]*Plan{
		"ryzen x4, irqbalance": ryzenX4,
		"xl710 gen2 x4":        plan(t, hostTree("xeon-xl710-gen2-x4"), xl710(), Options{}),
	} {
		kinds := map[Kind]bool{}
		for i, c := range p.Changes {
			kinds[c.Kind] = true
			if c.Step != i+1 {
				t.Errorf("%s: change %d is step %d", name, i+1, c.Step)
			}
			if i > 0 && kindRank(c.Kind) < kindRank(p.Changes[i-1].Kind) {
				t.Errorf("%s: step %d (%s) after step %d (%s)", name, c.Step, c.Kind, i, p.Changes[i-1].Kind)
			}
		}
		if len(kinds) < 3 {
			t.Fatalf("%s: the plan has %d kinds of change, want 3 or more to check an order: %+v", name, len(kinds), p.Changes)
		}
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

// TestPlanIRQOnAppCPU: with --app-cpus 7 on the x4 home lab's host, the IRQs on
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

// TestPlanUnreadableSysctls: a buffer sysctl that is empty, or cannot be
// read, is left alone with a note saying which and why.
func TestPlanUnreadableSysctls(t *testing.T) {
	root := copyTree(t, "xeon-xl710-gen2-x4")
	writeFile(t, root, "proc/sys/net/core/rmem_max", "")
	wmem := filepath.Join(root, "proc/sys/net/ipv4/tcp_wmem")
	os.Remove(wmem)
	os.Mkdir(wmem, 0o755)
	p := plan(t, root, nil, Options{})
	if !hasNote(p, "sysctl.socket_buffers_small", "net.core.rmem_max is empty: left out of the plan") {
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
