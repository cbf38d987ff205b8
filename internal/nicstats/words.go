package nicstats

import (
	"fmt"
	"slices"
	"strings"
)

// phrases say what each cause's growth means, as a clause with four
// verbs: %[1]s the host, %[2]s the interface, %[3]s the count, %[4]s the
// counters it came from.
var phrases = map[Cause]string{
	RXNoBuffer:       "%[1]s's NIC %[2]s dropped %[3]s frames for lack of RX buffers (%[4]s)",
	RXNICBuffer:      "%[1]s's NIC %[2]s dropped %[3]s frames in its own port buffer, congested (%[4]s)",
	RXDropped:        "%[1]s's stack discarded %[3]s frames received on %[2]s: no memory, a full backlog or nobody to take them (%[4]s)",
	TXDropped:        "%[1]s dropped %[3]s frames on their way out of %[2]s (%[4]s)",
	QdiscDrops:       "%[1]s's qdisc on %[2]s dropped %[3]s packets, its queue full (%[4]s)",
	PHYErrors:        "%[1]s's NIC %[2]s received %[3]s frames with FCS or symbol errors (%[4]s)",
	PauseTX:          "%[1]s's NIC %[2]s sent %[3]s pause frames, asking its link partner to stop (%[4]s)",
	PauseRX:          "%[1]s's NIC %[2]s received %[3]s pause frames, told to stop by the network (%[4]s)",
	FECUncorrectable: "%[1]s's NIC %[2]s saw %[3]s FEC blocks it could not correct, each a lost frame (%[4]s)",
	FECCorrected:     "%[1]s's NIC %[2]s corrected %[3]s FEC blocks, a noisy link (%[4]s)",
	LinkDown:         "%[1]s's NIC %[2]s lost its link %[3]s times (%[4]s)",
}

// Clause says in words that cause grew by n on host's iface, naming the
// counters it came from: "host b's NIC lab0 dropped 1.2 M frames for
// lack of RX buffers (rx_out_of_buffer)".
func Clause(host, iface string, cause Cause, n uint64, sources []string) string {
	p, ok := phrases[cause]
	if !ok {
		p = "%[1]s's %[2]s counted %[3]s " + string(cause) + " (%[4]s)"
	}
	src := strings.Join(sources, ", ")
	if src == "" {
		src = string(cause)
	}
	return fmt.Sprintf(p, host, iface, Amount(n), src)
}

// Meaning is a cause's meaning in a few words, for tables.
func (c Cause) Meaning() string {
	switch c {
	case RXNoBuffer:
		return "dropped by the NIC: no RX buffer from the host"
	case RXNICBuffer:
		return "dropped in the NIC's own port buffer"
	case RXDropped:
		return "received, then discarded by the host's stack"
	case TXDropped:
		return "dropped on the way out"
	case QdiscDrops:
		return "dropped by the qdisc: queue full"
	case PHYErrors:
		return "FCS or symbol errors"
	case PauseTX:
		return "pause frames sent"
	case PauseRX:
		return "pause frames received"
	case FECUncorrectable:
		return "FEC blocks not corrected"
	case FECCorrected:
		return "FEC blocks corrected"
	case LinkDown:
		return "link-down events"
	}
	return string(c)
}

// Amount writes a count the way a person reads it: exact below 10 000,
// then "45.3 k", "1.2 M", "3.4 G".
func Amount(n uint64) string {
	switch {
	case n < 10_000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/1e3)) + " k"
	case n < 1_000_000_000:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/1e6)) + " M"
	}
	return trimZero(fmt.Sprintf("%.1f", float64(n)/1e9)) + " G"
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }

// Grown returns the names of the counters behind cause that grew,
// largest first; all of them when none grew.
func (c Counters) Grown(cause Cause) []string {
	n, ok := c.ByCause[cause]
	if !ok {
		return nil
	}
	var names []string
	for k, v := range n.Sources {
		if v > 0 || n.Value == 0 {
			names = append(names, k)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		if n.Sources[a] != n.Sources[b] {
			if n.Sources[a] > n.Sources[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return names
}
