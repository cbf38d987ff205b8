package lab

// End-to-end tests: real namespaces, veth, tbf and sysctls, as root. Each
// test uses its own lab name and state directory and removes its lab. All
// traffic stays inside the test's own lab (198.18.0.0/24).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/limits"
	"github.com/linerate/linerate/internal/netdev"
	"github.com/linerate/linerate/internal/testbin"
)

// needRoot skips a test without root, except in CI, where skipping would
// hide that the end-to-end tests never ran.
func needRoot(t *testing.T) {
	t.Helper()
	testbin.NeedRoot(t, "network namespaces")
}

// newLab prepares a test of the labs names: root, a private state
// directory, and a cleanup that removes the labs and checks that nothing is
// left.
func newLab(t *testing.T, names ...string) string {
	t.Helper()
	needRoot(t)
	dir := t.TempDir()
	t.Setenv("LINERATE_STATE_DIR", dir)
	t.Cleanup(func() {
		for _, name := range names {
			if _, err := Down(context.Background(), name); err != nil {
				t.Errorf("cleanup: %v", err)
			}
			assertGone(t, dir, name)
		}
	})
	return dir
}

// assertGone checks that lab name has no namespace and no record.
func assertGone(t *testing.T, stateDir, name string) {
	t.Helper()
	for _, h := range hosts() {
		if _, err := os.Lstat(nsPath(Namespace(name, h))); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists (%v)", nsPath(Namespace(name, h)), err)
		}
	}
	if _, err := os.Lstat(filepath.Join(stateDir, "lab", name+".json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("record of %s still exists (%v)", name, err)
	}
}

// readBack is what the kernel says about one host, read through netlink and
// /proc/sys inside the namespace, independently of Status.
type readBack struct {
	mtu     int
	index   int
	up, lo  bool
	addrs   []string
	qdisc   netlink.Qdisc
	alias   string
	sysctls map[string]string
}

func read(t *testing.T, name string, h Host) readBack {
	t.Helper()
	c, err := dial(Namespace(name, h))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.nl.LinkByName(Iface)
	if err != nil {
		t.Fatalf("%s in %s: %v", Iface, c.ns, err)
	}
	lo, err := c.nl.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	rb := readBack{mtu: l.Attrs().MTU, index: l.Attrs().Index, up: isUp(l), lo: isUp(lo), alias: l.Attrs().Alias}
	as, err := c.nl.AddrList(l, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		rb.addrs = append(rb.addrs, a.IPNet.String())
	}
	if rb.qdisc, err = c.rootQdisc(l); err != nil {
		t.Fatal(err)
	}
	if rb.sysctls, err = readSysctls(c.ns, managedSysctls()); err != nil {
		t.Fatal(err)
	}
	return rb
}

func up(t *testing.T, c Config) *UpResult {
	t.Helper()
	res, err := Up(t.Context(), c)
	if err != nil {
		t.Fatalf("Up(%+v): %v", c, err)
	}
	return res
}

func TestScenarios(t *testing.T) {
	defs := kernelDefaults()
	small := map[string]string{sysctlRmem: "4096 65536 65536", sysctlWmem: "4096 16384 65536"}
	tests := []struct {
		name     string
		c        Config
		mtu      [2]int
		rate     [2]uint64 // bytes/s of the tbf on a and b, 0 for none
		sysctlsB map[string]string
	}{
		{"t-healthy", Config{Scenario: Healthy}, [2]int{9000, 9000}, [2]uint64{}, defs},
		{"t-capped", Config{Scenario: Capped10G}, [2]int{9000, 9000}, [2]uint64{1_250_000_000, 1_250_000_000}, defs},
		{"t-mtu", Config{Scenario: MTUMismatch}, [2]int{9000, 1500}, [2]uint64{}, defs},
		{"t-small", Config{Scenario: SmallBuffers}, [2]int{9000, 9000}, [2]uint64{}, small},
		// 40 Gbit/s is 5e9 B/s, past 32 bits: tbf needs TCA_TBF_RATE64.
		{"t-rate", Config{Scenario: MTUMismatch, Rate: 40e9, MTU: 4000}, [2]int{4000, 1500}, [2]uint64{5_000_000_000, 5_000_000_000}, defs},
		// shaped: the sender's egress only, 2 Gbit/s.
		{"t-shaped", Config{Scenario: Shaped}, [2]int{9000, 9000}, [2]uint64{250_000_000, 0}, defs},
	}
	for _, tt := range tests {
		t.Run(string(tt.c.Scenario)+"/"+tt.name, func(t *testing.T) {
			newLab(t, tt.name)
			tt.c.Name = tt.name
			// A rate both ends share is declared the line rate it stands
			// in for; one end's alone is a planted fault, declared nothing.
			var line uint64
			if tt.rate[0] == tt.rate[1] {
				line = tt.rate[0]
			}
			res := up(t, tt.c)
			if !res.Created || res.Unchanged() {
				t.Errorf("first up: created=%v changes=%v", res.Created, res.Changes)
			}
			for i, h := range hosts() {
				rb := read(t, tt.name, h)
				if rb.mtu != tt.mtu[i] {
					t.Errorf("%s: MTU %d, want %d", h, rb.mtu, tt.mtu[i])
				}
				if !rb.up || !rb.lo {
					t.Errorf("%s: lab0 up %v, lo up %v; want both up", h, rb.up, rb.lo)
				}
				if want := h.Addr() + "/24"; len(rb.addrs) != 1 || rb.addrs[0] != want {
					t.Errorf("%s: addresses %v, want [%s]", h, rb.addrs, want)
				}
				tbf, isTbf := rb.qdisc.(*netlink.Tbf)
				switch {
				case tt.rate[i] == 0 && !isDefaultQdisc(rb.qdisc):
					t.Errorf("%s: root qdisc %v, want none", h, rb.qdisc)
				case tt.rate[i] != 0 && (!isTbf || tbf.Rate != tt.rate[i]):
					t.Errorf("%s: root qdisc %v, want tbf at %d B/s", h, rb.qdisc, tt.rate[i])
				}
				if bps, ok := netdev.DeclaredLineRate(rb.alias); ok != (line != 0) || bps != line*8 {
					t.Errorf("%s: alias %q declares %d bit/s; want %d", h, rb.alias, bps, line*8)
				}
				want := defs
				if h == B {
					want = tt.sysctlsB
				}
				for p, v := range want {
					if rb.sysctls[p] != v {
						t.Errorf("%s: %s = %q, want %q", h, sysctlName(p), rb.sysctls[p], v)
					}
				}
			}
			st, err := Status(t.Context(), tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if want := Rate(line * 8); want != 0 && st.Labs[0].LineRate != want.String() || want == 0 && st.Labs[0].LineRate != "" {
				t.Errorf("status line rate %q; want %v", st.Labs[0].LineRate, want)
			}
			// The link carries traffic between the two hosts.
			echo(t, tt.name)
		})
	}
}

// echo sends a message from host a to host b over TCP and reads it back.
// The sockets are made on threads inside the namespaces; once made, they
// keep their namespace wherever the goroutine runs.
func echo(t *testing.T, name string) {
	t.Helper()
	var ln net.Listener
	err := inNS(Namespace(name, B), func() (err error) {
		ln, err = net.Listen("tcp4", AddrB+":0")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()
	var conn net.Conn
	err = inNS(Namespace(name, A), func() (err error) {
		conn, err = net.DialTimeout("tcp4", ln.Addr().String(), 5*time.Second)
		return err
	})
	if err != nil {
		t.Fatalf("connecting a to b in lab %s: %v", name, err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	msg := []byte("hello from " + name)
	if _, err := conn.Write(msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(conn, got); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("echo in lab %s: %q, %v", name, got, err)
	}
}

// TestShapedCeiling holds the lab's tbf to what limits says it carries,
// counting what tbf counts: each packet with its 14-byte MAC header (a
// GSO super-packet as the segments it becomes), not the wire's preamble,
// gap and FCS. The qdisc's own counters must show exactly that many bytes
// per packet, whatever the machine's load; and iperf3's goodput (after a
// warm-up that empties the bucket) must never exceed the model's ceiling
// by more than the bucket could hold over the run. capped-10g at MTU 9000
// (ceiling 10 × 8948/9014 = 9.93, where the wire's model said 9.90 and
// runs reached 9.91), and 1 Gbit/s at MTU 1500 (1448/1514 = 0.956, the
// wire's 0.941). How close a run comes to the ceiling depends on how busy
// the machine is, so that figure is never asserted (scripts/bench-engine.sh
// measures it); the tbf's parameters are checked by TestScenarios.
func TestShapedCeiling(t *testing.T) {
	const name = "t-iperf"
	newLab(t, name)
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Fatal("iperf3 is not installed: apt-get install -y iperf3")
	}
	for _, c := range []Config{{Name: name, Scenario: Capped10G}, {Name: name, Rate: 1_000_000_000, MTU: 1500}} {
		up(t, c)
		sp := c.spec()
		rate := sp.Rate[0] // both ends alike: a's egress carries the test
		frame, err := limits.TCPFrame(sp.MTU[0], limits.Stack{})
		if err != nil {
			t.Fatal(err)
		}
		model := limits.Shaper{Rate: limits.Gbps(float64(rate) / 1e9), Overhead: limits.SkbOverhead}
		ceiling := float64(model.Goodput(frame))
		burst := float64(netlink.Xmitsize(tbfFor(1, rate).Rate, tbfFor(1, rate).Buffer))
		const seconds = 3
		before := tbfStats(t, name)
		gbps := iperf3(t, name, seconds, 1)
		after := tbfStats(t, name)
		bytes, packets := after.Bytes-before.Bytes, uint64(after.Packets-before.Packets)
		perPacket := float64(bytes) / float64(packets)
		// The bucket's depth is all a measured window can gain on the rate.
		bound := ceiling * (1 + burst*8/(float64(rate)*seconds))
		t.Logf("tbf %s, MTU %d: %.3f Gbit/s against a ceiling of %.3f (bound %.3f); the tbf counted %d bytes in %d packets, %.1f a packet (model %d)",
			rate, sp.MTU[0], gbps, ceiling, bound, bytes, packets, perPacket, model.Counted(frame))
		if gbps > bound {
			t.Errorf("MTU %d, %s: iperf3 carried %.3f Gbit/s, above the model's ceiling %.3f (bound %.3f with the bucket)", sp.MTU[0], rate, gbps, ceiling, bound)
		}
		// Some packets of the run are not full segments (the handshake,
		// iperf3's control connection, the tail of a write that is not a
		// multiple of the MSS when the window lets it go at once): they
		// pull the mean down, never up — by 1.1% at MTU 9000 on a busy
		// machine (8916.8 bytes a packet against 9014), so the floor is
		// loose; the ceiling is what holds the model.
		if want := float64(model.Counted(frame)); perPacket > want+0.5 || perPacket < want*0.95 {
			t.Errorf("MTU %d: the tbf counted %.1f bytes a packet; the model says %v", sp.MTU[0], perPacket, want)
		}
	}
}

// tbfStats reads the byte and packet counters of host a's root qdisc.
func tbfStats(t *testing.T, name string) netlink.GnetStatsBasic {
	t.Helper()
	c, err := dial(Namespace(name, A))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.nl.LinkByName(Iface)
	if err != nil {
		t.Fatal(err)
	}
	q, err := c.rootQdisc(l)
	if err != nil || q == nil || q.Type() != "tbf" || q.Attrs().Statistics == nil || q.Attrs().Statistics.Basic == nil {
		t.Fatalf("root qdisc of %s: %v, %v", Iface, q, err)
	}
	return *q.Attrs().Statistics.Basic
}

// iperf3 runs one iperf3 test from a to b, after omit seconds of warm-up
// left out of the figures, and returns the received rate.
func iperf3(t *testing.T, name string, seconds, omit int) float64 {
	t.Helper()
	srv := exec.Command("iperf3", "-s", "-1", "-B", AddrB)
	if err := Start(name, B, srv); err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv.Process.Kill()
		srv.Wait()
	}()
	type result struct {
		Error string `json:"error"`
		End   struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	var res result
	for attempt := 0; ; attempt++ {
		res = result{}
		var out, stderr bytes.Buffer
		args := []string{"-c", AddrB, "-t", fmt.Sprint(seconds), "-O", fmt.Sprint(omit), "-J"}
		if runtime.NumCPU() >= 2 {
			args = append(args, "-A", "0,1") // sender and receiver apart
		}
		cli := exec.Command("iperf3", args...)
		cli.Stdout, cli.Stderr = &out, &stderr
		if err := Start(name, A, cli); err != nil {
			t.Fatal(err)
		}
		// iperf3 3.12 exits 0 even when it could not connect: the JSON
		// "error" field is what tells.
		werr := cli.Wait()
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("iperf3 client: %v, output %v: %s %s", werr, err, out.String(), stderr.String())
		}
		// The server may not listen yet.
		if strings.Contains(res.Error, "unable to connect") && attempt < 50 {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if werr != nil || res.Error != "" || res.End.SumReceived.BitsPerSecond == 0 {
			t.Fatalf("iperf3 client: %v, error %q: %s", werr, res.Error, stderr.String())
		}
		break
	}
	return res.End.SumReceived.BitsPerSecond / 1e9
}

func TestUpIdempotent(t *testing.T) {
	const name = "t-idem"
	dir := newLab(t, name)
	c := Config{Name: name, Scenario: SmallBuffers, Rate: 1e9}
	up(t, c)
	rec := filepath.Join(dir, "lab", name+".json")
	before, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	var st1 unix.Stat_t
	unix.Stat(rec, &st1)
	res := up(t, c)
	if !res.Unchanged() || res.Created {
		t.Errorf("second up: created=%v changes=%v, want unchanged", res.Created, res.Changes)
	}
	after, _ := os.ReadFile(rec)
	var st2 unix.Stat_t
	unix.Stat(rec, &st2)
	if !bytes.Equal(before, after) || st1.Ino != st2.Ino {
		t.Error("an unchanged up rewrote the record")
	}
	var r record
	if err := json.Unmarshal(after, &r); err != nil || r.Phase != phaseUp || r.Scenario != SmallBuffers || r.RateBPS != 1e9 {
		t.Errorf("record %+v, %v", r, err)
	}
}

func nsInode(t *testing.T, ns string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(nsPath(ns), &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func TestReshape(t *testing.T) {
	const name = "t-reshape"
	newLab(t, name)
	up(t, Config{Name: name})
	inoA, inoB := nsInode(t, Namespace(name, A)), nsInode(t, Namespace(name, B))
	idx := read(t, name, A).index

	steps := []struct {
		c     Config
		mtu   [2]int
		rate  uint64
		small bool
	}{
		{Config{Scenario: Capped10G, MTU: 4000}, [2]int{4000, 4000}, 1_250_000_000, false},
		{Config{Scenario: Capped10G, Rate: 25e9, MTU: 4000}, [2]int{4000, 4000}, 3_125_000_000, false},
		{Config{Scenario: SmallBuffers}, [2]int{9000, 9000}, 0, true},
		{Config{Scenario: MTUMismatch}, [2]int{9000, 1500}, 0, false},
		{Config{Scenario: Healthy}, [2]int{9000, 9000}, 0, false},
	}
	for _, s := range steps {
		s.c.Name = name
		res := up(t, s.c)
		if res.Created || res.Unchanged() {
			t.Errorf("%+v: created=%v changes=%v, want a reshape", s.c, res.Created, res.Changes)
		}
		for _, ch := range res.Changes {
			if strings.Contains(ch, "create") || strings.Contains(ch, "delete") {
				t.Errorf("%+v: reshape recreated something: %s", s.c, ch)
			}
		}
		for i, h := range hosts() {
			rb := read(t, name, h)
			if rb.mtu != s.mtu[i] {
				t.Errorf("%+v: %s MTU %d, want %d", s.c, h, rb.mtu, s.mtu[i])
			}
			tbf, isTbf := rb.qdisc.(*netlink.Tbf)
			if s.rate == 0 && !isDefaultQdisc(rb.qdisc) || s.rate != 0 && (!isTbf || tbf.Rate != s.rate) {
				t.Errorf("%+v: %s qdisc %v, want rate %d B/s", s.c, h, rb.qdisc, s.rate)
			}
			// The declaration follows the rate, and goes with it.
			if bps, ok := netdev.DeclaredLineRate(rb.alias); ok != (s.rate != 0) || bps != s.rate*8 {
				t.Errorf("%+v: %s alias %q", s.c, h, rb.alias)
			}
			small := rb.sysctls[sysctlRmem] == "4096 65536 65536"
			if small != (s.small && h == B) {
				t.Errorf("%+v: %s tcp_rmem %q", s.c, h, rb.sysctls[sysctlRmem])
			}
		}
		if again := up(t, s.c); !again.Unchanged() {
			t.Errorf("%+v: the up after a reshape changed %v", s.c, again.Changes)
		}
	}
	if nsInode(t, Namespace(name, A)) != inoA || nsInode(t, Namespace(name, B)) != inoB || read(t, name, A).index != idx {
		t.Error("reshaping recreated a namespace or the veth")
	}
	echo(t, name)
}

func TestDown(t *testing.T) {
	const name = "t-down"
	dir := newLab(t, name)
	up(t, Config{Name: name, Scenario: Capped10G})
	// Hold namespace a open, as a process left inside it would: down must
	// still remove the veth, not just the name.
	held, err := os.Open(nsPath(Namespace(name, A)))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()

	res, err := Down(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Removed) != 3 {
		t.Errorf("removed %v, want two namespaces and the record", res.Removed)
	}
	assertGone(t, dir, name)
	err = onThread(func() error { return unix.Setns(int(held.Fd()), unix.CLONE_NEWNET) }, func() error {
		if _, err := net.InterfaceByName(Iface); err == nil {
			return fmt.Errorf("%s still exists in the removed namespace", Iface)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	res, err = Down(t.Context(), name)
	if err != nil || len(res.Removed) != 0 {
		t.Errorf("second down: %+v, %v; want nothing removed and no error", res, err)
	}
	rep, err := Status(t.Context(), name)
	if err != nil || len(rep.Labs) != 1 || rep.Labs[0].Exists {
		t.Errorf("status after down: %+v, %v", rep, err)
	}
}

// startHelper runs this test binary as a helper (see TestMain) and waits
// until it prints "paused".
func startHelper(t *testing.T, mode string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	paused := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "paused" {
				paused <- true
				break
			}
		}
		io.Copy(io.Discard, out)
		paused <- false
	}()
	select {
	case ok := <-paused:
		if !ok {
			cmd.Wait()
			t.Fatalf("helper %s ended without pausing: %s", mode, stderr.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("helper %s did not pause", mode)
	}
	return cmd, &stderr
}

func TestKilledUpIsCleanedByDown(t *testing.T) {
	const name = "t-killed"
	dir := newLab(t, name)
	cmd, _ := startHelper(t, "up-pause", name, "create namespace "+Namespace(name, A))
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	if st, _ := probeNS(nsPath(Namespace(name, A))); st != nsPinned {
		t.Fatalf("the killed up did not leave %s behind; the test proves nothing", Namespace(name, A))
	}
	rec, err := readRecord(filepath.Join(dir, "lab"), name)
	if err != nil || rec == nil || rec.Phase != phaseCreating {
		t.Errorf("record after kill: %+v, %v; want phase %q", rec, err, phaseCreating)
	}
	rep, err := Status(t.Context(), name)
	if err != nil || len(rep.Labs) != 1 || len(rep.Labs[0].Problems) == 0 {
		t.Errorf("status of a half-made lab shows no problem: %+v, %v", rep, err)
	}
	res, err := Down(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Removed) != 2 {
		t.Errorf("removed %v, want namespace a and the record", res.Removed)
	}
	assertGone(t, dir, name)
}

func TestKilledUpWithoutRecord(t *testing.T) {
	const name = "t-norec"
	dir := newLab(t, name)
	cmd, _ := startHelper(t, "up-pause", name, "create veth")
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	// Lose the record too, as with another LINERATE_STATE_DIR: down finds
	// the lab by its namespace names.
	os.Remove(filepath.Join(dir, "lab", name+".json"))
	if _, err := Down(t.Context(), name); err != nil {
		t.Fatal(err)
	}
	assertGone(t, dir, name)
}

func TestInterruptedUpLeavesNothing(t *testing.T) {
	const name = "t-sigint"
	dir := newLab(t, name)
	cmd, stderr := startHelper(t, "up-pause", name, "create veth")
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if code, _ := ExitCode(err); code != 2 || !strings.Contains(stderr.String(), "removed what it had created") {
		t.Errorf("interrupted up: exit %d, stderr %q", code, stderr.String())
	}
	assertGone(t, dir, name)
}

func TestTwoLabsCoexist(t *testing.T) {
	newLab(t, "t-one", "t-two")
	up(t, Config{Name: "t-one", Scenario: MTUMismatch})
	up(t, Config{Name: "t-two", Scenario: Capped10G})
	if m := read(t, "t-one", B).mtu; m != 1500 {
		t.Errorf("t-one b MTU %d, want 1500", m)
	}
	if m := read(t, "t-two", B).mtu; m != 9000 {
		t.Errorf("t-two b MTU %d, want 9000", m)
	}
	echo(t, "t-one")
	echo(t, "t-two")
	rep, err := Status(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, l := range rep.Labs {
		found[l.Name] = l.Exists && len(l.Problems) == 0
	}
	if !found["t-one"] || !found["t-two"] {
		t.Errorf("status of all labs: %+v", rep.Labs)
	}
	if _, err := Down(t.Context(), "t-one"); err != nil {
		t.Fatal(err)
	}
	echo(t, "t-two")
}

func TestStatus(t *testing.T) {
	const name = "t-status"
	newLab(t, name)
	up(t, Config{Name: name, Scenario: SmallBuffers, Rate: 25e9})
	rep, err := Status(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	l := rep.Labs[0]
	if !l.Exists || l.Scenario != SmallBuffers || l.Rate != "25gbit" || l.Phase != phaseUp || len(l.Problems) != 0 {
		t.Errorf("lab status %+v", l)
	}
	for _, h := range l.Hosts {
		var lab0 *LinkStatus
		for i := range h.Links {
			if h.Links[i].Name == Iface {
				lab0 = &h.Links[i]
			}
		}
		if lab0 == nil || lab0.MTU != 9000 || !lab0.Up || lab0.Qdisc.Kind != "tbf" || lab0.Qdisc.RateBPS != 25e9 ||
			len(lab0.Addrs) != 1 || lab0.Addrs[0] != h.Host.Addr()+"/24" {
			t.Errorf("%s: lab0 %+v", h.Host, lab0)
		}
		wantSysctls := 0
		if h.Host == B {
			wantSysctls = 2
		}
		if len(h.Sysctls) != wantSysctls {
			t.Errorf("%s: changed sysctls %v, want %d", h.Host, h.Sysctls, wantSysctls)
		}
	}
	if got := l.Hosts[1].Sysctls["net.ipv4.tcp_rmem"].Value; got != "4096 65536 65536" {
		t.Errorf("b tcp_rmem %q", got)
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	for _, want := range []string{"scenario small-buffers", "tbf 25gbit", "net.ipv4.tcp_wmem = 4096 16384 65536"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("status text lacks %q:\n%s", want, text.String())
		}
	}
}

func TestExecSeesTheHost(t *testing.T) {
	const name = "t-exec"
	newLab(t, name)
	up(t, Config{Name: name, MTU: 4321})
	var out bytes.Buffer
	cmd := exec.Command("sh", "-c", "cat /sys/class/net/lab0/mtu; ls /sys/class/net; cat /proc/sys/kernel/hostname")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := Start(name, A, cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if got := strings.Fields(out.String()); strings.Join(got, " ") != "4321 lab0 lo lr-t-exec-a" {
		t.Errorf("inside host a: %q, want the MTU 4321, only lab0 and lo, and the host's own name", out.String())
	}
	if h, _ := os.Hostname(); h == "lr-t-exec-a" {
		t.Error("naming the lab host renamed this machine")
	}
	// The sysfs mount stayed in the command's mount namespace.
	if _, err := os.Stat("/sys/class/net/lo"); err != nil {
		t.Errorf("the host's /sys changed: %v", err)
	}
	cmd = exec.Command("sh", "-c", "exit 3")
	if err := Start(name, B, cmd); err != nil {
		t.Fatal(err)
	}
	if code, _ := ExitCode(cmd.Wait()); code != 3 {
		t.Errorf("exit status %d, want 3", code)
	}
	if err := Start("t-nolab", A, exec.Command("true")); err == nil || !strings.Contains(err.Error(), "lab up --name t-nolab") {
		t.Errorf("Start in a missing lab: %v", err)
	}
}

func TestRunDemo(t *testing.T) {
	const name = "t-run"
	dir := newLab(t, name)
	t.Setenv(helperEnv, "doctor") // the lab hosts run this binary as doctor
	out := filepath.Join(t.TempDir(), "demo")
	var progress bytes.Buffer
	res, err := Run(t.Context(), RunConfig{
		Lab: Config{Name: name, Scenario: MTUMismatch}, OutDir: out, Self: os.Args[0], Progress: &progress,
	})
	if err != nil {
		t.Fatal(err)
	}
	assertGone(t, dir, name)
	want := map[string]string{
		"probe": StepOK, "doctor on a": StepFindings, "doctor on b": StepFailed, "bench": StepOK,
		"tune": StepOK, "bench after tune": StepOK, "report": StepOK,
	}
	if len(res.Steps) != len(want) {
		t.Fatalf("steps %+v", res.Steps)
	}
	for _, s := range res.Steps {
		if s.Status != want[s.Name] {
			t.Errorf("step %s: %s (%s), want %s", s.Name, s.Status, s.Detail, want[s.Name])
		}
	}
	if got := res.Failed(); len(got) != 1 || !strings.Contains(res.Steps[2].Detail, `unknown command "doctor"`) {
		t.Errorf("failed %v, detail %q", got, res.Steps[2].Detail)
	}
	// The scenario has no rate: the probe of the healthy lab (26.6 Gbit/s)
	// picked 25 Gbit/s, the fastest line rate not above it, and the lab
	// was reshaped to the scenario at that rate.
	if res.LineRate != "25gbit" || res.ProbeGbps != 26.6 || res.Scenario != MTUMismatch || res.Steps[0].Name != "probe" ||
		res.Steps[0].Detail != "the healthy lab carried 26.60 Gbit/s" {
		t.Errorf("line rate %q, probe %v, scenario %s, first step %+v", res.LineRate, res.ProbeGbps, res.Scenario, res.Steps[0])
	}
	if p, _ := os.ReadFile(filepath.Join(out, "probe.json")); !strings.Contains(string(p), "26.6e9") {
		t.Errorf("probe.json: %q", p)
	}
	if lu, _ := os.ReadFile(filepath.Join(out, "lab-up.txt")); !strings.HasPrefix(string(lu), "linerate lab up --name t-run --scenario mtu-mismatch --rate 25gbit\n") ||
		!strings.Contains(string(lu), "line rate 25gbit: a tbf on each host's lab0, standing in for a NIC's line rate") ||
		!strings.Contains(string(lu), "shape lab0 in lr-t-run-a: tbf 25gbit") {
		t.Errorf("lab-up.txt:\n%s", lu)
	}
	a, _ := os.ReadFile(filepath.Join(out, "doctor-a.txt"))
	b, _ := os.ReadFile(filepath.Join(out, "doctor-b.txt"))
	if !strings.Contains(string(a), "args doctor --iface lab0 --peer 198.18.0.2\nmtu 9000") ||
		!strings.Contains(string(b), "args doctor --iface lab0\nmtu 1500") {
		t.Errorf("doctor outputs:\n%s\n%s", a, b)
	}
	// Commands inside the lab keep their state (tune's journal) in the
	// output directory, not in the user's.
	if tn, _ := os.ReadFile(filepath.Join(out, "tune.txt")); !strings.Contains(string(tn), "args tune --iface lab0 --apply\nstate "+filepath.Join(out, "state")) {
		t.Errorf("tune step output: %q", tn)
	}
	// bench runs across the lab from here, report in the output directory,
	// both with the demo's state (the results database).
	for file, want := range map[string]string{
		"bench.txt":       "args bench lab:t-run -t 5 -O 1 --repeat 3 --label demo-before-tune\nstate ",
		"bench-tuned.txt": "args bench lab:t-run -t 5 -O 1 --repeat 3 --label demo-after-tune\nstate ",
		"report.txt":      "args report --label demo-before-tune --label demo-after-tune --title linerate lab demo -o report.html\nstate ",
	} {
		if b, _ := os.ReadFile(filepath.Join(out, file)); !strings.Contains(string(b), want+filepath.Join(out, "state")) {
			t.Errorf("%s: %q", file, b)
		}
	}
	if res.Report != filepath.Join(out, ReportFile) {
		t.Errorf("report %q", res.Report)
	}
	for _, f := range []string{"lab-up.txt", "lab-up.json", "summary.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	for _, line := range []string{"ok: probe", "lab t-run is reshaped (scenario mtu-mismatch, lab0 shaped to 25gbit, standing in for a NIC's line rate)",
		"ok: bench", "failed: doctor on b: ", "findings: doctor on a", "report: " + filepath.Join(out, ReportFile), "lab t-run is down"} {
		if !strings.Contains(progress.String(), line) {
			t.Errorf("progress lacks %q:\n%s", line, progress.String())
		}
	}

	// The demo refuses a lab that exists: it would remove it at the end.
	up(t, Config{Name: name})
	if _, err := Run(t.Context(), RunConfig{Lab: Config{Name: name}, OutDir: out, Self: os.Args[0]}); err == nil {
		t.Error("the demo took over an existing lab")
	}
}

// TestDemoRate: the fastest line rate not above what the probe measured,
// more than two thirds of it from 100 Mbit/s to 400 Gbit/s; 10 Gbit/s
// when it measured nothing.
func TestDemoRate(t *testing.T) {
	for _, tt := range []struct {
		gbps float64
		want Rate
	}{{26.6, 25e9}, {58.7, 50e9}, {23.57, 20e9}, {14.14, 10e9}, {15, 15e9}, {3.1, 3e9}, {0.05, 100e6}, {900, 400e9}, {0.75, 600e6}, {0, 10e9}, {-1, 10e9}} {
		if got := demoRate(tt.gbps); got != tt.want {
			t.Errorf("demoRate(%v) = %s; want %s", tt.gbps, got, tt.want)
		}
		if r := float64(demoRate(tt.gbps)) / 1e9; tt.gbps >= 0.1 && tt.gbps <= 400 && (r > tt.gbps || r <= tt.gbps/1.5) {
			t.Errorf("demoRate(%v) = %v Gbit/s: not in (2/3 of the probe, the probe]", tt.gbps, r)
		}
	}
	rates := lineRates()
	for i := 1; i < len(rates); i++ {
		if rates[i] <= rates[i-1] || float64(rates[i]) > 1.5*float64(rates[i-1]) {
			t.Errorf("rates %s then %s: not rising by at most 1.5", rates[i-1], rates[i])
		}
	}
	for _, r := range []Rate{1e9, 2.5e9, 5e9, 10e9, 25e9, 40e9, 50e9, 100e9, 200e9, 400e9} {
		if !slices.Contains(rates, r) {
			t.Errorf("Ethernet's %s is not among the rates", r)
		}
	}
}

func TestRunInterrupted(t *testing.T) {
	const name = "t-runint"
	dir := newLab(t, name)
	t.Setenv(helperEnv, "doctor-hang")
	out := filepath.Join(t.TempDir(), "demo")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		// Cancel once the first step runs inside the lab, as Ctrl-C would.
		for !bytes.Contains(must(os.ReadFile(filepath.Join(out, "doctor-a.txt"))), []byte("started")) {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
	}()
	// A rate of its own: no probe before the steps.
	res, err := Run(ctx, RunConfig{Lab: Config{Name: name, Rate: 1e9}, OutDir: out, Self: os.Args[0]})
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted demo returned %v", err)
	}
	assertGone(t, dir, name)
	if res == nil || len(res.Steps) == 0 || res.Steps[0].Status != StepCancelled || res.Steps[1].Status != StepCancelled {
		t.Errorf("steps of an interrupted demo: %+v", res)
	}
}

func must(b []byte, _ error) []byte { return b }

// sysfsOperState reads lab0's operstate and carrier in host h the way
// doctor does: from sysfs, inside the host. (A netlink query would not do:
// on recent kernels it runs the pending link-state work for the device
// first, so it never sees the stale state.)
func sysfsOperState(t *testing.T, name string, h Host) string {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command("cat", "/sys/class/net/lab0/operstate", "/sys/class/net/lab0/carrier")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := Start(name, h, cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("reading operstate in %s: %v: %s", h, err, out.String())
	}
	return strings.Join(strings.Fields(out.String()), " ")
}

// TestUpReturnsOperUp: when Up returns, both ends of the veth are
// operationally up, not only administratively: a doctor or iperf3 started
// right after must find a working link. The kernel may defer the operstate
// change of the second end by up to a second (linkwatch); read straight
// after Up, a few times over, host b (the end brought up last) first.
func TestUpReturnsOperUp(t *testing.T) {
	const name = "t-oper"
	newLab(t, name)
	for i, sc := range []Scenario{Healthy, SmallBuffers, MTUMismatch} {
		up(t, Config{Name: name, Scenario: sc})
		for _, h := range []Host{B, A} {
			if got := sysfsOperState(t, name, h); got != "up 1" {
				t.Errorf("round %d (%s): %s in %s right after Up: operstate and carrier %q, want \"up 1\"", i, sc, Iface, Namespace(name, h), got)
			}
		}
		if _, err := Down(t.Context(), name); err != nil {
			t.Fatal(err)
		}
	}
}

// nsInodes returns the inodes of the process's network and mount
// namespaces: /proc/self is the main thread's.
func nsInodes(t *testing.T) [2]uint64 {
	t.Helper()
	var out [2]uint64
	for i, p := range []string{"/proc/self/ns/net", "/proc/self/ns/mnt"} {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		out[i] = st.Ino
	}
	return out
}

// TestStartLeavesTheProcessAlone: Start enters the lab's namespaces on a
// thread it locks and never unlocks, so the runtime ends that thread. The
// main thread cannot be ended: had Start run there, the whole process
// (/proc/self/ns/net, which tune compares journals against) would stay in
// the lab. Start many times over and check the process is where it was.
func TestStartLeavesTheProcessAlone(t *testing.T) {
	const name = "t-start"
	newLab(t, name)
	up(t, Config{Name: name})
	before := nsInodes(t)
	for i := range 200 {
		cmd := exec.Command("true")
		if err := Start(name, []Host{A, B}[i%2], cmd); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		if now := nsInodes(t); now != before {
			t.Fatalf("after %d Start calls the process's namespaces (net, mnt) are %v, were %v", i+1, now, before)
		}
	}
}

// loopsInProc lists every process on the machine whose command line
// carries the busy loop's marker, read from /proc directly.
func loopsInProc(t *testing.T) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && slices.Contains(strings.Split(string(b), "\x00"), BusyMarker) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitNoLoop waits up to 3 s until pid is no longer a running busy loop
// (gone, or a zombie: its command line is empty).
func waitNoLoop(t *testing.T, pid int) bool {
	t.Helper()
	for range 60 {
		if !slices.Contains(loopsInProc(t), pid) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// TestBusyLoopLifecycle: busy-receiver's loop is started once, pinned to
// the last CPU, as nobody, in a session of its own, in host b; found
// again by a second up; started again when it died; stopped by an up with
// another scenario and by down; a pid the record names that is now
// another process is left alone; and with its namespace removed behind
// the lab's back the loop ends by itself.
func TestBusyLoopLifecycle(t *testing.T) {
	const name = "t-busy"
	dir := newLab(t, name)
	nsB := Namespace(name, B)
	cpu := BusyCPU()
	only := func(when string) busyLoop {
		t.Helper()
		ls := findBusy(nsB)
		if len(ls) != 1 {
			t.Fatalf("%s: %d busy loops in %s, want 1: %+v", when, len(ls), nsB, ls)
		}
		return ls[0]
	}
	res := up(t, Config{Name: name, Scenario: BusyReceiver})
	if !slices.ContainsFunc(res.Changes, func(c string) bool { return strings.HasPrefix(c, "start a busy loop pinned to CPU") }) {
		t.Errorf("changes %v: no loop started", res.Changes)
	}
	l := only("first up")
	uid, _ := busyUser()
	if l.CPU != cpu || l.UID != int(uid) || l.UID == 0 {
		t.Errorf("loop %+v: want pinned to CPU %d, as uid %d", l, cpu, uid)
	}
	if sid, err := unix.Getsid(l.PID); err != nil || sid != l.PID {
		t.Errorf("loop pid %d is in session %d (%v), want its own", l.PID, sid, err)
	}
	rec, err := readRecord(filepath.Join(dir, "lab"), name)
	if err != nil || rec.BusyLoop == nil || !sameLoop(rec.BusyLoop, &l) || rec.BusyLoop.StartTicks == 0 {
		t.Fatalf("record %+v (%v): want busy_loop %+v", rec, err, l)
	}
	st, err := Status(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	bl := st.Labs[0].BusyLoop
	if bl == nil || bl.PID != l.PID || bl.CPU != cpu || !bl.Recorded || len(st.Labs[0].Problems) != 0 {
		t.Errorf("status %+v, busy loop %+v", st.Labs[0], bl)
	}
	var text bytes.Buffer
	if err := st.WriteText(&text); err != nil || !strings.Contains(text.String(), fmt.Sprintf("busy loop: pid %d in host b, pinned to CPU %d", l.PID, cpu)) {
		t.Errorf("status text lacks the loop:\n%s", text.String())
	}

	if again := up(t, Config{Name: name, Scenario: BusyReceiver}); !again.Unchanged() {
		t.Errorf("second up changed %v", again.Changes)
	}
	if l2 := only("second up"); l2 != l {
		t.Errorf("second up: loop %+v, was %+v", l2, l)
	}

	// A loop that died is started again.
	if err := unix.Kill(l.PID, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !waitNoLoop(t, l.PID) {
		t.Fatalf("loop %d did not die", l.PID)
	}
	if res := up(t, Config{Name: name, Scenario: BusyReceiver}); res.Unchanged() {
		t.Error("up after the loop died changed nothing")
	}
	l = only("up after the loop died")

	// The record names another process under the loop's pid entry (a
	// reused pid): an up with another scenario stops the loop and only it.
	other := exec.Command("sleep", "30")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	otherStart, _ := procStart(other.Process.Pid)
	rec, _ = readRecord(filepath.Join(dir, "lab"), name)
	rec.BusyLoop = &busyLoop{PID: other.Process.Pid, StartTicks: otherStart, CPU: cpu}
	if err := writeRecord(filepath.Join(dir, "lab"), rec); err != nil {
		t.Fatal(err)
	}
	res = up(t, Config{Name: name, Scenario: Healthy})
	if !slices.Contains(res.Changes, fmt.Sprintf("stop the busy loop (pid %d, CPU %d) in %s", l.PID, cpu, nsB)) {
		t.Errorf("up healthy: changes %v, want the loop %d stopped", res.Changes, l.PID)
	}
	if !waitNoLoop(t, l.PID) || len(findBusy(nsB)) != 0 {
		t.Errorf("loop %d still runs after up healthy", l.PID)
	}
	if err := unix.Kill(other.Process.Pid, 0); err != nil {
		t.Errorf("the process the record named (pid %d) was killed: %v", other.Process.Pid, err)
	}
	if rec, _ := readRecord(filepath.Join(dir, "lab"), name); rec.BusyLoop != nil {
		t.Errorf("record after up healthy keeps a loop: %+v", rec.BusyLoop)
	}

	// Down stops it.
	up(t, Config{Name: name, Scenario: BusyReceiver})
	l = only("up before down")
	dres, err := Down(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(dres.Removed, fmt.Sprintf("busy loop (pid %d) in %s", l.PID, nsB)) || len(dres.Busy) != 0 {
		t.Errorf("down: removed %v, busy %v", dres.Removed, dres.Busy)
	}
	if !waitNoLoop(t, l.PID) {
		t.Errorf("loop %d still runs after down", l.PID)
	}
	assertGone(t, dir, name)

	// State lost and the namespace removed by hand: the loop ends by
	// itself.
	up(t, Config{Name: name, Scenario: BusyReceiver})
	l = only("up before losing the state")
	if err := deleteNS(nsB); err != nil {
		t.Fatal(err)
	}
	if !waitNoLoop(t, l.PID) {
		t.Errorf("loop %d still runs %s after its namespace was removed", l.PID, "3s")
	}
}

// TestPacingScenario: pacing puts fq with a per-flow maxrate on host a's
// egress only, 1 Gbit/s or --rate; it is planned, applied, read back,
// replaced by or replacing a tbf, and removed by an up that does not ask
// for it. It declares no line rate.
func TestPacingScenario(t *testing.T) {
	const name = "t-pacing"
	newLab(t, name)
	fqRate := func(h Host) uint32 {
		t.Helper()
		f, ok := read(t, name, h).qdisc.(*netlink.Fq)
		if !ok {
			return 0
		}
		return f.FlowMaxRate
	}
	res, err := Up(t.Context(), Config{Name: name, Scenario: Pacing})
	if errors.Is(err, ErrNoFq) {
		// The lab it was creating is gone (newLab's cleanup checks), and
		// the error says what the kernel lacks.
		if !strings.Contains(err.Error(), "CONFIG_NET_SCH_FQ") || !strings.Contains(err.Error(), "removed what it had created") {
			t.Errorf("error %q", err)
		}
		// CI: a kernel built without CONFIG_NET_SCH_FQ (as this
		// project's CI VM's is) cannot hold the qdisc, whoever runs the
		// test; the refusal above is what such a kernel gives, and
		// TestPacingPlan checks the fq's plan without one.
		t.Skipf("the kernel has no fq qdisc: %v (TestPacingPlan checks the plan)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Changes, fmt.Sprintf("pace each flow leaving %s in %s: fq maxrate 1gbit", Iface, Namespace(name, A))) {
		t.Errorf("changes %v", res.Changes)
	}
	if got := fqRate(A); got != 125_000_000 {
		t.Errorf("a: fq maxrate %d B/s, want 125000000", got)
	}
	if rb := read(t, name, B); !isDefaultQdisc(rb.qdisc) || rb.alias != "" || read(t, name, A).alias != "" {
		t.Errorf("b qdisc %v; aliases %q %q: want b unshaped, no line rate declared", rb.qdisc, read(t, name, A).alias, rb.alias)
	}
	st, err := Status(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	_ = st.WriteText(&text)
	if !strings.Contains(text.String(), "qdisc fq maxrate 1gbit") || st.Labs[0].LineRate != "" {
		t.Errorf("status:\n%s", text.String())
	}
	if again := up(t, Config{Name: name, Scenario: Pacing}); !again.Unchanged() {
		t.Errorf("second up changed %v", again.Changes)
	}
	steps := []struct {
		c   Config
		fq  uint32 // a's maxrate in B/s, 0: no fq
		tbf uint64 // a's tbf rate in B/s, 0: none
	}{
		{Config{Scenario: Pacing, Rate: 2.5e9}, 312_500_000, 0},
		{Config{Scenario: Shaped}, 0, 250_000_000},
		{Config{Scenario: Pacing}, 125_000_000, 0},
		{Config{Scenario: Healthy}, 0, 0},
	}
	for _, s := range steps {
		s.c.Name = name
		if res := up(t, s.c); res.Unchanged() {
			t.Errorf("%+v: nothing changed", s.c)
		}
		rb := read(t, name, A)
		tbf, isTbf := rb.qdisc.(*netlink.Tbf)
		switch {
		case s.fq != 0 && fqRate(A) != s.fq:
			t.Errorf("%+v: a's qdisc %v, want fq maxrate %d B/s", s.c, rb.qdisc, s.fq)
		case s.tbf != 0 && (!isTbf || tbf.Rate != s.tbf):
			t.Errorf("%+v: a's qdisc %v, want tbf %d B/s", s.c, rb.qdisc, s.tbf)
		case s.fq == 0 && s.tbf == 0 && !isDefaultQdisc(rb.qdisc):
			t.Errorf("%+v: a's qdisc %v, want none", s.c, rb.qdisc)
		}
		if again := up(t, s.c); !again.Unchanged() {
			t.Errorf("%+v: the up after changed %v", s.c, again.Changes)
		}
	}
	if _, err := (Config{Name: name, Scenario: Pacing, Rate: 40e9}).withDefaults(); err == nil {
		t.Error("pacing at 40 Gbit/s (past fq's 32-bit bytes/s) accepted")
	}
	echo(t, name)
}
