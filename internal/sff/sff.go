// Package sff decodes the memory of pluggable network modules: SFF-8472
// (SFP, SFP+, SFP28: addresses A0h and A2h), SFF-8636 (QSFP+, QSFP28: the
// lower page, upper page 00h and the threshold page 03h) and CMIS 4/5
// (QSFP-DD, OSFP, QSFP112: lower page and pages 00h, 01h, 02h, 10h, 11h in
// banks). It turns raw 128-byte pages, as the kernel's MODULE_EEPROM_GET
// returns them, into what a person reads in `ethtool -m`: identity,
// temperature, supply voltage and per-lane bias, TX and RX optical power
// with the module's own alarm and warning thresholds and flags.
//
// The decoders are pure and hand-written from the specifications (SFF-8024
// for the code tables, SFF-8472 rev 12, SFF-8636 rev 2.10, OIF CMIS 5.x)
// and the kernel's documented MODULE_EEPROM_GET addressing; no library
// decodes CMIS banks or keeps thresholds, and the one that comes closest
// is GPL. Untrusted input (a dead module, a garbled page) gives an *Error
// naming the page and byte, never a panic.
package sff

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Module memory is read at two I2C addresses (7-bit form, as the kernel
// takes them): 0x50 holds identity and, for QSFP and CMIS modules,
// everything else; SFF-8472 modules keep their diagnostics at 0x51.
const (
	AddrA0 uint8 = 0x50
	AddrA2 uint8 = 0x51
)

// PageSize is the size of one read: the kernel's MODULE_EEPROM_GET reads
// at most 128 bytes and never across offset 128.
const PageSize = 128

// Page addresses one 128-byte read of module memory the way
// MODULE_EEPROM_GET does: the lower half of the address space (Offset 0,
// always page 0) or an upper page (Offset 128) of a bank.
type Page struct {
	I2C    uint8
	Page   uint8
	Bank   uint8
	Offset uint8
}

// Lower is the lower page at 0x50: the first read of every module.
var Lower = Page{I2C: AddrA0, Offset: 0}

// Upper returns upper page p of bank b at address 0x50.
func Upper(p, b uint8) Page { return Page{I2C: AddrA0, Page: p, Bank: b, Offset: 128} }

// Name is the page's file name stem in a host tree:
// "<i2c hex>-<page hex, 2 digits>-<bank>-<offset>", e.g. "50-03-0-128".
func (p Page) Name() string {
	return fmt.Sprintf("%02x-%02x-%d-%d", p.I2C, p.Page, p.Bank, p.Offset)
}

// String describes the page as the specifications name it.
func (p Page) String() string {
	switch {
	case p.I2C == AddrA2 && p.Offset == 0:
		return "A2h lower half"
	case p.I2C == AddrA2:
		return "A2h upper half"
	case p.Offset == 0:
		return "lower page"
	case p.Bank != 0:
		return fmt.Sprintf("page %02Xh bank %d", p.Page, p.Bank)
	}
	return fmt.Sprintf("page %02Xh", p.Page)
}

// ParsePageName reads a name written by Page.Name.
func ParsePageName(s string) (Page, error) {
	f := strings.Split(s, "-")
	if len(f) != 4 {
		return Page{}, fmt.Errorf("module page name %q: want <i2c>-<page>-<bank>-<offset>, e.g. 50-00-0-128", s)
	}
	i2c, err1 := strconv.ParseUint(f[0], 16, 7)
	page, err2 := strconv.ParseUint(f[1], 16, 8)
	bank, err3 := strconv.ParseUint(f[2], 10, 8)
	off, err4 := strconv.ParseUint(f[3], 10, 8)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || len(f[1]) != 2 || (off != 0 && off != 128) {
		return Page{}, fmt.Errorf("module page name %q: want <i2c hex>-<page, 2 hex digits>-<bank>-<0 or 128>", s)
	}
	if off == 0 && (page != 0 || bank != 0) {
		return Page{}, fmt.Errorf("module page name %q: the lower half (offset 0) is always page 00 bank 0", s)
	}
	return Page{I2C: uint8(i2c), Page: uint8(page), Bank: uint8(bank), Offset: uint8(off)}, nil
}

// Pages is module memory as read: each page's bytes by address. A page
// that could not be read is absent.
type Pages map[Page][]byte

// Error reports module memory that cannot be decoded, naming the page
// and byte (numbered as in the specifications: 0-127 in the lower half,
// 128-255 in an upper page).
type Error struct {
	Spec string // "SFF-8472", "SFF-8636", "CMIS", or "" before the type is known
	Page Page
	Byte int
	Msg  string
}

func (e *Error) Error() string {
	spec := e.Spec
	if spec != "" {
		spec += " "
	}
	return fmt.Sprintf("module memory: %s%s, byte %d: %s", spec, e.Page, e.Byte, e.Msg)
}

// Module is a decoded module. Pointer fields are nil when the module does
// not report the value or the page holding it was not read.
type Module struct {
	// Spec is the management interface: "SFF-8472", "SFF-8636" or "CMIS".
	Spec string `json:"spec"`
	// Identifier is the form factor from SFF-8024 ("QSFP28", "SFP/SFP+/SFP28", "QSFP-DD").
	Identifier     string `json:"identifier"`
	IdentifierCode uint8  `json:"identifier_code"`
	// Revision is the spec revision the module claims ("SFF-8636 rev 2.7", "CMIS 5.0").
	Revision  string `json:"revision,omitempty"`
	Connector string `json:"connector"`
	// ConnectorCode is the SFF-8024 connector code Connector names.
	ConnectorCode uint8 `json:"connector_code"`
	// Media is the one name a person would give the module ("100G CWDM4",
	// "25GBASE-SR", "400GBASE-DR4"); Compliance lists every code it sets.
	Media      string   `json:"media"`
	Compliance []string `json:"compliance"`
	// MediaClass is what carries the signal, as the module's own media
	// bytes say (MediaOptical, MediaCopper, MediaUnknown); Cable is
	// "passive" or "active" for a cable assembly (a DAC, an AOC) and ""
	// for a module with a separable connector; MediaBasis names the byte
	// and code that decided.
	MediaClass string `json:"media_class"`
	Cable      string `json:"cable,omitempty"`
	MediaBasis string `json:"media_basis"`
	// SpeedMbps is the Ethernet rate Media implies, 0 when unknown: what
	// the module can carry, for comparing with the link speed.
	SpeedMbps    int      `json:"speed_mbps,omitempty"`
	VendorName   string   `json:"vendor_name"`
	VendorOUI    string   `json:"vendor_oui"`
	VendorPN     string   `json:"vendor_pn"`
	VendorRev    string   `json:"vendor_rev"`
	VendorSN     string   `json:"vendor_sn"`
	Date         string   `json:"date_code"`
	WavelengthNM *float64 `json:"wavelength_nm"`
	// State is a CMIS module's state ("ready", "low power", "fault", …).
	State        string   `json:"state,omitempty"`
	TemperatureC *float64 `json:"temperature_c"`
	VoltageV     *float64 `json:"voltage_v"`
	// RXPowerType is "average" or "OMA": what the RX power monitor measures.
	RXPowerType string `json:"rx_power_type,omitempty"`
	// Monitors says whether the module reports live diagnostics at all
	// (passive copper cables do not).
	Monitors bool `json:"monitors"`
	// Calibration is "internal" or "external" (SFF-8472 only).
	Calibration string `json:"calibration,omitempty"`
	Lanes       []Lane `json:"lanes"`
	// Applications is a CMIS module's application advertisement; DataPaths
	// its data paths: which host lanes feed which media lanes.
	Applications []Application `json:"applications,omitempty"`
	DataPaths    []DataPath    `json:"data_paths,omitempty"`
	// Alarms are the module-level alarm and warning flags that are set
	// ("temperature_high_alarm", "voltage_low_warn").
	Alarms     []string    `json:"alarms"`
	Thresholds *Thresholds `json:"thresholds"`
	// Notes say what could not be decoded and why (a page not read, a
	// checksum that does not match).
	Notes []string `json:"notes"`
}

// Lane is one media lane's monitors and flags (an optical lane, or a
// copper one without power monitors).
type Lane struct {
	Lane int `json:"lane"`
	// DataPath is the number of the CMIS data path the lane belongs to (0:
	// none, or not CMIS), HostLanes the host lanes that feed it.
	DataPath  int      `json:"data_path,omitempty"`
	HostLanes []int    `json:"host_lanes,omitempty"`
	RXPowerMW *float64 `json:"rx_power_mw"`
	// RXPowerDBm is nil when RXPowerMW is nil or zero (no light: −∞ dBm).
	RXPowerDBm *float64 `json:"rx_power_dbm"`
	TXPowerMW  *float64 `json:"tx_power_mw"`
	TXPowerDBm *float64 `json:"tx_power_dbm"`
	TXBiasMA   *float64 `json:"tx_bias_ma"`
	RXLOS      *bool    `json:"rx_los"`
	TXLOS      *bool    `json:"tx_los"`
	TXFault    *bool    `json:"tx_fault"`
	RXLOL      *bool    `json:"rx_lol"`
	TXLOL      *bool    `json:"tx_lol"`
	TXDisabled *bool    `json:"tx_disabled,omitempty"`
	// Flags are the lane's alarm and warning flags that are set
	// ("rx_power_low_alarm", "tx_bias_high_warn").
	Flags []string `json:"flags"`
}

// Thresholds are the module's own alarm and warning limits. SFF-8636
// gives one set for all lanes (page 03h), CMIS one set per module (page
// 02h), SFF-8472 one set (A2h bytes 0-39).
type Thresholds struct {
	TemperatureHighAlarmC *float64 `json:"temperature_high_alarm_c"`
	TemperatureLowAlarmC  *float64 `json:"temperature_low_alarm_c"`
	TemperatureHighWarnC  *float64 `json:"temperature_high_warn_c"`
	TemperatureLowWarnC   *float64 `json:"temperature_low_warn_c"`
	VoltageHighAlarmV     *float64 `json:"voltage_high_alarm_v"`
	VoltageLowAlarmV      *float64 `json:"voltage_low_alarm_v"`
	VoltageHighWarnV      *float64 `json:"voltage_high_warn_v"`
	VoltageLowWarnV       *float64 `json:"voltage_low_warn_v"`
	TXBiasHighAlarmMA     *float64 `json:"tx_bias_high_alarm_ma"`
	TXBiasLowAlarmMA      *float64 `json:"tx_bias_low_alarm_ma"`
	TXBiasHighWarnMA      *float64 `json:"tx_bias_high_warn_ma"`
	TXBiasLowWarnMA       *float64 `json:"tx_bias_low_warn_ma"`
	TXPowerHighAlarmMW    *float64 `json:"tx_power_high_alarm_mw"`
	TXPowerLowAlarmMW     *float64 `json:"tx_power_low_alarm_mw"`
	TXPowerHighWarnMW     *float64 `json:"tx_power_high_warn_mw"`
	TXPowerLowWarnMW      *float64 `json:"tx_power_low_warn_mw"`
	RXPowerHighAlarmMW    *float64 `json:"rx_power_high_alarm_mw"`
	RXPowerLowAlarmMW     *float64 `json:"rx_power_low_alarm_mw"`
	RXPowerHighWarnMW     *float64 `json:"rx_power_high_warn_mw"`
	RXPowerLowWarnMW      *float64 `json:"rx_power_low_warn_mw"`
}

// Spec names, as Module.Spec gives them.
const (
	SpecSFF8472 = "SFF-8472"
	SpecSFF8636 = "SFF-8636"
	SpecCMIS    = "CMIS"
)

// specOf says which management interface an SFF-8024 identifier uses.
func specOf(id uint8) string {
	switch id {
	case 0x02, 0x03, 0x0B: // soldered SFP, SFP/SFP+/SFP28, DWDM-SFP
		return SpecSFF8472
	case 0x0C, 0x0D, 0x11: // QSFP, QSFP+, QSFP28
		return SpecSFF8636
	case 0x18, 0x19, 0x1A, 0x1B, 0x1E, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25:
		return SpecCMIS
	}
	return ""
}

// Next returns the pages still to read after those in have, in the order
// ethtool reads them (from what the pages already read say):
//
//   - every module: the lower page, then upper page 00h;
//   - SFF-8472: A2h (0x51) lower and upper halves when A0h byte 92 says
//     diagnostics are implemented and no address change is needed;
//   - SFF-8636: page 03h (thresholds) unless byte 2 says flat memory;
//   - CMIS: pages 01h and 02h unless byte 2 says flat memory, then pages
//     10h and 11h of every bank page 01h byte 142 advertises.
//
// A reader calls Next until it returns nothing it has not tried.
func Next(have Pages) []Page {
	lower, ok := have[Lower]
	if !ok || len(lower) < 3 {
		return []Page{Lower}
	}
	var want []Page
	add := func(p Page) {
		if _, ok := have[p]; !ok {
			want = append(want, p)
		}
	}
	switch specOf(lower[0]) {
	case SpecSFF8472:
		add(Page{I2C: AddrA0, Offset: 128})
		if len(lower) > 92 && lower[92]&0x40 != 0 && lower[92]&0x04 == 0 {
			add(Page{I2C: AddrA2, Offset: 0})
			add(Page{I2C: AddrA2, Offset: 128})
		}
	case SpecSFF8636:
		add(Upper(0, 0))
		if lower[2]&0x04 == 0 {
			add(Upper(3, 0))
		}
	case SpecCMIS:
		add(Upper(0, 0))
		if lower[2]&0x80 != 0 {
			break
		}
		add(Upper(1, 0))
		add(Upper(2, 0))
		if p1, ok := have[Upper(1, 0)]; ok && len(p1) > 142-128 {
			for b := range cmisBanks(p1[142-128]) {
				add(Upper(0x10, uint8(b)))
				add(Upper(0x11, uint8(b)))
			}
		}
	}
	return want
}

// cmisBanks reads page 01h byte 142 bits 1-0: 0 one bank, 1 two, 2 four
// (3 is reserved and read as one).
func cmisBanks(b uint8) int {
	switch b & 0x03 {
	case 1:
		return 2
	case 2:
		return 4
	}
	return 1
}

// Decode decodes module memory. The lower page must be present; other
// pages are decoded when present and noted when missing.
func Decode(pages Pages) (*Module, error) {
	lower, ok := pages[Lower]
	if !ok {
		return nil, &Error{Page: Lower, Byte: 0, Msg: "the lower page was not read"}
	}
	if err := checkAnswered(lower); err != nil {
		return nil, err
	}
	id := lower[0]
	switch specOf(id) {
	case SpecSFF8472:
		return decode8472(pages)
	case SpecSFF8636:
		return decode8636(pages)
	case SpecCMIS:
		return decodeCMIS(pages)
	}
	return nil, &Error{Page: Lower, Byte: 0, Msg: fmt.Sprintf("identifier 0x%02x (%s) is not an SFP, QSFP or CMIS module this decoder reads", id, identifierName(id))}
}

// checkAnswered rejects a lower page that is short or that reads all ones
// or all zeros: what an I2C read of a dead or absent module returns.
func checkAnswered(b []byte) error {
	if len(b) < PageSize {
		return &Error{Page: Lower, Byte: len(b), Msg: fmt.Sprintf("the page is %d bytes, not %d: byte %d and later are missing", len(b), PageSize, len(b))}
	}
	for _, fill := range []byte{0xff, 0x00} {
		all := true
		for _, v := range b {
			if v != fill {
				all = false
				break
			}
		}
		if all {
			return &Error{Page: Lower, Byte: 0, Msg: fmt.Sprintf("bytes 0-127 all read 0x%02x: the module did not answer (a dead or absent module reads like this)", fill)}
		}
	}
	return nil
}

// reader reads fields of one page, checking its length once.
type reader struct {
	spec string
	page Page
	b    []byte
	base int // 0 for a lower half, 128 for an upper page
}

// pageReader returns a reader over page p, or nil and a note when it was
// not read. A page shorter than 128 bytes is an error naming the first
// missing byte.
func pageReader(spec string, pages Pages, p Page) (*reader, error) {
	b, ok := pages[p]
	if !ok {
		return nil, nil
	}
	base := 0
	if p.Offset == 128 {
		base = 128
	}
	if len(b) < PageSize {
		return nil, &Error{Spec: spec, Page: p, Byte: base + len(b), Msg: fmt.Sprintf("the page is %d bytes, not %d: byte %d and later are missing", len(b), PageSize, base+len(b))}
	}
	return &reader{spec: spec, page: p, b: b[:PageSize], base: base}, nil
}

// u8 returns byte n (spec numbering).
func (r *reader) u8(n int) uint8 { return r.b[n-r.base] }

// u16 returns the big-endian word at bytes n, n+1.
func (r *reader) u16(n int) uint16 { return binary.BigEndian.Uint16(r.b[n-r.base:]) }

// s16 returns the signed big-endian word at bytes n, n+1.
func (r *reader) s16(n int) int16 { return int16(r.u16(n)) }

// bit reports bit i of byte n.
func (r *reader) bit(n int, i uint) bool { return r.b[n-r.base]&(1<<i) != 0 }

// text returns bytes [from, to] as a string: printable ASCII kept,
// anything else shown as '?', trailing spaces and NULs trimmed (the specs
// pad with spaces; some vendors pad with NULs).
func (r *reader) text(from, to int) string {
	raw := r.b[from-r.base : to-r.base+1]
	out := make([]byte, 0, len(raw))
	for _, c := range raw {
		switch {
		case c >= 0x20 && c < 0x7f:
			out = append(out, c)
		case c == 0:
			out = append(out, ' ')
		default:
			out = append(out, '?')
		}
	}
	return strings.TrimSpace(string(out))
}

// oui returns bytes from..from+2 as "00:02:c9".
func (r *reader) oui(from int) string {
	b := r.b[from-r.base:]
	return fmt.Sprintf("%02x:%02x:%02x", b[0], b[1], b[2])
}

// date formats an 8-byte SFF date code (YYMMDD then a 2-character lot
// code) as "2019-03-12" plus the lot, or the raw text when it is not one.
func (r *reader) date(from int) string {
	s := r.text(from, from+7)
	if len(s) >= 6 {
		d := s[:6]
		if _, err := strconv.Atoi(d); err == nil {
			out := "20" + d[0:2] + "-" + d[2:4] + "-" + d[4:6]
			if lot := strings.TrimSpace(s[6:]); lot != "" {
				out += " lot " + lot
			}
			return out
		}
	}
	return s
}

// checksum notes when byte at differs from the low 8 bits of the sum of
// bytes [from, at).
func (r *reader) checksum(m *Module, from, at int, what string) {
	var sum uint8
	for n := from; n < at; n++ {
		sum += r.u8(n)
	}
	if got := r.u8(at); got != sum {
		m.Notes = append(m.Notes, fmt.Sprintf("%s byte %d (%s) is 0x%02x but bytes %d-%d sum to 0x%02x: some identity fields may be wrong",
			r.page, at, what, got, from, at-1, sum))
	}
}

// Units shared by all three specifications (SFF-8472 9.2, SFF-8636 6.7,
// CMIS 8.2.5 and 8.9): temperature in 1/256 °C (signed), supply voltage in
// 100 µV, TX bias in 2 µA, optical power in 0.1 µW.

func tempC(raw int16) float64    { return float64(raw) / 256 }
func voltV(raw uint16) float64   { return float64(raw) / 10000 }
func biasMA(raw uint16) float64  { return float64(raw) * 2 / 1000 }
func powerMW(raw uint16) float64 { return float64(raw) / 10000 }

// DBm converts milliwatts to dBm, rounded to 0.01 dB. No light (0 mW or
// less) has no finite dBm value: ok is false.
func DBm(mw float64) (dbm float64, ok bool) {
	if mw <= 0 || math.IsNaN(mw) || math.IsInf(mw, 0) {
		return 0, false
	}
	return math.Round(1000*math.Log10(mw)) / 100, true
}

func ptr[T any](v T) *T { return &v }

// dbmPtr is DBm for a possibly unknown power.
func dbmPtr(mw *float64) *float64 {
	if mw == nil {
		return nil
	}
	if d, ok := DBm(*mw); ok {
		return &d
	}
	return nil
}

// finishLanes fills the dBm fields and empty flag lists.
func finishLanes(m *Module) {
	for i := range m.Lanes {
		l := &m.Lanes[i]
		l.RXPowerDBm = dbmPtr(l.RXPowerMW)
		l.TXPowerDBm = dbmPtr(l.TXPowerMW)
		if l.Flags == nil {
			l.Flags = []string{}
		}
	}
	if m.Lanes == nil {
		m.Lanes = []Lane{}
	}
	if m.Alarms == nil {
		m.Alarms = []string{}
	}
	if m.Notes == nil {
		m.Notes = []string{}
	}
	if m.Compliance == nil {
		m.Compliance = []string{}
	}
}

// flagNames lists the flags set in the 4-bit group (high alarm, low
// alarm, high warning, low warning) for quantity q.
func flagNames(q string, highAlarm, lowAlarm, highWarn, lowWarn bool) []string {
	var out []string
	if highAlarm {
		out = append(out, q+"_high_alarm")
	}
	if lowAlarm {
		out = append(out, q+"_low_alarm")
	}
	if highWarn {
		out = append(out, q+"_high_warn")
	}
	if lowWarn {
		out = append(out, q+"_low_warn")
	}
	return out
}
