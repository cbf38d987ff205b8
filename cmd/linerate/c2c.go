package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/internal/c2c"
	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/store"
)

type c2cFlags struct {
	cpus       string
	perL3      bool
	roundTrips int
	samples    int
	json       bool
	noStore    bool
	db         string
}

func newC2CCmd(env *cliEnv) *cobra.Command {
	var f c2cFlags
	cmd := &cobra.Command{
		Use:   "c2c [--cpus LIST | --per-l3]",
		Short: "Measure the core-to-core latency matrix and compare its groups with sysfs's L3 domains",
		Long: `c2c measures how long a cache line takes to go from one CPU to another, one
way, for every pair: two threads pinned to the pair's CPUs flip one word with
compare-and-swap, 300 samples of 1000 round trips each (the first sample
discarded as warm-up), and the pair's figure is the median (the minimum is in
--json). It then groups the CPUs from the matrix alone and compares the groups
with the L3 domains sysfs declares: placement advice is only as good as that
map.

Every pair of every CPU this process may use is measured unless --cpus names
the CPUs or --per-l3 takes one CPU per L3 domain and a second core in each
(seconds on a 128-CPU host instead of minutes). On a terminal it says how many
pairs and how long before it starts.

Other work on the machine shows up as noise: run it on a quiet host. The
result is stored in the results database (--db, default ` + store.DefaultPath() + `)
under the hostname, where 'linerate report' finds it for that host's section;
--no-store keeps nothing.`,
		Example: `  linerate c2c
  linerate c2c --per-l3
  linerate c2c --cpus 0-11 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runC2C(cmd, env, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.cpus, "cpus", "", "the CPUs to measure, every pair (\"0-11\", \"0,6\")")
	fl.BoolVar(&f.perL3, "per-l3", false, "one CPU per L3 domain, every pair of those, plus a second core in each domain")
	fl.IntVar(&f.roundTrips, "round-trips", c2c.DefaultRoundTrips, "round trips per sample")
	fl.IntVar(&f.samples, "samples", c2c.DefaultSamples, "samples per pair (after one warm-up sample)")
	fl.BoolVar(&f.json, "json", false, "print the "+c2c.Schema+" JSON document")
	fl.BoolVar(&f.noStore, "no-store", false, "store nothing")
	fl.StringVar(&f.db, "db", "", "the results database (default "+store.DefaultPath()+")")
	return cmd
}

func runC2C(cmd *cobra.Command, env *cliEnv, f c2cFlags) error {
	if f.noStore && f.db != "" {
		return errors.New("--no-store keeps nothing: drop --db or --no-store")
	}
	var cpus []int
	if cmd.Flags().Changed("cpus") {
		var err error
		if cpus, err = cpulist.Parse(f.cpus); err != nil {
			return fmt.Errorf("--cpus: %w", err)
		}
		if len(cpus) == 0 {
			return errors.New("--cpus is empty: name at least two CPUs (\"0,1\")")
		}
	}
	opts := c2c.Options{RoundTrips: f.roundTrips, Samples: f.samples}
	if f.roundTrips < 1 || f.roundTrips > c2c.MaxRoundTrips {
		return fmt.Errorf("--round-trips %d: give 1 to %d", f.roundTrips, c2c.MaxRoundTrips)
	}
	if f.samples < 1 || f.samples > c2c.MaxSamples {
		return fmt.Errorf("--samples %d: give 1 to %d", f.samples, c2c.MaxSamples)
	}
	topo, err := c2c.ReadTopology(hostfs.Live())
	if err != nil {
		return err
	}
	allowed, err := c2c.Allowed()
	if err != nil {
		return err
	}
	plan, err := c2c.NewPlan(topo, allowed, cpus, f.perL3)
	if err != nil {
		return err
	}
	tty := isTerminal(env.stderr)
	if tty {
		est, err := c2c.Estimate(plan, opts)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.stderr, "measuring %d pair%s of %d CPUs (%s): about %s\n",
			len(plan.Pairs), plural(len(plan.Pairs)), len(plan.CPUs), cpulist.Format(plan.CPUs), roundEstimate(est))
		opts.Progress = func(done, total int) {
			fmt.Fprintf(env.stderr, "\r\x1b[Kpair %d/%d", done, total)
			if done == total {
				fmt.Fprint(env.stderr, "\r\x1b[K")
			}
		}
	}
	res, err := c2c.Measure(cmd.Context(), topo, plan, opts)
	if err != nil {
		return err
	}
	if !f.noStore {
		if err := storeC2C(cmd, f.db, res); err != nil {
			return err
		}
	}
	if f.json {
		return writeJSON(env.stdout, res)
	}
	return c2c.WriteText(env.stdout, res)
}

// storeC2C keeps the result under its host in the results database,
// created if need be (as bench does).
func storeC2C(cmd *cobra.Command, path string, res *c2c.Result) error {
	doc, err := json.Marshal(res)
	if err != nil {
		return err
	}
	db, err := store.Open(cmd.Context(), path)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.AddC2C(cmd.Context(), &store.C2C{MeasuredAt: res.MeasuredAt, Host: res.Host, Result: doc})
}

// roundEstimate says a duration as a person would: "0.4 s", "12 s", "6 min".
func roundEstimate(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < 2*time.Minute:
		return fmt.Sprintf("%.0f s", d.Seconds())
	}
	return fmt.Sprintf("%.0f min (--per-l3 takes one CPU per L3 domain)", d.Minutes())
}
