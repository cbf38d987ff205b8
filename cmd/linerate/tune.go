package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/statedir"
	"github.com/linerate/linerate/internal/termui"
	"github.com/linerate/linerate/internal/tune"
)

// pauseEnv makes `tune --apply` stop after a step and wait to be killed:
// "N" after step N's read-back, "N:journaled" after its journal record and
// before the change. The crash tests use it; it is not for users.
const pauseEnv = "LINERATE_TUNE_PAUSE_AFTER"

type tuneFlags struct {
	profile string
	ifaces  []string
	appCPUs string
	irqCPUs string
	rtt     time.Duration
	mtu     int
	apply   bool
	root    string
	json    bool
	roce    bool
	roceP   int
}

func newTuneCmd(env *cliEnv) *cobra.Command {
	var f tuneFlags
	cmd := &cobra.Command{
		Use:   "tune",
		Short: "Plan the fixes for doctor's findings; apply them with a journal; revert them",
		Long: `tune turns doctor's findings into a plan of exact changes: socket buffers sized to
2 × line rate × RTT (net sysctls, in this network namespace), the performance
governor on the NIC's CPUs, queues (ethtool -L), rings (ethtool -G), the NIC's
IRQs placed on its NUMA node inside the application's L3 domain but off its
CPUs, irqbalance told to leave them there, and the MTU when given --mtu.

--roce adds lossless RoCE on the NICs running RoCE v2: trust DSCP with DSCP 26
on the RoCE priority (--roce-priority, else the one priority PFC is on, else 3),
PFC there (DCB over rtnetlink), ECN there (ecn/roce_np and roce_rp), and MRRS
4096 on RDMA NICs of 100 Gbit/s and more (config space, as setpci writes it).
They must match what the switches do, so tune makes them only when asked.

Without --apply it prints the plan and changes nothing. With --apply it journals
each previous value (synced to disk) before each change, reads every change
back, and rolls everything back if a step fails. Undo with
'linerate tune revert --last'. Sysctls are those of the network namespace tune
runs in (inside a lab host: linerate lab exec NAME b -- linerate tune --apply).

--root applies the file-backed changes (sysctls, governors, IRQ affinity,
irqbalance's file, ECN switches, MRRS) inside a captured tree instead of this
host; queue, ring, MTU, PFC and trust changes need the live NIC and are skipped
there. In a tree, read-back
checks the file written: effective_affinity_list is kept by the kernel only.

Exit status: 0 done, 2 error (nothing changed, or everything rolled back).`,
		Example: `  linerate tune
  linerate tune --iface enp1s0f0np0 --app-cpus 6 --apply
  linerate tune --profile latency --iface ens2f0np0 --mtu 9000 --apply
  linerate tune --roce --iface enp51s0np0 --apply
  linerate tune revert --last
  linerate tune --root testdata/hosts/xeon-xl710-gen2-x4 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTune(env, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.profile, "profile", string(tune.Throughput), "throughput or latency")
	fl.StringSliceVar(&f.ifaces, "iface", nil, "tune only these interfaces (repeat or comma-separate; default: the PCI NICs that are up)")
	fl.StringVar(&f.appCPUs, "app-cpus", "", "CPUs the application runs on, e.g. 6: IRQs go to their L3 domain, never onto them")
	fl.StringVar(&f.irqCPUs, "irq-cpus", "", "put the NIC's IRQs on these CPUs instead of choosing (those already there stay)")
	fl.DurationVar(&f.rtt, "rtt", doctor.DefaultRTT, "round-trip time socket buffers must cover")
	fl.IntVar(&f.mtu, "mtu", 0, "set this MTU on the NICs (the peer and every switch port must carry it too)")
	fl.BoolVar(&f.apply, "apply", false, "make the changes (needs root on the live host)")
	fl.StringVar(&f.root, "root", "", "plan for (and with --apply, change) a captured tree DIR instead of this host")
	fl.BoolVar(&f.json, "json", false, "print the plan (and what --apply did) as JSON")
	fl.BoolVar(&f.roce, "roce", false, "also set lossless RoCE: trust DSCP with DSCP 26 on the RoCE priority, PFC and ECN there, MRRS 4096 (they must match the switches)")
	fl.IntVar(&f.roceP, "roce-priority", -1, "the priority RoCE uses (0-7); default: the one PFC is on, else 3")
	cmd.AddCommand(newTuneRevertCmd(env), newTuneListCmd(env))
	return cmd
}

// tuneOptions turns the flags into tune.Options.
func (f tuneFlags) options() (tune.Options, error) {
	o := tune.Options{Ifaces: f.ifaces, RTT: f.rtt, MTU: f.mtu, RoCE: f.roce}
	var err error
	if f.roceP >= 0 && f.roceP <= 7 {
		o.RoCEPriority = &f.roceP
	} else if f.roceP != -1 {
		return o, fmt.Errorf("--roce-priority %d: a priority is 0 to 7 (RoCE usually rides 3)", f.roceP)
	}
	if f.roceP >= 0 && !f.roce {
		return o, errors.New("--roce-priority works with --roce: add --roce to set PFC, trust and ECN on that priority")
	}
	if o.Profile, err = tune.ParseProfile(f.profile); err != nil {
		return o, fmt.Errorf("--profile: %w", err)
	}
	if f.rtt <= 0 {
		return o, fmt.Errorf("--rtt %s: must be positive, e.g. 1ms or 20ms", f.rtt)
	}
	if f.appCPUs != "" {
		if o.AppCPUs, err = cpulist.Parse(f.appCPUs); err != nil {
			return o, fmt.Errorf("--app-cpus: %w", err)
		}
	}
	if f.irqCPUs != "" {
		if o.IRQCPUs, err = cpulist.Parse(f.irqCPUs); err != nil {
			return o, fmt.Errorf("--irq-cpus: %w", err)
		}
	}
	return o, nil
}

func runTune(env *cliEnv, f tuneFlags) error {
	opts, err := f.options()
	if err != nil {
		return err
	}
	pause, err := pauseHook(env)
	if err != nil {
		return err
	}
	if f.apply {
		if err := checkApplyRoot(f.root); err != nil {
			return err
		}
	}
	fs, closeRoot, err := openRoot(f.root)
	if err != nil {
		return err
	}
	defer closeRoot()
	target, err := tune.NewTarget(fs)
	if err != nil {
		return err
	}
	defer target.Close()
	x, err := doctor.Live(fs, doctor.LiveOptions{Options: doctor.Options{Ifaces: opts.Ifaces},
		Unread: func(source string, err error) { warnUnread(env, source, err) }})
	if err != nil {
		return err
	}
	plan, err := tune.NewPlan(tune.Input{FS: fs, Inventory: x.Inventory, Devices: target.Devices}, opts)
	if err != nil {
		return err
	}
	if !f.apply {
		return writePlan(env, plan, f.json)
	}
	return applyPlan(env, plan, target, f.json, pause)
}

// checkApplyRoot refuses --apply where it cannot work, before anything is
// read: the live host without root, or a snapshot archive (which is
// unpacked to a temporary directory, so changes would vanish).
func checkApplyRoot(root string) error {
	if root == "" || root == "/" {
		if os.Geteuid() != 0 {
			return errors.New("tune --apply changes this host and needs root: run it with sudo (without --apply it only prints the plan)")
		}
		return nil
	}
	if fi, err := os.Stat(root); err == nil && !fi.IsDir() {
		return fmt.Errorf("--apply --root %s: a snapshot archive cannot be changed; unpack it and give the directory", root)
	}
	return nil
}

func writePlan(env *cliEnv, plan *tune.Plan, asJSON bool) error {
	if asJSON {
		return writeJSON(env.stdout, plan)
	}
	if err := tune.WritePlan(env.stdout, plan, termui.Style{Colour: env.colour(env.stdout)}); err != nil {
		return err
	}
	if len(plan.Changes) > 0 {
		fmt.Fprintln(env.stdout, "Nothing changed. Apply with --apply: each change is journaled, read back, and undone by 'linerate tune revert --last'.")
	}
	return nil
}

// tuneApplied is the JSON document of `tune --apply --json`.
type tuneApplied struct {
	*tune.Plan
	Apply *tune.Result `json:"apply"`
	Error string       `json:"error,omitempty"`
}

func applyPlan(env *cliEnv, plan *tune.Plan, target *tune.Target, asJSON bool, pause func(int, tune.Phase)) error {
	dir, err := statedir.Sub("tune")
	if err != nil {
		return err
	}
	st := termui.Style{Colour: env.colour(env.stdout)}
	if !asJSON {
		if err := tune.WritePlan(env.stdout, plan, st); err != nil {
			return err
		}
	}
	res, err := tune.Apply(plan, target, tune.ApplyOptions{JournalDir: dir, AfterStep: pause})
	if asJSON {
		doc := tuneApplied{Plan: plan, Apply: res}
		if err != nil {
			doc.Error = err.Error()
		}
		if jerr := writeJSON(env.stdout, doc); jerr != nil && err == nil {
			err = jerr
		}
		return err
	}
	if res != nil {
		if werr := tune.WriteResult(env.stdout, res, st); werr != nil && err == nil {
			err = werr
		}
		if err == nil {
			if app := tune.AppCPUs(plan); len(app) > 0 {
				fmt.Fprintf(env.stdout, "Run your application on %s %s.\n", map[bool]string{true: "CPU", false: "CPUs"}[len(app) == 1], cpulist.Format(app))
			}
		}
	}
	return err
}

// pauseHook returns the AfterStep hook that pauseEnv asks for, or nil.
func pauseHook(env *cliEnv) (func(int, tune.Phase), error) {
	v := os.Getenv(pauseEnv)
	if v == "" {
		return nil, nil
	}
	num, phase, _ := strings.Cut(v, ":")
	step, err := strconv.Atoi(num)
	want := tune.PhaseApplied
	if phase != "" {
		want = tune.Phase(phase)
	}
	if err != nil || step < 1 || (want != tune.PhaseApplied && want != tune.PhaseJournaled) {
		return nil, fmt.Errorf("%s=%q: want N or N:journaled", pauseEnv, v)
	}
	return func(n int, ph tune.Phase) {
		if n != step || ph != want {
			return
		}
		fmt.Fprintf(env.stderr, "linerate: paused after step %d (%s)\n", n, ph)
		for {
			time.Sleep(time.Hour) // until killed
		}
	}, nil
}

func newTuneRevertCmd(env *cliEnv) *cobra.Command {
	var last, force, asJSON bool
	cmd := &cobra.Command{
		Use:   "revert [ID|--last] [--force]",
		Short: "Restore the values a tune journal recorded, last change first",
		Long: `revert restores each value a 'tune --apply' changed, in reverse order. A value
someone else changed since is left alone and reported, unless --force. It
works on what a killed or failed apply left too. --last picks the newest
journal made in this network namespace that still has changes to revert.

A damaged journal (cut short by a crash, or with lines that are not
records) is reverted as far as its records prove: a step whose prior value
was recorded is restored where the value now is the one tune wrote. An
empty or headerless journal holds nothing (no change is made before the
header) and --last passes over it. A journal that anyone but root (or you)
could have written, or that names a path tune never writes, is refused.

Exit status: 0 all restored, 1 some values were left alone, 2 error.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if last == (len(args) == 1) {
				return errors.New("revert needs a journal ID or --last (linerate tune list shows the IDs)")
			}
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			return runRevert(env, id, force, asJSON)
		},
	}
	cmd.Flags().BoolVar(&last, "last", false, "revert the newest journal made in this network namespace with changes left")
	cmd.Flags().BoolVar(&force, "force", false, "restore values even where someone else changed them since")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func runRevert(env *cliEnv, id string, force, asJSON bool) error {
	// Finding the journal only reads: a revert that finds none must not
	// leave a state directory behind.
	dir := tuneJournalDir()
	ns, err := tune.CurrentNetNS()
	if err != nil {
		return err
	}
	var j *tune.Journal
	if id == "" {
		j, err = tune.Last(dir, ns)
	} else {
		j, err = tune.Load(dir, id)
	}
	if errors.Is(err, tune.ErrNoJournal) && os.Geteuid() != 0 {
		// A user other than root keeps journals of captured trees only;
		// this host's are root's (and in root's state directory).
		return errors.New("tune revert restores this host's values and needs root: run it with sudo (this user has no such journal of a captured tree either)")
	}
	if err != nil {
		return err
	}
	fs, err := journalRoot(j)
	if err != nil {
		return err
	}
	defer fs.Close()
	target, err := tune.NewTarget(fs)
	if err != nil {
		return err
	}
	defer target.Close()
	res, err := tune.Revert(j, target, tune.RevertOptions{Force: force, NetNS: ns})
	if res != nil {
		var werr error
		if asJSON {
			werr = writeJSON(env.stdout, res)
		} else {
			werr = tune.WriteRevert(env.stdout, res, termui.Style{Colour: env.colour(env.stdout)})
		}
		if err == nil {
			err = werr
		}
	}
	if err == nil && res.Count(tune.PhaseLeft) > 0 {
		return fmt.Errorf("%d value(s) left alone: %w", res.Count(tune.PhaseLeft), errFindings)
	}
	return err
}

// tuneJournalDir is where tune keeps its journals, without creating it:
// only --apply, which writes one, creates it (statedir.Sub).
func tuneJournalDir() string { return filepath.Join(statedir.Dir(), "tune") }

// journalRoot opens the root a journal was applied to.
func journalRoot(j *tune.Journal) (*hostfs.FS, error) {
	if j.Root == "/" {
		if os.Geteuid() != 0 {
			return nil, fmt.Errorf("journal %s changed this host: reverting it needs root (run it with sudo)", j.ID)
		}
		return hostfs.Live(), nil
	}
	fs, err := hostfs.New(j.Root)
	if err != nil {
		return nil, fmt.Errorf("journal %s changed the captured tree %s: %w", j.ID, j.Root, err)
	}
	return fs, nil
}

func newTuneListCmd(env *cliEnv) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--json]",
		Short: "Show tune journals: ID, time, changes, state (damaged and refused ones too, with why)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			js, err := tune.List(tuneJournalDir())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(env.stdout, journalList(js))
			}
			return tune.WriteList(env.stdout, js, termui.Style{Colour: env.colour(env.stdout)})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the journals as JSON")
	return cmd
}

// journalEntry is one journal in `tune list --json`.
type journalEntry struct {
	*tune.Journal
	State   string `json:"state"`
	Applied int    `json:"applied"`
	Pending int    `json:"pending"`
}

func journalList(js []*tune.Journal) []journalEntry {
	out := make([]journalEntry, 0, len(js))
	for _, j := range js {
		out = append(out, journalEntry{Journal: j, State: j.State(), Applied: j.Applied(), Pending: j.Pending()})
	}
	return out
}
