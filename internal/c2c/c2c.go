// Package c2c measures the core-to-core latency matrix: how long a cache
// line takes to travel from one CPU to another, one way, for each pair of
// CPUs. Two threads pinned to the pair's CPUs flip one word on a padded
// cache line with compare-and-swap; a pair's figure is the median of its
// samples (the mean is ruined by the odd preemption, in any language).
// The CPUs are then grouped from the matrix alone (Cluster) and the
// groups compared with the L3 domains sysfs declares, because placement
// advice ("IRQs inside the application's L3 domain") is only as good as
// that map, and firmware options, VMs and sub-NUMA clustering can make it
// lie.
package c2c

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/linerate/linerate/internal/cpulist"
)

// Schema names the JSON document.
const Schema = "linerate.c2c/v1"

// Defaults for Options: core-to-core-latency's (1000 round trips × 300
// samples, one warm-up sample discarded), so that figures compare.
const (
	DefaultRoundTrips = 1000
	DefaultSamples    = 300
	MaxRoundTrips     = 1_000_000
	MaxSamples        = 100_000
)

// Result is a measured matrix (linerate.c2c/v1).
type Result struct {
	Schema     string    `json:"schema"`
	Host       string    `json:"host"`
	CPUModel   string    `json:"cpu_model,omitempty"`
	MeasuredAt time.Time `json:"measured_at"`
	Mode       string    `json:"mode"`
	CPUs       []int     `json:"cpus"`
	// MatrixNs is the one-way time in ns between CPUs[i] and CPUs[j], the
	// median of the pair's samples; null on the diagonal and for pairs
	// not measured (--per-l3 measures a subset).
	MatrixNs [][]*float64 `json:"matrix_ns"`
	// MinNs is the fastest sample of each pair, as MatrixNs.
	MinNs [][]*float64 `json:"min_ns"`
	// Clusters are the CPU groups the matrix shows (Cluster).
	Clusters [][]int `json:"clusters"`
	// SysfsL3Domains are sysfs's L3 domains, reduced to the measured CPUs.
	SysfsL3Domains [][]int `json:"sysfs_l3_domains"`
	// Agrees says Clusters and SysfsL3Domains are the same grouping.
	Agrees bool `json:"agrees"`
	// InsideNs and AcrossNs are the median one-way times within a cluster
	// and between clusters; null where there is no such pair.
	InsideNs *float64 `json:"inside_ns"`
	AcrossNs *float64 `json:"across_ns"`
	// ThresholdNs separates inside from across; null for one cluster.
	ThresholdNs *float64 `json:"threshold_ns"`
	// Verdict says it in a sentence: "sysfs says 2 L3 domains; the matrix
	// agrees: 18 ns inside, 74 ns across".
	Verdict    string   `json:"verdict"`
	Pairs      int      `json:"pairs"`
	RoundTrips int      `json:"round_trips"`
	Samples    int      `json:"samples"`
	DurationS  float64  `json:"duration_s"`
	Notes      []string `json:"notes"`
}

// stallFactor is how much longer than its samples' medians a measurement
// may take before the result says the threads were held up.
const stallFactor = 3

// stallNote says when a measurement took much longer than its pairs at
// their median speed (ideal, in ns) would: the threads were held up.
func stallNote(took time.Duration, ideal float64) string {
	if took <= time.Second || float64(took) <= stallFactor*ideal {
		return ""
	}
	return fmt.Sprintf("the measurement took %.1f s where the pairs at their median speed take %.2f s: "+
		"the threads were often descheduled (a busy host, or a VM whose vCPUs wait for the hypervisor); "+
		"medians resist that, but measure again on a quiet host before acting on the figures", took.Seconds(), ideal/1e9)
}

// Options say how much to measure.
type Options struct {
	// RoundTrips per sample and Samples per pair; 0 takes the defaults.
	RoundTrips, Samples int
	// Progress, when set, is called after each pair with the count done.
	Progress func(done, total int)
}

func (o *Options) fill() error {
	if o.RoundTrips == 0 {
		o.RoundTrips = DefaultRoundTrips
	}
	if o.Samples == 0 {
		o.Samples = DefaultSamples
	}
	if o.RoundTrips < 1 || o.RoundTrips > MaxRoundTrips {
		return fmt.Errorf("round trips per sample: %d, give 1 to %d", o.RoundTrips, MaxRoundTrips)
	}
	if o.Samples < 1 || o.Samples > MaxSamples {
		return fmt.Errorf("samples per pair: %d, give 1 to %d", o.Samples, MaxSamples)
	}
	return nil
}

// Estimate measures the plan's first pair briefly (20 samples) and
// returns how long the whole plan should take with opts.
func Estimate(p Plan, opts Options) (time.Duration, error) {
	if err := opts.fill(); err != nil {
		return 0, err
	}
	if len(p.Pairs) == 0 {
		return 0, nil
	}
	restore := quiet()
	defer restore()
	const probe = 20
	buf := make([]time.Duration, probe)
	t0 := time.Now()
	if _, err := measure(p.Pairs[0][0], p.Pairs[0][1], opts.RoundTrips, buf); err != nil {
		return 0, err
	}
	perSample := time.Since(t0) / (probe + 1)
	return perSample * time.Duration(opts.Samples+1) * time.Duration(len(p.Pairs)), nil
}

// Measure runs the plan: every pair, then the clusters and the comparison
// with topo's L3 domains. It stops between pairs when ctx ends.
func Measure(ctx context.Context, topo Topology, p Plan, opts Options) (*Result, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	idx := map[int]int{}
	for i, c := range p.CPUs {
		idx[c] = i
	}
	n := len(p.CPUs)
	med, mins := emptyMatrix(n), emptyMatrix(n)
	buf := make([]time.Duration, opts.Samples)
	var ideal float64 // ns the pairs would take at their median speed
	start := time.Now()
	restore := quiet()
	for k, pr := range p.Pairs {
		if err := ctx.Err(); err != nil {
			restore()
			return nil, fmt.Errorf("core-to-core matrix interrupted after %d of %d pairs: %w", k, len(p.Pairs), err)
		}
		st, err := measure(pr[0], pr[1], opts.RoundTrips, buf)
		if err != nil {
			restore()
			return nil, err
		}
		ideal += float64((opts.Samples+1)*opts.RoundTrips*2) * st.median
		i, j := idx[pr[0]], idx[pr[1]]
		med[i][j], med[j][i] = round1(st.median), round1(st.median)
		mins[i][j], mins[j][i] = round1(st.min), round1(st.min)
		if opts.Progress != nil {
			opts.Progress(k+1, len(p.Pairs))
		}
	}
	restore()
	r := &Result{Schema: Schema, Host: topo.Hostname, CPUModel: topo.Model, MeasuredAt: start.UTC().Truncate(time.Second),
		Mode: p.Mode, CPUs: p.CPUs, MatrixNs: med, MinNs: mins, Pairs: len(p.Pairs),
		RoundTrips: opts.RoundTrips, Samples: opts.Samples, DurationS: math.Round(time.Since(start).Seconds()*100) / 100}
	if n := stallNote(time.Since(start), ideal); n != "" {
		r.Notes = append(r.Notes, n)
	}
	r.Judge(topo.L3Domains)
	return r, nil
}

func emptyMatrix(n int) [][]*float64 {
	m := make([][]*float64, n)
	for i := range m {
		m[i] = make([]*float64, n)
	}
	return m
}

// round1 rounds to 0.1 ns: finer digits are noise.
func round1(v float64) *float64 {
	r := math.Round(v*10) / 10
	return &r
}

// Judge fills the clusters, the sysfs comparison and the verdict from
// MatrixNs and sysfs's L3 domains (l3, over all CPUs). Measure calls it;
// it is exported for matrices measured elsewhere.
func (r *Result) Judge(l3 [][]int) {
	c := Cluster(r.CPUs, r.MatrixNs)
	r.Clusters = c.Groups
	r.InsideNs, r.AcrossNs, r.ThresholdNs = finite(c.Inside), finite(c.Across), nil
	if c.Threshold > 0 {
		r.ThresholdNs = round1(c.Threshold)
	}
	r.SysfsL3Domains = [][]int{}
	for _, d := range l3 {
		if in := intersect(d, r.CPUs); len(in) > 0 {
			r.SysfsL3Domains = append(r.SysfsL3Domains, in)
		}
	}
	r.Agrees = len(r.SysfsL3Domains) > 0 && sameGroups(r.Clusters, r.SysfsL3Domains)
	r.Verdict = verdict(r, len(l3))
	if len(r.SysfsL3Domains) > 1 && !r.pairInside(r.SysfsL3Domains) {
		// --cpus 0,6 across two domains: one step cannot show itself.
		r.Agrees = false
		r.Verdict = sysfsText(r, len(l3)) + "; no pair measured lies inside one, so the matrix cannot check them: " +
			ns(r.medianAll()) + " across"
	}
	if r.Notes == nil {
		r.Notes = []string{}
	}
}

func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return round1(v)
}

// sameGroups reports whether a and b partition the CPUs alike.
func sameGroups(a, b [][]int) bool {
	norm := func(gs [][]int) []string {
		var out []string
		for _, g := range gs {
			s := slices.Clone(g)
			slices.Sort(s)
			out = append(out, cpulist.Format(s))
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(norm(a), norm(b))
}

// medianAll is the median one-way time of every measured pair.
func (r *Result) medianAll() float64 {
	var xs []float64
	for i := range r.CPUs {
		for j := i + 1; j < len(r.CPUs); j++ {
			if v := r.MatrixNs[i][j]; v != nil {
				xs = append(xs, *v)
			}
		}
	}
	return medianOf(xs)
}

// pairInside reports whether some measured pair lies inside one of the
// groups.
func (r *Result) pairInside(groups [][]int) bool {
	for _, g := range groups {
		for i, a := range g {
			for _, b := range g[i+1:] {
				ia, ib := slices.Index(r.CPUs, a), slices.Index(r.CPUs, b)
				if ia >= 0 && ib >= 0 && r.MatrixNs[ia][ib] != nil {
					return true
				}
			}
		}
	}
	return false
}

// verdict is the sentence: what sysfs says, whether the matrix agrees,
// and the two figures.
func verdict(r *Result, domains int) string {
	figures := ""
	switch {
	case r.InsideNs != nil && r.AcrossNs != nil:
		figures = ns(*r.InsideNs) + " inside, " + ns(*r.AcrossNs) + " across"
	case r.InsideNs != nil && len(r.CPUs) == 2:
		figures = ns(*r.InsideNs) + " between the two CPUs"
	case r.InsideNs != nil:
		figures = ns(*r.InsideNs) + " between any two CPUs"
	case r.AcrossNs != nil:
		figures = ns(*r.AcrossNs) + " across"
	}
	sysfs := sysfsText(r, domains)
	switch {
	case r.Agrees:
		return sysfs + "; the matrix agrees: " + figures
	case domains == 0:
		return sysfs + "; the matrix finds " + groupsText(r.Clusters) + ": " + figures
	}
	return sysfs + ", but the matrix finds " + groupsText(r.Clusters) + ": " + figures +
		" (a firmware option, a VM's vCPUs placed across host caches, or a noisy run: measure again before acting on it)"
}

// sysfsText says what sysfs declares: "sysfs says 2 L3 domains".
func sysfsText(r *Result, domains int) string {
	var sysfs string
	switch domains {
	case 0:
		sysfs = "sysfs names no L3 domain"
	case 1:
		sysfs = "sysfs says 1 L3 domain"
	default:
		sysfs = fmt.Sprintf("sysfs says %d L3 domains", domains)
	}
	if len(r.SysfsL3Domains) != domains && domains > 0 {
		sysfs += fmt.Sprintf(" (%d among the CPUs measured)", len(r.SysfsL3Domains))
	}
	return sysfs
}

// groupsText is "2 groups (0-5 | 6-11)" or "1 group (0-11)".
func groupsText(gs [][]int) string {
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = cpulist.Format(g)
	}
	word := "groups"
	if len(gs) == 1 {
		word = "group"
	}
	return fmt.Sprintf("%d %s (%s)", len(gs), word, strings.Join(parts, " | "))
}

// ns formats a one-way time: whole ns from 10 ns up, one decimal below.
func ns(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.1f ns", v)
	}
	return fmt.Sprintf("%.0f ns", v)
}
