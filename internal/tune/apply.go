package tune

import (
	"errors"
	"fmt"
	"time"
)

// ApplyOptions tune Apply.
type ApplyOptions struct {
	// JournalDir is where the journal is written (statedir.Sub("tune")).
	JournalDir string
	// AfterStep, when set, is called after a step's journal record is on
	// disk (PhaseJournaled, before the change) and after its read-back
	// (PhaseApplied). Tests stop and kill the process there.
	AfterStep func(step int, phase Phase)
}

// StepResult is what happened to one step.
type StepResult struct {
	Step   int    `json:"step"`
	Kind   Kind   `json:"kind"`
	Target string `json:"target"`
	Phase  Phase  `json:"phase"`
	// Value is the value read back (apply) or found (revert).
	Value  string `json:"value,omitempty"`
	Reason string `json:"reason,omitempty"`
	Forced bool   `json:"forced,omitempty"`
}

// Result is what Apply did.
type Result struct {
	Journal string       `json:"journal"`
	Steps   []StepResult `json:"steps"`
	// Rollback lists the reverted steps when a step failed.
	Rollback []StepResult `json:"rollback,omitempty"`
}

// Count returns how many steps ended in phase ph.
func (r *Result) Count(ph Phase) int {
	n := 0
	for _, s := range r.Steps {
		if s.Phase == ph {
			n++
		}
	}
	return n
}

// StepError is Apply's error when a step failed: the steps applied before
// it were rolled back, in reverse order.
type StepError struct {
	Step, Of   int
	Change     Change
	Err        error
	RolledBack int
	// Left counts the steps rollback left alone or could not restore.
	Left    int
	Journal string
}

// Error names the failed step, its cause and what was rolled back.
func (e *StepError) Error() string {
	msg := fmt.Sprintf("step %d of %d (%s) failed: %v; rolled back %d applied step(s)", e.Step, e.Of, e.Change.Label(), e.Err, e.RolledBack)
	if e.Left > 0 {
		msg += fmt.Sprintf(", %d could not be restored (see linerate tune list; journal %s)", e.Left, e.Journal)
	}
	return msg
}

// Unwrap returns the step's own error.
func (e *StepError) Unwrap() error { return e.Err }

// applier is one Apply run.
type applier struct {
	t    *Target
	opts ApplyOptions
	w    *journalWriter
	res  *Result
}

// Apply makes the plan's changes on t, one step at a time: journal the
// prior value (synced), change, read back. The first step that fails
// stops it; the steps applied so far are reverted in reverse order and the
// error is a *StepError naming the step. A kernel-managed IRQ that refuses
// its new affinity is reported (PhaseRefused), not a failure; so is a
// change needing the live NIC below a captured tree (PhaseSkipped).
func Apply(p *Plan, t *Target, opts ApplyOptions) (*Result, error) {
	w, id, err := createJournal(opts.JournalDir, p, time.Now(), journalReserve(p))
	if err != nil {
		return nil, err
	}
	defer w.close()
	a := &applier{t: t, opts: opts, w: w, res: &Result{Journal: id, Steps: []StepResult{}}}
	for _, c := range p.Changes {
		r, err := a.step(c)
		if err != nil && r.Phase == "" {
			r.Phase, r.Reason = PhaseFailed, err.Error() // the journal itself failed
		}
		a.res.Steps = append(a.res.Steps, r)
		if err != nil {
			return a.res, a.rollback(p, c, err)
		}
	}
	if err := w.append(record{Event: eventApplied}); err != nil {
		return a.res, err
	}
	return a.res, nil
}

func (a *applier) hook(step int, ph Phase) {
	if a.opts.AfterStep != nil {
		a.opts.AfterStep(step, ph)
	}
}

// step applies one change.
func (a *applier) step(c Change) (StepResult, error) {
	r := StepResult{Step: c.Step, Kind: c.Kind, Target: c.Target}
	o, err := a.t.opFor(c)
	if errors.Is(err, errNeedsLive) {
		r.Phase, r.Reason = PhaseSkipped, err.Error()
		return r, a.w.append(record{Step: c.Step, Phase: PhaseSkipped, Change: &c, Reason: r.Reason})
	}
	if err != nil {
		return a.fail(r, c, nil, err)
	}
	prior, err := o.read()
	if err != nil {
		return a.fail(r, c, nil, fmt.Errorf("reading the value before: %w", err))
	}
	want, err := wantFor(c, prior)
	if err != nil {
		return a.fail(r, c, nil, err)
	}
	if err := a.w.append(record{Step: c.Step, Phase: PhaseJournaled, Change: &c, Prior: &prior, Want: &want}); err != nil {
		return r, err
	}
	a.hook(c.Step, PhaseJournaled)
	if err := o.write(want); err != nil {
		if refused(c, err) {
			r.Phase, r.Reason = PhaseRefused, fmt.Sprintf("the kernel refused the write (%v): a kernel-managed IRQ, placed by its driver; irqbalance cannot move it either", err)
			return r, a.w.append(record{Step: c.Step, Phase: PhaseRefused, Reason: r.Reason})
		}
		return a.fail(r, c, &prior, err)
	}
	got, err := o.read()
	if err == nil && !o.same(got, want) {
		err = fmt.Errorf("read back %q after writing %q", display(c.Kind, got), display(c.Kind, want))
	}
	if err == nil {
		err = o.check(want)
	}
	if err != nil {
		return a.fail(r, c, &prior, fmt.Errorf("verifying: %w", err))
	}
	r.Phase, r.Value = PhaseApplied, display(c.Kind, got)
	if err := a.w.append(record{Step: c.Step, Phase: PhaseApplied, Now: &got}); err != nil {
		return r, err
	}
	a.hook(c.Step, PhaseApplied)
	return r, nil
}

// fail journals a failed step. prior is nil when nothing was written.
func (a *applier) fail(r StepResult, c Change, prior *string, err error) (StepResult, error) {
	r.Phase, r.Reason = PhaseFailed, err.Error()
	rec := record{Step: c.Step, Phase: PhaseFailed, Reason: r.Reason}
	if prior == nil {
		// Not journaled, so nothing was written: the record carries the
		// change, and revert finds nothing to restore.
		rec.Change = &c
	}
	if jerr := a.w.append(rec); jerr != nil {
		return r, errors.Join(err, jerr)
	}
	return r, err
}

// rollback reverts what this run applied, the failed step included
// (forced: tune just wrote it), and returns the StepError.
func (a *applier) rollback(p *Plan, failed Change, cause error) error {
	se := &StepError{Step: failed.Step, Of: len(p.Changes), Change: failed, Err: cause, Journal: a.res.Journal}
	j, err := loadFile(a.w.name)
	if err != nil {
		return errors.Join(se, err)
	}
	rv := &reverter{t: a.t, w: a.w}
	a.res.Rollback = rv.revertAll(j, func(s *JournalStep) bool { return s.Change.Step == failed.Step })
	for _, r := range a.res.Rollback {
		switch r.Phase {
		case PhaseReverted:
			if r.Step != failed.Step {
				se.RolledBack++
			}
		case PhaseLeft, PhaseRevertFailed:
			se.Left++
		}
	}
	if err := a.w.append(record{Event: eventRolledBack, Reason: cause.Error()}); err != nil {
		return errors.Join(se, err)
	}
	return se
}
