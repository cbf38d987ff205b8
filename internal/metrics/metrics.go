// Package metrics exposes what linerate knows about a host in the
// Prometheus text format: each NIC's identity, its ceiling chain, its PCIe
// link, its temperature, the plugged module's per-lane optical power,
// bias, temperature and voltage with the module's own thresholds, FEC and
// drop counters by cause, every raised doctor finding, and the last bench
// result per peer and engine from the results database.
//
// Names follow Prometheus's conventions (docs/metrics.md lists them): the
// prefix linerate_, base units (bytes per second, not bits; watts,
// amperes, celsius, volts, seconds), _total on counters, identity labels
// (PCI address, driver, module vendor, part and serial number) only on
// the _info metrics, so that replacing a module or a driver does not
// multiply every series.
//
// The same collector serves `linerate serve --metrics` (a Live source
// refreshed on scrape at a bounded cost) and `linerate doctor --prom`
// (one Snapshot written as a node_exporter textfile). A source that fails
// (a module that does not answer, a locked results database) leaves the
// other metrics in place and counts itself in linerate_scrape_errors_total.
package metrics

import (
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/mesh"
)

// The sources a collection reads, as linerate_scrape_errors_total and
// linerate_scrape_duration_seconds label them.
const (
	// SourceDoctor: the inventory and its diagnosis (sysfs, procfs).
	SourceDoctor = "doctor"
	// SourceEthtool: the ethtool netlink family (link modes, FEC, counters).
	SourceEthtool = doctor.SourceEthtool
	// SourceNetlink: rtnetlink (link kinds, shaping qdiscs, DCB).
	SourceNetlink = doctor.SourceNetlink
	// SourceModule: a plugged module's memory (EEPROM).
	SourceModule = "module_eeprom"
	// SourceStore: the results database.
	SourceStore = "store"
)

// LiveSource is the source label of a doctor.Live source: DCB is read
// over rtnetlink, and counts as netlink.
func LiveSource(source string) string {
	if source == doctor.SourceDCB {
		return SourceNetlink
	}
	return source
}

// Sources lists every source, so that each error counter exists (at 0)
// from the first scrape on and rate() over it works.
var Sources = []string{SourceDoctor, SourceEthtool, SourceNetlink, SourceModule, SourceStore}

// Snapshot is one collection of facts to expose.
type Snapshot struct {
	// Report is doctor's report; nil when doctor could not run (then
	// Errors[SourceDoctor] says so).
	Report *doctor.Report
	// At is when the report's facts were read.
	At time.Time
	// ModuleReadAt is, by interface, when the module values shown were
	// read: a live source reads module memory less often than the rest.
	ModuleReadAt map[string]time.Time
	// Bench holds the last run per peer, engine, stream count and
	// direction from the results database.
	Bench []BenchResult
	// Errors counts the failed reads of this collection by source.
	Errors map[string]int
	// Durations is how long each source took in this collection.
	Durations map[string]time.Duration

	doctorErr error // why Report is nil
}

// NewSnapshot returns an empty snapshot taken at t.
func NewSnapshot(t time.Time) *Snapshot {
	return &Snapshot{At: t, ModuleReadAt: map[string]time.Time{}, Errors: map[string]int{}, Durations: map[string]time.Duration{}}
}

// Collector is a prometheus.Collector over the snapshots a source hands
// it, one per scrape (a source may hand the same snapshot to several
// scrapes; its errors are counted once).
type Collector struct {
	source  func() *Snapshot
	version string
	mesh    func() *mesh.Figures // nil: no mesh families (WithMesh)

	mu     sync.Mutex
	errors map[string]float64 // linerate_scrape_errors_total, by source
	last   *Snapshot          // the snapshot whose errors were counted last
}

// NewCollector returns a collector over source. version is linerate's,
// for linerate_build_info.
func NewCollector(source func() *Snapshot, version string) *Collector {
	c := &Collector{source: source, version: version, errors: map[string]float64{}}
	for _, s := range Sources {
		c.errors[s] = 0
	}
	return c
}

// NewRegistry returns a registry holding only c. The Go runtime and
// process collectors are left out on purpose: linerate is scraped for
// the host's links, not for its own heap, and node_exporter already
// reports the processes of a host that wants them.
func NewRegistry(c *Collector) *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(c)
	return r
}

// Describe sends every family's descriptor.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

// Collect takes a snapshot from the source and sends its metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.source()
	e := &emitter{ch: ch}
	e.gauge(buildInfo, 1, c.version, runtime.Version())
	if s == nil {
		s = NewSnapshot(time.Now())
	}
	for src, d := range s.Durations {
		e.gauge(scrapeDuration, d.Seconds(), src)
	}
	for src, v := range c.countErrors(s) {
		e.counter(scrapeErrors, v, src)
	}
	if s.Report != nil {
		e.gauge(doctorTimestamp, unixSeconds(s.At))
		emitReport(e, s)
	}
	emitBench(e, s.Bench)
	if c.mesh != nil {
		emitMesh(e, c.mesh())
	}
}

// countErrors adds a snapshot's errors to the running totals once, and
// returns a copy of the totals.
func (c *Collector) countErrors(s *Snapshot) map[string]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s != c.last {
		c.last = s
		for src, n := range s.Errors {
			c.errors[src] += float64(n)
		}
	}
	out := make(map[string]float64, len(c.errors))
	for k, v := range c.errors {
		out[k] = v
	}
	return out
}

// unixSeconds is t as Unix seconds with sub-second precision.
func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// ReportSnapshot is a snapshot of one doctor run whose facts were all read
// at t (doctor --prom): every module was read then, and each module that
// could not be read counts as a failed read of module_eeprom.
func ReportSnapshot(rep *doctor.Report, t time.Time) *Snapshot {
	s := NewSnapshot(t)
	s.Report = rep
	for _, n := range rep.NICs {
		if n.Transceiver == nil {
			continue
		}
		s.ModuleReadAt[n.Interface] = t
		if !n.Transceiver.Readable {
			s.Errors[SourceModule]++
		}
	}
	return s
}
