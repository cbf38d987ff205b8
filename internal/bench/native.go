package bench

import (
	"context"
	"log/slog"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/result"
)

// Native drives linerate's own engine against a `linerate serve` agent,
// or across a lab (the agent started in host b for each run).
type Native struct {
	// Peer is the agent, HOST or HOST:PORT; ignored with Lab.
	Peer  string
	Token []byte
	// Lab, when set, runs each test between the hosts of this lab.
	Lab LabEngine
	// Base carries what the engine needs beyond a run's Params (its
	// progress callback for one run's live output, the host to read); its
	// Test is each run's.
	Base agent.Config
	// Logger receives the engine's diagnostics; nil discards.
	Logger *slog.Logger
}

func init() {
	register(DriverInfo{Name: "native", Caps: Caps{Latency: true, LatencyUDP: true, UDPStream: true, NativeOptions: true}})
}

// Name returns "native".
func (d *Native) Name() string { return "native" }

// Check has nothing to find: the engine is this binary.
func (d *Native) Check() error { return nil }

// Run makes one run with the engine.
func (d *Native) Run(ctx context.Context, p Params, live func(result.Interval)) (*result.Result, error) {
	cfg := d.Base
	cfg.Peer, cfg.Token, cfg.Logger, cfg.Test = d.Peer, d.Token, d.Logger, p.Test
	if live != nil {
		cfg.Progress = func(e result.Event) {
			if iv, ok := e.Data.(*result.Interval); ok && e.Event == "interval" {
				live(*iv)
			}
		}
	}
	var res *result.Result
	var err error
	if d.Lab.Name != "" {
		res, err = RunInLab(ctx, d.Lab, cfg)
	} else {
		res, err = agent.Run(ctx, cfg)
	}
	if res == nil {
		return nil, err
	}
	return res, err // a run cut short keeps what it measured (res.Error)
}
