package metrics

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/store"
)

// BenchResult is the last stored run of one peer, engine, stream count,
// direction and kind.
type BenchResult struct {
	Peer      string
	Engine    string
	Streams   int
	Direction string
	// Kind is the run's kind (tcp, udp, latency, transactions), a label
	// of every bench series: a UDP run at a rate or a ping-pong is never
	// exported under a TCP run's labels, nor replaces it.
	Kind result.Kind
	// Unpaced is set for a bulk TCP run at full speed, the only kind
	// whose goodput is held against the ceiling (goodput and ceiling are
	// exported for it alone).
	Unpaced bool
	// UDPLossRatio is a UDP run's lost datagrams over those sent; nil for
	// other runs.
	UDPLossRatio *float64
	RunID        int64
	StartedAt    time.Time
	// GoodputBytesPerSecond is what the receivers got.
	GoodputBytesPerSecond float64
	Retransmits           int64
	// CeilingBytesPerSecond is the TCP goodput ceiling doctor computed
	// for the run's interfaces, the lower of both ends'; nil when unknown.
	CeilingBytesPerSecond *float64
	// RTT is the run's round-trip distribution; nil for a run without
	// latency figures (every throughput run).
	RTT *RTT
}

// RTT is a latency run's round trips in seconds.
type RTT struct {
	Samples uint64
	// Sum is mean × samples; NaN when the run gave no mean.
	Sum float64
	// Quantiles maps 0 (min), 0.25 … 0.9999, 1 (max) to seconds; only
	// those the run reported.
	Quantiles map[float64]float64
}

// Bounds on what one scrape reads from the database: the newest
// scanRuns runs are grouped, and at most maxBenchSeries groups (the most
// recent) are exported, whatever the database holds.
const (
	scanRuns       = 2000
	maxBenchSeries = 64
)

// ReadBench reads the last run of each peer, engine, stream count,
// direction and kind from the results database at path (empty: the default path).
// A database that does not exist holds no runs: no error. A run whose
// documents lack a field (no latency, no doctor report) gives what it
// has.
func ReadBench(ctx context.Context, path string) ([]BenchResult, error) {
	st, err := store.OpenReadOnly(ctx, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer st.Close()
	runs, err := st.Runs(ctx, store.Query{Limit: scanRuns})
	if err != nil {
		return nil, err
	}
	type key struct {
		peer, engine, direction string
		streams                 int
		kind                    result.Kind
	}
	last := map[key]int64{}
	for _, r := range runs { // oldest first: later runs replace earlier ones
		if r.Failed != "" {
			continue // cut short: no result to show
		}
		last[key{r.Peer, r.Engine, r.Direction, r.Streams, r.Outline.Kind()}] = r.ID
	}
	ids := make([]int64, 0, len(last))
	for _, id := range last {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if len(ids) > maxBenchSeries {
		ids = ids[len(ids)-maxBenchSeries:]
	}
	if len(ids) == 0 {
		return nil, nil
	}
	full, err := st.Runs(ctx, store.Query{IDs: ids, Full: true})
	if err != nil {
		return nil, err
	}
	out := make([]BenchResult, 0, len(full))
	for i := range full {
		out = append(out, benchResult(&full[i]))
	}
	slices.SortFunc(out, func(a, b BenchResult) int { return cmp.Compare(a.RunID, b.RunID) })
	return out, nil
}

func benchResult(r *store.Run) BenchResult {
	b := BenchResult{
		Peer: r.Peer, Engine: r.Engine, Streams: r.Streams, Direction: r.Direction,
		RunID: r.ID, StartedAt: r.StartedAt, GoodputBytesPerSecond: r.Gbps * gbpsToBytes,
		Retransmits: r.Retransmits, RTT: runRTT(r.Result), Kind: r.Outline.Kind(), Unpaced: r.Outline.Unpaced(),
	}
	if u := r.Outline.End.UDP; u != nil && u.Packets > 0 {
		loss := float64(u.LostPackets) / float64(u.Packets)
		b.UDPLossRatio = &loss
	} else if s := r.Outline.End.Sum; s != nil && s.Packets > 0 {
		loss := float64(s.LostPackets) / float64(s.Packets)
		b.UDPLossRatio = &loss
	}
	for _, doc := range []json.RawMessage{r.ClientDoctor, r.ServerDoctor} {
		if g := docCeiling(doc); g != nil && (b.CeilingBytesPerSecond == nil || *g < *b.CeilingBytesPerSecond) {
			b.CeilingBytesPerSecond = g
		}
	}
	return b
}

// quantiles maps the bench/v1 latency fields (end.latency.rtt_us) to
// summary quantiles.
var quantiles = []struct {
	field string
	q     float64
}{
	{"min", 0}, {"p25", 0.25}, {"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99},
	{"p99_9", 0.999}, {"p99_99", 0.9999}, {"max", 1},
}

func nan() float64 { return math.NaN() }

// runRTT reads end.latency from a run's document, or nil when it has
// none or its shape is not the one expected (older or other runs).
func runRTT(doc json.RawMessage) *RTT {
	var d struct {
		End struct {
			Latency *struct {
				Samples int64               `json:"samples"`
				RTTUs   map[string]*float64 `json:"rtt_us"`
			} `json:"latency"`
		} `json:"end"`
	}
	if len(doc) == 0 || json.Unmarshal(doc, &d) != nil || d.End.Latency == nil {
		return nil
	}
	l := d.End.Latency
	rtt := &RTT{Quantiles: map[float64]float64{}, Sum: nan()}
	for _, q := range quantiles {
		if v := l.RTTUs[q.field]; v != nil {
			rtt.Quantiles[q.q] = *v * 1e-6
		}
	}
	if len(rtt.Quantiles) == 0 {
		return nil
	}
	if l.Samples > 0 {
		rtt.Samples = uint64(l.Samples)
		if m := l.RTTUs["mean"]; m != nil {
			rtt.Sum = *m * 1e-6 * float64(l.Samples)
		}
	}
	return rtt
}

// docCeiling returns, in bytes per second, the TCP goodput ceiling of the
// interface a stored doctor report was taken for (the one --iface named,
// or its only NIC), or nil.
func docCeiling(doc json.RawMessage) *float64 {
	var d struct {
		Options struct {
			Ifaces []string `json:"ifaces"`
		} `json:"options"`
		NICs []struct {
			Interface string `json:"interface"`
			Limits    struct {
				TCPGoodput *float64 `json:"tcp_goodput_gbps"`
			} `json:"limits"`
		} `json:"nics"`
	}
	if len(doc) == 0 || json.Unmarshal(doc, &d) != nil {
		return nil
	}
	for _, n := range d.NICs {
		named := len(d.Options.Ifaces) == 1 && n.Interface == d.Options.Ifaces[0]
		if (named || len(d.NICs) == 1) && n.Limits.TCPGoodput != nil && *n.Limits.TCPGoodput > 0 {
			v := *n.Limits.TCPGoodput * gbpsToBytes
			return &v
		}
	}
	return nil
}

// emitBench sends the bench families.
func emitBench(e *emitter, runs []BenchResult) {
	for _, b := range runs {
		l := []string{b.Peer, b.Engine, strconv.Itoa(b.Streams), b.Direction, string(b.Kind)}
		e.gauge(benchStarted, unixSeconds(b.StartedAt), l...)
		if b.RTT != nil {
			// A latency run moves little data on purpose: its goodput is
			// no throughput to hold against the ceiling.
			e.summary(benchRTT, b.RTT, l...)
		}
		if b.UDPLossRatio != nil {
			e.gauge(benchUDPLoss, *b.UDPLossRatio, l...)
		}
		if b.Kind == result.KindTCP {
			e.gauge(benchRetransmits, float64(b.Retransmits), l...)
		}
		if !b.Unpaced {
			// A run paced to a rate (UDP -b, --fq-rate) moves what it
			// was asked to: its goodput says nothing of the path.
			continue
		}
		e.gauge(benchGoodput, b.GoodputBytesPerSecond, l...)
		if b.CeilingBytesPerSecond != nil {
			e.gauge(benchCeiling, *b.CeilingBytesPerSecond, l...)
		}
	}
}
