package ethtool

// Attribute numbers of the ethtool generic netlink family, from the
// kernel's uapi (include/uapi/linux/ethtool_netlink*.h; Documentation/
// networking/ethtool-netlink.rst). golang.org/x/sys/unix has the message
// numbers and most header and link attributes, but not those of FEC
// statistics, STATS_GET or MODULE_EEPROM_GET, so all are kept here, in
// one place, with the kernel's names.

const familyName = "ethtool"

// Messages (userspace to kernel; each GET's reply has the number of the
// matching *_GET_REPLY, which the client does not need to check).
const (
	msgStrsetGet       = 0x01
	msgLinkmodesGet    = 0x04
	msgLinkstateGet    = 0x06
	msgRingsGet        = 0x0f
	msgRingsSet        = 0x10
	msgChannelsGet     = 0x11
	msgChannelsSet     = 0x12
	msgPauseGet        = 0x15
	msgFECGet          = 0x1d
	msgModuleEEPROMGet = 0x1f
	msgStatsGet        = 0x20
)

// msgNames names the messages in errors and notes.
var msgNames = map[uint8]string{
	msgStrsetGet: "STRSET_GET", msgLinkmodesGet: "LINKMODES_GET", msgLinkstateGet: "LINKSTATE_GET",
	msgRingsGet: "RINGS_GET", msgRingsSet: "RINGS_SET", msgChannelsGet: "CHANNELS_GET",
	msgChannelsSet: "CHANNELS_SET", msgPauseGet: "PAUSE_GET", msgFECGet: "FEC_GET",
	msgModuleEEPROMGet: "MODULE_EEPROM_GET", msgStatsGet: "STATS_GET",
}

// Request header (ETHTOOL_A_HEADER_*) and its flags.
const (
	aHeaderDevName = 2
	aHeaderFlags   = 3

	flagCompactBitsets = 1
	flagStats          = 4
)

// Bitsets (ETHTOOL_A_BITSET_*).
const (
	aBitsetNomask = 1
	aBitsetSize   = 2
	aBitsetBits   = 3
	aBitsetValue  = 4
	aBitsetMask   = 5

	aBitsetBitsBit = 1

	aBitsetBitIndex = 1
	aBitsetBitName  = 2
	aBitsetBitValue = 3
)

// String sets (ETHTOOL_A_STRSET_*, _STRINGSETS_*, _STRINGSET_*, _STRINGS_*, _STRING_*).
const (
	aStrsetHeader     = 1
	aStrsetStringsets = 2

	aStringsetsStringset = 1

	aStringsetID      = 1
	aStringsetCount   = 2
	aStringsetStrings = 3

	aStringsString = 1

	aStringIndex = 1
	aStringValue = 2

	// ssLinkModes is ETH_SS_LINK_MODES (enum ethtool_stringset).
	ssLinkModes = 9
)

// LINKMODES_GET (ETHTOOL_A_LINKMODES_*).
const (
	aLinkmodesHeader  = 1
	aLinkmodesAutoneg = 2
	aLinkmodesOurs    = 3
	aLinkmodesPeer    = 4
	aLinkmodesSpeed   = 5
	aLinkmodesDuplex  = 6
	aLinkmodesLanes   = 9
)

// LINKSTATE_GET (ETHTOOL_A_LINKSTATE_*).
const (
	aLinkstateHeader      = 1
	aLinkstateLink        = 2
	aLinkstateSQI         = 3
	aLinkstateSQIMax      = 4
	aLinkstateExtState    = 5
	aLinkstateExtSubstate = 6
	aLinkstateExtDownCnt  = 7
)

// RINGS_GET/SET (ETHTOOL_A_RINGS_*).
const (
	aRingsHeader     = 1
	aRingsRXMax      = 2
	aRingsRXMiniMax  = 3
	aRingsRXJumboMax = 4
	aRingsTXMax      = 5
	aRingsRX         = 6
	aRingsRXMini     = 7
	aRingsRXJumbo    = 8
	aRingsTX         = 9
	aRingsRXBufLen   = 10
	aRingsCQESize    = 12
)

// CHANNELS_GET/SET (ETHTOOL_A_CHANNELS_*).
const (
	aChannelsHeader        = 1
	aChannelsRXMax         = 2
	aChannelsTXMax         = 3
	aChannelsOtherMax      = 4
	aChannelsCombinedMax   = 5
	aChannelsRXCount       = 6
	aChannelsTXCount       = 7
	aChannelsOtherCount    = 8
	aChannelsCombinedCount = 9
)

// PAUSE_GET (ETHTOOL_A_PAUSE_*, ETHTOOL_A_PAUSE_STAT_*).
const (
	aPauseHeader  = 1
	aPauseAutoneg = 2
	aPauseRX      = 3
	aPauseTX      = 4
	aPauseStats   = 5

	aPauseStatTXFrames = 2
	aPauseStatRXFrames = 3
)

// FEC_GET (ETHTOOL_A_FEC_*, ETHTOOL_A_FEC_STAT_*, ETHTOOL_A_FEC_HIST_*).
const (
	aFECHeader = 1
	aFECModes  = 2
	aFECAuto   = 3
	aFECActive = 4
	aFECStats  = 5

	aFECStatCorrected = 2
	aFECStatUncorr    = 3
	aFECStatCorrBits  = 4
	aFECStatHist      = 5 // Linux 6.18: one nest per bin

	aFECHistBinLow     = 2
	aFECHistBinHigh    = 3
	aFECHistBinVal     = 4 // u32 or u64
	aFECHistBinPerLane = 5 // array of u64
)

// MODULE_EEPROM_GET (ETHTOOL_A_MODULE_EEPROM_*).
const (
	aEEPROMHeader  = 1
	aEEPROMOffset  = 2
	aEEPROMLength  = 3
	aEEPROMPage    = 4
	aEEPROMBank    = 5
	aEEPROMI2C     = 6
	aEEPROMData    = 7
	eepromMaxChunk = 128
)

// STATS_GET (ETHTOOL_A_STATS_*, ETHTOOL_A_STATS_GRP_*) and the groups
// (ETHTOOL_STATS_*), whose names the kernel takes in the request bitset.
const (
	aStatsHeader = 2
	aStatsGroups = 3
	aStatsGrp    = 4

	aStatsGrpID   = 2
	aStatsGrpStat = 4

	statsEthPHY  = 0
	statsEthMAC  = 1
	statsEthCtrl = 2
	statsRMON    = 3
)

// Standard statistics names by group and ID, as the kernel's string sets
// ETH_SS_STATS_ETH_PHY/MAC/CTRL and ETH_SS_STATS_RMON spell them (the
// IEEE 802.3 and RFC 2819 object names) and `ethtool -S --groups` prints
// them. The IDs are uapi enums and never change.
var statNames = map[uint32][]string{
	statsEthPHY: {"SymbolErrorDuringCarrier"},
	statsEthMAC: {
		"FramesTransmittedOK", "SingleCollisionFrames", "MultipleCollisionFrames", "FramesReceivedOK",
		"FrameCheckSequenceErrors", "AlignmentErrors", "OctetsTransmittedOK", "FramesWithDeferredXmissions",
		"LateCollisions", "FramesAbortedDueToXSColls", "FramesLostDueToIntMACXmitError", "CarrierSenseErrors",
		"OctetsReceivedOK", "FramesLostDueToIntMACRcvError", "MulticastFramesXmittedOK", "BroadcastFramesXmittedOK",
		"FramesWithExcessiveDeferral", "MulticastFramesReceivedOK", "BroadcastFramesReceivedOK",
		"InRangeLengthErrors", "OutOfRangeLengthField", "FrameTooLongErrors",
	},
	statsEthCtrl: {"MACControlFramesTransmitted", "MACControlFramesReceived", "UnsupportedOpcodesReceived"},
	statsRMON:    {"etherStatsUndersizePkts", "etherStatsOversizePkts", "etherStatsFragments", "etherStatsJabbers"},
}

// Generic netlink controller (CTRL_CMD_GETFAMILY and its attributes).
const (
	genlIDCtrl         = 0x10
	ctrlCmdGetFamily   = 3
	ctrlAttrFamilyID   = 1
	ctrlAttrFamilyName = 2
	ctrlAttrVersion    = 3
	ctrlAttrOps        = 6
	ctrlAttrOpID       = 1
)
