package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/bench"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/fleet"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/store"
)

// Runner runs a fleet's tests through its agents (fleet.Runner).
type Runner struct {
	Agents *Agents
	// Store keeps every test as a native bench run under the fleet's
	// label; nil keeps nothing.
	Store *store.Store
	// Doctors are the hosts' doctor reports by host name, stored with
	// each run (FetchDoctors).
	Doctors map[string]json.RawMessage
	// Interval is the tests' report period; 0 means 1 s.
	Interval time.Duration
}

// Run runs one test: s.From's agent tests toward s.To's, through the
// relay, and the run is stored. A test that fails because an agent is
// gone (its process ended, or it no longer answers) fails with a
// *fleet.HostDownError naming that host, so that the fleet run skips its
// remaining tests.
func (r *Runner) Run(ctx context.Context, s fleet.Spec) (fleet.Measurement, error) {
	for _, h := range []fleet.Host{s.From, s.To} {
		if _, ok := r.Agents.Addr(h); !ok && r.Agents.Down(h) == nil {
			return fleet.Measurement{}, fmt.Errorf("%s: %w", h.Name, errNotListed)
		}
		if err := r.Agents.Down(h); err != nil {
			return fleet.Measurement{}, &fleet.HostDownError{Host: h.Name, Err: err}
		}
	}
	from, _ := r.Agents.Addr(s.From)
	to, _ := r.Agents.Addr(s.To)
	d := r.driver(from.String(), to.String())
	interval := r.Interval
	if interval == 0 {
		interval = time.Second
	}
	c := &bench.Campaign{Driver: d, Store: r.Store, ClientDoctor: r.Doctors[s.From.Name], ServerDoctor: r.Doctors[s.To.Name],
		Spec: bench.Spec{Driver: d.Name(), Peer: to.Addr().String(), Label: s.Label, Repeat: 1,
			Run: bench.Params{Test: agent.Test{Params: engine.Params{Streams: s.Streams, Duration: s.Duration, Interval: interval, Direction: result.Send}}}}}
	_, outs, err := c.Run(ctx)
	if err != nil {
		if d.err != nil {
			err = d.err // the test's own error, without the campaign's wrapping
		}
		if ctx.Err() != nil {
			return fleet.Measurement{}, err
		}
		if s.Incast && peerBusy(err) {
			return fleet.Measurement{}, fmt.Errorf("%s's agent takes fewer clients at once than the incast's %d senders: it must run with 'linerate serve --max-clients %d' (or more): %w",
				s.To.Name, s.AtOnce, s.AtOnce, err)
		}
		return fleet.Measurement{}, r.blame(ctx, s, err)
	}
	run := outs[0].Run
	retrans := run.End.SumSent.Retransmits
	m := fleet.Measurement{Gbps: run.Gbps(), RunID: outs[0].ID, Contention: Contention(run, s.From.Name, s.To.Name),
		FromIface: run.Start.Client.Iface, ToIface: run.Start.Server.Iface, Retransmits: &retrans}
	if d := run.End.NICCounters.End("server"); d != nil {
		m.ToNIC = &fleet.NICReading{Interface: d.Interface, Deltas: d.Deltas, NotRead: d.NotRead}
	}
	if start := run.Start.Timestamp; !start.IsZero() {
		m.Start = start.Add(time.Duration(run.Start.OmitS * float64(time.Second)))
		m.End = m.Start.Add(time.Duration(run.End.Seconds * float64(time.Second)))
	}
	return m, nil
}

// busyPhrase starts a busy agent's refusal (agent.PeerError).
var busyPhrase, _, _ = strings.Cut((&agent.PeerError{Busy: true}).Error(), " (")

// peerBusy says whether a test failed because an agent was busy: the
// relaying agent's own (a "busy" answer) or its peer's, which the relay
// passes on as the text of its error.
func peerBusy(err error) bool {
	var pe *agent.PeerError
	return errors.As(err, &pe) && (pe.Busy || strings.Contains(pe.Reason, busyPhrase))
}

// blame turns a failed test into a *fleet.HostDownError when one of its
// agents is gone, and says which; otherwise the test failed by itself.
func (r *Runner) blame(ctx context.Context, s fleet.Spec, err error) error {
	for _, h := range []fleet.Host{s.From, s.To} {
		if why := r.Agents.gone(ctx, h); why != nil {
			r.Agents.markDown(h, why)
			return &fleet.HostDownError{Host: h.Name, Err: fmt.Errorf("%w (the test %s → %s: %v)", why, s.From.Name, s.To.Name, err)}
		}
	}
	return err
}

// driver is the one place where a fleet test's engine is chosen: today
// every test is the native engine's, its client side run by the agent of
// the test's first host (relayDriver) toward the second's. A fleet run of
// another engine picks its driver here; the rest of Run (the stored run,
// the measurement, the blame of a gone agent) does not change.
func (r *Runner) driver(from, to string) *relayDriver {
	return &relayDriver{agents: r.Agents, from: from, to: to}
}

// relayDriver is bench's driver of one relayed test: the run is a native
// bench run in every respect but who runs its client.
type relayDriver struct {
	agents   *Agents
	from, to string
	err      error // the error Run returned
}

func (d *relayDriver) Name() string { return "native" }
func (d *relayDriver) Check() error { return nil }

func (d *relayDriver) Run(ctx context.Context, p bench.Params, live func(result.Interval)) (*result.Result, error) {
	if !p.Pinning.Auto() {
		d.err = errors.New("a fleet's tests place their threads themselves")
		return nil, d.err
	}
	// Apart: every test of a fleet places its threads by one rule, never
	// both ends on one CPU where they share a kernel (a lab), so that the
	// tests compare with each other.
	cfg := agent.Config{Peer: d.to, Token: d.agents.Token, Test: p.Test, Apart: true}
	if live != nil {
		cfg.Progress = func(e result.Event) {
			if iv, ok := e.Data.(*result.Interval); ok {
				live(*iv)
			}
		}
	}
	res, err := agent.RunRemote(ctx, agent.Remote{From: d.from, Dial: d.agents.Dial, Config: cfg})
	if err != nil {
		d.err = err
		return nil, err
	}
	return res, nil
}
