package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/statedir"
)

// recordSchema names the format of a lab's state file.
const recordSchema = "linerate.lab/v1"

// Phases of a record. A record left in phaseCreating or phaseReshaping means
// an `up` did not finish (it was killed, or the machine went down).
const (
	phaseCreating  = "creating"
	phaseReshaping = "reshaping"
	phaseUp        = "up"
)

// record is a lab's state file: what was asked for, and how far up got.
// It is written before anything is created, so that down can always find
// what an interrupted up may have left.
type record struct {
	Schema   string   `json:"schema"`
	Name     string   `json:"name"`
	Scenario Scenario `json:"scenario"`
	RateBPS  uint64   `json:"rate_bps,omitempty"` // the --rate asked for, 0 if none
	// LineRateBPS is the rate the lab's tbf shapes each host's lab0 to
	// (--rate, or the scenario's), standing in for a NIC's line rate;
	// 0 when unshaped.
	LineRateBPS uint64 `json:"line_rate_bps,omitempty"`
	BufferMax   int    `json:"buffer_max,omitempty"` // small-buffers' maximum asked for, 0 for 64 KiB
	MTU         int    `json:"mtu,omitempty"`        // the --mtu asked for, 0 if none
	Hosts       int    `json:"hosts,omitempty"`      // a lab of many hosts: how many; 0 for a and b
	Queues      int    `json:"queues,omitempty"`     // the --queues asked for, 0 if none
	// BusyLoop is host b's busy loop (busy-receiver), nil when none runs.
	BusyLoop   *busyLoop `json:"busy_loop,omitempty"`
	Phase      string    `json:"phase"`
	Namespaces []string  `json:"namespaces"`
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"`
}

func newRecord(c Config, phase string, created time.Time) *record {
	now := time.Now().UTC().Truncate(time.Second)
	if created.IsZero() {
		created = now
	}
	return &record{
		Schema: recordSchema, Name: c.Name, Scenario: c.Scenario,
		RateBPS: uint64(c.Rate), LineRateBPS: uint64(c.lineRate()), BufferMax: c.BufferMax, MTU: c.MTU, Hosts: c.Hosts, Queues: c.Queues, Phase: phase,
		Namespaces: c.namespaces(),
		Created:    created, Updated: now,
	}
}

// sameAsk reports whether r was written for the same configuration as c.
func (r *record) sameAsk(c Config) bool {
	return r != nil && r.Name == c.Name && r.Scenario == c.Scenario &&
		r.RateBPS == uint64(c.Rate) && r.BufferMax == c.BufferMax && r.MTU == c.MTU && r.Hosts == c.Hosts && max(r.Queues, 1) == max(c.Queues, 1)
}

// labDir returns the directory of lab records, creating it.
func labDir() (string, error) { return statedir.Sub("lab") }

// openLabs checks for root and takes the lab lock, returning the records
// directory and the unlock function: what every changing command starts with.
func openLabs(ctx context.Context) (dir string, unlock func(), err error) {
	if err := requireRoot(); err != nil {
		return "", nil, err
	}
	if dir, err = labDir(); err != nil {
		return "", nil, err
	}
	if unlock, err = lockLabs(ctx, dir); err != nil {
		return "", nil, err
	}
	return dir, unlock, nil
}

func recordPath(dir, name string) string { return filepath.Join(dir, name+".json") }

// readRecord returns the record of lab name, or nil if there is none.
func readRecord(dir, name string) (*record, error) {
	b, err := os.ReadFile(recordPath(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading lab record: %w", err)
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("reading lab record %s: %w (remove it with 'linerate lab down --name %s')",
			recordPath(dir, name), err, name)
	}
	return &r, nil
}

// writeRecord replaces the record atomically (write, fsync, rename), so a
// crash leaves either the old record or the new one, never half of one.
func writeRecord(dir string, r *record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	path := recordPath(dir, r.Name)
	tmp, err := os.CreateTemp(dir, "."+r.Name+".json.*")
	if err != nil {
		return fmt.Errorf("writing lab record: %w", err)
	}
	_, err = tmp.Write(append(b, '\n'))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing lab record %s: %w", path, err)
	}
	return nil
}

// removeRecord deletes the record of lab name; a missing record is fine.
func removeRecord(dir, name string) (bool, error) {
	err := os.Remove(recordPath(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("removing lab record: %w", err)
	}
	return true, nil
}

// recordNames lists the labs that have a record.
func recordNames(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing lab records: %w", err)
	}
	var names []string
	for _, e := range ents {
		n, ok := strings.CutSuffix(e.Name(), ".json")
		if ok && ValidateName(n) == nil {
			names = append(names, n)
		}
	}
	return names, nil
}

// lockLabs takes an exclusive lock on the records directory, so that two
// linerate processes never reshape or remove labs at the same time. The
// kernel drops the lock if the process dies, so a killed up never leaves it
// behind. It waits until ctx is done.
func lockLabs(ctx context.Context, dir string) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("locking lab records: %w", err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking lab records in %s: %w", dir, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another linerate lab command to finish: %w", context.Cause(ctx))
		case <-time.After(50 * time.Millisecond):
		}
	}
}
