package nicstats

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/vishvananda/netns"

	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/osthread"
	"github.com/linerate/linerate/internal/result"
)

// snapshotTimeout bounds one snapshot: a driver whose statistics op
// hangs (firmware that does not answer) must not hold a run, nor the
// agent.
const snapshotTimeout = 5 * time.Second

// Snapshot reads iface's counters now, in the calling thread's network
// namespace: the driver's own and the standard groups over ethtool
// netlink, and the kernel's (link statistics, the root qdisc's drops)
// over rtnetlink. It fails only when nothing at all could be read, or
// when the reading takes over 5 s.
func Snapshot(iface string) (Counters, error) {
	return inThisNetns(snapshotTimeout, func() (Counters, error) { return snapshotHere(iface) })
}

func snapshotHere(iface string) (Counters, error) {
	out := Counters{ByCause: map[Cause]Count{}}
	var errs []string
	if c, err := ethtool.Open(); err == nil {
		out, err = SnapshotWith(c, iface)
		c.Close()
		if err != nil {
			errs = append(errs, err.Error())
		}
	} else {
		errs = append(errs, err.Error())
	}
	h, err := openRoute()
	if err == nil {
		var k Kernel
		k, err = ReadKernel(h, iface)
		h.Close()
		if err == nil {
			AddKernel(&out, k)
		}
	}
	if err != nil {
		errs = append(errs, err.Error())
	}
	if len(out.ByCause) == 0 && len(errs) > 0 {
		return out, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return out, nil
}

// inThisNetns runs fn in the calling thread's network namespace and
// waits for it at most d. A netlink socket belongs to the namespace of
// the thread that opens it, and the caller's thread may be in another
// namespace than the rest of the process (a thread that entered a lab
// host), so fn runs on a thread of its own, thrown away afterwards, that
// enters the caller's namespace when it is not already there (entering
// needs CAP_SYS_ADMIN; a caller in the process's namespace never needs
// it). A fn still running after d is left to finish on its own; its
// result is dropped.
func inThisNetns[T any](d time.Duration, fn func() (T, error)) (T, error) {
	type answer struct {
		v   T
		err error
	}
	var zero T
	here, err := netns.Get()
	if err != nil {
		return zero, fmt.Errorf("finding this thread's network namespace: %w", err)
	}
	done := make(chan answer, 1)
	go func() {
		defer here.Close()
		var a answer
		err := osthread.Throwaway(func() error {
			cur, err := netns.Get()
			if err != nil {
				return fmt.Errorf("finding the worker thread's network namespace: %w", err)
			}
			same := cur.Equal(here)
			cur.Close()
			if !same {
				if err := netns.Set(here); err != nil {
					return fmt.Errorf("entering the caller's network namespace: %w", err)
				}
			}
			a.v, a.err = fn()
			return nil
		})
		if err != nil {
			a.err = err
		}
		done <- a
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case a := <-done:
		return a.v, a.err
	case <-t.C:
		return zero, fmt.Errorf("no answer within %s (a driver that does not answer its statistics request)", d)
	}
}

// Span is an interface's counters at the start of a run: Begin reads
// them, End reads them again and says what the run cost. Both must be
// called in the same network namespace.
type Span struct {
	iface  string
	before Counters
	err    error
}

// Begin reads iface's counters before a run. iface "" (the interface
// carrying the test is unknown) makes a Span whose End says so.
func Begin(iface string) *Span {
	s := &Span{iface: iface}
	if iface == "" {
		s.err = errors.New("the interface carrying the test is unknown")
		return s
	}
	s.before, s.err = Snapshot(iface)
	return s
}

// End reads the counters after the run and returns their growth as the
// run's document records it. A nil Span gives nil (not read).
func (s *Span) End() *result.NICDelta {
	if s == nil {
		return nil
	}
	if s.err != nil {
		return &result.NICDelta{Interface: s.iface, NotRead: s.err.Error()}
	}
	after, err := Snapshot(s.iface)
	if err != nil {
		return &result.NICDelta{Interface: s.iface, NotRead: err.Error()}
	}
	return ToResult(s.iface, Delta(s.before, after))
}

// ToResult shapes a delta for a run's document.
func ToResult(iface string, d Counters) *result.NICDelta {
	out := &result.NICDelta{Interface: iface, Driver: d.Driver, Deltas: map[string]uint64{}, Sources: map[string]map[string]uint64{}}
	for cause, n := range d.ByCause {
		out.Deltas[string(cause)] = n.Value
		src := map[string]uint64{}
		for k, v := range n.Sources {
			src[k] = v
		}
		out.Sources[string(cause)] = src
	}
	return out
}

// FromResult turns a run's recorded delta back into Counters (for
// doctor's Options.CounterDeltas); the zero Counters when not read.
func FromResult(d *result.NICDelta) Counters {
	c := Counters{ByCause: map[Cause]Count{}, Delta: true}
	if d == nil {
		return c
	}
	c.Driver = d.Driver
	for cause, v := range d.Deltas {
		n := Count{Value: v, Sources: map[string]uint64{}}
		for k, sv := range d.Sources[cause] {
			n.Sources[k] = sv
		}
		c.ByCause[Cause(cause)] = n
	}
	return c
}

// Sum adds deltas (of several runs of one end) cause by cause and
// counter by counter. A cause counts in the sum only if every delta
// reports it: one run that could not read it makes the sum unknown.
func Sum(ds ...Counters) Counters {
	out := Counters{ByCause: map[Cause]Count{}, Delta: true}
	for i, d := range ds {
		if i == 0 {
			out.Driver = d.Driver
			for cause := range d.ByCause {
				out.ByCause[cause] = Count{Sources: map[string]uint64{}}
			}
		}
		for cause, sum := range out.ByCause {
			n, ok := d.ByCause[cause]
			if !ok {
				delete(out.ByCause, cause)
				continue
			}
			sum.Value += n.Value
			for k, v := range n.Sources {
				sum.Sources[k] += v
			}
			out.ByCause[cause] = sum
		}
	}
	return out
}

// RouteIface returns the interface the kernel routes dst through, as the
// calling thread's network namespace sees it: the egress interface of a
// connection to dst.
func RouteIface(dst netip.Addr) (string, error) {
	return inThisNetns(snapshotTimeout, func() (string, error) {
		h, err := openRoute()
		if err != nil {
			return "", err
		}
		defer h.Close()
		rs, err := h.RouteGet(dst.Unmap().AsSlice())
		if err != nil || len(rs) == 0 {
			return "", fmt.Errorf("no route to %s: %v", dst, err)
		}
		l, err := h.LinkByIndex(rs[0].LinkIndex)
		if err != nil {
			return "", fmt.Errorf("the interface of the route to %s: %w", dst, err)
		}
		return l.Attrs().Name, nil
	})
}
