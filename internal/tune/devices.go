package tune

import (
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/linerate/linerate/internal/dcb"
	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/hostfs"
)

// ErrNotSupported reports a NIC setting its driver does not offer.
var ErrNotSupported = errors.New("not supported by the driver")

// Devices reads and sets the NIC settings that live in the driver rather
// than in files: queue counts and ring sizes (ethtool netlink's
// CHANNELS_GET/SET and RINGS_GET/SET, through internal/ethtool, which falls
// back to the ioctl on kernels without the family) and the MTU
// (rtnetlink). Each works in the network namespace of the thread that
// opened it. Tests fake it.
type Devices interface {
	Channels(iface string) (Channels, error)
	SetChannels(iface string, c Channels) error
	Rings(iface string) (Rings, error)
	SetRings(iface string, r Rings) error
	MTU(iface string) (int, error)
	SetMTU(iface string, mtu int) error
}

// Channels are a NIC's queue counts and their maxima, as `ethtool -l`
// shows them.
type Channels struct {
	RX, TX, Other, Combined             uint32
	MaxRX, MaxTX, MaxOther, MaxCombined uint32
}

// Rings are a NIC's descriptor ring sizes and their maxima (`ethtool -g`).
type Rings struct {
	RX, RXMini, RXJumbo, TX             uint32
	MaxRX, MaxRXMini, MaxRXJumbo, MaxTX uint32
}

// settings is an ordered list of "name value" pairs, the form `ethtool -L`
// and `ethtool -G` take, used to journal and compare device settings.
type settings []setPair

type setPair struct {
	name  string
	value uint64
}

// String writes the pairs as ethtool takes them: "rx 0 tx 0 other 1 combined 8".
func (s settings) String() string {
	parts := make([]string, 0, 2*len(s))
	for _, p := range s {
		parts = append(parts, p.name, strconv.FormatUint(p.value, 10))
	}
	return strings.Join(parts, " ")
}

// parseSettings reads what settings.String wrote.
func parseSettings(s string) (settings, error) {
	f := strings.Fields(s)
	if len(f)%2 != 0 {
		return nil, fmt.Errorf("settings %q: want name value pairs", s)
	}
	var out settings
	for i := 0; i < len(f); i += 2 {
		v, err := strconv.ParseUint(f[i+1], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("settings %q: %s is not a count", s, f[i+1])
		}
		out = append(out, setPair{f[i], v})
	}
	return out, nil
}

// get returns a setting's value.
func (s settings) get(name string) (uint64, bool) {
	i := slices.IndexFunc(s, func(p setPair) bool { return p.name == name })
	if i < 0 {
		return 0, false
	}
	return s[i].value, true
}

// merge returns s with the values of over replacing its own.
func (s settings) merge(over settings) settings {
	out := slices.Clone(s)
	for _, p := range over {
		if i := slices.IndexFunc(out, func(q setPair) bool { return q.name == p.name }); i >= 0 {
			out[i].value = p.value
		} else {
			out = append(out, p)
		}
	}
	return out
}

// equal reports whether a and b hold the same values by name.
func (s settings) equal(b settings) bool {
	if len(s) != len(b) {
		return false
	}
	for _, p := range s {
		if v, ok := b.get(p.name); !ok || v != p.value {
			return false
		}
	}
	return true
}

func (c Channels) settings() settings {
	return settings{{"rx", uint64(c.RX)}, {"tx", uint64(c.TX)}, {"other", uint64(c.Other)}, {"combined", uint64(c.Combined)}}
}

func (c Channels) with(s settings) Channels {
	get := func(name string, v uint32) uint32 {
		if n, ok := s.get(name); ok {
			return uint32(n)
		}
		return v
	}
	c.RX, c.TX, c.Other, c.Combined = get("rx", c.RX), get("tx", c.TX), get("other", c.Other), get("combined", c.Combined)
	return c
}

func (r Rings) settings() settings {
	return settings{{"rx", uint64(r.RX)}, {"rx-mini", uint64(r.RXMini)}, {"rx-jumbo", uint64(r.RXJumbo)}, {"tx", uint64(r.TX)}}
}

func (r Rings) with(s settings) Rings {
	get := func(name string, v uint32) uint32 {
		if n, ok := s.get(name); ok {
			return uint32(n)
		}
		return v
	}
	r.RX, r.RXMini, r.RXJumbo, r.TX = get("rx", r.RX), get("rx-mini", r.RXMini), get("rx-jumbo", r.RXJumbo), get("tx", r.TX)
	return r
}

// Target is where a plan is applied or a journal reverted.
type Target struct {
	// FS is the root: the live "/" or a captured tree.
	FS *hostfs.FS
	// Devices sets driver settings; nil below a captured tree, where
	// changes that need the live NIC are skipped.
	Devices Devices
	// DCB sets PFC and trust over rtnetlink; nil below a captured tree.
	DCB DCB
	// Restart restarts a service (irqbalance, after its configuration
	// changed); nil below a captured tree, where nothing runs.
	Restart func(service string) error
	// KernelIRQs says the root's /proc/irq is kept by the kernel (the
	// live host): after writing an IRQ's smp_affinity_list, the
	// effective_affinity_list the kernel sets is read back and must lie
	// inside the list written. Below a captured tree that file is part of
	// the capture, so NewTarget leaves this off there.
	KernelIRQs bool

	// files, when set, stands in for FS in file-backed changes: tests
	// make a tree's writes fail as the kernel's would (EIO for an IRQ it
	// manages).
	files rootFiles
	close func() error
}

// rootFiles is what file-backed changes read and write below the root.
type rootFiles interface {
	ReadFile(rel string) ([]byte, error)
	WriteFile(rel string, data []byte) error
	ReadCPUList(rel string) ([]int, error)
}

func (t *Target) rootFiles() rootFiles {
	if t.files != nil {
		return t.files
	}
	return t.FS
}

// NewTarget returns the target for fs: the live NIC and systemd when fs is
// the live root, the tree's files alone otherwise. Close releases it.
func NewTarget(fs *hostfs.FS) (*Target, error) {
	t := &Target{FS: fs}
	if !fs.IsLive() {
		return t, nil
	}
	t.KernelIRQs = true
	eth, err := ethtool.Open()
	if err != nil {
		return nil, fmt.Errorf("opening ethtool netlink: %w", err)
	}
	t.Devices = liveDevices{eth: eth}
	t.Restart = restartService
	t.close = eth.Close
	if cl, err := dcb.Dial(); err == nil {
		t.DCB = cl
		t.close = func() error { return errors.Join(eth.Close(), cl.Close()) }
	}
	return t, nil
}

// Close releases the target's sockets.
func (t *Target) Close() error {
	if t.close == nil {
		return nil
	}
	return t.close()
}

// restartService restarts a systemd unit, so that irqbalance reads its
// new ban list. A failure is an error: a pin irqbalance will undo within
// ten seconds is not a pin.
func restartService(name string) error {
	out, err := exec.Command("systemctl", "restart", name+".service").CombinedOutput()
	if err != nil {
		return fmt.Errorf("systemctl restart %s: %w: %s (restart it yourself, then run linerate tune again)", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// liveDevices is Devices over the running kernel.
type liveDevices struct{ eth *ethtool.Client }

// driverErr wraps an ethtool error, mapping EOPNOTSUPP to ErrNotSupported
// and keeping the kernel's own message otherwise.
func driverErr(what, iface string, err error) error {
	if ethtool.IsNotSupported(err) {
		return fmt.Errorf("%s of %s: %w", what, iface, ErrNotSupported)
	}
	return fmt.Errorf("%s of %s: %w", what, iface, err)
}

func u32(p *uint32) uint32 {
	if p == nil {
		return 0
	}
	return *p
}

// changed returns &to when to differs from have: a SET message carries
// only what changes, so that a driver is never asked to set what it
// does not have.
func changed(have, to uint32) *uint32 {
	if have == to {
		return nil
	}
	return &to
}

// Channels reads queue counts with CHANNELS_GET.
func (d liveDevices) Channels(iface string) (Channels, error) {
	c, err := d.eth.Channels(iface)
	if err != nil {
		return Channels{}, driverErr("reading the channels (ethtool -l)", iface, err)
	}
	return Channels{RX: u32(c.RX), TX: u32(c.TX), Other: u32(c.Other), Combined: u32(c.Combined),
		MaxRX: u32(c.RXMax), MaxTX: u32(c.TXMax), MaxOther: u32(c.OtherMax), MaxCombined: u32(c.CombinedMax)}, nil
}

// SetChannels writes the queue counts that differ from the NIC's with
// CHANNELS_SET.
func (d liveDevices) SetChannels(iface string, c Channels) error {
	const what = "setting the channels (ethtool -L)"
	cur, err := d.Channels(iface)
	if err != nil {
		return err
	}
	n := ethtool.ChannelCounts{RX: changed(cur.RX, c.RX), TX: changed(cur.TX, c.TX),
		Other: changed(cur.Other, c.Other), Combined: changed(cur.Combined, c.Combined)}
	if n == (ethtool.ChannelCounts{}) {
		return nil
	}
	if err := d.eth.SetChannels(iface, n); err != nil {
		return driverErr(what, iface, err)
	}
	return nil
}

// Rings reads ring sizes with RINGS_GET.
func (d liveDevices) Rings(iface string) (Rings, error) {
	r, err := d.eth.Rings(iface)
	if err != nil {
		return Rings{}, driverErr("reading the ring sizes (ethtool -g)", iface, err)
	}
	return Rings{RX: u32(r.RX), RXMini: u32(r.RXMini), RXJumbo: u32(r.RXJumbo), TX: u32(r.TX),
		MaxRX: u32(r.RXMax), MaxRXMini: u32(r.RXMiniMax), MaxRXJumbo: u32(r.RXJumboMax), MaxTX: u32(r.TXMax)}, nil
}

// SetRings writes the RX and TX ring sizes that differ from the NIC's with
// RINGS_SET. Tune never changes the mini and jumbo rings; asked to, it
// refuses rather than leave them as they were silently.
func (d liveDevices) SetRings(iface string, r Rings) error {
	const what = "setting the ring sizes (ethtool -G)"
	cur, err := d.Rings(iface)
	if err != nil {
		return fmt.Errorf("%s of %s: %w", what, iface, errors.Unwrap(err))
	}
	if cur.RXMini != r.RXMini || cur.RXJumbo != r.RXJumbo {
		return fmt.Errorf("%s of %s: tune changes only the rx and tx rings, not rx-mini or rx-jumbo", what, iface)
	}
	s := ethtool.RingSizes{RX: changed(cur.RX, r.RX), TX: changed(cur.TX, r.TX)}
	if s == (ethtool.RingSizes{}) {
		return nil
	}
	if err := d.eth.SetRings(iface, s); err != nil {
		return driverErr(what, iface, err)
	}
	return nil
}

// MTU reads the link's MTU over rtnetlink.
func (d liveDevices) MTU(iface string) (int, error) {
	l, err := netlink.LinkByName(iface)
	if err != nil {
		return 0, fmt.Errorf("reading the MTU of %s: %w", iface, err)
	}
	return l.Attrs().MTU, nil
}

// SetMTU sets the link's MTU over rtnetlink.
func (d liveDevices) SetMTU(iface string, mtu int) error {
	l, err := netlink.LinkByName(iface)
	if err != nil {
		return fmt.Errorf("setting the MTU of %s: %w", iface, err)
	}
	if err := netlink.LinkSetMTU(l, mtu); err != nil {
		return fmt.Errorf("setting the MTU of %s to %d: %w (the driver's maximum may be lower)", iface, mtu, err)
	}
	return nil
}
