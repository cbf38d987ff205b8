package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"time"

	"github.com/linerate/linerate/internal/mesh"
)

// The mesh's control messages, in a session of a client that holds this
// agent's key (the controller: linerate mesh up, status, down), flagged
// as mesh control in its auth. They claim nothing: status is answered
// while a test runs.
//
//	type          sender      bounds checked by the reader
//	mesh_config   controller  meshConfigMsg.check: ID, at most MaxMeshHosts hosts, a key per peer; the hosts against the agent's own list (meshNode.allowed)
//	mesh_status   controller  none (type only)
//	mesh_stop     controller  none (type only)
//	mesh_ok       agent       the node's name
//	mesh_report   agent       MeshReport.check: pairs, texts, evidence
const (
	msgMeshConfig = "mesh_config"
	msgMeshStatus = "mesh_status"
	msgMeshStop   = "mesh_stop"
	msgMeshOK     = "mesh_ok"
	msgMeshReport = "mesh_report"
)

func init() {
	for _, t := range []string{msgMeshConfig, msgMeshStatus, msgMeshStop, msgMeshOK, msgMeshReport} {
		messageTypes[t] = true
	}
}

type meshHostMsg struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
}

type meshConfigMsg struct {
	Type  string        `json:"type"`
	ID    []byte        `json:"id"`
	Hosts []meshHostMsg `json:"hosts"`
	// Keys are the keys of the agent's pairs out, by host, masked
	// (meshWrap); the agent's own entry is empty.
	Keys [][]byte `json:"keys"`
}

func (m meshConfigMsg) check() ([]MeshHost, error) {
	switch {
	case len(m.ID) != meshIDSize:
		return nil, fmt.Errorf("%w: a mesh ID of %d bytes", errBadMessage, len(m.ID))
	case len(m.Hosts) < 2 || len(m.Hosts) > MaxMeshHosts:
		return nil, fmt.Errorf("a mesh of %d hosts: 2 to %d", len(m.Hosts), MaxMeshHosts)
	case len(m.Keys) != len(m.Hosts):
		return nil, fmt.Errorf("%w: %d keys for %d hosts", errBadMessage, len(m.Keys), len(m.Hosts))
	}
	hosts := make([]MeshHost, len(m.Hosts))
	for i, h := range m.Hosts {
		a, err := netip.ParseAddr(h.Addr)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("mesh host %.64q: %.64q is not an IP address", h.Name, h.Addr)
		}
		if len(m.Keys[i]) != 0 && len(m.Keys[i]) != sha256Size {
			return nil, fmt.Errorf("%w: a key of %d bytes", errBadMessage, len(m.Keys[i]))
		}
		hosts[i] = MeshHost{Name: h.Name, Addr: a.Unmap()}
	}
	return hosts, checkMeshHosts(hosts)
}

type meshOKMsg struct {
	Type string `json:"type"`
	Self string `json:"self"`
}

// MeshReport is what an agent says of its part of the mesh.
type MeshReport struct {
	Type string `json:"type"`
	// ID is the mesh's; Self this agent's node; Started when it was
	// configured.
	ID      []byte    `json:"id"`
	Self    string    `json:"self"`
	Started time.Time `json:"started"`
	// Pairs are the agent's pairs out, with their figures.
	Pairs []mesh.PairStatus `json:"pairs"`
	// Evidence is the host's own record over the last minute; CPUPct and
	// RSS the agent's own cost.
	Evidence *mesh.HostEvidence `json:"evidence,omitempty"`
	CPUPct   *float64           `json:"cpu_pct,omitempty"`
	RSS      *uint64            `json:"rss_bytes,omitempty"`
	// Settings are the agent's.
	Settings mesh.Settings `json:"settings"`
}

// Bounds of a report.
const (
	maxMeshText   = 4 << 10
	maxMeshModule = 64
)

func finiteP(v *float64) bool { return v == nil || !math.IsNaN(*v) && !math.IsInf(*v, 0) && *v >= 0 }

func (m *MeshReport) check() error {
	if len(m.Pairs) >= MaxMeshHosts || len(m.Self) > maxNodeName {
		return fmt.Errorf("%w: a mesh report of %d pairs", errBadMessage, len(m.Pairs))
	}
	for _, p := range m.Pairs {
		switch {
		case len(p.Src) > maxNodeName || len(p.Dst) > maxNodeName || len(p.Why) > maxMeshText || len(p.Inconclusive) > maxMeshText:
			return fmt.Errorf("%w: a mesh report's pair of oversized texts", errBadMessage)
		case !finiteP(p.Loss) || !finiteP(p.GoodputGbps) || p.RTTUS != nil && (!finiteP(&p.RTTUS.P50) || !finiteP(&p.RTTUS.P99)):
			return fmt.Errorf("%w: a mesh report's pair of %s → %s with a figure that is not a number", errBadMessage, p.Src, p.Dst)
		}
		switch p.State {
		case mesh.OK, mesh.Degraded, mesh.Down, mesh.Unknown:
		default:
			return fmt.Errorf("%w: a pair in state %.20q", errBadMessage, p.State)
		}
	}
	if e := m.Evidence; e != nil {
		if len(e.NIC) > maxNICCauses || len(e.Module) > maxMeshModule || len(e.Top) > 16 || len(e.NICNotRead) > maxMeshText ||
			len(e.ModuleNotRead) > maxMeshText || len(e.Interface) > maxNICName || !finiteP(e.CPUBusyPct) {
			return fmt.Errorf("%w: a mesh report's oversized evidence", errBadMessage)
		}
		for _, s := range e.Module {
			if len(s) > maxNICName*2 {
				return fmt.Errorf("%w: a mesh report's oversized module flag", errBadMessage)
			}
		}
		for k := range e.NIC {
			if len(k) > maxNICName {
				return fmt.Errorf("%w: a mesh report's oversized counter name", errBadMessage)
			}
		}
		for _, p := range e.Top {
			if len(p.Name) > maxProcName {
				return fmt.Errorf("%w: a mesh report's oversized process name", errBadMessage)
			}
		}
	}
	if !finiteP(m.CPUPct) {
		return fmt.Errorf("%w: a mesh report's CPU share is not a number", errBadMessage)
	}
	return nil
}

// serveMeshControl answers one mesh control message of an authenticated
// controller.
func (s *Server) serveMeshControl(c *conn, keys sessionKeys, log *slog.Logger) {
	n := s.mesh.Load()
	typ, body, err := c.recv(setupTimeout)
	if err != nil {
		log.Warn("mesh control: reading the request", "reason", err.Error())
		return
	}
	fail := func(err error) {
		log.Warn("mesh control refused", "type", typ, "reason", err.Error())
		c.send(errorMsg{Type: msgError, Reason: err.Error()}, handshakeTimeout)
	}
	if n == nil {
		fail(errors.New("this agent is in no mesh (serve --mesh FILE, --mesh-lab NAME or --mesh-peers NETWORKS)"))
		return
	}
	switch typ {
	case msgMeshConfig:
		var m meshConfigMsg
		if err := decodeAs(typ, body, msgMeshConfig, &m); err != nil {
			fail(err)
			return
		}
		hosts, err := m.check()
		if err != nil {
			fail(err)
			return
		}
		self, ok := n.selfIn(hosts)
		if !ok {
			fail(fmt.Errorf("this agent (node %q at %s) is not a host of that mesh", n.own.node, n.local.Addr()))
			return
		}
		pk := make([][]byte, len(hosts))
		for i, k := range m.Keys {
			if i != self {
				if len(k) != sha256Size {
					fail(fmt.Errorf("%w: no key for the pair to %s", errBadMessage, hosts[i].Name))
					return
				}
				pk[i] = meshWrap(keys.wrap, m.ID, hosts[i].Name, k)
			}
		}
		if err := n.configure(m.ID, hosts, pk); err != nil {
			fail(err)
			return
		}
		c.send(meshOKMsg{Type: msgMeshOK, Self: hosts[self].Name}, handshakeTimeout)
	case msgMeshStatus:
		ms := n.cur.Load()
		if ms == nil {
			fail(errors.New("this agent waits for its mesh's configuration (linerate mesh up)"))
			return
		}
		rep := ms.report()
		c.send(rep, handshakeTimeout)
	case msgMeshStop:
		n.stopSession()
		c.send(meshOKMsg{Type: msgMeshOK, Self: n.own.node}, handshakeTimeout)
	default:
		fail(fmt.Errorf("%w: %q in a mesh control session", errBadMessage, typ))
	}
}

// report is the agent's part of the mesh, for mesh_status.
func (ms *meshSession) report() *MeshReport {
	r := &MeshReport{Type: msgMeshReport, ID: ms.id, Self: ms.hosts[ms.self].Name, Started: ms.started.UTC().Truncate(time.Second),
		Settings: ms.settings()}
	ms.mu.Lock()
	for _, p := range ms.peers {
		if p != nil {
			r.Pairs = append(r.Pairs, ms.pairStatus(p))
		}
	}
	ms.mu.Unlock()
	r.Evidence, r.CPUPct, r.RSS = ms.hostEvidence()
	return r
}

func (ms *meshSession) settings() mesh.Settings {
	return mesh.Settings{ProbeRate: ms.rate, Flows: ms.flows, ThroughputEveryS: ms.node.cfg.ThroughputEvery.Seconds(),
		WindowS: (mesh.ReportBuckets * mesh.BucketLen).Seconds()}
}

// NewMeshID returns a new mesh's ID.
func NewMeshID() ([]byte, error) { return randomBytes(meshIDSize) }

// meshControl opens a mesh control session with the agent at addr,
// authenticated with secret (the fleet's secret, or the agents' shared
// token), sends m and reads the answer of type want into out.
func meshControl(ctx context.Context, dial DialFunc, addr string, secret []byte, m func(sessionKeys) any, want string, out any) (sessionKeys, error) {
	if err := clientToken(secret); err != nil {
		return sessionKeys{}, err
	}
	c, nc, err := dialAgent(ctx, dial, addr)
	if err != nil {
		return sessionKeys{}, err
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	_, keys, err := clientHandshakeWith(c, credentials{token: secret, mesh: &meshAuth{Control: true}})
	if err != nil {
		if ctx.Err() != nil {
			return keys, context.Cause(ctx)
		}
		return keys, fmt.Errorf("the agent at %s: %w", addr, err)
	}
	if err := c.send(m(keys), handshakeTimeout); err != nil {
		return keys, fmt.Errorf("the agent at %s: %w", addr, err)
	}
	if err := c.expect(want, out, setupTimeout); err != nil {
		if ctx.Err() != nil {
			return keys, context.Cause(ctx)
		}
		return keys, fmt.Errorf("the agent at %s: %w", addr, err)
	}
	return keys, nil
}

// ConfigureMesh gives the agent at addr its mesh: the hosts (itself among
// them, by its node's name) and the keys of its pairs out, which only the
// holder of secret can derive. It returns the agent's node.
func ConfigureMesh(ctx context.Context, dial DialFunc, addr string, secret, id []byte, hosts []MeshHost) (string, error) {
	if len(id) != meshIDSize {
		return "", errors.New("a mesh ID is 16 bytes: NewMeshID")
	}
	if err := checkMeshHosts(hosts); err != nil {
		return "", err
	}
	tok, err := CheckToken(secret)
	if err != nil {
		return "", err
	}
	if k, _ := parseKey(tok); k.node != "" {
		return "", errors.New("a mesh is configured with the fleet's secret, not a node key")
	}
	ap, err := netip.ParseAddrPort(WithPort(addr, DefaultPort))
	if err != nil {
		return "", fmt.Errorf("agent %q: an IP address and port", addr)
	}
	self := -1
	for i, h := range hosts {
		if h.Addr.Unmap() == ap.Addr().Unmap() {
			self = i
		}
	}
	if self < 0 {
		return "", fmt.Errorf("the agent at %s is not one of the mesh's hosts", addr)
	}
	msg := func(keys sessionKeys) any {
		m := meshConfigMsg{Type: msgMeshConfig, ID: id, Keys: make([][]byte, len(hosts))}
		for i, h := range hosts {
			m.Hosts = append(m.Hosts, meshHostMsg{Name: h.Name, Addr: h.Addr.String()})
			if i == self {
				continue
			}
			k, err := nodeSecret(tok, h.Name)
			if err != nil {
				continue // a name checkMeshHosts passed derives
			}
			m.Keys[i] = meshWrap(keys.wrap, id, h.Name, meshPairKey(k, id, hosts[self].Name, h.Name))
		}
		return m
	}
	var ok meshOKMsg
	keys, err := meshControl(ctx, dial, addr, secret, msg, msgMeshOK, &ok)
	if err != nil {
		return "", err
	}
	if keys.node != "" && keys.node != hosts[self].Name {
		return "", fmt.Errorf("the agent at %s is node %s, and the mesh lists %s there", addr, keys.node, hosts[self].Name)
	}
	return ok.Self, nil
}

// MeshStatus asks the agent at addr for its part of the mesh.
func MeshStatus(ctx context.Context, dial DialFunc, addr string, secret []byte) (*MeshReport, error) {
	var rep MeshReport
	if _, err := meshControl(ctx, dial, addr, secret, func(sessionKeys) any { return bareMsg{Type: msgMeshStatus} }, msgMeshReport, &rep); err != nil {
		return nil, err
	}
	if err := rep.check(); err != nil {
		return nil, fmt.Errorf("the agent at %s: %w", addr, err)
	}
	return &rep, nil
}

// StopMesh asks the agent at addr to stop probing (the agents of a
// DaemonSet stay up).
func StopMesh(ctx context.Context, dial DialFunc, addr string, secret []byte) error {
	var ok meshOKMsg
	_, err := meshControl(ctx, dial, addr, secret, func(sessionKeys) any { return bareMsg{Type: msgMeshStop} }, msgMeshOK, &ok)
	return err
}
