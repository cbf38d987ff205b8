package toolserver

import "strings"

// PerftestParams choose a perftest tool and its message.
type PerftestParams struct {
	Test   string `json:"test,omitempty"`   // ib_write_bw (default), ib_read_bw, ib_send_bw, ib_write_lat, ib_send_lat
	Size   int    `json:"size,omitempty"`   // message bytes; 0: 1 MiB for bandwidth, 8 for latency (the RoCE baseline report's choice)
	Iters  int    `json:"iters,omitempty"`  // 0: 5,000 for bandwidth, 10,000 for latency
	Device string `json:"device,omitempty"` // RDMA device (-d); "" lets perftest pick
	GID    int    `json:"gid,omitempty"`    // GID index (-x) for RoCE; 0 leaves perftest's default
}

// PerftestTools are the perftest programs linerate runs.
var PerftestTools = []string{"ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_send_lat"}

// WithDefaults fills what was left zero: ib_write_bw; 1 MiB and 5,000
// iterations for bandwidth, 8 bytes and 10,000 for latency (the RoCE
// baseline report's choices).
func (p PerftestParams) WithDefaults() PerftestParams {
	if p.Test == "" {
		p.Test = "ib_write_bw"
	}
	lat := strings.HasSuffix(p.Test, "_lat")
	if p.Size == 0 {
		p.Size = 1 << 20
		if lat {
			p.Size = 8
		}
	}
	if p.Iters == 0 {
		p.Iters = 5000
		if lat {
			p.Iters = 10000
		}
	}
	return p
}
