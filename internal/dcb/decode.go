package dcb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/mdlayher/netlink"
)

// Attribute numbers (include/uapi/linux/dcbnl.h).
const (
	// enum dcbnl_commands
	cmdIEEESet = 20
	cmdIEEEGet = 21
	cmdIEEEDel = 27

	// enum dcbnl_attrs
	attrIfname = 1
	attrIEEE   = 13
	attrDCBX   = 14

	// enum ieee_attrs
	ieeeETS        = 1
	ieeePFC        = 2
	ieeeAppTable   = 3
	ieeeAppTrust   = 11 // DCB_ATTR_DCB_APP_TRUST_TABLE, Linux 6.2+
	ieeeAttrsKnown = 12

	// enum ieee_attrs_app
	appIEEE = 1 // DCB_ATTR_IEEE_APP: a standard selector
	appDCB  = 2 // DCB_ATTR_DCB_APP: the kernel's own (PCP)

	// DCBX capability flags
	dcbxHost        = 0x01
	dcbxLLDManaged  = 0x02
	dcbxVerCEE      = 0x04
	dcbxVerIEEE     = 0x08
	dcbxStatic      = 0x10
	dcbmsgLen       = 4   // struct dcbmsg
	ieeePFCLen      = 136 // struct ieee_pfc: 3 u8, pad, u16 delay, pad, 2 × 8 u64
	ieeeETSLen      = 59  // struct ieee_ets: 3 u8, 7 × 8 u8
	dcbAppLen       = 4   // struct dcb_app: u8 selector, u8 priority, u16 protocol
	maxAppEntries   = 1024
	maxTrustEntries = 16
)

// ErrMalformed reports a reply that does not follow dcbnl.h.
var ErrMalformed = errors.New("malformed DCB message")

// DecodeReply decodes the payload of an RTM_GETDCB reply to
// DCB_CMD_IEEE_GET: a struct dcbmsg, then DCB_ATTR_IFNAME, the nested
// DCB_ATTR_IEEE and DCB_ATTR_DCBX. It is bounded by the message: each
// list is at most as long as the attributes that carry it.
func DecodeReply(b []byte) (*IEEE, error) {
	if len(b) < dcbmsgLen {
		return nil, fmt.Errorf("%w: %d bytes, shorter than struct dcbmsg", ErrMalformed, len(b))
	}
	if b[1] != cmdIEEEGet {
		return nil, fmt.Errorf("%w: command %d, want DCB_CMD_IEEE_GET (%d)", ErrMalformed, b[1], cmdIEEEGet)
	}
	ad, err := netlink.NewAttributeDecoder(b[dcbmsgLen:])
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	c := &IEEE{}
	sawIEEE := false
	for ad.Next() {
		switch ad.Type() {
		case attrIEEE:
			sawIEEE = true
			ad.Nested(func(nad *netlink.AttributeDecoder) error { return decodeIEEE(nad, c) })
		case attrDCBX:
			if len(ad.Bytes()) != 1 {
				return nil, fmt.Errorf("%w: DCB_ATTR_DCBX is %d bytes, want 1", ErrMalformed, len(ad.Bytes()))
			}
			decodeDCBX(ad.Uint8(), c)
		}
	}
	if err := ad.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if !sawIEEE {
		return nil, fmt.Errorf("%w: no DCB_ATTR_IEEE", ErrMalformed)
	}
	return c, nil
}

func decodeIEEE(ad *netlink.AttributeDecoder, c *IEEE) error {
	for ad.Next() {
		b := ad.Bytes()
		switch ad.Type() {
		case ieeePFC:
			p, err := decodePFC(b)
			if err != nil {
				return err
			}
			c.PFC = p
		case ieeeETS:
			e, err := decodeETS(b)
			if err != nil {
				return err
			}
			c.ETS = e
		case ieeeAppTable:
			apps, err := decodeApps(b)
			if err != nil {
				return err
			}
			c.App = apps
		case ieeeAppTrust:
			t, err := decodeTrust(b)
			if err != nil {
				return err
			}
			c.Trust = t
		}
	}
	return nil
}

func decodePFC(b []byte) (*PFC, error) {
	if len(b) < ieeePFCLen {
		return nil, fmt.Errorf("%w: DCB_ATTR_IEEE_PFC is %d bytes, want %d", ErrMalformed, len(b), ieeePFCLen)
	}
	p := &PFC{Enabled: []int{}, Cap: int(b[0]), MBC: b[2] != 0, Delay: int(binary.NativeEndian.Uint16(b[4:]))}
	for i := range Priorities {
		if b[1]&(1<<i) != 0 {
			p.Enabled = append(p.Enabled, i)
		}
		p.Requests[i] = binary.NativeEndian.Uint64(b[8+8*i:])
		p.Indications[i] = binary.NativeEndian.Uint64(b[72+8*i:])
	}
	return p, nil
}

func decodeETS(b []byte) (*ETS, error) {
	if len(b) < ieeeETSLen {
		return nil, fmt.Errorf("%w: DCB_ATTR_IEEE_ETS is %d bytes, want %d", ErrMalformed, len(b), ieeeETSLen)
	}
	e := &ETS{Willing: b[0] != 0, Cap: int(b[1])}
	const txBW, rxBW, tsa, prioTC = 3, 11, 19, 27
	for i := range Priorities {
		e.TCTxBW[i] = int(b[txBW+i])
		e.TCRxBW[i] = int(b[rxBW+i])
		e.PrioTC[i] = int(b[prioTC+i])
		if e.PrioTC[i] >= Priorities {
			return nil, fmt.Errorf("%w: ETS maps priority %d to traffic class %d", ErrMalformed, i, e.PrioTC[i])
		}
		if n, ok := tsaNames[int(b[tsa+i])]; ok {
			e.TCTSA[i] = n
		} else {
			e.TCTSA[i] = fmt.Sprint(b[tsa+i])
		}
	}
	return e, nil
}

func decodeApps(b []byte) ([]App, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil, fmt.Errorf("%w: APP table: %v", ErrMalformed, err)
	}
	apps := []App{}
	for ad.Next() {
		if ad.Type() != appIEEE && ad.Type() != appDCB {
			continue
		}
		v := ad.Bytes()
		if len(v) < dcbAppLen {
			return nil, fmt.Errorf("%w: APP entry of %d bytes, want %d", ErrMalformed, len(v), dcbAppLen)
		}
		if len(apps) >= maxAppEntries {
			return nil, fmt.Errorf("%w: more than %d APP entries", ErrMalformed, maxAppEntries)
		}
		if v[0] == 0 {
			return nil, fmt.Errorf("%w: APP entry of the reserved selector 0", ErrMalformed)
		}
		a := App{Selector: selectorName(int(v[0])), Priority: int(v[1]), Protocol: int(binary.NativeEndian.Uint16(v[2:]))}
		if a.Priority >= Priorities {
			return nil, fmt.Errorf("%w: APP entry %s %d to priority %d", ErrMalformed, a.Selector, a.Protocol, a.Priority)
		}
		apps = append(apps, a)
	}
	if err := ad.Err(); err != nil {
		return nil, fmt.Errorf("%w: APP table: %v", ErrMalformed, err)
	}
	slices.SortStableFunc(apps, func(x, y App) int {
		if x.Selector != y.Selector {
			if x.Selector < y.Selector {
				return -1
			}
			return 1
		}
		return x.Protocol - y.Protocol
	})
	return apps, nil
}

func decodeTrust(b []byte) ([]string, error) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return nil, fmt.Errorf("%w: trust table: %v", ErrMalformed, err)
	}
	out := []string{}
	for ad.Next() {
		if ad.Type() != appIEEE && ad.Type() != appDCB {
			continue
		}
		if len(ad.Bytes()) != 1 {
			return nil, fmt.Errorf("%w: trust entry of %d bytes, want 1", ErrMalformed, len(ad.Bytes()))
		}
		if len(out) >= maxTrustEntries {
			return nil, fmt.Errorf("%w: more than %d trusted selectors", ErrMalformed, maxTrustEntries)
		}
		sel := ad.Uint8()
		if sel == 0 {
			return nil, fmt.Errorf("%w: trusted selector 0 (reserved)", ErrMalformed)
		}
		out = append(out, selectorName(int(sel)))
	}
	if err := ad.Err(); err != nil {
		return nil, fmt.Errorf("%w: trust table: %v", ErrMalformed, err)
	}
	return out, nil
}

// decodeDCBX names the DCBX mode of a getdcbx capability byte.
func decodeDCBX(v uint8, c *IEEE) {
	var mode string
	switch {
	case v&dcbxHost != 0:
		mode = "host"
	case v&dcbxLLDManaged != 0:
		mode = "firmware"
	case v&dcbxStatic != 0:
		mode = "static"
	default:
		return
	}
	c.DCBX = &mode
	if v&dcbxVerIEEE != 0 {
		c.DCBXVersions = append(c.DCBXVersions, "ieee")
	}
	if v&dcbxVerCEE != 0 {
		c.DCBXVersions = append(c.DCBXVersions, "cee")
	}
}
