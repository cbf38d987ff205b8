package metrics

import (
	"math"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/linerate/linerate/internal/doctor"
	"github.com/linerate/linerate/internal/ethtool"
	"github.com/linerate/linerate/internal/inventory"
)

// treeLive is a Live over a captured tree, without the results database.
func treeLive(t testing.TB, name string) *Live {
	return &Live{FS: openTree(t, name), NoStore: true}
}

// TestTreesExposition: over every captured host tree the exposition is
// clean under promlint and `promtool check metrics`, has no sample
// timestamps, names every NIC in linerate_nic_info and every raised
// finding in linerate_finding, and gives each PCI NIC with a known PCIe
// link its pcie ceiling.
func TestTreesExposition(t *testing.T) {
	for _, name := range trees(t) {
		t.Run(name, func(t *testing.T) {
			l := treeLive(t, name)
			s := l.Snapshot()
			if s.Report == nil {
				t.Fatalf("doctor failed over the tree: %v", s.doctorErr)
			}
			e := expose(t, NewRegistry(NewCollector(l.Snapshot, "test")))
			e.lint(t, name)
			e.promtoolCheckMetrics(t, name)
			if got, want := len(e.samples("linerate_nic_info", nil)), len(s.Report.NICs); got != want || want == 0 {
				t.Errorf("linerate_nic_info: %d series, want one per NIC (%d)", got, want)
			}
			for _, n := range s.Report.NICs {
				e.value(t, "linerate_nic_info", map[string]string{"interface": n.Interface, "pci": n.PCI, "driver": n.Driver})
				if n.Limits.PCIe != nil {
					got := e.value(t, "linerate_nic_ceiling_bytes_per_second", map[string]string{"interface": n.Interface, "stage": "pcie"})
					if want := float64(*n.Limits.PCIe) * 1e9 / 8; got != want {
						t.Errorf("%s pcie ceiling %g B/s, want %g", n.Interface, got, want)
					}
				}
			}
			if got := len(e.samples("linerate_finding", nil)); got != len(s.Report.Findings) {
				t.Errorf("linerate_finding: %d series, want %d (one per finding)", got, len(s.Report.Findings))
			}
			for _, f := range s.Report.Findings {
				if v := e.value(t, "linerate_finding", map[string]string{"id": f.ID, "severity": string(f.Severity), "subject": f.Subject}); v != 1 {
					t.Errorf("finding %s on %s: %g, want 1", f.ID, f.Subject, v)
				}
			}
			for _, src := range Sources {
				e.value(t, "linerate_scrape_errors_total", map[string]string{"source": src})
			}
		})
	}
}

// decodedLanes returns the module of iface as doctor decoded it.
func decodedTransceiver(t *testing.T, rep *doctor.Report, iface string) *inventory.Transceiver {
	t.Helper()
	for _, n := range rep.NICs {
		if n.Interface == iface {
			if n.Transceiver == nil {
				t.Fatalf("%s: no transceiver in the report", iface)
			}
			return n.Transceiver
		}
	}
	t.Fatalf("%s: not in the report", iface)
	return nil
}

// TestTransceiverFamilies: the optics trees' modules come out per lane in
// base units, equal to the decoded module's values, with the module's own
// thresholds, identity on _info only, and the transceiver findings.
func TestTransceiverFamilies(t *testing.T) {
	cases := []struct {
		tree, iface string
		lanes       int
		findings    []string
	}{
		{"t6-cwdm4-dark-lane", "ens5f4", 4, []string{"transceiver.lane_dark"}},
		{"cx6dx-cwdm4-low-rx", "", 4, []string{"transceiver.rx_power_low"}},
		{"cx7-qsfpdd-cmis", "ens5f0np0", 4, []string{"transceiver.temperature_high", "link.speed_below_max"}},
		{"cx7-qsfpdd-cmis", "ens5f1np1", 4, []string{"transceiver.tx_fault"}},
	}
	for _, c := range cases {
		t.Run(c.tree+"/"+c.iface, func(t *testing.T) {
			l := treeLive(t, c.tree)
			s := l.Snapshot()
			if s.Report == nil {
				t.Fatal(s.doctorErr)
			}
			iface := c.iface
			if iface == "" {
				for _, n := range s.Report.NICs {
					if n.Transceiver != nil && n.Transceiver.Readable {
						iface = n.Interface
						break
					}
				}
			}
			tr := decodedTransceiver(t, s.Report, iface)
			e := expose(t, NewRegistry(NewCollector(l.Snapshot, "test")))
			if got := len(e.samples("linerate_transceiver_rx_power_watts", map[string]string{"interface": iface})); got != c.lanes {
				t.Errorf("%s: %d lanes of RX power, want %d", iface, got, c.lanes)
			}
			for _, ln := range tr.Lanes {
				lbl := map[string]string{"interface": iface, "lane": strconv.Itoa(ln.Lane)}
				for _, q := range []struct {
					name string
					mw   *float64
				}{{"linerate_transceiver_rx_power_watts", ln.RXPowerMW}, {"linerate_transceiver_tx_power_watts", ln.TXPowerMW}, {"linerate_transceiver_tx_bias_amperes", ln.TXBiasMA}} {
					if q.mw == nil {
						continue
					}
					got := e.value(t, q.name, lbl)
					if math.Abs(got*1000-*q.mw) > 1e-9 {
						t.Errorf("%s lane %d: %g, decoded %g milli", q.name, ln.Lane, got, *q.mw)
					}
				}
			}
			th := tr.Thresholds
			if got := e.value(t, "linerate_transceiver_rx_power_threshold_watts", map[string]string{"interface": iface, "threshold": "low_warning"}); math.Abs(got*1000-*th.RXPowerLowWarnMW) > 1e-9 {
				t.Errorf("rx low warning %g W, decoded %g mW", got, *th.RXPowerLowWarnMW)
			}
			if got := e.value(t, "linerate_transceiver_temperature_celsius", map[string]string{"interface": iface}); got != *tr.TemperatureC {
				t.Errorf("module temperature %g, decoded %g", got, *tr.TemperatureC)
			}
			info := e.value(t, "linerate_transceiver_info", map[string]string{"interface": iface, "vendor": tr.VendorName, "pn": tr.VendorPN, "sn": tr.VendorSN})
			if info != 1 {
				t.Errorf("transceiver_info = %g", info)
			}
			// Identity stays on _info: no other family carries sn or pci.
			for name, mf := range e.mfs {
				if name == "linerate_transceiver_info" || name == "linerate_nic_info" {
					continue
				}
				for _, m := range mf.Metric {
					for _, lp := range m.Label {
						switch lp.GetName() {
						case "sn", "pn", "vendor", "pci", "driver":
							t.Errorf("%s carries identity label %s", name, lp.GetName())
						}
					}
				}
			}
			for _, ln := range tr.Lanes {
				if ln.TXFault == nil {
					continue
				}
				want := bool01(*ln.TXFault)
				if got := e.value(t, "linerate_transceiver_tx_fault", map[string]string{"interface": iface, "lane": strconv.Itoa(ln.Lane)}); got != want {
					t.Errorf("lane %d TX fault %v, want %v", ln.Lane, got, want)
				}
			}
			for _, id := range c.findings {
				if len(e.samples("linerate_finding", map[string]string{"id": id, "subject": iface})) != 1 {
					t.Errorf("no linerate_finding{id=%q,subject=%q}", id, iface)
				}
			}
		})
	}
}

// TestDarkLaneExactValues: the dark-lane tree's module, lane by lane, as
// its HOST.md states it (RX −1.90, −1.52, none, −1.20 dBm: 0.646, 0.705,
// 0, 0.759 mW; bias 37.5 to 39.3 mA), with lane 3's loss of signal.
func TestDarkLaneExactValues(t *testing.T) {
	l := treeLive(t, "t6-cwdm4-dark-lane")
	e := expose(t, NewRegistry(NewCollector(l.Snapshot, "test")))
	want := map[string][3]float64{ // lane: rx W, bias A, rx LOS
		"1": {0.000646, 0.0375, 0}, "2": {0.000705, 0.0381, 0}, "3": {0, 0.0387, 1}, "4": {0.000759, 0.0393, 0},
	}
	for lane, w := range want {
		lbl := map[string]string{"interface": "ens5f4", "lane": lane}
		if got := e.value(t, "linerate_transceiver_rx_power_watts", lbl); got != w[0] {
			t.Errorf("lane %s RX %v W, want %v", lane, got, w[0])
		}
		if got := e.value(t, "linerate_transceiver_tx_bias_amperes", lbl); got != w[1] {
			t.Errorf("lane %s bias %v A, want %v", lane, got, w[1])
		}
		if got := e.value(t, "linerate_transceiver_rx_loss_of_signal", lbl); got != w[2] {
			t.Errorf("lane %s RX LOS %v, want %v", lane, got, w[2])
		}
	}
	if got := e.value(t, "linerate_transceiver_rx_power_threshold_watts", map[string]string{"interface": "ens5f4", "threshold": "low_warning"}); got != 0.0000891 {
		t.Errorf("low warning %v W, want 8.91e-05", got)
	}
	if len(e.samples("linerate_transceiver_rx_power_watts", map[string]string{"interface": "ens5f4d1"})) != 0 {
		t.Error("ens5f4d1 has an empty cage, but RX power series")
	}
}

// TestUnreadableModule: a module that does not answer (EIO) gives
// readable 0, the finding, a module_eeprom scrape error, and every other
// metric of the host.
func TestUnreadableModule(t *testing.T) {
	l := treeLive(t, "t6-cwdm4-unreadable")
	e := expose(t, NewRegistry(NewCollector(l.Snapshot, "test")))
	if v := e.value(t, "linerate_transceiver_readable", map[string]string{"interface": "ens5f4"}); v != 0 {
		t.Errorf("readable %g, want 0", v)
	}
	if v := e.value(t, "linerate_scrape_errors_total", map[string]string{"source": SourceModule}); v != 1 {
		t.Errorf("module_eeprom errors %g, want 1", v)
	}
	if len(e.samples("linerate_finding", map[string]string{"id": "transceiver.unreadable", "subject": "ens5f4"})) != 1 {
		t.Error("no transceiver.unreadable finding")
	}
	for _, name := range []string{"linerate_nic_info", "linerate_pcie_link_width_lanes", "linerate_nic_ceiling_bytes_per_second"} {
		if len(e.samples(name, map[string]string{"interface": "ens5f4"})) == 0 {
			t.Errorf("%s missing beside the unreadable module", name)
		}
	}
}

// TestLiveCacheAndModuleRateLimit: within the TTL a scrape is served the
// last collection; after it the facts are read again but module memory
// only once ModuleInterval has passed, its values keeping their read
// time; a module that stops answering becomes readable 0 with a
// module_eeprom error while the rest is still served.
func TestLiveCacheAndModuleRateLimit(t *testing.T) {
	fs := openTree(t, "t6-cwdm4-dark-lane")
	eth := &treeEthtool{fs: fs, moduleReads: map[string]int{}}
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	l := &Live{FS: fs, NoStore: true, TTL: 5 * time.Second, ModuleInterval: time.Minute,
		now: func() time.Time { return now }, eth: eth}
	reg := NewRegistry(NewCollector(l.Snapshot, "test"))
	lane1 := map[string]string{"interface": "ens5f4", "lane": "1"}
	readAt := map[string]string{"interface": "ens5f4"}

	e := expose(t, reg)
	t0 := unixSeconds(now)
	if got := e.value(t, "linerate_transceiver_read_timestamp_seconds", readAt); got != t0 {
		t.Errorf("read timestamp %v, want %v", got, t0)
	}
	if eth.moduleReads["ens5f4"] != 1 || l.collects.Load() != 1 {
		t.Fatalf("first scrape: %d module reads, %d collections; want 1, 1", eth.moduleReads["ens5f4"], l.collects.Load())
	}

	now = now.Add(4 * time.Second) // within the TTL: the same collection
	expose(t, reg)
	if l.collects.Load() != 1 {
		t.Errorf("a scrape within the TTL collected again (%d)", l.collects.Load())
	}

	now = now.Add(2 * time.Second) // past the TTL, within the module interval
	e = expose(t, reg)
	if l.collects.Load() != 2 || eth.moduleReads["ens5f4"] != 1 {
		t.Errorf("after the TTL: %d collections, %d module reads; want 2, 1", l.collects.Load(), eth.moduleReads["ens5f4"])
	}
	if got := e.value(t, "linerate_transceiver_rx_power_watts", lane1); got != 0.000646 {
		t.Errorf("cached lane 1 RX %v, want 0.000646", got)
	}
	if got := e.value(t, "linerate_transceiver_read_timestamp_seconds", readAt); got != t0 {
		t.Errorf("cached module read time %v, want the first read's %v", got, t0)
	}
	if got := e.value(t, "linerate_doctor_timestamp_seconds", nil); got != unixSeconds(now) {
		t.Errorf("facts time %v, want %v", got, unixSeconds(now))
	}

	now = now.Add(time.Minute) // the module is read again, and now fails
	eth.failModule = "EIO: the module does not answer"
	e = expose(t, reg)
	if eth.moduleReads["ens5f4"] != 2 {
		t.Errorf("after the module interval: %d module reads, want 2", eth.moduleReads["ens5f4"])
	}
	if got := e.value(t, "linerate_transceiver_readable", readAt); got != 0 {
		t.Errorf("readable %v after EIO, want 0", got)
	}
	if got := e.value(t, "linerate_scrape_errors_total", map[string]string{"source": SourceModule}); got != 2 {
		t.Errorf("module_eeprom errors %v, want 2 (both ports' reads failed)", got)
	}
	if len(e.samples("linerate_nic_info", map[string]string{"interface": "ens5f4"})) != 1 ||
		len(e.samples("linerate_finding", map[string]string{"id": "transceiver.unreadable"})) == 0 {
		t.Error("a failing module read lost the NIC's other metrics or its finding")
	}
	now = now.Add(10 * time.Second) // past the TTL: the failure is not read, nor counted, again
	e = expose(t, reg)
	if got := e.value(t, "linerate_scrape_errors_total", map[string]string{"source": SourceModule}); got != 2 || eth.moduleReads["ens5f4"] != 2 {
		t.Errorf("module_eeprom errors %v after %d reads, want 2 after 2", got, eth.moduleReads["ens5f4"])
	}
}

// TestLiveConcurrentScrapes: scrapes arriving together while a
// collection runs share it.
func TestLiveConcurrentScrapes(t *testing.T) {
	fs := openTree(t, "t6-cwdm4-dark-lane")
	release := make(chan struct{})
	eth := &blockingEthtool{treeEthtool{fs: fs, moduleReads: map[string]int{}}, release, sync.Once{}}
	l := &Live{FS: fs, NoStore: true, eth: eth}
	var wg sync.WaitGroup
	got := make([]*Snapshot, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = l.Snapshot()
		}()
	}
	time.Sleep(50 * time.Millisecond) // let the scrapes queue behind the first
	close(release)
	wg.Wait()
	if n := l.collects.Load(); n != 1 {
		t.Errorf("%d concurrent scrapes made %d collections, want 1", len(got), n)
	}
	for i, s := range got {
		if s != got[0] || s.Report == nil {
			t.Errorf("scrape %d got another or an empty snapshot", i)
		}
	}
}

// blockingEthtool holds the first read until release is closed.
type blockingEthtool struct {
	treeEthtool
	release chan struct{}
	once    sync.Once
}

func (b *blockingEthtool) exceptModule(iface string) *ethtool.Facts {
	b.once.Do(func() { <-b.release })
	return b.treeEthtool.exceptModule(iface)
}
