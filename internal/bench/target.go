package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/statedir"
	"github.com/linerate/linerate/internal/tune"
)

// TargetConfig says what to measure against: a peer and a driver.
type TargetConfig struct {
	// Peer is HOST, HOST:PORT (a `linerate serve` agent), or lab:NAME.
	Peer string
	// Driver is the --engine value; "" means native.
	Driver string
	// Token authenticates to the agent; unused for a lab.
	Token []byte
	// Port is the agent's port when Peer names none; 0 means the default.
	Port int
	// Interval is the campaign's report interval (the agent samples its
	// host at it for external tools).
	Interval time.Duration
	// Base carries the native engine's settings a campaign does not vary.
	Base agent.Config
	// PerftestTest names the perftest tool, for the driver's check.
	PerftestTest string
	// Stderr receives the lab agent's diagnostics (with -V); nil keeps them
	// for error messages only.
	Stderr io.Writer
	Logger *slog.Logger
	// NoFacts skips gathering doctor reports and tunings (a run nobody
	// stores, like the client a lab run starts in host a).
	NoFacts bool
}

// Target is a driver ready to run, with the facts of both ends that every
// stored run carries.
type Target struct {
	Driver Driver
	// ClientDoctor and ServerDoctor are both hosts' linerate.doctor/v1
	// reports; nil when one could not be made (Notes says why).
	ClientDoctor, ServerDoctor json.RawMessage
	// Iface is the client's interface toward the peer.
	Iface string
	// ClientTune and ServerTune name the tune journals in effect on each
	// end ("" for none).
	ClientTune, ServerTune string
	// Notes are facts that could not be gathered, in plain sentences.
	Notes []string
}

// NewTarget builds the driver for cfg and gathers both ends' doctor
// reports and tunings. An agent that is busy, refuses the token or cannot
// be reached is an error here, before any run.
func NewTarget(ctx context.Context, cfg TargetConfig) (*Target, error) {
	if cfg.Driver == "" {
		cfg.Driver = "native"
	}
	if _, ok := LookupDriver(cfg.Driver); !ok {
		return nil, fmt.Errorf("--engine %q: choose one of %s", cfg.Driver, strings.Join(DriverNames(), ", "))
	}
	if name, ok := strings.CutPrefix(cfg.Peer, LabPrefix); ok {
		return labTarget(cfg, name)
	}
	return agentTarget(ctx, cfg)
}

func tuneDir() string { return filepath.Join(statedir.Dir(), "tune") }

// ActiveTune names the tune journal in effect in network namespace netns
// (its changes applied and not reverted), from the state directory's
// journals; "" for none.
func ActiveTune(netns uint64) string {
	j, err := tune.Active(tuneDir(), netns)
	if err != nil || j == nil {
		return ""
	}
	return j.ID
}

func labTarget(cfg TargetConfig, name string) (*Target, error) {
	h, err := NewLabHosts(name)
	if err != nil {
		return nil, err
	}
	t := &Target{Iface: lab.Iface}
	for _, end := range []struct {
		host lab.Host
		doc  *json.RawMessage
		tune *string
	}{{lab.A, &t.ClientDoctor, &t.ClientTune}, {lab.B, &t.ServerDoctor, &t.ServerTune}} {
		ino, err := lab.NetNSInode(name, end.host)
		if err != nil {
			return nil, fmt.Errorf("%w (run 'linerate lab up --name %s')", err, name)
		}
		if cfg.NoFacts {
			continue
		}
		*end.tune = ActiveTune(ino)
		if *end.doc, err = h.Doctor(end.host); err != nil {
			t.Notes = append(t.Notes, fmt.Sprintf("doctor in lab host %s: %v", end.host, err))
		}
	}
	if cfg.Driver == "native" {
		t.Driver = &Native{Lab: LabEngine{Name: name, Port: cfg.Port, Stderr: cfg.Stderr}, Base: cfg.Base, Logger: cfg.Logger}
	} else {
		t.Driver = toolDriver(cfg, h)
	}
	return t, nil
}

// toolDriver is the registered external driver of cfg between hosts h.
func toolDriver(cfg TargetConfig, h Hosts) Driver {
	d, _ := LookupDriver(cfg.Driver)
	return d.New(h, cfg)
}

func agentTarget(ctx context.Context, cfg TargetConfig) (*Target, error) {
	if len(cfg.Token) == 0 {
		return nil, fmt.Errorf("no token: pass --token-file FILE or set %s, with the token the agent was started with (its --token-file; make one with 'linerate serve --new-token-file FILE')", agent.TokenEnv)
	}
	peer := withDefaultPort(cfg.Peer, cfg.Port)
	t := &Target{}
	if cfg.NoFacts {
		t.Driver = agentDriver(cfg, peer)
		return t, nil
	}
	me, notes := engine.LocalFacts(nil, peer)
	t.Iface, t.Notes = me.Iface, notes
	if ns, err := tune.CurrentNetNS(); err == nil {
		t.ClientTune = ActiveTune(ns)
	}
	var err error
	if t.ClientDoctor, err = doctor.LiveReport(me.Iface); err != nil {
		t.Notes = append(t.Notes, "doctor on this host: "+err.Error())
	}
	doc, host, err := agent.FetchDoctor(ctx, peer, cfg.Token)
	switch {
	case err == nil:
		t.ServerDoctor, t.ServerTune = doc, host.TuneJournal
	case agentUnusable(err):
		return nil, err
	default:
		// The agent answers but its doctor did not: the runs go on
		// without its report.
		t.Notes = append(t.Notes, "doctor on the agent's host: "+err.Error())
	}
	t.Driver = agentDriver(cfg, peer)
	return t, nil
}

func agentDriver(cfg TargetConfig, peer string) Driver {
	if cfg.Driver == "native" {
		return &Native{Peer: peer, Token: cfg.Token, Base: cfg.Base, Logger: cfg.Logger}
	}
	return toolDriver(cfg, &AgentHosts{Peer: peer, Token: cfg.Token, Interval: cfg.Interval})
}

// withDefaultPort adds port to a peer written without one.
func withDefaultPort(peer string, port int) string {
	if port == 0 {
		port = agent.DefaultPort
	}
	return agent.WithPort(peer, port)
}

// agentUnusable reports whether err means no run could work either: the
// agent cannot be reached, refuses the token, or is busy.
func agentUnusable(err error) bool {
	var pe *agent.PeerError
	var op *net.OpError
	return errors.Is(err, agent.ErrAuth) || errors.As(err, &pe) && pe.Busy ||
		errors.As(err, &op) && op.Op == "dial" || ctxDone(err)
}

func ctxDone(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
