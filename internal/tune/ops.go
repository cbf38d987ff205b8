package tune

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/cpulist"
	"github.com/linerate/linerate/internal/hostfs"
)

// op reads and writes the value one change is about. Values are raw: a
// file's bytes, or a device's settings ("rx 0 tx 0 other 1 combined 8"),
// so that restoring a prior value restores it exactly.
type op interface {
	read() (string, error)
	write(v string) error
	// same reports whether two values mean the same setting (the kernel
	// prints tcp_rmem with tabs, a user writes spaces).
	same(a, b string) bool
	// check verifies, after a write and its read-back, what the value
	// alone cannot show (an IRQ's effective affinity).
	check(v string) error
}

// errNeedsLive reports a change that needs the live NIC below a tree.
var errNeedsLive = errors.New("needs the live NIC (not file-backed): skipped below a captured tree")

// opFor returns the op that applies c on t.
func (t *Target) opFor(c Change) (op, error) {
	// Load refuses such a journal already; this keeps any other way to a
	// write (a Journal made by hand) from reaching outside the kind's paths.
	if err := checkChange(&c); err != nil {
		return nil, err
	}
	if c.LiveOnly && t.Devices == nil {
		return nil, errNeedsLive
	}
	switch c.Kind {
	case KindSysctl, KindGovernor:
		return &fileOp{fs: t.rootFiles(), rel: hostRel(c.Path), cmp: sameFields}, nil
	case KindIRQ:
		return &irqOp{fileOp: fileOp{fs: t.rootFiles(), rel: hostRel(c.Path), cmp: sameCPUs}, effective: t.KernelIRQs}, nil
	case KindIRQBalance:
		f := &fileOp{fs: t.rootFiles(), rel: hostRel(c.Path), cmp: func(a, b string) bool { return a == b }}
		if t.Restart != nil {
			f.after = func() error { return t.Restart("irqbalance") }
		}
		return f, nil
	case KindMTU:
		return mtuOp{dev: t.Devices, iface: c.Interface}, nil
	case KindChannels:
		return channelsOp{dev: t.Devices, iface: c.Interface}, nil
	case KindRings:
		return ringsOp{dev: t.Devices, iface: c.Interface}, nil
	case KindECN:
		return &fileOp{fs: t.rootFiles(), rel: hostRel(c.Path), cmp: sameFields}, nil
	case KindMRRS:
		return mrrsOp{fs: t.FS, rel: hostRel(c.Path)}, nil
	case KindPFC, KindTrust:
		if t.DCB == nil {
			return nil, errors.New("no DCB connection to the kernel (rtnetlink): PFC and trust cannot change")
		}
		if c.Kind == KindPFC {
			return pfcOp{d: t.DCB, iface: c.Interface}, nil
		}
		return trustOp{d: t.DCB, iface: c.Interface}, nil
	}
	return nil, fmt.Errorf("unknown kind of change %q (a journal from a newer linerate?)", c.Kind)
}

// display shows a raw value on one line: a sysctl's fields joined by
// spaces, irqbalance's file by its IRQBALANCE_ARGS.
func display(k Kind, raw string) string {
	if k == KindIRQBalance {
		return argsLine(raw)
	}
	return strings.Join(strings.Fields(raw), " ")
}

// hostRel turns a host path ("/proc/sys/…") into a root-relative one.
func hostRel(p string) string { return strings.TrimPrefix(p, "/") }

// wantFor is the raw value to write for c, given the prior raw value:
// file values end in a newline, as `echo` writes them; device settings
// keep what the change does not touch; irqbalance's file keeps every
// line but the IRQBALANCE_ARGS assignment.
func wantFor(c Change, prior string) (string, error) {
	switch c.Kind {
	case KindSysctl, KindGovernor, KindIRQ, KindECN:
		return c.After + "\n", nil
	case KindIRQBalance:
		return withArgsLine(prior, c.After), nil
	case KindMTU, KindMRRS, KindPFC, KindTrust:
		return c.After, nil
	}
	cur, err := parseSettings(prior)
	if err != nil {
		return "", err
	}
	over, err := parseSettings(c.After)
	if err != nil {
		return "", err
	}
	return cur.merge(over).String(), nil
}

// fileOp is a change to one file below the root.
type fileOp struct {
	fs    rootFiles
	rel   string
	cmp   func(a, b string) bool
	after func() error // run after each write (a service restart)
}

func (f *fileOp) read() (string, error) {
	b, err := f.fs.ReadFile(f.rel)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func (f *fileOp) write(v string) error {
	if err := f.fs.WriteFile(f.rel, []byte(v)); err != nil {
		return err
	}
	if f.after != nil {
		return f.after()
	}
	return nil
}

func (f *fileOp) same(a, b string) bool { return f.cmp(a, b) }

func (f *fileOp) check(string) error { return nil }

// sameFields compares values field by field, ignoring white space.
func sameFields(a, b string) bool { return slices.Equal(strings.Fields(a), strings.Fields(b)) }

// sameCPUs compares CPU lists ("7-8" is "7,8").
func sameCPUs(a, b string) bool {
	x, err1 := cpulist.Parse(strings.TrimSpace(a))
	y, err2 := cpulist.Parse(strings.TrimSpace(b))
	if err1 != nil || err2 != nil {
		return sameFields(a, b)
	}
	return slices.Equal(x, y)
}

// irqOp writes smp_affinity_list. Where the kernel keeps /proc/irq
// (Target.KernelIRQs: the live host) it then reads effective_affinity_list:
// the CPUs the kernel really routes the IRQ to must lie inside the list
// written. Below a captured tree that file is not kernel-maintained, so
// the read-back there is smp_affinity_list only.
type irqOp struct {
	fileOp
	effective bool
}

func (q *irqOp) check(v string) error {
	if !q.effective {
		return nil
	}
	eff := strings.TrimSuffix(q.rel, "smp_affinity_list") + "effective_affinity_list"
	got, err := q.fs.ReadCPUList(eff)
	if hostfs.IsNotExist(err) {
		return nil // kernels before 4.13
	}
	if err != nil {
		return err
	}
	want, err := cpulist.Parse(strings.TrimSpace(v))
	if err != nil {
		return err
	}
	if out := cpulist.Subtract(got, want); len(out) > 0 {
		return fmt.Errorf("effective affinity is %s, outside the %s written", cpulist.Format(got), cpulist.Format(want))
	}
	return nil
}

// refused reports a write the kernel refuses for an IRQ it manages
// itself (EIO), or one the caller may not change (EPERM): a fact to
// report, not a failure to roll back.
func refused(c Change, err error) bool {
	return c.Kind == KindIRQ && (errors.Is(err, unix.EIO) || errors.Is(err, unix.EPERM))
}

// mtuOp sets an interface's MTU over rtnetlink.
type mtuOp struct {
	dev   Devices
	iface string
}

func (m mtuOp) read() (string, error) {
	v, err := m.dev.MTU(m.iface)
	return strconv.Itoa(v), err
}

func (m mtuOp) write(v string) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return fmt.Errorf("MTU %q is not a number", v)
	}
	return m.dev.SetMTU(m.iface, n)
}

func (m mtuOp) same(a, b string) bool { return strings.TrimSpace(a) == strings.TrimSpace(b) }

func (m mtuOp) check(string) error { return nil }

// channelsOp sets queue counts (ethtool -L).
type channelsOp struct {
	dev   Devices
	iface string
}

func (c channelsOp) read() (string, error) {
	ch, err := c.dev.Channels(c.iface)
	return ch.settings().String(), err
}

func (c channelsOp) write(v string) error {
	s, err := parseSettings(v)
	if err != nil {
		return err
	}
	ch, err := c.dev.Channels(c.iface)
	if err != nil {
		return err
	}
	return c.dev.SetChannels(c.iface, ch.with(s))
}

func (c channelsOp) same(a, b string) bool { return sameSettings(a, b) }

func (c channelsOp) check(string) error { return nil }

// ringsOp sets ring sizes (ethtool -G).
type ringsOp struct {
	dev   Devices
	iface string
}

func (r ringsOp) read() (string, error) {
	rg, err := r.dev.Rings(r.iface)
	return rg.settings().String(), err
}

func (r ringsOp) write(v string) error {
	s, err := parseSettings(v)
	if err != nil {
		return err
	}
	rg, err := r.dev.Rings(r.iface)
	if err != nil {
		return err
	}
	return r.dev.SetRings(r.iface, rg.with(s))
}

func (r ringsOp) same(a, b string) bool { return sameSettings(a, b) }

func (r ringsOp) check(string) error { return nil }

func sameSettings(a, b string) bool {
	x, err1 := parseSettings(a)
	y, err2 := parseSettings(b)
	return err1 == nil && err2 == nil && x.equal(y)
}
