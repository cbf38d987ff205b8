package limits

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// DefaultMPS is the Max_Payload_Size assumed when the device's is unknown.
// 256 bytes is what most root complexes of the last decade negotiate
// (128 on some older or embedded ones, 512 on a few servers).
const DefaultMPS = 256

// PCIeLink is a PCIe link as the kernel reports it (current_link_speed,
// current_link_width, or their max_ counterparts) plus the device's
// Max_Payload_Size.
type PCIeLink struct {
	GTs   float64 // transfer rate per lane in GT/s: 2.5, 5, 8, 16, 32, 64 (or 128)
	Width int     // lanes, 1 to 32
	MPS   int     // Max_Payload_Size in bytes, 128 to 4096; 0 means unknown (DefaultMPS)
}

// PCIeBandwidth is what one direction of a PCIe link can carry.
type PCIeBandwidth struct {
	Link       PCIeLink // as given, with MPS resolved
	Generation string   // "3.0"
	Encoding   string   // "8b/10b", "128b/130b" or "FLIT 242/256"
	// Raw is the data rate after line coding: GT/s × lanes × encoding.
	Raw Gbps
	// Effective is the ceiling for posted writes (the NIC's receive DMA)
	// after per-TLP and DLLP overhead, the model stated at PCIe.
	Effective Gbps

	flit bool // FLIT mode: TLPs travel in 256-byte flits
}

// Detail describes the link the way the bottleneck chain prints it:
// "8.0 GT/s x4, 128b/130b, MPS 256".
func (b PCIeBandwidth) Detail() string {
	return fmt.Sprintf("%s GT/s x%d, %s, MPS %d",
		formatGTs(b.Link.GTs), b.Link.Width, b.Encoding, b.Link.MPS)
}

// pcieGen is one PCIe generation's signalling.
type pcieGen struct {
	gts      float64
	name     string
	encoding string
	// num/den is the line-coding (or FLIT) efficiency.
	num, den float64
	flit     bool
}

// pcieGens lists the generations by transfer rate. A function, not a
// package variable, so that nothing can modify the table.
func pcieGens() []pcieGen {
	return []pcieGen{
		// Gen1 and Gen2 use 8b/10b: 10 line bits per data byte.
		{2.5, "1.0", "8b/10b", 8, 10, false},
		{5, "2.0", "8b/10b", 8, 10, false},
		// Gen3 to Gen5 use 128b/130b: a 2-bit sync header per 16-byte block.
		{8, "3.0", "128b/130b", 128, 130, false},
		{16, "4.0", "128b/130b", 128, 130, false},
		{32, "5.0", "128b/130b", 128, 130, false},
		// Gen6 (and Gen7, with the same flit) signals PAM4 in FLIT mode:
		// no line coding (1b/1b), and every 256-byte flit carries 236 bytes
		// of TLPs, 6 bytes of DLLP payload, 8 of CRC and 6 of FEC (PCI Express
		// Base Specification 6.0, Flit Mode). 242/256 is the share left after
		// CRC and FEC, the flit-mode analogue of line coding.
		{64, "6.0", "FLIT 242/256", 242, 256, true},
		{128, "7.0", "FLIT 242/256", 242, 256, true},
	}
}

// lookupGen finds the generation of a transfer rate. Rates come from
// decimal strings ("2.5", "8.0"), so compare with a tolerance rather than
// exactly.
func lookupGen(gts float64) (pcieGen, bool) {
	for _, g := range pcieGens() {
		if math.Abs(g.gts-gts) < 0.01 {
			return g, true
		}
	}
	return pcieGen{}, false
}

// Per-TLP overhead of a posted write (memory write, 64-bit address) in
// non-flit mode, in bytes:
//
//	Gen3+:  4 STP token (carries the sequence number) + 16 header (4DW) + 4 LCRC = 24
//	Gen1/2: 1 STP + 2 sequence number + 16 header + 4 LCRC + 1 END             = 24
//
// plus DLLPs amortised over the TLPs: one 8-byte Ack or UpdateFC per four
// TLPs is 2 bytes per TLP. ECRC (optional, rarely enabled) is ignored, as
// are SKP ordered sets (~0.3%).
const (
	tlpOverhead  = 24
	dllpPerTLP   = 2
	flitTLPBytes = 236 // TLP bytes per 256-byte flit
	flitDLPBytes = 6   // DLLP payload bytes per flit
	flitHeader   = 16  // flit-mode 4DW header: no STP token, no LCRC
)

// PCIe computes the bandwidth of one direction of a link.
//
// Raw = GT/s × lanes × encoding, where encoding is 8/10 at 2.5 and 5 GT/s,
// 128/130 at 8, 16 and 32 GT/s, and 242/256 in FLIT mode at 64 GT/s (see
// pcieGens). Gen3 x4: 8 × 4 × 128/130 = 31.51 Gbit/s.
//
// Effective = Raw × MPS / (MPS + 26): every TLP carries MPS bytes of
// payload plus 24 bytes of framing, header and LCRC, and an amortised 2
// bytes of DLLPs (see tlpOverhead). Gen3 x4 at MPS 256: 31.51 × 256/282 =
// 28.60 Gbit/s. This is the posted-write (receive DMA) ceiling; read
// completions on the transmit side have 20-byte headers but may be split
// at the 64/128-byte read completion boundary, which can be worse.
//
// FLIT mode (64 GT/s and up) has no STP token, no per-TLP LCRC and carries
// DLLPs in the flit's own 6 DLP bytes, so there Effective = Raw × 236/242 ×
// MPS / (MPS + 16): the flit's TLP share, then a 4DW header per TLP.
// Applying the non-flit model there would count the CRC and DLLPs twice.
//
// An unknown rate, a width outside 1..32 or an MPS that is not a power of
// two from 128 to 4096 is an error.
func PCIe(link PCIeLink) (PCIeBandwidth, error) {
	g, ok := lookupGen(link.GTs)
	if !ok {
		return PCIeBandwidth{}, fmt.Errorf("limits: unknown PCIe transfer rate %v GT/s", link.GTs)
	}
	if link.Width < 1 || link.Width > 32 {
		return PCIeBandwidth{}, fmt.Errorf("limits: PCIe width x%d outside x1..x32", link.Width)
	}
	if link.MPS == 0 {
		link.MPS = DefaultMPS
	}
	if link.MPS < 128 || link.MPS > 4096 || link.MPS&(link.MPS-1) != 0 {
		return PCIeBandwidth{}, fmt.Errorf("limits: PCIe Max_Payload_Size %d is not a power of two from 128 to 4096", link.MPS)
	}
	// Use the table's exact rate so that 8.0 and 7.999 give the same answer.
	link.GTs = g.gts
	raw := g.gts * float64(link.Width) * g.num / g.den
	b := PCIeBandwidth{Link: link, Generation: g.name, Encoding: g.encoding, Raw: Gbps(raw), flit: g.flit}
	b.Effective = Gbps(raw * float64(link.MPS) / b.linkBytes(link.MPS))
	return b, nil
}

// linkBytes is what a posted write of n bytes occupies on the link, in
// the units of Raw: its payload cut into TLPs of at most MPS bytes, each
// carrying tlpOverhead + dllpPerTLP = 26 bytes more; in FLIT mode a 16-byte
// header per TLP, the whole scaled by 242/236 for the flit's DLLP, CRC and
// FEC bytes (see PCIe).
func (b PCIeBandwidth) linkBytes(n int) float64 {
	n = max(n, 0)
	mps := b.Link.MPS
	if mps <= 0 {
		mps = DefaultMPS
	}
	tlps := float64((n + mps - 1) / mps)
	if b.flit {
		return (float64(n) + flitHeader*tlps) * (flitTLPBytes + flitDLPBytes) / flitTLPBytes
	}
	return float64(n) + (tlpOverhead+dllpPerTLP)*tlps
}

// CompletionBytes is the completion entry a NIC writes to host memory
// for each packet it receives: mlx5's 64-byte CQE (Intel's write-back
// descriptors are 16 or 32 bytes, so 64 errs on the side of more traffic).
const CompletionBytes = 64

// Transfer is one unit a NIC moves across PCIe: a packet, or an RDMA
// message.
type Transfer struct {
	// Payload is the user data in it: TCP payload, or the message.
	Payload int
	// DMA is the bytes written to host memory for it: the Ethernet frame
	// without FCS (MTU + 14) for a packet, the message alone for RDMA,
	// whose headers the NIC consumes.
	DMA int
	// Completions is the number of completion entries written for it:
	// one per received packet; one per message for RDMA.
	Completions int
}

// BusBytes is what t occupies on the link, in the units of Raw: its DMA
// and each completion entry as posted writes (linkBytes).
func (b PCIeBandwidth) BusBytes(t Transfer) float64 {
	return b.linkBytes(t.DMA) + float64(t.Completions)*b.linkBytes(CompletionBytes)
}

// Goodput is the user-data rate the link carries as a stream of t:
// Raw × Payload / BusBytes(t). Effective bandwidth counts TLP overhead
// only; this also counts the frame's headers and the per-packet
// completion writes that cross the bus with the data, and the partial
// last TLP of each frame.
//
// Worked numbers, PCIe 3.0 x8 at MPS 256 (Raw 63.015 Gbit/s, Effective
// 57.21): a TCP segment at MTU 1500 (IPv4, timestamps) carries 1448 bytes
// of payload in a 1514-byte frame, 6 TLPs (1514 + 6 × 26 = 1670 bytes)
// plus one 64-byte completion (64 + 26 = 90): 1448/1760 of Raw = 51.84
// Gbit/s. At MTU 9000: 8948 bytes in 9014, 36 TLPs (9014 + 936 = 9950)
// + 90: 8948/10040 of Raw = 56.16. An RDMA write of 1 MiB is 4096 full
// TLPs (1048576 + 106496) and one completion: 1048576/1155162 of Raw =
// 57.20 — the ConnectX-5 RoCE baseline report measured 55.9 there.
//
// The model is the receive direction's posted writes. The transmit side
// reads the frame with read requests whose completions carry 20 bytes of
// overhead each and may split at the 64- or 128-byte read completion
// boundary, so it is no better. Descriptor fetches (one read per batch
// of descriptors) and interrupts (moderated) are left out.
func (b PCIeBandwidth) Goodput(t Transfer) Gbps {
	bus := b.BusBytes(t)
	if bus <= 0 || t.Payload <= 0 {
		return 0
	}
	return Gbps(float64(b.Raw) * float64(t.Payload) / bus)
}

// Generation names the PCIe generation of a transfer rate: "1.0" for 2.5
// GT/s up to "6.0" for 64 GT/s. It returns "" for a rate no generation uses.
func Generation(gts float64) string {
	g, ok := lookupGen(gts)
	if !ok {
		return ""
	}
	return g.name
}

// ParseLinkSpeed reads the kernel's current_link_speed or max_link_speed
// attribute. Kernels since 4.17 write "8.0 GT/s PCIe" (and "2.5 GT/s
// PCIe"); older ones wrote "8 GT/s" and "2.5 GT/s". A link the kernel
// cannot name reads "Unknown" (older: "Unknown speed"), and a conventional
// PCI device has no such attribute; those, and any rate that is not a PCIe
// generation's, give ok == false rather than a guess.
func ParseLinkSpeed(s string) (gts float64, ok bool) {
	f := strings.Fields(s)
	if len(f) < 2 || len(f) > 3 || f[1] != "GT/s" || (len(f) == 3 && f[2] != "PCIe") {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, false
	}
	g, ok := lookupGen(v)
	if !ok {
		return 0, false
	}
	return g.gts, true
}

// formatGTs writes a rate the way current kernels do, with one decimal:
// "2.5", "8.0", "16.0".
func formatGTs(gts float64) string {
	return strconv.FormatFloat(gts, 'f', 1, 64)
}
