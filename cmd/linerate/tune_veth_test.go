package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/tune"
)

// vethNS is a network namespace of the test's own holding a veth pair with
// four queues each way, its v0 shaped to 40 Gbit/s (so that doctor judges
// its queues) and cut to one queue each way: doctor's queues.too_few.
type vethNS struct {
	t    *testing.T
	name string
}

// newVethNS makes the namespace; it is deleted, with its veths, when the
// test ends.
func newVethNS(t *testing.T) *vethNS {
	t.Helper()
	n := &vethNS{t: t, name: fmt.Sprintf("lr-doctor-ch%d", os.Getpid()%100000)}
	exec.Command("ip", "netns", "del", n.name).Run() // a crashed run's
	n.must("ip", "netns", "add", n.name)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", n.name).Run() })
	n.must("ip", "-n", n.name, "link", "add", "v0", "numtxqueues", "4", "numrxqueues", "4",
		"type", "veth", "peer", "name", "v1", "numtxqueues", "4", "numrxqueues", "4")
	n.must("ip", "-n", n.name, "link", "set", "v0", "up")
	n.must("ip", "-n", n.name, "link", "set", "v1", "up")
	n.must("ip", "netns", "exec", n.name, "tc", "qdisc", "add", "dev", "v0", "root", "tbf", "rate", "40gbit", "burst", "4mb", "latency", "10ms")
	n.must("ip", "netns", "exec", n.name, "ethtool", "-L", "v0", "rx", "1", "tx", "1")
	return n
}

func (n *vethNS) must(args ...string) string {
	n.t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		n.t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// linerate runs linerate ARGS (the test binary as linerate) in the
// namespace: ip netns exec gives it the namespace's /sys as well.
func (n *vethNS) linerate(args ...string) (int, string, string) {
	n.t.Helper()
	cmd := tuneHelper(os.Args[0], args...)
	cmd.Args = append([]string{"ip", "netns", "exec", n.name, cmd.Path}, cmd.Args[1:]...)
	cmd.Path = "/usr/sbin/ip"
	if p, err := exec.LookPath("ip"); err == nil {
		cmd.Path = p
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		n.t.Fatalf("running linerate %v in %s: %v", args, n.name, err)
	}
	return code, out.String(), errb.String()
}

func readOnline(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// channels returns v0's channel counts as ethtool -l reports them now.
func (n *vethNS) channels() string {
	n.t.Helper()
	out := n.must("ip", "netns", "exec", n.name, "ethtool", "-l", "v0")
	_, cur, _ := strings.Cut(out, "Current hardware settings:")
	return strings.Join(strings.Fields(cur), " ")
}

// values is what tune may change in the namespace: its net sysctls and
// v0's channels.
func (n *vethNS) values() map[string]string {
	n.t.Helper()
	cmd := exec.Command("ip", "netns", "exec", n.name, "grep", "-r", ".", "/proc/sys/net/core", "/proc/sys/net/ipv4")
	out, _ := cmd.Output() // some files are write-only: grep complains and goes on
	m := map[string]string{"channels v0": n.channels()}
	for l := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(l, ":")
		m[k] += v
	}
	if len(m) < 50 {
		n.t.Fatalf("read only %d values in %s", len(m), n.name)
	}
	return m
}

// TestTuneVethChannels runs tune in a namespace of its own on a veth cut
// to one queue each way: doctor raises queues.too_few (a 40 Gbit/s link,
// 1 queue, want min(8, CPUs)), the plan raises rx and tx (veth has no
// combined channels) through ethtool netlink's CHANNELS_SET, --apply
// changes them and reads them back, and revert --last puts them — and
// every sysctl tune touched — back exactly.
func TestTuneVethChannels(t *testing.T) {
	tuneNeedsRoot(t, "network namespaces")
	for _, tool := range []string{"ip", "tc", "ethtool"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed", tool)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
	online, err := cpulist.Parse(strings.TrimSpace(readOnline(t)))
	if err != nil {
		t.Fatal(err)
	}
	// min(8, CPUs of the veth's node: every online CPU), at most its 4
	// queues; one CPU would want no more than the one queue it has.
	want := min(8, len(online), 4)
	if want < 2 {
		t.Skip("one CPU online: one queue is all doctor asks for (CI runs on 2 or more)")
	}
	t.Setenv("LINERATE_STATE_DIR", t.TempDir())
	n := newVethNS(t)
	if got := n.channels(); got != "RX: 1 TX: 1 Other: n/a Combined: n/a" {
		t.Fatalf("v0 before: %q", got)
	}
	before := n.values()

	code, out, stderr := n.linerate("tune", "--iface", "v0", "--json")
	var p tune.Plan
	if err := json.Unmarshal([]byte(out), &p); code != 0 || err != nil {
		t.Fatalf("plan: exit %d, %v\n%s%s", code, err, out, stderr)
	}
	if c := len(p.Placements); c > 0 {
		t.Errorf("a veth has no IRQs to place: %+v", p.Placements)
	}
	var ch *tune.Change
	for i, c := range p.Changes {
		if c.Kind == tune.KindChannels {
			ch = &p.Changes[i]
		}
	}
	if ch == nil {
		t.Fatalf("no channel change in the plan: %+v\nfindings %v", p.Changes, p.Findings)
	}
	wantAfter := fmt.Sprintf("rx %d tx %d", want, want)
	if ch.Target != "v0" || ch.Interface != "v0" || ch.Before != "rx 1 tx 1" || ch.After != wantAfter ||
		ch.Finding != "queues.too_few" || ch.Command != "ethtool -L v0 "+wantAfter || ch.Path != "" {
		t.Errorf("channel change %+v, want v0 rx 1 tx 1 → %s for queues.too_few", ch, wantAfter)
	}

	// net.core.rmem_max is read-only outside the initial namespace on
	// current kernels: the plan must say so rather than fail on it.
	if _, err := os.Stat("/proc/sys/net/core/rmem_max"); err == nil {
		ro := strings.Contains(n.must("ip", "netns", "exec", n.name, "stat", "-c", "%A", "/proc/sys/net/core/rmem_max"), "-r--r--r--")
		for _, c := range p.Changes {
			if ro && c.Target == "net.core.rmem_max" {
				t.Errorf("a change to the namespace's read-only rmem_max: %+v", c)
			}
		}
		noted := slices.ContainsFunc(p.Notes, func(x tune.Note) bool { return strings.Contains(x.Text, "net.core.rmem_max is read-only here") })
		// Noted only when the plan would raise it: doctor finds it below
		// its need (a read-only rmem_max already large enough is no news).
		_, dout, _ := n.linerate("doctor", "--iface", "v0", "--json")
		type finding struct {
			ID       string `json:"id"`
			Evidence struct {
				Below map[string]any `json:"below_need"`
			} `json:"evidence"`
		}
		var rep struct {
			Findings []finding `json:"findings"`
		}
		if err := json.Unmarshal([]byte(dout), &rep); err != nil {
			t.Fatal(err)
		}
		below := slices.ContainsFunc(rep.Findings, func(f finding) bool {
			_, ok := f.Evidence.Below["net.core.rmem_max"]
			return f.ID == "sysctl.socket_buffers_small" && ok
		})
		if want := ro && below; noted != want {
			t.Errorf("read-only rmem_max noted %v, want %v (read-only %v, below its need %v): %+v", noted, want, ro, below, p.Notes)
		}
	}
	code, out, stderr = n.linerate("tune", "--iface", "v0", "--apply")
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, stderr)
	}
	if got := n.channels(); got != fmt.Sprintf("RX: %d TX: %d Other: n/a Combined: n/a", want, want) {
		t.Errorf("v0 after apply: %q\n%s", got, out)
	}
	code, out, stderr = n.linerate("tune", "revert", "--last")
	if code != 0 {
		t.Fatalf("revert: exit %d\n%s%s", code, out, stderr)
	}
	after := n.values()
	for k, w := range before {
		if after[k] != w {
			t.Errorf("after revert %s = %q, want %q", k, after[k], w)
		}
	}
}
