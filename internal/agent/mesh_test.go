package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"

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

	// A throughput test, as the schedule would run it.
	ms := agents[0].srv.meshSession()
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


