package ethtool

import (
	"errors"
	"fmt"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nlenc"
	"golang.org/x/sys/unix"

	"github.com/linerate/linerate/internal/sff"
)

// Client speaks the ethtool netlink family in the network namespace of the
// thread that opened it, with the ioctl as fallback.
type Client struct {
	conn    *genetlink.Conn
	family  uint16
	version uint8
	ops     map[uint8]bool // the family's commands; nil when the kernel did not list them
	famErr  error          // why the family is unusable, nil when it is fine
	io      ioctler
}

// Open connects to generic netlink and looks the ethtool family up. A
// kernel without the family is not an error: requests then fall back to
// the ioctl or fail with ErrNoFamily.
func Open() (*Client, error) {
	conn, err := genetlink.Dial(nil)
	if err != nil {
		return nil, fmt.Errorf("opening generic netlink: %w", err)
	}
	return newClient(conn, &safIoctl{}), nil
}

// newClient wraps conn (a real socket, or genltest's fake in tests).
func newClient(conn *genetlink.Conn, io ioctler) *Client {
	c := &Client{conn: conn, io: io}
	c.lookupFamily()
	return c
}

// Close releases the netlink socket and the ioctl socket.
func (c *Client) Close() error {
	c.io.close()
	return c.conn.Close()
}

// lookupFamily asks the generic netlink controller for the family's ID,
// version and commands (CTRL_CMD_GETFAMILY). genetlink.Conn.GetFamily
// does not return the command list, which says whether the kernel has a
// message at all (an unknown command and a driver without the operation
// both answer EOPNOTSUPP).
func (c *Client) lookupFamily() {
	ae := netlink.NewAttributeEncoder()
	ae.String(ctrlAttrFamilyName, familyName)
	data, _ := ae.Encode()
	msgs, err := c.conn.Execute(genetlink.Message{
		Header: genetlink.Header{Command: ctrlCmdGetFamily, Version: 1}, Data: data,
	}, genlIDCtrl, netlink.Request)
	if err != nil {
		if Errno(err) == unix.ENOENT {
			c.famErr = fmt.Errorf("%w (the kernel has no %q generic netlink family: Linux before 5.6)", ErrNoFamily, familyName)
		} else {
			c.famErr = fmt.Errorf("%w (looking it up: %v)", ErrNoFamily, err)
		}
		return
	}
	if len(msgs) != 1 {
		c.famErr = fmt.Errorf("%w (the controller answered %d messages)", ErrNoFamily, len(msgs))
		return
	}
	id, version, ops, err := parseFamily(msgs[0].Data)
	if err != nil || id == 0 {
		c.famErr = fmt.Errorf("%w (reading the controller's answer: %v)", ErrNoFamily, err)
		return
	}
	c.family, c.version, c.ops = id, version, ops
}

// parseFamily reads a CTRL_CMD_GETFAMILY reply.
func parseFamily(b []byte) (uint16, uint8, map[uint8]bool, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return 0, 0, nil, err
	}
	var (
		id      uint16
		version uint8
		ops     map[uint8]bool
	)
	for ad.Next() {
		switch ad.Type() {
		case ctrlAttrFamilyID:
			id = ad.Uint16()
		case ctrlAttrVersion:
			version = uint8(ad.Uint32())
		case ctrlAttrOps:
			ops = map[uint8]bool{}
			ad.Nested(func(nad *netlink.AttributeDecoder) error {
				for nad.Next() {
					nad.Nested(func(od *netlink.AttributeDecoder) error {
						for od.Next() {
							if od.Type() == ctrlAttrOpID {
								ops[uint8(od.Uint32())] = true
							}
						}
						return nil
					})
				}
				return nil
			})
		}
	}
	return id, version, ops, ad.Err()
}

// has reports whether the kernel has command cmd (and the family).
func (c *Client) has(cmd uint8) error {
	if c.famErr != nil {
		return c.famErr
	}
	if c.ops != nil && !c.ops[cmd] {
		return fmt.Errorf("%w (this kernel has no ETHTOOL_MSG_%s: it is older than the message)", ErrNoFamily, msgNames[cmd])
	}
	return nil
}

// request sends cmd for iface with a header (attribute hdr, flags) and the
// attributes add writes, and returns the single reply's attributes.
func (c *Client) request(cmd uint8, hdr uint16, iface string, flags uint32, add func(*netlink.AttributeEncoder)) ([]byte, error) {
	if err := c.has(cmd); err != nil {
		return nil, err
	}
	ae := netlink.NewAttributeEncoder()
	ae.Nested(hdr, func(h *netlink.AttributeEncoder) error {
		if iface != "" {
			h.String(aHeaderDevName, iface)
		}
		if flags != 0 {
			h.Uint32(aHeaderFlags, flags)
		}
		return nil
	})
	if add != nil {
		add(ae)
	}
	data, err := ae.Encode()
	if err != nil {
		return nil, wrap(msgNames[cmd], iface, err)
	}
	// A SET has no reply of its own: ask for the acknowledgement, which
	// also carries the kernel's refusal and its message.
	nlFlags := netlink.Request
	if cmd == msgChannelsSet || cmd == msgRingsSet {
		nlFlags |= netlink.Acknowledge
	}
	msgs, err := c.conn.Execute(genetlink.Message{
		Header: genetlink.Header{Command: cmd, Version: c.version}, Data: data,
	}, c.family, nlFlags)
	if err != nil {
		return nil, wrap(msgNames[cmd], iface, err)
	}
	if len(msgs) == 0 {
		return nil, &Error{Op: msgNames[cmd], Iface: iface, Msg: "no reply", Err: errors.New("no reply")}
	}
	return msgs[0].Data, nil
}

// parsed wraps a parser's error with the request it answered.
func parsed[T any](cmd uint8, iface string, v T, err error) (T, error) {
	if err != nil {
		var zero T
		return zero, &Error{Op: msgNames[cmd], Iface: iface, Msg: "malformed reply: " + err.Error(), Err: err}
	}
	return v, nil
}

// LinkModes returns the speed, duplex, autonegotiation, lanes and the
// supported, advertised and partner link modes. Replies come in the
// verbose bitset form, so the names are the running kernel's own.
func (c *Client) LinkModes(iface string) (*LinkModes, error) {
	b, err := c.request(msgLinkmodesGet, aLinkmodesHeader, iface, 0, nil)
	if errors.Is(err, ErrNoFamily) {
		lm, ierr := c.io.linkModes(iface)
		return lm, wrap("ETHTOOL_GLINKSETTINGS ioctl", iface, ierr)
	}
	if err != nil {
		return nil, err
	}
	lm, err := parseLinkModes(b)
	return parsed(msgLinkmodesGet, iface, lm, err)
}

// LinkState returns link detection, the extended state and the link-down
// count. There is no ioctl for the extended state.
func (c *Client) LinkState(iface string) (*LinkState, error) {
	b, err := c.request(msgLinkstateGet, aLinkstateHeader, iface, 0, nil)
	if errors.Is(err, ErrNoFamily) {
		return nil, fmt.Errorf("%w: %v", ErrNoIoctl, err)
	}
	if err != nil {
		return nil, err
	}
	ls, err := parseLinkState(b)
	return parsed(msgLinkstateGet, iface, ls, err)
}

// FEC returns the configured and active FEC encodings and, where the
// driver keeps them, the corrected and uncorrectable block counters.
func (c *Client) FEC(iface string) (*FEC, error) {
	b, err := c.request(msgFECGet, aFECHeader, iface, flagStats, nil)
	if errors.Is(err, ErrNoFamily) {
		return nil, fmt.Errorf("%w: %v", ErrNoIoctl, err)
	}
	if err != nil {
		return nil, err
	}
	f, err := parseFEC(b)
	return parsed(msgFECGet, iface, f, err)
}

// StandardStats returns the eth-phy, eth-mac, eth-ctrl and rmon groups the
// driver fills (STATS_GET); the driver counters and pause are separate.
func (c *Client) StandardStats(iface string) (*Stats, error) {
	b, err := c.request(msgStatsGet, aStatsHeader, iface, 0, func(ae *netlink.AttributeEncoder) {
		// A compact bitset without mask: all four groups.
		ae.Nested(aStatsGroups, func(g *netlink.AttributeEncoder) error {
			g.Flag(aBitsetNomask, true)
			g.Uint32(aBitsetSize, 4)
			g.Bytes(aBitsetValue, nlenc.Uint32Bytes(0x0f))
			return nil
		})
	})
	if errors.Is(err, ErrNoFamily) {
		return nil, fmt.Errorf("%w: %v", ErrNoIoctl, err)
	}
	if err != nil {
		return nil, err
	}
	st := &Stats{}
	err = parseStats(b, st)
	return parsed(msgStatsGet, iface, st, err)
}

// DriverStats returns the driver's own counters, `ethtool -S` (the
// ETHTOOL_GSTRINGS/GSTATS ioctl: no netlink message carries them). Names
// are trimmed: cxgb4 pads them with spaces, and its "----Loopback----"
// pseudo-name, which heads a section and counts nothing, is dropped.
func (c *Client) DriverStats(iface string) (map[string]uint64, error) {
	m, err := c.io.driverStats(iface)
	if err != nil {
		return nil, wrap("ETHTOOL_GSTATS ioctl", iface, err)
	}
	return cleanStatNames(m), nil
}

// Pause returns flow control settings and pause frame counters.
func (c *Client) Pause(iface string) (*Pause, error) {
	b, err := c.request(msgPauseGet, aPauseHeader, iface, flagStats, nil)
	if errors.Is(err, ErrNoFamily) {
		p, ierr := c.io.pause(iface)
		return p, wrap("ETHTOOL_GPAUSEPARAM ioctl", iface, ierr)
	}
	if err != nil {
		return nil, err
	}
	p, err := parsePause(b)
	return parsed(msgPauseGet, iface, p, err)
}

// Channels returns the queue counts and maximums (ethtool -l).
func (c *Client) Channels(iface string) (*Channels, error) {
	b, err := c.request(msgChannelsGet, aChannelsHeader, iface, 0, nil)
	if errors.Is(err, ErrNoFamily) {
		ch, ierr := c.io.channels(iface)
		return ch, wrap("ETHTOOL_GCHANNELS ioctl", iface, ierr)
	}
	if err != nil {
		return nil, err
	}
	ch, err := parseChannels(b)
	return parsed(msgChannelsGet, iface, ch, err)
}

// SetChannels changes queue counts (ethtool -L); nil counts are left as
// they are. The kernel refuses counts above the maximums, with a message.
func (c *Client) SetChannels(iface string, n ChannelCounts) error {
	_, err := c.request(msgChannelsSet, aChannelsHeader, iface, 0, func(ae *netlink.AttributeEncoder) {
		put := func(t uint16, v *uint32) {
			if v != nil {
				ae.Uint32(t, *v)
			}
		}
		put(aChannelsRXCount, n.RX)
		put(aChannelsTXCount, n.TX)
		put(aChannelsOtherCount, n.Other)
		put(aChannelsCombinedCount, n.Combined)
	})
	if errors.Is(err, ErrNoFamily) {
		return wrap("ETHTOOL_SCHANNELS ioctl", iface, c.io.setChannels(iface, n))
	}
	return err
}

// Rings returns ring sizes and maximums (ethtool -g).
func (c *Client) Rings(iface string) (*Rings, error) {
	b, err := c.request(msgRingsGet, aRingsHeader, iface, 0, nil)
	if errors.Is(err, ErrNoFamily) {
		r, ierr := c.io.rings(iface)
		return r, wrap("ETHTOOL_GRINGPARAM ioctl", iface, ierr)
	}
	if err != nil {
		return nil, err
	}
	r, err := parseRings(b)
	return parsed(msgRingsGet, iface, r, err)
}

// SetRings changes RX and TX ring sizes (ethtool -G); nil sizes are left
// as they are.
func (c *Client) SetRings(iface string, s RingSizes) error {
	_, err := c.request(msgRingsSet, aRingsHeader, iface, 0, func(ae *netlink.AttributeEncoder) {
		if s.RX != nil {
			ae.Uint32(aRingsRX, *s.RX)
		}
		if s.TX != nil {
			ae.Uint32(aRingsTX, *s.TX)
		}
	})
	if errors.Is(err, ErrNoFamily) {
		return wrap("ETHTOOL_SRINGPARAM ioctl", iface, c.io.setRings(iface, s))
	}
	return err
}

// ModuleEEPROM reads one 128-byte page of module memory. The kernel
// allows at most 128 bytes per request and none across offset 128, which
// a sff.Page always respects.
func (c *Client) ModuleEEPROM(iface string, p sff.Page) ([]byte, error) {
	b, err := c.request(msgModuleEEPROMGet, aEEPROMHeader, iface, 0, func(ae *netlink.AttributeEncoder) {
		ae.Uint32(aEEPROMOffset, uint32(p.Offset))
		ae.Uint32(aEEPROMLength, eepromMaxChunk)
		ae.Uint8(aEEPROMPage, p.Page)
		ae.Uint8(aEEPROMBank, p.Bank)
		ae.Uint8(aEEPROMI2C, p.I2C)
	})
	if err != nil {
		return nil, err
	}
	data, err := parseEEPROM(b)
	return parsed(msgModuleEEPROMGet, iface, data, err)
}

// LinkModeNames returns the running kernel's link-mode names by bit
// (the ETH_SS_LINK_MODES string set), to check LinkModeName against.
func (c *Client) LinkModeNames() (map[int]string, error) {
	b, err := c.request(msgStrsetGet, aStrsetHeader, "", 0, func(ae *netlink.AttributeEncoder) {
		ae.Nested(aStrsetStringsets, func(s *netlink.AttributeEncoder) error {
			s.Nested(aStringsetsStringset, func(set *netlink.AttributeEncoder) error {
				set.Uint32(aStringsetID, ssLinkModes)
				return nil
			})
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	m, err := parseStrset(b)
	return parsed(msgStrsetGet, "", m, err)
}

// DriverName returns the interface's driver (ethtool -i), for the drop
// counters' meaning.
func (c *Client) DriverName(iface string) (string, error) {
	n, err := c.io.driverName(iface)
	return n, wrap("ETHTOOL_GDRVINFO ioctl", iface, err)
}
