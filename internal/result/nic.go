package result

// NICCounters is how the NIC counters of each end grew during a run
// (end.nic_counters): what bench read on the interface carrying the
// test's traffic before and after the run, sorted by cause. An end whose
// counters were not read is absent; one whose reading failed says why.
type NICCounters struct {
	Client *NICDelta `json:"client,omitempty"`
	Server *NICDelta `json:"server,omitempty"`
}

// NICDelta is one end's counter growth during a run.
type NICDelta struct {
	// Interface is the interface read: the one carrying the test's
	// traffic (the route to the peer on the client, the one holding the
	// agent's address on the server).
	Interface string `json:"interface"`
	Driver    string `json:"driver,omitempty"`
	// Deltas is each cause's growth ("rx_no_buffer", "qdisc_drops", …;
	// docs/architecture.md, "NIC counters during a run"). Only causes
	// some counter of the interface reports are present: a cause
	// missing is unknown, never zero.
	Deltas map[string]uint64 `json:"deltas,omitempty"`
	// Sources are the counters behind each cause and their growth, by
	// their own names: a driver counter as `ethtool -S` names it
	// ("rx_out_of_buffer"), a standard one ("pause.tx_frames"), the
	// kernel's ("link.rx_dropped", "qdisc.drops").
	Sources map[string]map[string]uint64 `json:"sources,omitempty"`
	// NotRead says why the counters could not be read; Deltas is empty
	// then.
	NotRead string `json:"not_read,omitempty"`
}

// Grew returns the causes that grew, with their growth.
func (d *NICDelta) Grew() map[string]uint64 {
	out := map[string]uint64{}
	if d == nil {
		return out
	}
	for c, v := range d.Deltas {
		if v > 0 {
			out[c] = v
		}
	}
	return out
}

// End returns the delta of "client" or "server"; nil when not read.
func (n *NICCounters) End(role string) *NICDelta {
	switch {
	case n == nil:
		return nil
	case role == "client":
		return n.Client
	case role == "server":
		return n.Server
	}
	return nil
}
