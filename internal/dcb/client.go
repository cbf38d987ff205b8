package dcb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Client speaks DCB over an rtnetlink socket of the calling thread's
// network namespace.
type Client struct {
	c         *netlink.Conn
	deadlines bool // a real socket: every request is bounded by Timeout
}

// Timeout bounds every request: a driver that holds the RTNL lock must
// not hold a doctor run.
const Timeout = 5 * time.Second

// Dial opens a client.
func Dial() (*Client, error) {
	c, err := netlink.Dial(unix.NETLINK_ROUTE, nil)
	if err != nil {
		return nil, fmt.Errorf("opening rtnetlink for DCB: %w", err)
	}
	return &Client{c: c, deadlines: true}, nil
}

// NewClient wraps a connection (tests pass mdlayher/netlink/nltest's,
// which has no deadlines and answers at once).
func NewClient(c *netlink.Conn) *Client { return &Client{c: c} }

// Close closes the socket.
func (cl *Client) Close() error { return cl.c.Close() }

// Error is a failed DCB request: the command, the interface, the errno.
type Error struct {
	Op    string // "DCB_CMD_IEEE_GET", …
	Iface string
	Errno syscall.Errno
	Err   error
}

func (e *Error) Error() string {
	if e.Errno != 0 {
		return fmt.Sprintf("%s %s: %s (%s)", e.Op, e.Iface, errnoName(e.Errno), e.Errno.Error())
	}
	return fmt.Sprintf("%s %s: %v", e.Op, e.Iface, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// ErrorLine is an error as a tree's error file keeps it: the errno name
// first ("EOPNOTSUPP: …"), else the message.
func ErrorLine(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Errno != 0 {
		return errnoName(e.Errno) + ": " + e.Errno.Error()
	}
	return err.Error()
}

// errnoName names an errno as the kernel headers do; 95 is EOPNOTSUPP,
// which x/sys names ENOTSUP.
func errnoName(e syscall.Errno) string {
	if e == unix.EOPNOTSUPP {
		return "EOPNOTSUPP"
	}
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return fmt.Sprintf("errno %d", int(e))
}

// NotSupported reports an interface whose driver has no DCB operations
// (every virtual interface, most NICs without DCB): EOPNOTSUPP, or the
// EINVAL older kernels answered with.
func NotSupported(err error) bool {
	return errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENODEV)
}

func wrap(op, iface string, err error) error {
	if err == nil {
		return nil
	}
	e := &Error{Op: op, Iface: iface, Err: err}
	var en syscall.Errno
	if errors.As(err, &en) {
		e.Errno = en
	}
	return e
}

// request builds an RTM_GETDCB or RTM_SETDCB request: a struct dcbmsg,
// DCB_ATTR_IFNAME, and what add encodes.
func request(typ netlink.HeaderType, cmd uint8, iface string, add func(ae *netlink.AttributeEncoder)) (netlink.Message, error) {
	ae := netlink.NewAttributeEncoder()
	ae.String(attrIfname, iface)
	if add != nil {
		add(ae)
	}
	attrs, err := ae.Encode()
	if err != nil {
		return netlink.Message{}, err
	}
	body := append([]byte{unix.AF_UNSPEC, cmd, 0, 0}, attrs...)
	return netlink.Message{Header: netlink.Header{Type: typ, Flags: netlink.Request}, Data: body}, nil
}

func (cl *Client) execute(m netlink.Message) ([]netlink.Message, error) {
	if cl.deadlines {
		if err := cl.c.SetDeadline(time.Now().Add(Timeout)); err != nil {
			return nil, err
		}
	}
	return cl.c.Execute(m)
}

// Get reads iface's IEEE DCB configuration (DCB_CMD_IEEE_GET).
func (cl *Client) Get(iface string) (*IEEE, error) {
	const op = "DCB_CMD_IEEE_GET"
	m, err := request(unix.RTM_GETDCB, cmdIEEEGet, iface, nil)
	if err != nil {
		return nil, wrap(op, iface, err)
	}
	msgs, err := cl.execute(m)
	if err != nil {
		return nil, wrap(op, iface, err)
	}
	if len(msgs) != 1 {
		return nil, wrap(op, iface, fmt.Errorf("%w: %d replies, want 1", ErrMalformed, len(msgs)))
	}
	c, err := DecodeReply(msgs[0].Data)
	return c, wrap(op, iface, err)
}

// set sends a DCB_CMD_IEEE_SET (or _DEL) with the nested DCB_ATTR_IEEE
// that fill encodes, and reads the kernel's answer: the reply carries the
// operation's result as a u8 DCB_ATTR_IEEE (a negative errno, truncated).
func (cl *Client) set(op string, cmd uint8, iface string, fill func(nae *netlink.AttributeEncoder) error) error {
	m, err := request(unix.RTM_SETDCB, cmd, iface, func(ae *netlink.AttributeEncoder) { ae.Nested(attrIEEE, fill) })
	if err != nil {
		return wrap(op, iface, err)
	}
	msgs, err := cl.execute(m)
	if err != nil {
		return wrap(op, iface, err)
	}
	for _, r := range msgs {
		if len(r.Data) < dcbmsgLen {
			continue
		}
		ad, err := netlink.NewAttributeDecoder(r.Data[dcbmsgLen:])
		if err != nil {
			return wrap(op, iface, fmt.Errorf("%w: %v", ErrMalformed, err))
		}
		for ad.Next() {
			if ad.Type() == attrIEEE && len(ad.Bytes()) == 1 {
				if v := ad.Uint8(); v != 0 {
					return wrap(op, iface, syscall.Errno(256-int(v)))
				}
			}
		}
	}
	return nil
}

// SetPFC enables PFC on exactly the priorities of enabled, keeping the
// rest of the PFC object (cap, delay, MBC) as cur has it.
func (cl *Client) SetPFC(iface string, cur *PFC, enabled []int) error {
	b := make([]byte, ieeePFCLen)
	if cur != nil {
		b[0] = byte(cur.Cap)
		if cur.MBC {
			b[2] = 1
		}
		binary.NativeEndian.PutUint16(b[4:], uint16(cur.Delay))
	}
	b[1] = (&PFC{Enabled: enabled}).Mask()
	return cl.set("DCB_CMD_IEEE_SET pfc", cmdIEEESet, iface, func(nae *netlink.AttributeEncoder) error {
		nae.Bytes(ieeePFC, b)
		return nil
	})
}

// SetTrust sets the trusted APP selectors, in order ("dcb apptrust set
// dev IF order dscp"). Drivers without the operation answer EOPNOTSUPP.
func (cl *Client) SetTrust(iface string, selectors []string) error {
	return cl.set("DCB_CMD_IEEE_SET apptrust", cmdIEEESet, iface, func(nae *netlink.AttributeEncoder) error {
		var err error
		nae.Nested(ieeeAppTrust, func(t *netlink.AttributeEncoder) error {
			for _, s := range selectors {
				n, e := selectorNumber(s)
				if e != nil {
					err = e
					return e
				}
				t.Uint8(appAttrType(n), uint8(n))
			}
			return nil
		})
		return err
	})
}

// AddApp adds APP table entries ("dcb app add dev IF dscp-prio 26:3").
// On mlx5 the first DSCP entry also switches the port to DSCP trust.
func (cl *Client) AddApp(iface string, apps []App) error {
	return cl.apps("DCB_CMD_IEEE_SET app", cmdIEEESet, iface, apps)
}

// DelApp removes APP table entries ("dcb app del …").
func (cl *Client) DelApp(iface string, apps []App) error {
	return cl.apps("DCB_CMD_IEEE_DEL app", cmdIEEEDel, iface, apps)
}

func (cl *Client) apps(op string, cmd uint8, iface string, apps []App) error {
	enc := make([][]byte, 0, len(apps))
	types := make([]uint16, 0, len(apps))
	for _, a := range apps {
		b, typ, err := encodeApp(a)
		if err != nil {
			return wrap(op, iface, err)
		}
		enc, types = append(enc, b), append(types, typ)
	}
	return cl.set(op, cmd, iface, func(nae *netlink.AttributeEncoder) error {
		nae.Nested(ieeeAppTable, func(t *netlink.AttributeEncoder) error {
			for i, b := range enc {
				t.Bytes(types[i], b)
			}
			return nil
		})
		return nil
	})
}

// encodeApp is a struct dcb_app and the attribute type that carries it.
func encodeApp(a App) ([]byte, uint16, error) {
	n, err := selectorNumber(a.Selector)
	if err != nil {
		return nil, 0, err
	}
	if a.Priority < 0 || a.Priority >= Priorities || a.Protocol < 0 || a.Protocol > 0xffff {
		return nil, 0, fmt.Errorf("APP entry %s %d to priority %d: out of range", a.Selector, a.Protocol, a.Priority)
	}
	b := make([]byte, dcbAppLen)
	b[0], b[1] = byte(n), byte(a.Priority)
	binary.NativeEndian.PutUint16(b[2:], uint16(a.Protocol))
	return b, appAttrType(n), nil
}

// appAttrType is the attribute carrying a selector: the kernel's own
// selectors (PCP) go in DCB_ATTR_DCB_APP, IEEE ones in DCB_ATTR_IEEE_APP.
func appAttrType(sel int) uint16 {
	if sel == selPCP {
		return appDCB
	}
	return appIEEE
}
