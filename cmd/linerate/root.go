package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
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
		fmt.Fprintf(stderr, "linerate: %s\n", oneLine(hintError(err).Error()))
		return exitError
	}
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
arithmetic and the exact fix, and runs a virtual lab (two hosts, or a fleet of many) to try it all.`,
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
