package sff

import (
	"fmt"
	"math/bits"
	"slices"
)

// CMIS 4.0/5.x (QSFP-DD, OSFP, QSFP112, SFP-DD) memory map. Lower page:
//
//	0 identifier, 1 revision (major.minor nibbles), 2 bit 7 flat memory,
//	3 bits 3-1 module state, 9 module flags (bits 0-3 temperature high alarm,
//	low alarm, high warning, low warning; bits 4-7 the same for Vcc),
//	14-15 temperature, 16-17 Vcc, 85 media type, 86-117 application
//	descriptors 1-8 (4 bytes each: host interface code, media interface
//	code, host lane count in bits 7-4 and media lane count in bits 3-0 of
//	the third, host lane assignment options in the fourth; a host interface
//	code of FFh ends the list)
//
// Page 00h: 129-144 vendor, 145-147 OUI, 148-163 PN, 164-165 revision,
// 166-181 SN, 182-189 date, 203 connector, 212 media interface
// technology, 222 checksum of 128-221.
// Page 01h: 138-139 wavelength (0.05 nm), 142 bits 1-0 banks, 151 bit 4
// RX power is average (else OMA), 159 module monitors supported, 160
// lane monitors supported (bit 0 TX bias, 1 TX power, 2 RX power; bits
// 4-3 TX bias scale), 176-190 media lane assignment options of
// applications 1-15, 223-250 application descriptors 9-15 (as 86-117,
// without the lane assignment byte's meaning changing).
// Page 02h: thresholds (high alarm, low alarm, high warning, low warning):
// temperature 128-135, Vcc 136-143, TX power 176-183, TX bias 184-191,
// RX power 192-199.
// Page 10h (per bank): 130 TX output disabled, a bit per lane.
// Page 11h (per bank of 8 lanes): 128-131 data path state per host lane
// (a nibble each, the odd lane in bits 3-0), 135 TX fault, 136 TX LOS,
// 137 TX CDR LOL, 139-142 TX power flags, 143-146 TX bias flags, 147 RX
// LOS, 148 RX CDR LOL, 149-152 RX power flags (each a bit per lane),
// 154-169 TX power, 170-185 TX bias, 186-201 RX power (two bytes per
// lane), 206-213 the active control set's data path configuration per
// host lane (AppSel in bits 7-4, DataPathID in bits 3-1).
//
// Lanes: the monitors of page 11h are per media lane (the optical or
// electrical lanes toward the far end), and so are Module.Lanes; TX LOS
// and TX CDR LOL watch the host lanes (the NIC's SerDes). An application
// carries HostLanes host lanes into MediaLanes media lanes; its instances
// (data paths) start at the host lanes its host lane assignment options
// allow, and the n-th of those feeds the media lanes from the n-th start
// its media lane assignment options allow. A QSFP-DD 2x100G-LR4 runs two
// instances of 100GBASE-LR4 over CAUI-4: host lanes 1-4 feed media lanes
// 1-4 and host lanes 5-8 media lanes 5-8.
//
// TX bias scaling (page 01h byte 160 bits 4-3, "TxBiasCurrentScalingFactor"):
// CMIS 5.2 defines 00b ×1, 01b ×2, 10b ×4 as a multiplier of the 2 µA
// step, for the monitor and the thresholds alike. (ethtool 6.x shifts the
// raw value right instead, which divides; the spec text multiplies, and
// so does this decoder.)

// Application is one entry of a CMIS module's application advertisement:
// a host electrical interface carried into a media interface, with how
// many lanes each takes and where its instances may start.
type Application struct {
	// AppSel is the application's number (1-15) in the advertisement.
	AppSel    int    `json:"appsel"`
	HostCode  uint8  `json:"host_code"`
	Host      string `json:"host_interface"`
	MediaCode uint8  `json:"media_code"`
	Media     string `json:"media_interface"`
	// HostLanes and MediaLanes are the lanes one instance takes.
	HostLanes  int `json:"host_lanes"`
	MediaLanes int `json:"media_lanes"`
	// HostStarts and MediaStarts are the lanes (from 1) where instances
	// may start; MediaStarts is empty when page 01h was not read.
	HostStarts  []int `json:"host_starts"`
	MediaStarts []int `json:"media_starts"`
}

// DataPath is an instance of an application: the host lanes that feed
// it and the media lanes it drives.
type DataPath struct {
	// Number counts the data paths from 1, in host lane order.
	Number int    `json:"number"`
	AppSel int    `json:"appsel"`
	Host   string `json:"host_interface"`
	Media  string `json:"media_interface"`
	// HostLanes and MediaLanes are lane numbers, from 1.
	HostLanes  []int `json:"host_lanes"`
	MediaLanes []int `json:"media_lanes"`
	// State is the data path's state as its first host lane reports it
	// ("activated", "deactivated", …), "" when page 11h was not read.
	State string `json:"state,omitempty"`
	// Configured is true when the module's active control set (page 11h)
	// sets this data path up; false when it is the default application's
	// instance, inferred from the advertisement alone.
	Configured bool `json:"configured"`
}

// cmisState is lower page byte 3 bits 3-1.
func cmisState(v uint8) string {
	switch v {
	case 1:
		return "low power"
	case 2:
		return "powering up"
	case 3:
		return "ready"
	case 4:
		return "powering down"
	case 5:
		return "fault"
	}
	return fmt.Sprintf("state %d", v)
}

// dataPathState is a nibble of page 11h bytes 128-131 (CMIS 5.2 Table
// 8-66).
func dataPathState(v uint8) string {
	switch v {
	case 1:
		return "deactivated"
	case 2:
		return "initializing"
	case 3:
		return "deinitializing"
	case 4:
		return "activated"
	case 5:
		return "TX turning on"
	case 6:
		return "TX turning off"
	case 7:
		return "initialized"
	}
	return fmt.Sprintf("state %d", v)
}

// cmisBiasScale is the multiplier of page 01h byte 160 bits 4-3.
func cmisBiasScale(b uint8) float64 {
	switch (b >> 3) & 0x03 {
	case 1:
		return 2
	case 2:
		return 4
	}
	return 1
}

// defaultLanes is the media lane count of a form factor whose
// application advertisement does not say.
func defaultLanes(id uint8) int {
	switch id {
	case 0x1E: // QSFP+ with CMIS
		return 4
	case 0x1A, 0x1F: // SFP-DD
		return 2
	case 0x20: // SFP+ with CMIS
		return 1
	}
	return 8
}

// maxCMISLanes bounds the media lanes: four banks of eight.
const maxCMISLanes = 32

// laneBits returns the lanes (from 1) whose bits are set in v.
func laneBits(v uint8) []int {
	var out []int
	for v != 0 {
		i := bits.TrailingZeros8(v)
		out = append(out, i+1)
		v &^= 1 << i
	}
	return out
}

// applications reads the application advertisement: descriptors 1-8 from
// the lower page, 9-15 from page 01h, up to the end mark (host interface
// code FFh) or an unused descriptor (00h).
func applications(lo, p01 *reader, mediaType uint8) []Application {
	var apps []Application
	for sel := 1; sel <= 15; sel++ {
		var r *reader
		base := 0
		switch {
		case sel <= 8:
			r, base = lo, 86+4*(sel-1)
		case p01 != nil:
			r, base = p01, 223+4*(sel-9)
		default:
			return apps
		}
		host := r.u8(base)
		if host == 0xFF || host == 0x00 {
			break
		}
		counts := r.u8(base + 2)
		a := Application{AppSel: sel, HostCode: host, Host: hostInterfaceName(host),
			MediaCode: r.u8(base + 1), Media: cmisMediaName(mediaType, r.u8(base+1)),
			HostLanes: int(counts >> 4), MediaLanes: int(counts & 0x0f),
			HostStarts: laneBits(r.u8(base + 3)), MediaStarts: []int{}}
		if len(a.HostStarts) == 0 {
			a.HostStarts = []int{1}
		}
		if p01 != nil {
			a.MediaStarts = laneBits(p01.u8(176 + sel - 1))
		}
		apps = append(apps, a)
	}
	return apps
}

// mediaStart returns the first media lane of the instance of a that
// starts at host lane h: the n-th media start for the n-th host start.
// Without media lane options (page 01h not read), instances are taken to
// sit side by side from media lane 1.
func (a Application) mediaStart(h int) int {
	n := slices.Index(a.HostStarts, h)
	if n < 0 {
		n = (h - 1) / max(1, a.HostLanes)
	}
	if n < len(a.MediaStarts) {
		return a.MediaStarts[n]
	}
	return 1 + n*a.MediaLanes
}

// span returns lanes from..from+n-1.
func span(from, n int) []int {
	out := make([]int, 0, n)
	for i := range n {
		out = append(out, from+i)
	}
	return out
}

// mediaLaneCount is the number of media lanes the module supports across
// every application and every instance the advertisement allows.
func mediaLaneCount(apps []Application, id uint8) int {
	n := 0
	for _, a := range apps {
		if a.MediaLanes == 0 {
			continue
		}
		for _, h := range a.HostStarts {
			n = max(n, a.mediaStart(h)+a.MediaLanes-1)
		}
	}
	if n == 0 {
		return defaultLanes(id)
	}
	return min(n, maxCMISLanes)
}

// dataPaths reads the active control set of page 11h (every bank read):
// host lanes with the same AppSel and DataPathID form one data path,
// whose media lanes follow from the application. Lanes without an
// application (AppSel 0) are unused. With no control set read, or none
// configured (a module in low power), the default application's
// instances are reported, marked not configured.
func dataPaths(pages Pages, apps []Application, hostLanes int) []DataPath {
	byApp := map[int]Application{}
	for _, a := range apps {
		byApp[a.AppSel] = a
	}
	type key struct{ bank, app, dpid int }
	groups := map[key][]int{}
	var order []key
	states := map[int]string{}
	for bank := 0; bank*8 < max(hostLanes, 8) && bank < maxCMISLanes/8; bank++ {
		b, ok := pages[Upper(0x11, uint8(bank))]
		if !ok || len(b) < PageSize {
			continue
		}
		for i := range 8 {
			lane := 8*bank + i + 1
			st := b[i/2] >> (4 * uint(i%2)) & 0x0f // byte 128 + i/2 of the page
			states[lane] = dataPathState(st)
			cfg := b[206-128+i]
			app := int(cfg >> 4)
			if _, ok := byApp[app]; !ok {
				continue
			}
			k := key{bank, app, int(cfg>>1) & 0x07}
			if _, seen := groups[k]; !seen {
				order = append(order, k)
			}
			groups[k] = append(groups[k], lane)
		}
	}
	var out []DataPath
	for _, k := range order {
		a := byApp[k.app]
		host := groups[k]
		first := host[0]
		dp := DataPath{AppSel: a.AppSel, Host: a.Host, Media: a.Media, HostLanes: host,
			MediaLanes: span(a.mediaStart(first), a.MediaLanes), State: states[first], Configured: true}
		out = append(out, dp)
	}
	if len(out) == 0 && len(apps) > 0 {
		a := apps[0]
		for _, h := range a.HostStarts {
			if a.HostLanes == 0 || h+a.HostLanes-1 > maxCMISLanes {
				continue
			}
			out = append(out, DataPath{AppSel: a.AppSel, Host: a.Host, Media: a.Media,
				HostLanes: span(h, a.HostLanes), MediaLanes: span(a.mediaStart(h), a.MediaLanes), State: states[h]})
		}
	}
	slices.SortFunc(out, func(x, y DataPath) int { return x.HostLanes[0] - y.HostLanes[0] })
	for i := range out {
		out[i].Number = i + 1
	}
	return out
}

func decodeCMIS(pages Pages) (*Module, error) {
	lo, err := pageReader(SpecCMIS, pages, Lower)
	if err != nil {
		return nil, err
	}
	id := lo.u8(0)
	rev := lo.u8(1)
	m := &Module{Spec: SpecCMIS, IdentifierCode: id, Identifier: identifierName(id),
		Revision: fmt.Sprintf("CMIS %d.%d", rev>>4, rev&0x0f), State: cmisState((lo.u8(3) >> 1) & 0x07)}
	flat := lo.bit(2, 7)
	mediaType := lo.u8(85)
	readers := map[Page]*reader{}
	for _, p := range []Page{Upper(0, 0), Upper(1, 0), Upper(2, 0)} {
		r, err := pageReader(SpecCMIS, pages, p)
		if err != nil {
			return nil, err
		}
		readers[p] = r
	}
	p00, p01, p02 := readers[Upper(0, 0)], readers[Upper(1, 0)], readers[Upper(2, 0)]
	m.setMedia(mediaCMIS(lo, p00))
	m.Applications = applications(lo, p01, mediaType)
	if len(m.Applications) > 0 {
		m.Media = m.Applications[0].Media
		for _, a := range m.Applications {
			if !slices.Contains(m.Compliance, a.Media) {
				m.Compliance = append(m.Compliance, a.Media)
			}
		}
	} else {
		m.Media = cmisMediaName(mediaType, lo.u8(87))
	}
	m.SpeedMbps = speedOf(m.Media)
	lanes := mediaLaneCount(m.Applications, id)
	if p00 != nil {
		identityCMIS(m, p00)
	} else {
		m.Notes = append(m.Notes, "page 00h was not read: vendor, part and serial number unknown")
	}
	scale := 1.0
	laneMon := [3]bool{true, true, true} // bias, TX power, RX power
	modMon := [2]bool{true, true}        // temperature, Vcc
	if p01 != nil {
		scale = cmisBiasScale(p01.u8(160))
		for k := range 3 {
			laneMon[k] = p01.bit(160, uint(k))
		}
		modMon = [2]bool{p01.bit(159, 0), p01.bit(159, 1)}
		if wl := p01.u16(138); wl != 0 && m.MediaClass == MediaOptical {
			m.WavelengthNM = ptr(float64(wl) * 0.05)
		}
		m.RXPowerType = "OMA"
		if p01.bit(151, 4) {
			m.RXPowerType = "average"
		}
	} else {
		traw := lo.u16(14)
		live := traw != 0 && traw != 0xffff
		modMon = [2]bool{live, live}
		laneMon = [3]bool{false, false, false}
		if flat {
			m.Notes = append(m.Notes, "flat memory (lower page byte 2 bit 7): no lane monitors or thresholds (a passive cable, typically)")
		} else {
			m.Notes = append(m.Notes, "page 01h was not read: which monitors the module supports is unknown, lane values not decoded")
		}
	}
	if m.MediaClass == MediaCopper {
		// Copper lanes carry no light: the power and bias words mean
		// nothing a rule could judge (a linear or active copper cable may
		// still flag LOS and LOL, which are kept).
		laneMon = [3]bool{false, false, false}
		m.RXPowerType = ""
	}
	if modMon[0] {
		m.TemperatureC = ptr(tempC(lo.s16(14)))
	}
	if modMon[1] {
		m.VoltageV = ptr(voltV(lo.u16(16)))
	}
	m.Monitors = modMon[0] || laneMon[0] || laneMon[1] || laneMon[2]
	f := lo.u8(9)
	m.Alarms = append(flagNames("temperature", f&0x01 != 0, f&0x02 != 0, f&0x04 != 0, f&0x08 != 0),
		flagNames("voltage", f&0x10 != 0, f&0x20 != 0, f&0x40 != 0, f&0x80 != 0)...)
	if p02 != nil {
		m.Thresholds = thresholdsCMIS(p02, scale)
	} else if !flat {
		m.Notes = append(m.Notes, "page 02h was not read: the module's alarm and warning thresholds are unknown")
	}
	hostLanes := 0
	for _, a := range m.Applications {
		for _, h := range a.HostStarts {
			hostLanes = max(hostLanes, h+a.HostLanes-1)
		}
	}
	if !flat {
		m.DataPaths = dataPaths(pages, m.Applications, hostLanes)
	}
	for i := range lanes {
		l, err := laneCMIS(pages, i, scale, laneMon, flat)
		if err != nil {
			return nil, err
		}
		m.Lanes = append(m.Lanes, l)
	}
	assignDataPaths(m, pages)
	if !flat {
		for b := range (lanes + 7) / 8 {
			if _, ok := pages[Upper(0x11, uint8(b))]; !ok {
				m.Notes = append(m.Notes, fmt.Sprintf("page 11h bank %d was not read: lanes %d-%d have no monitors or flags", b, 8*b+1, min(lanes, 8*b+8)))
			}
		}
	}
	finishLanes(m)
	return m, nil
}

// assignDataPaths ties each media lane to its data path and the host
// lanes that feed it. A transmitter's input (TX LOS, TX CDR LOL) is
// watched on the host lanes: a media lane's TX LOS is set when any host
// lane of its data path lost its input.
func assignDataPaths(m *Module, pages Pages) {
	for _, dp := range m.DataPaths {
		var los, lol bool
		known := false
		for _, h := range dp.HostLanes {
			b, ok := pages[Upper(0x11, uint8((h-1)/8))]
			if !ok || len(b) < PageSize {
				continue
			}
			known = true
			bit := uint8(1) << ((h - 1) % 8)
			los = los || b[136-128]&bit != 0
			lol = lol || b[137-128]&bit != 0
		}
		for _, ml := range dp.MediaLanes {
			if ml < 1 || ml > len(m.Lanes) {
				continue
			}
			l := &m.Lanes[ml-1]
			l.DataPath, l.HostLanes = dp.Number, dp.HostLanes
			if known {
				l.TXLOS, l.TXLOL = ptr(los), ptr(lol)
			}
		}
	}
}

func identityCMIS(m *Module, p00 *reader) {
	m.VendorName = p00.text(129, 144)
	m.VendorOUI = p00.oui(145)
	m.VendorPN = p00.text(148, 163)
	m.VendorRev = p00.text(164, 165)
	m.VendorSN = p00.text(166, 181)
	m.Date = p00.date(182)
	m.Connector, m.ConnectorCode = connectorName(p00.u8(203)), p00.u8(203)
	p00.checksum(m, 128, 222, "page 00h checksum")
}

// laneCMIS decodes media lane i (0-based) from pages 10h and 11h of its
// bank.
func laneCMIS(pages Pages, i int, scale float64, mon [3]bool, flat bool) (Lane, error) {
	l := Lane{Lane: i + 1}
	if flat {
		return l, nil
	}
	bank := uint8(i / 8)
	bit := uint(i % 8)
	p11, err := pageReader(SpecCMIS, pages, Upper(0x11, bank))
	if err != nil {
		return l, err
	}
	p10, err := pageReader(SpecCMIS, pages, Upper(0x10, bank))
	if err != nil {
		return l, err
	}
	if p10 != nil {
		l.TXDisabled = ptr(p10.bit(130, bit))
	}
	if p11 == nil {
		return l, nil
	}
	off := 2 * int(bit)
	if mon[1] {
		l.TXPowerMW = ptr(powerMW(p11.u16(154 + off)))
	}
	if mon[0] {
		l.TXBiasMA = ptr(biasMA(p11.u16(170+off)) * scale)
	}
	if mon[2] {
		l.RXPowerMW = ptr(powerMW(p11.u16(186 + off)))
	}
	l.TXFault = ptr(p11.bit(135, bit))
	l.TXLOS = ptr(p11.bit(136, bit))
	l.TXLOL = ptr(p11.bit(137, bit))
	l.RXLOS = ptr(p11.bit(147, bit))
	l.RXLOL = ptr(p11.bit(148, bit))
	flags := func(q string, base int) []string {
		return flagNames(q, p11.bit(base, bit), p11.bit(base+1, bit), p11.bit(base+2, bit), p11.bit(base+3, bit))
	}
	l.Flags = append(l.Flags, flags("tx_power", 139)...)
	l.Flags = append(l.Flags, flags("tx_bias", 143)...)
	l.Flags = append(l.Flags, flags("rx_power", 149)...)
	return l, nil
}

func thresholdsCMIS(p02 *reader, scale float64) *Thresholds {
	t := &Thresholds{}
	four := func(base int, f func(int) float64) (p [4]*float64) {
		for k := range 4 {
			p[k] = ptr(f(base + 2*k))
		}
		return p
	}
	q := four(128, func(n int) float64 { return tempC(p02.s16(n)) })
	t.TemperatureHighAlarmC, t.TemperatureLowAlarmC, t.TemperatureHighWarnC, t.TemperatureLowWarnC = q[0], q[1], q[2], q[3]
	q = four(136, func(n int) float64 { return voltV(p02.u16(n)) })
	t.VoltageHighAlarmV, t.VoltageLowAlarmV, t.VoltageHighWarnV, t.VoltageLowWarnV = q[0], q[1], q[2], q[3]
	q = four(176, func(n int) float64 { return powerMW(p02.u16(n)) })
	t.TXPowerHighAlarmMW, t.TXPowerLowAlarmMW, t.TXPowerHighWarnMW, t.TXPowerLowWarnMW = q[0], q[1], q[2], q[3]
	q = four(184, func(n int) float64 { return biasMA(p02.u16(n)) * scale })
	t.TXBiasHighAlarmMA, t.TXBiasLowAlarmMA, t.TXBiasHighWarnMA, t.TXBiasLowWarnMA = q[0], q[1], q[2], q[3]
	q = four(192, func(n int) float64 { return powerMW(p02.u16(n)) })
	t.RXPowerHighAlarmMW, t.RXPowerLowAlarmMW, t.RXPowerHighWarnMW, t.RXPowerLowWarnMW = q[0], q[1], q[2], q[3]
	return t
}
