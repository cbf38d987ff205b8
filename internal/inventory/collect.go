package inventory

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/prometheus/procfs/sysfs"

	"github.com/linerate/linerate/internal/dcb"
	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/netdev"
)

// Options tunes Collect.
type Options struct {
	// Live holds rtnetlink facts (link kinds, root qdiscs) gathered by the
	// caller with netdev.Query. When nil, Collect reads them from a
	// captured tree's netdev.Path, if it has one.
	Live *netdev.Facts
	// Ethtool, when set, reads an interface's live ethtool facts (link
	// modes, FEC, module memory, counters); Collect calls it for every
	// PCI NIC and for the virtual interfaces EthtoolVirtual accepts. When
	// nil, Collect reads the facts a captured tree holds, if any.
	Ethtool func(iface string) *ethtool.Facts
	// EthtoolVirtual says which virtual interfaces Ethtool is called for.
	EthtoolVirtual func(iface string) bool
	// DCB, when set, reads a PCI NIC's DCB configuration live (package
	// dcb over rtnetlink). When nil, Collect reads what a captured tree
	// holds under linerate/dcb/<iface>/, if anything.
	DCB func(iface string) *dcb.Reading
}

// collector carries one Collect run's state.
type collector struct {
	fs    *hostfs.FS
	sys   sysfs.FS // prometheus/procfs over the same root, for class/net and infiniband
	live  *netdev.Facts
	opts  Options
	notes []string
	// uncaptured are PCI NICs of a captured tree without ethtool facts.
	uncaptured []string
}

// Collect reads the host below fs. It fails only when the root holds no
// network information at all; facts it cannot read become nil fields
// and notes.
func Collect(fs *hostfs.FS, opts Options) (*Inventory, error) {
	if !fs.Exists("sys/class/net") {
		return nil, fmt.Errorf("no network interfaces to inspect: %s is missing (is this the top of a host tree?)", fs.Display("sys/class/net"))
	}
	sfs, err := sysfs.NewFS(fs.Path("sys"))
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", fs.Display("sys"), err)
	}
	c := &collector{fs: fs, sys: sfs, live: opts.Live, opts: opts}
	if c.live == nil && !fs.IsLive() {
		c.live = c.readLiveFacts()
	}
	inv := &Inventory{Sysctl: map[string]any{}, NICs: []NIC{}, Virtual: []NIC{}, GPUs: []GPU{}}
	inv.Host = c.host()
	inv.CPU = c.cpu()
	if err := c.nics(inv); err != nil {
		return nil, err
	}
	inv.GPUs = c.gpus(inv.NICs, len(inv.CPU.NUMANodes))
	inv.Sysctl = c.sysctls()
	if len(c.uncaptured) > 0 {
		c.note("live ethtool facts (link modes, FEC, module EEPROM, NIC counters) of %s were not captured: the tree holds no linerate/ethtool/<iface>/ (it predates them, or was not made by linerate snapshot)",
			strings.Join(c.uncaptured, ", "))
	}
	inv.Notes = c.notes
	if inv.Notes == nil {
		inv.Notes = []string{}
	}
	return inv, nil
}

func (c *collector) note(format string, args ...any) {
	c.notes = append(c.notes, fmt.Sprintf(format, args...))
}

// noteErr records why a fact is missing, unless the file is simply absent
// (absence is normal: not every kernel or device exposes every file).
func (c *collector) noteErr(what string, err error) {
	switch {
	case err == nil, hostfs.IsNotExist(err):
	case hostfs.IsPermission(err):
		c.note("%s: permission denied (run as root)", what)
	default:
		c.note("%s: %v", what, err)
	}
}

func (c *collector) readLiveFacts() *netdev.Facts {
	b, err := c.fs.ReadFile(netdev.Path)
	if err != nil {
		return nil
	}
	f, err := netdev.Parse(b)
	if err != nil {
		c.noteErr("live interface facts", err)
		return nil
	}
	return f
}

func (c *collector) host() Host {
	var h Host
	var err error
	if h.Hostname, err = c.fs.ReadString("proc/sys/kernel/hostname"); err != nil {
		c.noteErr("hostname", err)
	}
	if h.Kernel, err = c.fs.ReadString("proc/sys/kernel/osrelease"); err != nil {
		c.noteErr("kernel release", err)
	}
	procs, err := c.fs.FindProcesses("irqbalance")
	if err != nil {
		c.noteErr("process list (irqbalance)", err)
	}
	for _, p := range procs {
		h.IRQBalance.Running = true
		h.IRQBalance.PIDs = append(h.IRQBalance.PIDs, p.PID)
	}
	return h
}

// bdfRE matches a PCI function address: domain:bus:device.function.
var bdfRE = regexp.MustCompile(`^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

func isBDF(s string) bool { return bdfRE.MatchString(s) }

// cardOf strips the function number: "0000:01:00.1" gives "0000:01:00".
func cardOf(bdf string) string {
	if i := strings.LastIndexByte(bdf, '.'); i > 0 {
		return bdf[:i]
	}
	return bdf
}

// containsToken reports whether name holds tok delimited by characters
// that cannot belong to an interface name, so "eth1" is found in
// "eth1-rx-0" but not in "eth10-rx-0".
func containsToken(name, tok string) bool {
	for i := 0; ; {
		j := strings.Index(name[i:], tok)
		if j < 0 {
			return false
		}
		j += i
		before := j == 0 || !isNameChar(name[j-1])
		end := j + len(tok)
		after := end == len(name) || !isNameChar(name[end])
		if before && after {
			return true
		}
		i = j + 1
	}
}

func isNameChar(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_'
}

func intPtr(v int) *int           { return &v }
func floatPtr(v float64) *float64 { return &v }

// readInt reads an integer attribute, noting why when it cannot.
func (c *collector) readInt(rel, what string) (int, bool) {
	v, err := c.fs.ReadInt(rel)
	if err != nil {
		c.noteErr(what, err)
		return 0, false
	}
	return int(v), true
}

// hexID reads a "0x15b3"-style ID attribute as a lower-case "0x…" string.
func (c *collector) hexID(rel, what string) string {
	v, err := c.fs.ReadInt(rel)
	if err != nil {
		c.noteErr(what, err)
		return ""
	}
	return "0x" + strconv.FormatInt(v, 16)
}

var errNoPCI = errors.New("not a PCI device")

// pciFunctionOf returns the PCI function directory of a net device's
// "device": the device itself, or the parent of a virtio device. Other
// buses (USB, platform) are not walked up: their ancestors' PCI
// functions are controllers, not the NIC.
func pciFunctionOf(dev string) (string, error) {
	base := path.Base(dev)
	if isBDF(base) {
		return dev, nil
	}
	if strings.HasPrefix(base, "virtio") && isBDF(path.Base(path.Dir(dev))) {
		return path.Dir(dev), nil
	}
	return "", errNoPCI
}
