package metrics

import (
	"math"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// allDescs collects every descriptor newDesc makes, for Describe.
var allDescs []*prometheus.Desc

func newDesc(name, help string, labels ...string) *prometheus.Desc {
	d := prometheus.NewDesc("linerate_"+name, help, labels, nil)
	allDescs = append(allDescs, d)
	return d
}

// Label names shared by many families.
const (
	lIface = "interface"
	lLane  = "lane"
)

// The families. Help texts say the unit and where the value comes from.
var (
	buildInfo       = newDesc("build_info", "linerate's version and the Go version it was built with; always 1.", "version", "goversion")
	scrapeErrors    = newDesc("scrape_errors_total", "Reads that failed while collecting, by source (doctor, ethtool, netlink, module_eeprom, store); the other sources' metrics are still served.", "source")
	scrapeDuration  = newDesc("scrape_duration_seconds", "How long the last collection of each source took.", "source")
	doctorTimestamp = newDesc("doctor_timestamp_seconds", "When the host facts served were read (Unix time); served facts are cached for a few seconds.")

	nicInfo         = newDesc("nic_info", "A network interface's identity; always 1. kind is pci for a PCI NIC, else the link kind (veth, bridge…).", lIface, "kind", "pci", "driver", "vendor_id", "device_id", "model", "firmware")
	nicUp           = newDesc("nic_link_up", "1 when the interface's operstate is up, else 0.", lIface)
	nicMTU          = newDesc("nic_mtu_bytes", "The interface's MTU.", lIface)
	nicSpeed        = newDesc("nic_link_speed_bytes_per_second", "The negotiated link speed.", lIface)
	nicSupportedMax = newDesc("nic_link_supported_max_speed_bytes_per_second", "The fastest link mode the NIC supports.", lIface)
	nicCeiling      = newDesc("nic_ceiling_bytes_per_second", "The NIC's ceiling per stage of its bottleneck chain: line_rate (link speed, or a shaping qdisc's rate), pcie (the PCIe link after TLP overhead), tcp_goodput (the lower of the line rate's TCP goodput at the MTU and PCIe).", lIface, "stage")
	nicBottleneck   = newDesc("nic_bottleneck", "1 for the stage that sets the NIC's TCP goodput ceiling (line_rate or pcie).", lIface, "stage")
	nicTemp         = newDesc("nic_temperature_celsius", "The NIC's temperature (hwmon of its PCI device).", lIface)
	nicTempCrit     = newDesc("nic_temperature_critical_celsius", "The NIC temperature sensor's critical limit.", lIface)

	pcieSpeed        = newDesc("pcie_link_speed_transfers_per_second", "The PCIe link's current speed (8 GT/s is 8e9).", lIface)
	pcieMaxSpeed     = newDesc("pcie_link_max_speed_transfers_per_second", "The fastest PCIe speed the device supports.", lIface)
	pcieWidth        = newDesc("pcie_link_width_lanes", "The PCIe link's current width.", lIface)
	pcieMaxWidth     = newDesc("pcie_link_max_width_lanes", "The widest PCIe link the device supports.", lIface)
	pcieSlotMaxSpeed = newDesc("pcie_slot_max_speed_transfers_per_second", "The fastest PCIe speed of the port above the device (the slot).", lIface)
	pcieSlotMaxWidth = newDesc("pcie_slot_max_width_lanes", "The widest PCIe link of the port above the device (the slot).", lIface)
	pcieDowngraded   = newDesc("pcie_link_downgraded", "1 when the PCIe link runs slower or narrower than the device supports.", lIface)

	xcvrInfo     = newDesc("transceiver_info", "The plugged module's identity; always 1. media_class is optical, copper or unknown, as the module's media bytes say: optical power means nothing on copper.", lIface, "spec", "identifier", "media", "media_class", "vendor", "pn", "sn", "rev", "date")
	xcvrReadable = newDesc("transceiver_readable", "1 when the module's memory was read and decoded, 0 when the module does not answer (a dead or badly seated module).", lIface)
	xcvrReadAt   = newDesc("transceiver_read_timestamp_seconds", "When the module values served were read (Unix time); module memory is read less often than other facts.", lIface)
	xcvrTemp     = newDesc("transceiver_temperature_celsius", "The module's temperature.", lIface)
	xcvrVoltage  = newDesc("transceiver_voltage_volts", "The module's supply voltage.", lIface)
	xcvrRXPower  = newDesc("transceiver_rx_power_watts", "Optical power received on a lane (0: no light).", lIface, lLane)
	xcvrTXPower  = newDesc("transceiver_tx_power_watts", "Optical power transmitted on a lane.", lIface, lLane)
	xcvrTXBias   = newDesc("transceiver_tx_bias_amperes", "A lane's laser bias current.", lIface, lLane)
	xcvrRXLOS    = newDesc("transceiver_rx_loss_of_signal", "1 when the module flags loss of signal on a lane's receiver.", lIface, lLane)
	xcvrTXLOS    = newDesc("transceiver_tx_loss_of_signal", "1 when the module flags loss of signal on a lane's transmitter input.", lIface, lLane)
	xcvrTXFault  = newDesc("transceiver_tx_fault", "1 when the module flags a transmitter fault on a lane.", lIface, lLane)

	// The module's own alarm and warning limits, one family per quantity
	// with the limit in a label: all four are plotted by one query, and
	// an alert compares a reading with its limit by interface.
	xcvrTempThreshold    = newDesc("transceiver_temperature_threshold_celsius", "The module's own temperature limits: threshold is high_alarm, high_warning, low_warning or low_alarm.", lIface, "threshold")
	xcvrVoltageThreshold = newDesc("transceiver_voltage_threshold_volts", "The module's own supply voltage limits.", lIface, "threshold")
	xcvrBiasThreshold    = newDesc("transceiver_tx_bias_threshold_amperes", "The module's own laser bias limits (one set for all lanes).", lIface, "threshold")
	xcvrTXThreshold      = newDesc("transceiver_tx_power_threshold_watts", "The module's own transmitted power limits (one set for all lanes).", lIface, "threshold")
	xcvrRXThreshold      = newDesc("transceiver_rx_power_threshold_watts", "The module's own received power limits (one set for all lanes).", lIface, "threshold")

	fecMode          = newDesc("fec_mode", "1 for the FEC mode the link runs (RS, BASER, LLRS or off).", lIface, "mode")
	fecCorrected     = newDesc("fec_corrected_blocks_total", "FEC blocks corrected since the driver loaded: a noisy but working link.", lIface)
	fecUncorrectable = newDesc("fec_uncorrectable_blocks_total", "FEC blocks the decoder could not correct since the driver loaded: lost frames.", lIface)
	// The pre-FEC bit error ratio is a rate of two counters, taken in
	// Prometheus: corrected bit errors over the bits the PHY received
	// (8 × its bytes). The names say "bit errors", a count of events, and
	// bytes, a base unit, as promlint asks.
	fecCorrectedBits     = newDesc("fec_corrected_bit_errors_total", "Bit errors the FEC decoder corrected since the driver loaded (FEC_GET's corrected bits, or the driver's rx_corrected_bits_phy): the pre-FEC BER's numerator.", lIface)
	fecLaneCorrectedBits = newDesc("fec_lane_corrected_bit_errors_total", "Bit errors the FEC decoder corrected on one FEC lane (numbered from 0).", lIface, lLane)
	nicPHYReceived       = newDesc("nic_phy_received_bytes_total", "Bytes the PHY received since the driver loaded, framing and idles included (mlx5 rx_bits_phy / 8): 8 times this is the pre-FEC BER's denominator.", lIface)
	fecLaneCorrected     = newDesc("fec_lane_corrected_blocks_total", "FEC blocks corrected on one FEC lane (numbered from 0 as ethtool prints them; not the module's optical lanes).", lIface, lLane)
	fecLaneUncorrectable = newDesc("fec_lane_uncorrectable_blocks_total", "FEC blocks not correctable on one FEC lane (numbered from 0).", lIface, lLane)

	nicDropped   = newDesc("nic_dropped_frames_total", "Frames the NIC dropped, by cause: rx_no_buffer (the host gave it no buffer: ring, queues or CPU), rx_nic_buffer (its own port buffer overflowed).", lIface, "cause")
	nicPHYErrors = newDesc("nic_phy_errors_total", "FCS/CRC and symbol errors: cable, optics, connector.", lIface)
	nicPause     = newDesc("nic_pause_frames_total", "Pause frames sent (direction=tx: the NIC asked the peer to stop) and received (rx).", lIface, "direction")
	nicLinkDowns = newDesc("nic_link_down_events_total", "Link-down events since the driver loaded.", lIface)

	finding = newDesc("finding", "1 while doctor raises the finding (id and severity as in 'linerate doctor'; subject is the interface or host).", "id", "severity", "subject")

	benchGoodput     = newDesc("bench_goodput_bytes_per_second", "The last stored unpaced TCP bench run's goodput (what the receivers got), per peer, engine, stream count and direction; runs paced to a rate, UDP, latency and transaction runs have none.", benchLabels...)
	benchCeiling     = newDesc("bench_ceiling_bytes_per_second", "The TCP goodput ceiling doctor computed for that unpaced TCP run's interfaces (the lower of both ends' when both are known).", benchLabels...)
	benchRetransmits = newDesc("bench_retransmits", "TCP retransmissions during the last stored TCP run.", benchLabels...)
	benchStarted     = newDesc("bench_run_timestamp_seconds", "When the last stored run of the kind started (Unix time).", benchLabels...)
	benchRTT         = newDesc("bench_rtt_seconds", "Round-trip latency of the last stored latency run: quantiles 0 (min) to 1 (max), count = samples.", benchLabels...)
	benchUDPLoss     = newDesc("bench_udp_lost_ratio", "Datagrams the receiver of the last stored UDP run did not get, over those sent (0 to 1).", benchLabels...)
)

// benchLabels name a bench series; kind is tcp, udp, latency or
// transactions, so that runs of one kind never replace another's series.
var benchLabels = []string{"peer", "engine", "streams", "direction", "kind"}

// emitter sends const metrics, skipping unknown values and making label
// values valid UTF-8 (module strings come from untrusted EEPROM bytes).
type emitter struct {
	ch chan<- prometheus.Metric
}

func (e *emitter) send(d *prometheus.Desc, t prometheus.ValueType, v float64, labels []string) {
	for i, l := range labels {
		labels[i] = strings.ToValidUTF8(l, "\uFFFD")
	}
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		return // cannot happen with the fixed label counts above; never panic on a scrape
	}
	e.ch <- m
}

func (e *emitter) gauge(d *prometheus.Desc, v float64, labels ...string) {
	e.send(d, prometheus.GaugeValue, v, labels)
}

func (e *emitter) counter(d *prometheus.Desc, v float64, labels ...string) {
	e.send(d, prometheus.CounterValue, v, labels)
}

// summary sends a latency distribution as a constant summary.
func (e *emitter) summary(d *prometheus.Desc, r *RTT, labels ...string) {
	for i, l := range labels {
		labels[i] = strings.ToValidUTF8(l, "\uFFFD")
	}
	m, err := prometheus.NewConstSummary(d, r.Samples, r.Sum, r.Quantiles, labels...)
	if err != nil {
		return
	}
	e.ch <- m
}

// gaugeP sends conv(*v), or nothing when v is nil.
func (e *emitter) gaugeP(d *prometheus.Desc, v *float64, conv func(float64) float64, labels ...string) {
	if v != nil {
		e.gauge(d, conv(*v), labels...)
	}
}

// same leaves a value in its unit.
func same(v float64) float64 { return v }

// fromMilli turns milliwatts into watts and milliamperes into amperes,
// rounded to the nano unit (modules resolve 0.1 µW and 2 µA): 38.7 mA
// gives 0.0387 A, where 38.7 × 0.001 would give 0.038700000000000005.
func fromMilli(v float64) float64 { return math.Round(v*1e6) / 1e9 }

// fromGTs turns GT/s into transfers per second.
func fromGTs(v float64) float64 { return v * 1e9 }

// bool01 is 1 for true, 0 for false.
func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
