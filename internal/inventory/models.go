package inventory

// models names the NICs users put in fast hosts, by PCI vendor:device.
// A built-in table rather than the host's pci.ids: a snapshot must give
// the same answer on any machine, with or without pciutils installed.
var models = map[string]string{
	"0x15b3:0x1013": "ConnectX-4",
	"0x15b3:0x1015": "ConnectX-4 Lx",
	"0x15b3:0x1017": "ConnectX-5",
	"0x15b3:0x1019": "ConnectX-5 Ex",
	"0x15b3:0x101b": "ConnectX-6",
	"0x15b3:0x101d": "ConnectX-6 Dx",
	"0x15b3:0x101f": "ConnectX-6 Lx",
	"0x15b3:0x1021": "ConnectX-7",
	"0x15b3:0x1023": "ConnectX-8",
	"0x15b3:0xa2d6": "BlueField-2",
	"0x15b3:0xa2dc": "BlueField-3",
	"0x8086:0x1572": "X710 (10GbE SFP+)",
	"0x8086:0x1583": "XL710 (40GbE QSFP+)",
	"0x8086:0x1584": "XL710 (40GbE QSFP+)",
	"0x8086:0x158b": "XXV710 (25GbE SFP28)",
	"0x8086:0x1592": "E810-C (100GbE QSFP28)",
	"0x8086:0x1593": "E810-C (25GbE SFP28)",
	"0x8086:0x159b": "E810-XXV (25GbE SFP28)",
	"0x8086:0x10fb": "82599ES (10GbE SFP+)",
	"0x8086:0x1563": "X550 (10GBASE-T)",
	"0x14e4:0x16d7": "BCM57414 (25GbE)",
	"0x14e4:0x1750": "BCM57508 (100/200GbE)",
	"0x14e4:0x1751": "BCM57504 (25/50GbE)",
	// Chelsio's NIC driver binds physical function 4, whose device IDs
	// carry a 4 in the second digit (t4_pci_id_tbl.h).
	"0x1425:0x6401": "T6 (T6225-CR)",
	"0x1425:0x6402": "T6 (T6225-SO-CR)",
	"0x1425:0x6403": "T6 (T6425-CR)",
	"0x1425:0x6407": "T6 (T62100-LP-CR)",
	"0x1425:0x540d": "T5 (T580-LP-CR)",
	"0x1077:0x8070": "FastLinQ QL45000 (25/40/100GbE)",
	"0x1924:0x0b03": "XtremeScale SFC9250",
	"0x1d0f:0xec20": "Elastic Network Adapter (ENA)",
	"0x1af4:0x1000": "Virtio network device (legacy)",
	"0x1af4:0x1041": "Virtio 1.0 network device",
}

// modelName returns the marketing name of a NIC, or "".
func modelName(vendor, device string) string { return models[vendor+":"+device] }
