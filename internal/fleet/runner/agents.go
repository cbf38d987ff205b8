// Package runner runs a fleet's tests through the linerate agents of its
// hosts: it starts an agent on every host with a launcher (a lab host,
// ssh, srun), or finds them running (a Kubernetes DaemonSet, agents
// started by hand), and runs each test from host A to host B as a relayed
// native test — the controller asks A's agent to test toward B's agent
// and A streams the test back (docs/architecture.md, "Fleet runs") — which
// is stored in the results database as any native bench run is.
//
// One secret, made for the fleet run, stays with the controller; each
// agent it starts gets its own node's key, derived from the secret and
// the host's name (agent.NodeKey), through its launcher's standard input.
// The controller authenticates to each agent with the key it derives, and
// gives an agent that relays a test a ticket for that one peer. The
// agents it started are stopped when the run ends, however it ends.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/fleet"
	"github.com/linerate/linerate/internal/fleet/launch"
	"github.com/linerate/linerate/internal/result"
)

// Launcher starts the agent of a host (launch.Lab, launch.SSH and
// launch.Slurm through LabLauncher, SSHLauncher and SlurmLauncher).
type Launcher interface {
	// Binary returns the path of the linerate binary on host h, copying
	// it there first if the launcher does that.
	Binary(ctx context.Context, h fleet.Host) (string, error)
	// Start starts argv on host h with token in a new file whose path
	// replaces launch.TokenFile in argv.
	Start(ctx context.Context, h fleet.Host, argv []string, token []byte) (*launch.Process, error)
}

// Bounds of starting and checking agents.
const (
	// startTimeout bounds one host's agent start, from the launcher's
	// first step to its "Listening on": an ssh copy of the binary to a
	// slow host included.
	startTimeout = 2 * time.Minute
	// probeTimeout bounds a probe of an agent after a failed test.
	probeTimeout = 5 * time.Second
	// MaxAtOnce bounds the agents started, probed or stopped at once:
	// 64 ssh connections at a time through one jump host would hit its
	// sshd's MaxStartups.
	MaxAtOnce = 8
)

// Agents are the agents of a fleet run's hosts.
type Agents struct {
	// Token is the fleet run's token.
	Token []byte
	// Port is the agents' port.
	Port int
	// Dial connects to an agent; nil is a net.Dialer.
	Dial agent.DialFunc
	// ExtraArgs, if set, adds to each agent's command line (a mesh's
	// settings: linerate mesh up).
	ExtraArgs func(h fleet.Host, addr netip.AddrPort) []string
	// MaxClients names the hosts whose agent Launch starts taking that
	// many clients' tests at once (serve --max-clients): an incast's
	// receiver. The others take one.
	MaxClients map[string]int

	hosts []fleet.Host
	addr  map[string]netip.AddrPort // by host name
	procs map[string]*launch.Process
	bins  map[string]string           // the binary each launched agent runs
	info  map[string]*result.HostInfo // from each agent's welcome

	mu   sync.Mutex
	down map[string]error // hosts whose agent cannot take part
}

// New makes the Agents of hosts for agents listening on port with
// token, resolving the hosts' addresses here: an agent resolves no names.
// A host whose address does not resolve is down from the start.
func New(ctx context.Context, hosts []fleet.Host, port int, token []byte, dial agent.DialFunc) (*Agents, error) {
	if _, err := agent.CheckToken(token); err != nil {
		return nil, err
	}
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("port %d: 1 to 65535", port)
	}
	a := &Agents{Token: token, Port: port, Dial: dial, hosts: hosts, addr: map[string]netip.AddrPort{},
		procs: map[string]*launch.Process{}, bins: map[string]string{}, info: map[string]*result.HostInfo{}, down: map[string]error{}}
	for _, h := range hosts {
		ip, err := resolve(ctx, h.Address)
		if err != nil {
			a.down[h.Name] = err
			continue
		}
		a.addr[h.Name] = netip.AddrPortFrom(ip, uint16(port))
	}
	return a, nil
}

// resolve returns the address of a host: its own when it is one, else
// the first its name resolves to here.
func resolve(ctx context.Context, s string) (netip.Addr, error) {
	if ip, err := netip.ParseAddr(s); err == nil {
		return ip.Unmap(), nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", s)
	if err != nil || len(ips) == 0 {
		return netip.Addr{}, fmt.Errorf("its address %s does not resolve here: %v", s, err)
	}
	return ips[0].Unmap(), nil
}

// Addr is where host h's agent listens.
func (a *Agents) Addr(h fleet.Host) (netip.AddrPort, bool) {
	ap, ok := a.addr[h.Name]
	return ap, ok
}

// Binary is the path of the linerate binary host h's agent was started
// from, on that host ("" for agents this run did not start).
func (a *Agents) Binary(h fleet.Host) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.bins[h.Name]
}

// Down says why host h cannot take part, or nil.
func (a *Agents) Down(h fleet.Host) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.down[h.Name]
}

func (a *Agents) markDown(h fleet.Host, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.down[h.Name] == nil {
		a.down[h.Name] = err
	}
}

// Info is what host h's agent said about its host when it was probed
// (nil before, or when it did not answer).
func (a *Agents) Info(h fleet.Host) *result.HostInfo { return a.info[h.Name] }

// ServeArgs is the agent's command line on a host: listen on the host's
// address only, with the fleet's token file, and refuse tests longer than
// the fleet's (maxDuration): the one-time agents take nothing else.
func ServeArgs(bin string, addr netip.AddrPort, maxDuration time.Duration) []string {
	return []string{bin, "serve", "--bind", addr.Addr().String(), "--port", strconv.Itoa(int(addr.Port())),
		"--token-file", launch.TokenFile, "--max-duration", maxDuration.String()}
}

// relayPeers is serve --relay-peers for the fleet's agents: every host's
// resolved address, so that an agent relays only to the others.
func (a *Agents) relayPeers() string {
	addrs := make([]netip.Addr, 0, len(a.addr))
	for _, ap := range a.addr {
		addrs = append(addrs, ap.Addr())
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	return agent.RelayPeersArg(addrs)
}

// Launch starts the agent of every host with l (at most MaxAtOnce at a
// time), each allowed tests of up to maxDuration, and waits until each
// listens. A host whose agent does not start is down, with the reason;
// the others go on. progress, if set, hears of each host (from one
// goroutine at a time).
func (a *Agents) Launch(ctx context.Context, l Launcher, maxDuration time.Duration, progress func(h fleet.Host, err error)) {
	var mu sync.Mutex
	a.each(ctx, func(h fleet.Host) {
		p, bin, err := a.launch(ctx, l, h, maxDuration)
		mu.Lock()
		defer mu.Unlock()
		if p != nil {
			a.procs[h.Name] = p
		}
		if bin != "" {
			a.mu.Lock()
			a.bins[h.Name] = bin
			a.mu.Unlock()
		}
		if err != nil {
			a.markDown(h, err)
		}
		if progress != nil {
			progress(h, err)
		}
	})
}

// each runs fn for every host not down, at most MaxAtOnce at a time.
func (a *Agents) each(ctx context.Context, fn func(fleet.Host)) {
	sem := make(chan struct{}, MaxAtOnce)
	var wg sync.WaitGroup
	for _, h := range a.hosts {
		if a.Down(h) != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			fn(h)
		}()
	}
	wg.Wait()
}

// launch starts one host's agent and waits for its "Listening on". A
// process that started but did not come up is returned too, so that Stop
// ends it.
func (a *Agents) launch(ctx context.Context, l Launcher, h fleet.Host, maxDuration time.Duration) (*launch.Process, string, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	// A host that does not answer at all ends with the launcher killed
	// at the deadline: say that, not how the launcher died.
	failed := func(err error) error {
		if parent.Err() == nil && ctx.Err() != nil {
			return fmt.Errorf("its agent did not start within %s (is the host up and reachable?): %w", startTimeout, err)
		}
		return fmt.Errorf("its agent did not start: %w", err)
	}
	bin, err := l.Binary(ctx, h)
	if err != nil {
		return nil, "", failed(err)
	}
	argv := append(ServeArgs(bin, a.addr[h.Name], maxDuration), "--relay-peers", a.relayPeers())
	if n := a.MaxClients[h.Name]; n > 1 {
		argv = append(argv, "--max-clients", strconv.Itoa(n))
	}
	if a.ExtraArgs != nil {
		argv = append(argv, a.ExtraArgs(h, a.addr[h.Name])...)
	}
	// Each agent gets its own node's key, never the fleet's secret: one
	// host's key opens no other agent.
	key, err := agent.NodeKey(a.Token, h.Name)
	if err != nil {
		return nil, bin, failed(err)
	}
	p, err := l.Start(ctx, h, argv, key)
	if err != nil {
		return nil, bin, failed(err)
	}
	if _, err := p.WaitLine(ctx, agent.ListeningPrefix); err != nil {
		return p, bin, failed(err)
	}
	return p, bin, nil
}

// Probe authenticates to every agent not down (at most MaxAtOnce at a
// time) and keeps what each says about its host; an agent that does not
// answer makes its host down.
func (a *Agents) Probe(ctx context.Context) {
	var mu sync.Mutex
	a.each(ctx, func(h fleet.Host) {
		info, err := a.probe(ctx, h)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			a.markDown(h, err)
			return
		}
		a.info[h.Name] = info
	})
}

func (a *Agents) probe(ctx context.Context, h fleet.Host) (*result.HostInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	info, err := agent.Probe(ctx, a.Dial, a.addr[h.Name].String(), a.Token)
	if err != nil {
		return nil, fmt.Errorf("its agent does not answer: %w", err)
	}
	return info, nil
}

// gone says why host h's agent is gone, or nil when it answers: its
// process ended (when this run started it), or a probe fails.
func (a *Agents) gone(ctx context.Context, h fleet.Host) error {
	if err := a.Down(h); err != nil {
		return err
	}
	if p := a.procs[h.Name]; p != nil {
		select {
		case <-p.Done():
			return exited(p)
		default:
		}
	}
	_, err := a.probe(ctx, h)
	if err != nil {
		if p := a.procs[h.Name]; p != nil {
			// It may have died a moment ago: its launcher says how.
			select {
			case <-p.Done():
				return exited(p)
			case <-time.After(time.Second):
			}
		}
	}
	return err
}

func exited(p *launch.Process) error {
	ex := p.Exit()
	if ex.Err != nil {
		return fmt.Errorf("its agent is gone: %v", ex.Err)
	}
	return fmt.Errorf("its agent exited (status %d): %s", ex.Code, p.Tail())
}

// Watch calls gone, from a goroutine of its own per host, when an agent
// Launch started ends (it died, or Stop stopped it), with how it ended,
// until ctx is done.
func (a *Agents) Watch(ctx context.Context, gone func(h fleet.Host, err error)) {
	for _, h := range a.hosts {
		p := a.procs[h.Name]
		if p == nil {
			continue
		}
		go func() {
			select {
			case <-p.Done():
				gone(h, exited(p))
			case <-ctx.Done():
			}
		}()
	}
}

// Stop stops every agent Launch started (at most MaxAtOnce at a time) and
// waits until each is gone; each is killed if it does not stop within
// the launcher's grace.
func (a *Agents) Stop() {
	sem := make(chan struct{}, MaxAtOnce)
	var wg sync.WaitGroup
	for _, p := range a.procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			p.Stop(context.Background())
		}()
	}
	wg.Wait()
}

// FetchDoctors asks every agent that answers for its host's doctor
// report (at most MaxAtOnce at a time), to store with each run; a host
// whose report does not come is noted, not down.
func (a *Agents) FetchDoctors(ctx context.Context) (reports map[string]json.RawMessage, notes []string) {
	reports = map[string]json.RawMessage{}
	var mu sync.Mutex
	a.each(ctx, func(h fleet.Host) {
		rep, _, err := agent.FetchDoctorVia(ctx, a.Dial, a.addr[h.Name].String(), a.Token)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s: no doctor report: %v", h.Name, err))
			return
		}
		reports[h.Name] = rep
	})
	return reports, notes
}

// errNotListed: a test names a host the Agents do not know.
var errNotListed = errors.New("not a host of this fleet run")

// NameByHostname renames the hosts after what their agents said of their
// hosts when probed (a Kubernetes Service names its agents by address
// only): each host whose agent gave a valid host name that no other host
// has takes it; the others keep theirs. It returns the hosts, in the same
// order, and the Agents know them by their new names.
func (a *Agents) NameByHostname() []fleet.Host {
	count := map[string]int{}
	for _, h := range a.hosts {
		if info := a.info[h.Name]; info != nil {
			count[info.Hostname]++
		}
		count[h.Name]++
	}
	out := make([]fleet.Host, len(a.hosts))
	for i, h := range a.hosts {
		out[i] = h
		info := a.info[h.Name]
		if info == nil || info.Hostname == h.Name || count[info.Hostname] != 1 {
			continue
		}
		n := h
		n.Name = info.Hostname
		if n.Validate() != nil {
			continue
		}
		out[i] = n
		a.rename(h.Name, n.Name)
	}
	a.hosts = out
	return out
}

func (a *Agents) rename(old, new string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if v, ok := a.addr[old]; ok {
		delete(a.addr, old)
		a.addr[new] = v
	}
	if v, ok := a.procs[old]; ok {
		delete(a.procs, old)
		a.procs[new] = v
	}
	if v, ok := a.info[old]; ok {
		delete(a.info, old)
		a.info[new] = v
	}
	if v, ok := a.down[old]; ok {
		delete(a.down, old)
		a.down[new] = v
	}
}
