package tune

import (
	"errors"
	"fmt"
	"slices"
)

// RevertOptions tune Revert.
type RevertOptions struct {
	// Force restores prior values even where someone else changed them
	// since tune did.
	Force bool
	// NetNS is the caller's network namespace (CurrentNetNS). A journal
	// of the live host made in another namespace is refused: its sysctls
	// and interfaces are not the ones here.
	NetNS uint64
}

// RevertResult is what Revert did.
type RevertResult struct {
	Journal string       `json:"journal"`
	Steps   []StepResult `json:"steps"`
}

// Count returns how many steps ended in phase ph.
func (r *RevertResult) Count(ph Phase) int {
	n := 0
	for _, s := range r.Steps {
		if s.Phase == ph {
			n++
		}
	}
	return n
}

// ErrRevertIncomplete is wrapped by Revert's error when some prior value
// could not be restored.
var ErrRevertIncomplete = errors.New("some values could not be restored")

// Revert restores the journal's prior values on t, last step first. A
// value that is neither tune's nor the prior one was changed by someone
// else since: it is left alone and reported (PhaseLeft) unless
// opts.Force. Reverting again later retries what was left or failed.
func Revert(j *Journal, t *Target, opts RevertOptions) (*RevertResult, error) {
	if j.Root == "/" && j.NetNS != 0 && opts.NetNS != j.NetNS {
		return nil, fmt.Errorf("journal %s was made in network namespace %d, this is %d: its sysctls and interfaces are not the ones here; revert it from there (for a lab host: linerate lab exec NAME HOST -- linerate tune revert %s)",
			j.ID, j.NetNS, opts.NetNS, j.ID)
	}
	w, err := openJournal(j)
	if err != nil {
		return nil, err
	}
	defer w.close()
	rv := &reverter{t: t, w: w}
	res := &RevertResult{Journal: j.ID, Steps: rv.revertAll(j, func(*JournalStep) bool { return opts.Force })}
	if err := w.append(record{Event: eventReverted}); err != nil {
		return res, err
	}
	if n := res.Count(PhaseRevertFailed); n > 0 {
		return res, fmt.Errorf("journal %s: %d step(s) failed: %w (run linerate tune revert %s again once fixed)", j.ID, n, ErrRevertIncomplete, j.ID)
	}
	return res, rv.err
}

// reverter restores journaled steps and journals what it did.
type reverter struct {
	t   *Target
	w   *journalWriter
	err error // the first journal write error
}

// revertAll reverts the pending steps of j in reverse order; force says
// which of them to restore even when changed by someone else.
func (rv *reverter) revertAll(j *Journal, force func(*JournalStep) bool) []StepResult {
	out := []StepResult{}
	steps := slices.Clone(j.Steps)
	slices.Reverse(steps)
	for _, s := range steps {
		if !s.pending() {
			continue
		}
		r := rv.revert(s, force(s))
		rec := record{Step: r.Step, Phase: r.Phase, Now: &r.Value, Reason: r.Reason, Forced: r.Forced}
		if err := rv.w.append(rec); err != nil && rv.err == nil {
			rv.err = err
		}
		s.Phase, s.Reason = r.Phase, r.Reason
		out = append(out, r)
	}
	return out
}

// revert restores one step's prior value when the journal proves that
// the value now is tune's.
//
// What the records prove: a step's journaled record (its prior value and
// the value to write) is synced before the change, so a step without one
// was never changed, and such steps are not pending at all. A step with
// one may or may not have been changed: its "applied" record (after the
// read-back) is not synced, and a kill between the change and that
// record leaves the step journaled only. So whatever the phase, the value
// now decides:
//   - equal to the prior, byte for byte: nothing to do (the change never
//     happened, or was undone);
//   - the value tune wrote: tune's change is there (or someone set the
//     same value since, which the prior undoes just as well): restore;
//   - the prior written another way (tabs for spaces): restore its bytes;
//   - empty, in a step journaled but never read back: a killed write
//     that truncated a captured tree's file and wrote nothing: restore;
//   - anything else: someone else changed it since: left alone and
//     reported, unless forced.
func (rv *reverter) revert(s *JournalStep, force bool) StepResult {
	c := s.Change
	r := StepResult{Step: c.Step, Kind: c.Kind, Target: c.Target}
	o, err := rv.t.opFor(c)
	if err != nil {
		r.Phase, r.Reason = PhaseRevertFailed, err.Error()
		return r
	}
	cur, err := o.read()
	if err != nil {
		r.Phase, r.Reason = PhaseRevertFailed, fmt.Sprintf("reading it: %v", err)
		return r
	}
	r.Value = display(c.Kind, cur)
	if cur == s.Prior {
		r.Phase, r.Reason = PhaseReverted, "already at its prior value"
		return r
	}
	ours := o.same(cur, s.Want) || o.same(cur, s.Prior) || interrupted(s, cur)
	if !ours && !force {
		r.Phase = PhaseLeft
		r.Reason = fmt.Sprintf("now %q, tune set %q: changed since by someone else, so left alone (--force restores %q)",
			display(c.Kind, cur), display(c.Kind, s.Want), display(c.Kind, s.Prior))
		return r
	}
	r.Forced = !ours
	if err := o.write(s.Prior); err != nil {
		r.Phase, r.Reason = PhaseRevertFailed, fmt.Sprintf("restoring %q: %v", display(c.Kind, s.Prior), err)
		return r
	}
	back, err := o.read()
	if err == nil && !o.same(back, s.Prior) {
		err = fmt.Errorf("read back %q", display(c.Kind, back))
	}
	if err != nil {
		r.Phase, r.Reason = PhaseRevertFailed, fmt.Sprintf("restoring %q: %v", display(c.Kind, s.Prior), err)
		return r
	}
	r.Phase, r.Value = PhaseReverted, display(c.Kind, back)
	return r
}

// interrupted reports a file a killed write left empty: a step journaled
// but never read back whose value is now nothing at all (the truncate of a
// captured tree's file happened, the write did not).
func interrupted(s *JournalStep, cur string) bool {
	return cur == "" && (s.Phase == PhaseJournaled || s.Phase == PhaseFailed)
}
