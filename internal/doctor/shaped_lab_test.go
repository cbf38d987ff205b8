package doctor_test

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/netdev"
	"github.com/linerate/linerate/internal/osthread"
	"github.com/linerate/linerate/internal/testbin"
)

// labDoctor runs doctor inside host h of lab name, without --iface, as
// `linerate doctor` run there would: the kernel's qdiscs over rtnetlink,
// the host's own /sys.
func labDoctor(t *testing.T, name string, h lab.Host) *doctor.Report {
	t.Helper()
	var rep *doctor.Report
	err := osthread.Throwaway(func() error {
		if err := lab.Enter(name, h); err != nil {
			return err
		}
		facts, err := netdev.Query()
		if err != nil {
			return err
		}
		inv, err := inventory.Collect(hostfs.Live(), inventory.Options{Live: facts})
		if err != nil {
			return err
		}
		rep, err = doctor.Diagnose(inv, doctor.Options{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func shaped(rep *doctor.Report) []doctor.Finding {
	var out []doctor.Finding
	for _, f := range rep.Findings {
		if f.ID == "link.shaped" {
			out = append(out, f)
		}
	}
	return out
}

// tc runs tc inside host h of lab name, as someone shaping by hand would.
func tc(t *testing.T, name string, h lab.Host, args ...string) {
	t.Helper()
	cmd := exec.Command("ip", append([]string{"netns", "exec", lab.Namespace(name, h), "tc"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
}

// TestLabLinkShaped: in a lab host, doctor (without --iface) judges lab0,
// the host's one link, and raises link.shaped when a tbf nobody declared
// shapes it — not on the unshaped host beside it, not on the lab's own
// declared rate, and again when a fault is planted over that.
func TestLabLinkShaped(t *testing.T) {
	if testing.Short() {
		// CI: runs the suite without -short, so this runs there.
		t.Skip("-short: unit tests only, no lab")
	}
	testbin.NeedRoot(t, "network namespaces")
	if _, err := exec.LookPath("tc"); err != nil {
		t.Fatal("tc is not installed: apt-get install -y iproute2")
	}
	t.Setenv("LINERATE_STATE_DIR", t.TempDir())
	const name = "t-shaped"
	ctx := context.Background()
	if _, err := lab.Up(ctx, lab.Config{Name: name}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := lab.Down(context.Background(), name); err != nil {
			t.Errorf("lab down: %v", err)
		}
	})

	rep := labDoctor(t, name, lab.A)
	if len(rep.NICs) != 1 || rep.NICs[0].Interface != lab.Iface {
		t.Fatalf("judged %v; want lab0, the host's one link", rep.NICs)
	}
	if f := shaped(rep); len(f) != 0 {
		t.Errorf("unshaped lab0: %s", f[0].Summary)
	}

	tc(t, name, lab.A, "qdisc", "replace", "dev", lab.Iface, "root", "handle", "7:", "tbf", "rate", "1gbit", "burst", "128kb", "limit", "256kb")
	f := shaped(labDoctor(t, name, lab.A))
	if len(f) != 1 || f[0].Subject != lab.Iface || f[0].Evidence["rate_gbps"] != 1.0 || f[0].Evidence["handle"] != "7:" ||
		!strings.Contains(f[0].Summary, "lab0's egress is shaped by tbf 7: rate 1gbit: the link carries at most 0.99 Gbit/s") {
		t.Fatalf("tbf by hand: %+v", f)
	}
	if !slices.ContainsFunc(f[0].Commands(), func(c []string) bool { return slices.Equal(c, []string{"tc", "qdisc", "del", "dev", "lab0", "root"}) }) {
		t.Errorf("the fix does not remove it: %q", f[0].Commands())
	}
	if f := shaped(labDoctor(t, name, lab.B)); len(f) != 0 {
		t.Errorf("host b, unshaped: %s", f[0].Summary)
	}

	// The lab's own rate is declared: the line rate it stands in for.
	if _, err := lab.Up(ctx, lab.Config{Name: name, Rate: 2_000_000_000}); err != nil {
		t.Fatal(err)
	}
	rep = labDoctor(t, name, lab.A)
	if f := shaped(rep); len(f) != 0 {
		t.Errorf("the lab's declared rate: %s", f[0].Summary)
	}
	l := rep.NICs[0].Limits
	// 2 × 8948/9014: tbf counts the packet and its MAC header.
	if l.LineRate == nil || *l.LineRate != 2 || l.Chain[0].Detail != "lab link shaped to 2 Gbit/s, standing in for a NIC's line rate" ||
		l.TCPGoodput == nil || l.TCPGoodput.String() != "1.99" || !strings.Contains(l.Chain[2].Detail, "8948/9014 of the shaped rate") {
		t.Errorf("declared lab link: %+v", l)
	}

	// A fault planted over it is a shaper again.
	tc(t, name, lab.A, "qdisc", "replace", "dev", lab.Iface, "root", "handle", "1:", "tbf", "rate", "500mbit", "burst", "64kb", "limit", "128kb")
	if f := shaped(labDoctor(t, name, lab.A)); len(f) != 1 || f[0].Evidence["rate_gbps"] != 0.5 {
		t.Errorf("a fault over the declared rate: %+v", f)
	}
}
