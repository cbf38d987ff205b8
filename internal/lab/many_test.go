package lab

// End-to-end tests of the lab of many hosts: real namespaces, a real
// bridge, veths, tbf and ICMP, as root. Run them under the machine's lab
// lock (flock /tmp/linerate-lab.lock go test ...).

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
)

// newManyLab is newLab for labs of many hosts: its cleanup checks that no
// namespace of the lab is left, whatever its hosts were called.
func newManyLab(t *testing.T, name string) string {
	t.Helper()
	needRoot(t)
	dir := t.TempDir()
	t.Setenv("LINERATE_STATE_DIR", dir)
	t.Cleanup(func() {
		if _, err := Down(t.Context(), name); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		assertNoNamespaces(t, name)
	})
	return dir
}

// assertNoNamespaces checks that /run/netns holds nothing of lab name.
func assertNoNamespaces(t *testing.T, name string) {
	t.Helper()
	ents, _ := os.ReadDir(netnsDir)
	for _, e := range ents {
		if n, ok := labOfNamespace(e.Name()); ok && n == name {
			t.Errorf("%s is left after down", nsPath(e.Name()))
		}
	}
}

// ping sends one ICMP echo request from host from to address to of lab
// name, through a raw socket made inside from's namespace, and waits for
// the matching reply.
func ping(name string, from Host, to string, seq int) error {
	var c *icmp.PacketConn
	err := inNS(Namespace(name, from), func() (err error) {
		c, err = icmp.ListenPacket("ip4:icmp", from.Addr())
		return err
	})
	if err != nil {
		return fmt.Errorf("icmp socket in %s: %w", from, err)
	}
	defer c.Close()
	id := os.Getpid() & 0xffff
	msg := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: id, Seq: seq, Data: []byte("linerate " + string(from))}}
	b, err := msg.Marshal(nil)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(b, &net.IPAddr{IP: net.ParseIP(to)}); err != nil {
		return fmt.Errorf("%s -> %s: %w", from, to, err)
	}
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	buf := make([]byte, 1500)
	for {
		n, peer, err := c.ReadFrom(buf)
		if err != nil {
			return fmt.Errorf("%s -> %s: no reply: %w", from, to, err)
		}
		m, err := icmp.ParseMessage(1, buf[:n])
		if err != nil || m.Type != ipv4.ICMPTypeEchoReply || peer.String() != to {
			continue
		}
		if e, ok := m.Body.(*icmp.Echo); ok && e.ID == id && e.Seq == seq {
			return nil
		}
	}
}

// TestManyHosts brings up a 6-host lab: every host has its address on
// lab0, every bridge port is on the bridge, every host pings every other
// and the switch, a second up changes nothing, exec runs by host name, and
// down leaves no namespace.
func TestManyHosts(t *testing.T) {
	const name, k = "t-many", 6
	newManyLab(t, name)
	res := up(t, Config{Name: name, Hosts: k})
	if !res.Created || res.Hosts != k {
		t.Errorf("first up: created=%v hosts=%d", res.Created, res.Hosts)
	}
	sw := readSwitch(t, name)
	for i := 1; i <= k; i++ {
		h := HostN(i)
		rb := read(t, name, h)
		if want := fmt.Sprintf("198.18.0.%d/24", i); len(rb.addrs) != 1 || rb.addrs[0] != want {
			t.Errorf("%s: addresses %v, want [%s]", h, rb.addrs, want)
		}
		if rb.mtu != jumboMTU || !rb.up || !rb.lo || !isDefaultQdisc(rb.qdisc) {
			t.Errorf("%s: MTU %d up %v lo %v qdisc %v", h, rb.mtu, rb.up, rb.lo, rb.qdisc)
		}
		p := sw.ports[i]
		if p == nil || p.Attrs().MasterIndex != sw.bridge.Attrs().Index || !isUp(p) || p.Attrs().MTU != jumboMTU {
			t.Errorf("port %s: %v", h, p)
		}
	}
	if len(sw.ports) != k {
		t.Errorf("%d ports on the bridge, want %d", len(sw.ports), k)
	}
	// Every host reaches every other one, and the switch's address.
	seq := 0
	for i := 1; i <= k; i++ {
		for j := 1; j <= k+1; j++ {
			if i == j {
				continue
			}
			to := SwitchAddr
			if j <= k {
				to = HostN(j).Addr()
			}
			seq++
			if err := ping(name, HostN(i), to, seq); err != nil {
				t.Error(err)
			}
		}
	}
	if again := up(t, Config{Name: name, Hosts: k}); !again.Unchanged() || again.Created {
		t.Errorf("second up: created=%v changes=%v, want unchanged", again.Created, again.Changes)
	}
	var out bytes.Buffer
	cmd := exec.Command("sh", "-c", "cat /proc/sys/kernel/hostname; ls /sys/class/net")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := Start(name, "h03", cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil || strings.Join(strings.Fields(out.String()), " ") != "lr-t-many-h03 lab0 lo" {
		t.Errorf("exec in h03: %q, %v", out.String(), err)
	}
	if err := Start(name, A, exec.Command("true")); err == nil || !strings.Contains(err.Error(), "no host a") {
		t.Errorf("exec in host a of a lab of many hosts: %v", err)
	}
	members, err := Members(name)
	if err != nil || len(members) != k || members[4].Host != "h05" || members[4].Address != "198.18.0.5" {
		t.Errorf("Members: %+v, %v", members, err)
	}
	rep, err := Status(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	l := rep.Labs[0]
	if !l.Exists || l.HostCount != k || len(l.Hosts) != k+1 || l.Hosts[0].Host != Switch || len(l.Problems) != 0 {
		t.Errorf("status: %+v", l)
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	for _, want := range []string{"--hosts 6", "br0", "198.18.0.254/24", "h06", "198.18.0.6/24"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("status text lacks %q:\n%s", want, text.String())
		}
	}
	dres, err := Down(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	if len(dres.Removed) != k+2 {
		t.Errorf("down removed %v, want %d namespaces and the record", dres.Removed, k+1)
	}
	assertNoNamespaces(t, name)
}

// switchRead is the bridge and ports of a lab's switch, read back.
type switchRead struct {
	bridge netlink.Link
	ports  map[int]netlink.Link
	qdiscs map[int]netlink.Qdisc
}

func readSwitch(t *testing.T, name string) switchRead {
	t.Helper()
	v, err := viewSwitch(Namespace(name, Switch))
	if err != nil {
		t.Fatal(err)
	}
	if v.state != nsPinned || v.bridge == nil || v.bridge.Type() != "bridge" || !isUp(v.bridge) {
		t.Fatalf("switch of %s: state %v bridge %v", name, v.state, v.bridge)
	}
	if len(v.addrs) != 1 || v.addrs[0].IPNet.String() != SwitchAddr+"/24" {
		t.Errorf("bridge addresses %v, want %s/24", v.addrs, SwitchAddr)
	}
	return switchRead{bridge: v.bridge, ports: v.ports, qdiscs: v.qdiscs}
}

// TestManyHostsRateAndFault: --rate shapes every host's lab0; a fault
// planted on one host's send side lowers its lab0's tbf, one on its
// receive side shapes its bridge port; the next up removes both.
func TestManyHostsRateAndFault(t *testing.T) {
	const name, k = "t-fault", 4
	newManyLab(t, name)
	c := Config{Name: name, Hosts: k, Rate: 2e9}
	up(t, c)
	rate := func(h Host) uint64 {
		tbf, ok := read(t, name, h).qdisc.(*netlink.Tbf)
		if !ok {
			return 0
		}
		return tbf.Rate * 8
	}
	for i := 1; i <= k; i++ {
		if r := rate(HostN(i)); r != 2e9 {
			t.Errorf("%s shaped at %d bit/s, want 2e9", HostN(i), r)
		}
	}
	if err := PlantFault(t.Context(), name, "h03", SendSide, 4e8); err != nil {
		t.Fatal(err)
	}
	if err := PlantFault(t.Context(), name, "h02", ReceiveSide, 3e8); err != nil {
		t.Fatal(err)
	}
	if r := rate("h03"); r != 4e8 {
		t.Errorf("h03 send fault: %d bit/s, want 4e8", r)
	}
	sw := readSwitch(t, name)
	if tbf, ok := sw.qdiscs[2].(*netlink.Tbf); !ok || tbf.Rate*8 != 3e8 {
		t.Errorf("h02 receive fault: port qdisc %v", sw.qdiscs[2])
	}
	if !isDefaultQdisc(sw.qdiscs[3]) {
		t.Errorf("h03's port is shaped too: %v", sw.qdiscs[3])
	}
	for _, bad := range []struct {
		h    Host
		side Side
	}{{"a", SendSide}, {"h09", SendSide}, {"h01", "both"}} {
		if err := PlantFault(t.Context(), name, bad.h, bad.side, 1e8); err == nil {
			t.Errorf("PlantFault(%s, %s) accepted", bad.h, bad.side)
		}
	}
	res := up(t, c)
	if res.Unchanged() {
		t.Fatal("up left the faults in place")
	}
	if r := rate("h03"); r != 2e9 {
		t.Errorf("after up h03 is shaped at %d bit/s, want 2e9", r)
	}
	if q := readSwitch(t, name).qdiscs[2]; !isDefaultQdisc(q) {
		t.Errorf("after up h02's port still has %v", q)
	}
}

// TestManyHostsResize: up with another --hosts adds or removes hosts
// without touching the others.
func TestManyHostsResize(t *testing.T) {
	const name = "t-resize"
	newManyLab(t, name)
	up(t, Config{Name: name, Hosts: 4})
	ino := nsInode(t, Namespace(name, "h01"))
	res := up(t, Config{Name: name, Hosts: 3})
	if res.Created || !strings.Contains(strings.Join(res.Changes, "\n"), "remove host h04") {
		t.Errorf("shrink: %+v", res)
	}
	if _, err := os.Lstat(nsPath(Namespace(name, "h04"))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("h04 is still there: %v", err)
	}
	if sw := readSwitch(t, name); len(sw.ports) != 3 {
		t.Errorf("ports after shrinking: %d, want 3", len(sw.ports))
	}
	up(t, Config{Name: name, Hosts: 5})
	if nsInode(t, Namespace(name, "h01")) != ino {
		t.Error("resizing recreated h01")
	}
	if err := ping(name, "h05", HostN(1).Addr(), 1); err != nil {
		t.Error(err)
	}
	// One name, one lab: no two-host lab over a lab of many hosts, and
	// the other way round.
	if _, err := Up(t.Context(), Config{Name: name}); err == nil || !strings.Contains(err.Error(), "many hosts") {
		t.Errorf("two-host up over a lab of many hosts: %v", err)
	}
}

func TestManyHostsOverTwoHostLab(t *testing.T) {
	const name = "t-twoone"
	newLab(t, name)
	up(t, Config{Name: name})
	if _, err := Up(t.Context(), Config{Name: name, Hosts: 3}); err == nil || !strings.Contains(err.Error(), "two-host lab") {
		t.Errorf("many-host up over a two-host lab: %v", err)
	}
	if _, err := Members(name); err == nil {
		t.Error("Members of a two-host lab")
	}
}

// TestKilledManyUpIsCleanedByDown: an up killed after it made some hosts
// leaves a record in phase creating; down removes every namespace, also
// without the record.
func TestKilledManyUpIsCleanedByDown(t *testing.T) {
	for _, lose := range []bool{false, true} {
		name := "t-mkill"
		if lose {
			name = "t-mnorec"
		}
		t.Run(name, func(t *testing.T) {
			dir := newManyLab(t, name)
			cmd, _ := startHelper(t, "up-pause", name, "create veth h03", "5")
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			// It made the switch and hosts h01 to h03, not h04 and h05.
			if st, _ := probeNS(nsPath(Namespace(name, "h03"))); st != nsPinned {
				t.Fatalf("the killed up did not leave h03 behind; the test proves nothing")
			}
			if st, _ := probeNS(nsPath(Namespace(name, "h04"))); st != nsAbsent {
				t.Fatalf("the up was not killed half-way: h04 exists")
			}
			rep, err := Status(t.Context(), name)
			if err != nil || len(rep.Labs) != 1 || len(rep.Labs[0].Problems) == 0 {
				t.Errorf("status of a half-made lab shows no problem: %+v, %v", rep, err)
			}
			if lose {
				os.Remove(filepath.Join(dir, "lab", name+".json"))
			}
			if _, err := Down(t.Context(), name); err != nil {
				t.Fatal(err)
			}
			assertNoNamespaces(t, name)
		})
	}
}
