package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/linerate/linerate/internal/mesh"
)

// The always-on mesh (serve --mesh; docs/architecture.md, "The mesh").
// An agent of a mesh probes every other host of its list continuously
// with authenticated UDP ping-pongs (meshprobe.go), answers theirs,
// tests each pair's throughput now and then (meshtput.go), reads its
// host's own record every minute (meshhost.go), judges its own pairs
// (internal/mesh) and tells the others how they are (views), so that each
// agent knows the whole mesh and blames as the controller would.
//
// Its probes go to the hosts of its list only: the list serve was given
// (a mesh file, a lab), or, with --mesh-peers, the list a controller
// gives, every address within those networks. Never a loopback,
// link-local, multicast or unspecified address (unless every host of the
// mesh is on loopback: a mesh of one machine), never one of its own but
// its entry.

// MeshHost is one host of a mesh: its node's name and its address.
type MeshHost struct {
	Name string
	Addr netip.Addr
}

// Mesh is an agent's part in an always-on mesh.
type Mesh struct {
	// Hosts are the mesh's hosts as serve was given them (a mesh file,
	// a lab); a controller's list must keep to them. Empty: the
	// controller names them, within Peers.
	Hosts []MeshHost
	// Peers bounds the hosts a controller may name (serve --mesh-peers).
	Peers []netip.Prefix
	// ProbeRate is ping-pongs per second to each peer; 0 is
	// DefaultProbeRate.
	ProbeRate float64
	// Flows is how many source ports the probes rotate over; 0 is
	// DefaultMeshFlows.
	Flows int
	// ThroughputEvery is how often each pair's throughput is tested
	// (mesh.TputSchedule); 0 never.
	ThroughputEvery time.Duration
}

// Bounds and defaults of a mesh.
const (
	DefaultProbeRate = 10
	MaxProbeRate     = 100
	DefaultMeshFlows = 8
	MaxMeshFlows     = 64
	// meshViewEvery is how often an agent tells its peers its pairs'
	// states; a view older than meshViewStale is not believed.
	meshViewEvery = 5 * time.Second
	meshViewStale = 3 * meshViewEvery
	// meshSkew bounds how far a datagram's send time may be from the
	// receiver's clock: replays of old datagrams are refused.
	meshSkew = time.Minute
)

// kindMesh sorts the mesh's dropped datagrams in the refusals log.
const kindMesh = "mesh datagram dropped"

// Check checks the settings and fills the defaults.
func (m *Mesh) Check() error {
	if m.ProbeRate == 0 {
		m.ProbeRate = DefaultProbeRate
	}
	if m.Flows == 0 {
		m.Flows = DefaultMeshFlows
	}
	switch {
	case math.IsNaN(m.ProbeRate) || m.ProbeRate < 0.1 || m.ProbeRate > MaxProbeRate:
		return fmt.Errorf("--probe-rate %g: 0.1 to %d probes per second per peer", m.ProbeRate, MaxProbeRate)
	case m.Flows < 1 || m.Flows > MaxMeshFlows:
		return fmt.Errorf("--mesh-flows %d: 1 to %d", m.Flows, MaxMeshFlows)
	case m.ThroughputEvery < 0 || m.ThroughputEvery > 0 && m.ThroughputEvery < time.Minute:
		return fmt.Errorf("--throughput-every %s: 0 (never) or a minute or more", m.ThroughputEvery)
	case len(m.Hosts) == 0 && len(m.Peers) == 0:
		return errors.New("a mesh needs its hosts (--mesh FILE, --mesh-lab NAME) or the networks a controller may name (--mesh-peers)")
	case len(m.Hosts) > MaxMeshHosts:
		return fmt.Errorf("a mesh of %d hosts: at most %d", len(m.Hosts), MaxMeshHosts)
	}
	return checkMeshHosts(m.Hosts)
}

// checkMeshHosts checks a host list: names a node may have, each once;
// addresses of one host each, each once; loopback only for all of them.
func checkMeshHosts(hosts []MeshHost) error {
	names := map[string]bool{}
	addrs := map[netip.Addr]bool{}
	loop := 0
	for _, h := range hosts {
		if err := checkNodeName(h.Name); err != nil {
			return fmt.Errorf("mesh host: %w", err)
		}
		a := h.Addr.Unmap()
		switch {
		case !a.IsValid() || a.IsUnspecified() || a.IsMulticast() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
			return fmt.Errorf("mesh host %s: %s is not the address of one host", h.Name, h.Addr)
		case a.IsLinkLocalUnicast():
			return fmt.Errorf("mesh host %s: %s is link-local (metadata services live there): give its routable address", h.Name, a)
		case names[h.Name]:
			return fmt.Errorf("mesh host %s is listed twice", h.Name)
		case addrs[a]:
			return fmt.Errorf("mesh host %s: address %s is another host's too", h.Name, a)
		}
		names[h.Name], addrs[a] = true, true
		if a.IsLoopback() {
			loop++
		}
	}
	if loop > 0 && loop != len(hosts) {
		return errors.New("a mesh's hosts are all on loopback (a mesh of one machine) or none is")
	}
	return nil
}

// meshNode is the mesh's part of a running Server.
type meshNode struct {
	srv   *Server
	cfg   Mesh
	local netip.AddrPort // the agent's address and port
	own   authKey
	log   *slog.Logger
	ctx   context.Context

	mu  sync.Mutex // configure and stop, one at a time
	cur atomic.Pointer[meshSession]
	// busy is set while this agent runs a throughput test's client side:
	// the agent takes no test of anyone then.
	busy atomic.Bool
}

// startMesh starts the agent's mesh on the address ln listens on. With a
// shared token and a host list it starts probing at once; otherwise it
// waits for a controller's mesh_config.
func (s *Server) startMesh(ctx context.Context, ln net.Listener) (*meshNode, error) {
	m := *s.Mesh
	if err := m.Check(); err != nil {
		return nil, err
	}
	local := netip.MustParseAddrPort(ln.Addr().String())
	local = netip.AddrPortFrom(local.Addr().Unmap(), local.Port())
	if local.Addr().IsUnspecified() {
		return nil, errors.New("a mesh agent needs --bind of its own address, not every address: its peers know it by one")
	}
	n := &meshNode{srv: s, cfg: m, local: local, own: s.key, log: s.logger().With("mesh", true), ctx: ctx}
	s.mesh.Store(n)
	if n.own.node == "" && len(m.Hosts) > 0 {
		self, ok := n.selfIn(m.Hosts)
		if !ok {
			return nil, fmt.Errorf("this agent (%s) is not a host of its mesh: list it, or --bind its address there", local.Addr())
		}
		keys := make([][]byte, len(m.Hosts))
		for i, h := range m.Hosts {
			if i == self {
				continue
			}
			k, err := nodeSecret(n.own.secret, h.Name)
			if err != nil {
				return nil, err
			}
			keys[i] = meshPairKey(k, meshSharedID(m.Hosts), m.Hosts[self].Name, h.Name)
		}
		if err := n.configure(meshSharedID(m.Hosts), m.Hosts, keys); err != nil {
			return nil, err
		}
	} else {
		n.log.Info("mesh: waiting for the controller's configuration (linerate mesh up)")
	}
	return n, nil
}

// selfIn finds this agent in hosts: by its node's name when it holds a
// node key, else by its address.
func (n *meshNode) selfIn(hosts []MeshHost) (int, bool) {
	for i, h := range hosts {
		if n.own.node != "" && h.Name == n.own.node || n.own.node == "" && h.Addr.Unmap() == n.local.Addr() {
			return i, true
		}
	}
	return 0, false
}

// allowed checks a controller's host list against the agent's own: the
// same host at the same address, or within --mesh-peers.
func (n *meshNode) allowed(hosts []MeshHost, self int) error {
	if err := checkMeshHosts(hosts); err != nil {
		return err
	}
	if hosts[self].Addr.Unmap() != n.local.Addr() {
		return fmt.Errorf("this agent listens on %s, and the mesh lists %s at %s", n.local.Addr(), hosts[self].Name, hosts[self].Addr)
	}
	own := n.srv.ownAddrs
	if own == nil {
		own = interfaceAddrs
	}
	mine := map[netip.Addr]bool{}
	for _, a := range own() {
		mine[a.Unmap().WithZone("")] = true
	}
	for i, h := range hosts {
		a := h.Addr.Unmap()
		if i != self && mine[a] && !a.IsLoopback() {
			return fmt.Errorf("mesh host %s: %s is one of this host's own addresses", h.Name, a)
		}
		if len(n.cfg.Hosts) > 0 {
			found := false
			for _, s := range n.cfg.Hosts {
				if s.Name == h.Name && s.Addr.Unmap() == a {
					found = true
				}
			}
			if !found {
				return fmt.Errorf("mesh host %s at %s is not in this agent's mesh (serve --mesh, --mesh-lab)", h.Name, a)
			}
			continue
		}
		ok := false
		for _, p := range n.cfg.Peers {
			ok = ok || p.Contains(a)
		}
		if !ok {
			return fmt.Errorf("mesh host %s at %s is outside --mesh-peers %s", h.Name, a, prefixesText(n.cfg.Peers))
		}
	}
	return nil
}

// configure starts (or restarts) the mesh of id over hosts with the pair
// keys of this agent's pairs out (keys[self] unused).
func (n *meshNode) configure(id []byte, hosts []MeshHost, keys [][]byte) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	self, ok := n.selfIn(hosts)
	if !ok {
		return fmt.Errorf("this agent (node %q at %s) is not a host of the mesh", n.own.node, n.local.Addr())
	}
	if err := n.allowed(hosts, self); err != nil {
		return err
	}
	if old := n.cur.Load(); old != nil {
		old.stop()
		n.cur.Store(nil)
	}
	ownKey := n.own.secret
	if n.own.node == "" {
		k, err := nodeSecret(n.own.secret, hosts[self].Name)
		if err != nil {
			return err
		}
		ownKey = k
	}
	ms, err := newMeshSession(n, id, hosts, self, keys, ownKey)
	if err != nil {
		return err
	}
	n.cur.Store(ms)
	ms.start()
	n.log.Info("mesh: probing", "self", hosts[self].Name, "peers", len(hosts)-1, "rate", n.cfg.ProbeRate, "flows", n.cfg.Flows,
		"throughput_every", n.cfg.ThroughputEvery.String())
	return nil
}

// stopSession stops probing (mesh down of a DaemonSet's agents, or the
// agent's end).
func (n *meshNode) stopSession() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ms := n.cur.Load(); ms != nil {
		ms.stop()
		n.cur.Store(nil)
		n.log.Info("mesh: stopped")
	}
}

// meshSession returns the mesh the agent is in, or nil.
func (s *Server) meshSession() *meshSession {
	n := s.mesh.Load()
	if n == nil {
		return nil
	}
	return n.cur.Load()
}

// meshBusy says why the agent takes no test now (it runs a mesh test's
// client side), or nil.
func (s *Server) meshBusy() error {
	if n := s.mesh.Load(); n != nil && n.busy.Load() {
		return errors.New("a mesh throughput test from this agent is running")
	}
	return nil
}

// meshSession is one configured mesh: its hosts, keys, sockets and the
// state of every pair.
type meshSession struct {
	node    *meshNode
	id      []byte
	id8     [8]byte
	hosts   []MeshHost
	self    int
	epoch   uint32
	started time.Time
	rate    float64
	flows   int

	resp  *udpBatch   // the agent's port: requests and views in, replies out
	socks []*udpBatch // one per flow: requests and views out, replies in
	peers []*meshPeer // by host index; nil for self
	keys  []keyRing   // each flow socket's datagrams, by number
	rh    meshHeader  // the probe loop's, of what it takes

	tput mesh.TputSchedule

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mu guards the probers' counts, the pairs and the views.
	mu   sync.Mutex
	host hostRecord
	// flags are this host's, sent in replies (meshFlagContended …).
	flags atomic.Uint32

	// The prober's own: its views' number.
	viewSeq uint64
}

func newMeshSession(n *meshNode, id []byte, hosts []MeshHost, self int, keys [][]byte, ownKey []byte) (*meshSession, error) {
	if len(hosts) < 2 {
		return nil, errors.New("a mesh needs at least 2 hosts")
	}
	tput, err := mesh.NewTputSchedule(len(hosts), n.cfg.ThroughputEvery)
	if err != nil {
		return nil, err
	}
	ms := &meshSession{node: n, id: id, hosts: hosts, self: self, epoch: rand.Uint32(), started: time.Now(),
		rate: n.cfg.ProbeRate, flows: n.cfg.Flows, tput: tput, peers: make([]*meshPeer, len(hosts))}
	copy(ms.id8[:], id)
	for i, h := range hosts {
		if i == self {
			continue
		}
		if len(keys[i]) != sha256Size {
			return nil, fmt.Errorf("no key for the pair %s → %s", hosts[self].Name, h.Name)
		}
		in := meshPairKey(ownKey, id, h.Name, hosts[self].Name)
		ms.peers[i] = newMeshPeer(i, h, n.local.Port(), keys[i], in, ms.rate)
	}
	if err := ms.open(); err != nil {
		ms.close()
		return nil, err
	}
	return ms, nil
}

const sha256Size = 32

// open makes the sockets: the agent's port, and one per flow on a port
// of the kernel's choice.
func (ms *meshSession) open() error {
	local := ms.node.local
	var err error
	// One byte more than the largest datagram taken: a longer one is
	// seen truncated and dropped.
	view := meshHeaderLen + len(ms.hosts)*meshEntryLen + meshTagLen
	if ms.resp, err = listenBatch(local, view+1, 1); err != nil {
		return fmt.Errorf("the mesh's UDP port: %w (is another agent of a mesh on %s?)", err, local)
	}
	for range ms.flows {
		c, err := listenBatch(netip.AddrPortFrom(local.Addr(), 0), meshProbeLen+1, max(view, meshProbeLen))
		if err != nil {
			return fmt.Errorf("a mesh probe socket: %w", err)
		}
		ms.socks = append(ms.socks, c)
	}
	ms.keys = make([]keyRing, ms.flows)
	return nil
}

func (ms *meshSession) close() {
	if ms.resp != nil {
		ms.resp.Close()
	}
	for _, c := range ms.socks {
		c.Close()
	}
}

// start runs the session's loops until stop.
func (ms *meshSession) start() {
	ms.ctx, ms.cancel = context.WithCancel(ms.node.ctx)
	run := func(f func()) {
		ms.wg.Add(1)
		go func() {
			defer ms.wg.Done()
			f()
		}()
	}
	run(func() {
		defer ms.close() // its sockets are the probe loop's alone
		ms.probe()
	})
	run(ms.evidenceLoop)
	if ms.node.cfg.ThroughputEvery > 0 {
		run(ms.throughputLoop)
	}
}

// stop ends the loops and waits for them.
func (ms *meshSession) stop() {
	ms.cancel()
	ms.wg.Wait()
}

// peerByName returns the peer named name, or nil.
func (ms *meshSession) peerByName(name string) *meshPeer {
	for _, p := range ms.peers {
		if p != nil && p.name == name {
			return p
		}
	}
	return nil
}

// testKey is the handshake key of a throughput test m from a peer: m must
// name this mesh, a host of it, and this agent.
func (ms *meshSession) testKey(m *meshAuth) ([]byte, error) {
	if string(m.ID) != string(ms.id) {
		return nil, fmt.Errorf("%w: a mesh test of another mesh", ErrAuth)
	}
	if m.To != ms.hosts[ms.self].Name {
		return nil, fmt.Errorf("%w: a mesh test for %.64q, this is %s", ErrAuth, m.To, ms.hosts[ms.self].Name)
	}
	p := ms.peerByName(m.From)
	if p == nil {
		return nil, fmt.Errorf("%w: a mesh test from %.64q, not a host of the mesh", ErrAuth, m.From)
	}
	return meshTestKey(p.in), nil
}

// meshTestLimits bound what a mesh peer's session may ask: one test of
// one stream, no longer than the schedule's.
func meshTestLimits(r requestMsg) error {
	if r.Streams != 1 || r.Direction != "" && r.Direction != "send" || time.Duration(r.DurationMS+r.OmitMS)*time.Millisecond > mesh.TestTime+mesh.TestOmit {
		return fmt.Errorf("a mesh peer's test is one stream sent for at most %s", mesh.TestTime+mesh.TestOmit)
	}
	return nil
}
