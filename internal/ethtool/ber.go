package ethtool

import (
	"math"
	"time"
)

// Pre-FEC bit error ratio: the share of received bits the FEC decoder
// had to correct. FEC's corrected and uncorrectable blocks say that
// errors happened; the pre-FEC BER says how close the link is to the
// point where the decoder gives up. RS(528,514) (clause 91, "KR4") and
// RS(544,514) ("KP4", the PAM4 lanes) correct up to about 2.4e-4: a link
// at 1e-5 works with margin to spare only on paper, one within a factor
// of two of the limit loses frames at the next temperature swing or
// dirty connector.
const (
	// BERWarn is the pre-FEC BER from which a link is worth a look.
	BERWarn = 1e-5
	// BERLimit is what RS(528,514) and RS(544,514) correct, about.
	BERLimit = 2.4e-4
	// BERCritical is within a factor of two of BERLimit.
	BERCritical = BERLimit / 2
)

// Names of the mlx5 driver counters (ethtool -S) that carry the pre-FEC
// BER's numerator and denominator: bits corrected by the FEC decoder and
// bits received by the PHY (mlx5 counters.rst, "Physical Port Counters").
const (
	DriverCorrectedBits = "rx_corrected_bits_phy"
	DriverReceivedBits  = "rx_bits_phy"
	// DriverPCSSymbolErrors counts the symbol errors the FEC did not
	// correct: the post-FEC errors.
	DriverPCSSymbolErrors = "rx_pcs_symbol_err_phy"
)

// PreFECBER is corrected bits over received bits. ok is false when no bit
// was received (nothing to divide by).
func PreFECBER(correctedBits, receivedBits uint64) (ber float64, ok bool) {
	if receivedBits == 0 {
		return 0, false
	}
	return float64(correctedBits) / float64(receivedBits), true
}

// WindowBits is what a link of speedMbps carries in elapsed: the bits
// received over a bench window where the driver counts none itself,
// line rate × time (an idle link still receives idles, which the FEC
// decodes like frames).
func WindowBits(speedMbps int, elapsed time.Duration) uint64 {
	if speedMbps <= 0 || elapsed <= 0 {
		return 0
	}
	return uint64(math.Round(float64(speedMbps) * 1e6 * elapsed.Seconds()))
}

// WindowBER is the pre-FEC BER over a window between two readings of
// the corrected-bit counter: its growth over the bits a link of
// speedMbps carries in elapsed. ok is false when the counter went
// backwards (a driver reload between the readings) or the window is
// empty.
func WindowBER(before, after uint64, speedMbps int, elapsed time.Duration) (ber float64, ok bool) {
	if after < before {
		return 0, false
	}
	return PreFECBER(after-before, WindowBits(speedMbps, elapsed))
}

// BERSeverity judges a pre-FEC BER against the contract's thresholds:
// "critical" within a factor of two of what RS-FEC corrects, "warning"
// from 1e-5, "" below.
func BERSeverity(ber float64) string {
	switch {
	case ber >= BERCritical:
		return "critical"
	case ber >= BERWarn:
		return "warning"
	}
	return ""
}

// CodewordBits is the size of one RS-FEC codeword of the given FEC
// ("RS", "LLRS") at a lane rate: RS(544,514) on PAM4 lanes of 50 Gb/s
// and up, RS(528,514) on 25 Gb/s NRZ lanes, RS(272,257) for LLRS; 10-bit
// symbols. 0 for BASE-R (a Fire code of 2112-bit blocks has no symbol
// histogram) and off.
func CodewordBits(fec string, laneGbps float64) int {
	switch fec {
	case "RS":
		if laneGbps > 30 {
			return 5440
		}
		return 5280
	case "LLRS":
		return 2720
	}
	return 0
}

// HistBER estimates the pre-FEC BER from the FEC histogram: symbol
// errors over the bits of the codewords counted, with every codeword of
// a bin taken at the bin's lowest count and every errored symbol at one
// bit. It is a lower bound (a 10-bit symbol may carry up to 10 errored
// bits), for a port whose driver counts no corrected bits; ok is false
// without codewords or without a codeword size.
func HistBER(hist []FECHistBin, codewordBits int) (ber float64, ok bool) {
	var words, symbols float64
	for _, b := range hist {
		words += float64(b.Val)
		symbols += float64(b.Val) * float64(b.BinLow)
	}
	if words == 0 || codewordBits <= 0 {
		return 0, false
	}
	return symbols / (words * float64(codewordBits)), true
}
