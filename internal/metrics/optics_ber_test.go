package metrics

import (
	"math"
	"testing"
)

// TestPreFECBERFamilies: the counters a pre-FEC BER rate is taken from,
// per port and per FEC lane, with the values of the tree: corrected bit
// errors as counted, received bits as bytes (÷ 8), so that
// rate(corrected) / (8 × rate(received bytes)) is the BER.
func TestPreFECBERFamilies(t *testing.T) {
	l := treeLive(t, "cx7-prefec-ber")
	e := expose(t, NewRegistry(NewCollector(l.Snapshot, "test")))
	e.lint(t, "cx7-prefec-ber")
	corrected := e.value(t, "linerate_fec_corrected_bit_errors_total", map[string]string{"interface": "ens5f1np1"})
	received := e.value(t, "linerate_nic_phy_received_bytes_total", map[string]string{"interface": "ens5f1np1"})
	// Three days at 400 Gb/s: 1.0368e17 bits, 1.296e16 bytes; BER 1.6e-4.
	if received != 1.296e16 || math.Abs(corrected/(8*received)-1.6e-4) > 1e-9 {
		t.Errorf("corrected %g, received %g bytes: BER %g, want 1.6e-4", corrected, received, corrected/(8*received))
	}
	lanes := e.samples("linerate_fec_lane_corrected_bit_errors_total", map[string]string{"interface": "ens5f1np1"})
	if len(lanes) != 4 {
		t.Fatalf("%d lane series, want 4", len(lanes))
	}
	lane1 := e.value(t, "linerate_fec_lane_corrected_bit_errors_total", map[string]string{"interface": "ens5f1np1", "lane": "1"})
	if ber := lane1 / (8 * received / 4); math.Abs(ber-5.5e-4) > 1e-9 {
		t.Errorf("FEC lane 1 BER %g, want 5.5e-4", ber)
	}
}

// TestCopperExportsNoLight: a copper cable's module exports its identity,
// media class and temperature, and no optical power series that an alert
// on dark lanes could trip over.
func TestCopperExportsNoLight(t *testing.T) {
	l := treeLive(t, "cx6dx-copper-dac")
	e := expose(t, NewRegistry(NewCollector(l.Snapshot, "test")))
	for _, iface := range []string{"ens5f0np0", "ens5f1np1"} {
		if v := e.value(t, "linerate_transceiver_info", map[string]string{"interface": iface, "media_class": "copper"}); v != 1 {
			t.Errorf("%s: transceiver_info %g", iface, v)
		}
		e.value(t, "linerate_transceiver_temperature_celsius", map[string]string{"interface": iface})
		for _, name := range []string{"linerate_transceiver_rx_power_watts", "linerate_transceiver_tx_power_watts", "linerate_transceiver_tx_bias_amperes"} {
			if got := e.samples(name, map[string]string{"interface": iface}); len(got) != 0 {
				t.Errorf("%s: %d %s series on a copper cable", iface, len(got), name)
			}
		}
	}
}
