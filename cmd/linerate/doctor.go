package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/metrics"
	"github.com/linerate/linerate/internal/snapshot"
	"github.com/linerate/linerate/internal/termui"
)

type doctorFlags struct {
	root    string
	ifaces  []string
	appCPUs string
	rtt     time.Duration
	peer    string
	json    bool
	failOn  string
	prom    string
	roceP   int
}

func newDoctorCmd(env *cliEnv) *cobra.Command {
	var f doctorFlags
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Inventory the host and say what limits its fast NICs, with the fix",
		Long: `doctor reads /sys and /proc (or a captured tree or snapshot with --root) and
reports each PCI NIC's link, PCIe lanes, queues, IRQ placement, temperature and
RDMA ports, the ceiling they add up to, and findings with their exact fixes.

--prom FILE also writes the same facts, the findings and (on a live host) the
last bench results as Prometheus metrics for node_exporter's textfile
collector: atomically (a temporary file in FILE's directory, flushed, then
renamed), without timestamps; "-" writes them to stdout instead of the report.

Each finding ends with its fix: numbered steps, each said in words with the
command that does it on the lines below, ready to paste into a POSIX shell.
The text wraps at $COLUMNS, else the terminal's width, else 80 columns.

Exit status: 0 no finding at or above --fail-on, 1 some, 2 error.`,
		Example: `  linerate doctor
  linerate doctor --iface enp1s0f0np0 --app-cpus 6
  linerate doctor --iface ens2f0np0 --peer 192.168.15.102
  linerate doctor --root snapshot.tar.gz --json
  linerate doctor --prom /var/lib/node_exporter/textfile/linerate.prom`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDoctor(cmd.Context(), env, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.root, "root", "", "read a captured tree (DIR) or snapshot (FILE.tar.gz) instead of this host")
	fl.StringSliceVar(&f.ifaces, "iface", nil, "diagnose only these interfaces, physical or virtual (repeat or comma-separate)")
	fl.StringVar(&f.appCPUs, "app-cpus", "", "CPUs the application runs on, e.g. 6 or 0-3,8 (checks IRQs against them)")
	fl.DurationVar(&f.rtt, "rtt", doctor.DefaultRTT, "round-trip time socket buffers must cover")
	fl.StringVar(&f.peer, "peer", "", "probe the path MTU to this address (don't-fragment ICMP; needs root)")
	fl.BoolVar(&f.json, "json", false, "print the linerate.doctor/v1 JSON document")
	fl.StringVar(&f.failOn, "fail-on", "critical", "exit 1 when a finding is at least this severe: critical, warning or info; never: exit 0 whatever is found (cron with --prom)")
	fl.StringVar(&f.prom, "prom", "", "also write Prometheus metrics to this file (node_exporter textfile, e.g. DIR/linerate.prom); - for stdout")
	fl.IntVar(&f.roceP, "roce-priority", -1, "the priority RoCE traffic uses (0-7); default: worked out from the trust mode and DSCP 26's mapping")
	return cmd
}

func runDoctor(ctx context.Context, env *cliEnv, f doctorFlags) error {
	// "never": exit 0 whatever doctor finds, as a cron job writing --prom
	// wants (the alerts carry the findings; cron mails a non-zero exit).
	never := f.failOn == "never"
	failOn, err := doctor.ParseSeverity(f.failOn)
	if err != nil && !never {
		return fmt.Errorf("--fail-on: %w (or never)", err)
	}
	opts := doctor.Options{Ifaces: f.ifaces, RTT: f.rtt}
	if f.roceP >= 0 {
		opts.RoCEPriority = &f.roceP
	} else if f.roceP != -1 {
		return fmt.Errorf("--roce-priority %d: a priority is 0 to 7 (RoCE usually rides 3)", f.roceP)
	}
	if f.rtt <= 0 {
		return fmt.Errorf("--rtt %s: must be positive, e.g. 1ms or 20ms", f.rtt)
	}
	if f.appCPUs != "" {
		if opts.AppCPUs, err = cpulist.Parse(f.appCPUs); err != nil {
			return fmt.Errorf("--app-cpus: %w", err)
		}
	}
	if f.peer != "" && f.root != "" {
		return errors.New("--peer probes the live network and cannot be combined with --root")
	}
	if f.prom == "-" && f.json {
		return errors.New("--prom - and --json both write to stdout: write the metrics to a file, or leave one out")
	}
	started := time.Now()
	srcErrors := map[string]int{}
	fs, closeRoot, err := openRoot(f.root)
	if err != nil {
		return err
	}
	defer closeRoot()
	if f.peer != "" {
		if opts.PathMTU, err = probePathMTU(ctx, f.peer); err != nil {
			return err
		}
		if opts.PathMTU.Interface != "" && len(opts.Ifaces) > 0 && !slices.Contains(opts.Ifaces, opts.PathMTU.Interface) {
			fmt.Fprintf(env.stderr, "linerate: note: %s is reached through %s, not through --iface %s\n",
				opts.PathMTU.Peer, opts.PathMTU.Interface, strings.Join(opts.Ifaces, ","))
		}
	}
	x, err := doctor.Live(fs, doctor.LiveOptions{Options: opts, Unread: func(source string, err error) {
		srcErrors[metrics.LiveSource(source)]++
		warnUnread(env, source, err)
	}})
	if err != nil {
		return err
	}
	rep := x.Report
	if f.prom != "" {
		src := promSources{errors: srcErrors, started: started, took: time.Since(started)}
		if err := writeProm(ctx, env, f.prom, rep, fs.IsLive(), src); err != nil {
			return err
		}
	}
	if f.prom == "-" {
		// the metrics were the output
	} else if f.json {
		if err := writeJSON(env.stdout, rep); err != nil {
			return err
		}
	} else if err := doctor.WriteText(env.stdout, rep, termui.Style{Colour: env.colour(env.stdout)}, termWidth(env.stdout)); err != nil {
		return err
	}
	if w := rep.Worst(); w != "" && !never && w.Rank() >= failOn.Rank() {
		return errFindings
	}
	return nil
}

// termWidth is the width the text view wraps at: $COLUMNS when it holds a
// positive number (shells export it; a user can set it), else the
// terminal's width when w is one, else doctor.DefaultWidth.
func termWidth(w io.Writer) int {
	if n, err := strconv.Atoi(strings.TrimSpace(os.Getenv("COLUMNS"))); err == nil && n > 0 {
		return n
	}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	return doctor.DefaultWidth
}

// openRoot opens the host to read: the live "/", a captured tree, or a
// snapshot archive (extracted to a temporary directory removed on close).
func openRoot(root string) (*hostfs.FS, func() error, error) {
	if root == "" {
		fs := hostfs.Live()
		return fs, fs.Close, nil
	}
	fi, err := os.Stat(root)
	if err != nil {
		return nil, nil, fmt.Errorf("--root: %w", err)
	}
	if !fi.IsDir() {
		fs, cleanup, err := snapshot.Open(root)
		if err != nil {
			return nil, nil, err
		}
		return fs, func() error { fs.Close(); return cleanup() }, nil
	}
	fs, err := hostfs.New(root)
	if err != nil {
		return nil, nil, fmt.Errorf("--root: %w", err)
	}
	return fs, fs.Close, nil
}

// warnUnread says on stderr which live source could not be read and what
// is unknown without it; the command goes on.
func warnUnread(env *cliEnv, source string, err error) {
	what := map[string]string{
		doctor.SourceNetlink: "qdisc rates unknown",
		doctor.SourceEthtool: "link modes, FEC, optics and NIC counters not read",
		doctor.SourceDCB:     "PFC, ETS and the DCB APP table not read",
	}[source]
	fmt.Fprintf(env.stderr, "linerate: warning: %v (%s)\n", err, what)
}
