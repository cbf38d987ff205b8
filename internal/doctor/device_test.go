package doctor

import (
	"strings"
	"testing"
)

// TestTemperatureNamesModel: the summary names the card's model if known.
func TestTemperatureNamesModel(t *testing.T) {
	inv := healthy()
	inv.NICs[0].TempC = fp(80)
	f := find(run(t, inv, Options{}), "nic.temperature_high")
	if len(f) != 1 || !strings.HasPrefix(f[0].Summary, "enp1s0f0np0 (ConnectX-5) is at 80.0 °C, critical at 105.0 °C:") {
		t.Errorf("%+v", f)
	}
	inv.NICs[0].Model = ""
	f = find(run(t, inv, Options{}), "nic.temperature_high")
	if len(f) != 1 || !strings.HasPrefix(f[0].Summary, "enp1s0f0np0 is at 80.0 °C") {
		t.Errorf("no model: %+v", f)
	}
}
