package tune

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// JournalSchema names the first record of every journal file.
const JournalSchema = "linerate.tune-journal/v1"

// A journal is a file of JSON lines, appended and synced one record at a
// time, so that a process killed at any instant leaves every record
// before the kill intact and at most a torn last line (which Load skips).
// The first line is the header; then step records (a step's "journaled"
// record holds the change, its prior value and the value to write, and
// is on disk before the change is made); then events.

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
)

// State summarises the journal.
func (j *Journal) State() string {
	last := ""
	if len(j.Events) > 0 {
		last = j.Events[len(j.Events)-1]
	}
	pending := j.Pending() > 0
	switch {
	case last == "":
		return StateIncomplete
	case last == eventRolledBack && pending:
		return statePartlyRolledBak
	case last == eventRolledBack:
		return StateRolledBack
	case last == eventReverted && pending:
		return StatePartlyReverted
	case last == eventReverted:
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

// journalWriter appends records to one journal file, syncing each.
type journalWriter struct {
	f *os.File
}

// createJournal creates a new journal in dir for plan p and writes its
// header. The file and the directory entry are synced before it returns,
// so the journal exists on disk before the first change.
func createJournal(dir string, p *Plan, now time.Time) (*journalWriter, string, error) {
	base := now.UTC().Format("20060102T150405.000000Z")
	for n := 1; ; n++ {
		id := base
		if n > 1 {
			id = fmt.Sprintf("%s-%d", base, n)
		}
		path := filepath.Join(dir, id+journalExt)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
		if errors.Is(err, fs.ErrExist) && n < 100 {
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("creating the tune journal: %w (set LINERATE_STATE_DIR to a writable directory)", err)
		}
		w := &journalWriter{f: f}
		hdr := record{Schema: JournalSchema, ID: id, Time: now.UTC().Format(time.RFC3339Nano), Host: p.Host, Root: p.Root,
			NetNS: p.NetNS, Profile: p.Profile, Planned: len(p.Changes), Interfaces: p.Interfaces}
		if err := w.append(hdr); err != nil {
			f.Close()
			return nil, "", err
		}
		if err := syncDir(dir); err != nil {
			f.Close()
			return nil, "", err
		}
		return w, id, nil
	}
}

// openJournal opens an existing journal to append to it.
func openJournal(path string) (*journalWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the tune journal: %w", err)
	}
	return &journalWriter{f: f}, nil
}

// append writes one record. The header and each step's journaled record
// (its prior value) are synced to disk before append returns: they must
// survive a crash that happens after the change. Later records are not:
// a step whose "applied" or "reverted" record is lost still reads as
// journaled, and revert then compares the live value with both the prior
// and tune's value, which gives the same answer.
func (w *journalWriter) append(r record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding a journal record: %w", err)
	}
	if _, err := w.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing the tune journal %s: %w", w.f.Name(), err)
	}
	if r.Schema == "" && r.Phase != PhaseJournaled {
		return nil
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("syncing the tune journal %s: %w", w.f.Name(), err)
	}
	return nil
}

func (w *journalWriter) close() error { return w.f.Close() }

// syncDir makes a new directory entry durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

// ErrNoJournal reports that the journal asked for (an ID, or the last one
// with changes) is not in the directory: errors.Is(err, ErrNoJournal).
var ErrNoJournal = errors.New("no such tune journal")

// noJournal is an ErrNoJournal with its own message.
type noJournal string

func (e noJournal) Error() string      { return string(e) }
func (noJournal) Is(target error) bool { return target == ErrNoJournal }

// Load reads journal id from dir.
func Load(dir, id string) (*Journal, error) {
	if !idRE.MatchString(id) {
		return nil, fmt.Errorf("%q is not a journal ID (IDs look like 20250120T153012.123456Z; linerate tune list shows them)", id)
	}
	return loadFile(filepath.Join(dir, id+journalExt))
}

func loadFile(path string) (*Journal, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, noJournal(fmt.Sprintf("no journal %s (linerate tune list shows them)", strings.TrimSuffix(filepath.Base(path), journalExt)))
	}
	if err != nil {
		return nil, fmt.Errorf("reading the tune journal: %w", err)
	}
	defer f.Close()
	var recs []record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxJournal)
	var bad error
	for sc.Scan() {
		if bad != nil {
			return nil, bad // only the last line may be torn
		}
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			bad = fmt.Errorf("journal %s is damaged: %w", path, err)
			continue
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the tune journal %s: %w", path, err)
	}
	return build(path, recs)
}

// build folds the records into a Journal.
func build(path string, recs []record) (*Journal, error) {
	if len(recs) == 0 || recs[0].Schema != JournalSchema {
		return nil, fmt.Errorf("%s is not a tune journal (no %s header)", path, JournalSchema)
	}
	h := recs[0]
	j := &Journal{ID: h.ID, Host: h.Host, Root: h.Root, NetNS: h.NetNS, Profile: h.Profile, Planned: h.Planned,
		Interfaces: h.Interfaces, Path: path, Events: []string{}, Steps: []*JournalStep{}}
	j.Time, _ = time.Parse(time.RFC3339Nano, h.Time)
	byStep := map[int]*JournalStep{}
	for _, r := range recs[1:] {
		if r.Event != "" {
			j.Events = append(j.Events, r.Event)
			continue
		}
		s := byStep[r.Step]
		if s == nil {
			if r.Change == nil {
				return nil, fmt.Errorf("journal %s is damaged: step %d has no change record", path, r.Step)
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
	slices.SortFunc(j.Steps, func(a, b *JournalStep) int { return a.Change.Step - b.Change.Step })
	return j, nil
}

// List reads every journal in dir, newest first. A directory that does not
// exist holds no journals.
func List(dir string) ([]*Journal, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
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
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	slices.SortFunc(out, func(a, b *Journal) int { return strings.Compare(b.ID, a.ID) })
	return out, nil
}

// Last returns the newest journal made in network namespace netns that
// still has changes to revert.
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
