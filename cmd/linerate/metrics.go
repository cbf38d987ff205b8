package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/mesh"
	"github.com/linerate/linerate/internal/metrics"
)

// metricsFlags are serve's Prometheus options.
type metricsFlags struct {
	addr   string
	ifaces []string
}

func addMetricsFlags(fl *pflag.FlagSet, f *metricsFlags) {
	fl.StringVar(&f.addr, "metrics", "", "also serve Prometheus metrics at http://ADDR:PORT/metrics, a listener of its own bound to exactly that address, read-only and without a token (off unless given)")
	fl.StringSliceVar(&f.ifaces, "metrics-iface", nil, "interfaces the metrics describe (default: every PCI NIC; name virtual ones, e.g. a lab's lab0)")
}

// startMetrics starts the metrics listener when --metrics was given; it
// serves until ctx is done. It checks the options and the listening
// address first, so that a mistake stops serve at once.
func startMetrics(ctx context.Context, env *cliEnv, f metricsFlags, meshFigures func() *mesh.Figures) error {
	if f.addr == "" {
		if len(f.ifaces) > 0 {
			return errors.New("--metrics-iface needs --metrics ADDR:PORT")
		}
		return nil
	}
	for _, iface := range f.ifaces {
		if _, err := os.Stat(filepath.Join("/sys/class/net", iface)); err != nil {
			return fmt.Errorf("--metrics-iface %s: no such interface here (see 'ip link')", iface)
		}
	}
	ln, err := metrics.Listen(f.addr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(env.stderr, nil))
	live := &metrics.Live{FS: hostfs.Live(), Doctor: doctor.Options{Ifaces: f.ifaces}, Logger: log}
	if err := live.DoctorError(); err != nil {
		ln.Close()
		live.Close()
		return fmt.Errorf("--metrics: %w", err)
	}
	reg := metrics.NewRegistry(metrics.NewCollector(live.Snapshot, version).WithMesh(meshFigures))
	go func() {
		defer live.Close()
		if err := metrics.Serve(ctx, ln, metrics.Handler(reg, log)); err != nil {
			log.Error("metrics listener stopped", "err", err)
		}
	}()
	log.Info("serving Prometheus metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return nil
}

// promSources are what doctor --prom learned beside its report: sources
// that failed and how long the collection took.
type promSources struct {
	errors  map[string]int
	started time.Time
	took    time.Duration
}

// writeProm writes doctor's report, and on a live host the last bench
// results, as a node_exporter textfile (or to stdout for "-").
func writeProm(ctx context.Context, env *cliEnv, path string, rep *doctor.Report, live bool, src promSources) error {
	s := metrics.ReportSnapshot(rep, src.started)
	for k, v := range src.errors {
		s.Errors[k] += v
	}
	s.Durations[metrics.SourceDoctor] = src.took
	if live {
		t := time.Now()
		var err error
		if s.Bench, err = metrics.ReadBench(ctx, ""); err != nil {
			s.Errors[metrics.SourceStore]++
			fmt.Fprintf(env.stderr, "linerate: warning: %v (bench results left out of --prom)\n", err)
		}
		s.Durations[metrics.SourceStore] = time.Since(t)
	}
	reg := metrics.NewRegistry(metrics.NewCollector(func() *metrics.Snapshot { return s }, version))
	return metrics.WriteTextfile(path, reg, env.stdout)
}
