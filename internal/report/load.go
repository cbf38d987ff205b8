package report

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/explain"
	"github.com/linerate/linerate/internal/gap"
	"github.com/linerate/linerate/internal/result"
	"github.com/linerate/linerate/internal/store"
	"github.com/linerate/linerate/internal/tune"
)

// Selection picks the stored runs a report covers: the union of the runs
// named by ID, the newest Last runs and the runs of each label. When all
// three are empty it picks the runs of the newest campaign, or the newest
// run when the database holds no campaign.
type Selection struct {
	RunIDs []int64
	Last   int
	Labels []string
}

// empty reports whether nothing was asked for.
func (s Selection) empty() bool { return len(s.RunIDs) == 0 && s.Last <= 0 && len(s.Labels) == 0 }

// LoadOptions say what Load reads and what it adds to the dataset.
type LoadOptions struct {
	Selection
	// TuneDir is the directory of tune journals (statedir's "tune"); ""
	// reads none, and every journal a run names is reported as not found.
	TuneDir string
	// Title heads the report; "" makes one from the hosts.
	Title string
	// Linerate is the version of linerate writing the report.
	Linerate string
	// Commands writes the commands that reproduce stored runs and
	// campaigns: package bench's writer, which cmd/linerate passes (the
	// report knows the documents, not the command line). Nil leaves the
	// commands out.
	Commands Commands
}

// Commands writes the `linerate bench` command that makes a stored run,
// or a stored campaign, again; "" when it cannot (a perftest run carries
// its tool's own command lines).
type Commands interface {
	Run(*store.Run) string
	Campaign(*store.Campaign) string
}

// Load builds a dataset from the results database and the tune journals:
// the selected runs (linerate.bench/v1) with the doctor reports of their
// hosts, the campaigns they belong to (linerate.campaign/v1, reduced to the
// selected runs), their perftest results, the tune journals in effect
// during them, and the tools that ran them.
//
// Perftest runs go to Dataset.Perftest, not Dataset.Runs: RDMA has no TCP
// goodput ceiling. A journal a run names that is not in TuneDir (made on
// another machine, or removed) is listed with NotFound set, not an error.
func Load(ctx context.Context, st *store.Store, opts LoadOptions) (*Dataset, error) {
	ids, err := selectRuns(ctx, st, opts.Selection)
	if err != nil {
		return nil, err
	}
	ds := &Dataset{Title: opts.Title, Linerate: opts.Linerate}
	l := loader{ds: ds, commands: opts.Commands, hosts: newHostSet()}
	// The documents are read a chunk at a time and dropped once decoded:
	// a thousand runs' JSON need not be held all at once.
	for chunk := range slices.Chunk(ids, loadChunk) {
		rows, err := st.Runs(ctx, store.Query{IDs: chunk, Full: true})
		if err != nil {
			return nil, fmt.Errorf("reading runs from %s: %w", st.Path(), err)
		}
		decoded, err := decodeRuns(rows)
		if err != nil {
			return nil, err
		}
		for i := range rows {
			if err := l.add(&rows[i], decoded[i]); err != nil {
				return nil, err
			}
		}
	}
	ds.Hosts = l.hosts.reports()
	if err := l.campaigns(ctx, st); err != nil {
		return nil, err
	}
	if ds.C2C, err = loadC2C(ctx, st, ds.Hosts); err != nil {
		return nil, err
	}
	ds.Tunes = loadTunes(opts.TuneDir, l.order)
	ds.Tools = l.tools()
	return ds, nil
}

// loadChunk is how many runs' documents Load reads at a time.
const loadChunk = 100

// selectRuns returns the IDs of the selected runs, oldest first, each
// once. It reads the runs' listing columns, not their documents.
func selectRuns(ctx context.Context, st *store.Store, sel Selection) ([]int64, error) {
	if sel.Last < 0 {
		return nil, fmt.Errorf("--last %d: give a positive number of runs", sel.Last)
	}
	have := map[int64]bool{}
	query := func(q store.Query) ([]store.Run, error) {
		runs, err := st.Runs(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("reading runs from %s: %w", st.Path(), err)
		}
		for _, r := range runs {
			have[r.ID] = true
		}
		return runs, nil
	}
	if sel.empty() {
		q, err := newestQuery(ctx, st)
		if err != nil {
			return nil, err
		}
		if _, err := query(q); err != nil {
			return nil, err
		}
	}
	if len(sel.RunIDs) > 0 {
		if _, err := query(store.Query{IDs: sel.RunIDs}); err != nil {
			return nil, err
		}
		for _, id := range sel.RunIDs {
			if !have[id] {
				return nil, fmt.Errorf("run %d: %w %s (see 'linerate history')", id, store.ErrNotFound, st.Path())
			}
		}
	}
	if sel.Last > 0 {
		if _, err := query(store.Query{Limit: sel.Last}); err != nil {
			return nil, err
		}
	}
	for _, label := range sel.Labels {
		runs, err := query(store.Query{Label: label})
		if err != nil {
			return nil, err
		}
		if len(runs) == 0 {
			return nil, fmt.Errorf("label %q: no run in %s carries it (see 'linerate history')", label, st.Path())
		}
	}
	if len(have) == 0 {
		return nil, fmt.Errorf("no runs stored in %s: run 'linerate bench PEER' first, or name another database with --db", st.Path())
	}
	ids := make([]int64, 0, len(have))
	for id := range have {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// newestQuery selects the runs of the newest campaign, or the newest run
// when no run belongs to a campaign. It lists the runs without their
// documents to find them.
func newestQuery(ctx context.Context, st *store.Store) (store.Query, error) {
	all, err := st.Runs(ctx, store.Query{})
	if err != nil {
		return store.Query{}, fmt.Errorf("reading runs from %s: %w", st.Path(), err)
	}
	if len(all) == 0 {
		return store.Query{}, fmt.Errorf("no runs stored in %s: run 'linerate bench PEER' first, or name another database with --db", st.Path())
	}
	var newest int64
	for _, r := range all {
		newest = max(newest, r.CampaignID)
	}
	if newest > 0 {
		return store.Query{CampaignID: newest}, nil
	}
	return store.Query{IDs: []int64{all[len(all)-1].ID}}, nil
}

// storedRun is one stored run read back: the linerate.bench/v1 document
// as package bench writes it.
type storedRun struct {
	result.Result

	campaignID int64 // 0: a run of its own
}

// loader gathers the dataset run by run.
type loader struct {
	ds       *Dataset
	commands Commands
	hosts    *hostSet
	order    []*storedRun // every selected run, TCP or perftest, oldest first
}

// decodeRuns decodes the rows' results on every CPU the process may use:
// decoding is most of what a report of many runs costs.
func decodeRuns(rows []store.Run) ([]*storedRun, error) {
	out := make([]*storedRun, len(rows))
	errs := make([]error, len(rows))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(rows)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(rows); i = int(next.Add(1) - 1) {
				out[i], errs[i] = decodeRun(&rows[i])
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err // the first, in run order
		}
	}
	return out, nil
}

// decodeRun decodes one stored run's result.
func decodeRun(row *store.Run) (*storedRun, error) {
	r := &storedRun{campaignID: row.CampaignID}
	if err := json.Unmarshal(row.Result, r); err != nil {
		return nil, fmt.Errorf("run %d: its stored result is not valid linerate.bench/v1 JSON: %w", row.ID, err)
	}
	if r.Schema != result.Schema {
		return nil, fmt.Errorf("run %d: its stored result has schema %q, not %s (written by another linerate version?)", row.ID, r.Schema, result.Schema)
	}
	r.RunID = row.ID // the store numbers runs; the document holds 0
	if r.End.Gap == nil && r.Error == "" {
		// A run stored before runs carried their gap: the model reads
		// the document and the doctor reports stored beside it.
		r.End.Gap = gap.Of(&r.Result, gap.Doctors{Client: row.ClientDoctor, Server: row.ServerDoctor})
	}
	if r.Label == "" {
		r.Label = row.Label
	}
	return r, nil
}

// add files a decoded run as a run or a perftest result, with its hosts.
func (l *loader) add(row *store.Run, r *storedRun) error {
	l.order = append(l.order, r)
	if err := l.hosts.add(row); err != nil {
		return err
	}
	if r.Perftest != nil {
		l.ds.Perftest = append(l.ds.Perftest, perftestFrom(r, row))
		return nil
	}
	run := Run{Result: r.Result, Label: r.Label, TuneID: tuneOf(&r.Result)}
	if l.commands != nil {
		run.Command = l.commands.Run(row)
	}
	l.ds.Runs = append(l.ds.Runs, run)
	return nil
}

// tuneOf is the tune journal in effect during a run: the server's, else
// the client's.
func tuneOf(r *result.Result) string {
	if id := r.Start.Server.TuneJournal; id != "" {
		return id
	}
	return r.Start.Client.TuneJournal
}

// tools lists the external tools of the runs, each name and version once.
func (l *loader) tools() []Tool {
	var out []Tool
	for _, r := range l.order {
		if r.Tool == nil || r.Tool.Name == "" {
			continue
		}
		t := Tool{Name: r.Tool.Name, Version: r.Tool.Version}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b Tool) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Version, b.Version)) })
	return out
}

// perftestFrom shapes a perftest run as the report's perftest result.
func perftestFrom(r *storedRun, row *store.Run) PerftestResult {
	p := r.Perftest
	out := PerftestResult{Test: perftestTool(r, row.Params), Host: r.Start.Client.Hostname, Device: p.Device,
		SizeBytes: int(p.MsgBytes), Iterations: int(p.Iterations),
		PeakGbps: deref(p.BWPeakGbps), AverageGbps: deref(p.BWAverageGbps), MsgRateMpps: deref(p.MsgRateMpps),
		Warnings: toolWarnings(row.Raw)}
	if p.TMinUs != nil || p.TMaxUs != nil || p.TTypicalUs != nil || p.TAvgUs != nil || p.P99Us != nil || p.P999Us != nil {
		out.Latency = &Latency{MinUs: deref(p.TMinUs), MaxUs: deref(p.TMaxUs), TypicalUs: deref(p.TTypicalUs),
			AvgUs: deref(p.TAvgUs), P99Us: deref(p.P99Us), P999Us: deref(p.P999Us)}
	}
	if r.Tool != nil {
		out.Command, out.Server = doctor.Quote(r.Tool.Client), doctor.Quote(r.Tool.Server)
	}
	return out
}

// perftestTool names the perftest program of a run ("ib_write_bw"): from
// the run's settings, else its command line, else what the tool printed.
func perftestTool(r *storedRun, params json.RawMessage) string {
	var p struct {
		Perftest struct {
			Test string `json:"test"`
		} `json:"perftest"`
	}
	if json.Unmarshal(params, &p) == nil && p.Perftest.Test != "" {
		return p.Perftest.Test
	}
	if r.Tool != nil {
		for _, a := range r.Tool.Client {
			if b := filepath.Base(a); strings.HasPrefix(b, "ib_") {
				return b
			}
		}
	}
	return orDash(r.Perftest.Test)
}

// toolWarnings picks the warnings out of a tool's output: perftest's
// "Conflicting CPU frequency values detected" and lines saying warning.
func toolWarnings(raw string) []string {
	var out []string
	for line := range strings.Lines(raw) {
		line = strings.TrimSpace(line)
		low := strings.ToLower(line)
		if (strings.Contains(low, "warning") || strings.Contains(low, "conflicting cpu frequency")) && !slices.Contains(out, line) {
			out = append(out, line)
		}
	}
	return out
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// hostSet keeps each host's doctor report once: the first one seen (the
// oldest run's), clients before servers. Hosts are told apart by
// hostname, and by role as well when both ends of a run share a hostname
// (the lab's two network namespaces on one machine).
type hostSet struct {
	parsed           map[string]*doctor.Report // by report contents
	keys             map[string]bool           // hosts already kept
	clients, servers []doctor.Report
}

func newHostSet() *hostSet {
	return &hostSet{parsed: map[string]*doctor.Report{}, keys: map[string]bool{}}
}

func (h *hostSet) add(row *store.Run) error {
	var reps [2]*doctor.Report
	for i, doc := range []json.RawMessage{row.ClientDoctor, row.ServerDoctor} {
		if len(doc) == 0 {
			continue
		}
		if rep, ok := h.parsed[string(doc)]; ok {
			reps[i] = rep
			continue
		}
		var rep doctor.Report
		if err := json.Unmarshal(doc, &rep); err != nil {
			return fmt.Errorf("run %d: its %s doctor report is not valid linerate.doctor/v1 JSON: %w", row.ID, []string{"client", "server"}[i], err)
		}
		h.parsed[string(doc)] = &rep
		reps[i] = &rep
	}
	// Both ends with one hostname but different reports (two network
	// namespaces of one machine): the role tells them apart, also in later
	// runs whose reports differ (a tuning changed the server's). The same
	// report at both ends (a test over loopback) is one host.
	same := reps[0] != nil && reps[1] != nil && reps[0] != reps[1] && reps[0].Host.Hostname == reps[1].Host.Hostname
	for i, rep := range reps {
		if rep == nil {
			continue
		}
		key := rep.Host.Hostname
		if same {
			key += "\x00" + strconv.Itoa(i)
		}
		if h.keys[key] {
			continue
		}
		h.keys[key] = true
		if i == 0 {
			h.clients = append(h.clients, *rep)
		} else {
			h.servers = append(h.servers, *rep)
		}
	}
	return nil
}

func (h *hostSet) reports() []doctor.Report { return append(h.clients, h.servers...) }

// campaigns adds the campaigns of the selected TCP runs, oldest first,
// each reduced to the selected runs. A campaign without a summary (still
// running, or killed) adds nothing: its runs stay runs of their own.
func (l *loader) campaigns(ctx context.Context, st *store.Store) error {
	var ids []int64
	for _, r := range l.order {
		if id := r.campaignID; id != 0 && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	tcp := map[int64]*storedRun{}
	for _, r := range l.order {
		if r.Perftest == nil {
			tcp[r.RunID] = r
		}
	}
	for _, id := range ids {
		c, err := st.Campaign(ctx, id)
		if err != nil {
			return fmt.Errorf("reading campaign %d from %s: %w", id, st.Path(), err)
		}
		if len(c.Summary) == 0 {
			continue
		}
		var sum explain.Summary
		if err := json.Unmarshal(c.Summary, &sum); err != nil {
			return fmt.Errorf("campaign %d: its stored summary is not valid %s JSON: %w", id, CampaignSchema, err)
		}
		if rc, ok := campaignFrom(c, &sum, tcp); ok {
			if l.commands != nil {
				rc.Command = l.commands.Campaign(c)
			}
			l.ds.Campaigns = append(l.ds.Campaigns, rc)
		}
	}
	return nil
}

// campaignFrom maps a stored campaign to the report's, keeping only the
// runs in have. A point whose runs are partly selected gets its median,
// minimum and maximum from the selected runs, and no interval (the
// stored one is of all its runs). ok is false when no run is left.
func campaignFrom(c *store.Campaign, sum *explain.Summary, have map[int64]*storedRun) (Campaign, bool) {
	out := Campaign{Summary: *sum}
	out.Schema, out.CampaignID, out.Label = CampaignSchema, c.ID, cmp.Or(sum.Label, c.Label)
	out.Points, out.Best, out.Explanation = nil, nil, slices.Clone(sum.Explanation)
	if out.Explanation == nil {
		out.Explanation = []string{}
	}
	var kept, total []int64
	for _, sp := range sum.Points {
		ids := selected(sp.RunIDs, have)
		total = append(total, sp.RunIDs...)
		if len(ids) == 0 {
			continue
		}
		kept = append(kept, ids...)
		p := sp
		p.RunIDs, p.Buckets = ids, nil
		if len(ids) != len(sp.RunIDs) {
			// Part of the point: its figures are of the selected runs,
			// and it has no interval (the stored one is of all its runs).
			vals := gbpsOf(ids, have)
			p.Runs = len(ids)
			p.MedianGbps, p.MinGbps, p.MaxGbps = round3(median(vals)), round3(slices.Min(vals)), round3(slices.Max(vals))
			p.CI95Gbps, p.CILevel, p.CINote = nil, 0, ""
			if sp.Latency != nil {
				p.Latency = explain.SummarizeLatency(outcomesOf(ids, have))
			}
			if sp.Transactions != nil {
				p.Transactions = explain.SummarizeTransactions(outcomesOf(ids, have))
			}
		}
		if ci := p.CI95Gbps; ci != nil && !(known(ci[0]) && known(ci[1]) && ci[1] > 0) {
			p.CI95Gbps = nil // none when the campaign had too few runs for one
		}
		if len(sp.Buckets) > 1 { // one bucket is no split
			for bi, sb := range sp.Buckets {
				bids := selected(sb.RunIDs, have)
				if len(bids) == 0 {
					continue
				}
				bk := sb
				bk.RunIDs = bids
				if bk.Name == "" { // a summary stored before buckets had names
					bk.Name = explain.BucketName(bi, len(sp.Buckets))
				}
				if len(bids) != len(sb.RunIDs) {
					vals := gbpsOf(bids, have)
					bk.MedianGbps, bk.MinGbps, bk.MaxGbps = round3(median(vals)), round3(slices.Min(vals)), round3(slices.Max(vals))
				}
				p.Buckets = append(p.Buckets, bk)
			}
		}
		out.Points = append(out.Points, p)
	}
	if len(out.Points) == 0 {
		return Campaign{}, false
	}
	switch {
	case isPingPong(&out):
		out.Best = bestLatency(out.Points)
	case isTransactions(&out):
		out.Best = bestTransactions(out.Points)
	case len(kept) == len(total) && sum.Best != nil:
		out.Best = &Best{Streams: sum.Best.Streams, Placement: sum.Best.Placement, MedianGbps: sum.Best.MedianGbps}
	default:
		best := slices.MaxFunc(out.Points, func(a, b Point) int { return cmp.Compare(a.MedianGbps, b.MedianGbps) })
		out.Best = &Best{Streams: best.Streams, Placement: best.Placement, MedianGbps: best.MedianGbps}
	}
	if len(kept) != len(total) {
		slices.Sort(kept)
		note := fmt.Sprintf("This report holds run%s %s of the campaign's %d runs: its medians and ranges are of those runs; the intervals and the sentences that follow are of the whole campaign.",
			plural(len(kept)), idRanges(kept), len(total))
		out.Explanation = append([]string{note}, out.Explanation...)
	}
	return out, true
}

// outcomesOf is the runs of ids, as bench summarizes them.
func outcomesOf(ids []int64, have map[int64]*storedRun) []explain.Outcome {
	out := make([]explain.Outcome, len(ids))
	for i, id := range ids {
		out[i] = explain.Outcome{ID: id, Run: &have[id].Result}
	}
	return out
}

// isPingPong reports whether a campaign measured round trips (bench
// --latency): its figures are then µs, not Gbit/s.
func isPingPong(c *Campaign) bool {
	return len(c.Points) > 0 && c.Points[0].Latency != nil
}

// bestLatency is the point of lowest median p50 round trip (the first on
// a tie), as bench picks it; nil when no point has one.
func bestLatency(points []Point) *Best {
	i := explain.LowestP50(len(points), func(i int) *explain.LatencyPoint { return points[i].Latency })
	if i < 0 {
		return nil
	}
	b := points[i]
	return &Best{Streams: b.Streams, Placement: b.Placement, MedianGbps: b.MedianGbps,
		MedianP50Us: b.Latency.MedianP50Us, MedianP99Us: b.Latency.MedianP99Us}
}

// selected keeps the IDs of runs in have.
func selected(ids []int64, have map[int64]*storedRun) []int64 {
	var out []int64
	for _, id := range ids {
		if have[id] != nil {
			out = append(out, id)
		}
	}
	return out
}

// gbpsOf is the throughput of each run, as bench summarises it.
func gbpsOf(ids []int64, have map[int64]*storedRun) []float64 {
	out := make([]float64, 0, len(ids))
	for _, id := range ids {
		out = append(out, runGbps(&have[id].Result))
	}
	return out
}

// round3 rounds as bench rounds its summaries.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// bucketWhy says what set a bucket apart: where the receiver's softirq
// work ran; "" when not known.
func bucketWhy(bk Bucket) string {
	if len(bk.Softirq) == 0 {
		return ""
	}
	return "the receiver's softirq work ran on CPU" + plural(len(bk.Softirq)) + " " + cpulist.Format(bk.Softirq)
}

// loadTunes reads the journals the runs name (either end's), oldest
// first. One that cannot be read is kept with NotFound saying why.
func loadTunes(dir string, runs []*storedRun) []TuneJournal {
	hostOf := map[string]string{}
	var ids []string
	for _, r := range runs {
		for _, h := range []result.HostInfo{r.Start.Server, r.Start.Client} {
			if h.TuneJournal == "" {
				continue
			}
			if _, ok := hostOf[h.TuneJournal]; !ok {
				ids = append(ids, h.TuneJournal)
				hostOf[h.TuneJournal] = h.Hostname
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids) // journal IDs are UTC timestamps
	known := map[string]*tune.Journal{}
	var listErr error
	if dir != "" {
		var all []*tune.Journal
		all, listErr = tune.List(dir)
		for _, j := range all {
			known[j.ID] = j
		}
	}
	out := make([]TuneJournal, 0, len(ids))
	for _, id := range ids {
		j := known[id]
		var why string
		switch {
		case j != nil && (j.Refused != "" || j.State() == tune.StateDamaged):
			// Not trusted, or holding nothing: what it claims is not shown.
			why = j.State() + ": " + cmp.Or(j.Refused, j.Damage)
			j = nil
		case j != nil:
		case dir == "":
			why = "no tune journal directory was given"
		case listErr != nil:
			// One damaged journal fails the listing; read this one alone.
			var err error
			if j, err = tune.Load(dir, id); err != nil {
				why = err.Error()
			}
		default:
			why = "it is not in " + dir + " (made on another machine, or removed since)"
		}
		if j == nil {
			out = append(out, TuneJournal{ID: id, Host: hostOf[id], NotFound: why, Changes: []TuneChange{}})
			continue
		}
		out = append(out, journalFrom(j, hostOf[id]))
	}
	return out
}

// journalFrom maps a tune journal to the report's: each step with its
// value before and after, and what became of steps that changed nothing.
func journalFrom(j *tune.Journal, host string) TuneJournal {
	out := TuneJournal{ID: j.ID, Host: cmp.Or(j.Host, host), Profile: string(j.Profile), Changes: []TuneChange{}}
	if !j.Time.IsZero() {
		out.Applied = j.Time.UTC().Format(time.RFC3339)
	}
	switch j.State() {
	case tune.StateApplied, tune.StateIncomplete:
	default:
		out.Reverted = true
	}
	for _, s := range j.Steps {
		c := s.Change
		before := c.Before
		if s.Prior != "" && (c.Kind == tune.KindSysctl || c.Kind == tune.KindGovernor || c.Kind == tune.KindIRQ || c.Kind == tune.KindMTU) {
			before = strings.Join(strings.Fields(s.Prior), " ") // the value as read when applied
		}
		out.Changes = append(out.Changes, TuneChange{Kind: string(c.Kind), Target: c.Target, Before: before,
			After: stepAfter(s), Finding: c.Finding, Command: c.Command})
	}
	return out
}

// stepAfter is a step's value after tune: what it wrote, or why nothing
// was written.
func stepAfter(s *tune.JournalStep) string {
	why := func(what string) string {
		if s.Reason != "" {
			return what + ": " + s.Reason
		}
		return what
	}
	switch s.Phase {
	case tune.PhaseRefused, tune.PhaseSkipped:
		return why("unchanged (" + string(s.Phase) + ")")
	case tune.PhaseFailed:
		return why(s.Change.After + " (failed)")
	case tune.PhaseJournaled:
		return s.Change.After + " (not confirmed: the apply stopped before reading it back)"
	}
	return s.Change.After
}
