package metrics

import (
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/inventory"
	"github.com/linerate/linerate/internal/limits"
	"github.com/linerate/linerate/internal/nicstats"
	"github.com/linerate/linerate/internal/sff"
)

// Rates to Prometheus's base unit, bytes per second.
const (
	gbpsToBytes = 1e9 / 8 // Gbit/s
	mbpsToBytes = 1e6 / 8 // Mb/s
)

// emitReport sends the families of doctor's report.
func emitReport(e *emitter, s *Snapshot) {
	for i := range s.Report.NICs {
		n := &s.Report.NICs[i]
		emitNIC(e, n)
		emitPCIe(e, n.Interface, n.PCIe)
		if t := n.Transceiver; t != nil {
			emitTransceiver(e, n.Interface, t, s)
		}
		emitFEC(e, n.Interface, n.FEC)
		emitCounters(e, n.Interface, n.Counters)
		emitRDMA(e, n, s.Report.Options.RoCEPriority)
	}
	emitGPUs(e, s.Report.GPUs)
	for _, f := range s.Report.Findings {
		e.gauge(finding, 1, f.ID, string(f.Severity), f.Subject)
	}
}

func emitNIC(e *emitter, n *doctor.NICReport) {
	iface := n.Interface
	e.gauge(nicInfo, 1, iface, n.Kind, n.PCI, n.Driver, n.VendorID, n.DeviceID, n.Model, firmware(&n.NIC))
	e.gauge(nicUp, bool01(n.Operstate == "up"), iface)
	if n.MTU != nil {
		e.gauge(nicMTU, float64(*n.MTU), iface)
	}
	if n.Kind == "pci" && n.SpeedMbps != nil && *n.SpeedMbps > 0 {
		e.gauge(nicSpeed, float64(*n.SpeedMbps)*mbpsToBytes, iface)
	}
	if l := n.Link; l != nil && l.SupportedMaxMbps != nil {
		e.gauge(nicSupportedMax, float64(*l.SupportedMaxMbps)*mbpsToBytes, iface)
	}
	lim := n.Limits
	for _, st := range []struct {
		stage string
		g     *limits.Gbps
	}{{"line_rate", lim.LineRate}, {"pcie", lim.PCIe}, {"tcp_goodput", lim.TCPGoodput}} {
		if st.g != nil {
			e.gauge(nicCeiling, float64(*st.g)*gbpsToBytes, iface, st.stage)
		}
	}
	if lim.Bottleneck != limits.BottleneckUnknown && lim.Bottleneck != "" {
		e.gauge(nicBottleneck, 1, iface, string(lim.Bottleneck))
	}
	e.gaugeP(nicTemp, n.TempC, same, iface)
	e.gaugeP(nicTempCrit, n.TempCritC, same, iface)
}

// firmware is the NIC's firmware version where the kernel reports one
// (its RDMA device's fw_ver), else "".
func firmware(n *inventory.NIC) string {
	for _, p := range n.RDMA {
		if p.Firmware != "" {
			return p.Firmware
		}
	}
	return ""
}

func emitPCIe(e *emitter, iface string, p *inventory.PCIe) {
	if p == nil || !p.Reported {
		return
	}
	e.gaugeP(pcieSpeed, p.CurGTs, fromGTs, iface)
	e.gaugeP(pcieMaxSpeed, p.MaxGTs, fromGTs, iface)
	if p.CurWidth != nil {
		e.gauge(pcieWidth, float64(*p.CurWidth), iface)
	}
	if p.MaxWidth != nil {
		e.gauge(pcieMaxWidth, float64(*p.MaxWidth), iface)
	}
	if u := p.Upstream; u != nil {
		e.gaugeP(pcieSlotMaxSpeed, u.MaxGTs, fromGTs, iface)
		if u.MaxWidth != nil {
			e.gauge(pcieSlotMaxWidth, float64(*u.MaxWidth), iface)
		}
	}
	e.gauge(pcieDowngraded, bool01(p.Downgraded), iface)
}

func emitTransceiver(e *emitter, iface string, t *inventory.Transceiver, s *Snapshot) {
	e.gauge(xcvrReadable, bool01(t.Readable), iface)
	if at, ok := s.ModuleReadAt[iface]; ok {
		e.gauge(xcvrReadAt, unixSeconds(at), iface)
	}
	m := t.Module
	if !t.Readable || m == nil {
		return
	}
	e.gauge(xcvrInfo, 1, iface, m.Spec, m.Identifier, m.Media, m.MediaClass, m.VendorName, m.VendorPN, m.VendorSN, m.VendorRev, m.Date)
	e.gaugeP(xcvrTemp, m.TemperatureC, same, iface)
	e.gaugeP(xcvrVoltage, m.VoltageV, same, iface)
	for _, l := range m.Lanes {
		lane := strconv.Itoa(l.Lane)
		e.gaugeP(xcvrRXPower, l.RXPowerMW, fromMilli, iface, lane)
		e.gaugeP(xcvrTXPower, l.TXPowerMW, fromMilli, iface, lane)
		e.gaugeP(xcvrTXBias, l.TXBiasMA, fromMilli, iface, lane)
		flag(e, xcvrRXLOS, l.RXLOS, iface, lane)
		flag(e, xcvrTXLOS, l.TXLOS, iface, lane)
		flag(e, xcvrTXFault, l.TXFault, iface, lane)
	}
	if th := m.Thresholds; th != nil {
		emitThresholds(e, iface, th)
	}
}

func flag(e *emitter, d *prometheus.Desc, v *bool, iface, lane string) {
	if v != nil {
		e.gauge(d, bool01(*v), iface, lane)
	}
}

// emitThresholds sends the module's limits, in base units.
func emitThresholds(e *emitter, iface string, th *sff.Thresholds) {
	for _, q := range []struct {
		d                                 *prometheus.Desc
		conv                              func(float64) float64
		highAlarm, highWarn, lowWarn, low *float64
	}{
		{xcvrTempThreshold, same, th.TemperatureHighAlarmC, th.TemperatureHighWarnC, th.TemperatureLowWarnC, th.TemperatureLowAlarmC},
		{xcvrVoltageThreshold, same, th.VoltageHighAlarmV, th.VoltageHighWarnV, th.VoltageLowWarnV, th.VoltageLowAlarmV},
		{xcvrBiasThreshold, fromMilli, th.TXBiasHighAlarmMA, th.TXBiasHighWarnMA, th.TXBiasLowWarnMA, th.TXBiasLowAlarmMA},
		{xcvrTXThreshold, fromMilli, th.TXPowerHighAlarmMW, th.TXPowerHighWarnMW, th.TXPowerLowWarnMW, th.TXPowerLowAlarmMW},
		{xcvrRXThreshold, fromMilli, th.RXPowerHighAlarmMW, th.RXPowerHighWarnMW, th.RXPowerLowWarnMW, th.RXPowerLowAlarmMW},
	} {
		e.gaugeP(q.d, q.highAlarm, q.conv, iface, "high_alarm")
		e.gaugeP(q.d, q.highWarn, q.conv, iface, "high_warning")
		e.gaugeP(q.d, q.lowWarn, q.conv, iface, "low_warning")
		e.gaugeP(q.d, q.low, q.conv, iface, "low_alarm")
	}
}

func emitFEC(e *emitter, iface string, f *inventory.FEC) {
	if f == nil {
		return
	}
	if f.Active != nil && *f.Active != "" {
		e.gauge(fecMode, 1, iface, *f.Active)
	}
	counterP(e, fecCorrected, f.CorrectedBlocks, iface)
	counterP(e, fecUncorrectable, f.UncorrectableBlocks, iface)
	counterP(e, fecCorrectedBits, f.CorrectedBits, iface)
	if f.ReceivedBits != nil {
		e.counter(nicPHYReceived, float64(*f.ReceivedBits)/8, iface)
	}
	if l := f.Lanes; l != nil {
		for i, v := range l.CorrectedBits {
			e.counter(fecLaneCorrectedBits, float64(v), iface, strconv.Itoa(i))
		}
		for i, v := range l.CorrectedBlocks {
			e.counter(fecLaneCorrected, float64(v), iface, strconv.Itoa(i))
		}
		for i, v := range l.UncorrectableBlocks {
			e.counter(fecLaneUncorrectable, float64(v), iface, strconv.Itoa(i))
		}
	}
}

func counterP(e *emitter, d *prometheus.Desc, v *uint64, labels ...string) {
	if v != nil {
		e.counter(d, float64(*v), labels...)
	}
}

// emitCounters sends the NIC's counters by cause. FEC causes are left to
// the fec_ families, which come from the same standard counters.
func emitCounters(e *emitter, iface string, c *nicstats.Counters) {
	if c == nil || c.Delta {
		return
	}
	for _, cause := range nicstats.Causes {
		n, ok := c.ByCause[cause]
		if !ok {
			continue // no counter reports it: unknown, never zero
		}
		v := float64(n.Value)
		switch cause {
		case nicstats.RXNoBuffer, nicstats.RXNICBuffer:
			e.counter(nicDropped, v, iface, string(cause))
		case nicstats.PHYErrors:
			e.counter(nicPHYErrors, v, iface)
		case nicstats.PauseTX, nicstats.PauseRX:
			e.counter(nicPause, v, iface, strings.TrimPrefix(string(cause), "pause_"))
		case nicstats.LinkDown:
			e.counter(nicLinkDowns, v, iface)
		}
	}
}
