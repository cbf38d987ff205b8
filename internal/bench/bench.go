// Package bench runs benchmark campaigns — repeats, stream-count sweeps
// and CPU-placement comparisons — through one of several drivers (the
// native engine, iperf3, iperf2, perftest), with per-CPU telemetry beside
// every run; it summarises each campaign point (median, order-statistic
// interval, share of the line-rate ceiling, CPU cost) and, when repeats
// fall into buckets, says in plain words what differed between them.
//
// Every run, whatever its driver, is a linerate.bench/v1 document (Run);
// a campaign's summary is a linerate.campaign/v1 document (Summary).
package bench

import (
	"github.com/linerate/linerate/internal/result"
)

// CampaignSchema names the JSON document of a campaign (docs/architecture.md).
const CampaignSchema = "linerate.campaign/v1"

// Run is one run: the linerate.bench/v1 document as the engine writes it,
// plus what the campaign and an external tool add.
type Run struct {
	result.Result
	Label string `json:"label,omitempty"`
	// Tool is the external program that moved the bytes; nil for the
	// native engine.
	Tool *Tool `json:"tool,omitempty"`
	// Perftest holds what a perftest tool reported (latencies, message
	// rate) beyond the bandwidth in End.
	Perftest *PerftestResult `json:"perftest,omitempty"`
	// Fairness is set when the run's streams differed by more than 25%:
	// which streams, and the receive CPUs that explain it (fairness.go).
	Fairness *Fairness `json:"fairness,omitempty"`

	// raw is the tool's output as it printed it (kept in the database,
	// not in the JSON).
	raw string
}

// Raw returns the external tool's output as it printed it ("" for the
// native engine).
func (r *Run) Raw() string { return r.raw }

// Tool names an external benchmark program and how it was run.
type Tool struct {
	Name    string   `json:"name"`
	Version string   `json:"version,omitempty"`
	Client  []string `json:"client,omitempty"` // the client's command line
	Server  []string `json:"server,omitempty"` // the server's, as started on the peer
}

// Gbps returns the run's goodput: what the receivers got, in Gbit/s.
func (r *Run) Gbps() float64 { return r.End.SumReceived.BitsPerSecond / 1e9 }
