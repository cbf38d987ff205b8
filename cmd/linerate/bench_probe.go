package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/internal/agent"
	"github.com/linerate/linerate/internal/bench"
	"github.com/linerate/linerate/internal/engine"
)

// checkProbe refuses the flags that --latency and --udp do not take, and
// theirs without them.
func (f benchFlags) checkProbe(cmd *cobra.Command) error {
	fl := cmd.Flags()
	if !f.latency && !f.udp {
		for _, n := range []string{"size", "rate", "bitrate", "length"} {
			if fl.Changed(n) && !(n == "size" && (f.rr || f.crr)) {
				return fmt.Errorf("--%s is for --latency or --udp%s", n, map[bool]string{true: " (and --size for --rr/--crr)"}[n == "size"])
			}
		}
		return nil
	}
	for _, n := range []string{"streams", "reverse", "bidir", "window", "zerocopy", "congestion", "fq-rate", "sweep-streams"} {
		switch {
		case !fl.Changed(n):
		case n == "reverse" && f.latency:
			return errors.New("--reverse is for TCP streams and UDP streams: a ping-pong's round trips go both ways already")
		case n == "reverse":
			if d, ok := bench.LookupDriver(f.engine); ok && d.Caps.UDPReverse {
				continue // the tool's server sends
			}
			return fmt.Errorf("--reverse with --udp runs with --engine %s (its server sends): the %s engine's UDP stream goes from the client to its peer",
				driversWith(func(c bench.Caps) bool { return c.UDPReverse }), f.engine)
		default:
			return fmt.Errorf("--%s is for TCP streams: a latency or UDP test here is one flow", n)
		}
	}
	switch {
	case f.latency && (fl.Changed("bitrate") || fl.Changed("length")):
		return errors.New("-b and -l are for a UDP stream (--udp without --latency): a ping-pong takes --size and --rate")
	case !f.latency && (fl.Changed("size") || fl.Changed("rate")):
		return errors.New("--size and --rate are for --latency: a UDP stream takes -l and -b")
	}
	return nil
}

// probe is the agent.ProbeTest the flags ask for, nil for a TCP stream test.
func (f benchFlags) probe() (*agent.ProbeTest, error) {
	switch {
	case f.latency:
		if f.size < engine.MinMessage || f.size > engine.MaxMessage {
			return nil, fmt.Errorf("--size %d: must be %d to %d bytes", f.size, engine.MinMessage, engine.MaxMessage)
		}
		p := &agent.ProbeTest{Kind: agent.ProbePingPong, UDP: f.udp, Size: f.size}
		if f.rate != "" {
			r, err := parseSize(f.rate, 1000)
			if err != nil || r < 1 || r > agent.MaxPingRate {
				return nil, fmt.Errorf("--rate %q: give round trips per second, 1 to 10M (10000, 10k)", f.rate)
			}
			p.Rate = float64(r)
		}
		return p, nil
	case f.udp:
		if f.udpLen < engine.MinDatagram || f.udpLen > engine.MaxDatagram {
			return nil, fmt.Errorf("-l %d: must be %d to %d bytes", f.udpLen, engine.MinDatagram, engine.MaxDatagram)
		}
		r, err := parseSize(f.udpRate, 1000)
		if err != nil || float64(r) > agent.MaxUDPRate {
			return nil, fmt.Errorf("-b %q: give bits per second with an optional K, M, G or T (1G, 500M), at most 1.6T; 0 unlimited", f.udpRate)
		}
		return &agent.ProbeTest{Kind: agent.ProbeUDP, Size: f.udpLen, Rate: float64(r)}, nil
	}
	return nil, nil
}
