package ethtool

import (
	"strings"
	"sync"
	"unsafe"

	saf "github.com/safchain/ethtool"
	"golang.org/x/sys/unix"
)

// ioctler is the SIOCETHTOOL ioctl: the only source of driver counters,
// and the fallback on kernels without the netlink messages. Tests swap it
// for a fake.
type ioctler interface {
	driverStats(iface string) (map[string]uint64, error)
	driverName(iface string) (string, error)
	channels(iface string) (*Channels, error)
	setChannels(iface string, n ChannelCounts) error
	rings(iface string) (*Rings, error)
	setRings(iface string, s RingSizes) error
	pause(iface string) (*Pause, error)
	linkModes(iface string) (*LinkModes, error)
	moduleEEPROM(iface string) ([]byte, error)
	close()
}

// safIoctl uses github.com/safchain/ethtool, opened on first use (a
// socket in the caller's network namespace).
type safIoctl struct {
	once sync.Once
	e    *saf.Ethtool
	err  error
}

func (s *safIoctl) get() (*saf.Ethtool, error) {
	s.once.Do(func() { s.e, s.err = saf.NewEthtool() })
	return s.e, s.err
}

func (s *safIoctl) close() {
	if s.e != nil {
		s.e.Close()
	}
}

func (s *safIoctl) driverStats(iface string) (map[string]uint64, error) {
	e, err := s.get()
	if err != nil {
		return nil, err
	}
	return e.Stats(iface)
}

func (s *safIoctl) driverName(iface string) (string, error) {
	e, err := s.get()
	if err != nil {
		return "", err
	}
	return e.DriverName(iface)
}

// nz returns a pointer to v, or nil for 0 (the ioctl's "not present").
func nz(v uint32) *uint32 {
	if v == 0 {
		return nil
	}
	return &v
}

func (s *safIoctl) channels(iface string) (*Channels, error) {
	e, err := s.get()
	if err != nil {
		return nil, err
	}
	c, err := e.GetChannels(iface)
	if err != nil {
		return nil, err
	}
	// As the netlink message does, report a kind only when it has a maximum.
	out := &Channels{RXMax: nz(c.MaxRx), TXMax: nz(c.MaxTx), OtherMax: nz(c.MaxOther), CombinedMax: nz(c.MaxCombined)}
	if c.MaxRx > 0 {
		out.RX = ptr(c.RxCount)
	}
	if c.MaxTx > 0 {
		out.TX = ptr(c.TxCount)
	}
	if c.MaxOther > 0 {
		out.Other = ptr(c.OtherCount)
	}
	if c.MaxCombined > 0 {
		out.Combined = ptr(c.CombinedCount)
	}
	return out, nil
}

func (s *safIoctl) setChannels(iface string, n ChannelCounts) error {
	e, err := s.get()
	if err != nil {
		return err
	}
	c, err := e.GetChannels(iface)
	if err != nil {
		return err
	}
	set := func(dst *uint32, v *uint32) {
		if v != nil {
			*dst = *v
		}
	}
	set(&c.RxCount, n.RX)
	set(&c.TxCount, n.TX)
	set(&c.OtherCount, n.Other)
	set(&c.CombinedCount, n.Combined)
	_, err = e.SetChannels(iface, c)
	return err
}

func (s *safIoctl) rings(iface string) (*Rings, error) {
	e, err := s.get()
	if err != nil {
		return nil, err
	}
	r, err := e.GetRing(iface)
	if err != nil {
		return nil, err
	}
	out := &Rings{RXMax: nz(r.RxMaxPending), RXMiniMax: nz(r.RxMiniMaxPending), RXJumboMax: nz(r.RxJumboMaxPending), TXMax: nz(r.TxMaxPending)}
	if r.RxMaxPending > 0 {
		out.RX = ptr(r.RxPending)
	}
	if r.TxMaxPending > 0 {
		out.TX = ptr(r.TxPending)
	}
	return out, nil
}

func (s *safIoctl) setRings(iface string, sz RingSizes) error {
	e, err := s.get()
	if err != nil {
		return err
	}
	r, err := e.GetRing(iface)
	if err != nil {
		return err
	}
	if sz.RX != nil {
		r.RxPending = *sz.RX
	}
	if sz.TX != nil {
		r.TxPending = *sz.TX
	}
	_, err = e.SetRing(iface, r)
	return err
}

func (s *safIoctl) pause(iface string) (*Pause, error) {
	e, err := s.get()
	if err != nil {
		return nil, err
	}
	p, err := e.GetPause(iface)
	if err != nil {
		return nil, err
	}
	return &Pause{Autoneg: ptr(p.Autoneg != 0), RX: ptr(p.RxPause != 0), TX: ptr(p.TxPause != 0)}, nil
}

func (s *safIoctl) moduleEEPROM(iface string) ([]byte, error) {
	e, err := s.get()
	if err != nil {
		return nil, err
	}
	return e.ModuleEeprom(iface)
}

// linkModes is the ETHTOOL_GLINKSETTINGS ioctl, hand-written: safchain's
// GetLinkSettings sizes its masks for 96 link-mode bits and, on a kernel
// with more, prints a warning on standard output (which would corrupt
// `doctor --json`) before falling back to the 32-bit ETHTOOL_GSET.
func (s *safIoctl) linkModes(iface string) (*LinkModes, error) {
	if len(iface) >= unix.IFNAMSIZ {
		return nil, unix.EINVAL
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	// struct ethtool_link_settings (48 bytes) followed by three masks of
	// nwords 32-bit words: supported, advertising, lp_advertising. The
	// first call, with nwords 0, makes the kernel answer -nwords.
	var req struct {
		cmd                         uint32
		speed                       uint32
		duplex, port, phyAddr, an   uint8
		mdio, mdix, mdixCtrl        uint8
		nwords                      int8
		transceiver, msCfg, msState uint8
		rateMatching                uint8
		reserved                    [7]uint32
		masks                       [3 * 8]uint32
	}
	// struct ifreq: the name, then (in its union) the data pointer, kept
	// as a pointer so that the collector and stack copying see it.
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data unsafe.Pointer
		_    [16]byte
	}
	copy(ifr.name[:], iface)
	ifr.data = unsafe.Pointer(&req)
	call := func() error {
		_, _, en := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
		if en != 0 {
			return en
		}
		return nil
	}
	req.cmd = unix.ETHTOOL_GLINKSETTINGS
	if err := call(); err != nil {
		return nil, err
	}
	n := int(-req.nwords)
	if n <= 0 || n > 8 {
		return nil, unix.EPROTO
	}
	req.cmd, req.nwords = unix.ETHTOOL_GLINKSETTINGS, int8(n)
	if err := call(); err != nil {
		return nil, err
	}
	bits := func(words []uint32) []string {
		var out []string
		for i := range 32 * len(words) {
			if words[i/32]&(1<<(i%32)) != 0 {
				out = append(out, LinkModeName(i))
			}
		}
		return out
	}
	lm := &LinkModes{Duplex: duplexName(req.duplex), Autoneg: req.an == 1, Source: "ioctl"}
	if req.speed != speedUnknown && req.speed != 0 {
		lm.SpeedMbps = ptr(int(req.speed))
	}
	lm.Supported, lm.SupportedFEC = splitModes(bits(req.masks[0:n]))
	lm.Advertised, lm.AdvertisedFEC = splitModes(bits(req.masks[n : 2*n]))
	lm.PartnerAdvertised, lm.PartnerFEC = splitModes(bits(req.masks[2*n : 3*n]))
	return lm, nil
}

// cleanStatNames trims driver counter names and drops section headings.
func cleanStatNames(m map[string]uint64) map[string]uint64 {
	out := make(map[string]uint64, len(m))
	for k, v := range m {
		k = strings.TrimSpace(k)
		if k == "" || strings.HasPrefix(k, "---") {
			continue
		}
		out[k] = v
	}
	return out
}
