package metrics

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/store"
)

// Defaults of Live's bounds.
const (
	// DefaultTTL: a scrape within this long of the last collection is
	// served the same facts. A full collection over a 512-CPU, 8-NIC
	// host costs about 200 ms (docs/benchmarks.md); several Prometheus
	// servers scraping every second must not multiply that.
	DefaultTTL = 5 * time.Second
	// DefaultModuleInterval: module memory is read at most this often per
	// interface. A module answers over a 100-400 kHz I2C bus, some take
	// tens of milliseconds per 128-byte page, and an optical reading
	// changes slowly; the values keep their read time
	// (linerate_transceiver_read_timestamp_seconds).
	DefaultModuleInterval = time.Minute
	// storeTimeout bounds the results database's part of a collection.
	storeTimeout = 3 * time.Second
)

// Live collects a host's facts on demand, for a long-running exporter:
// a scrape reuses the last collection for TTL, concurrent scrapes share
// one collection (singleflight), and module memory is read at most every
// ModuleInterval per interface. Its methods are safe for concurrent use.
type Live struct {
	// FS is the host to read: hostfs.Live() for this host, or a captured
	// tree (whose ethtool facts are then read from the tree).
	FS *hostfs.FS
	// Doctor are doctor's options; Doctor.Ifaces selects the interfaces
	// (empty: every PCI NIC; name virtual ones, e.g. a lab's veth).
	Doctor doctor.Options
	// DBPath is the results database ("" the default path); NoStore
	// leaves bench results out.
	DBPath  string
	NoStore bool
	// TTL and ModuleInterval: zero means DefaultTTL, DefaultModuleInterval.
	TTL            time.Duration
	ModuleInterval time.Duration
	// Logger receives one line per failed read; nil discards them.
	Logger *slog.Logger
	// now is the clock (tests move it).
	now func() time.Time

	group singleflight.Group

	mu  sync.Mutex
	cur *Snapshot // the last collection, nil before the first
	// curEnd is when cur was finished: the TTL runs from there, so that
	// a collection slower than the TTL is not followed at once by the
	// next (each scrape would then cost a whole collection).
	curEnd time.Time

	// bench is the last read of the results database, reused while the
	// database's files are unchanged (benchKey): loading 64 full runs
	// is most of a scrape's cost, and the database changes only when a
	// bench run ends.
	bench    []BenchResult
	benchKey benchKey

	collects  atomic.Int64 // collections made, for tests
	benchHits atomic.Int64 // collections that reused the bench results, for tests

	// collecting is held by the one collection running at a time (and by
	// Close): it owns eth and modules.
	collecting sync.Mutex
	eth        ethtoolSource
	modules    map[string]*moduleRead
}

// moduleRead is one interface's last module read.
type moduleRead struct {
	at    time.Time
	facts *ethtool.Facts // Module, ModuleError and the module's NotRead keys
}

func (l *Live) clock() time.Time {
	if l.now != nil {
		return l.now()
	}
	return time.Now()
}

// Snapshot returns the current collection, collecting anew when the last
// one is older than TTL. It never fails: what could not be read is
// counted in the snapshot's Errors.
func (l *Live) Snapshot() *Snapshot {
	ttl := cmpOr(l.TTL, DefaultTTL)
	l.mu.Lock()
	cur, end := l.cur, l.curEnd
	l.mu.Unlock()
	if cur != nil && l.clock().Sub(end) < ttl {
		return cur
	}
	v, _, _ := l.group.Do("collect", func() (any, error) {
		s := l.collect()
		l.mu.Lock()
		l.cur, l.curEnd = s, l.clock()
		l.mu.Unlock()
		return s, nil
	})
	return v.(*Snapshot)
}

// Close releases the netlink socket.
func (l *Live) Close() error {
	l.collecting.Lock()
	defer l.collecting.Unlock()
	if l.eth != nil {
		err := l.eth.close()
		l.eth = nil
		return err
	}
	return nil
}

// DoctorError runs a collection and returns doctor's error, if any: a
// caller checks its options (an --iface that does not exist) at start.
func (l *Live) DoctorError() error {
	s := l.Snapshot()
	return s.doctorErr
}

func (l *Live) collect() *Snapshot {
	l.collecting.Lock()
	defer l.collecting.Unlock()
	l.collects.Add(1)
	start := l.clock()
	s := NewSnapshot(start)
	s.Report, s.doctorErr = l.diagnose(s)
	if s.doctorErr != nil {
		l.fail(s, SourceDoctor, s.doctorErr)
	}
	s.Durations[SourceDoctor] = l.clock().Sub(start)
	if !l.NoStore {
		t := l.clock()
		var err error
		s.Bench, err = l.readBench()
		if err != nil {
			l.fail(s, SourceStore, err)
		}
		s.Durations[SourceStore] = l.clock().Sub(t)
	}
	return s
}

// benchKey identifies a state of the results database: its file's and
// its write-ahead log's size and modification time (a commit changes the
// log first, a checkpoint the file). It is taken before the read, so a
// commit during the read makes the next collection read again.
type benchKey struct {
	db, wal fileStamp
}

type fileStamp struct {
	size, mtime int64
	ok          bool
}

// stampOf stamps a file; a missing or empty one has no stamp (a reader
// of a database in WAL mode leaves an empty log behind).
func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil || fi.Size() == 0 {
		return fileStamp{}
	}
	return fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano(), ok: true}
}

// readBench reads the bench results, or reuses the last read while the
// database is unchanged; the caller holds collecting.
func (l *Live) readBench() ([]BenchResult, error) {
	path := l.DBPath
	if path == "" {
		path = store.DefaultPath()
	}
	key := benchKey{db: stampOf(path), wal: stampOf(path + "-wal")}
	if key.db.ok && key == l.benchKey {
		l.benchHits.Add(1)
		return l.bench, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	b, err := ReadBench(ctx, path)
	if err != nil {
		l.bench, l.benchKey = nil, benchKey{}
		return nil, err
	}
	l.bench, l.benchKey = b, key
	return b, nil
}

func (l *Live) fail(s *Snapshot, source string, err error) {
	s.Errors[source]++
	if l.Logger != nil {
		l.Logger.Warn("metrics: a read failed; the other metrics are still served", "source", source, "err", err)
	}
}

// diagnose runs inventory and doctor, reading module memory through the
// rate-limited cache on a live host.
func (l *Live) diagnose(s *Snapshot) (*doctor.Report, error) {
	opts := doctor.LiveOptions{Options: l.Doctor, Unread: func(source string, err error) { l.fail(s, LiveSource(source), err) }}
	fresh := map[string]bool{} // interfaces whose module was read in this collection
	if l.FS.IsLive() && l.eth == nil {
		if c, err := ethtool.Open(); err != nil {
			l.fail(s, SourceEthtool, err)
			opts.Ethtool = doctor.NoEthtool
		} else {
			l.eth = clientSource{c}
		}
	}
	if l.eth != nil {
		seen := map[string]bool{}
		opts.Ethtool = func(iface string) *ethtool.Facts {
			seen[iface] = true
			return l.ethtoolFacts(iface, s, fresh)
		}
		defer func() { l.pruneModules(seen) }()
	}
	x, err := doctor.Live(l.FS, opts)
	if err != nil {
		return nil, err
	}
	rep := x.Report
	for _, n := range rep.NICs {
		if n.Transceiver == nil {
			continue
		}
		if l.eth == nil { // read from a captured tree, all at once
			s.ModuleReadAt[n.Interface] = s.At
			fresh[n.Interface] = true
		}
		if !n.Transceiver.Readable && fresh[n.Interface] {
			l.fail(s, SourceModule, errorText(n.Interface, n.Transceiver.Error))
		}
	}
	return rep, nil
}

// ethtoolFacts reads iface's ethtool facts, its module memory only when
// the last read is older than ModuleInterval.
func (l *Live) ethtoolFacts(iface string, s *Snapshot, fresh map[string]bool) *ethtool.Facts {
	f := l.eth.exceptModule(iface)
	if l.modules == nil {
		l.modules = map[string]*moduleRead{}
	}
	m := l.modules[iface]
	if m == nil || l.clock().Sub(m.at) >= cmpOr(l.ModuleInterval, DefaultModuleInterval) {
		m = &moduleRead{at: l.clock(), facts: l.eth.module(iface)}
		l.modules[iface] = m
		fresh[iface] = true
	}
	f.Module, f.ModuleError = m.facts.Module, m.facts.ModuleError
	if f.NotRead == nil {
		f.NotRead = map[string]string{}
	}
	for k, v := range m.facts.NotRead {
		f.NotRead[k] = v
	}
	if len(f.Module) > 0 || f.ModuleError != "" {
		s.ModuleReadAt[iface] = m.at
	}
	return f
}

// pruneModules forgets the module reads of interfaces that are gone.
func (l *Live) pruneModules(seen map[string]bool) {
	for iface := range l.modules {
		if !seen[iface] {
			delete(l.modules, iface)
		}
	}
}

// ethtoolSource reads live ethtool facts: the module's memory apart from
// the rest, so that it can be read less often.
type ethtoolSource interface {
	exceptModule(iface string) *ethtool.Facts
	module(iface string) *ethtool.Facts // Module, ModuleError and the module's NotRead keys
	close() error
}

// clientSource reads through the ethtool netlink family.
type clientSource struct{ c *ethtool.Client }

func (s clientSource) exceptModule(iface string) *ethtool.Facts {
	return ethtool.CollectExceptModule(s.c, iface)
}

func (s clientSource) module(iface string) *ethtool.Facts {
	f := &ethtool.Facts{}
	f.ReadModule(s.c, iface)
	return f
}

func (s clientSource) close() error { return s.c.Close() }

type textError string

func (e textError) Error() string { return string(e) }

func errorText(iface string, msg *string) error {
	if msg == nil {
		return textError(iface + ": module memory unreadable")
	}
	return textError(iface + ": " + *msg)
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
