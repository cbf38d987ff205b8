package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/linerate/linerate/internal/lab"
)

func newLabCmd(env *cliEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "A virtual lab in network namespaces: two hosts, or many (up --hosts K)",
		Long: `lab builds two hosts, lr-NAME-a (198.18.0.1) and lr-NAME-b (198.18.0.2), as network
namespaces joined by a veth pair (lab0 in each), shaped by a scenario into a
known problem. Every lab reuses these addresses: the namespaces keep them apart.
'lab up --hosts K' makes a lab of K hosts (h01 … at 198.18.0.<i>) joined by a
bridge instead, for 'linerate fleet run --lab NAME'. Needs root.

Scenarios:
` + scenarioHelp(),
	}
	cmd.AddCommand(newLabUpCmd(env), newLabDownCmd(env), newLabStatusCmd(env),
		newLabExecCmd(env), newLabRunCmd(env))
	return cmd
}

func scenarioHelp() string {
	var b strings.Builder
	for _, s := range lab.Scenarios() {
		fmt.Fprintf(&b, "  %-14s %s\n", s, s.Summary())
	}
	return b.String()
}

// labFlags are the flags that say which lab and how to shape it.
type labFlags struct {
	name, scenario, rate string
	mtu, hosts, queues   int
}

// register adds the flags; a non-empty scenario also adds the shaping
// flags with that scenario as the default.
func (f *labFlags) register(cmd *cobra.Command, scenario lab.Scenario) {
	cmd.Flags().StringVar(&f.name, "name", lab.DefaultName, "lab name (lower-case letters, digits, '-'; at most 10)")
	// The lab package reads an empty name as the default one: an explicit
	// --name "" (an unset shell variable, say) must not quietly act on
	// the demo lab.
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		if cmd.Flags().Changed("name") && f.name == "" {
			return fmt.Errorf("--name is empty: give a lab name, or leave --name out for %q", lab.DefaultName)
		}
		return nil
	}
	if scenario == "" {
		return
	}
	names := make([]string, 0, len(lab.Scenarios()))
	for _, s := range lab.Scenarios() {
		names = append(names, string(s))
	}
	cmd.Flags().StringVar(&f.scenario, "scenario", string(scenario), "one of "+strings.Join(names, ", ")+" (see 'linerate lab --help')")
	cmd.Flags().StringVar(&f.rate, "rate", "", "shape both ends with tbf at this rate, e.g. 25gbit, 400mbit (shaped: host a only; pacing: fq's per-flow maxrate on host a)")
	cmd.Flags().IntVar(&f.mtu, "mtu", 0, "MTU of both ends (for mtu-mismatch: of host a)")
	cmd.Flags().IntVar(&f.queues, "queues", 0, "TX/RX queues of each veth end, steered by RPS and XPS so that a flow's softirq runs on its threads' CPU; ask for one more than the CPUs (default: the kernel's)")
}

func (f *labFlags) config() (lab.Config, error) {
	c := lab.Config{Name: f.name, MTU: f.mtu, Hosts: f.hosts, Queues: f.queues}
	sc, err := lab.ParseScenario(f.scenario)
	if err != nil {
		return c, err
	}
	c.Scenario = sc
	if f.rate != "" {
		if c.Rate, err = lab.ParseRate(f.rate); err != nil {
			return c, err
		}
	}
	return c, nil
}

// interruptible returns a context cancelled by SIGINT or SIGTERM, so that
// Ctrl-C lets up and run clean up instead of killing them half-way.
func interruptible(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func newLabUpCmd(env *cliEnv) *cobra.Command {
	var f labFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "up [--name N] [--scenario S] [--rate R] [--mtu M] [--hosts K]",
		Short: "Bring a lab up, or reshape it in place",
		Long: `up brings lab N up shaped by scenario S. Run again with the same arguments it
changes nothing; with other arguments it reshapes the lab in place (MTUs,
qdiscs, sysctls) without recreating it. Ctrl-C while it creates a lab removes
what it made.

--hosts K (3 to 64) makes a lab of many hosts instead, for 'linerate fleet':
hosts lr-N-h01 … lr-N-hKK, each with lab0 at 198.18.0.<i>/24, joined by the
bridge br0 (198.18.0.254) in lr-N-sw, whose port toward host i is h<ii>.
--rate and --mtu apply to every host; the scenario can be healthy or
capped-10g.

busy-receiver starts a busy loop in host b, pinned to the machine's last CPU,
as nobody, in a session of its own: 'bench lab:N -A 0,LAST' puts the receiver
on that CPU. The lab owns it: another up finds it rather than starting a
second, an up with another scenario or down stops it, and it ends by itself
when host b's namespace goes or after a day. pacing puts fq on host a's
lab0 with a per-flow maxrate (1 Gbit/s, or --rate).

Scenarios:
` + scenarioHelp(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.config()
			if err != nil {
				return err
			}
			ctx, stop := interruptible(cmd)
			defer stop()
			res, err := lab.Up(ctx, c)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(env.stdout, res)
			}
			verb := "reshaped"
			switch {
			case res.Unchanged():
				verb = "unchanged"
			case res.Created:
				verb = "created"
			}
			fmt.Fprintf(env.stdout, "lab %s: %s (scenario %s)\n", res.Name, verb, res.Scenario)
			for _, ch := range res.Changes {
				fmt.Fprintf(env.stdout, "  %s\n", ch)
			}
			switch {
			case res.Created && res.Hosts != 0:
				fmt.Fprintf(env.stdout, "try: linerate lab exec %s h01 -- linerate doctor --iface %s --peer %s\n", res.Name, lab.Iface, lab.HostN(res.Hosts).Addr())
			case res.Created:
				fmt.Fprintf(env.stdout, "try: linerate lab exec %s a -- linerate doctor --iface %s --peer %s\n", res.Name, lab.Iface, lab.AddrB)
			}
			return nil
		},
	}
	f.register(cmd, lab.Healthy)
	cmd.Flags().IntVar(&f.hosts, "hosts", 0, "make a lab of this many hosts (3 to 64) joined by a bridge, instead of a and b")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func newLabDownCmd(env *cliEnv) *cobra.Command {
	var f labFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "down [--name N]",
		Short: "Remove a lab (also what a killed 'up' left)",
		Long: `down removes lab N: its veth, its two namespaces and its record. It finds the
namespaces by name, so it also cleans up after an 'up' that was killed. A lab
that does not exist is not an error: down says so and exits 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := interruptible(cmd)
			defer stop()
			res, err := lab.Down(ctx, f.name)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(env.stdout, res)
			}
			if len(res.Removed) == 0 {
				fmt.Fprintf(env.stdout, "lab %s: nothing to remove (no such lab)\n", res.Name)
				return nil
			}
			fmt.Fprintf(env.stdout, "lab %s: removed\n", res.Name)
			for _, r := range res.Removed {
				fmt.Fprintf(env.stdout, "  %s\n", r)
			}
			for _, p := range res.Busy {
				fmt.Fprintf(env.stdout, "note: %s still runs; that namespace lives until it exits\n", p)
			}
			return nil
		},
	}
	f.register(cmd, "")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func newLabStatusCmd(env *cliEnv) *cobra.Command {
	var name string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [--name N] [--json]",
		Short: "Show labs: namespaces, links, addresses, MTUs, qdiscs, changed sysctls",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := lab.Status(cmd.Context(), name)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(env.stdout, rep)
			}
			return rep.WriteText(env.stdout)
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "only this lab (default: every lab)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return cmd
}

// newLabExecCmd takes the exit function as a parameter: exec exits with the
// command's own status, which the root command's 0/1/2 mapping cannot carry.
func newLabExecCmd(env *cliEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "exec NAME a|b|h01…|sw -- COMMAND [ARG...]",
		Short: "Run a command inside a lab host, as 'ip netns exec' does",
		Long: `exec runs COMMAND in host a or b of lab NAME (h01, h02, … or the switch sw of a
lab of many hosts): in its network namespace, with a
/sys that shows the host's interfaces. linerate exits with the command's exit
status. SIGTERM and SIGHUP are passed on to the command; Ctrl-C reaches it
from the terminal directly.`,
		Example: "  linerate lab exec demo b -- iperf3 -s -1\n  linerate lab exec demo a -- cat /sys/class/net/lab0/mtu",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(execArgv(args)) < 3 {
				return fmt.Errorf("exec needs a lab name, a host (a or b) and a command: linerate lab exec demo a -- ip addr")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			args = execArgv(args)
			h, err := lab.ParseHost(args[1])
			if err != nil {
				return err
			}
			c := exec.Command(args[2], args[3:]...)
			c.Stdin, c.Stdout, c.Stderr = env.stdin, env.stdout, env.stderr
			// Subscribe before starting, so no signal falls between.
			sigs := make(chan os.Signal, 4)
			signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer signal.Stop(sigs)
			if err := lab.Start(args[0], h, c); err != nil {
				return err
			}
			done := make(chan struct{})
			defer close(done)
			go func() {
				for {
					select {
					case s := <-sigs:
						// SIGINT from a terminal goes to the whole process
						// group, the command included: passing it on would
						// deliver it twice.
						if s != os.Interrupt {
							c.Process.Signal(s)
						}
					case <-done:
						return
					}
				}
			}()
			err = c.Wait()
			code, ok := lab.ExitCode(err)
			if !ok {
				return fmt.Errorf("running %s: %w", args[2], err)
			}
			if code != 0 {
				return exitStatus(code)
			}
			return nil
		},
	}
	// Everything after NAME and HOST belongs to the command, with or
	// without "--".
	cmd.Flags().SetInterspersed(false)
	return cmd
}

// execArgv drops the "--" between HOST and COMMAND. With interspersed
// flags off, cobra leaves it in the arguments.
func execArgv(args []string) []string {
	if len(args) > 2 && args[2] == "--" {
		return append(args[:2:2], args[3:]...)
	}
	return args
}

func newLabRunCmd(env *cliEnv) *cobra.Command {
	var f labFlags
	var out string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "run [--scenario S] [-o DIR] [--name N]",
		Short: "The demo: lab up, doctor on both hosts, bench, tune, bench, report, lab down",
		Long: `run brings a lab up and shows linerate's whole job on it: doctor on both hosts,
a bench (3 runs of 5 s from host a to host b), tune --apply in host b, the same
bench again, and the report of both benches (DIR/report.html); then it reverts
the tune and brings the lab down, also on error or Ctrl-C, and prints where
the output is. Each
step writes its output to a file in DIR; the results database and tune's
journal go to DIR/state, so the demo leaves nothing in linerate's own state.
A step that fails is reported and the demo goes on; linerate then exits 2.

The default scenario, small-buffers, gives tune something to fix, so that the
second bench shows what tuning bought; the demo runs it at MTU 1500 with a
16 KiB maximum in host b (unless --mtu is given), a window of a few segments
that holds the first bench well below the line rate on a busy machine too.
A veth has no line rate: unless the scenario or --rate shapes the lab, the
demo first measures what the healthy lab carries (4 s, DIR/probe.json) and
shapes lab0 to the fastest line rate not above that, a tbf standing in for a
NIC's line rate, so that the report has a ceiling to hold both benches
against.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.config()
			if err != nil {
				return err
			}
			ctx, stop := interruptible(cmd)
			defer stop()
			progress := env.stdout
			if asJSON {
				progress = env.stderr
			}
			res, err := lab.Run(ctx, lab.RunConfig{Lab: c, OutDir: out, Progress: progress})
			if res != nil && len(res.Steps) > 0 {
				fmt.Fprintf(progress, "output: %s\n", res.OutDir)
				if asJSON {
					if jerr := writeJSON(env.stdout, res); jerr != nil && err == nil {
						err = jerr
					}
				}
			}
			if err != nil {
				return err
			}
			if failed := res.Failed(); len(failed) > 0 {
				return fmt.Errorf("%d step(s) failed: %s (output in %s)", len(failed), strings.Join(failed, ", "), res.OutDir)
			}
			return nil
		},
	}
	// The demo's default has a problem for tune to fix, so the second bench
	// shows what tuning bought.
	f.register(cmd, lab.SmallBuffers)
	cmd.Flags().StringVarP(&out, "output", "o", "", "output directory (default ./linerate-demo-<timestamp>)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON (progress goes to stderr)")
	return cmd
}
