package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// Exit codes (docs/architecture.md): 0 fine, 1 the command worked and found something
// at or above --fail-on, 2 usage or runtime error.
const (
	exitOK       = 0
	exitFindings = 1
	exitError    = 2
)

// errFindings makes a command exit 1 without printing an error: its output
// already said what it found.
var errFindings = errors.New("findings at or above --fail-on")

// exitStatus makes a command exit with a status of its own choosing and
// no message: `lab exec` passes on the status of the command it ran.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// cliEnv carries the process's streams so tests can run commands in-process.
type cliEnv struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	color  string // --color: "auto" (or ""), "always" or "never"
}

// colour reports whether human output on w may use ANSI colour: as
// --color says; by default only on a terminal that is not TERM=dumb, and
// never when NO_COLOR holds a value. An empty NO_COLOR= is as if unset
// (https://no-color.org: "when present and not an empty string").
// --color=always (for less -R and logs) wins over NO_COLOR, as an explicit
// flag does over the environment.
func (e *cliEnv) colour(w io.Writer) bool {
	switch e.color {
	case "always":
		return true
	case "never":
		return false
	}
	return os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb" && isTerminal(w)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := &cliEnv{stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRootCmd(env)
	root.SetArgs(args)
	err := root.Execute()
	var status exitStatus
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errFindings):
		return exitFindings
	case errors.As(err, &status):
		return int(status)
	default:
		fmt.Fprintf(stderr, "linerate: %s\n", oneLine(suggestions(hintError(err).Error())))
		return exitError
	}
}

// suggestions folds cobra's "\n\nDid you mean this?\n\tdoctor\n" into
// the one line an error gets: `unknown command "docter" for "linerate"
// (did you mean doctor?)`.
func suggestions(msg string) string {
	head, rest, ok := strings.Cut(msg, "\n\nDid you mean this?\n")
	if !ok {
		return msg
	}
	return head + " (did you mean " + strings.Join(strings.Fields(rest), " or ") + "?)"
}

// exactArgs is cobra.ExactArgs with the arguments named: "bench needs
// PEER" rather than "accepts 1 arg(s), received 0".
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < len(names):
			return fmt.Errorf("%s needs %s: missing %s (see '%s --help')", cmd.Name(), strings.Join(names, " and "),
				strings.Join(names[len(args):], " and "), cmd.CommandPath())
		case len(args) > len(names):
			return fmt.Errorf("%s takes %s, and %q is one argument too many (see '%s --help')", cmd.Name(), strings.Join(names, " and "),
				args[len(names)], cmd.CommandPath())
		}
		return nil
	}
}

// closestFlag is the flag of c whose name is nearest to name (at most 2
// edits away), "" when none is.
func closestFlag(c *cobra.Command, name string) string {
	best, bestD := "", 3
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if d := editDistance(name, f.Name); d < bestD {
			best, bestD = f.Name, d
		}
	})
	return best
}

// editDistance is the Levenshtein distance of two flag names (cobra's
// own, which suggests commands, is not exported).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// oneLine keeps an error to the single line the CLI promises.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

func newRootCmd(env *cliEnv) *cobra.Command {
	root := &cobra.Command{
		Use:   "linerate",
		Short: "Find out why a fast link runs below line rate, fix it, and prove it",
		Long: `linerate inventories a host with a 10-400 GbE or RDMA NIC, says what limits it
(PCIe, MTU, socket buffers, IRQ placement, governors, temperature) with the
arithmetic and the exact fix, and runs a virtual lab (two hosts, or a fleet of many) to try it
all.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionText(),
	}
	root.SetVersionTemplate("linerate {{.Version}}\n")
	root.SetOut(env.stdout)
	root.SetErr(env.stderr)
	root.SetIn(env.stdin)
	root.PersistentFlags().StringVar(&env.color, "color", "auto", "colour the text output: auto (on a terminal, unless NO_COLOR or TERM=dumb), always or never")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		switch env.color {
		case "auto", "always", "never":
			return nil
		}
		return fmt.Errorf("--color %q: choose auto, always or never", env.color)
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
			if near := closestFlag(c, name); near != "" {
				return fmt.Errorf("%v (did you mean --%s? see '%s --help')", err, near, c.CommandPath())
			}
		}
		return fmt.Errorf("%v (see '%s --help')", err, c.CommandPath())
	})
	for _, add := range commands {
		root.AddCommand(add(env))
	}
	registerCompletions(root)
	return root
}

// commands lists the subcommand constructors; each lives in its own file.
var commands = []func(*cliEnv) *cobra.Command{
	newBenchCmd,
	newC2CCmd,
	newCompareCmd,
	newDoctorCmd,
	newFleetCmd,
	newHistoryCmd,
	newMeshCmd,
	newLabCmd,
	newReportCmd,
	newServeCmd,
	newSnapshotCmd,
	newTuneCmd,
	newVersionCmd,
}

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func newVersionCmd(env *cliEnv) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(env.stdout, "linerate %s\n", versionText())
			return nil
		},
	}
}
