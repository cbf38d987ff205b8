package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/sff"
)

// opticsTables adds the modules of the hosts' NICs, a row per media lane
// grouped by data path (CMIS) with doctor's mark of each bad lane, then
// each port's FEC with its pre-FEC BER, then the FEC histograms. Hosts
// whose doctor reports hold no module and no FEC add nothing.
func (b *builder) opticsTables(s *section) {
	lanes := &table{ID: "optics", Caption: "Modules: every media lane, grouped by data path",
		Head: []string{"Host", "Interface", "Module", "Data path", "Lane", "Host lanes", "RX power (dBm)", "TX power (dBm)", "Bias (mA)", "State"},
		Num:  []bool{false, false, false, false, true, false, true, true, true, false}}
	fec := &table{ID: "fec", Caption: "FEC and pre-FEC bit error ratio (totals since the driver loaded)",
		Head: []string{"Host", "Interface", "Active FEC", "Corrected blocks", "Uncorrectable blocks", "Pre-FEC BER", "BER by FEC lane"},
		Num:  []bool{false, false, false, true, true, true, false}}
	var hists []*table
	for i := range b.ds.Hosts {
		rep := &b.ds.Hosts[i]
		for j := range rep.NICs {
			n := &rep.NICs[j].NIC
			moduleRows(lanes, rep.Host.Hostname, n)
			if f := n.FEC; f != nil && (f.Active != nil || f.CorrectedBlocks != nil || f.PreFECBER != nil) {
				fec.Rows = append(fec.Rows, []string{rep.Host.Hostname, n.Interface, orDash(ptrText(f.Active)),
					uintPtr(f.CorrectedBlocks), uintPtr(f.UncorrectableBlocks), berText(f.PreFECBER), laneBERs(f)})
				fec.Classes = append(fec.Classes, berClass(f.PreFECBER))
			}
			if h := histTable(rep.Host.Hostname, n); h != nil {
				hists = append(hists, h)
			}
		}
	}
	if len(lanes.Rows) == 0 && len(fec.Rows) == 0 {
		return
	}
	s.addHeading("Optics and FEC")
	if len(lanes.Rows) > 0 {
		s.addText("Each module's media lanes as its own monitors report them, against its own thresholds. A CMIS module's lanes are grouped by data path (an application instance: the host lanes that feed it and the media lanes it drives); a copper cable has no light to report.")
		s.addTable(lanes)
	}
	if len(fec.Rows) > 0 {
		s.addText("The pre-FEC bit error ratio is corrected bits over bits received: RS-FEC corrects up to about 2.4e-4; from 1e-5 a link runs on the FEC's margin, within a factor of two of the limit it is about to lose frames.")
		s.addTable(fec)
	}
	for _, h := range hists {
		s.addTable(h)
	}
}

// moduleRows adds n's module: a row per lane, or one row saying why none.
func moduleRows(t *table, host string, n *inventory.NIC) {
	tr := n.Transceiver
	if tr == nil {
		return
	}
	if !tr.Readable || tr.Module == nil {
		t.Rows = append(t.Rows, []string{host, n.Interface, "unreadable: " + orDash(ptrText(tr.Error)), "—", "—", "—", "—", "—", "—", "no answer"})
		t.Classes = append(t.Classes, "crit")
		return
	}
	name := strings.TrimSpace(strings.Join([]string{tr.Identifier, tr.Media, "·", tr.VendorName, tr.VendorPN, tr.VendorSN}, " "))
	if tr.MediaClass == sff.MediaCopper {
		kind := "copper cable"
		if tr.Cable != "" {
			kind = tr.Cable + " copper cable"
		}
		temp := ""
		if tr.TemperatureC != nil {
			temp = fmt.Sprintf(", %.1f °C", *tr.TemperatureC)
		}
		t.Rows = append(t.Rows, []string{host, n.Interface, name, "—", "—", "—", "—", "—", "—", kind + temp + ": no light to judge"})
		t.Classes = append(t.Classes, "")
		return
	}
	paths := map[int]sff.DataPath{}
	for _, dp := range tr.DataPaths {
		paths[dp.Number] = dp
	}
	// Lanes in data path order, then those in none.
	var ordered []sff.Lane
	for _, dp := range tr.DataPaths {
		for _, l := range tr.Lanes {
			if l.DataPath == dp.Number {
				ordered = append(ordered, l)
			}
		}
	}
	for _, l := range tr.Lanes {
		if _, ok := paths[l.DataPath]; !ok {
			ordered = append(ordered, l)
		}
	}
	for _, l := range ordered {
		path := "—"
		if dp, ok := paths[l.DataPath]; ok {
			path = fmt.Sprintf("%d: %s", dp.Number, dp.Media)
			if dp.State != "" {
				path += " (" + dp.State + ")"
			}
		}
		state, sev := doctor.LaneMark(tr, l)
		if state == "" {
			state = "ok"
		}
		t.Rows = append(t.Rows, []string{host, n.Interface, name, path, strconv.Itoa(l.Lane), lanesText(l.HostLanes),
			dbmText(l.RXPowerMW), dbmText(l.TXPowerMW), floatText(l.TXBiasMA, 2), state})
		t.Classes = append(t.Classes, map[doctor.Severity]string{doctor.Critical: "crit", doctor.Warning: "warn"}[sev])
	}
}

// histTable is n's FEC histogram: codewords by symbol errors, in total
// and per FEC lane; nil without one.
func histTable(host string, n *inventory.NIC) *table {
	if n.FEC == nil || len(n.FEC.Hist) == 0 {
		return nil
	}
	lanes := 0
	for _, b := range n.FEC.Hist {
		lanes = max(lanes, len(b.PerLane))
	}
	t := &table{ID: "fec-hist-" + host + "-" + n.Interface,
		Caption: fmt.Sprintf("FEC histogram of %s on %s: codewords by symbol errors (since the driver loaded)", n.Interface, host),
		Head:    []string{"Symbol errors", "Codewords"}, Num: []bool{false, true}}
	for l := range lanes {
		t.Head = append(t.Head, fmt.Sprintf("FEC lane %d", l))
		t.Num = append(t.Num, true)
	}
	for _, b := range n.FEC.Hist {
		bin := strconv.FormatUint(uint64(b.BinLow), 10)
		if b.BinHigh != b.BinLow {
			bin += "–" + strconv.FormatUint(uint64(b.BinHigh), 10)
		}
		row := []string{bin, strconv.FormatUint(b.Val, 10)}
		for l := range lanes {
			v := "—"
			if l < len(b.PerLane) {
				v = strconv.FormatUint(b.PerLane[l], 10)
			}
			row = append(row, v)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func ptrText(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func uintPtr(p *uint64) string {
	if p == nil {
		return "—"
	}
	return strconv.FormatUint(*p, 10)
}

func floatText(p *float64, prec int) string {
	if p == nil {
		return "—"
	}
	return strconv.FormatFloat(*p, 'f', prec, 64)
}

// dbmText writes optical power in dBm, "no light" for none.
func dbmText(mw *float64) string {
	if mw == nil {
		return "—"
	}
	d, ok := sff.DBm(*mw)
	if !ok {
		return "no light"
	}
	return strconv.FormatFloat(d, 'f', 2, 64)
}

// lanesText writes lane numbers as "5–8", "3" or "1, 3".
func lanesText(l []int) string {
	switch {
	case len(l) == 0:
		return "—"
	case len(l) == 1:
		return strconv.Itoa(l[0])
	}
	for i := 1; i < len(l); i++ {
		if l[i] != l[i-1]+1 {
			s := make([]string, len(l))
			for k, v := range l {
				s[k] = strconv.Itoa(v)
			}
			return strings.Join(s, ", ")
		}
	}
	return fmt.Sprintf("%d–%d", l[0], l[len(l)-1])
}

func berText(p *float64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%.1e", *p)
}

// berClass marks a BER as doctor's fec.ber_high judges it.
func berClass(p *float64) string {
	if p == nil {
		return ""
	}
	return map[string]string{"critical": "crit", "warning": "warn"}[ethtool.BERSeverity(*p)]
}

func laneBERs(f *inventory.FEC) string {
	if f.Lanes == nil || len(f.Lanes.PreFECBER) == 0 {
		return "—"
	}
	s := make([]string, len(f.Lanes.PreFECBER))
	for i, v := range f.Lanes.PreFECBER {
		s[i] = fmt.Sprintf("%d: %.1e", i, v)
	}
	return strings.Join(s, ", ")
}
