package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// MaxIncastSenders bounds an incast's senders: its receiver's agent takes
// them all at once, and an agent takes at most 64 clients at once (serve
// --max-clients).
const MaxIncastSenders = 64

// Incast is an incast's own figures (the pattern incast:HOST): every
// other host sent to Receiver at once, in one leg. In incast the shares
// are the point: no sender is blamed from a fleet median; the senders
// that got less than their fair share are named, with how much less.
type Incast struct {
	Receiver string         `json:"receiver"`
	Senders  []IncastSender `json:"senders"`
	// SumGbps is what the receiver took from the senders together: the
	// sum of their goodputs, each its receiver's count over its test
	// (null when no test worked).
	SumGbps *float64 `json:"sum_gbps"`
	// FairShareGbps is SumGbps shared evenly among the senders whose test
	// worked.
	FairShareGbps *float64 `json:"fair_share_gbps"`
	// JainIndex is Jain's fairness index of the senders' goodputs,
	// (Σx)² / (n·Σx²): 1 when every sender got the same, 1/n when one got
	// everything (null with fewer than two senders whose test worked).
	JainIndex *float64 `json:"jain_index"`
	// ShortBelowPct: a sender below this share of the fair share (the
	// run's --threshold) is short.
	ShortBelowPct float64 `json:"short_below_pct"`
	// Retransmits is the segments the senders retransmitted, together
	// (null when no sender's count is known).
	Retransmits *uint64 `json:"retransmits"`
	// ReceiverDrops is what the receiver's NIC and qdisc counters say of
	// the run.
	ReceiverDrops IncastDrops `json:"receiver_drops"`
	// At is when every sender was measuring at once: the overlap of the
	// tests' measured windows (absent when they did not overlap).
	At *Span `json:"at,omitempty"`
}

// IncastSender is one sender of an incast.
type IncastSender struct {
	Name string `json:"name"`
	// Gbps is the sender's goodput, as its receiver counted it (null when
	// its test failed).
	Gbps *float64 `json:"gbps"`
	// FairPct is Gbps as a percentage of the fair share; Short is true
	// when it is below ShortBelowPct.
	FairPct *float64 `json:"fair_pct"`
	Short   bool     `json:"short"`
	// Retransmits is the segments it retransmitted (null when unknown).
	Retransmits *uint64 `json:"retransmits"`
	RunID       int64   `json:"run_id,omitempty"`
	At          *Span   `json:"at,omitempty"`
	Contention  string  `json:"contention,omitempty"`
	Error       string  `json:"error,omitempty"`
}

// IncastDrops is the receiver's NIC and qdisc counters over an incast.
// Every sender's test read them over its own window; the windows overlap
// (the tests ran at once), so the readings are not added: each cause's
// figure is the largest any test read, what the receiver dropped at least.
type IncastDrops struct {
	Interface string            `json:"interface,omitempty"`
	Deltas    map[string]uint64 `json:"deltas"`
	// Readings is how many tests read the counters.
	Readings int `json:"readings"`
	// NotRead says why no test read them.
	NotRead string `json:"not_read,omitempty"`
}

// JainIndex is Jain's fairness index of xs, (Σx)² / (n·Σx²): 1 when all
// are equal, 1/n when one has everything. ok is false for fewer than two
// values or when all are 0.
func JainIndex(xs []float64) (index float64, ok bool) {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if len(xs) < 2 || sq == 0 {
		return 0, false
	}
	return sum * sum / (float64(len(xs)) * sq), true
}

// checkIncast checks an incast's options against the hosts: its receiver
// is one of them and the others are 2 to MaxIncastSenders senders. An
// incast runs its tests at once, in one leg, and tries none again (a
// share is not slow or fine by itself).
func (o *Options) checkIncast(hosts []Host) error {
	c := slices.IndexFunc(hosts, func(h Host) bool { return h.Name == o.Pattern.Center })
	if c < 0 {
		return fmt.Errorf("pattern %s: no host is called %s", o.Pattern, o.Pattern.Center)
	}
	switch n := len(hosts) - 1; {
	case n < 2:
		return fmt.Errorf("pattern %s: an incast needs at least 2 senders besides %s, not %d", o.Pattern, o.Pattern.Center, n)
	case n > MaxIncastSenders:
		return fmt.Errorf("pattern %s: %d senders; an agent takes at most %d clients at once (--only keeps some hosts)", o.Pattern, n, MaxIncastSenders)
	}
	if o.Design == DesignSampled {
		return fmt.Errorf("--design sampled draws its own pairs: drop --pattern %s", o.Pattern)
	}
	o.Parallel = true
	o.Retests = 0
	return nil
}

// incastSenders are the hosts of an incast but its receiver, and the
// receiver's index.
func incastSenders(hosts []Host, p Pattern) (senders []int, receiver int) {
	receiver = -1
	for i, h := range hosts {
		if h.Name == p.Center {
			receiver = i
		} else {
			senders = append(senders, i)
		}
	}
	return senders, receiver
}

// incastTest is one sender's test of an incast.
type incastTest struct {
	m   Measurement
	err error
	// ran: the test has a result (it may be a failure); started: the
	// runner ran it (a test with a host down is failed without).
	ran, started bool
}

// runIncast runs an incast: every sender's test to the receiver at once,
// in one leg, then its figures.
func runIncast(ctx context.Context, hosts []Host, opts Options, runner Runner, start time.Time) (*Result, error) {
	senders, c := incastSenders(hosts, opts.Pattern)
	tests := make([]incastTest, len(senders))
	var skip error
	if err := opts.Down[hosts[c].Name]; err != nil {
		skip = &HostDownError{Host: hosts[c].Name, Err: err}
	}
	atOnce := 0
	for _, s := range senders {
		if opts.Down[hosts[s].Name] == nil {
			atOnce++
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	done := 0
	for i, s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var m Measurement
			started := false
			err := skip
			if down := opts.Down[hosts[s].Name]; err == nil && down != nil {
				err = &HostDownError{Host: hosts[s].Name, Err: down}
			}
			if err != nil {
				err = fmt.Errorf("not run: %w", err)
			} else {
				started = true
				began := time.Now()
				m, err = runner.Run(ctx, Spec{From: hosts[s], To: hosts[c], Duration: opts.Duration, Streams: opts.Streams,
					Label: opts.Label, AtOnce: atOnce, Incast: true})
				if err == nil && !(m.Gbps >= 0) {
					err = fmt.Errorf("the runner returned %g Gbit/s", m.Gbps)
				}
				if m.Start.IsZero() || m.End.Before(m.Start) {
					m.Start, m.End = began, time.Now()
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if ctx.Err() != nil && err != nil {
				return // interrupted: not a result
			}
			tests[i] = incastTest{m: m, err: err, ran: true, started: started}
			done++
			if opts.Progress != nil {
				ev := Event{From: hosts[s].Name, To: hosts[c].Name, Err: err, Done: done, Total: len(senders)}
				if err == nil {
					ev.Gbps, ev.Contention = m.Gbps, m.Contention
				}
				opts.Progress(ev)
			}
		}()
	}
	wg.Wait()
	res := &Result{Schema: Schema, Label: opts.Label, Hosts: hosts, Pattern: opts.Pattern.String(), Design: DesignAll,
		Parallel: true, DurationS: opts.Duration.Seconds(), Streams: opts.Streams, ThresholdPct: opts.ThresholdPct,
		Rounds: 1, Pairs: []PairResult{}, Retests: []Retest{}, Outliers: []Outlier{}}
	for i, t := range tests {
		if t.started {
			res.Tests++
		}
		s := senders[i]
		if t.err == nil && t.ran {
			if t.m.FromIface != "" && res.Hosts[s].Iface == "" {
				res.Hosts[s].Iface = t.m.FromIface
			}
			if t.m.ToIface != "" && res.Hosts[c].Iface == "" {
				res.Hosts[c].Iface = t.m.ToIface
			}
		}
		res.Pairs = append(res.Pairs, incastPair(hosts, s, c, t, atOnce))
	}
	if res.Tests > 0 {
		res.Legs = 1
	}
	res.Incast = incastFigures(hosts, senders, c, tests, opts.ThresholdPct)
	res.Verdict = incastVerdict(res.Incast, len(senders))
	res.WallS = round3(time.Since(start).Seconds())
	if err := ctx.Err(); err != nil {
		res.Verdict = "Interrupted. " + res.Verdict
		return res, fmt.Errorf("fleet run interrupted: %w", context.Cause(ctx))
	}
	if res.Incast.SumGbps == nil {
		for _, t := range tests {
			if t.err != nil {
				return res, fmt.Errorf("every test failed; the first: %v", t.err)
			}
		}
		return res, errors.New("no test ran")
	}
	return res, nil
}

// incastPair is one sender's test as a pair of the document: the
// direction toward the receiver tested, the other untested.
func incastPair(hosts []Host, s, c int, t incastTest, atOnce int) PairResult {
	o := &outcome{ran: t.ran, err: t.err}
	if t.ran && t.err == nil {
		o.tries = []try{{gbps: t.m.Gbps, runID: t.m.RunID, atOnce: atOnce, contention: t.m.Contention,
			span: Span{Start: t.m.Start.UTC().Round(time.Millisecond), End: t.m.End.UTC().Round(time.Millisecond)}}}
	}
	st := StatusOK
	switch {
	case !t.ran:
		st = StatusNotRun
	case t.err != nil:
		st = StatusFailed
	}
	d, g := direction(o, st, 0)
	un := Direction{Status: StatusUntested, TriesGbps: []float64{}}
	pr := PairResult{Round: 1, Status: st}
	if s < c {
		pr.A, pr.B, pr.AToB, pr.AToBGbps, pr.BToA = hosts[s].Name, hosts[c].Name, d, g, un
	} else {
		pr.A, pr.B, pr.BToA, pr.BToAGbps, pr.AToB = hosts[c].Name, hosts[s].Name, d, g, un
	}
	return pr
}

// incastFigures works out an incast's figures from its tests.
func incastFigures(hosts []Host, senders []int, c int, tests []incastTest, shortPct float64) *Incast {
	in := &Incast{Receiver: hosts[c].Name, ShortBelowPct: shortPct, Senders: []IncastSender{},
		ReceiverDrops: IncastDrops{Deltas: map[string]uint64{}}}
	var gbps []float64
	var retrans uint64
	haveRetrans := false
	var overlap Span
	var notRead []string
	for i, s := range senders {
		t := tests[i]
		is := IncastSender{Name: hosts[s].Name}
		switch {
		case !t.ran:
			is.Error = "not run: the run was interrupted"
		case t.err != nil:
			is.Error = t.err.Error()
		default:
			is.Gbps = ptr(round3(t.m.Gbps))
			is.RunID, is.Contention, is.Retransmits = t.m.RunID, t.m.Contention, t.m.Retransmits
			sp := Span{Start: t.m.Start.UTC().Round(time.Millisecond), End: t.m.End.UTC().Round(time.Millisecond)}
			is.At = &sp
			gbps = append(gbps, t.m.Gbps)
			if t.m.Retransmits != nil {
				retrans += *t.m.Retransmits
				haveRetrans = true
			}
			if len(gbps) == 1 {
				overlap = sp
			} else {
				if sp.Start.After(overlap.Start) {
					overlap.Start = sp.Start
				}
				if sp.End.Before(overlap.End) {
					overlap.End = sp.End
				}
			}
			in.addDrops(t.m.ToNIC, &notRead)
		}
		in.Senders = append(in.Senders, is)
	}
	if haveRetrans {
		in.Retransmits = &retrans
	}
	if len(gbps) > 0 && overlap.End.After(overlap.Start) {
		in.At = &overlap
	}
	if in.ReceiverDrops.Readings == 0 {
		slices.Sort(notRead)
		in.ReceiverDrops.NotRead = strings.Join(slices.Compact(notRead), "; ")
		if in.ReceiverDrops.NotRead == "" && len(gbps) > 0 {
			in.ReceiverDrops.NotRead = "no test's run carried the receiver's counters"
		}
	}
	if len(gbps) == 0 {
		return in
	}
	var sum float64
	for _, g := range gbps {
		sum += g
	}
	fair := sum / float64(len(gbps))
	in.SumGbps, in.FairShareGbps = ptr(round3(sum)), ptr(round3(fair))
	if j, ok := JainIndex(gbps); ok {
		in.JainIndex = ptr(round3(j))
	}
	for i := range in.Senders {
		is := &in.Senders[i]
		if is.Gbps == nil || fair <= 0 {
			continue
		}
		pct := math.Round(1000**is.Gbps/fair) / 10
		is.FairPct = &pct
		is.Short = pct < shortPct
	}
	return in
}

// addDrops adds one test's reading of the receiver's counters: each
// cause's figure is the largest read (the readings overlap in time).
func (in *Incast) addDrops(r *NICReading, notRead *[]string) {
	switch {
	case r == nil:
		return
	case r.NotRead != "":
		*notRead = append(*notRead, r.NotRead)
		return
	}
	d := &in.ReceiverDrops
	d.Readings++
	if d.Interface == "" {
		d.Interface = r.Interface
	}
	for cause, v := range r.Deltas {
		d.Deltas[cause] = max(d.Deltas[cause], v)
	}
}

// shortSenders are the senders below their fair share, the shortest
// first.
func (in *Incast) shortSenders() []IncastSender {
	var out []IncastSender
	for _, s := range in.Senders {
		if s.Short {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return *out[i].FairPct < *out[j].FairPct })
	return out
}

// shortText says how far a short sender fell below its fair share.
func (in *Incast) shortText(s IncastSender) string {
	return fmt.Sprintf("%s got %s Gbit/s, %.0f%% less than its fair share of %s", s.Name, gbpsText(*s.Gbps),
		100-*s.FairPct, gbpsText(*in.FairShareGbps))
}

// dropsText lists the receiver's causes that grew: "qdisc_drops 120,
// rx_dropped 3"; "" when none did.
func (d IncastDrops) dropsText() string {
	var parts []string
	for _, cause := range slices.Sorted(maps.Keys(d.Deltas)) {
		if v := d.Deltas[cause]; v > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", cause, v))
		}
	}
	return strings.Join(parts, ", ")
}

// DropsText says what the receiver's counters showed over an incast.
func (in *Incast) DropsText() string {
	d := in.ReceiverDrops
	switch {
	case d.Readings == 0 && d.NotRead != "":
		return "its counters were not read (" + d.NotRead + ")"
	case d.Readings == 0:
		return "its counters were not read"
	}
	on := ""
	if d.Interface != "" {
		on = " on " + d.Interface
	}
	if t := d.dropsText(); t != "" {
		return "its counters" + on + " grew: " + t
	}
	return "no drop counter" + on + " grew"
}

// incastVerdict says what an incast showed.
func incastVerdict(in *Incast, senders int) string {
	if in.SumGbps == nil {
		return fmt.Sprintf("Incast to %s: no sender's test worked.", in.Receiver)
	}
	worked := 0
	for _, s := range in.Senders {
		if s.Gbps != nil {
			worked++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Incast of %d senders to %s: it took %s Gbit/s from them together", worked, in.Receiver, gbpsText(*in.SumGbps))
	if in.JainIndex != nil {
		fmt.Fprintf(&b, ", Jain's fairness index %.3f", *in.JainIndex)
	}
	b.WriteString(". ")
	if short := in.shortSenders(); len(short) > 0 {
		var parts []string
		for _, s := range short {
			parts = append(parts, in.shortText(s))
		}
		b.WriteString(strings.Join(parts, "; ") + ". ")
	} else {
		fmt.Fprintf(&b, "Every sender got at least %g%% of its fair share of %s Gbit/s. ", in.ShortBelowPct, gbpsText(*in.FairShareGbps))
	}
	fmt.Fprintf(&b, "The receiver: %s", in.DropsText())
	if in.Retransmits != nil {
		fmt.Fprintf(&b, "; the senders retransmitted %d segments", *in.Retransmits)
	}
	b.WriteString(".")
	if failed := senders - worked; failed > 0 {
		fmt.Fprintf(&b, " %d of %d senders' tests failed.", failed, senders)
	}
	return b.String()
}
