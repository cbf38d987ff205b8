package report

import (
	"github.com/linerate/linerate/internal/c2c"
	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/explain"
	"github.com/linerate/linerate/internal/result"
)

// Dataset is everything a report is built from, in the shapes of the JSON
// contracts (docs/architecture.md): doctor reports of the hosts involved, bench runs,
// campaigns, perftest results, tune journals and the tools used. Every
// part is optional; a section without data is left out with a one-line note.
type Dataset struct {
	// Title heads the report; "" makes one from the hosts.
	Title string `json:"title,omitempty"`
	// Synthetic, when not empty, says which data were not measured on
	// real hardware; the title then says "synthetic" and why.
	Synthetic string `json:"synthetic,omitempty"`
	// Hosts are the doctor reports (linerate.doctor/v1) of the hosts the
	// runs involve, client first by convention.
	Hosts []doctor.Report `json:"hosts"`
	// Runs are the bench runs (linerate.bench/v1) with what the store
	// knows about them.
	Runs []Run `json:"runs"`
	// Campaigns are repeats and sweeps (linerate.campaign/v1) over Runs.
	Campaigns []Campaign `json:"campaigns"`
	// Perftest are RDMA results of perftest's ib_*_bw and ib_*_lat.
	Perftest []PerftestResult `json:"perftest"`
	// Tunes are the journals of `linerate tune --apply`.
	Tunes []TuneJournal `json:"tunes"`
	// C2C are core-to-core matrices (linerate.c2c/v1) of the hosts.
	C2C []c2c.Result `json:"c2c,omitempty"`
	// Tools are the external tools and versions used (iperf3, perftest).
	Tools []Tool `json:"tools"`
	// Linerate is the version of linerate that recorded the data.
	Linerate string `json:"linerate,omitempty"`
}

// Run is one bench run and its context.
type Run struct {
	Result result.Result `json:"result"`
	// Label is the --label it was run with.
	Label string `json:"label,omitempty"`
	// TuneID is the tune journal in effect during the run; "" for none.
	// The tuning section compares runs before and after a journal by it.
	TuneID string `json:"tune_id,omitempty"`
	// Command reproduces the run; "" when not known (the report then
	// lists no command for it).
	Command string `json:"command,omitempty"`
}

// Campaign is a stored campaign as the report shows it: its summary (the
// linerate.campaign/v1 document explain writes, reduced to the runs the
// report holds: a point's figures then come from those runs) and the
// command that makes it again.
type Campaign struct {
	explain.Summary
	// Command reproduces the whole campaign; "" lists the runs' commands.
	Command string `json:"command,omitempty"`
}

// A campaign's points, buckets and best point are explain's: one type
// per part of the document.
type (
	Point  = explain.PointSummary
	Bucket = explain.Bucket
	Best   = explain.Best
)

// CampaignSchema names the campaign JSON document.
const CampaignSchema = explain.CampaignSchema

// PerftestResult is one run of a perftest tool: a bandwidth test
// (ib_write_bw, ib_read_bw, ib_send_bw) or a latency test (ib_*_lat).
type PerftestResult struct {
	Test string `json:"test"` // "ib_write_bw"
	// Host is the client's hostname; it picks the ceiling to compare with.
	Host       string `json:"host"`
	Device     string `json:"device"`
	SizeBytes  int    `json:"size_bytes"`
	Iterations int    `json:"iterations"`
	// Bandwidth tests.
	PeakGbps    float64 `json:"peak_gbps,omitempty"`
	AverageGbps float64 `json:"average_gbps,omitempty"`
	MsgRateMpps float64 `json:"msg_rate_mpps,omitempty"`
	// Latency is set for latency tests.
	Latency *Latency `json:"latency,omitempty"`
	// Command is the client's command line; Server the server's.
	Command string `json:"command,omitempty"`
	Server  string `json:"server_command,omitempty"`
	// Warnings are what the tool warned about ("Conflicting CPU frequency
	// values detected").
	Warnings []string `json:"warnings,omitempty"`
}

// Latency is a latency test's distribution, in microseconds.
type Latency struct {
	MinUs     float64 `json:"t_min_us"`
	MaxUs     float64 `json:"t_max_us"`
	TypicalUs float64 `json:"t_typical_us"`
	AvgUs     float64 `json:"t_avg_us"`
	P99Us     float64 `json:"p99_us"`
	P999Us    float64 `json:"p99_9_us"`
}

// TuneJournal is what one `linerate tune --apply` changed.
type TuneJournal struct {
	ID      string       `json:"id"`
	Host    string       `json:"host"`
	Profile string       `json:"profile"`
	Applied string       `json:"applied,omitempty"` // RFC 3339
	Changes []TuneChange `json:"changes"`
	// Reverted says the journal was reverted since.
	Reverted bool `json:"reverted,omitempty"`
	// NotFound, when set, says why the journal could not be read here (a
	// run names a journal made on another machine, or since removed): only
	// its ID and host are known, and the tuning section says so.
	NotFound string `json:"not_found,omitempty"`
}

// TuneChange is one applied change with its values before and after.
type TuneChange struct {
	Kind    string `json:"kind"`
	Target  string `json:"target"`
	Before  string `json:"before"`
	After   string `json:"after"`
	Finding string `json:"finding,omitempty"`
	Command string `json:"command,omitempty"`
}

// Tool is an external tool and its version.
type Tool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}
