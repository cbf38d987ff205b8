package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/mesh"
	"github.com/linerate/linerate/internal/testutil"
)

// meshAgent is one agent of a test mesh on loopback.
type meshAgent struct {
	srv    *Server
	addr   string
	logs   *testutil.Buffer
	cancel context.CancelFunc
	done   chan error
}

// meshHosts lists n hosts at 127.0.0.11, .12, …
func meshHosts(n int) []MeshHost {
	var out []MeshHost
	for i := range n {
		out = append(out, MeshHost{Name: fmt.Sprintf("h%02d", i+1), Addr: netip.AddrFrom4([4]byte{127, 0, 0, byte(11 + i)})})
	}
	return out
}

// startMesh starts an agent for each host, all on one port, with the
// token tok(i) and the mesh settings m; each agent is stopped at the
// test's end (or earlier by its cancel).
func startMeshAgents(t *testing.T, hosts []MeshHost, tok func(i int) []byte, m Mesh) []*meshAgent {
	t.Helper()
	var port int
	var lns []net.Listener
	for try := 0; try < 20 && len(lns) < len(hosts); try++ {
		for _, l := range lns {
			l.Close()
		}
		lns = lns[:0]
		for i, h := range hosts {
			addr := netip.AddrPortFrom(h.Addr, uint16(port))
			ln, err := net.Listen("tcp", addr.String())
			if err != nil {
				break
			}
			if i == 0 {
				port = ln.Addr().(*net.TCPAddr).Port
			}
			lns = append(lns, ln)
		}
	}
	if len(lns) < len(hosts) {
		t.Fatal("no port free on every test address")
	}
	var out []*meshAgent
	for i, ln := range lns {
		logs := &testutil.Buffer{}
		mm := m
		mm.Hosts = slices.Clone(m.Hosts)
		srv := &Server{Token: tok(i), Logger: slog.New(slog.NewTextHandler(logs, nil)), Mesh: &mm}
		ctx, cancel := context.WithCancel(context.Background())
		a := &meshAgent{srv: srv, addr: ln.Addr().String(), logs: logs, cancel: cancel, done: make(chan error, 1)}
		go func() { a.done <- srv.Serve(ctx, ln) }()
		out = append(out, a)
	}
	t.Cleanup(func() {
		for _, a := range out {
			a.cancel()
			if err := <-a.done; err != nil {
				t.Errorf("Serve %s: %v", a.addr, err)
			}
			if t.Failed() {
				t.Logf("agent %s log:\n%s", a.addr, a.logs.String())
			}
		}
	})
	return out
}

var meshSecret = []byte("9a4f0c1e2b3d4a5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7")

func nodeKeys(t *testing.T, hosts []MeshHost) func(int) []byte {
	return func(i int) []byte {
		k, err := NodeKey(meshSecret, hosts[i].Name)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
}

// waitBuckets waits until k buckets have closed from now.
func waitBuckets(k int) {
	next := time.Now().Truncate(mesh.BucketLen).Add(mesh.BucketLen)
	time.Sleep(time.Until(next.Add(time.Duration(k-1)*mesh.BucketLen + 300*time.Millisecond)))
}

// TestMesh: four agents with node keys of one secret, configured by a
// controller that holds it, probe each other: every pair is ok with its
// round trips and no loss; a throughput test between two of them is
// authenticated with its pair's key and gives the pair a goodput; an
// agent that stops is down for the others and suspected whole.
func TestMesh(t *testing.T) {
	if testing.Short() {
		// CI: runs the suite without -short, so this runs there.
		t.Skip("a mesh takes buckets of 5 s to judge; -short skips it")
	}
	hosts := meshHosts(4)
	agents := startMeshAgents(t, hosts, nodeKeys(t, hosts), Mesh{Hosts: hosts, ProbeRate: 20, Flows: 3})
	id, err := NewMeshID()
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for i, a := range agents {
		self, err := ConfigureMesh(ctx, nil, a.addr, meshSecret, id, hosts)
		if err != nil || self != hosts[i].Name {
			t.Fatalf("configuring %s: %q, %v", a.addr, self, err)
		}
	}
	waitBuckets(2)
	for i, a := range agents {
		rep, err := MeshStatus(ctx, nil, a.addr, meshSecret)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Self != hosts[i].Name || len(rep.Pairs) != 3 || string(rep.ID) != string(id) {
			t.Fatalf("%s: %+v", a.addr, rep)
		}
		for _, p := range rep.Pairs {
			if p.State != mesh.OK || p.RTTUS == nil || p.RTTUS.P50 <= 0 || p.RTTUS.P99 < p.RTTUS.P50 || p.Loss == nil || *p.Loss != 0 || p.Probes < 50 {
				t.Errorf("%s → %s: %+v (rtt %+v)", p.Src, p.Dst, p, p.RTTUS)
			}
		}
		f := a.srv.MeshFigures()
		if f == nil || len(f.Peers) != 3 || len(f.Suspects) != 0 {
			t.Fatalf("%s figures: %+v", a.addr, f)
		}
	}

	// Round trips are timed from the kernel's departure stamps.
	ms := agents[0].srv.meshSession()
	ms.mu.Lock()
	for _, p := range ms.peers[1:] {
		t.Logf("h01 → %s: %d probes, %d answered from the kernel's stamps, %d from the agent's clock, %d round trips, p50 %v", p.name, p.seq, p.kernelTx, p.userTx, p.ringN, ms.pairStatus(p).RTTUS)
		if p.kernelTx == 0 || p.userTx > p.kernelTx/10 {
			t.Errorf("h01 → %s: %d kernel-stamped round trips, %d not", p.name, p.kernelTx, p.userTx)
		}
	}
	ms.mu.Unlock()

	// A throughput test, as the schedule would run it.
	ms.runTput(ms.peers[1])
	ms.mu.Lock()
	g, tputs, tperr := ms.peers[1].verdict.Goodput, ms.peers[1].tputs, ms.peers[1].lastTputErr
	ms.mu.Unlock()
	if tputs != 1 || tperr != "" {
		t.Fatalf("throughput test: %d done, error %q", tputs, tperr)
	}
	if g == nil && !strings.Contains(ms.peers[1].lastTputInconclusive, "CPU") {
		t.Errorf("no goodput, and no contention to say why")
	}

	// h04's agent goes.
	agents[3].cancel()
	<-agents[3].done
	agents[3].done <- nil
	waitBuckets(DownBucketsForTest + 1)
	for _, a := range agents[:3] {
		rep, err := MeshStatus(ctx, nil, a.addr, meshSecret)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range rep.Pairs {
			if want := map[bool]mesh.State{true: mesh.Down, false: mesh.OK}[p.Dst == "h04"]; p.State != want {
				t.Errorf("%s → %s: %s (%s), want %s", p.Src, p.Dst, p.State, p.Why, want)
			}
		}
		f := a.srv.MeshFigures()
		if len(f.Suspects) != 1 || f.Suspects[0].Name != "h04" || f.Suspects[0].Side != mesh.SideBoth {
			t.Errorf("%s suspects %+v", a.addr, f.Suspects)
		}
	}
}

// DownBucketsForTest is how many buckets without a reply make a pair down.
const DownBucketsForTest = mesh.DownBuckets

// TestMeshConfigRefused: a controller's mesh must keep to the agent's own
// list (or --mesh-peers), and only the secret's holder configures one.
func TestMeshConfigRefused(t *testing.T) {
	hosts := meshHosts(3)
	agents := startMeshAgents(t, hosts, nodeKeys(t, hosts), Mesh{Hosts: hosts, ProbeRate: 1})
	id, _ := NewMeshID()
	ctx := t.Context()
	other := slices.Clone(hosts)
	other[2].Addr = netip.MustParseAddr("127.0.0.99")
	extra := append(slices.Clone(hosts), MeshHost{Name: "h09", Addr: netip.MustParseAddr("127.0.0.19")})
	for _, c := range []struct {
		name   string
		secret []byte
		hosts  []MeshHost
		want   string
	}{
		{"a host moved", meshSecret, other, "not in this agent's mesh"},
		{"a host added", meshSecret, extra, "not in this agent's mesh"},
		{"another secret", testToken, hosts, "authentication failed"},
	} {
		_, err := ConfigureMesh(ctx, nil, agents[0].addr, c.secret, id, c.hosts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// A node key configures nothing, even its own node's.
	k, _ := NodeKey(meshSecret, "h01")
	if _, err := ConfigureMesh(ctx, nil, agents[0].addr, k, id, hosts); err == nil || !strings.Contains(err.Error(), "fleet's secret") {
		t.Errorf("node key: %v", err)
	}
	if _, err := MeshStatus(ctx, nil, agents[0].addr, meshSecret); err == nil || !strings.Contains(err.Error(), "waits for its mesh") {
		t.Errorf("status before configuration: %v", err)
	}
}

func TestCheckMeshHosts(t *testing.T) {
	h := func(name, addr string) MeshHost { return MeshHost{Name: name, Addr: netip.MustParseAddr(addr)} }
	for _, c := range []struct {
		hosts []MeshHost
		want  string
	}{
		{[]MeshHost{h("a", "10.0.0.1"), h("b", "10.0.0.2")}, ""},
		{[]MeshHost{h("a", "127.0.0.1"), h("b", "127.0.0.2")}, ""},
		{[]MeshHost{h("a", "127.0.0.1"), h("b", "10.0.0.2")}, "all on loopback"},
		{[]MeshHost{h("a", "10.0.0.1"), h("a", "10.0.0.2")}, "listed twice"},
		{[]MeshHost{h("a", "10.0.0.1"), h("b", "10.0.0.1")}, "another host's"},
		{[]MeshHost{h("a", "10.0.0.1"), h("b", "169.254.169.254")}, "link-local"},
		{[]MeshHost{h("a", "10.0.0.1"), h("b", "224.0.0.1")}, "not the address of one host"},
		{[]MeshHost{h("a", "10.0.0.1"), h("b", "0.0.0.0")}, "not the address of one host"},
		{[]MeshHost{h("a", "10.0.0.1"), h("-b", "10.0.0.3")}, "node name"},
	} {
		err := checkMeshHosts(c.hosts)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v: %v, want %q", c.hosts, err, c.want)
		}
	}
}

// meshPeers runs "meshpeers FILE PORT SKIP": an agent of the mesh of
// FILE (NAME ADDRESS per line) for every host but SKIP, all in this
// process, on PORT, with the token of LINERATE_TOKEN, until SIGTERM: the
// peers of a measured agent (scripts/bench-mesh.sh).
func meshPeers(ctx context.Context, args []string) int {
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "meshpeers FILE PORT SKIP")
		return 3
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var hosts []MeshHost
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && !strings.HasPrefix(f[0], "#") {
			hosts = append(hosts, MeshHost{Name: f[0], Addr: netip.MustParseAddr(f[1])})
		}
	}
	tok := []byte(os.Getenv(TokenEnv))
	var wg sync.WaitGroup
	for _, h := range hosts {
		if h.Name == args[2] {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(h.Addr.String(), args[1]))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		srv := &Server{Token: tok, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
			Mesh: &Mesh{Hosts: hosts, ThroughputEvery: 0}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Serve(ctx, ln); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}()
	}
	fmt.Println("peers up")
	wg.Wait()
	return 0
}

// meshPair makes two mesh sessions of one mesh on loopback, not started:
// a test drives their loops by hand.
func meshPair(t testing.TB) (a, b *meshSession) {
	t.Helper()
	hosts := []MeshHost{{Name: "a", Addr: netip.MustParseAddr("127.0.0.21")}, {Name: "b", Addr: netip.MustParseAddr("127.0.0.22")}}
	pc, err := net.ListenPacket("udp4", "127.0.0.21:0")
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(pc.LocalAddr().(*net.UDPAddr).Port)
	pc.Close()
	id := meshSharedID(hosts)
	var out []*meshSession
	for self := range hosts {
		srv := &Server{Token: testToken}
		k, _ := parseKey(testToken)
		srv.key = k
		srv.init()
		n := &meshNode{srv: srv, cfg: Mesh{ProbeRate: 10, Flows: 2}, local: netip.AddrPortFrom(hosts[self].Addr, port),
			own: k, log: slog.New(slog.DiscardHandler), ctx: t.Context()}
		keys := make([][]byte, 2)
		other := 1 - self
		ko, _ := nodeSecret(testToken, hosts[other].Name)
		keys[other] = meshPairKey(ko, id, hosts[self].Name, hosts[other].Name)
		own, _ := nodeSecret(testToken, hosts[self].Name)
		ms, err := newMeshSession(n, id, hosts, self, keys, own)
		if err != nil {
			t.Fatal(err)
		}
		ms.ctx, ms.cancel = context.WithCancel(t.Context())
		for _, p := range ms.peers {
			if p != nil { // the test ticks faster than any peer may probe
				p.rateMax, p.rateF, p.tokens = 1e9, 1e9, 1e9
			}
		}
		t.Cleanup(ms.close)
		out = append(out, ms)
	}
	return out[0], out[1]
}

// TestMeshLoopsDoNotAllocate: a tick of the probe loop — departures read,
// probes taken, probes and views sent — allocates nothing.
func TestMeshLoopsDoNotAllocate(t *testing.T) {
	a, b := meshPair(t)
	tick := func() {
		for _, ms := range []*meshSession{a, b} {
			ms.departures(0)
			ms.receive()
			ms.sendProbes(0)
		}
	}
	for range 5 { // the peers' first views and answers
		tick()
		a.sendViews(1)
		b.sendViews(1)
		time.Sleep(time.Millisecond)
	}
	if n := testing.AllocsPerRun(200, func() {
		tick()
		a.sendViews(1)
		b.receive()
	}); n != 0 {
		t.Errorf("a tick allocates %.1f times", n)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.peers[1]
	if p.replies < 150 || p.ringN < 150 || p.kernelTx < 150 || p.view == nil {
		t.Errorf("the ticks did not run: %d answers, %d round trips, %d kernel stamps, view %v", p.replies, p.ringN, p.kernelTx, p.view)
	}
}

// probeFrom makes b's probe seq to a, sent at tx, MACed with key.
func probeFrom(b *meshSession, seq uint64, tx int64, key []byte) []byte {
	h := meshHeader{typ: meshProbe, id: b.id8, src: uint16(b.self), dst: uint16(1 - b.self), epoch: b.epoch, seq: seq, tx: tx,
		ack: noSeq, prevSeq: noSeq, held: noHeld}
	buf := make([]byte, meshProbeLen)
	h.put(buf)
	newMeshMAC(key).tag(buf, meshHeaderLen)
	return buf
}

// TestMeshRefusesDatagrams: an agent takes a peer's probe once, from the
// peer's address, with its pair's MAC, sent within a minute of its clock,
// at the rate its peers may send; anything else changes nothing, and the
// agent answers no stranger.
func TestMeshRefusesDatagrams(t *testing.T) {
	a, b := meshPair(t)
	pa := a.peers[1]
	pa.rateMax, pa.rateF, pa.tokens = 25, 21, 25
	key := b.peers[0].out
	dst := net.UDPAddrFromAddrPort(a.node.local)
	from := func(addr string) *net.UDPConn {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(addr)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	peer, stranger := from("127.0.0.22"), from("127.0.0.99")
	send := func(c *net.UDPConn, b []byte) uint32 {
		t.Helper()
		if _, err := c.WriteToUDP(b, dst); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
		a.receive()
		return pa.rCount
	}
	now := time.Now().UnixNano()
	good := probeFrom(b, 1, now, key)
	if n := send(peer, good); n != 1 {
		t.Fatalf("a good probe: count %d", n)
	}
	if n := send(peer, good); n != 1 {
		t.Errorf("the same probe again: count %d", n)
	}
	if n := send(stranger, probeFrom(b, 2, now, key)); n != 1 {
		t.Errorf("a good probe from another address: count %d", n)
	}
	if n := send(peer, probeFrom(b, 3, now-int64(2*time.Minute), key)); n != 1 {
		t.Errorf("a probe of two minutes ago: count %d", n)
	}
	forged := probeFrom(b, 4, now, key)
	forged[30] ^= 1
	if n := send(peer, forged); n != 1 {
		t.Errorf("a probe altered: count %d", n)
	}
	other := probeFrom(b, 5, now, a.peers[1].out) // a's own key to b: the wrong way
	if n := send(peer, other); n != 1 {
		t.Errorf("a probe of the other pair's key: count %d", n)
	}
	if n := send(peer, append(probeFrom(b, 6, now, key), 0)); n != 1 {
		t.Errorf("a probe a byte too long: count %d", n)
	}
	// More than a peer may send: the bucket holds 25, minus the one taken.
	for i := range 60 {
		peer.WriteToUDP(probeFrom(b, uint64(10+i), now, key), dst)
	}
	time.Sleep(5 * time.Millisecond)
	a.receive()
	if pa.rCount < 20 || pa.rCount > 27 {
		t.Errorf("60 probes at once: %d taken, want about 25", pa.rCount)
	}
	// The agent answers at its ticks, and only its peers.
	a.sendProbes(0)
	stranger.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, _, err := stranger.ReadFromUDP(make([]byte, 2048)); err == nil {
		t.Errorf("the stranger got %d bytes", n)
	}
}

// FuzzMeshDatagram: whatever arrives at an agent's port, from a peer's
// address or not, is taken or dropped without a panic, and parsing a
// header and writing it back gives the same bytes.
func FuzzMeshDatagram(f *testing.F) {
	hosts := []MeshHost{{Name: "a", Addr: netip.MustParseAddr("127.0.0.21")}, {Name: "b", Addr: netip.MustParseAddr("127.0.0.22")}}
	id := meshSharedID(hosts)
	var id8 [8]byte
	copy(id8[:], id)
	probe := make([]byte, meshProbeLen)
	(&meshHeader{typ: meshProbe, id: id8, src: 1, seq: 7, ack: 3, prevSeq: 2, held: 900}).put(probe)
	view := make([]byte, meshHeaderLen+2*meshEntryLen+meshTagLen)
	(&meshHeader{typ: meshView, id: id8, src: 1, entries: 2}).put(view)
	f.Add(probe)
	f.Add(view)
	f.Add([]byte("LRM1"))
	a, _ := meshPair(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var h meshHeader
		if parseMeshHeader(b, &h) == nil {
			out := make([]byte, meshHeaderLen)
			h.put(out)
			if string(out) != string(b[:meshHeaderLen]) {
				t.Fatalf("header %x written back as %x", b[:meshHeaderLen], out)
			}
		}
		for _, from := range []string{"127.0.0.22:5301", "127.0.0.99:5301"} {
			a.take(b, netip.MustParseAddrPort(from), time.Now().UnixNano())
		}
	})
}

// FuzzMeshControl: a controller's mesh_config and an agent's mesh_report,
// whatever their bytes, pass their checks only within their bounds.
func FuzzMeshControl(f *testing.F) {
	for _, s := range []string{
		`{"type":"mesh_config","id":"AAAAAAAAAAAAAAAAAAAAAA==","hosts":[{"name":"h01","addr":"198.18.0.1"},{"name":"h02","addr":"198.18.0.2"}],"keys":["","AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="]}`,
		`{"type":"mesh_config","id":"AA==","hosts":[{"name":"h01","addr":"fe80::1%eth0"}],"keys":[]}`,
		`{"type":"mesh_report","id":"AAAAAAAAAAAAAAAAAAAAAA==","self":"h01","started":"2026-11-26T12:00:00Z","pairs":[{"src":"h01","dst":"h02","rtt_us":{"p50":31.5,"p99":80},"loss":0,"probes":600,"goodput_gbps":null,"state":"ok","since":"2026-11-26T12:00:00Z"}],"evidence":{"interface":"lab0","nic":{"qdisc_drops":0},"udp_buffer_drops":0,"cpu_busy_pct":12.5,"late_ms":0.4,"span_s":60},"settings":{"probe_rate":10,"flows":8,"throughput_every_s":3600,"window_s":60}}`,
		`{"type":"mesh_report","pairs":[{"src":"h01","dst":"h02","loss":-1,"state":"sideways"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		typ, err := messageType(body)
		if err != nil {
			return
		}
		if m, err := decode(typ, body, msgMeshConfig, func(*meshConfigMsg) error { return nil }); err == nil {
			if hosts, err := m.check(); err == nil {
				if len(hosts) < 2 || len(hosts) > MaxMeshHosts || len(m.ID) != meshIDSize || checkMeshHosts(hosts) != nil {
					t.Fatalf("mesh_config of %d hosts passed", len(hosts))
				}
			}
		}
		if r, err := decode(typ, body, msgMeshReport, (*MeshReport).check); err == nil {
			if len(r.Pairs) >= MaxMeshHosts {
				t.Fatalf("a report of %d pairs passed", len(r.Pairs))
			}
			for _, p := range r.Pairs {
				if p.Loss != nil && (*p.Loss < 0 || *p.Loss != *p.Loss) {
					t.Fatalf("loss %v passed", *p.Loss)
				}
			}
		}
	})
}
