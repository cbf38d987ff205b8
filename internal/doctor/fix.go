package doctor

import (
	"encoding/json"
	"strings"
)

// Fix is one step of a finding's remedy (docs/schema/doctor-v1.schema.json
// says what each field means). Action is prose: what to do and why.
// Command, when not nil, is the argv that does it, runnable as it stands
// (no placeholders; a shell is asked for explicitly as ["sh", "-c", …]
// where one is needed). Persist makes the change survive a reboot, Verify
// checks it; either may be nil.
type Fix struct {
	Action  string   `json:"action"`
	Command []string `json:"command"`
	Persist *Step    `json:"persist"`
	Verify  *Step    `json:"verify"`

	// legacy marks a fix read from a document written before fixes were
	// structured (a plain string): its text is shown as it was.
	legacy bool
}

// Step is a fix's persist or verify step: prose, and a command when one
// does it.
type Step struct {
	Action  string   `json:"action"`
	Command []string `json:"command"`
}

// UnmarshalJSON reads a fix, or a plain string as documents written before
// fixes were structured held (stored runs keep those).
func (f *Fix) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*f = Fix{Action: s, legacy: true}
		return nil
	}
	type plain Fix
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*f = Fix(p)
	return nil
}

// UnmarshalJSON reads a step, or prose alone as a string.
func (s *Step) UnmarshalJSON(b []byte) error {
	var text string
	if json.Unmarshal(b, &text) == nil {
		*s = Step{Action: text}
		return nil
	}
	type plain Step
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*s = Step(p)
	return nil
}

// do is a fix step: prose, and the argv that does it (none: prose only,
// a nil command).
func do(action string, argv ...string) Fix {
	return Fix{Action: action, Command: argv}
}

// verify adds the check to f.
func (f Fix) verify(action string, argv ...string) Fix {
	f.Verify = &Step{Action: action, Command: argv}
	return f
}

// persist adds what makes f survive a reboot.
func (f Fix) persist(action string, argv ...string) Fix {
	f.Persist = &Step{Action: action, Command: argv}
	return f
}

// shell is the argv that runs a POSIX shell script: for loops,
// redirections and pipes.
func shell(script string) []string { return []string{"sh", "-c", script} }

// ShellLine writes argv as one POSIX shell command line: each word quoted
// where the shell would otherwise read it differently, and a script run
// by sh -c shown as the script itself (the same command, easier to read).
func ShellLine(argv []string) string {
	if len(argv) == 3 && argv[0] == "sh" && argv[1] == "-c" {
		return argv[2]
	}
	return Quote(argv)
}

// Quote writes argv as a POSIX shell command line, single-quoting every
// word that holds anything but letters, digits and -_./=:,+%@.
func Quote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = quoteWord(a)
	}
	return strings.Join(q, " ")
}

func quoteWord(s string) string {
	if s == "" {
		return "''"
	}
	if strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+%@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Lines writes the fix as lines of a shell script: prose as comments,
// commands bare, persist and verify after. A fix read from an older
// document is its one line of text, as it was.
func (f Fix) Lines() []string {
	if f.legacy {
		return []string{f.Action}
	}
	var out []string
	add := func(action string, argv []string) {
		if action != "" {
			out = append(out, "# "+action)
		}
		if argv != nil {
			out = append(out, ShellLine(argv))
		}
	}
	add(f.Action, f.Command)
	for _, s := range []*Step{f.Persist, f.Verify} {
		if s != nil {
			add(s.Action, s.Command)
		}
	}
	return out
}

// FixLines writes every fix of the finding as lines of a shell script
// (Fix.Lines), for views that show fixes as a code block.
func (f Finding) FixLines() []string {
	var out []string
	for _, x := range f.Fix {
		out = append(out, x.Lines()...)
	}
	return out
}

// Commands returns every command of the finding's fixes, persist and
// verify steps included, in order.
func (f Finding) Commands() [][]string {
	var out [][]string
	for _, x := range f.Fix {
		for _, c := range [][]string{x.Command, stepCommand(x.Persist), stepCommand(x.Verify)} {
			if c != nil {
				out = append(out, c)
			}
		}
	}
	return out
}

func stepCommand(s *Step) []string {
	if s == nil {
		return nil
	}
	return s.Command
}
