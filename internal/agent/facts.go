package agent

import (
	"net/netip"
	"sync"
	"time"

	"github.com/linerate/linerate/internal/engine"
	"github.com/linerate/linerate/internal/result"
)

// hostFacts gives every authenticated client what the agent knows of its
// host (the welcome message), within a budget: the facts come from
// sysfs and procfs (inventory.Collect), and a wedged NIC can make such a
// read hang. A read that overruns is left to finish on its own goroutine,
// and none other starts until it has, so stuck reads do not pile up; the
// clients meanwhile get the CPUs the agent may use and a note saying why
// the rest is missing. Facts are kept for factsTTL: a campaign connects
// several times a second, and the host does not change that fast.
type hostFacts struct {
	collect func(local netip.Addr) (result.HostInfo, []string)
	budget  time.Duration

	mu      sync.Mutex
	running bool
	cache   map[netip.Addr]factsEntry
}

type factsEntry struct {
	at    time.Time
	host  result.HostInfo
	notes []string
}

const (
	defaultFactsBudget = 5 * time.Second
	factsTTL           = 2 * time.Second
	maxFactsCache      = 64 // local addresses remembered
)

// get returns the facts for the interface holding local.
func (f *hostFacts) get(local netip.Addr) (result.HostInfo, []string) {
	f.mu.Lock()
	if e, ok := f.cache[local]; ok && time.Since(e.at) < factsTTL {
		f.mu.Unlock()
		return e.host, e.notes
	}
	if f.running {
		f.mu.Unlock()
		return f.minimal("an earlier read of this host's facts has not finished (a wedged sysfs read?)")
	}
	f.running = true
	f.mu.Unlock()
	ch := make(chan factsEntry, 1)
	go func() {
		h, notes := f.collect(local)
		e := factsEntry{at: time.Now(), host: h, notes: notes}
		f.mu.Lock()
		f.running = false
		if f.cache == nil || len(f.cache) >= maxFactsCache {
			f.cache = map[netip.Addr]factsEntry{}
		}
		f.cache[local] = e
		f.mu.Unlock()
		ch <- e
	}()
	select {
	case e := <-ch:
		return e.host, e.notes
	case <-time.After(f.budget):
		return f.minimal("reading this host's facts took over " + f.budget.String())
	}
}

// minimal is what the agent says of its host without reading sysfs: the
// CPUs it may use.
func (f *hostFacts) minimal(why string) (result.HostInfo, []string) {
	cpus, err := engine.AllowedCPUs()
	notes := []string{"host facts: " + why}
	if err != nil {
		notes = append(notes, err.Error())
	}
	return result.HostInfo{CPUs: cpus, Candidates: cpus}, notes
}
