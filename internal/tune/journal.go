package tune

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/statedir"
)

// JournalSchema names the first record of every journal file.
const JournalSchema = "linerate.tune-journal/v1"

// A journal is a file of JSON lines, appended one record at a time; the
// header and every record that carries a prior value are synced to disk
// before Apply goes on. The first line is the header; then step records
// (a step's "journaled" record holds the change, its prior value and the
// value to write, and is on disk before the change is made); then events.
//
// Recovery rules (docs/architecture.md, "tune's journal"):
//   - A journal is born whole: its header is written and synced in an
//     unnamed file (O_TMPFILE; a hidden temporary file where the
//     filesystem has none) that is then linked under its name, and the
//     directory synced. An empty or headerless journal cannot appear; the
//     link fails rather than replace a journal of the same microsecond.
//   - Apply reserves the journal's space before the header (fallocate),
//     so a full disk refuses the apply before any change.
//   - Only whole lines count: a last line cut mid-way (a write cut short)
//     is ignored, and cut off before revert appends. A line that is not a
//     record, or records of a step whose journaled record is lost, make
//     the journal damaged, not unreadable: it is listed as damaged with
//     what it holds and reverted as far as its records prove (revert.go).
//   - A journal revert would act on is trusted only if its directory and
//     file can only have been written by root (or the user) and every
//     step names a path its kind writes (checkChange); otherwise it is
//     refused: listed as such, never reverted, never blocking the others.

// Phase is where a step stands.
type Phase string

// The phases of a step, in the order they can happen.
const (
	// PhaseJournaled: the prior value is on disk; the change may or may
	// not have been made (the process stopped before its read-back).
	PhaseJournaled Phase = "journaled"
	// PhaseApplied: changed and read back.
	PhaseApplied Phase = "applied"
	// PhaseRefused: the kernel refused the write (a managed IRQ); nothing
	// changed.
	PhaseRefused Phase = "refused"
	// PhaseSkipped: not made here (a change needing the live NIC, below a
	// captured tree).
	PhaseSkipped Phase = "skipped"
	// PhaseFailed: the write or its read-back failed.
	PhaseFailed Phase = "failed"
	// PhaseReverted: the prior value is back.
	PhaseReverted Phase = "reverted"
	// PhaseLeft: someone else changed the value since; left alone.
	PhaseLeft Phase = "left"
	// PhaseRevertFailed: restoring the prior value failed.
	PhaseRevertFailed Phase = "revert_failed"
)

// pending reports whether a step in phase ph may still hold tune's value,
// so that reverting must look at it.
func (ph Phase) pending() bool {
	switch ph {
	case PhaseJournaled, PhaseApplied, PhaseFailed, PhaseLeft, PhaseRevertFailed:
		return true
	}
	return false
}

// The events that end an apply or a revert.
const (
	eventApplied    = "applied"
	eventRolledBack = "rolled_back"
	eventReverted   = "reverted"
)

// record is one line of a journal.
type record struct {
	Schema     string   `json:"schema,omitempty"`
	ID         string   `json:"id,omitempty"`
	Time       string   `json:"time,omitempty"`
	Host       string   `json:"host,omitempty"`
	Root       string   `json:"root,omitempty"`
	NetNS      uint64   `json:"netns,omitempty"`
	Profile    Profile  `json:"profile,omitempty"`
	Planned    int      `json:"planned,omitempty"`
	Interfaces []string `json:"interfaces,omitempty"`

	Step   int     `json:"step,omitempty"`
	Phase  Phase   `json:"phase,omitempty"`
	Change *Change `json:"change,omitempty"`
	Prior  *string `json:"prior,omitempty"`
	Want   *string `json:"want,omitempty"`
	Now    *string `json:"now,omitempty"`
	Reason string  `json:"reason,omitempty"`
	Forced bool    `json:"forced,omitempty"`

	Event string `json:"event,omitempty"`
}

// Journal is a journal file read back.
type Journal struct {
	ID         string    `json:"id"`
	Time       time.Time `json:"time"`
	Host       string    `json:"host"`
	Root       string    `json:"root"`
	NetNS      uint64    `json:"netns"`
	Profile    Profile   `json:"profile"`
	Planned    int       `json:"planned"`
	Interfaces []string  `json:"interfaces"`
	// Steps are the changes journaled, in step order.
	Steps  []*JournalStep `json:"steps"`
	Events []string       `json:"events"`
	// Path is the journal file.
	Path string `json:"path"`
	// Damage says what of the file could not be read ("" when it is
	// whole); the records that could are in the fields above.
	Damage string `json:"damage,omitempty"`
	// Refused says why the journal is not trusted: a file or directory
	// others could write, or a step naming a path its kind never writes.
	// A refused journal holds no steps and is never reverted.
	Refused string `json:"refused,omitempty"`

	// headerless: the file has no header (so no root and no network
	// namespace to revert in).
	headerless bool
	// size is the file's size when read; whole is where its last whole
	// line ends, short of a cut-off tail (Revert cuts it off before
	// appending); needNL says the last record lacks its newline.
	size, whole int64
	needNL      bool
}

// JournalStep is one journaled change and where it stands.
type JournalStep struct {
	Change Change `json:"change"`
	// Prior is the value before the change, exactly as read (file bytes,
	// or the device's settings); Want is what tune wrote.
	Prior  string `json:"prior"`
	Want   string `json:"want"`
	Phase  Phase  `json:"phase"`
	Reason string `json:"reason,omitempty"`
	// journaled is set when the prior value was recorded, i.e. when the
	// change may have been made.
	journaled bool
}

// pending reports whether the step may still hold tune's value.
func (s *JournalStep) pending() bool { return s.journaled && s.Phase.pending() }

// The states of a journal, as List shows them.
const (
	StateIncomplete      = "incomplete" // apply was stopped (killed) or still runs
	StateApplied         = "applied"
	StateRolledBack      = "rolled back"
	StatePartlyReverted  = "partly reverted" // some values were changed by others and left
	StateReverted        = "reverted"
	statePartlyRolledBak = "partly rolled back"
	// StateDamaged: no header, so nothing says where its changes were
	// made; a journal with a header and damage elsewhere keeps its state.
	StateDamaged = "damaged"
	// StateRefused: not trusted (Journal.Refused).
	StateRefused = "refused"
)

// State summarises the journal.
func (j *Journal) State() string {
	if j.Refused != "" {
		return StateRefused
	}
	if j.headerless {
		return StateDamaged
	}
	last := ""
	if len(j.Events) > 0 {
		last = j.Events[len(j.Events)-1]
	}
	pending := j.Pending() > 0
	if last == "" {
		return StateIncomplete
	}
	if last == eventRolledBack {
		if pending {
			return statePartlyRolledBak
		}
		return StateRolledBack
	}
	if last == eventReverted {
		if pending {
			return StatePartlyReverted
		}
		return StateReverted
	}
	return StateApplied
}

// Pending counts the steps that may still hold tune's value.
func (j *Journal) Pending() int {
	n := 0
	for _, s := range j.Steps {
		if s.pending() {
			n++
		}
	}
	return n
}

// Applied counts the steps applied (and not reverted since).
func (j *Journal) Applied() int {
	n := 0
	for _, s := range j.Steps {
		if s.Phase == PhaseApplied {
			n++
		}
	}
	return n
}

// idRE matches journal IDs: a UTC timestamp with microseconds, and a
// suffix when two journals start in the same microsecond.
var idRE = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}\.[0-9]{6}Z(-[0-9]+)?$`)

const journalExt = ".jsonl"

// maxJournal bounds a journal file read: thousands of steps fit.
const maxJournal = 16 << 20

// ErrNoJournal reports that the journal asked for (an ID, or the last one
// with changes) is not in the directory: errors.Is(err, ErrNoJournal).
var ErrNoJournal = errors.New("no such tune journal")

// noJournal is an ErrNoJournal with its own message.
type noJournal string

func (e noJournal) Error() string      { return string(e) }
func (noJournal) Is(target error) bool { return target == ErrNoJournal }

// Load reads journal id from dir, for revert: a journal that is refused
// or has no header is an error that says why and what to do.
func Load(dir, id string) (*Journal, error) {
	if !idRE.MatchString(id) {
		return nil, fmt.Errorf("%q is not a journal ID (IDs look like 20250120T153012.123456Z; linerate tune list shows them)", id)
	}
	if err := statedir.PrivateDir(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, noJournal(fmt.Sprintf("no journal %s (linerate tune list shows them)", id))
	} else if err != nil {
		return nil, fmt.Errorf("tune journals: %w", err)
	}
	j, err := loadFile(filepath.Join(dir, id+journalExt))
	if err != nil {
		return nil, err
	}
	if j.Refused != "" {
		return nil, fmt.Errorf("journal %s refused: %s", j.Path, j.Refused)
	}
	if j.headerless {
		return nil, fmt.Errorf("journal %s is damaged (%s): it has no header, which a journal gets before any change, so nothing was changed under it; remove it (rm %s)", j.Path, j.Damage, j.Path)
	}
	return j, nil
}

// loadFile reads one journal file. Only a file that cannot be opened is
// an error; damage and distrust are in the Journal (Damage, Refused).
func loadFile(path string) (*Journal, error) {
	id := strings.TrimSuffix(filepath.Base(path), journalExt)
	j := &Journal{ID: id, Path: path, Events: []string{}, Steps: []*JournalStep{}}
	// O_NOFOLLOW: a link planted in place of a journal is not followed.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, noJournal(fmt.Sprintf("no journal %s (linerate tune list shows them)", id))
	}
	if errors.Is(err, syscall.ELOOP) {
		j.Refused = "it is a symbolic link, not a journal tune wrote; remove it (rm " + path + ")"
		return j, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the tune journal: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading the tune journal: %w", err)
	}
	if !fi.Mode().IsRegular() {
		j.Refused = "it is not a regular file; remove it"
		return j, nil
	}
	if err := statedir.Private(path, fi); err != nil {
		j.Refused = err.Error()
		return j, nil
	}
	b, err := io.ReadAll(io.LimitReader(f, maxJournal+1))
	if err != nil {
		return nil, fmt.Errorf("reading the tune journal %s: %w", path, err)
	}
	if len(b) > maxJournal {
		j.Refused = fmt.Sprintf("it is larger than %d MiB, which no tune writes; remove it", maxJournal>>20)
		return j, nil
	}
	j.size = int64(len(b))
	recs, damage := parseRecords(j, b)
	build(j, recs, damage)
	return j, nil
}

// parseRecords reads the whole lines of b as records. A last line without
// its newline is a write cut short: used if it is a whole record, else
// ignored (j.whole marks where the whole lines end).
func parseRecords(j *Journal, b []byte) (recs []record, damage []string) {
	var bad []int
	n := 0
	for len(b) > 0 {
		n++
		line, rest, whole := bytes.Cut(b, []byte{'\n'})
		var r record
		err := json.Unmarshal(line, &r)
		if !whole && err != nil {
			damage = append(damage, fmt.Sprintf("its last line is cut off (%d bytes; a write was cut short), so it was read up to line %d", len(line), n-1))
			j.whole = j.size - int64(len(line))
			return recs, append(badLines(bad), damage...)
		}
		if !whole {
			j.needNL = true
		} else if err != nil {
			bad = append(bad, n)
			b = rest
			continue
		}
		recs = append(recs, r)
		b = rest
	}
	j.whole = j.size
	return recs, badLines(bad)
}

func badLines(bad []int) []string {
	switch len(bad) {
	case 0:
		return nil
	case 1:
		return []string{fmt.Sprintf("line %d is not a record", bad[0])}
	}
	return []string{fmt.Sprintf("%d lines are not records (lines %s)", len(bad), cpulist.Format(bad))}
}

// build folds the records into j. A journal without a header is damaged
// and holds nothing; one with a step naming a path its kind never writes
// is refused and holds nothing.
func build(j *Journal, recs []record, damage []string) {
	defer func() { j.Damage = strings.Join(damage, "; ") }()
	if len(recs) == 0 || recs[0].Schema != JournalSchema {
		j.headerless = true
		what := "an empty file"
		if j.size > 0 {
			what = "no " + JournalSchema + " header"
		}
		damage = append([]string{what}, damage...)
		return
	}
	h := recs[0]
	if err := checkRoot(h.Root); err != nil {
		j.Refused = err.Error()
		return
	}
	if h.ID != j.ID {
		damage = append(damage, fmt.Sprintf("its header names journal %q (a copy, or a renamed file)", h.ID))
	}
	j.Host, j.Root, j.NetNS, j.Profile, j.Planned, j.Interfaces = h.Host, h.Root, h.NetNS, h.Profile, h.Planned, h.Interfaces
	j.Time, _ = time.Parse(time.RFC3339Nano, h.Time)
	byStep := map[int]*JournalStep{}
	var orphans []int
	for _, r := range recs[1:] {
		if r.Schema != "" {
			damage = append(damage, "a second header")
			continue
		}
		if r.Event != "" {
			j.Events = append(j.Events, r.Event)
			continue
		}
		s := byStep[r.Step]
		if s == nil {
			if r.Change == nil {
				// Its journaled record is lost (a damaged line): what was
				// written before it is unknown, so it cannot be reverted.
				if !slices.Contains(orphans, r.Step) {
					orphans = append(orphans, r.Step)
				}
				continue
			}
			if err := checkChange(r.Change); err != nil {
				j.Refused = fmt.Sprintf("step %d: %v; a journal tune wrote never does that: check who wrote it, then remove it", r.Step, err)
				j.Steps, j.Events = []*JournalStep{}, []string{}
				return
			}
			s = &JournalStep{Change: *r.Change}
			byStep[r.Step] = s
			j.Steps = append(j.Steps, s)
		}
		if r.Prior != nil {
			s.Prior, s.journaled = *r.Prior, true
		}
		if r.Want != nil {
			s.Want = *r.Want
		}
		s.Phase, s.Reason = r.Phase, r.Reason
	}
	if len(orphans) > 0 {
		damage = append(damage, fmt.Sprintf("step(s) %s: records without the change they are about (not reverted)", cpulist.Format(orphans)))
	}
	slices.SortFunc(j.Steps, func(a, b *JournalStep) int { return a.Change.Step - b.Change.Step })
}

// Holds says what a journal holds, for a damaged one's listing:
// "5 steps (3 applied, 1 journaled only), 2 events".
func (j *Journal) Holds() string {
	if j.headerless || j.Refused != "" {
		return "nothing usable"
	}
	only := 0
	for _, s := range j.Steps {
		if s.Phase == PhaseJournaled {
			only++
		}
	}
	return fmt.Sprintf("%d step(s) (%d applied, %d journaled without a read-back), %d event(s)", len(j.Steps), j.Applied(), only, len(j.Events))
}

// List reads every journal in dir, newest first, damaged and refused ones
// included (Journal.State says which). A directory that does not exist
// holds no journals; one that others could write is an error.
func List(dir string) ([]*Journal, error) {
	if err := statedir.PrivateDir(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("tune journals: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing tune journals: %w", err)
	}
	var out []*Journal
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), journalExt)
		if !ok || !idRE.MatchString(id) {
			continue
		}
		j, err := loadFile(filepath.Join(dir, e.Name()))
		if errors.Is(err, ErrNoJournal) {
			continue // removed since ReadDir
		}
		if err != nil {
			j = &Journal{ID: id, Path: filepath.Join(dir, e.Name()), Events: []string{}, Steps: []*JournalStep{}, Refused: err.Error()}
		}
		out = append(out, j)
	}
	slices.SortFunc(out, func(a, b *Journal) int { return strings.Compare(b.ID, a.ID) })
	return out, nil
}

// Last returns the newest journal made in network namespace netns that
// still has changes to revert. Damaged journals count for what they
// prove; refused and headerless ones hold nothing to revert.
func Last(dir string, netns uint64) (*Journal, error) {
	all, err := List(dir)
	if err != nil {
		return nil, err
	}
	for _, j := range all {
		if j.NetNS == netns && j.Pending() > 0 {
			return j, nil
		}
	}
	return nil, noJournal(fmt.Sprintf("no journal with changes to revert was made in this network namespace (%d); linerate tune list shows them all", netns))
}

// Active returns the newest journal made in network namespace netns whose
// changes are applied and not reverted: the tuning in effect there, which
// bench records with every run. nil when there is none.
func Active(dir string, netns uint64) (*Journal, error) {
	all, err := List(dir)
	if err != nil {
		return nil, err
	}
	for _, j := range all {
		if j.NetNS == netns && j.State() == StateApplied && j.Applied() > 0 {
			return j, nil
		}
	}
	return nil, nil
}
