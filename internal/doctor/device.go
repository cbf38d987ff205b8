package doctor

import (
	"fmt"
	"slices"
	"strconv"
)

// Thresholds of nic.temperature_high (docs/architecture.md, "Finding IDs").
const (
	tempWarnC       = 70.0
	tempCritMarginC = 10.0
)

// temperatureHigh: a NIC at 70 °C or more is a warning (most are specified
// to 55 °C ambient with airflow; the 100 GbE home lab's ConnectX-5 ran
// at 74 °C with none); within
// 10 °C of its sensor's critical value it is critical. A card's ports share
// one sensor, so each card is reported once.
func temperatureHigh(d *diag) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, v := range d.nics {
		if v.TempC == nil || v.Kind != "pci" {
			continue
		}
		card := cardOf(v.PCI)
		if seen[card] {
			continue
		}
		seen[card] = true
		t := *v.TempC
		sev := Warning
		if v.TempCritC != nil && t >= *v.TempCritC-tempCritMarginC {
			sev = Critical
		} else if t < tempWarnC {
			continue
		}
		ev := map[string]any{"temperature_c": t, "pci": v.PCI}
		crit := ""
		if v.TempCritC != nil {
			ev["crit_c"] = *v.TempCritC
			crit = fmt.Sprintf(", critical at %.1f °C", *v.TempCritC)
		}
		name := v.Interface
		if v.Model != "" {
			name += " (" + v.Model + ")"
		}
		out = append(out, Finding{
			ID: "nic.temperature_high", Severity: sev, Subject: v.Interface,
			Summary:  fmt.Sprintf("%s is at %.1f °C%s: hot NICs throttle, log errors and age; most are rated for 55 °C ambient with forced airflow", name, t, crit),
			Evidence: ev,
			Fix: []Fix{
				do("Add airflow over the card's heatsink: server cards expect 200-350 LFM (a 40 mm fan tied to the heatsink has taken a ConnectX-5 in a desktop case from 74 to 45 °C)").
					verify("Then watch it under load (sensors shows it too)", "linerate", "doctor", "--iface", v.Interface),
			},
		})
	}
	return out
}

// rdmaPortNotActive: an RDMA port of a selected NIC is not ACTIVE, so
// RDMA traffic (perftest, NCCL, storage) cannot use it.
func rdmaPortNotActive(d *diag) []Finding {
	var out []Finding
	for _, v := range d.nics {
		for _, p := range v.RDMA {
			if p.State == "ACTIVE" || (v.judgedDown() && slices.Contains(roceDownWith(v), fmt.Sprintf("%s/%d", p.Device, p.Port))) {
				continue
			}
			out = append(out, Finding{
				ID: "rdma.port_not_active", Severity: Warning, Subject: v.Interface,
				Summary: fmt.Sprintf("RDMA port %s/%d of %s is %s (%s), not ACTIVE: RDMA traffic cannot use it",
					p.Device, p.Port, v.Interface, p.State, p.PhysState),
				Evidence: map[string]any{"device": p.Device, "port": p.Port, "state": p.State, "phys_state": p.PhysState, "link_layer": p.LinkLayer},
				Fix:      rdmaFix(v.Interface, p.Device, p.Port, p.LinkLayer),
			})
		}
	}
	return out
}

// rdmaFix is the fix of an RDMA port that is not ACTIVE: a RoCE port
// follows its netdev; an InfiniBand port needs a subnet manager.
func rdmaFix(iface, dev string, port int, layer string) []Fix {
	check := do("Check the port", "rdma", "link", "show", fmt.Sprintf("%s/%d", dev, port))
	if layer == "InfiniBand" {
		return []Fix{
			do("An InfiniBand port becomes ACTIVE only when a subnet manager runs on the fabric: start opensm on one host or switch").
				verify("Then check the port", "ibstat", dev, strconv.Itoa(port)),
			check,
		}
	}
	return []Fix{
		do("A RoCE port follows its netdev: bring it up", "ip", "link", "set", "dev", iface, "up").
			verify("Then check the link and the cable", "ethtool", iface),
		check,
	}
}
