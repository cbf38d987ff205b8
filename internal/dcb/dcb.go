// Package dcb reads and sets a NIC's Data Center Bridging configuration
// over rtnetlink's DCB messages (RTM_GETDCB, RTM_SETDCB; the kernel's
// net/dcb/dcbnl.c): IEEE 802.1Qbb priority flow control with its
// per-priority pause counts, 802.1Qaz ETS, the APP table (which DSCP or
// PCP goes to which priority), the trusted APP selectors and the DCBX
// mode. A captured tree keeps what was read at linerate/dcb/<iface>/.
//
// Hand-written message decoding over mdlayher/netlink's framing and
// attribute decoder: neither vishvananda/netlink nor mdlayher/netlink (nor
// any other Go library we know of) speaks DCB. The structures below are
// include/uapi/linux/dcbnl.h's, in host byte order as the kernel copies
// them.
package dcb

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Priorities is the number of IEEE 802.1p priorities and of traffic
// classes (IEEE_8021QAZ_MAX_TCS).
const Priorities = 8

// IEEE is one interface's DCB configuration as DCB_CMD_IEEE_GET returns
// it, and as linerate/dcb/<iface>/ieee.json keeps it. A part the kernel
// did not give (a driver without that operation) is nil and absent from
// the JSON, never zero.
type IEEE struct {
	PFC *PFC `json:"pfc,omitempty"`
	ETS *ETS `json:"ets,omitempty"`
	// App is the APP table: nil when not given, empty (not nil) when
	// given empty.
	App []App `json:"-"`
	// Trust lists the trusted APP selectors in order of precedence
	// ("dscp", "pcp"), where the driver reports them (dcb apptrust); nil
	// when it does not, empty (not nil) when it trusts none.
	Trust []string `json:"-"`
	// DCBX is who runs DCBX: "host" (an LLDP agent on the host),
	// "firmware" (the NIC's own, LLD-managed) or "static".
	DCBX *string `json:"dcbx,omitempty"`
	// DCBXVersions are the DCBX flavours the engine speaks ("ieee", "cee").
	DCBXVersions []string `json:"dcbx_versions,omitempty"`
}

// ieeeJSON is IEEE as JSON: the lists behind pointers, so that "not
// given" (absent) and "given empty" ([]) stay apart.
type ieeeJSON struct {
	PFC          *PFC      `json:"pfc,omitempty"`
	ETS          *ETS      `json:"ets,omitempty"`
	App          *[]App    `json:"app,omitempty"`
	Trust        *[]string `json:"trust,omitempty"`
	DCBX         *string   `json:"dcbx,omitempty"`
	DCBXVersions []string  `json:"dcbx_versions,omitempty"`
}

// MarshalJSON writes the configuration with absent keys for what was not
// given.
func (c IEEE) MarshalJSON() ([]byte, error) {
	j := ieeeJSON{PFC: c.PFC, ETS: c.ETS, DCBX: c.DCBX, DCBXVersions: c.DCBXVersions}
	if c.App != nil {
		j.App = &c.App
	}
	if c.Trust != nil {
		j.Trust = &c.Trust
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON wrote; a null list is not given.
func (c *IEEE) UnmarshalJSON(b []byte) error {
	var j ieeeJSON
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.DisallowUnknownFields()
	if err := d.Decode(&j); err != nil {
		return err
	}
	*c = IEEE{PFC: j.PFC, ETS: j.ETS, DCBX: j.DCBX, DCBXVersions: j.DCBXVersions}
	if j.App != nil {
		c.App = nonNil(*j.App)
	}
	if j.Trust != nil {
		c.Trust = nonNil(*j.Trust)
	}
	return nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// PFC is the IEEE 802.1Qbb PFC object (struct ieee_pfc).
type PFC struct {
	// Enabled lists the priorities with PFC on, ascending.
	Enabled []int `json:"enabled"`
	// Cap is how many priorities may have PFC at once (pfc_cap).
	Cap int `json:"cap"`
	// Delay is the allowance for the link's round trip in bits.
	Delay int `json:"delay"`
	// MBC is the MACsec bypass capability bit.
	MBC bool `json:"mbc"`
	// Requests are the PFC frames sent per priority (the NIC asked its
	// peer to pause), Indications those received (the peer asked it to).
	Requests    [Priorities]uint64 `json:"requests"`
	Indications [Priorities]uint64 `json:"indications"`
}

// Has reports whether PFC is on for priority p.
func (p *PFC) Has(prio int) bool { return p != nil && slices.Contains(p.Enabled, prio) }

// Mask is Enabled as the pfc_en bitmap.
func (p *PFC) Mask() uint8 {
	var m uint8
	for _, e := range p.Enabled {
		if e >= 0 && e < Priorities {
			m |= 1 << e
		}
	}
	return m
}

// ETS is the IEEE 802.1Qaz ETS object (struct ieee_ets).
type ETS struct {
	Willing bool `json:"willing"`
	Cap     int  `json:"ets_cap"`
	// PrioTC maps each priority to its traffic class.
	PrioTC [Priorities]int `json:"prio_tc"`
	// TCTxBW and TCRxBW are each class's bandwidth share in percent.
	TCTxBW [Priorities]int `json:"tc_tx_bw"`
	TCRxBW [Priorities]int `json:"tc_rx_bw"`
	// TCTSA is each class's transmission selection algorithm: "strict",
	// "cbs", "ets", "vendor" or the number of a reserved one.
	TCTSA [Priorities]string `json:"tc_tsa"`
}

// App is one APP table entry: traffic matching Selector and Protocol
// (DSCP 26, say) goes to Priority.
type App struct {
	// Selector is "ethertype", "stream" (TCP/SCTP port), "dgram" (UDP/DCCP
	// port), "port" (any), "dscp", "pcp", or the number of another.
	Selector string `json:"selector"`
	Protocol int    `json:"protocol"`
	Priority int    `json:"priority"`
}

// Selector numbers (IEEE 802.1Qaz; 255 is the kernel's PCP selector).
const (
	selEthertype = 1
	selStream    = 2
	selDgram     = 3
	selAny       = 4
	selDSCP      = 5
	selPCP       = 255
)

var selectorNames = map[int]string{selEthertype: "ethertype", selStream: "stream", selDgram: "dgram", selAny: "port", selDSCP: "dscp", selPCP: "pcp"}

// selectorName names an APP selector number.
func selectorName(n int) string {
	if s, ok := selectorNames[n]; ok {
		return s
	}
	return fmt.Sprint(n)
}

// selectorNumber is selectorName's inverse.
func selectorNumber(s string) (int, error) {
	for n, name := range selectorNames {
		if name == s {
			return n, nil
		}
	}
	var n int
	if _, err := fmt.Sscan(s, &n); err == nil && n > 0 && n < 256 {
		return n, nil
	}
	return 0, fmt.Errorf("unknown APP selector %q (want ethertype, stream, dgram, port, dscp or pcp)", s)
}

var tsaNames = map[int]string{0: "strict", 1: "cbs", 2: "ets", 255: "vendor"}

// DSCPPriority returns the priority the APP table sends DSCP d to, and
// whether an entry says so.
func (c *IEEE) DSCPPriority(d int) (int, bool) {
	for _, a := range c.App {
		if a.Selector == "dscp" && a.Protocol == d {
			return a.Priority, true
		}
	}
	return 0, false
}

// HasSelector reports whether the APP table holds an entry of selector s.
func (c *IEEE) HasSelector(s string) bool {
	return slices.ContainsFunc(c.App, func(a App) bool { return a.Selector == s })
}

// Validate checks what a captured file may not hold: priorities and
// traffic classes outside 0-7, unknown selectors or DCBX modes.
func (c *IEEE) Validate() error {
	var errs []string
	prio := func(what string, p int) {
		if p < 0 || p >= Priorities {
			errs = append(errs, fmt.Sprintf("%s %d is not a priority (0-7)", what, p))
		}
	}
	if c.PFC != nil {
		for _, e := range c.PFC.Enabled {
			prio("pfc.enabled", e)
		}
	}
	if c.ETS != nil {
		for _, tc := range c.ETS.PrioTC {
			prio("ets.prio_tc", tc)
		}
	}
	for _, a := range c.App {
		prio("app priority", a.Priority)
		if _, err := selectorNumber(a.Selector); err != nil {
			errs = append(errs, err.Error())
		}
		if a.Protocol < 0 || a.Protocol > 0xffff {
			errs = append(errs, fmt.Sprintf("app protocol %d out of range", a.Protocol))
		}
	}
	for _, t := range c.Trust {
		if _, err := selectorNumber(t); err != nil {
			errs = append(errs, "trust: "+err.Error())
		}
	}
	if c.DCBX != nil && !slices.Contains([]string{"host", "firmware", "static"}, *c.DCBX) {
		errs = append(errs, fmt.Sprintf("dcbx %q is not host, firmware or static", *c.DCBX))
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// Dir is where a host tree keeps an interface's DCB facts, beside sys/
// and proc/.
func Dir(iface string) string { return "linerate/dcb/" + iface }

// Files below Dir: the configuration read, or the error that reading it
// met (one line: the errno name, then the kernel's message if any).
const (
	FileIEEE  = "ieee.json"
	FileError = "error"
)

// Files returns what a tree keeps for one interface: ieee.json for a
// configuration, or error for a failed read.
func Files(c *IEEE, readErr error) (map[string][]byte, error) {
	if readErr != nil {
		return map[string][]byte{FileError: []byte(ErrorLine(readErr) + "\n")}, nil
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", FileIEEE, err)
	}
	return map[string][]byte{FileIEEE: append(b, '\n')}, nil
}

// maxFile bounds ieee.json: a full APP table (64 DSCPs, a few ports) is
// under 8 KiB.
const maxFile = 64 << 10

// Parse reads an ieee.json, strictly: unknown fields and values outside
// their ranges are errors, so a damaged capture is named, not guessed at.
func Parse(b []byte) (*IEEE, error) {
	if len(b) > maxFile {
		return nil, fmt.Errorf("%d bytes, more than %d", len(b), maxFile)
	}
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.DisallowUnknownFields()
	var c IEEE
	if err := d.Decode(&c); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}
