package tune

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// planText renders p as tune prints it, without colour.
func planText(t *testing.T, p *Plan) string {
	t.Helper()
	var b bytes.Buffer
	if err := WritePlan(&b, p, noColour); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestWritePlanEdges pins what a plan's text says at the edges: no notes
// heading without notes; the live-only remark only for a tree and only
// when some change is live-only; "CPU" for one application CPU, "CPUs"
// for more, no line without a placement; the first placement that names
// application CPUs; "none selected" without interfaces.
func TestWritePlanEdges(t *testing.T) {
	bare := &Plan{Root: "/captured", Profile: Throughput}
	out := planText(t, bare)
	for _, absent := range []string{"notes (not applied)", "need the live NIC", "Run your application"} {
		if strings.Contains(out, absent) {
			t.Errorf("an empty plan says %q:\n%s", absent, out)
		}
	}
	if !strings.Contains(out, "NICs: none selected (no PCI NIC is up; name one with --iface)") || !strings.Contains(out, "Plan: 0 change(s).") {
		t.Errorf("an empty plan:\n%s", out)
	}

	live := &Plan{Root: "/captured", Interfaces: []string{"eth0"}, Changes: []Change{{Kind: KindRings, Target: "eth0", LiveOnly: true}, {Kind: KindRings, Target: "eth1"}},
		Notes: []Note{{Text: "one note"}}}
	out = planText(t, live)
	for _, want := range []string{"Plan: 2 change(s), 1 of them need the live NIC and are skipped when applied to this tree.", "notes (not applied)", "  - one note\n", "NICs: eth0"} {
		if !strings.Contains(out, want) {
			t.Errorf("a tree's plan lacks %q:\n%s", want, out)
		}
	}
	live.Root = "/"
	if out = planText(t, live); strings.Contains(out, "need the live NIC") {
		t.Errorf("the live host's plan says some changes need the live NIC:\n%s", out)
	}

	one := &Plan{Root: "/", Placements: []Placement{{Interface: "eth0"}, {Interface: "eth1", AppCPUs: []int{6}}}}
	if out = planText(t, one); !strings.Contains(out, "Run your application on CPU 6: taskset -c 6 <command> (iperf3: -A 6)") {
		t.Errorf("one application CPU, in the second placement:\n%s", out)
	}
	two := &Plan{Root: "/", Placements: []Placement{{Interface: "eth0", AppCPUs: []int{6, 7}}}}
	if out = planText(t, two); !strings.Contains(out, "Run your application on CPUs 6-7: taskset -c 6-7 <command> (iperf3: -A 6)") {
		t.Errorf("two application CPUs:\n%s", out)
	}
}

// TestWriteListRoot: a journal's root is shown only when it is a tree,
// not for the live host ("/") or a journal that recorded none.
func TestWriteListRoot(t *testing.T) {
	for root, want := range map[string]string{"/": "hostA\n", "": "hostA\n", "/srv/tree": "hostA /srv/tree\n"} {
		var b bytes.Buffer
		if err := WriteList(&b, []*Journal{{ID: "j1", Host: "hostA", Root: root}}, noColour); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(b.String(), want) {
			t.Errorf("root %q: %q, want it to end %q", root, b.String(), want)
		}
	}
}

// TestPlanGovernorUnavailable: a CPU whose driver offers no performance
// governor gets a note and no change; its neighbours that offer one are
// still planned.
func TestPlanGovernorUnavailable(t *testing.T) {
	root := copyTree(t, "xeon-xl710-gen2-x4")
	before := changesOf(plan(t, root, nil, Options{}), KindGovernor)
	if len(before) < 2 {
		t.Fatalf("the tree plans %d governor changes, want 2 or more", len(before))
	}
	cpu := before[0].Target // "cpuN"
	avail := filepath.Join(root, "sys/devices/system/cpu", cpu, "cpufreq/scaling_available_governors")
	if err := os.Remove(avail); err != nil { // it may be a link into testdata: never write through it
		t.Fatal(err)
	}
	if err := os.WriteFile(avail, []byte("powersave schedutil\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := plan(t, root, nil, Options{})
	gov := changesOf(p, KindGovernor)
	for _, c := range gov {
		if c.Target == cpu {
			t.Errorf("%s offers no performance governor, but the plan changes it: %+v", cpu, c)
		}
	}
	if len(gov) != len(before)-1 || !hasNote(p, "", cpu+" offers no performance governor (powersave schedutil") {
		t.Errorf("%d governor changes (want %d), notes %+v", len(gov), len(before)-1, p.Notes)
	}
}

// TestPlanMTUAlreadySet: --mtu on a NIC already at that MTU plans
// nothing for it.
func TestPlanMTUAlreadySet(t *testing.T) {
	p := plan(t, hostTree("ryzen-9900x-cx5-x4"), nil, Options{MTU: 9000})
	if m := changesOf(p, KindMTU); len(m) != 0 {
		t.Errorf("MTU 9000 asked of NICs at 9000: %+v", m)
	}
	p = plan(t, hostTree("ryzen-9900x-cx5-x4"), nil, Options{MTU: 4000})
	if m := changesOf(p, KindMTU); len(m) == 0 || m[0].Before != "9000" || m[0].After != "4000" {
		t.Errorf("MTU 4000 asked of NICs at 9000: %+v", m)
	}
}
