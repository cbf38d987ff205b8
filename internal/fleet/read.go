package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// maxDocBytes bounds a fleet document read back: a matrix of 64 hosts with
// every pair re-tested is about 1.5 MB; 64 MiB leaves room for fleets far
// larger without letting a hostile file exhaust memory.
const maxDocBytes = 64 << 20

// ReadResult reads a linerate.fleet/v1 document (what `fleet run --json`
// wrote) and checks it, so that a report never draws a document that
// contradicts itself.
func ReadResult(r io.Reader) (*Result, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxDocBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxDocBytes {
		return nil, fmt.Errorf("larger than %d MiB: not a fleet document", maxDocBytes>>20)
	}
	var res Result
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("not a %s document: %v", Schema, err)
	}
	if err := res.Check(); err != nil {
		return nil, err
	}
	return &res, nil
}

// Check validates a document: its schema, hosts that are valid and
// unique, pairs of listed hosts each listed once, Gbit/s figures that are
// finite and not negative, and known statuses and outlier kinds.
func (r *Result) Check() error {
	if r.Schema != Schema {
		return fmt.Errorf("schema %q: want %s (the output of 'linerate fleet run --json')", r.Schema, Schema)
	}
	if r.Design != "" && r.Design != DesignAll && r.Design != DesignSampled {
		return fmt.Errorf("design %q: all or sampled", r.Design)
	}
	if len(r.Hosts) < 2 {
		return fmt.Errorf("%d hosts: a fleet has at least 2", len(r.Hosts))
	}
	names := map[string]bool{}
	for _, h := range r.Hosts {
		if err := h.Validate(); err != nil {
			return err
		}
		if names[h.Name] {
			return fmt.Errorf("host %s is listed twice", h.Name)
		}
		names[h.Name] = true
	}
	seen := map[[2]string]bool{}
	for _, p := range r.Pairs {
		if !names[p.A] || !names[p.B] || p.A == p.B {
			return fmt.Errorf("pair %q-%q: not two listed hosts", p.A, p.B)
		}
		k := [2]string{min(p.A, p.B), max(p.A, p.B)}
		if seen[k] {
			return fmt.Errorf("pair %s-%s is listed twice", p.A, p.B)
		}
		seen[k] = true
		for _, d := range []struct {
			g   *float64
			dir Direction
		}{{p.AToBGbps, p.AToB}, {p.BToAGbps, p.BToA}} {
			if err := checkGbps(d.g, d.dir.TriesGbps...); err != nil {
				return fmt.Errorf("pair %s-%s: %w", p.A, p.B, err)
			}
			tries := len(d.dir.TriesGbps)
			if len(d.dir.TriesUs) > 0 {
				tries = len(d.dir.TriesUs) // a latency run
			}
			for what, n := range map[string]int{"times": len(d.dir.TriesAt), "leg sizes": len(d.dir.TriesAtOnce),
				"contention notes": len(d.dir.TriesContention), "roles": len(d.dir.TriesRole), "limits": len(d.dir.TriesSlowBelow),
				"Gbit/s figures": len(d.dir.TriesGbps), "99th percentiles": len(d.dir.TriesP99Us), "latency limits": len(d.dir.TriesSlowAboveUs)} {
				if n != 0 && n != tries {
					return fmt.Errorf("pair %s-%s: %d %s for %d tries", p.A, p.B, n, what, tries)
				}
			}
			for _, role := range d.dir.TriesRole {
				if !slices.Contains(roles[:], role) {
					return fmt.Errorf("pair %s-%s: a try's role %q", p.A, p.B, role)
				}
			}
			if err := checkGbps(nil, d.dir.TriesSlowBelow...); err != nil {
				return fmt.Errorf("pair %s-%s: %w", p.A, p.B, err)
			}
			for _, k := range d.dir.TriesAtOnce {
				if k < 1 || k > maxHosts/2 {
					return fmt.Errorf("pair %s-%s: a try with %d tests at once", p.A, p.B, k)
				}
			}
			for _, sp := range d.dir.TriesAt {
				if sp.End.Before(sp.Start) {
					return fmt.Errorf("pair %s-%s: a try that ended before it began", p.A, p.B)
				}
			}
			if d.dir.Status != "" && !knownStatus(d.dir.Status) {
				return fmt.Errorf("pair %s-%s: status %q", p.A, p.B, d.dir.Status)
			}
		}
		if !knownStatus(p.Status) {
			return fmt.Errorf("pair %s-%s: status %q", p.A, p.B, p.Status)
		}
	}
	if err := checkGbps(r.MedianGbps); err != nil {
		return fmt.Errorf("median: %w", err)
	}
	for _, us := range []*float64{r.BestUs, r.MedianUs, r.SlowAboveUs} {
		if err := checkUs(us); err != nil {
			return fmt.Errorf("latency: %w", err)
		}
	}
	for _, p := range r.Pairs {
		for _, us := range []*float64{p.AToBUs, p.BToAUs, p.AToBP99Us, p.BToAP99Us} {
			if err := checkUs(us); err != nil {
				return fmt.Errorf("pair %s-%s: %w", p.A, p.B, err)
			}
		}
		for _, d := range []Direction{p.AToB, p.BToA} {
			if err := checkUs(nil, append(slices.Clone(d.TriesUs), d.TriesP99Us...)...); err != nil {
				return fmt.Errorf("pair %s-%s: %w", p.A, p.B, err)
			}
		}
	}
	if err := checkGbps(r.SlowBelowGbps); err != nil {
		return fmt.Errorf("threshold: %w", err)
	}
	for _, t := range r.Retests {
		if !names[t.From] || !names[t.To] {
			return fmt.Errorf("re-test %s→%s: not listed hosts", t.From, t.To)
		}
		if err := checkGbps(&t.FirstGbps, t.RetestsGbps...); err != nil {
			return fmt.Errorf("re-test %s→%s: %w", t.From, t.To, err)
		}
		if err := checkUs(t.FirstUs, t.RetestsUs...); err != nil {
			return fmt.Errorf("re-test %s→%s: %w", t.From, t.To, err)
		}
		if t.Status != "" && !knownStatus(t.Status) {
			return fmt.Errorf("re-test %s→%s: status %q", t.From, t.To, t.Status)
		}
	}
	for _, o := range r.Outliers {
		if !slices.Contains([]string{KindHost, KindPath}, o.Kind) || !slices.Contains([]string{DirSend, DirReceive, DirBoth}, o.Direction) {
			return fmt.Errorf("outlier %q: kind %q, direction %q", o.Name, o.Kind, o.Direction)
		}
		if err := checkGbps(o.MedianGbps); err != nil {
			return fmt.Errorf("outlier %s: %w", o.Name, err)
		}
		if err := checkUs(o.MedianUs); err != nil {
			return fmt.Errorf("outlier %s: %w", o.Name, err)
		}
	}
	if r.Incast != nil {
		if err := r.Incast.check(names); err != nil {
			return fmt.Errorf("incast: %w", err)
		}
	}
	return nil
}

// check validates an incast's figures against the document's hosts.
func (in *Incast) check(names map[string]bool) error {
	if !names[in.Receiver] {
		return fmt.Errorf("receiver %q is not a listed host", in.Receiver)
	}
	if len(in.Senders) > MaxIncastSenders {
		return fmt.Errorf("%d senders: at most %d", len(in.Senders), MaxIncastSenders)
	}
	seen := map[string]bool{}
	for _, s := range in.Senders {
		if !names[s.Name] || s.Name == in.Receiver || seen[s.Name] {
			return fmt.Errorf("sender %q: not a listed host other than the receiver, or listed twice", s.Name)
		}
		seen[s.Name] = true
		if err := checkGbps(s.Gbps); err != nil {
			return fmt.Errorf("sender %s: %w", s.Name, err)
		}
		if s.FairPct != nil && (math.IsNaN(*s.FairPct) || *s.FairPct < 0 || *s.FairPct > 100*MaxIncastSenders) {
			return fmt.Errorf("sender %s: fair share %g%%", s.Name, *s.FairPct)
		}
	}
	if err := checkGbps(in.SumGbps); err != nil {
		return fmt.Errorf("sum: %w", err)
	}
	if err := checkGbps(in.FairShareGbps); err != nil {
		return fmt.Errorf("fair share: %w", err)
	}
	if j := in.JainIndex; j != nil && !(*j > 0 && *j <= 1) {
		return fmt.Errorf("jain_index %g: between 0 and 1", *j)
	}
	return nil
}

func knownStatus(s string) bool {
	return slices.Contains([]string{StatusOK, StatusSlow, StatusFailed, StatusInconclusive, StatusNotRun, StatusUntested}, s)
}

// maxGbps bounds a figure: 100 Tbit/s is beyond any link that exists.
const maxGbps = 100_000

func checkGbps(g *float64, more ...float64) error {
	vals := more
	if g != nil {
		vals = append(vals, *g)
	}
	for _, v := range vals {
		if math.IsNaN(v) || v < 0 || v > maxGbps {
			return errors.New("a Gbit/s figure out of range")
		}
	}
	return nil
}

// maxUs bounds a latency: 100 s is beyond any test's.
const maxUs = 1e8

func checkUs(us *float64, more ...float64) error {
	vals := more
	if us != nil {
		vals = append(vals, *us)
	}
	for _, v := range vals {
		if math.IsNaN(v) || v < 0 || v > maxUs {
			return errors.New("a latency out of range")
		}
	}
	return nil
}
