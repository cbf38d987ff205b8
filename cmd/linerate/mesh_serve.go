package main

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/fleet"
	"github.com/linerate/linerate/internal/lab"
)

// meshServeFlags are serve's mesh options.
type meshServeFlags struct {
	file, lab, peers string
	rate             float64
	flows            int
	every            time.Duration
}

func addMeshServeFlags(fl *pflag.FlagSet, f *meshServeFlags) {
	fl.StringVar(&f.file, "mesh", "", "be a member of the always-on mesh of the hosts in this file (NAME ADDRESS per line)")
	fl.StringVar(&f.lab, "mesh-lab", "", "be a member of the always-on mesh of the hosts of this lab")
	fl.StringVar(&f.peers, "mesh-peers", "", "be a member of the mesh 'linerate mesh up' names, its hosts within these networks or addresses (comma-separated)")
	fl.Float64Var(&f.rate, "probe-rate", agent.DefaultProbeRate, "mesh: ping-pongs per second to each peer (0.1 to 100)")
	fl.IntVar(&f.flows, "mesh-flows", agent.DefaultMeshFlows, "mesh: source ports (5-tuples) the probes rotate over, to cover ECMP paths")
	fl.DurationVar(&f.every, "throughput-every", 24*time.Hour, "mesh: test each pair's throughput this often (about a second each, never two on a host at once; each host costs 2(n-1) tests a period); 0 never")
}

// config is the agent's mesh, or nil when no mesh option was given.
func (f *meshServeFlags) config() (*agent.Mesh, error) {
	n := 0
	for _, s := range []string{f.file, f.lab, f.peers} {
		if s != "" {
			n++
		}
	}
	switch {
	case n == 0:
		return nil, nil
	case n > 1:
		return nil, errors.New("give one of --mesh FILE, --mesh-lab NAME and --mesh-peers NETWORKS")
	}
	m := &agent.Mesh{ProbeRate: f.rate, Flows: f.flows, ThroughputEvery: f.every}
	switch {
	case f.file != "":
		hosts, err := readMeshFile(f.file)
		if err != nil {
			return nil, err
		}
		m.Hosts = hosts
	case f.lab != "":
		members, err := lab.Members(f.lab)
		if err != nil {
			return nil, fmt.Errorf("--mesh-lab: %w", err)
		}
		for _, mb := range members {
			m.Hosts = append(m.Hosts, agent.MeshHost{Name: string(mb.Host), Addr: netip.MustParseAddr(mb.Address)})
		}
	default:
		p, err := agent.ParseRelayPeers(f.peers)
		if err != nil {
			return nil, fmt.Errorf("--mesh-peers: %w", err)
		}
		m.Peers = p
	}
	if err := m.Check(); err != nil {
		return nil, err
	}
	return m, nil
}

// readMeshFile reads a mesh's hosts: a fleet's host list whose addresses
// are IP addresses (an agent resolves no names).
func readMeshFile(path string) ([]agent.MeshHost, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--mesh: %w", err)
	}
	defer file.Close()
	hosts, err := fleet.ParseHosts(path, file)
	if err != nil {
		return nil, fmt.Errorf("--mesh: %w", err)
	}
	var out []agent.MeshHost
	for _, h := range hosts {
		a, err := netip.ParseAddr(h.Address)
		if err != nil {
			return nil, fmt.Errorf("--mesh %s: host %s: %q is not an IP address (an agent resolves no names; write the address)", path, h.Name, h.Address)
		}
		out = append(out, agent.MeshHost{Name: h.Name, Addr: a.Unmap()})
	}
	if len(out) > agent.MaxMeshHosts {
		return nil, fmt.Errorf("--mesh %s: %d hosts, at most %d", path, len(out), agent.MaxMeshHosts)
	}
	return out, nil
}
