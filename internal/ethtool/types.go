// Package ethtool reads the NIC facts that only the live kernel gives, over
// the ethtool generic netlink family (github.com/mdlayher/genetlink): link
// modes with the supported, advertised and partner masks, link state with
// the extended state and the link-down count, FEC with its corrected and
// uncorrectable block counters, the standard statistics groups (eth-phy,
// eth-mac, eth-ctrl, rmon) and pause statistics, channels and rings (GET
// and SET), and module EEPROM pages by I2C address, page and bank. The
// driver's own `ethtool -S` counters have no netlink message; they come
// from the ETHTOOL_GSTRINGS/GSTATS ioctl (github.com/safchain/ethtool),
// which is also the fallback, where one exists, on a kernel without the
// netlink message.
//
// The netlink messages are hand-built here because no Go library keeps the
// supported link-mode mask, asks for FEC or standard statistics, or reads
// module pages by bank (mdlayher/ethtool drops the first and has none of
// the others).
//
// Facts gathers everything about one interface and writes it as the files
// of a host tree (linerate/ethtool/<iface>/, documented in docs/schema/),
// which Load reads back, so that `doctor --root` replays a snapshot.
package ethtool

// LinkModes is LINKMODES_GET: the link's speed and the link modes as
// ethtool prints them ("100000baseCR4/Full"). FEC abilities, which the
// kernel keeps in the same mask, are split out.
type LinkModes struct {
	// SpeedMbps is nil when the kernel reports an unknown speed (no link).
	SpeedMbps *int `json:"speed_mbps"`
	// Duplex is "full", "half" or "unknown".
	Duplex  string `json:"duplex"`
	Autoneg bool   `json:"autoneg"`
	// Lanes is the number of lanes in use, where the driver says.
	Lanes             *int     `json:"lanes,omitempty"`
	Supported         []string `json:"supported"`
	Advertised        []string `json:"advertised"`
	PartnerAdvertised []string `json:"partner_advertised"`
	// SupportedFEC, AdvertisedFEC and PartnerFEC are the FEC modes in the
	// same masks ("None", "RS", "BASER", "LLRS").
	SupportedFEC  []string `json:"supported_fec"`
	AdvertisedFEC []string `json:"advertised_fec"`
	PartnerFEC    []string `json:"partner_fec"`
	// Source is "netlink" or "ioctl" (ETHTOOL_GLINKSETTINGS on an old kernel).
	Source string `json:"source"`
}

// LinkState is LINKSTATE_GET.
type LinkState struct {
	Link *bool `json:"link"`
	// ExtState and ExtSubstate say why a link is down, as ethtool prints
	// them ("No cable", "RS FEC is not locked"); empty when not reported.
	ExtState    string `json:"ext_state,omitempty"`
	ExtSubstate string `json:"ext_substate,omitempty"`
	// DownEvents counts link-down events since the driver loaded.
	DownEvents *uint32 `json:"link_down_events"`
	SQI        *uint32 `json:"sqi,omitempty"`
	SQIMax     *uint32 `json:"sqi_max,omitempty"`
}

// FEC is FEC_GET with statistics.
type FEC struct {
	// Configured are the configured encodings: "off", "RS", "BASER", "LLRS".
	Configured []string `json:"configured"`
	// Auto is set when the driver picks the encoding from the module and
	// the partner.
	Auto bool `json:"auto"`
	// Active is the encoding in use: "off", "RS", "BASER", "LLRS", or nil
	// when the driver does not say (no link).
	Active *string `json:"active"`
	// Stats is nil when the driver keeps no FEC counters.
	Stats *FECStats `json:"stats"`
	// Hist is the FEC histogram (Linux 6.18, ETHTOOL_A_FEC_STAT_HIST):
	// how many codewords had a number of symbol errors in each bin's
	// range, with the split per FEC lane where the driver gives one;
	// absent where the kernel or the driver has none.
	Hist []FECHistBin `json:"hist,omitempty"`
}

// FECHistBin is one bin of the FEC histogram: codewords received with
// BinLow to BinHigh symbol errors (IEEE 802.3ck's "FEC codeword error
// bins"; a bin of one value has BinLow = BinHigh).
type FECHistBin struct {
	BinLow  uint32   `json:"bin_low"`
	BinHigh uint32   `json:"bin_high"`
	Val     uint64   `json:"val"`
	PerLane []uint64 `json:"per_lane,omitempty"`
}

// FECStats are the FEC counters: each [total, lane 0, lane 1, …], with
// only the total where the driver gives no lanes, absent where it gives
// nothing (IEEE 802.3 30.5.1.1.17/18).
type FECStats struct {
	CorrectedBlocks     []uint64 `json:"corrected_blocks,omitempty"`
	UncorrectableBlocks []uint64 `json:"uncorrectable_blocks,omitempty"`
	CorrectedBits       []uint64 `json:"corrected_bits,omitempty"`
}

// Stats are the NIC's counters: the driver's own (`ethtool -S`) and the
// standard groups. A group the driver does not report is absent, never
// zero.
type Stats struct {
	Driver  map[string]uint64 `json:"driver,omitempty"`
	EthMAC  map[string]uint64 `json:"eth_mac,omitempty"`
	EthPHY  map[string]uint64 `json:"eth_phy,omitempty"`
	EthCtrl map[string]uint64 `json:"eth_ctrl,omitempty"`
	RMON    map[string]uint64 `json:"rmon,omitempty"`
	Pause   *Pause            `json:"pause,omitempty"`
}

// Pause is PAUSE_GET with statistics: flow control settings and the
// pause frames sent and received.
type Pause struct {
	Autoneg  *bool   `json:"autoneg,omitempty"`
	RX       *bool   `json:"rx,omitempty"`
	TX       *bool   `json:"tx,omitempty"`
	TXFrames *uint64 `json:"tx_frames,omitempty"`
	RXFrames *uint64 `json:"rx_frames,omitempty"`
}

// Channels is CHANNELS_GET: queue counts and their maximums; a kind the
// driver does not have (max 0) is absent.
type Channels struct {
	RXMax       *uint32 `json:"rx_max,omitempty"`
	TXMax       *uint32 `json:"tx_max,omitempty"`
	OtherMax    *uint32 `json:"other_max,omitempty"`
	CombinedMax *uint32 `json:"combined_max,omitempty"`
	RX          *uint32 `json:"rx,omitempty"`
	TX          *uint32 `json:"tx,omitempty"`
	Other       *uint32 `json:"other,omitempty"`
	Combined    *uint32 `json:"combined,omitempty"`
}

// Rings is RINGS_GET: descriptor ring sizes and their maximums.
type Rings struct {
	RXMax      *uint32 `json:"rx_max,omitempty"`
	RXMiniMax  *uint32 `json:"rx_mini_max,omitempty"`
	RXJumboMax *uint32 `json:"rx_jumbo_max,omitempty"`
	TXMax      *uint32 `json:"tx_max,omitempty"`
	RX         *uint32 `json:"rx,omitempty"`
	RXMini     *uint32 `json:"rx_mini,omitempty"`
	RXJumbo    *uint32 `json:"rx_jumbo,omitempty"`
	TX         *uint32 `json:"tx,omitempty"`
	RXBufLen   *uint32 `json:"rx_buf_len,omitempty"`
	CQESize    *uint32 `json:"cqe_size,omitempty"`
}

// ChannelCounts is a CHANNELS_SET request: nil leaves a count unchanged.
type ChannelCounts struct {
	RX, TX, Other, Combined *uint32
}

// RingSizes is a RINGS_SET request: nil leaves a size unchanged.
type RingSizes struct {
	RX, TX *uint32
}
