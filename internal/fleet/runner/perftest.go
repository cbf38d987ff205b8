package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/linerate/linerate/internal/bench"
	"github.com/linerate/linerate/internal/fleet"
	"github.com/linerate/linerate/internal/lab"
	"github.com/linerate/linerate/internal/toolserver"
)

// LabPerftest runs a fleet's tests with perftest (fleet run --engine
// perftest) in a lab of many hosts: each test's server in its receiving
// host, its client in its sending host, as processes of this machine in
// the hosts' namespaces (no agent: perftest's servers take no
// authentication, and the agents do not run perftest clients).
type LabPerftest struct {
	Lab string
	// Params choose the tool and message; the default is ib_write_bw.
	// A latency tool (ib_write_lat, ib_send_lat) goes with a latency
	// run (fleet.Options.Latency).
	Params toolserver.PerftestParams
}

// Run runs one test and measures its average bandwidth, or with a
// latency tool its typical and 99th-percentile latency.
func (p *LabPerftest) Run(ctx context.Context, s fleet.Spec) (fleet.Measurement, error) {
	pp := p.Params.WithDefaults()
	lat := strings.HasSuffix(pp.Test, "_lat")
	// Started as the agent starts tool servers: without privilege, from a
	// thread that entered the receiving host.
	srv, err := toolserver.StartIn(toolserver.ToolServer{Tool: pp.Test, Perftest: pp, Streams: s.Streams}, func() error {
		return lab.Enter(p.Lab, lab.Host(s.To.Name))
	})
	if err != nil {
		return fleet.Measurement{}, &fleet.HostDownError{Host: s.To.Name, Err: err}
	}
	defer srv.Stop()
	start := time.Now()
	var out []byte
	// The server may not listen yet: perftest's client says "Couldn't
	// connect" then, and is tried again for up to 5 s.
	for deadline := time.Now().Add(5 * time.Second); ; {
		out, err = p.client(ctx, s, pp)
		if err == nil || !bytes.Contains(out, []byte("Couldn't connect")) || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	res, perr := bench.ParsePerftest(out)
	if perr != nil {
		return fleet.Measurement{}, fmt.Errorf("%s %s → %s: %w", pp.Test, s.From.Name, s.To.Name, errors.Join(perr, err))
	}
	switch {
	case lat && res.TTypicalUs == nil:
		return fleet.Measurement{}, fmt.Errorf("%s %s → %s: no typical latency in its output", pp.Test, s.From.Name, s.To.Name)
	case lat:
		m := fleet.Measurement{LatencyUs: *res.TTypicalUs, Start: start, End: time.Now()}
		if res.P99Us != nil {
			m.P99Us = *res.P99Us
		}
		return m, nil
	case res.BWAverageGbps == nil:
		return fleet.Measurement{}, fmt.Errorf("%s %s → %s: no bandwidth in its output", pp.Test, s.From.Name, s.To.Name)
	}
	return fleet.Measurement{Gbps: *res.BWAverageGbps, Start: start, End: time.Now()}, nil
}

// client runs the test's client in its sending host and returns what it
// printed.
func (p *LabPerftest) client(ctx context.Context, s fleet.Spec, pp toolserver.PerftestParams) ([]byte, error) {
	argv := append(toolserver.PerftestArgs(pp, s.Streams, 0), s.To.Address)
	ctx, cancel := context.WithTimeout(ctx, s.Duration+30*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := lab.Start(p.Lab, lab.Host(s.From.Name), cmd); err != nil {
		return nil, &fleet.HostDownError{Host: s.From.Name, Err: err}
	}
	err := cmd.Wait()
	return out.Bytes(), err
}
