package telemetry

import (
	"sync"
	"time"

	"github.com/linerate/linerate/internal/hostfs"
)

// Ticker samples a host every interval on a goroutine of its own, for
// traffic it does not drive (an external tool): sample i covers the i-th
// interval after Start.
type Ticker struct {
	s       *Sampler
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	samples []Sample
}

// Start takes the baseline now and a sample every d until Stop.
func Start(fs *hostfs.FS, nicIRQs []int, d time.Duration) *Ticker {
	t := &Ticker{s: NewSampler(fs, nicIRQs), stop: make(chan struct{}), done: make(chan struct{})}
	go t.loop(d)
	return t
}

func (t *Ticker) loop(d time.Duration) {
	defer close(t.done)
	tk := time.NewTicker(d)
	defer tk.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tk.C:
			s := t.s.Sample()
			t.mu.Lock()
			t.samples = append(t.samples, s)
			t.mu.Unlock()
		}
	}
}

// Stop ends sampling and returns the samples, one per elapsed interval. A
// nil Ticker (sampling off) returns none.
func (t *Ticker) Stop() []Sample {
	if t == nil {
		return nil
	}
	close(t.stop)
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.samples
}

// At returns sample i if it has been taken (for a live display). A nil
// Ticker has none.
func (t *Ticker) At(i int) (Sample, bool) {
	if t == nil {
		return Sample{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if i < 0 || i >= len(t.samples) {
		return Sample{}, false
	}
	return t.samples[i], true
}

// Unread is the sampler's Unread once the Ticker stopped (Sampler.Unread);
// nil for a nil Ticker.
func (t *Ticker) Unread() map[string]string {
	if t == nil {
		return nil
	}
	<-t.done
	return t.s.Unread()
}

// Len is how many samples have been taken.
func (t *Ticker) Len() int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.samples)
}
