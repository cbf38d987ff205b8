package dcb

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nltest"
	"golang.org/x/sys/unix"
)

// kernelReply encodes c as the kernel's dcbnl_ieee_fill does (Linux 6.2+):
// struct dcbmsg, DCB_ATTR_IFNAME, DCB_ATTR_IEEE {ETS, PFC, APP_TABLE,
// APP_TRUST_TABLE}, DCB_ATTR_DCBX. dcbx is the raw getdcbx byte, or -1.
func kernelReply(t testing.TB, iface string, c *IEEE, dcbx int) []byte {
	t.Helper()
	ae := netlink.NewAttributeEncoder()
	ae.String(attrIfname, iface)
	ae.Nested(attrIEEE, func(n *netlink.AttributeEncoder) error {
		if e := c.ETS; e != nil {
			b := make([]byte, ieeeETSLen)
			if e.Willing {
				b[0] = 1
			}
			b[1] = byte(e.Cap)
			tsa := map[string]byte{"strict": 0, "cbs": 1, "ets": 2, "vendor": 255}
			for i := range Priorities {
				b[3+i], b[11+i], b[19+i], b[27+i] = byte(e.TCTxBW[i]), byte(e.TCRxBW[i]), tsa[e.TCTSA[i]], byte(e.PrioTC[i])
			}
			n.Bytes(ieeeETS, b)
		}
		if p := c.PFC; p != nil {
			b := make([]byte, ieeePFCLen)
			b[0], b[1] = byte(p.Cap), p.Mask()
			if p.MBC {
				b[2] = 1
			}
			binary.NativeEndian.PutUint16(b[4:], uint16(p.Delay))
			for i := range Priorities {
				binary.NativeEndian.PutUint64(b[8+8*i:], p.Requests[i])
				binary.NativeEndian.PutUint64(b[72+8*i:], p.Indications[i])
			}
			n.Bytes(ieeePFC, b)
		}
		if c.App != nil {
			n.Nested(ieeeAppTable, func(a *netlink.AttributeEncoder) error {
				for _, app := range c.App {
					b, typ, err := encodeApp(app)
					if err != nil {
						t.Fatal(err)
					}
					a.Bytes(typ, b)
				}
				return nil
			})
		}
		if c.Trust != nil {
			n.Nested(ieeeAppTrust, func(a *netlink.AttributeEncoder) error {
				for _, s := range c.Trust {
					sel, err := selectorNumber(s)
					if err != nil {
						t.Fatal(err)
					}
					a.Uint8(appAttrType(sel), uint8(sel))
				}
				return nil
			})
		}
		return nil
	})
	if dcbx >= 0 {
		ae.Uint8(attrDCBX, uint8(dcbx))
	}
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte{unix.AF_UNSPEC, cmdIEEEGet, 0, 0}, b...)
}

// roceHost is a ConnectX port set up for lossless RoCE as NVIDIA's
// guides do it: PFC on priority 3, DSCP 26 to priority 3 and 48 (CNPs) to
// 6, ETS with priority 3 in its own class.
func roceHost() *IEEE {
	host := "firmware"
	return &IEEE{
		PFC: &PFC{Enabled: []int{3}, Cap: 8, Delay: 32768, Requests: [8]uint64{3: 1822}, Indications: [8]uint64{3: 96}},
		ETS: &ETS{Cap: 8, PrioTC: [8]int{0, 1, 2, 3, 4, 5, 6, 7}, TCTxBW: [8]int{10, 10, 10, 40, 10, 10, 10, 0},
			TCRxBW: [8]int{}, TCTSA: [8]string{"ets", "ets", "ets", "ets", "ets", "ets", "ets", "strict"}},
		App:   []App{{Selector: "dscp", Protocol: 26, Priority: 3}, {Selector: "dscp", Protocol: 48, Priority: 6}},
		Trust: []string{"dscp"},
		DCBX:  &host, DCBXVersions: []string{"ieee", "cee"},
	}
}

func TestDecodeReply(t *testing.T) {
	want := roceHost()
	got, err := DecodeReply(kernelReply(t, "enp3s0np0", want, dcbxLLDManaged|dcbxVerIEEE|dcbxVerCEE))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if !got.PFC.Has(3) || got.PFC.Has(0) {
		t.Errorf("Has: %v", got.PFC.Enabled)
	}
	if p, ok := got.DSCPPriority(26); !ok || p != 3 {
		t.Errorf("DSCP 26 → %d %v", p, ok)
	}
}

// TestDecodeReplyAbsent: a driver without apptrust, without ETS and
// without getdcbx gives no such keys, and an empty APP table is given
// empty, not absent.
func TestDecodeReplyAbsent(t *testing.T) {
	in := &IEEE{PFC: &PFC{Enabled: []int{}}, App: []App{}}
	got, err := DecodeReply(kernelReply(t, "eth0", in, -1))
	if err != nil {
		t.Fatal(err)
	}
	if got.ETS != nil || got.Trust != nil || got.DCBX != nil || got.App == nil || len(got.App) != 0 {
		t.Errorf("got %+v", got)
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"pfc":{"enabled":[],"cap":0,"delay":0,"mbc":false,"requests":[0,0,0,0,0,0,0,0],"indications":[0,0,0,0,0,0,0,0]},"app":[]}`; string(b) != want {
		t.Errorf("JSON\n got %s\nwant %s", b, want)
	}
}

func TestDecodeReplyMalformed(t *testing.T) {
	good := kernelReply(t, "eth0", roceHost(), 1)
	short := func(typ uint16, n int) []byte {
		ae := netlink.NewAttributeEncoder()
		ae.Nested(attrIEEE, func(a *netlink.AttributeEncoder) error { a.Bytes(typ, make([]byte, n)); return nil })
		b, _ := ae.Encode()
		return append([]byte{0, cmdIEEEGet, 0, 0}, b...)
	}
	badTC := kernelReply(t, "eth0", &IEEE{ETS: &ETS{PrioTC: [8]int{9}}}, -1)
	for name, b := range map[string][]byte{
		"empty":       nil,
		"other cmd":   append([]byte{0, cmdIEEESet, 0, 0}, good[4:]...),
		"no ieee":     {0, cmdIEEEGet, 0, 0},
		"short pfc":   short(ieeePFC, 20),
		"short ets":   short(ieeeETS, 10),
		"bad tc":      badTC,
		"cut attrs":   good[:len(good)-6],
		"dcbx 2bytes": append(append([]byte{}, good[:len(good)-8]...), 6, 0, attrDCBX, 0, 1, 2, 0, 0),
	} {
		if _, err := DecodeReply(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
}

// FuzzDecodeReply: replies are bounded by their bytes; nothing panics.
func FuzzDecodeReply(f *testing.F) {
	f.Add(kernelReply(f, "enp3s0np0", roceHost(), 0x0a))
	f.Add(kernelReply(f, "eth0", &IEEE{App: []App{}}, -1))
	f.Add([]byte{0, cmdIEEEGet, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeReply(b)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("decoded an invalid configuration: %v", err)
		}
		j, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(j); err != nil {
			t.Fatalf("its own JSON does not parse: %v\n%s", err, j)
		}
	})
}

func TestParse(t *testing.T) {
	want := roceHost()
	files, err := Files(want, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(files[FileIEEE])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip\n got %+v\nwant %+v", got, want)
	}
	for name, doc := range map[string]string{
		"unknown key":    `{"pfc":{"enabled":[3]},"colour":1}`,
		"prio 8":         `{"pfc":{"enabled":[8]}}`,
		"bad selector":   `{"app":[{"selector":"vlan","protocol":1,"priority":3}]}`,
		"bad dcbx":       `{"dcbx":"switch"}`,
		"app prio":       `{"app":[{"selector":"dscp","protocol":26,"priority":9}]}`,
		"trust selector": `{"trust":["colour"]}`,
		"not json":       `{"pfc":`,
		"huge":           `{"app":[` + strings.Repeat(`{"selector":"dscp","protocol":1,"priority":1},`, 2000) + `]}`,
	} {
		if _, err := Parse([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// null and absent are both "not given"; [] is given empty.
	c, err := Parse([]byte(`{"trust":null,"app":[]}`))
	if err != nil || c.Trust != nil || c.App == nil {
		t.Errorf("null/empty: %+v %v", c, err)
	}
}

// TestClientFake checks the requests the client sends against what the
// kernel's dcbnl.c parses, over mdlayher/netlink's test connection.
func TestClientFake(t *testing.T) {
	var got []netlink.Message
	conn := nltest.Dial(func(req []netlink.Message) ([]netlink.Message, error) {
		got = append(got, req...)
		m := req[0]
		switch m.Data[1] {
		case cmdIEEEGet:
			return []netlink.Message{{Header: replyHeader(m, unix.RTM_GETDCB), Data: kernelReply(t, "enp3s0np0", roceHost(), 2)}}, nil
		default:
			ae := netlink.NewAttributeEncoder()
			ae.Uint8(attrIEEE, 0)
			b, _ := ae.Encode()
			return []netlink.Message{{Header: replyHeader(m, unix.RTM_SETDCB), Data: append([]byte{0, m.Data[1], 0, 0}, b...)}}, nil
		}
	})
	cl := NewClient(conn)
	defer cl.Close()
	c, err := cl.Get("enp3s0np0")
	if err != nil {
		t.Fatal(err)
	}
	if *c.DCBX != "firmware" {
		t.Errorf("dcbx %v", *c.DCBX)
	}
	if err := cl.SetPFC("enp3s0np0", c.PFC, []int{3, 4}); err != nil {
		t.Fatal(err)
	}
	if err := cl.SetTrust("enp3s0np0", []string{"dscp", "pcp"}); err != nil {
		t.Fatal(err)
	}
	if err := cl.AddApp("enp3s0np0", []App{{Selector: "dscp", Protocol: 26, Priority: 3}}); err != nil {
		t.Fatal(err)
	}
	if err := cl.DelApp("enp3s0np0", []App{{Selector: "pcp", Protocol: 3, Priority: 3}}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("%d requests", len(got))
	}
	type req struct {
		typ netlink.HeaderType
		cmd uint8
	}
	for i, w := range []req{{unix.RTM_GETDCB, cmdIEEEGet}, {unix.RTM_SETDCB, cmdIEEESet}, {unix.RTM_SETDCB, cmdIEEESet}, {unix.RTM_SETDCB, cmdIEEESet}, {unix.RTM_SETDCB, cmdIEEEDel}} {
		if got[i].Header.Type != w.typ || got[i].Data[1] != w.cmd {
			t.Errorf("request %d: type %d cmd %d, want %d %d", i, got[i].Header.Type, got[i].Data[1], w.typ, w.cmd)
		}
	}
	// The PFC request: pfc_en 0x18, the cap and delay kept.
	ieee := nested(t, got[1].Data[4:], attrIEEE)
	pfc := nested(t, ieee, ieeePFC)
	if len(pfc) != ieeePFCLen || pfc[0] != 8 || pfc[1] != 0x18 || binary.NativeEndian.Uint16(pfc[4:]) != 32768 {
		t.Errorf("pfc request % x", pfc[:8])
	}
	// The trust request: DSCP (5) in DCB_ATTR_IEEE_APP, PCP (255) in DCB_ATTR_DCB_APP.
	trust := nested(t, nested(t, got[2].Data[4:], attrIEEE), ieeeAppTrust)
	if ad, _ := netlink.UnmarshalAttributes(trust); len(ad) != 2 || ad[0].Type != appIEEE || ad[0].Data[0] != 5 || ad[1].Type != appDCB || ad[1].Data[0] != 255 {
		t.Errorf("trust request %+v", ad)
	}
	app := nested(t, nested(t, got[3].Data[4:], attrIEEE), ieeeAppTable)
	if ad, _ := netlink.UnmarshalAttributes(app); len(ad) != 1 || ad[0].Type != appIEEE || ad[0].Data[0] != 5 || ad[0].Data[1] != 3 || binary.NativeEndian.Uint16(ad[0].Data[2:]) != 26 {
		t.Errorf("app request %+v", ad)
	}
}

// TestClientSetError: the kernel reports a set's failure as a u8
// DCB_ATTR_IEEE holding the negative errno.
func TestClientSetError(t *testing.T) {
	conn := nltest.Dial(func(req []netlink.Message) ([]netlink.Message, error) {
		ae := netlink.NewAttributeEncoder()
		ae.Uint8(attrIEEE, uint8(256-int(unix.EOPNOTSUPP)))
		b, _ := ae.Encode()
		return []netlink.Message{{Header: replyHeader(req[0], unix.RTM_SETDCB), Data: append([]byte{0, cmdIEEESet, 0, 0}, b...)}}, nil
	})
	cl := NewClient(conn)
	defer cl.Close()
	err := cl.SetTrust("enp3s0np0", []string{"dscp"})
	if !errors.Is(err, unix.EOPNOTSUPP) || !NotSupported(err) {
		t.Errorf("got %v, want EOPNOTSUPP", err)
	}
	if !strings.HasPrefix(ErrorLine(err), "EOPNOTSUPP") {
		t.Errorf("line %q", ErrorLine(err))
	}
}

// TestLiveNoDCB asks the running kernel about loopback, which has no DCB
// operations: the answer is EOPNOTSUPP, kept as an error file.
func TestLiveNoDCB(t *testing.T) {
	cl, err := Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	r := Read(cl, "lo")
	if !r.NotSupported() {
		t.Fatalf("lo: %+v, want EOPNOTSUPP", r)
	}
	files, err := r.Files()
	if err != nil || !strings.HasPrefix(string(files[FileError]), "EOPNOTSUPP: ") {
		t.Errorf("files %q %v", files, err)
	}
	if _, err := cl.Get("no-such-if0"); !errors.Is(err, unix.ENODEV) {
		t.Errorf("missing interface: %v", err)
	}
}

// replyHeader answers req as the kernel does: same sequence and port.
func replyHeader(req netlink.Message, typ netlink.HeaderType) netlink.Header {
	return netlink.Header{Type: typ, Sequence: req.Header.Sequence, PID: req.Header.PID}
}

func nested(t *testing.T, b []byte, typ uint16) []byte {
	t.Helper()
	attrs, err := netlink.UnmarshalAttributes(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range attrs {
		if a.Type&^netlink.Nested == typ {
			return a.Data
		}
	}
	t.Fatalf("no attribute %d", typ)
	return nil
}
